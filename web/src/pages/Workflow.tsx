import {
  Alert,
  Anchor,
  Box,
  Button,
  Card,
  CloseButton,
  Grid,
  Group,
  ScrollArea,
  SegmentedControl,
  NativeSelect,
  Stack,
  Text,
  TextInput,
  Textarea,
  Title,
  useComputedColorScheme,
} from '@mantine/core'
import {
  Background,
  Controls,
  ReactFlow,
  applyEdgeChanges,
  applyNodeChanges,
  type Connection,
  type Edge,
  type EdgeChange,
  type NodeChange,
  type ReactFlowInstance,
} from '@xyflow/react'
import { useCallback, useEffect, useRef, useState } from 'react'
import { Link, useLocation, useNavigate, useParams } from 'react-router-dom'
import { ApiError, get, messageOf, post, put, type Schemas } from '../api'
import { edgeId, flowEdge, handlesFor, layout, loadNodeTypes, toFlow, type WfNode } from '../canvas/graph'
import { nodeTypes } from '../canvas/NodeView'
import { problemText, problems, SchemaForm, type Schema } from '../canvas/SchemaForm'
import { useSession } from '../session'
import { ErrorNote, Loading, useLoad } from '../ui'
import { exportYAML, HistoryCard, NodeTest, TriggersCard } from './WorkflowExtras'

type Workflow = Schemas['Workflow']
type NodeType = Schemas['NodeType']

// ---------------------------------------------------------------------------
// Validation messages. The backend names the node as `node "key": …`
// (`node at index N: …` when it has no key), an edge as `edge a -> b: …` or
// `edge a -> b crosses …`, a cycle as `cycle through node "key" (…)`, and
// schema errors of the body as `… body.nodes[N]…`.

type GraphProblem = { node?: string; edge?: { source: string; target: string }; detail: string }

const quoted = String.raw`"((?:[^"\\]|\\.)*)"`
const unquote = (s: string) => {
  try {
    return JSON.parse(`"${s}"`) as string
  } catch {
    return s
  }
}
const edgeEnd = String.raw`("(?:[^"\\]|\\.)*"|[A-Za-z][A-Za-z0-9_-]*)`

/** Which node (or edge) a validation message names; keys are those of the body that was sent. */
function parseProblem(message: string, sentKeys: string[]): GraphProblem {
  let m = message.match(new RegExp(`^node ${quoted}…?: (.*)$`, 's'))
  if (m) return { node: unquote(m[1]), detail: m[2] }
  m = message.match(/^node at index (\d+): (.*)$/s)
  if (m) return { node: sentKeys[Number(m[1])], detail: m[2] }
  m = message.match(new RegExp(`^cycle through node ${quoted}`))
  if (m) return { node: unquote(m[1]), detail: message }
  m = message.match(new RegExp(`^edge ${edgeEnd} -> ${edgeEnd}(?::| )\\s*(.*)$`, 's'))
  if (m) {
    const end = (s: string) => (s.startsWith('"') ? unquote(s.slice(1, -1)) : s)
    return { edge: { source: end(m[1]), target: end(m[2]) }, detail: m[3] }
  }
  m = message.match(/body\.nodes\[(\d+)\]/)
  if (m) return { node: sentKeys[Number(m[1])], detail: message }
  return { detail: message }
}

// ---------------------------------------------------------------------------
// The page.

const keyPattern = /^[A-Za-z][A-Za-z0-9_-]*$/

/** A starting config: the kind's required fields, empty. */
function skeleton(kind: string, types: NodeType[]): Record<string, unknown> {
  const schema = types.find((t) => t.slug === kind)?.config_schema as { required?: string[]; properties?: Record<string, { type?: string | string[] }> } | undefined
  const out: Record<string, unknown> = {}
  for (const f of schema?.required ?? []) {
    const t = schema?.properties?.[f]?.type
    const type = Array.isArray(t) ? t[0] : t
    out[f] = type === 'array' ? [] : type === 'object' ? {} : type === 'integer' || type === 'number' ? 0 : type === 'boolean' ? false : ''
  }
  return out
}

