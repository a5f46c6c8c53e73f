// The marketplace's bundles: a bundle version's workflows on a read-only
// canvas with the needs its installer binds, and the selects that bind
// each need to one of the workspace's resources (of the need's kind) or
// apps, for an install, an update or a change of bindings.
import { Anchor, Badge, Box, Card, Code, Grid, Group, NativeSelect, Stack, Table, Tabs, Text, Title, useComputedColorScheme } from '@mantine/core'
import { Background, Controls, ReactFlow, type NodeProps, type NodeTypes } from '@xyflow/react'
import { useEffect, useMemo, useState, type Dispatch, type SetStateAction } from 'react'
import { Link } from 'react-router-dom'
import { get, type Schemas } from '../api'
import { loadNodeTypes, toFlow, type WfNode } from '../canvas/graph'
import { nodeTypes as canvasNodeTypes } from '../canvas/NodeView'
import { useSession } from '../session'
import { ErrorNote, Loading, useLoad } from '../ui'

export type Need = Schemas['Need']
type BundleWorkflow = Schemas['BundleWorkflow']
type NodeType = Schemas['NodeType']
export type Bindings = Record<string, string>

/** What a need wants, in words: "http resource", "app". */
export function needWhat(n: Need): string {
  return n.type === 'app' ? 'app' : `${n.kind} resource`
}

/** The needs a node's config names (need:<key> placeholders). */
function needsOf(config: unknown): string[] {
  const keys: string[] = []
  for (const m of JSON.stringify(config ?? {}).matchAll(/"need:([^"]+)"/g)) if (!keys.includes(m[1])) keys.push(m[1])
  return keys
}

const WfView = canvasNodeTypes.wf

/** The canvas's node, named for the bundle view, with the needs it reads under it. */
function BundleNodeView(props: NodeProps<WfNode>) {
  const needs = needsOf(props.data.config)
  return (
    <div data-testid={`bundle-node-${props.data.key}`} data-kind={props.data.kind}>
      <WfView {...props} />
      {needs.length > 0 && (
        <div style={{ position: 'absolute', top: '100%', left: 0, marginTop: 2, fontSize: 10, whiteSpace: 'nowrap', opacity: 0.8 }}>needs {needs.join(', ')}</div>
      )}
    </div>
  )
}

const bundleNodeTypes: NodeTypes = { wf: BundleNodeView }

/** One workflow of a bundle, read-only; a node's config shows beside it. */
function BundleCanvas({ wf, types }: { wf: BundleWorkflow; types: NodeType[] }) {
  const scheme = useComputedColorScheme('light')
  const [selected, setSelected] = useState('')
  const flow = useMemo(() => toFlow(wf, types), [wf, types])
  const nodes = flow.nodes.map((n) => (n.id === selected ? { ...n, selected: true } : n))
  const chosen = (wf.nodes ?? []).find((n) => n.key === selected)
  return (
    <Grid>
      <Grid.Col span={{ base: 12, md: 8 }}>
        <Box h={380} style={{ border: '1px solid var(--mantine-color-default-border)', borderRadius: 8 }} data-testid={`bundle-canvas-${wf.key}`}>
          <ReactFlow
            nodes={nodes}
            edges={flow.edges}
            nodeTypes={bundleNodeTypes}
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
        </Box>
      </Grid.Col>
      <Grid.Col span={{ base: 12, md: 4 }}>
        {chosen ? (
          <Stack gap={4}>
            <Title order={5}>{chosen.key}</Title>
            <Text size="sm">{chosen.kind}</Text>
            <Code block data-testid="bundle-node-config">
              {JSON.stringify(chosen.config ?? {}, null, 2)}
            </Code>
          </Stack>
        ) : (
          <Text size="sm" c="dimmed">
            Select a node to see its configuration. <Code>script:…</Code> names a script the install makes, <Code>need:…</Code> what you bind at install.
          </Text>
        )}
      </Grid.Col>
    </Grid>
  )
}

/** The needs of a version: what the installer binds. */
export function NeedsTable({ needs }: { needs: Need[] }) {
  if (needs.length === 0)
    return (
      <Text size="sm" c="dimmed" data-testid="no-needs">
        It needs nothing of the workspace.
      </Text>
    )
  return (
    <Table fz="sm" data-testid="needs">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Need</Table.Th>
          <Table.Th>Wants</Table.Th>
          <Table.Th>The publisher's</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {needs.map((n) => (
          <Table.Tr key={n.key} data-testid={`need-${n.key}`}>
            <Table.Td>
              <Code>{n.key}</Code>
            </Table.Td>
            <Table.Td>
              {needWhat(n)}{' '}
              <Badge size="xs" variant="outline">
                {n.type === 'app' ? 'app' : n.kind}
              </Badge>
            </Table.Td>
            <Table.Td>{n.name}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  )
}

