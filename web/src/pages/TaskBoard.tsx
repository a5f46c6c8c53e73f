import { Anchor, Badge, Button, Card, Group, Select, SimpleGrid, Stack, Text, TextInput, Textarea, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link, useNavigate, useSearchParams } from 'react-router-dom'
import { get, messageOf, post, type Project, type Query, type Task } from '../api'
import { watchTopic } from '../live'
import { useSession } from '../session'
import { ErrorNote, Loading, Status, useLoad, when } from '../ui'

type Filter = Query<'/tasks/board'>

// A column per stage; the finished ones gather their neighbours (a task
// done without a pull request, a cancelled one) so no task drops off.
const columns: { key: string; label: string; statuses: Filter['status'][] }[] = [
  { key: 'queued', label: 'Queued', statuses: ['queued'] },
  { key: 'running', label: 'Running', statuses: ['running'] },
  { key: 'needs_input', label: 'Needs input', statuses: ['needs_input'] },
  { key: 'done_pr', label: 'Done · PR', statuses: ['done_pr', 'done'] },
  { key: 'failed', label: 'Failed', statuses: ['failed', 'cancelled'] },
]

type Column = { rows: Task[]; total: number }

/** The task board: a column per status, filtered by project and search, live. */
export function TaskBoard() {
  const { workspace } = useSession()
  const [params, setParams] = useSearchParams()
  const project = params.get('project') ?? ''
  const q = params.get('q') ?? ''
  const [search, setSearch] = useState(q)
  const projects = useLoad(() => get('/api/projects'), [workspace?.id])
  const board = useLoad(async () => {
    const out: Record<string, Column> = {}
    await Promise.all(
      columns.map(async (c) => {
        const pages = await Promise.all(
          c.statuses.map((status) => {
            const query = { status, page_size: 50, sort: 'updated_at', order: 'desc' as const, project_id: project || undefined, q: q || undefined }
            return get('/tasks/board', { params: { query } })
          }),
        )
        const rows = pages.flatMap((p) => p.rows ?? []).sort((a, b) => b.updated_at.localeCompare(a.updated_at))
        out[c.key] = { rows, total: pages.reduce((n, p) => n + p.total, 0) }
      }),
    )
    return out
  }, [workspace?.id, project, q])

  // Live: any task change in the workspace refetches the board.
  const { reload } = board
  useEffect(() => (workspace ? watchTopic('tasks', workspace.id, () => reload()) : undefined), [workspace, reload])

  const setFilter = (k: string, v: string) => {
    const next = new URLSearchParams(params)
    if (v) next.set(k, v)
    else next.delete(k)
    setParams(next, { replace: true })
  }

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Tasks</Title>
      </Group>
      <NewTask projects={projects.data ?? []} defaultProject={project} />
      <Group>
        <Select
          label="Project"
          placeholder="All projects"
          clearable
          data={(projects.data ?? []).map((p) => ({ value: p.id, label: p.name }))}
          value={project || null}
          onChange={(v) => setFilter('project', v ?? '')}
          data-testid="filter-project"
        />
        <form
          onSubmit={(e) => {
            e.preventDefault()
            setFilter('q', search)
          }}
        >
          <TextInput label="Search" placeholder="Title or prompt" value={search} onChange={(e) => setSearch(e.currentTarget.value)} data-testid="filter-q" />
        </form>
      </Group>
      <ErrorNote error={board.error} />
      {board.loading && !board.data ? (
        <Loading />
      ) : (
        <SimpleGrid cols={{ base: 1, sm: 3, lg: 5 }}>
          {columns.map((c) => {
            const col = board.data?.[c.key]
            return (
              <Stack key={c.key} gap="xs" data-testid={`column-${c.key}`}>
                <Group justify="space-between">
                  <Text fw={600}>{c.label}</Text>
                  <Badge variant="light">{col?.total ?? 0}</Badge>
                </Group>
                {(col?.rows ?? []).map((t) => (
                  <TaskCard key={t.id} task={t} />
                ))}
              </Stack>
            )
          })}
        </SimpleGrid>
      )}
    </Stack>
  )
}

function TaskCard({ task }: { task: Task }) {
  return (
    <Card withBorder padding="xs" data-testid={`task-${task.id}`}>
      <Anchor component={Link} to={`/tasks/${task.id}`} fw={500} size="sm">
        {task.title}
      </Anchor>
      <Group gap="xs" mt={4}>
        <Status status={task.status} />
        {task.held && <Badge color="gray">held</Badge>}
        <Text size="xs" c="dimmed">
          {when(task.updated_at)}
        </Text>
      </Group>
    </Card>
  )
}

// What each kind of agent does with the prompt, for the agent picker.
const agentKinds: Record<string, string> = {
  shell: 'the prompt is a script',
  llm: 'plain language',
  command: 'a command line agent',
}

function NewTask({ projects, defaultProject }: { projects: Project[]; defaultProject: string }) {
  const navigate = useNavigate()
  const { workspace } = useSession()
  const [project, setProject] = useState<string | null>(defaultProject || null)
  const [prompt, setPrompt] = useState('')
  // The workspace's own profiles (the built-in shell and coder, and any it added).
  const profiles = useLoad(() => get('/api/agent-profiles'), [workspace?.id])
  const [profile, setProfile] = useState('shell')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')
  useEffect(() => {
    if (!project && projects.length > 0) setProject(defaultProject || projects[0].id)
  }, [projects, project, defaultProject])

  const start = async (e: React.FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError('')
    try {
      // project is null when the choice was cleared: sent as before, and the server says why it refuses
      const t = await post('/api/tasks', { body: { project_id: project as string, prompt, agent_profile: profile } })
      navigate(`/tasks/${t.id}`)
    } catch (err) {
      setError(messageOf(err))
      setBusy(false)
    }
  }
  if (projects.length === 0) return <Text c="dimmed">Create a project first to start tasks.</Text>
  return (
    <Card withBorder>
      <form onSubmit={start}>
        <Stack gap="xs">
          <Group align="end">
            <Select label="Project" data={projects.map((p) => ({ value: p.id, label: p.name }))} value={project} onChange={setProject} data-testid="task-project" />
            <Select
              label="Agent"
              data={(profiles.data ?? [{ name: 'shell', agent_type: 'shell' as const }]).map((p) => ({
                value: p.name,
                label: `${p.name}: ${agentKinds[p.agent_type] ?? p.agent_type}`,
              }))}
              value={profile}
              onChange={(v) => setProfile(v ?? 'shell')}
              allowDeselect={false}
              data-testid="task-agent"
            />
          </Group>
          <Textarea label="Prompt" autosize minRows={2} value={prompt} onChange={(e) => setPrompt(e.currentTarget.value)} required data-testid="task-prompt" />
          {error && <ErrorNote error={error} />}
          <Group>
            <Button type="submit" loading={busy} data-testid="start-task">
              Start task
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  )
}
