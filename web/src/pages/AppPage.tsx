// One hosted app: its overview (name, description, manifest, installed for
// you or for a member of the workspace, delete), its files, builds, deployment, migrations, backend
// functions and App token, one tab each (the tab is in the address bar).
// A tab loads what it shows when opened, so it is current after the others.
import { Anchor, Badge, Button, Card, Code, Group, Select, Stack, Tabs, Text, TextInput, Textarea, Title } from '@mantine/core'
import { useState } from 'react'
import { Link, useNavigate, useParams, useSearchParams } from 'react-router-dom'
import { del, get, post, put, type Schemas } from '../api'
import { useSession } from '../session'
import { Confirm, ErrorNote, Loading, useAction, useLoad, when } from '../ui'
import { DeploymentBadge, mono } from './Apps'
import { BackendSection, MigrationsSection } from './AppBackend'
import { BuildsSection, DeploymentSection, TokenSection } from './AppDeploy'
import { FilesSection } from './AppFiles'

export type App = Schemas['App']
export type Deployment = Schemas['AppDeployment']
type Installation = Schemas['AppInstallation']

const tabs = [
  { value: 'overview', label: 'Overview' },
  { value: 'files', label: 'Files' },
  { value: 'builds', label: 'Builds' },
  { value: 'deployment', label: 'Deployment' },
  { value: 'migrations', label: 'Migrations' },
  { value: 'backend', label: 'Backend' },
  { value: 'token', label: 'App token' },
]

