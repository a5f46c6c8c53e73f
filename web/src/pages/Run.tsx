import { Alert, Anchor, Badge, Card, Group, List, ScrollArea, Stack, Text, Title } from '@mantine/core'
import { useEffect, useRef, useState } from 'react'
import { Link, useParams } from 'react-router-dom'
import { get, messageOf, type Schemas, type TaskEvent } from '../api'
import { followEvents, watchTopic } from '../live'
import { useSession } from '../session'
import { ErrorNote, Loading, Status, useLoad, when } from '../ui'

type RunTree = Schemas['RunTree']

const pageLimit = 1000

/** One run: its state, its descendant runs as a tree, and its event log, live. */
export default function RunPage() {
  const { id = '' } = useParams()
  const { workspace } = useSession()
  const tree = useLoad(() => get<RunTree>(`/api/runs/${id}`), [id])
  const events = useRunEvents(id)

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
        <Badge variant="light">{events.list.length} events</Badge>
      </Group>
      {events.error && <ErrorNote error={events.error} />}
      <EventLog events={events.list} loading={events.loading} />
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

/** The stored events, every page of them, then each new one live, in order. */
function useRunEvents(id: string) {
  const [list, setList] = useState<TaskEvent[]>([])
  const [error, setError] = useState('')
  const [loading, setLoading] = useState(true)
  useEffect(() => {
    let stop: (() => void) | undefined
    let cancelled = false
    setList([])
    setError('')
    setLoading(true)
    ;(async () => {
      const all: TaskEvent[] = []
      for (;;) {
        const after = all.length ? all[all.length - 1].sequence_num : 0
        const page = await get<TaskEvent[] | null>(`/api/runs/${id}/events?after_sequence=${after}&limit=${pageLimit}`)
        all.push(...(page ?? []))
        if (!page || page.length < pageLimit) break
      }
      if (cancelled) return
      setList(all)
      setLoading(false)
      const last = all.length ? all[all.length - 1].sequence_num : 0
      stop = followEvents('run', id, last, (_, e) => setList((prev) => [...prev, e as TaskEvent]), setError)
    })().catch((e) => {
      if (cancelled) return
      setError(messageOf(e))
      setLoading(false)
    })
    return () => {
      cancelled = true
      stop?.()
    }
  }, [id])
  return { list, error, loading }
}

function EventLog({ events, loading }: { events: TaskEvent[]; loading: boolean }) {
  const bottom = useRef<HTMLDivElement>(null)
  // A block body: in newer browsers scrollIntoView answers a promise, which an effect must not return.
  useEffect(() => {
    bottom.current?.scrollIntoView({ block: 'end' })
  }, [events.length])
  if (loading) return <Loading label="Loading the event log…" />
  return (
    <ScrollArea h={480} type="auto">
      <Stack gap={0} ff="monospace" fz="xs" data-testid="event-log">
        {events.length === 0 && <Text c="dimmed" fz="xs">No events yet.</Text>}
        {events.map((e) => (
          <EventLine key={e.sequence_num} e={e} />
        ))}
        <div ref={bottom} />
      </Stack>
    </ScrollArea>
  )
}

function EventLine({ e }: { e: TaskEvent }) {
  return (
    <Group gap="xs" wrap="nowrap" align="flex-start" data-seq={e.sequence_num} data-type={e.event_type}>
      <Text span c="dimmed" fz="xs" w={40} ta="right" style={{ flexShrink: 0 }}>
        {e.sequence_num}
      </Text>
      <Text span c="dimmed" fz="xs" w={90} style={{ flexShrink: 0 }} title={e.timestamp}>
        {new Date(e.timestamp).toLocaleTimeString()}
      </Text>
      <Text span c="blue" fz="xs" w={90} style={{ flexShrink: 0 }}>
        {e.event_type}
      </Text>
      <Text span fz="xs" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
        {payloadText(e.payload)}
      </Text>
    </Group>
  )
}

/** A log line as its text; anything else as compact JSON. */
function payloadText(payload: unknown): string {
  if (payload && typeof payload === 'object' && !Array.isArray(payload)) {
    const p = payload as Record<string, unknown>
    const keys = Object.keys(p)
    const text = typeof p.line === 'string' ? p.line : typeof p.text === 'string' ? p.text : undefined
    if (text !== undefined && keys.every((k) => k === 'line' || k === 'text' || k === 'stream')) return p.stream === 'stderr' ? `[stderr] ${text}` : text
  }
  if (payload === undefined || payload === null) return ''
  return typeof payload === 'string' ? payload : JSON.stringify(payload)
}

function collectIds(n: RunTree, out = new Set<string>()): Set<string> {
  out.add(n.id)
  for (const c of n.children ?? []) collectIds(c, out)
  return out
}

function anyRunning(n: RunTree): boolean {
  return n.status === 'running' || (n.children ?? []).some(anyRunning)
}
