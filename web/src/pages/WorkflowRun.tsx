import { Alert, Anchor, Badge, Box, Button, Card, Code, Grid, Group, Stack, Table, Text, TextInput, Title, useComputedColorScheme } from '@mantine/core'
import { Background, Controls, ReactFlow, type Edge } from '@xyflow/react'
import { useEffect, useState } from 'react'
import { Link, useParams } from 'react-router-dom'
import { ApiError, get, messageOf, post, type Schemas } from '../api'
import { layout, loadNodeTypes, readsOf, stateColor, toFlow, type WfNode } from '../canvas/graph'
import { nodeTypes } from '../canvas/NodeView'
import { followEvents, onConnection, watchTopic } from '../live'
import { useSession } from '../session'
import { ScriptLog } from '../events'
import { ErrorNote, Loading, useLoad, when } from '../ui'

type RunView = Schemas['RunView']
type NodeRun = Schemas['NodeRunView']
type Workflow = Schemas['Workflow']
type NodeType = Schemas['NodeType']
type Approval = Schemas['Approval']

const terminal = new Set(['succeeded', 'failed', 'cancelled'])

/** Each key's state: the top level's, else its latest loop iteration's. */
function stateByKey(run: RunView): Map<string, NodeRun> {
  const out = new Map<string, NodeRun>()
  for (const n of run.nodes ?? []) {
    if (n.frame === '' || !out.has(n.key) || out.get(n.key)!.frame !== '') out.set(n.key, n)
  }
  return out
}

/** The run's graph (the workflow's, or just the run's nodes when it is gone) coloured by node state. */
function runFlow(run: RunView, wf: Workflow | null, types: NodeType[]): { nodes: WfNode[]; edges: Edge[] } {
  const base = wf ? toFlow(wf, types) : { nodes: [] as WfNode[], edges: [] as Edge[] }
  const states = stateByKey(run)
  const known = new Set(base.nodes.map((n) => n.id))
  const missing = [...states.values()].filter((n) => !known.has(n.key))
  const auto = layout(
    missing.map((n) => n.key),
    [],
  )
  const nodes: WfNode[] = [
    ...base.nodes,
    ...missing.map((n, i): WfNode => ({
      id: n.key,
      type: 'wf',
      position: wf ? { x: -260, y: i * 130 } : auto.get(n.key)!,
      data: { key: n.key, kind: n.kind, config: {}, handles: [] },
    })),
  ].map((n) => ({ ...n, data: { ...n.data, status: states.get(n.id)?.status ?? 'pending' } }))
  const edges = base.edges.map((e) => {
    const src = states.get(e.source)
    const fired = src?.status === 'succeeded' || src?.status === 'failed' ? src.handle === e.sourceHandle : false
    return fired ? { ...e, animated: false, style: { stroke: 'var(--mantine-color-green-6)', strokeWidth: 2 } } : e
  })
  return { nodes, edges }
}

function json(v: unknown): string {
  return JSON.stringify(v, null, 2) ?? 'null'
}