/** /workflows/:id: the workflow's graph on a canvas, edited and saved whole, and run. */
export default function WorkflowPage() {
  const { id = '' } = useParams()
  const { workspace } = useSession()
  const load = useLoad(async () => {
    const [wf, types] = await Promise.all([get('/api/workflows/{id}', { params: { path: { id } } }), loadNodeTypes()])
    const projects = await get('/api/projects').catch(() => null)
    return { wf, types, project: projects?.find((p) => p.id === wf.project_id)?.name }
  }, [id, workspace?.id])

  if (load.loading && !load.data) return <Loading label="Loading the workflow…" />
  if (!load.data) return <ErrorNote error={load.error} />
  return <Editor key={load.data.wf.id} wf={load.data.wf} types={load.data.types} project={load.data.project} />
}

type Busy = '' | 'save' | 'run'

type Snap = { nodes: WfNode[]; edges: Edge[] }

/** A key for a new node of a kind that no node has yet: the kind, then _2, _3… */
function autoKey(kind: string, taken: string[]): string {
  let base = kind.replace(/[^A-Za-z0-9_-]/g, '_')
  if (!/^[A-Za-z]/.test(base)) base = `n_${base}`
  if (!taken.includes(base)) return base
  for (let i = 2; ; i++) if (!taken.includes(`${base}_${i}`)) return `${base}_${i}`
}

/** Asks before leaving with unsaved changes: closing the tab, and following a link of the console. */
function useUnsavedWarning(dirty: boolean) {
  useEffect(() => {
    if (!dirty) return
    const unload = (e: BeforeUnloadEvent) => {
      e.preventDefault()
      e.returnValue = ''
    }
    const click = (e: MouseEvent) => {
      const a = (e.target as HTMLElement | null)?.closest?.('a[href]')
      if (!a || a.getAttribute('target') === '_blank') return
      if (!window.confirm('This workflow has unsaved changes. Leave without saving them?')) {
        e.preventDefault()
        e.stopPropagation()
      }
    }
    window.addEventListener('beforeunload', unload)
    document.addEventListener('click', click, true)
    return () => {
      window.removeEventListener('beforeunload', unload)
      document.removeEventListener('click', click, true)
    }
  }, [dirty])
}