/** A bundle item's workflows (one tab each) on the canvas, and its needs, for a version. */
export function BundleGraphCard({ itemId, versions, latest }: { itemId: string; versions: string[]; latest: string }) {
  const [version, setVersion] = useState('')
  const shown = version || latest
  const graph = useLoad(() => get('/api/marketplace/items/{id}/preview/graph', { params: { path: { id: itemId }, query: { version: shown || undefined } } }), [itemId, shown])
  const types = useLoad(loadNodeTypes, [])
  const [tab, setTab] = useState<string | null>(null)
  const flows = graph.data?.workflows ?? []
  const current = flows.some((w) => w.key === tab) ? tab : (flows[0]?.key ?? null)
  return (
    <Card withBorder data-testid="bundle-graph">
      <Stack>
        <Group justify="space-between">
          <Text fw={600}>Workflows</Text>
          {versions.length > 1 && (
            <NativeSelect size="xs" value={shown} onChange={(e) => setVersion(e.currentTarget.value)} data={versions} aria-label="Version shown" data-testid="graph-version" />
          )}
        </Group>
        <ErrorNote error={graph.error} />
        {!graph.data || !types.data ? (
          graph.error ? null : <Loading label="Loading the graph…" />
        ) : (
          <>
            {flows.length === 0 && <Text c="dimmed">This version has no workflows.</Text>}
            <Tabs value={current} onChange={setTab} keepMounted={false}>
              <Tabs.List>
                {flows.map((w) => (
                  <Tabs.Tab key={w.key} value={w.key} data-testid={`bundle-workflow-${w.key}`}>
                    {w.name}
                  </Tabs.Tab>
                ))}
              </Tabs.List>
              {flows.map((w) => (
                <Tabs.Panel key={w.key} value={w.key} pt="sm">
                  <BundleCanvas wf={w} types={types.data ?? []} />
                </Tabs.Panel>
              ))}
            </Tabs>
            <Text fw={600}>What it needs</Text>
            <Text size="xs" c="dimmed">
              The workflows read these from the workspace they are installed in: the install binds each to one of yours.
            </Text>
            <NeedsTable needs={graph.data.needs ?? []} />
          </>
        )}
      </Stack>
    </Card>
  )
}

/**
 * One select per need: the workspace's resources of the need's kind, or
 * its apps. A need with exactly one candidate is bound to it unless
 * bound already.
 */
export function NeedBindings({ needs, value, setValue }: { needs: Need[]; value: Bindings; setValue: Dispatch<SetStateAction<Bindings>> }) {
  const { workspace } = useSession()
  const wantsResources = needs.some((n) => n.type !== 'app')
  const wantsApps = needs.some((n) => n.type === 'app')
  const resources = useLoad(async () => (wantsResources ? ((await get('/api/resources')) ?? []) : []), [workspace?.id, wantsResources])
  const apps = useLoad(async () => (wantsApps ? ((await get('/api/apps')) ?? []) : []), [workspace?.id, wantsApps])
  const options = (n: Need) =>
    n.type === 'app'
      ? (apps.data ?? []).map((a) => ({ value: a.id, label: a.name }))
      : (resources.data ?? []).filter((r) => r.kind === n.kind).map((r) => ({ value: r.id, label: r.name }))
  const sig = needs.map((n) => n.key).join(',')
  useEffect(() => {
    if (!resources.data || !apps.data) return
    setValue((cur) => {
      const next = { ...cur }
      for (const n of needs) {
        const o = options(n)
        if (!next[n.key] && o.length === 1) next[n.key] = o[0].value
      }
      return next
    })
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [resources.data, apps.data, sig])
  if (resources.loading || apps.loading) return <Loading label="Loading the workspace's resources…" />
  return (
    <Stack gap="xs">
      <ErrorNote error={resources.error || apps.error} />
      {needs.map((n) => {
        const o = options(n)
        return (
          <Stack key={n.key} gap={2}>
            <NativeSelect
              label={
                <>
                  <Code>{n.key}</Code>: {needWhat(n)}
                </>
              }
              description={`The publisher's was “${n.name}”.`}
              value={value[n.key] ?? ''}
              onChange={(e) => {
                const v = e.currentTarget.value
                setValue((cur) => ({ ...cur, [n.key]: v }))
              }}
              data={[{ value: '', label: o.length ? 'Choose…' : `No ${n.type === 'app' ? 'app' : `${n.kind} resource`} in this workspace` }, ...o]}
              data-testid={`bind-${n.key}`}
            />
            {o.length === 0 && (
              <Anchor component={Link} to={n.type === 'app' ? '/apps' : '/resources'} size="xs">
                Make one first
              </Anchor>
            )}
          </Stack>
        )
      })}
    </Stack>
  )
}