/** /workflows/runs/:runId: a run's state on the workflow's canvas, live, with its human gates and output. */
export default function WorkflowRunPage() {
  const { runId = '' } = useParams()
  const { workspace } = useSession()
  const run = useLoad(() => get('/api/workflows/runs/{run_id}', { params: { path: { run_id: runId } } }), [runId, workspace?.id])
  const wfId = run.data?.workflow_id
  const graph = useLoad(async () => {
    if (!wfId) return null
    const [wf, types] = await Promise.all([get('/api/workflows/{id}', { params: { path: { id: wfId } } }).catch((e) => {
        if (e instanceof ApiError && e.status === 404) return null // deleted since: the run still shows
        throw e
      }), loadNodeTypes()])
    return { wfId, wf, types }
  }, [wfId])
  const ready = !!graph.data && graph.data.wfId === wfId

  // Live: the workspace's run changes and this run's own events refetch the
  // view (coalesced); while the socket is down a poll stands in, and a
  // reconnect refetches once.
  const { reload } = run
  useEffect(() => {
    if (!workspace) return
    let timer: ReturnType<typeof setTimeout> | undefined
    const soon = () => {
      timer ??= setTimeout(() => {
        timer = undefined
        reload()
      }, 150)
    }
    const offTopic = watchTopic('runs', workspace.id, () => soon())
    const offEvents = followEvents('run', runId, 0, () => soon())
    return () => {
      offTopic()
      offEvents()
      if (timer) clearTimeout(timer)
    }
  }, [workspace, runId, reload])
  const ended = run.data ? terminal.has(run.data.status) : !!run.error
  const [live, setLive] = useState(false)
  useEffect(() => onConnection(setLive), [])
  useEffect(() => {
    if (ended) return
    if (live) {
      reload() // what changed while the socket was down
      return
    }
    const t = setInterval(() => reload(), 2000)
    return () => clearInterval(t)
  }, [ended, live, reload])

  if (run.loading && !run.data) return <Loading label="Loading the run…" />
  if (!run.data) return <ErrorNote error={run.error} />
  const view = run.data
  return (
    <Stack>
      <RunHeader view={view} workflowName={graph.data?.wf?.name} onChange={run.setData} />
      <ErrorNote error={run.error} />
      <ErrorNote error={graph.error} />
      <Gates view={view} onChange={run.setData} />
      <RunBody view={view} wf={ready ? (graph.data?.wf ?? null) : null} types={graph.data?.types ?? []} ready={ready} />
    </Stack>
  )
}

function RunHeader({ view, workflowName, onChange }: { view: RunView; workflowName?: string; onChange: (v: RunView) => void }) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')
  const cancel = async () => {
    setBusy(true)
    setError('')
    try {
      onChange(await post('/api/workflows/runs/{run_id}/cancel', { params: { path: { run_id: view.id } } }))
    } catch (e) {
      setError(messageOf(e))
    } finally {
      setBusy(false)
    }
  }
  const color = stateColor[view.status] ?? 'gray'
  return (
    <Stack gap="xs">
      <Anchor component={Link} to={`/workflows/${view.workflow_id}`} size="sm">
        ← {workflowName ?? 'Workflow'}
      </Anchor>
      <Group justify="space-between">
        <Group>
          <Title order={2}>Run</Title>
          <Badge size="lg" color={color} variant="light" tt="none" data-testid="run-status" data-status={view.status}>
            {view.status}
          </Badge>
        </Group>
        {!terminal.has(view.status) && (
          <Button color="red" variant="light" onClick={cancel} loading={busy} data-testid="cancel-run">
            Cancel run
          </Button>
        )}
      </Group>
      <Text size="sm" c="dimmed">
        Started {when(view.started_at ?? view.created_at)}
        {view.finished_at ? ` · finished ${when(view.finished_at)}` : ''}
      </Text>
      {error && <ErrorNote error={error} />}
      {view.error && view.status !== 'cancelled' && (
        <Alert color="red" title="The run failed" data-testid="run-error">
          {view.error}
        </Alert>
      )}
      {view.status === 'cancelled' && view.error && (
        <Text size="sm" c="dimmed" data-testid="run-error">
          {view.error}
        </Text>
      )}
    </Stack>
  )
}

/** The human gates waiting on a decision, with what they ask (from the pending approvals). */
function Gates({ view, onChange }: { view: RunView; onChange: (v: RunView) => void }) {
  const states = stateByKey(view)
  const waiting = (view.waiting_on ?? []).filter((k) => states.get(k)?.kind === 'human')
  const events = (view.waiting_on ?? []).filter((k) => states.get(k)?.kind === 'wait_event')
  const sig = waiting.join(',')
  const approvals = useLoad(
    () => (sig ? get('/api/workflows/pending-approvals').then((a) => a ?? []) : Promise.resolve([] as Approval[])),
    [sig],
  )
  if (waiting.length === 0 && events.length === 0) return null
  return (
    <Stack gap="xs">
      {waiting.map((key) => (
        <Gate key={key} runId={view.id} nodeKey={key} message={approvals.data?.find((a) => a.run_id === view.id && a.node_key === key)?.message} onChange={onChange} />
      ))}
      {events.map((key) => (
        <Text key={key} size="sm" c="dimmed">
          {key} waits for an event.
        </Text>
      ))}
    </Stack>
  )
}