function Editor({ wf, types, project }: { wf: Workflow; types: NodeType[]; project?: string }) {
  const navigate = useNavigate()
  const location = useLocation()
  const scheme = useComputedColorScheme('light')
  const schemaOf = useCallback((kind: string) => types.find((t) => t.slug === kind)?.config_schema as Schema | undefined, [types])
  /** What the kind's schema finds wrong with a node's config, before anything is saved. */
  const localProblem = (kind: string, config: Record<string, unknown>) => problemText(problems(schemaOf(kind), config))
  const initial = useState(() => {
    const f = toFlow(wf, types)
    return { ...f, nodes: f.nodes.map((n) => ({ ...n, data: { ...n.data, error: localProblem(n.data.kind, n.data.config) } })) }
  })[0]
  const [nodes, setNodes] = useState<WfNode[]>(initial.nodes)
  const [edges, setEdges] = useState<Edge[]>(initial.edges)
  const [dirty, setDirty] = useState(false)
  const [busy, setBusy] = useState<Busy>('')
  const [error, setError] = useState('')
  const [saved, setSaved] = useState(false)
  const [configInvalid, setConfigInvalid] = useState(false)
  const [runInput, setRunInput] = useState('')
  const flow = useRef<ReactFlowInstance<WfNode, Edge> | null>(null)
  // Brings every node into view once the canvas has drawn the change.
  const refit = () => setTimeout(() => flow.current?.fitView({ maxZoom: 1.2, duration: 200 }), 50)

  const changed = () => {
    setDirty(true)
    setSaved(false)
  }
  useUnsavedWarning(dirty)

  // Undo and redo: what the graph was before each change (typing into one
  // node's config in a burst counts once).
  const current = useRef<Snap>({ nodes, edges })
  current.current = { nodes, edges }
  const past = useRef<Snap[]>([])
  const future = useRef<Snap[]>([])
  const last = useRef({ at: 0, tag: '' })
  // Bumped by undo and redo only: the node panel starts over from the restored config.
  const [version, setVersion] = useState(0)
  const remember = (tag = '') => {
    const now = Date.now()
    if (tag && tag === last.current.tag && now - last.current.at < 1500) {
      last.current.at = now
      return
    }
    past.current.push(current.current)
    if (past.current.length > 100) past.current.shift()
    future.current = []
    last.current = { at: now, tag }
  }
  const travel = (from: typeof past, to: typeof past) => {
    const s = from.current.pop()
    if (!s) return
    to.current.push(current.current)
    setNodes(s.nodes)
    setEdges(s.edges)
    last.current = { at: 0, tag: '' }
    setVersion((v) => v + 1)
    changed()
  }
  const undo = () => travel(past, future)
  const redo = () => travel(future, past)
  const keys = useRef({ undo, redo })
  keys.current = { undo, redo }
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null
      if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return
      if (!(e.ctrlKey || e.metaKey)) return
      const k = e.key.toLowerCase()
      if (k === 'z' && !e.shiftKey) keys.current.undo()
      else if ((k === 'z' && e.shiftKey) || k === 'y') keys.current.redo()
      else return
      e.preventDefault()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [])
  const selNode = nodes.find((n) => n.selected)
  const selEdge = selNode ? undefined : edges.find((e) => e.selected)

  const onNodesChange = (changes: NodeChange<WfNode>[]) => {
    if (changes.some((c) => c.type === 'remove')) remember()
    setNodes((ns) => applyNodeChanges(changes, ns))
    if (changes.some((c) => c.type === 'remove' || (c.type === 'position' && c.dragging === false))) changed()
  }
  const onEdgesChange = (changes: EdgeChange<Edge>[]) => {
    if (changes.some((c) => c.type === 'remove')) remember()
    setEdges((es) => applyEdgeChanges(changes, es))
    if (changes.some((c) => c.type === 'remove')) changed()
  }

  /** Adds an edge, or says why it cannot be. */
  const connect = (source: string, handle: string | null, target: string): string => {
    const src = nodes.find((n) => n.id === source)
    if (!src || !nodes.some((n) => n.id === target)) return 'Choose a source and a target node.'
    if (source === target) return 'An edge cannot connect a node to itself.'
    if (src.data.handles.length === 0) return `${src.data.kind} nodes have no outputs.`
    const h = handle ?? src.data.handles[0]
    if (!src.data.handles.includes(h)) return `${h} is not an output of ${source} (${src.data.handles.join(', ')}).`
    if (edges.some((e) => e.id === edgeId(source, h, target))) return `${source} → ${target} (${h}) exists already.`
    remember()
    setEdges((es) => [...es, flowEdge(source, h, target)])
    changed()
    return ''
  }
  const onConnect = (c: Connection) => setError(connect(c.source, c.sourceHandle ?? null, c.target))

  const addNode = (kind: string, key: string, at?: { x: number; y: number }): string => {
    if (!keyPattern.test(key)) return 'A node key starts with a letter and holds only letters, digits, _ and -.'
    if (nodes.some((n) => n.id === key)) return `There is a node ${key} already.`
    const right = nodes.reduce((m, n) => Math.max(m, n.position.x), -300)
    const config = skeleton(kind, types)
    const ordinal = nodes.reduce((m, n) => Math.max(m, n.data.ordinal ?? 0), -1) + 1
    remember()
    const node: WfNode = {
      id: key,
      type: 'wf',
      position: at ?? { x: right + 300, y: nodes[nodes.length - 1]?.position.y ?? 0 },
      selected: true,
      data: { key, kind, config, handles: handlesFor(kind, config, types), ordinal, error: localProblem(kind, config) },
    }
    setNodes((ns) => [...ns.map((n) => (n.selected ? { ...n, selected: false } : n)), node])
    setEdges((es) => es.map((e) => (e.selected ? { ...e, selected: false } : e)))
    changed()
    refit()
    return ''
  }

  /** Lays the nodes out left to right by their depth in the graph. */
  const arrange = () => {
    remember()
    const at = layout(
      nodes.map((n) => n.id),
      edges,
    )
    setNodes((ns) => ns.map((n) => ({ ...n, position: at.get(n.id) ?? n.position })))
    changed()
    refit()
  }

  const setConfig = (key: string, config: Record<string, unknown>) => {
    remember(`config:${key}`)
    setNodes((ns) =>
      ns.map((n) =>
        n.id === key ? { ...n, data: { ...n.data, config, handles: handlesFor(n.data.kind, config, types), error: localProblem(n.data.kind, config) } } : n,
      ),
    )
    changed()
  }
  const removeNode = (key: string) => {
    remember()
    setNodes((ns) => ns.filter((n) => n.id !== key))
    setEdges((es) => es.filter((e) => e.source !== key && e.target !== key))
    setConfigInvalid(false)
    changed()
  }
  const removeEdge = (id: string) => {
    remember()
    setEdges((es) => es.filter((e) => e.id !== id))
    changed()
  }

  /** Marks what a validation message names, and clears the old marks. */
  const mark = (p: GraphProblem | null) => {
    setNodes((ns) => ns.map((n) => ({ ...n, data: { ...n.data, error: p?.node === n.id ? p.detail : localProblem(n.data.kind, n.data.config) } })))
    setEdges((es) =>
      es.map((e) => {
        const bad = !!p?.edge && p.edge.source === e.source && p.edge.target === e.target
        return { ...e, animated: bad, style: bad ? { stroke: 'var(--mantine-color-red-6)', strokeWidth: 2 } : undefined, label: bad ? p!.detail : e.sourceHandle && e.sourceHandle !== 'out' ? e.sourceHandle : undefined }
      }),
    )
  }

  const save = async (): Promise<boolean> => {
    if (configInvalid) {
      setError('The selected node’s config is not valid JSON: fix it before saving.')
      return false
    }
    const bad = nodes.find((n) => localProblem(n.data.kind, n.data.config))
    if (bad) {
      setError(`node "${bad.id}": ${localProblem(bad.data.kind, bad.data.config)}`)
      return false
    }
    const body: Schemas['Input'] = {
      nodes: nodes.map((n) => ({
        key: n.data.key,
        kind: n.data.kind,
        config: n.data.config,
        position: { x: Math.round(n.position.x), y: Math.round(n.position.y) },
        ordinal: n.data.ordinal,
        parent_node_key: n.data.parent || undefined,
      })),
      edges: edges.map((e) => ({ source: e.source, target: e.target, source_handle: e.sourceHandle ?? undefined })),
    }
    setError('')
    setSaved(false)
    try {
      await put('/api/workflows/{id}', { params: { path: { id: wf.id } }, body })
      mark(null)
      setDirty(false)
      setSaved(true)
      return true
    } catch (e) {
      setError(messageOf(e))
      mark(e instanceof ApiError && e.status === 400 ? parseProblem(e.message, nodes.map((n) => n.id)) : null)
      return false
    }
  }

  const onSave = async () => {
    setBusy('save')
    await save()
    setBusy('')
  }

  const onRun = async () => {
    let input: unknown = undefined
    if (runInput.trim()) {
      try {
        input = JSON.parse(runInput)
      } catch {
        setError('The run input is not valid JSON.')
        return
      }
    }
    setBusy('run')
    try {
      if (dirty && !(await save())) return
      const r = await post('/api/workflows/{id}/runs', { params: { path: { id: wf.id } }, body: input === undefined ? {} : { input } })
      navigate(`/workflows/runs/${r.run_id}`)
    } catch (e) {
      setError(messageOf(e))
    } finally {
      setBusy('')
    }
  }

  return (
    <Stack>
      <Group justify="space-between" align="end">
        <div>
          <Anchor component={Link} to="/workflows" size="sm">
            ← Workflows
          </Anchor>
          <Title order={2}>{wf.name}</Title>
          <Text size="sm" c="dimmed">
            {project ? `Project ${project}` : null}
            {dirty ? ' · unsaved changes' : ''}
          </Text>
        </div>
        <Group align="end">
          <Textarea
            label="Run input (JSON, optional)"
            placeholder='{"key": "value"}'
            value={runInput}
            onChange={(e) => setRunInput(e.currentTarget.value)}
            autosize
            minRows={1}
            maxRows={4}
            w={240}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
            data-testid="run-input"
          />
          <Button variant="subtle" component={Link} to={`/marketplace?tab=publish&what=bundle&workflow=${wf.id}`} data-testid="publish-to-marketplace">
            Publish to marketplace
          </Button>
          <Button variant="subtle" onClick={() => exportYAML(wf.id, wf.name).catch((e) => setError(messageOf(e)))} data-testid="export-yaml" title="Download the saved workflow as YAML">
            Export YAML
          </Button>
          <Button variant="default" onClick={onSave} loading={busy === 'save'} disabled={busy === 'run'} data-testid="save-workflow">
            Save
          </Button>
          <Button onClick={onRun} loading={busy === 'run'} disabled={busy === 'save'} data-testid="run-workflow">
            {dirty ? 'Save and run' : 'Run'}
          </Button>
        </Group>
      </Group>
      {error && (
        <Alert color="red" role="alert" data-testid="workflow-error" withCloseButton onClose={() => setError('')}>
          {error}
        </Alert>
      )}
      {saved && !error && (
        <Text size="sm" c="teal" data-testid="workflow-saved">
          Saved.
        </Text>
      )}
      <Card withBorder p="sm">
        <Group align="end" gap="xl">
          <AddNode types={types} onAdd={addNode} />
          <AddEdge nodes={nodes} onAdd={connect} />
          <Button variant="subtle" onClick={arrange} data-testid="arrange">
            Arrange
          </Button>
        </Group>
      </Card>
      <Grid>
        <Grid.Col span={{ base: 12, md: 2 }}>
          <Library types={types} onAdd={(kind) => addNode(kind, autoKey(kind, nodes.map((n) => n.id)))} />
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 6 }}>
          <Group gap={4} mb={4}>
            <Button size="compact-xs" variant="default" onClick={undo} disabled={past.current.length === 0} data-testid="undo" title="Undo (Ctrl+Z)">
              Undo
            </Button>
            <Button size="compact-xs" variant="default" onClick={redo} disabled={future.current.length === 0} data-testid="redo" title="Redo (Ctrl+Shift+Z)">
              Redo
            </Button>
          </Group>
          <Box
            h={560}
            style={{ border: '1px solid var(--mantine-color-default-border)', borderRadius: 8 }}
            data-testid="workflow-canvas"
            onDragOver={(e) => {
              if (e.dataTransfer.types.includes(dragType)) {
                e.preventDefault()
                e.dataTransfer.dropEffect = 'copy'
              }
            }}
            onDrop={(e) => {
              const kind = e.dataTransfer.getData(dragType)
              if (!kind || !flow.current) return
              e.preventDefault()
              const at = flow.current.screenToFlowPosition({ x: e.clientX, y: e.clientY })
              setError(addNode(kind, autoKey(kind, nodes.map((n) => n.id)), at))
            }}
          >
            <ReactFlow
              nodes={nodes}
              edges={edges}
              nodeTypes={nodeTypes}
              onNodesChange={onNodesChange}
              onEdgesChange={onEdgesChange}
              onConnect={onConnect}
              onNodeDragStart={() => remember()}
              onInit={(i) => (flow.current = i)}
              deleteKeyCode={['Backspace', 'Delete']}
              colorMode={scheme}
              fitView
              fitViewOptions={{ maxZoom: 1.2 }}
            >
              <Background />
              <Controls />
            </ReactFlow>
          </Box>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 4 }}>
          <Card withBorder h="100%">
            {selNode ? (
              <NodePanel
                key={`${selNode.id}:${version}`}
                node={selNode}
                workflowId={wf.id}
                others={nodes.filter((n) => n.id !== selNode.id).map((n) => n.id)}
                type={types.find((t) => t.slug === selNode.data.kind)}
                edges={edges.filter((e) => e.source === selNode.id || e.target === selNode.id)}
                onConfig={setConfig}
                onInvalid={setConfigInvalid}
                onRemove={removeNode}
                onRemoveEdge={removeEdge}
              />
            ) : selEdge ? (
              <Stack gap="xs">
                <Title order={5}>Edge</Title>
                <Text size="sm">
                  {selEdge.source} → {selEdge.target} {selEdge.sourceHandle ? `(${selEdge.sourceHandle})` : ''}
                </Text>
                <Button color="red" variant="light" onClick={() => removeEdge(selEdge.id)} data-testid="remove-edge">
                  Remove edge
                </Button>
              </Stack>
            ) : (
              <Text size="sm" c="dimmed">
                Select a node to edit its config. Connect nodes by dragging from an output handle (right) to another node, or with Add edge.
                Backspace removes the selection.
              </Text>
            )}
          </Card>
        </Grid.Col>
      </Grid>
      <Grid>
        <Grid.Col span={{ base: 12, md: 7 }}>
          <TriggersCard workflowId={wf.id} justCreated={(location.state as { shown?: Schemas['Trigger'] } | null)?.shown} />
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 5 }}>
          <HistoryCard workflowId={wf.id} />
        </Grid.Col>
      </Grid>
    </Stack>
  )
}

