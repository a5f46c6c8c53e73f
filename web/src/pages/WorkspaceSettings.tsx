// The active workspace's settings: how much its agents may do alone (the
// autonomy level) and its agent profiles (how an agent is run: model,
// endpoint, key kept sealed, image, instructions).
import { Badge, Button, Card, Group, Modal, PasswordInput, Select, Slider, Stack, Table, Text, TextInput, Textarea } from '@mantine/core'
import { useState } from 'react'
import { del, get, post, put, type Schemas } from '../api'
import { useSession } from '../session'
import { Confirm, ErrorNote, Loading, useAction, useLoad } from '../ui'

type AgentProfile = Schemas['AgentProfile']

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
        <ErrorNote error={profiles.error || action.error} />
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
                      <Text size="sm">{p.model || '—'}</Text>
                      {p.base_url && (
                        <Text size="xs" c="dimmed">
                          {p.base_url}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td>{p.has_api_key ? <Badge size="sm">own key</Badge> : <Text size="xs" c="dimmed">instance key</Text>}</Table.Td>
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

function ProfileForm({ profile, onClose, onSaved }: { profile: AgentProfile | null; onClose: () => void; onSaved: () => void }) {
  const [f, setF] = useState({
    name: profile?.name ?? '',
    agent_type: profile?.agent_type ?? 'llm',
    model: profile?.model ?? '',
    base_url: profile?.base_url ?? '',
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
      const body = { ...f, ...(key ? { api_key: key } : clearKey ? { api_key: '' } : {}) }
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
          {f.agent_type !== 'shell' && <TextInput label="Model" value={f.model} onChange={set('model')} maxLength={200} data-testid="profile-model" />}
          {f.agent_type === 'llm' && (
            <>
              <TextInput label="Base URL" description="An OpenAI-compatible endpoint" value={f.base_url} onChange={set('base_url')} maxLength={2048} data-testid="profile-base-url" />
              <PasswordInput
                label="API key"
                description={profile?.has_api_key ? 'Set, kept sealed and never shown; a new one replaces it' : 'Kept sealed and never shown; empty: the instance key'}
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
