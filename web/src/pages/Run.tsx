import { Alert, Anchor, Badge, Card, Group, List, Stack, Text, Title } from '@mantine/core'
import { useEffect, useRef } from 'react'
import { Link, useParams } from 'react-router-dom'
import { get, type Schemas } from '../api'
import { watchTopic } from '../live'
import { useSession } from '../session'
import { EventLog, useEventLog } from '../events'
import { ErrorNote, Loading, Status, useLoad, when, count } from '../ui'

type RunTree = Schemas['RunTree']


/** One run: its state, its descendant runs as a tree, and its event log, live. */
export default function RunPage() {
  const { id = '' } = useParams()
  const { workspace } = useSession()
  const tree = useLoad(() => get('/api/runs/{id}', { params: { path: { id } } }), [id])
  const events = useEventLog('run', id)

  // The tree follows the runs topic: a hint about a run in it (or a reset)
  // refetches it; while something in it still runs, any hint may be a new child.
  const { reload } = tree
  const known = useRef<{ ids: Set<string>; running: boolean }>({ ids: new Set(), running: true })
  useEffect(() => {
    if (tree.data) known.current = { ids: collectIds(tree.data), running: anyRunning(tree.data) }
  }, [tree.data])
  useEffect(
    () =>
      workspace
        ? watchTopic('runs', workspace.id, (changed) => {
            if (!changed || known.current.running || known.current.ids.has(changed)) reload()
          })
        : undefined,
    [workspace, reload],
  )

  if (tree.loading && !tree.data) return <Loading />
  if (!tree.data) return <ErrorNote error={tree.error} />
  const r = tree.data
  return (
    <Stack>
      <RunHeader run={r} />
      <ErrorNote error={tree.error} />
      {r.error && (
        <Alert color="red" title="The run failed" data-testid="run-error">
          {r.error}
        </Alert>
      )}
      <Card withBorder>
        <Title order={4} mb="xs">
          Runs in this tree
        </Title>
        <List listStyleType="none" data-testid="run-tree">
          <TreeNode node={r} current={id} />
        </List>
      </Card>
      <Group justify="space-between">
        <Title order={4}>Event log</Title>
        <Badge variant="light">{count(events.list.length, 'event')}</Badge>
      </Group>
      {events.error && <ErrorNote error={events.error} />}
      <EventLog events={events.list} loading={events.loading} height={480} />
    </Stack>
  )
}

function RunHeader({ run }: { run: RunTree }) {
  return (
    <Stack gap={4}>
      <Title order={2}>
        {run.kind} run <Text span ff="monospace" inherit>{run.id.slice(-12)}</Text>
      </Title>
      <Group gap="xs">
        <Status status={run.status} />
        <Text size="sm" c="dimmed">
          attempt {run.attempt} · backend {run.backend || '—'} · exit {run.exit_code ?? '—'} · started {when(run.created_at)} · finished {when(run.finished_at)}
        </Text>
      </Group>
      <Group gap="md">
        {run.task_id && (
          <Anchor component={Link} to={`/tasks/${run.task_id}`} size="sm" data-testid="run-task">
            Open the task
          </Anchor>
        )}
        {run.kind === 'workflow' && (
          <Anchor component={Link} to={`/workflows/runs/${run.id}`} size="sm" data-testid="run-workflow">
            Open the workflow run
          </Anchor>
        )}
        {run.parent_run_id && (
          <Anchor component={Link} to={`/runs/${run.parent_run_id}`} size="sm" data-testid="run-parent">
            Parent run
          </Anchor>
        )}
        <Anchor component={Link} to="/runs" size="sm">
          All runs
        </Anchor>
      </Group>
    </Stack>
  )
}

/** A run and its children, nested; every run but the one shown links to its page. */
function TreeNode({ node, current }: { node: RunTree; current: string }) {
  const label = `${node.kind} ${node.id.slice(-12)}`
  return (
    <List.Item data-testid={`tree-${node.id}`}>
      <Group gap="xs">
        {node.id === current ? (
          <Text size="sm" fw={700} ff="monospace">
            {label}
          </Text>
        ) : (
          <Anchor component={Link} to={`/runs/${node.id}`} size="sm" ff="monospace">
            {label}
          </Anchor>
        )}
        <Status status={node.status} />
        <Text size="xs" c="dimmed">
          {when(node.created_at)}
        </Text>
      </Group>
      {(node.children ?? []).length > 0 && (
        <List listStyleType="none" withPadding>
          {(node.children ?? []).map((c) => (
            <TreeNode key={c.id} node={c} current={current} />
          ))}
        </List>
      )}
    </List.Item>
  )
}

function collectIds(n: RunTree, out = new Set<string>()): Set<string> {
  out.add(n.id)
  for (const c of n.children ?? []) collectIds(c, out)
  return out
}

function anyRunning(n: RunTree): boolean {
  return n.status === 'running' || (n.children ?? []).some(anyRunning)
}