const dragType = 'application/x-slipway-node-kind'

/** The node kinds by category, to drag onto the canvas or click to add. */
function Library({ types, onAdd }: { types: NodeType[]; onAdd: (kind: string) => void }) {
  const [q, setQ] = useState('')
  const shown = types.filter((t) => !q || `${t.slug} ${t.name} ${t.description}`.toLowerCase().includes(q.toLowerCase()))
  const categories = [...new Set(shown.map((t) => t.category || 'other'))]
  return (
    <Card withBorder p="xs" h="100%" data-testid="node-library">
      <Stack gap={6}>
        <TextInput size="xs" placeholder="Find a node" value={q} onChange={(e) => setQ(e.currentTarget.value)} data-testid="library-search" />
        <ScrollArea h={540} type="auto">
          <Stack gap={8}>
            {categories.map((c) => (
              <Stack key={c} gap={2}>
                <Text size="xs" fw={700} tt="uppercase" c="dimmed">
                  {c}
                </Text>
                {shown
                  .filter((t) => (t.category || 'other') === c)
                  .map((t) => (
                    <Box
                      key={t.slug}
                      draggable
                      onDragStart={(e) => {
                        e.dataTransfer.setData(dragType, t.slug)
                        e.dataTransfer.effectAllowed = 'copy'
                      }}
                      onClick={() => onAdd(t.slug)}
                      title={`${t.description} Drag it onto the canvas, or click to add it.`}
                      data-testid={`library-${t.slug}`}
                      style={{
                        cursor: 'grab',
                        padding: '4px 8px',
                        borderRadius: 6,
                        border: '1px solid var(--mantine-color-default-border)',
                        opacity: t.available ? 1 : 0.55,
                      }}
                    >
                      <Text size="xs" fw={600}>
                        {t.name}
                      </Text>
                      <Text size="xs" c="dimmed" lineClamp={2}>
                        {t.description}
                      </Text>
                    </Box>
                  ))}
              </Stack>
            ))}
          </Stack>
        </ScrollArea>
      </Stack>
    </Card>
  )
}

