// The active workspace's settings: how much its agents may do alone (the
// autonomy level), its agent profiles (how an agent is run: model,
// endpoint and key kept sealed, or one of the workspace's model resources;
// image, instructions) and the env vars its runs get (secret ones kept in
// the vault).
import { Badge, Button, Card, Checkbox, Group, Modal, NativeSelect, PasswordInput, Select, Slider, Stack, Table, Text, TextInput, Textarea } from '@mantine/core'
import { useState } from 'react'
import { del, get, post, put, type Schemas } from '../api'
import { useSession } from '../session'
import { Confirm, ErrorNote, Loading, useAction, useLoad } from '../ui'

type AgentProfile = Schemas['AgentProfile']
type Resource = Schemas['Resource']

/** What the level means for the built-in llm agent (the server's rule, said in words). */
function autonomyMeaning(level: number): string {
  if (level <= 10) return 'Agents ask before running commands and before writing or editing files.'
  if (level <= 30) return 'Agents ask before running commands; they write and edit files alone.'
  return 'Agents work alone: no approvals are asked for.'
}

export function AutonomyCard() {
  const { workspace } = useSession()
  const id = workspace?.id ?? ''
  const current = useLoad(() => get('/api/workspaces/{id}/autonomy', { params: { path: { id } } }), [id])
  if (!workspace) return null
  if (current.loading && !current.data) return <Loading />
  return <AutonomyForm key={id} workspace={workspace} stored={current.data?.level ?? 0} error={current.error} reload={current.reload} />
}

function AutonomyForm({ workspace, stored, error, reload }: { workspace: { id: string; name: string }; stored: number; error: unknown; reload: () => Promise<unknown> }) {
  const id = workspace.id
  const [level, setLevel] = useState(stored)
  const [saved, setSaved] = useState(false)
  const action = useAction()
  const save = () =>
    action.run('autonomy', async () => {
      await put('/api/workspaces/{id}/autonomy', { params: { path: { id } }, body: { level } })
      setSaved(true)
      await reload()
    })
  return (
    <Card withBorder data-testid="autonomy">
      <Stack gap="xs">
        <Text fw={600}>Autonomy of {workspace.name}'s agents</Text>
        <>
            <Slider
              value={level}
              onChange={(v) => {
                setLevel(v)
                setSaved(false)
              }}
              min={0}
              max={100}
              step={5}
              marks={[{ value: 10 }, { value: 30 }]}
              label={(v) => String(v)}
              aria-label="Autonomy level"
              data-testid="autonomy-level"
            />
            <Text size="sm" data-testid="autonomy-meaning">
              {level}: {autonomyMeaning(level)}
            </Text>
            <ErrorNote error={action.error || error} />
            <Group>
              <Button size="xs" onClick={save} loading={action.busy === 'autonomy'} disabled={level === stored} data-testid="autonomy-save">
                Save
              </Button>
              {saved && (
                <Text size="sm" c="teal">
                  Saved.
                </Text>
              )}
            </Group>
        </>
      </Stack>
    </Card>
  )
}

const agentTypes = [
  { value: 'llm', label: 'llm: the built-in coding agent (a chat-completions model)' },
  { value: 'shell', label: 'shell: runs the prompt as a shell script' },
  { value: 'command', label: 'command: a CLI agent run with the prompt' },
]