/** /apps/:id */
export default function AppPage() {
  const { id = '' } = useParams()
  const [params, setParams] = useSearchParams()
  const tab = tabs.some((t) => t.value === params.get('tab')) ? params.get('tab')! : 'overview'
  const app = useLoad(() => get('/api/apps/{id}', { params: { path: { id } } }), [id])
  const a = app.data
  if (app.loading && !a) return <Loading label="Loading the app…" />
  if (!a)
    return (
      <Stack>
        <Anchor component={Link} to="/apps" size="sm">
          ← Apps
        </Anchor>
        <ErrorNote error={app.error ?? 'The app was not found.'} />
      </Stack>
    )
  return (
    <Stack maw={1000}>
      <Anchor component={Link} to="/apps" size="sm">
        ← Apps
      </Anchor>
      <Group justify="space-between">
        <Group gap="xs">
          <Title order={2} data-testid="app-title">
            {a.name}
          </Title>
          {/* The document has deployment as an object; the server answers null for an app never deployed. */}
          <DeploymentBadge d={a.deployment} testid="app-header-deployment" />
        </Group>
        <Button variant="subtle" component={Link} to={`/marketplace?tab=publish&what=app&app=${a.id}`} data-testid="publish-to-marketplace">
          Publish to marketplace
        </Button>
      </Group>
      <Tabs value={tab} onChange={(v) => setParams(v && v !== 'overview' ? { tab: v } : {}, { replace: true })} keepMounted={false}>
        <Tabs.List>
          {tabs.map((t) => (
            <Tabs.Tab key={t.value} value={t.value} data-testid={`app-tab-${t.value}`}>
              {t.label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        <Tabs.Panel value="overview" pt="md">
          <Overview a={a} onChanged={(n) => app.setData(n)} />
        </Tabs.Panel>
        <Tabs.Panel value="files" pt="md">
          <FilesSection id={a.id} entry={a.manifest?.entry} />
        </Tabs.Panel>
        <Tabs.Panel value="builds" pt="md">
          <BuildsSection id={a.id} />
        </Tabs.Panel>
        <Tabs.Panel value="deployment" pt="md">
          <DeploymentSection id={a.id} name={a.name} onChanged={() => app.reload()} />
        </Tabs.Panel>
        <Tabs.Panel value="migrations" pt="md">
          <MigrationsSection id={a.id} />
        </Tabs.Panel>
        <Tabs.Panel value="backend" pt="md">
          <BackendSection id={a.id} />
        </Tabs.Panel>
        <Tabs.Panel value="token" pt="md">
          <TokenSection id={a.id} />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  )
}

/** Name, description and manifest; installed for you or for a member; delete. */
function Overview({ a, onChanged }: { a: App; onChanged: (a: App) => void }) {
  return (
    <Stack data-testid="app-overview">
      <DetailsCard a={a} onSaved={onChanged} />
      <ManifestCard a={a} onSaved={onChanged} />
      <InstallCard a={a} onChanged={onChanged} />
      <MemberInstallCard a={a} onChanged={onChanged} />
      <DeleteCard a={a} />
      <Text size="xs" c="dimmed">
        Created {when(a.created_at)} · updated {when(a.updated_at)}
      </Text>
    </Stack>
  )
}

function DetailsCard({ a, onSaved }: { a: App; onSaved: (a: App) => void }) {
  const [name, setName] = useState(a.name)
  const [description, setDescription] = useState(a.description ?? '')
  const [saved, setSaved] = useState(false)
  const action = useAction()
  const nameChanged = name.trim() !== a.name
  const descChanged = description.trim() !== (a.description ?? '')
  const save = async (e: React.FormEvent) => {
    e.preventDefault()
    setSaved(false)
    // Only what changed is sent: an absent description stays, null clears it.
    const n = await action.run('save', () =>
      put('/api/apps/{id}', {
        params: { path: { id: a.id } },
        body: { ...(nameChanged ? { name: name.trim() } : {}), ...(descChanged ? { description: description.trim() || null } : {}) },
      }),
    )
    if (n) {
      setName(n.name)
      setDescription(n.description ?? '')
      setSaved(true)
      onSaved(n)
    }
  }
  return (
    <Card withBorder>
      <form onSubmit={save} aria-label="App details">
        <Stack gap="xs">
          <Text fw={600}>Details</Text>
          <TextInput label="Name" required maxLength={100} value={name} onChange={(e) => setName(e.currentTarget.value)} w={320} data-testid="app-name" />
          <Textarea
            label="Description"
            description="Empty clears it"
            value={description}
            onChange={(e) => setDescription(e.currentTarget.value)}
            autosize
            minRows={1}
            maxLength={4000}
            data-testid="app-description"
          />
          <Group>
            <Button type="submit" size="xs" disabled={!name.trim() || (!nameChanged && !descChanged)} loading={action.busy === 'save'} data-testid="app-save-details">
              Save
            </Button>
            {saved && (
              <Text size="sm" c="teal" data-testid="app-details-saved">
                Saved.
              </Text>
            )}
          </Group>
          <ErrorNote error={action.error} />
        </Stack>
      </form>
    </Card>
  )
}

function ManifestCard({ a, onSaved }: { a: App; onSaved: (a: App) => void }) {
  const [yaml, setYaml] = useState(a.manifest_yaml)
  const [saved, setSaved] = useState(false)
  const action = useAction()
  const save = async () => {
    setSaved(false)
    const n = await action.run('save', () => put('/api/apps/{id}', { params: { path: { id: a.id } }, body: { manifest_yaml: yaml } }))
    if (n) {
      setYaml(n.manifest_yaml)
      setSaved(true)
      onSaved(n)
    }
  }
  const m = a.manifest
  return (
    <Card withBorder data-testid="app-manifest-card">
      <Stack gap="xs">
        <Text fw={600}>Manifest</Text>
        <Text size="sm" c="dimmed">
          Entry page <Code>{m?.entry}</Code> · {(m?.functions ?? []).length} backend function{(m?.functions ?? []).length === 1 ? '' : 's'} · a change takes effect
          at the next build and deploy.
        </Text>
        <Textarea
          aria-label="Manifest (YAML)"
          value={yaml}
          onChange={(e) => {
            setYaml(e.currentTarget.value)
            setSaved(false)
          }}
          autosize
          minRows={4}
          maxRows={30}
          spellCheck={false}
          styles={mono}
          data-testid="app-manifest"
        />
        <Group>
          <Button size="xs" onClick={save} disabled={yaml === a.manifest_yaml || !yaml.trim()} loading={action.busy === 'save'} data-testid="app-save-manifest">
            Save manifest
          </Button>
          <Button size="xs" variant="default" onClick={() => setYaml(a.manifest_yaml)} disabled={yaml === a.manifest_yaml}>
            Revert
          </Button>
          {saved && (
            <Text size="sm" c="teal" data-testid="app-manifest-saved">
              Saved.
            </Text>
          )}
        </Group>
        <ErrorNote error={action.error} />
      </Stack>
    </Card>
  )
}

function InstallCard({ a, onChanged }: { a: App; onChanged: (a: App) => void }) {
  const action = useAction()
  const toggle = async () => {
    const r = await action.run('install', () => post(a.installed ? '/api/apps/{id}/uninstall' : '/api/apps/{id}/install', { params: { path: { id: a.id } } }))
    if (r) onChanged({ ...a, installed: r.installed })
  }
  return (
    <Card withBorder>
      <Group justify="space-between">
        <Group gap="xs">
          <Text fw={600}>For you</Text>
          <Badge color={a.installed ? 'teal' : 'gray'} variant="light" data-testid="app-installed" data-installed={a.installed}>
            {a.installed ? 'installed' : 'not installed'}
          </Badge>
        </Group>
        <Button size="xs" variant="light" onClick={toggle} loading={action.busy === 'install'} data-testid={a.installed ? 'app-uninstall' : 'app-install'}>
          {a.installed ? 'Uninstall' : 'Install'}
        </Button>
      </Group>
      <ErrorNote error={action.error} />
    </Card>
  )
}

/**
 * Installs or uninstalls the app for a member of its workspace (the
 * workspace's owner or admins; the server refuses anyone else, 403).
 */
function MemberInstallCard({ a, onChanged }: { a: App; onChanged: (a: App) => void }) {
  const { me, workspace } = useSession()
  const members = useLoad(async () => (workspace ? ((await get('/api/workspaces/{id}/members', { params: { path: { id: workspace.id } } })) ?? []) : []), [workspace?.id])
  const [user, setUser] = useState<string | null>(null)
  const [answer, setAnswer] = useState<Installation | null>(null)
  const action = useAction()
  const nameOf = (id: string) => {
    const m = members.data?.find((x) => x.user_id === id)
    return m ? m.display_name || m.email : id
  }
  const act = async (install: boolean) => {
    if (!user) return
    setAnswer(null)
    const r = await action.run(install ? 'install' : 'uninstall', () =>
      post(install ? '/api/apps/{id}/install' : '/api/apps/{id}/uninstall', { params: { path: { id: a.id } }, body: { user_id: user } }),
    )
    if (r) {
      setAnswer(r)
      if (r.user_id === me?.id) onChanged({ ...a, installed: r.installed })
    }
  }
  const options = (members.data ?? []).map((m) => ({ value: m.user_id, label: `${m.display_name || m.email} (${m.email})${m.user_id === me?.id ? ' · you' : ''}` }))
  return (
    <Card withBorder data-testid="app-member-install-card">
      <Stack gap="xs">
        <Text fw={600}>Install for a member</Text>
        <Text size="sm" c="dimmed">
          The workspace's owner or admins install the app for a member of the workspace, or uninstall it.
        </Text>
        <ErrorNote error={members.error} />
        <Group align="end">
          <Select
            label="Member"
            placeholder={members.loading && !members.data ? 'Loading…' : 'Pick a member'}
            data={options}
            value={user}
            onChange={(v) => {
              setUser(v)
              setAnswer(null)
            }}
            searchable
            w={360}
            data-testid="app-member-select"
          />
          <Button size="xs" variant="light" onClick={() => act(true)} disabled={!user} loading={action.busy === 'install'} data-testid="app-member-install">
            Install
          </Button>
          <Button size="xs" variant="default" onClick={() => act(false)} disabled={!user} loading={action.busy === 'uninstall'} data-testid="app-member-uninstall">
            Uninstall
          </Button>
        </Group>
        {answer && (
          <Text size="sm" data-testid="app-member-note" data-installed={answer.installed}>
            {nameOf(answer.user_id)}: {answer.installed ? 'installed' : 'not installed'}
          </Text>
        )}
        <ErrorNote error={action.error} />
      </Stack>
    </Card>
  )
}

function DeleteCard({ a }: { a: App }) {
  const navigate = useNavigate()
  const [deleting, setDeleting] = useState<App | null>(null)
  const action = useAction()
  return (
    <Card withBorder>
      <Group justify="space-between">
        <Text size="sm">Deleting the app removes its files, builds, deployment and installs.</Text>
        <Button color="red" variant="light" size="xs" onClick={() => setDeleting(a)} loading={action.busy === 'delete'} data-testid="delete-app">
          Delete app
        </Button>
      </Group>
      <ErrorNote error={action.error} />
      <Confirm
        item={deleting}
        title={(x) => `Delete ${x.name}?`}
        message={(x) =>
          `${x.deployment?.status === 'deployed' ? `It stops being served at ${x.deployment.url}. ` : ''}Its files, releases, deployment and App token go with it. This cannot be undone.`
        }
        action={() => 'Delete app'}
        testid="confirm-delete-app"
        onCancel={() => setDeleting(null)}
        onConfirm={async (x) => {
          const done = await action.run('delete', async () => {
            await del('/api/apps/{id}', { params: { path: { id: x.id } } })
            return true
          })
          if (done) navigate('/apps')
        }}
      />
    </Card>
  )
}