function AddNode({ types, onAdd }: { types: NodeType[]; onAdd: (kind: string, key: string) => string }) {
  const kinds = types.length ? types.map((t) => ({ value: t.slug, label: t.available ? t.name : `${t.name} (not available yet)` })) : ['agent', 'gate', 'human', 'end', 'code', 'http_request', 'transform', 'notify_webhook', 'loop', 'wait_event']
  const [kind, setKind] = useState(types[0]?.slug ?? 'agent')
  const [key, setKey] = useState('')
  const [error, setError] = useState('')
  const add = (e: React.FormEvent) => {
    e.preventDefault()
    const err = onAdd(kind, key.trim())
    setError(err)
    if (!err) setKey('')
  }
  return (
    <form onSubmit={add}>
      <Group align="end" gap="xs">
        <NativeSelect label="Node kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)} data={kinds} data-testid="add-node-kind" />
        <TextInput label="Node key" placeholder="review" value={key} onChange={(e) => setKey(e.currentTarget.value)} error={error || undefined} maxLength={64} w={150} data-testid="add-node-key" />
        <Button type="submit" variant="light" data-testid="add-node">
          Add node
        </Button>
      </Group>
    </form>
  )
}

function AddEdge({ nodes, onAdd }: { nodes: WfNode[]; onAdd: (source: string, handle: string | null, target: string) => string }) {
  const [source, setSource] = useState('')
  const [target, setTarget] = useState('')
  const [handle, setHandle] = useState('')
  const [error, setError] = useState('')
  const keys = nodes.map((n) => n.id)
  // The choices follow the graph: a removed node falls back to the first one.
  const src = keys.includes(source) ? source : (keys[0] ?? '')
  const tgt = keys.includes(target) ? target : (keys.find((k) => k !== src) ?? '')
  const handles = nodes.find((n) => n.id === src)?.data.handles ?? []
  const h = handles.includes(handle) ? handle : (handles[0] ?? '')
  const add = (e: React.FormEvent) => {
    e.preventDefault()
    setError(onAdd(src, h || null, tgt))
  }
  return (
    <form onSubmit={add}>
      <Group align="end" gap="xs">
        <NativeSelect label="From" value={src} onChange={(e) => setSource(e.currentTarget.value)} data={keys} data-testid="edge-source" />
        <NativeSelect
          label="Output"
          value={h}
          onChange={(e) => setHandle(e.currentTarget.value)}
          data={handles.length ? handles : [{ value: '', label: 'none' }]}
          disabled={handles.length <= 1}
          data-testid="edge-handle"
        />
        <NativeSelect label="To" value={tgt} onChange={(e) => setTarget(e.currentTarget.value)} data={keys} data-testid="edge-target" />
        <Button type="submit" variant="light" disabled={keys.length < 2} data-testid="add-edge">
          Add edge
        </Button>
        {error && (
          <Text size="sm" c="red" role="alert">
            {error}
          </Text>
        )}
      </Group>
    </form>
  )
}