function Gate({ runId, nodeKey, message, onChange }: { runId: string; nodeKey: string; message?: string; onChange: (v: RunView) => void }) {
  const [comment, setComment] = useState('')
  const [busy, setBusy] = useState<'' | 'approve' | 'reject'>('')
  const [error, setError] = useState('')
  const decide = async (decision: 'approve' | 'reject') => {
    setBusy(decision)
    setError('')
    try {
      const body = comment.trim() ? { decision, comment: comment.trim() } : { decision }
      onChange(await post('/api/workflows/runs/{run_id}/nodes/{node_key}/decision', { params: { path: { run_id: runId, node_key: nodeKey } }, body }))
    } catch (e) {
      setError(messageOf(e))
    } finally {
      setBusy('')
    }
  }
  return (
    <Card withBorder style={{ borderColor: 'var(--mantine-color-yellow-6)' }} data-testid={`gate-${nodeKey}`}>
      <Stack gap="xs">
        <Text fw={600}>{nodeKey} waits for a decision</Text>
        {message && <Text size="sm">{message}</Text>}
        <Group align="end">
          <TextInput label="Comment (optional)" value={comment} onChange={(e) => setComment(e.currentTarget.value)} maxLength={2000} w={320} />
          <Button color="green" onClick={() => decide('approve')} loading={busy === 'approve'} disabled={busy === 'reject'} data-testid="gate-approve" data-node-key={nodeKey}>
            Approve
          </Button>
          <Button color="red" variant="light" onClick={() => decide('reject')} loading={busy === 'reject'} disabled={busy === 'approve'} data-testid="gate-reject" data-node-key={nodeKey}>
            Reject
          </Button>
        </Group>
        {error && <ErrorNote error={error} />}
      </Stack>
    </Card>
  )
}

function RunBody({ view, wf, types, ready }: { view: RunView; wf: Workflow | null; types: NodeType[]; ready: boolean }) {
  const scheme = useComputedColorScheme('light')
  const [selected, setSelected] = useState('')
  const flow = runFlow(view, wf, types)
  const nodes = flow.nodes.map((n) => (n.id === selected ? { ...n, selected: true } : n))
  const chosen = (view.nodes ?? []).filter((n) => n.key === selected)
  return (
    <Grid>
      <Grid.Col span={{ base: 12, md: 8 }}>
        <Box h={480} style={{ border: '1px solid var(--mantine-color-default-border)', borderRadius: 8 }} data-testid="run-canvas">
          {!ready ? (
            <Loading label="Loading the graph…" />
          ) : (
            <ReactFlow
              nodes={nodes}
              edges={flow.edges}
              nodeTypes={nodeTypes}
              nodesDraggable={false}
              nodesConnectable={false}
              deleteKeyCode={null}
              onNodeClick={(_, n) => setSelected(n.id)}
              onPaneClick={() => setSelected('')}
              colorMode={scheme}
              fitView
              fitViewOptions={{ maxZoom: 1.2 }}
            >
              <Background />
              <Controls showInteractive={false} />
            </ReactFlow>
          )}
        </Box>
      </Grid.Col>
      <Grid.Col span={{ base: 12, md: 4 }}>
        <Card withBorder h="100%">
          <Stack gap="xs">
            {chosen.length > 0 ? (
              chosen.map((n) => (
                <Stack key={`${n.key}@${n.frame}`} gap={4}>
                  <Title order={5}>
                    {n.key}
                    {n.frame ? ` · ${n.frame}` : ''}
                  </Title>
                  <Text size="sm">
                    {n.kind} · {n.status}
                    {n.handle ? ` → ${n.handle}` : ''}
                    {n.attempt > 1 ? ` · attempt ${n.attempt}` : ''}
                  </Text>
                  {n.task_id && (
                    <Anchor component={Link} to={`/tasks/${n.task_id}`} size="sm">
                      Its task
                    </Anchor>
                  )}
                  {n.error && (
                    <Text size="sm" c="red">
                      {n.error}
                    </Text>
                  )}
                  <Text size="xs" fw={500}>
                    Input
                  </Text>
                  <Code block data-testid={`node-input-${n.key}`}>{json(nodeInput(view, wf, n))}</Code>
                  {n.output !== null && (
                    <>
                      <Text size="xs" fw={500}>
                        Output
                      </Text>
                      <Code block data-testid={`node-output-${n.key}`}>{json(n.output)}</Code>
                    </>
                  )}
                  {scriptRun(n.output) && <ScriptLog id={scriptRun(n.output)!} />}
                </Stack>
              ))
            ) : (
              <>
                <Title order={5}>Output</Title>
                {view.output !== null ? (
                  <Code block data-testid="run-output">
                    {json(view.output)}
                  </Code>
                ) : (
                  <Text size="sm" c="dimmed">
                    {terminal.has(view.status) ? 'No output.' : 'Not finished yet.'}
                  </Text>
                )}
                <Title order={6}>Input</Title>
                <Code block>{json(view.input)}</Code>
                <Text size="xs" c="dimmed">
                  Select a node to see its output.
                </Text>
              </>
            )}
          </Stack>
        </Card>
      </Grid.Col>
      <Grid.Col span={12}>
        <NodeTable view={view} onSelect={setSelected} />
      </Grid.Col>
    </Grid>
  )
}

