// One project's settings: its repository and default branch (checked
// against the remote by the server), credentials (write-only), agent image,
// automation and concurrency; archive, and deletion that says what goes.
import { Alert, Button, Card, Group, NumberInput, PasswordInput, Stack, Switch, Text, TextInput, Title } from '@mantine/core'
import { useState } from 'react'
import { useNavigate, useParams } from 'react-router-dom'
import { del, get, patch, post, put, type Project } from '../api'
import { Confirm, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

export default function ProjectSettings() {
  const { id = '' } = useParams()
  const project = useLoad(() => get('/api/projects/{id}', { params: { path: { id } } }), [id])
  const p = project.data
  if (project.loading && !p) return <Loading />
  if (!p) return <ErrorNote error={project.error} />
  // The form starts from what was read, once: a load after a save does not overwrite what is typed.
  return <ProjectForm key={p.id} p={p} reload={project.reload} />
}

function ProjectForm({ p, reload }: { p: Project; reload: () => Promise<unknown> }) {
  const id = p.id
  const navigate = useNavigate()
  const [form, setForm] = useState({ name: p.name, repo_url: p.repo_url, default_branch: p.default_branch, agent_image: p.agent_image, autodev: p.autodev })
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
      for (const k of ['name', 'repo_url', 'default_branch', 'agent_image', 'autodev'] as const) if (form[k] !== p[k]) body[k] = form[k]
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
      <Title order={2}>{p.name}: settings</Title>
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