type PanelProps = {
  node: WfNode
  workflowId: string
  others: string[]
  type?: NodeType
  edges: Edge[]
  onConfig: (key: string, config: Record<string, unknown>) => void
  onInvalid: (invalid: boolean) => void
  onRemove: (key: string) => void
  onRemoveEdge: (id: string) => void
}

/** The selected node: its config as JSON, its edges, and removal. */
function NodePanel({ node, workflowId, others, type, edges, onConfig, onInvalid, onRemove, onRemoveEdge }: PanelProps) {
  const { key, kind, config, error } = node.data
  const [text, setText] = useState(() => JSON.stringify(config, null, 2))
  const [invalid, setInvalid] = useState('')
  const schema = type?.config_schema as Schema | undefined
  const [view, setView] = useState<'form' | 'json'>(schema?.properties ? 'form' : 'json')
  const suggestions = ['input', 'trigger', 'run', 'env', ...others.map((k) => `nodes.${k}.output`)]
  // Leaving the node drops its unparsable text: the last valid config stays.
  useEffect(() => () => onInvalid(false), [onInvalid])

  const edit = (v: string) => {
    setText(v)
    let parsed: unknown
    try {
      parsed = JSON.parse(v)
    } catch (e) {
      setInvalid(`Not valid JSON: ${messageOf(e)}`)
      onInvalid(true)
      return
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      setInvalid('The config must be a JSON object.')
      onInvalid(true)
      return
    }
    setInvalid('')
    onInvalid(false)
    onConfig(key, parsed as Record<string, unknown>)
  }

  return (
    <Stack gap="xs" data-testid="node-panel">
      <Group justify="space-between">
        <Title order={5}>{key}</Title>
        <Text size="sm" c="dimmed">
          {type?.name ?? kind}
        </Text>
      </Group>
      {type?.description && (
        <Text size="xs" c="dimmed">
          {type.description}
          {type.available ? '' : ' Not available yet in this build: it saves but fails when run.'}
        </Text>
      )}
      {error && (
        <Text size="sm" c="red">
          {error}
        </Text>
      )}
      {schema?.properties && (
        <SegmentedControl
          size="xs"
          value={view}
          onChange={(v) => {
            if (v === 'json') setText(JSON.stringify(config, null, 2))
            setView(v as 'form' | 'json')
          }}
          data={[
            { value: 'form', label: 'Form' },
            { value: 'json', label: 'JSON' },
          ]}
          data-testid="config-view"
        />
      )}
      {view === 'form' && schema ? (
        <SchemaForm schema={schema} value={config} onChange={(c) => onConfig(key, c)} suggestions={suggestions} />
      ) : (
      <Textarea
        label="Config (JSON)"
        value={text}
        onChange={(e) => edit(e.currentTarget.value)}
        error={invalid || undefined}
        autosize
        minRows={6}
        maxRows={18}
        spellCheck={false}
        styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 12 } }}
        data-testid="node-config"
      />
      )}
      {node.data.handles.length > 0 && (
        <Text size="xs" c="dimmed">
          Outputs: {node.data.handles.join(', ')}
        </Text>
      )}
      {edges.length > 0 && (
        <Stack gap={2}>
          <Text size="sm" fw={500}>
            Edges
          </Text>
          {edges.map((e) => (
            <Group key={e.id} gap={4} justify="space-between">
              <Text size="sm">
                {e.source} → {e.target}
                {e.sourceHandle && e.sourceHandle !== 'out' ? ` (${e.sourceHandle})` : ''}
              </Text>
              <CloseButton size="sm" aria-label={`Remove edge ${e.source} → ${e.target}`} onClick={() => onRemoveEdge(e.id)} />
            </Group>
          ))}
        </Stack>
      )}
      <NodeTest workflowId={workflowId} nodeKey={key} kind={kind} config={config} inLoop={!!node.data.parent} />
      <Button color="red" variant="light" onClick={() => onRemove(key)} data-testid="remove-node">
        Remove node
      </Button>
    </Stack>
  )
}