export function ProfilesCard() {
  const { workspace } = useSession()
  const profiles = useLoad(async () => (await get('/api/agent-profiles')) ?? [], [workspace?.id])
  // The workspace's model resources: what an llm profile may use instead
  // of its own endpoint and key.
  const models = useLoad(async () => (await get('/api/resources', { params: { query: { kind: 'openai_compatible' } } })) ?? [], [workspace?.id])
  const modelName = (id: string) => models.data?.find((m) => m.id === id)?.name ?? 'a deleted resource'

  const [editing, setEditing] = useState<AgentProfile | 'new' | null>(null)
  const [deleting, setDeleting] = useState<AgentProfile | null>(null)
  const action = useAction()
  return (
    <Card withBorder data-testid="profiles">
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600}>Agent profiles</Text>
          <Button size="xs" onClick={() => setEditing('new')} data-testid="new-profile">
            New profile
          </Button>
        </Group>
        <ErrorNote error={profiles.error || models.error || action.error} />
        {profiles.loading && !profiles.data ? (
          <Loading />
        ) : (
          <Table.ScrollContainer minWidth={560}>
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Type</Table.Th>
                  <Table.Th>Model</Table.Th>
                  <Table.Th>Key</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {(profiles.data ?? []).map((p) => (
                  <Table.Tr key={p.id} data-testid={`profile-${p.name}`}>
                    <Table.Td>{p.name}</Table.Td>
                    <Table.Td>{p.agent_type}</Table.Td>
                    <Table.Td>
                      <Text size="sm">{p.model || (p.resource_id ? "the resource's default" : '—')}</Text>
                      {p.resource_id ? (
                        <Text size="xs" c="dimmed" data-testid="profile-resource">
                          via {modelName(p.resource_id)}
                        </Text>
                      ) : (
                        p.base_url && (
                          <Text size="xs" c="dimmed">
                            {p.base_url}
                          </Text>
                        )
                      )}
                    </Table.Td>
                    <Table.Td>
                      {p.resource_id ? (
                        <Badge size="sm" variant="light">
                          resource's key
                        </Badge>
                      ) : p.has_api_key ? (
                        <Badge size="sm">own key</Badge>
                      ) : p.agent_type === 'llm' ? (
                        <Text size="xs" c="dimmed">
                          instance key
                        </Text>
                      ) : (
                        <Text size="xs" c="dimmed">
                          —
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td>
                      <Group gap={4} wrap="nowrap">
                        <Button size="compact-xs" variant="light" onClick={() => setEditing(p)} data-testid={`edit-profile-${p.name}`}>
                          Edit
                        </Button>
                        <Button size="compact-xs" variant="light" color="red" onClick={() => setDeleting(p)} data-testid={`delete-profile-${p.name}`}>
                          Delete
                        </Button>
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Stack>
      {editing && (
        <ProfileForm
          profile={editing === 'new' ? null : editing}
          models={models.data ?? []}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null)
            void profiles.reload()
          }}
        />
      )}
      <Confirm
        item={deleting}
        title={(p) => `Delete the profile ${p.name}?`}
        message={() => 'Tasks that ran with it keep their history; new tasks cannot pick it.'}
        action={() => 'Delete profile'}
        testid="confirm-delete-profile"
        onCancel={() => setDeleting(null)}
        onConfirm={(p) =>
          action.run(`delete-${p.id}`, async () => {
            await del('/api/agent-profiles/{id}', { params: { path: { id: p.id } } })
            await profiles.reload()
          })
        }
      />
    </Card>
  )
}

function ProfileForm({ profile, models, onClose, onSaved }: { profile: AgentProfile | null; models: Resource[]; onClose: () => void; onSaved: () => void }) {
  const [f, setF] = useState({
    name: profile?.name ?? '',
    agent_type: profile?.agent_type ?? 'llm',
    model: profile?.model ?? '',
    base_url: profile?.base_url ?? '',
    resource_id: profile?.resource_id ?? '',
    image: profile?.image ?? '',
    instructions: profile?.instructions ?? '',
    command_template: profile?.command_template ?? '',
  })
  const [key, setKey] = useState('')
  const [clearKey, setClearKey] = useState(false)
  const action = useAction()
  const set = (k: keyof typeof f) => (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) => setF({ ...f, [k]: e.currentTarget.value })
  const save = (e: React.FormEvent) => {
    e.preventDefault()
    action.run('save', async () => {
      // A model resource replaces the endpoint and the key; only llm
      // profiles have one.
      const viaResource = f.agent_type === 'llm' && f.resource_id !== ''
      const body = {
        ...f,
        resource_id: viaResource ? f.resource_id : '',
        base_url: viaResource ? '' : f.base_url,
        ...(viaResource && profile?.has_api_key ? { api_key: '' } : key ? { api_key: key } : clearKey ? { api_key: '' } : {}),
      }
      if (profile) await put('/api/agent-profiles/{id}', { params: { path: { id: profile.id } }, body })
      else await post('/api/agent-profiles', { body })
      onSaved()
    })
  }
  return (
    <Modal opened onClose={onClose} title={profile ? `Edit ${profile.name}` : 'New agent profile'} size="lg">
      <form onSubmit={save}>
        <Stack gap="xs">
          <TextInput label="Name" value={f.name} onChange={set('name')} required maxLength={100} data-testid="profile-name" />
          <Select label="Type" data={agentTypes} value={f.agent_type} onChange={(v) => setF({ ...f, agent_type: (v ?? 'llm') as typeof f.agent_type })} allowDeselect={false} data-testid="profile-type" />
          {f.agent_type !== 'shell' && (
            <TextInput
              label="Model"
              description={f.agent_type === 'llm' && f.resource_id ? "Empty: the resource's default model" : undefined}
              value={f.model}
              onChange={set('model')}
              maxLength={200}
              data-testid="profile-model"
            />
          )}
          {f.agent_type === 'llm' && (
            <NativeSelect
              label="Model from"
              description="One of the workspace's OpenAI-compatible resources (its address, key and default model), or an endpoint and key of this profile's own"
              value={f.resource_id}
              onChange={(e) => setF({ ...f, resource_id: e.currentTarget.value })}
              data={[
                { value: '', label: 'This profile: a base URL and a key' },
                ...models.map((m) => ({ value: m.id, label: `Resource: ${m.name}` })),
                ...(f.resource_id && !models.some((m) => m.id === f.resource_id) ? [{ value: f.resource_id, label: 'A deleted resource' }] : []),
              ]}
              data-testid="profile-resource-select"
            />
          )}
          {f.agent_type === 'llm' && f.resource_id === '' && (
            <>
              <TextInput label="Base URL" description="An OpenAI-compatible endpoint" value={f.base_url} onChange={set('base_url')} maxLength={2048} data-testid="profile-base-url" />
              <PasswordInput
                label="API key"
                description={
                  profile?.has_api_key ? 'Set, kept sealed and never shown; a new one replaces it' : "Kept sealed and never shown; empty: the instance's key, sent only to the instance's provider"
                }
                value={key}
                onChange={(e) => setKey(e.currentTarget.value)}
                maxLength={4096}
                autoComplete="new-password"
                data-testid="profile-key"
              />
              {profile?.has_api_key && !key && (
                <Button size="compact-xs" variant="subtle" color={clearKey ? 'red' : 'gray'} onClick={() => setClearKey(!clearKey)}>
                  {clearKey ? 'The key will be removed (undo)' : 'Remove the key'}
                </Button>
              )}
            </>
          )}
          {f.agent_type === 'command' && (
            <TextInput label="Command" description="The CLI to run, with {prompt}, {model}, {workdir}, {instructions}" value={f.command_template} onChange={set('command_template')} maxLength={4000} />
          )}
          <TextInput label="Image" description="Container image; empty: the project's or the instance default" value={f.image} onChange={set('image')} maxLength={500} />
          <Textarea label="Instructions" autosize minRows={2} maxRows={8} value={f.instructions} onChange={set('instructions')} maxLength={20000} />
          <ErrorNote error={action.error} />
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={action.busy === 'save'} data-testid="profile-save">
              Save
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  )
}

type EnvVar = Schemas['EnvVar']

const allProjects = 'all'

/**
 * The workspace's env vars: global ones every run gets, and a project's,
 * which win over a global one of the same key in that project's runs. A
 * secret's value is kept in the vault and never shown ("secret · set"); a
 * new one replaces it. Locked ones change only by a workspace owner or admin.
 */
export function EnvVarsCard() {
  const { workspace } = useSession()
  const admin = workspace?.role === 'owner' || workspace?.role === 'admin'
  const vars = useLoad(async () => (await get('/api/settings/env-vars')) ?? [], [workspace?.id])
  const projects = useLoad(async () => (await get('/api/projects')) ?? [], [workspace?.id])
  const [editing, setEditing] = useState<EnvVar | 'new' | null>(null)
  const [deleting, setDeleting] = useState<EnvVar | null>(null)
  const action = useAction()
  const projectName = (id?: string | null) => (id ? (projects.data?.find((p) => p.id === id)?.name ?? 'a project') : 'All projects')
  const lock = (v: EnvVar) =>
    action.run(`lock-${v.id}`, async () => {
      await post('/api/settings/env-vars', { body: { key: v.key, project_id: v.project_id ?? undefined, locked: !v.locked } })
      await vars.reload()
    })
  return (
    <Card withBorder data-testid="env-vars">
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600}>Environment variables</Text>
          <Button size="xs" onClick={() => setEditing('new')} data-testid="new-env-var">
            Add variable
          </Button>
        </Group>
        <Text size="sm" c="dimmed">
          Every run of the workspace gets the variables for all projects; a project's own win over them in its runs. Secret values are kept in the vault and never
          shown again.
        </Text>
        <ErrorNote error={vars.error || action.error} />
        {vars.loading && !vars.data ? (
          <Loading />
        ) : (vars.data ?? []).length === 0 ? (
          <Text size="sm" c="dimmed" data-testid="env-vars-empty">
            No variables yet.
          </Text>
        ) : (
          <Table.ScrollContainer minWidth={560}>
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Key</Table.Th>
                  <Table.Th>Value</Table.Th>
                  <Table.Th>Project</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {(vars.data ?? []).map((v) => (
                  <Table.Tr key={v.id} data-testid="env-var-row" data-key={v.key} data-scope={v.project_id ? projectName(v.project_id) : allProjects}>
                    <Table.Td>
                      <Text size="sm" ff="monospace">
                        {v.key}
                      </Text>
                    </Table.Td>
                    <Table.Td maw={280}>
                      {v.is_secret ? (
                        <Badge size="sm" variant="light" color="grape" tt="none" data-testid="env-var-secret">
                          secret · set
                        </Badge>
                      ) : (
                        <Text size="sm" ff="monospace" truncate="end" title={v.value} data-testid="env-var-value">
                          {v.value === '' ? '(empty)' : v.value}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">{projectName(v.project_id)}</Text>
                    </Table.Td>
                    <Table.Td>
                      <Group gap={4} wrap="nowrap" justify="end">
                        {v.locked && (
                          <Badge size="sm" variant="outline" color="gray" data-testid="env-var-locked">
                            locked
                          </Badge>
                        )}
                        {(admin || !v.locked) && (
                          <Button size="compact-xs" variant="light" onClick={() => setEditing(v)} data-testid="edit-env-var">
                            Edit
                          </Button>
                        )}
                        {admin && (
                          <Button size="compact-xs" variant="subtle" color="gray" loading={action.busy === `lock-${v.id}`} onClick={() => lock(v)} data-testid="lock-env-var">
                            {v.locked ? 'Unlock' : 'Lock'}
                          </Button>
                        )}
                        {(admin || !v.locked) && (
                          <Button size="compact-xs" variant="light" color="red" onClick={() => setDeleting(v)} data-testid="delete-env-var">
                            Delete
                          </Button>
                        )}
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Stack>
      {editing && (
        <EnvVarForm
          envVar={editing === 'new' ? null : editing}
          admin={admin}
          projects={projects.data ?? []}
          projectName={projectName}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null)
            void vars.reload()
          }}
        />
      )}
      <Confirm
        item={deleting}
        title={(v) => `Delete ${v.key}?`}
        message={(v) =>
          `${v.project_id ? `Runs of ${projectName(v.project_id)}` : 'Runs of every project'} no longer get it${v.is_secret ? '; its value is removed from the vault' : ''}. Runs already started keep what they got.`
        }
        action={() => 'Delete variable'}
        testid="confirm-delete-env-var"
        onCancel={() => setDeleting(null)}
        onConfirm={(v) =>
          action.run(`delete-${v.id}`, async () => {
            await del('/api/settings/env-vars/{id}', { params: { path: { id: v.id } } })
            await vars.reload()
          })
        }
      />
    </Card>
  )
}

function EnvVarForm({
  envVar,
  admin,
  projects,
  projectName,
  onClose,
  onSaved,
}: {
  envVar: EnvVar | null
  admin: boolean
  projects: { id: string; name: string }[]
  projectName: (id?: string | null) => string
  onClose: () => void
  onSaved: () => void
}) {
  const [key, setKey] = useState(envVar?.key ?? '')
  const [project, setProject] = useState<string>(envVar?.project_id ?? allProjects)
  const [secret, setSecret] = useState(envVar?.is_secret ?? false)
  // A secret's value is never shown: the field starts empty and, left so, keeps it.
  const [value, setValue] = useState(envVar && !envVar.is_secret ? envVar.value : '')
  const [locked, setLocked] = useState(envVar?.locked ?? false)
  const action = useAction()
  const keepsSecret = !!envVar?.is_secret && secret && value === ''
  const save = (e: React.FormEvent) => {
    e.preventDefault()
    action.run('save', async () => {
      await post('/api/settings/env-vars', {
        body: {
          key: key.trim(),
          is_secret: secret,
          ...(project === allProjects ? { scope: 'global' as const } : { scope: 'project' as const, project_id: project }),
          ...(keepsSecret ? {} : { value }),
          ...(admin ? { locked } : {}),
        },
      })
      onSaved()
    })
  }
  return (
    <Modal opened onClose={onClose} title={envVar ? `Edit ${envVar.key}` : 'New environment variable'} size="lg">
      <form onSubmit={save}>
        <Stack gap="xs">
          <TextInput
            label="Key"
            description="A letter or _, then letters, digits or _"
            value={key}
            onChange={(e) => setKey(e.currentTarget.value)}
            readOnly={!!envVar}
            required
            maxLength={128}
            data-testid="env-var-key"
          />
          {envVar ? (
            <TextInput label="Project" value={projectName(envVar.project_id)} readOnly />
          ) : (
            <Select
              label="Project"
              data={[{ value: allProjects, label: 'All projects' }, ...projects.map((p) => ({ value: p.id, label: p.name }))]}
              value={project}
              onChange={(v) => setProject(v ?? allProjects)}
              allowDeselect={false}
              data-testid="env-var-project"
            />
          )}
          <Checkbox
            label="Secret: kept in the vault, never shown again"
            checked={secret}
            onChange={(e) => setSecret(e.currentTarget.checked)}
            data-testid="env-var-secret-box"
          />
          {secret ? (
            <PasswordInput
              label="Value"
              description={envVar?.is_secret ? 'secret · set: a new value replaces it; left empty, it stays' : undefined}
              value={value}
              onChange={(e) => setValue(e.currentTarget.value)}
              required={!envVar || !envVar.is_secret}
              autoComplete="new-password"
              data-testid="env-var-value-input"
            />
          ) : (
            <Textarea
              label="Value"
              description={envVar?.is_secret ? 'Made plain, the variable needs its value again' : undefined}
              autosize
              minRows={1}
              maxRows={8}
              value={value}
              onChange={(e) => setValue(e.currentTarget.value)}
              required={!!envVar?.is_secret}
              data-testid="env-var-value-input"
            />
          )}
          {admin && (
            <Checkbox
              label="Locked: only workspace owners and admins may change or delete it"
              checked={locked}
              onChange={(e) => setLocked(e.currentTarget.checked)}
              data-testid="env-var-locked-box"
            />
          )}
          <ErrorNote error={action.error} />
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={action.busy === 'save'} data-testid="env-var-save">
              Save
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  )
}
