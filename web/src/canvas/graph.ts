// The workflow canvas's data: a workflow as @xyflow/react nodes and edges,
// their layout, output handles and run-state colours. Shared by the editor
// (pages/Workflow.tsx) and the run view (pages/WorkflowRun.tsx); the node
// component is in NodeView.tsx.
import { MarkerType, type Edge, type Node } from '@xyflow/react'
import { get, type Schemas } from '../api'

type Workflow = Schemas['Workflow']
type NodeType = Schemas['NodeType']

/** What a canvas node carries: the workflow node plus what the page shows on it. */
type WfNodeData = {
  key: string
  kind: string
  config: Record<string, unknown>
  handles: string[]
  ordinal?: number
  parent?: string | null
  /** A validation message naming this node (shown in red under the label). */
  error?: string
  /** The node's state in a run (run page). */
  status?: string
}
export type WfNode = Node<WfNodeData, 'wf'>

/** Colours of the node states of a run. */
export const stateColor: Record<string, string> = {
  pending: 'gray',
  ready: 'cyan',
  running: 'blue',
  waiting: 'yellow',
  succeeded: 'green',
  failed: 'red',
  skipped: 'gray',
  cancelled: 'dark',
  queued: 'gray',
}

// Output handles of the built-in kinds, for when the node types cannot be read.
const builtinHandles: Record<string, string[]> = {
  gate: ['true', 'false'],
  human: ['approved', 'rejected'],
  end: [],
  wait_event: ['event', 'timeout'],
}

/** The output handles of a node: its kind's, or llm_classify's categories plus error. */
export function handlesFor(kind: string, config: Record<string, unknown>, types: NodeType[]): string[] {
  if (kind === 'llm_classify') {
    const cats = Array.isArray(config.categories) ? config.categories.filter((c): c is string => typeof c === 'string') : []
    return [...cats, 'error']
  }
  const t = types.find((x) => x.slug === kind)
  if (t) return t.handles ?? []
  return builtinHandles[kind] ?? ['out', 'error']
}

/** Left-to-right positions by depth in the DAG (longest path from an entry node). */
export function layout(keys: string[], edges: { source: string; target: string }[]): Map<string, { x: number; y: number }> {
  const depth = new Map(keys.map((k) => [k, 0]))
  const indeg = new Map(keys.map((k) => [k, 0]))
  for (const e of edges) if (indeg.has(e.target) && depth.has(e.source)) indeg.set(e.target, (indeg.get(e.target) ?? 0) + 1)
  const queue = keys.filter((k) => indeg.get(k) === 0)
  while (queue.length) {
    const k = queue.shift()!
    for (const e of edges) {
      if (e.source !== k || !indeg.has(e.target)) continue
      depth.set(e.target, Math.max(depth.get(e.target) ?? 0, (depth.get(k) ?? 0) + 1))
      indeg.set(e.target, (indeg.get(e.target) ?? 0) - 1)
      if (indeg.get(e.target) === 0) queue.push(e.target)
    }
  }
  const rows = new Map<number, number>()
  const out = new Map<string, { x: number; y: number }>()
  for (const k of keys) {
    const d = depth.get(k) ?? 0
    const row = rows.get(d) ?? 0
    rows.set(d, row + 1)
    out.set(k, { x: d * 300, y: row * 130 })
  }
  return out
}

export function edgeId(source: string, handle: string | null | undefined, target: string): string {
  return `${source}:${handle ?? ''}->${target}`
}

/** A canvas edge; the handle is its label unless it is the plain out. */
export function flowEdge(source: string, handle: string | null | undefined, target: string): Edge {
  return {
    id: edgeId(source, handle, target),
    source,
    target,
    sourceHandle: handle || null,
    label: handle && handle !== 'out' ? handle : undefined,
    markerEnd: { type: MarkerType.ArrowClosed },
  }
}

/** A graph to draw: a workflow's, or a marketplace bundle's (its nodes as a client sends them). */
type Drawable = {
  nodes?: Pick<Schemas['NodeInput'], 'key' | 'kind' | 'config' | 'position' | 'ordinal' | 'parent_node_key'>[] | null
  edges?: Pick<Schemas['EdgeInput'], 'source' | 'source_handle' | 'target'>[] | null
}

/** The graph as canvas nodes and edges; stored positions unless every node sits at the origin. */
export function toFlow(wf: Workflow | Drawable, types: NodeType[]): { nodes: WfNode[]; edges: Edge[] } {
  const nodes = wf.nodes ?? []
  const edges = wf.edges ?? []
  const unplaced = nodes.every((n) => !n.position || (n.position.x === 0 && n.position.y === 0))
  const auto = layout(
    nodes.map((n) => n.key),
    edges,
  )
  return {
    nodes: nodes.map((n) => ({
      id: n.key,
      type: 'wf',
      position: unplaced || !n.position ? auto.get(n.key)! : { x: n.position.x, y: n.position.y },
      data: { key: n.key, kind: n.kind, config: n.config ?? {}, handles: handlesFor(n.kind, n.config ?? {}, types), ordinal: n.ordinal, parent: n.parent_node_key },
    })),
    edges: edges.map((e) => flowEdge(e.source, e.source_handle, e.target)),
  }
}

/** The node kinds (built-in and the workspace's), or [] when they cannot be read. */
export function loadNodeTypes(): Promise<NodeType[]> {
  return get('/api/workflow-node-types').then(
    (t) => t ?? [],
    () => [],
  )
}

/** The node keys a config reads (nodes.<key>), in the order they first appear. */
export function readsOf(config: unknown): string[] {
  const keys: string[] = []
  for (const m of JSON.stringify(config ?? {}).matchAll(/nodes\.([A-Za-z][A-Za-z0-9_-]*)/g)) if (!keys.includes(m[1])) keys.push(m[1])
  return keys
}
