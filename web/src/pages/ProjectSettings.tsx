// A project's page: its settings (repository and default branch, checked
// against the remote by the server; credentials, write-only; agent image,
// automation and concurrency; archive, and deletion that says what goes)
// and, for a project imported from a forge, its forge (the webhook
// installed there, the repository's open issues) and its backlog board,
// one tab each (the tab is in the address bar: ?tab=forge, ?tab=backlog).
import { Alert, Anchor, Badge, Button, Card, Group, NumberInput, PasswordInput, Select, Stack, Switch, Tabs, Text, TextInput, Title } from '@mantine/core'
import { useState } from 'react'
import { Link, useNavigate, useParams, useSearchParams } from 'react-router-dom'
import { del, get, patch, post, put, type Project } from '../api'
import { Confirm, ErrorNote, Loading, useAction, useLoad, when } from '../ui'
import { BacklogSection } from './ProjectBacklog'
import { ForgeSection } from './ProjectForge'
import { providerLabel } from './ProjectImport'

export default function ProjectSettings() {
  const { id = '' } = useParams()
  const [params, setParams] = useSearchParams()
  const project = useLoad(() => get('/api/projects/{id}', { params: { path: { id } } }), [id])
  const p = project.data
  if (project.loading && !p) return <Loading />
  if (!p)
    return (
      <Stack>
        <Anchor component={Link} to="/projects" size="sm">
          ← Projects
        </Anchor>
        <ErrorNote error={project.error ?? 'The project was not found.'} />
      </Stack>
    )
  const forge = !!p.forge_repo
  const tabs = forge ? ['settings', 'forge', 'backlog'] : ['settings', 'backlog']
  const tab = tabs.includes(params.get('tab') ?? '') ? params.get('tab')! : 'settings'
  return (
    <Stack>
      <Anchor component={Link} to="/projects" size="sm">
        ← Projects
      </Anchor>
      <Group gap="xs">
        <Title order={2} data-testid="project-title">
          {p.name}
        </Title>
        <Badge variant="light" color={forge ? 'grape' : 'gray'} tt="none" data-testid="project-provider" data-provider={p.provider}>
          {providerLabel[p.provider] ?? p.provider}
        </Badge>
        {p.forge_repo && (
          <Text ff="monospace" size="sm" data-testid="project-forge-repo">
            {p.forge_repo}
          </Text>
        )}
        {p.archived_at && <Badge color="gray">archived</Badge>}
        {p.autodev && (
          <Badge color="indigo" variant="light">
            autodev
          </Badge>
        )}
      </Group>
      {forge && p.forge_resource_id === null && (
        <Alert color="yellow" data-testid="project-forge-gone">
          The forge resource this project was imported through was deleted: its forge and backlog cannot reach the repository.
        </Alert>
      )}
      <Tabs value={tab} onChange={(v) => setParams(v && v !== 'settings' ? { tab: v } : {}, { replace: true })} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="settings" data-testid="project-tab-settings">
            Settings
          </Tabs.Tab>
          {forge && (
            <Tabs.Tab value="forge" data-testid="project-tab-forge">
              Forge
            </Tabs.Tab>
          )}
          {/* Every project has a backlog: a forge's issues, customers' messages from conversation triggers. */}
          <Tabs.Tab value="backlog" data-testid="project-tab-backlog">
            Backlog
          </Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="settings" pt="md">
          {/* The form starts from what was read, once: a load after a save does not overwrite what is typed. */}
          <ProjectForm key={p.id} p={p} reload={project.reload} />
        </Tabs.Panel>
        {forge && (
          <Tabs.Panel value="forge" pt="md">
            <ForgeSection p={p} />
          </Tabs.Panel>
        )}
        <Tabs.Panel value="backlog" pt="md">
          <BacklogSection p={p} />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  )
}