/**
 * What a node read: the run's input and the outputs of the nodes its config
 * names (nodes.<key>), from its own loop iteration first, then the top level.
 */
function nodeInput(view: RunView, wf: Workflow | null, n: NodeRun): unknown {
  const config = wf?.nodes?.find((x) => x.key === n.key)?.config
  const nodes: Record<string, unknown> = {}
  for (const k of readsOf(config)) {
    const ran = (view.nodes ?? []).filter((m) => m.key === k)
    nodes[k] = (ran.find((m) => m.frame === n.frame) ?? ran.find((m) => m.frame === ''))?.output ?? null
  }
  return Object.keys(nodes).length ? { input: view.input, nodes } : { input: view.input }
}

function NodeTable({ view, onSelect }: { view: RunView; onSelect: (key: string) => void }) {
  return (
    <Table striped highlightOnHover data-testid="run-nodes">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Node</Table.Th>
          <Table.Th>Kind</Table.Th>
          <Table.Th>State</Table.Th>
          <Table.Th>Output handle</Table.Th>
          <Table.Th>Started</Table.Th>
          <Table.Th>Error</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {(view.nodes ?? []).map((n) => (
          <Table.Tr key={`${n.key}@${n.frame}`} data-testid={`node-run-${n.key}`} data-status={n.status} onClick={() => onSelect(n.key)} style={{ cursor: 'pointer' }}>
            <Table.Td>
              {n.key}
              {n.frame ? (
                <Text span size="xs" c="dimmed">
                  {' '}
                  {n.frame}
                </Text>
              ) : null}
            </Table.Td>
            <Table.Td>{n.kind}</Table.Td>
            <Table.Td>
              <Badge color={stateColor[n.status] ?? 'gray'} variant="light" tt="none">
                {n.status}
              </Badge>
            </Table.Td>
            <Table.Td>{n.handle || '—'}</Table.Td>
            <Table.Td>{when(n.started_at)}</Table.Td>
            <Table.Td>
              <Text size="sm" c="red">
                {n.error}
              </Text>
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  )
}

/** The script run a code node's output names, whose events hold its stdout and stderr. */
function scriptRun(output: unknown): string | undefined {
  const id = output && typeof output === 'object' ? (output as { script_run_id?: unknown }).script_run_id : undefined
  return typeof id === 'string' && id ? id : undefined
}