function ProjectForm({ p, reload }: { p: Project; reload: () => Promise<unknown> }) {
  const id = p.id
  const navigate = useNavigate()
  const [form, setForm] = useState({ name: p.name, repo_url: p.repo_url, default_branch: p.default_branch, agent_image: p.agent_image, agent_profile: p.agent_profile, autodev: p.autodev })
  const profiles = useLoad(async () => (await get('/api/agent-profiles')) ?? [], [])
  const [token, setToken] = useState('')
  const [username, setUsername] = useState('')
  const [cap, setCap] = useState<number | string>(p.max_concurrent_runs ?? '')
  const [saved, setSaved] = useState('')
  const [deleting, setDeleting] = useState<Project | null>(null)
  const action = useAction()

  const save = (e: React.FormEvent) => {
    e.preventDefault()
    setSaved('')
    action.run('save', async () => {
      const body: Record<string, unknown> = {}
      for (const k of ['name', 'repo_url', 'default_branch', 'agent_image', 'agent_profile', 'autodev'] as const) if (form[k] !== p[k]) body[k] = form[k]
      if (token || username) body.credentials = { username: username || undefined, token: token || undefined }
      await put('/api/projects/{id}', { params: { path: { id } }, body })
      const limit = cap === '' ? null : Number(cap)
      if (limit !== p.max_concurrent_runs) await patch('/api/projects/{id}/concurrency', { params: { path: { id } }, body: { max_concurrent_runs: limit } })
      setToken('')
      setUsername('')
      setSaved('Saved.')
      await reload()
    })
  }
  const clearCredentials = () =>
    action.run('clear', async () => {
      await put('/api/projects/{id}', { params: { path: { id } }, body: { credentials: {} } })
      setSaved('Credentials removed.')
      await reload()
    })
  const archive = () =>
    action.run('archive', async () => {
      await post(`/api/projects/{id}/${p.archived_at ? 'restore' : 'archive'}`, { params: { path: { id } } })
      await reload()
    })
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement>) => setForm({ ...form, [k]: e.currentTarget.value })

  return (
    <Stack maw={720}>
      <Card withBorder>
        <form onSubmit={save}>
          <Stack gap="xs">
            <TextInput label="Name" value={form.name} onChange={set('name')} required maxLength={100} data-testid="project-settings-name" />
            <TextInput label="Repository" value={form.repo_url} onChange={set('repo_url')} required maxLength={2048} />
            <TextInput
              label="Default branch"
              description="Tasks branch from it and propose their change against it; the server checks that the repository has it"
              value={form.default_branch}
              onChange={set('default_branch')}
              required
              maxLength={200}
              data-testid="project-settings-branch"
            />
            <TextInput label="Agent image" description="Container image for this project's agents; empty: the profile's or the instance default" value={form.agent_image} onChange={set('agent_image')} maxLength={500} />
            <Select
              label="Agent profile"
              description="What its tasks run with when they name none, the backlog's among them"
              data={[{ value: '', label: 'shell (the default)' }, ...(profiles.data ?? []).filter((x) => x.name !== 'shell').map((x) => ({ value: x.name, label: `${x.name} (${x.agent_type})` }))]}
              value={form.agent_profile}
              onChange={(v) => setForm({ ...form, agent_profile: v ?? '' })}
              allowDeselect={false}
              data-testid="project-settings-profile"
            />
            <NumberInput
              label="Concurrent runs"
              description="At most this many of its tasks run at once, and separately this many workflow runs; empty: unlimited"
              value={cap}
              onChange={setCap}
              min={1}
              allowDecimal={false}
              data-testid="project-settings-cap"
            />
            <Switch label="Open pull requests automatically" checked={form.autodev} onChange={(e) => setForm({ ...form, autodev: e.currentTarget.checked })} />
            <Text size="sm" fw={500}>
              Credentials {p.has_credentials ? '(set; never shown)' : '(none)'}
            </Text>
            <Group grow>
              <TextInput label="User name" value={username} onChange={(e) => setUsername(e.currentTarget.value)} maxLength={200} autoComplete="off" />
              <PasswordInput label="Token" description="Replaces what is stored" value={token} onChange={(e) => setToken(e.currentTarget.value)} maxLength={4096} autoComplete="new-password" />
            </Group>
            <Text size="xs" c="dimmed">
              Provider: {p.provider} · created {when(p.created_at)}
            </Text>
            <ErrorNote error={action.error} />
            {saved && (
              <Alert color="teal" data-testid="project-settings-saved">
                {saved}
              </Alert>
            )}
            <Group>
              <Button type="submit" loading={action.busy === 'save'} data-testid="project-settings-save">
                Save
              </Button>
              {p.has_credentials && (
                <Button variant="light" color="gray" loading={action.busy === 'clear'} onClick={clearCredentials}>
                  Remove the credentials
                </Button>
              )}
            </Group>
          </Stack>
        </form>
      </Card>
      <Card withBorder>
        <Stack gap="xs">
          <Text fw={600}>Archive or delete</Text>
          <Text size="sm" c="dimmed">
            An archived project keeps everything and takes no new work. Deleting it removes its tasks and workflows with all their runs.
          </Text>
          <Group>
            <Button variant="light" loading={action.busy === 'archive'} onClick={archive}>
              {p.archived_at ? 'Restore' : 'Archive'}
            </Button>
            <Button color="red" variant="light" onClick={() => setDeleting(p)} data-testid="delete-project">
              Delete project
            </Button>
          </Group>
        </Stack>
      </Card>
      <Confirm
        item={deleting}
        title={(x) => `Delete ${x.name}?`}
        message={() =>
          'This deletes the project and everything that belongs to it: its tasks with their runs, event logs and approvals, and its workflows with their triggers and runs. The repository itself is not touched. It is refused while a task runs. To keep the history, archive it instead.'
        }
        action={() => 'Delete project and its tasks'}
        testid="confirm-delete-project"
        onCancel={() => setDeleting(null)}
        onConfirm={(x) =>
          action.run('delete', async () => {
            await del('/api/projects/{id}', { params: { path: { id: x.id } } })
            navigate('/projects')
          })
        }
      />
    </Stack>
  )
}
