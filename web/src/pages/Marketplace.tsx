// The marketplace: browse the catalog (the official items, the verified
// ones, the workspace's own and those granted to it), an item's versions
// with their changelogs and capabilities, install with a preview, update
// with the code diff and the capability diff, auto-update, ratings; what
// the workspace installed; publishing its scripts; its source's grants.
import { Alert, Anchor, Badge, Button, Card, Code, Group, Modal, NativeSelect, Rating, Stack, Switch, Table, Tabs, Text, Textarea, TextInput, Title } from '@mantine/core'
import { useState } from 'react'
import { Link, useParams, useSearchParams } from 'react-router-dom'
import { del, get, patch, post, put, type Schemas } from '../api'
import { useSession } from '../session'
import { ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Item = Schemas['MarketItem']
type Install = Schemas['MarketInstall']
type Caps = Schemas['Capabilities']

/** A capability set, one badge per entry. */
function CapBadges({ caps }: { caps: Caps }) {
  const all = [
    ...(caps.outbound_hosts ?? []).map((h) => `host ${h}`),
    ...(caps.resource_kinds ?? []).map((k) => `resource ${k}`),
    ...(caps.secrets ?? []).map((s) => `secret ${s}`),
    ...(caps.node_kinds ?? []).map((k) => `node ${k}`),
    ...(caps.runner_labels ?? []).map((l) => `runner ${l}`),
  ]
  if (all.length === 0) return <Text size="xs" c="dimmed">no declared capabilities</Text>
  return (
    <Group gap={4}>
      {all.map((c) => (
        <Badge key={c} size="xs" variant="outline">
          {c}
        </Badge>
      ))}
    </Group>
  )
}

export default function Marketplace() {
  const [params, setParams] = useSearchParams()
  const tab = params.get('tab') ?? 'browse'
  return (
    <Stack>
      <Title order={2}>Marketplace</Title>
      <Tabs value={tab} onChange={(v) => setParams({ tab: v ?? 'browse' }, { replace: true })} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="browse">Browse</Tabs.Tab>
          <Tabs.Tab value="installed" data-testid="tab-installed">
            Installed
          </Tabs.Tab>
          <Tabs.Tab value="publish" data-testid="tab-publish">
            Publish
          </Tabs.Tab>
          <Tabs.Tab value="sources">Sources</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="browse" pt="md">
          <Browse />
        </Tabs.Panel>
        <Tabs.Panel value="installed" pt="md">
          <Installed />
        </Tabs.Panel>
        <Tabs.Panel value="publish" pt="md">
          <Publish />
        </Tabs.Panel>
        <Tabs.Panel value="sources" pt="md">
          <Sources />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  )
}

function Browse() {
  const { workspace } = useSession()
  const [q, setQ] = useState('')
  const [query, setQuery] = useState('')
  const [kind, setKind] = useState('')
  const page = useLoad(
    () => get('/api/marketplace/items', { params: { query: { q: query || undefined, kind: (kind || undefined) as 'script' | undefined, limit: 50 } } }),
    [workspace?.id, query, kind],
  )
  return (
    <Stack>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          setQuery(q.trim())
        }}
      >
        <Group align="end">
          <TextInput label="Search" value={q} onChange={(e) => setQ(e.currentTarget.value)} maxLength={200} w={300} data-testid="market-search" />
          <NativeSelect
            label="Kind"
            value={kind}
            onChange={(e) => setKind(e.currentTarget.value)}
            data={[
              { value: '', label: 'Any' },
              { value: 'script', label: 'Scripts' },
              { value: 'node', label: 'Node types' },
              { value: 'bundle', label: 'Bundles' },
              { value: 'app', label: 'Apps' },
            ]}
          />
          <Button type="submit">Search</Button>
        </Group>
      </form>
      <ErrorNote error={page.error} />
      {page.loading && !page.data ? (
        <Loading />
      ) : (
        <Table striped data-testid="market-items">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Item</Table.Th>
              <Table.Th>Kind</Table.Th>
              <Table.Th>Latest</Table.Th>
              <Table.Th>Rating</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(page.data?.items ?? []).map((it) => (
              <Table.Tr key={it.id} data-testid={`market-item-${it.slug}`}>
                <Table.Td>
                  <Anchor component={Link} to={`/marketplace/${it.id}`}>
                    {it.name}
                  </Anchor>{' '}
                  {it.verified && (
                    <Badge size="xs" color="teal">
                      verified
                    </Badge>
                  )}{' '}
                  {it.mine && <Badge size="xs">yours</Badge>}
                  <Text size="xs" c="dimmed">
                    {it.summary}
                  </Text>
                </Table.Td>
                <Table.Td>{it.kind}</Table.Td>
                <Table.Td>{it.latest_version}</Table.Td>
                <Table.Td>{it.rating_average ? `${it.rating_average.toFixed(1)} (${it.rating_count})` : '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {page.data && (
        <Text size="xs" c="dimmed">
          {page.data.total} items
        </Text>
      )}
    </Stack>
  )
}

/** An item: its versions, install (with a preview), its install's update and auto-update, ratings. */
export function MarketItemPage() {
  const { id = '' } = useParams()
  const { workspace, me } = useSession()
  const item = useLoad(() => get('/api/marketplace/items/{id}', { params: { path: { id } } }), [id, workspace?.id])
  const versions = useLoad(() => get('/api/marketplace/items/{id}/versions', { params: { path: { id } } }), [id, workspace?.id])
  const installs = useLoad(() => get('/api/marketplace/installs'), [workspace?.id])
  const install = (installs.data ?? []).find((i) => i.item_id === id)
  const [preview, setPreview] = useState<Schemas['InstallPreview'] | null>(null)
  const [update, setUpdate] = useState<Schemas['UpdatePreview'] | null>(null)
  const act = useAction()
  if (!item.data) return item.error ? <ErrorNote error={item.error} /> : <Loading />
  const it: Item = item.data
  const latest = it.latest_version
  const reload = () => Promise.all([installs.reload(), item.reload()])
  return (
    <Stack maw={1000}>
      <Group justify="space-between">
        <Title order={2}>{it.name}</Title>
        <Group gap="xs">
          {it.verified && <Badge color="teal">verified</Badge>}
          {!it.listed && <Badge color="red">taken down</Badge>}
          <Badge variant="light">{it.kind}</Badge>
          {me?.is_admin && (
            <Button
              size="xs"
              color={it.listed ? 'red' : 'teal'}
              variant="light"
              loading={act.busy === 'list'}
              onClick={() =>
                act.run('list', async () => {
                  if (it.listed) await post('/api/admin/marketplace/items/{id}/takedown', { params: { path: { id } } })
                  else await post('/api/admin/marketplace/items/{id}/restore', { params: { path: { id } } })
                  await item.reload()
                })
              }
              data-testid="takedown"
            >
              {it.listed ? 'Take down' : 'Restore'}
            </Button>
          )}
        </Group>
      </Group>
      <Text>{it.summary}</Text>
      <Card withBorder data-testid="market-install">
        {install ? (
          <Stack gap="xs">
            <Text>
              Installed: <b data-testid="installed-version">{install.version}</b> <Code>{install.digest.slice(0, 19)}…</Code>, range <Code>{install.range}</Code>
            </Text>
            {install.held_version && (
              <Alert color="yellow" data-testid="held">
                {install.held_version} waits for you: {install.held_reason}
              </Alert>
            )}
            <Group>
              <Button
                size="xs"
                loading={act.busy === 'preview-update'}
                onClick={() => act.run('preview-update', async () => setUpdate(await post('/api/marketplace/installs/{id}/update_preview', { params: { path: { id: install.id } } })))}
                data-testid="update-preview"
              >
                Check for an update
              </Button>
              <Switch
                label="Update by itself (while its capabilities do not grow)"
                checked={install.auto_update}
                onChange={(e) => {
                  const enabled = e.currentTarget.checked
                  act.run('auto', async () => (await post('/api/marketplace/installs/{id}/auto_update', { params: { path: { id: install.id } }, body: { enabled } }), reload()))
                }}
                data-testid="auto-update"
              />
            </Group>
            <RateIt itemId={id} />
          </Stack>
        ) : (
          <Button
            w="fit-content"
            disabled={!it.listed}
            loading={act.busy === 'preview'}
            onClick={() =>
              act.run('preview', async () => setPreview(await post('/api/marketplace/items/{id}/versions/{version}/install_preview', { params: { path: { id, version: latest } } })))
            }
            data-testid="install-preview"
          >
            Install {latest}
          </Button>
        )}
        <ErrorNote error={act.error || installs.error} />
      </Card>
      <Card withBorder>
        <Text fw={600} mb="xs">
          Versions
        </Text>
        <Table fz="sm">
          <Table.Tbody>
            {(versions.data ?? []).map((v) => (
              <Table.Tr key={v.id}>
                <Table.Td>
                  <b>{v.version}</b> {v.withdrawn && <Badge color="red">withdrawn</Badge>}
                </Table.Td>
                <Table.Td>{when(v.created_at)}</Table.Td>
                <Table.Td>{v.changelog}</Table.Td>
                <Table.Td>
                  <CapBadges caps={v.capabilities} />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Card>
      <Modal opened={!!preview} onClose={() => setPreview(null)} title={`Install ${it.name} ${preview?.version ?? ''}`} size="lg">
        {preview && (
          <Stack>
            <Text size="sm">It makes:</Text>
            {(preview.objects ?? []).map((o) => (
              <Text key={o.key} size="sm">
                {o.action} {o.type} <b>{o.name}</b>
              </Text>
            ))}
            <Text size="sm">It may:</Text>
            <CapBadges caps={preview.capabilities} />
            <Text size="xs" c="dimmed">
              Pinned to {preview.digest}
            </Text>
            <Button
              onClick={() =>
                act.run('install', async () => {
                  await post('/api/marketplace/items/{id}/versions/{version}/install', { params: { path: { id, version: preview.version } } })
                  setPreview(null)
                  await reload()
                })
              }
              loading={act.busy === 'install'}
              data-testid="install"
            >
              Install
            </Button>
          </Stack>
        )}
      </Modal>
      <Modal opened={!!update} onClose={() => setUpdate(null)} title={update ? `${update.from} → ${update.to}` : ''} size="xl">
        {update &&
          (update.from === update.to ? (
            <Text data-testid="up-to-date">Up to date.</Text>
          ) : (
            <Stack>
              {update.capabilities.grew && (
                <Alert color="yellow" data-testid="capabilities-grew">
                  The new version may do more: {(update.capabilities.added ?? []).join(', ')}
                </Alert>
              )}
              {(update.files ?? []).map((f) => (
                <Stack key={f.path} gap={2}>
                  <Text size="sm">
                    <Code>{f.path}</Code> {f.status}
                  </Text>
                  <Code block data-testid="file-diff">
                    {f.patch || '(too large to show)'}
                  </Code>
                </Stack>
              ))}
              <Button
                onClick={() =>
                  act.run('update', async () => {
                    await post('/api/marketplace/installs/{id}/update', { params: { path: { id: install!.id } }, body: { version: update.to } })
                    setUpdate(null)
                    await reload()
                  })
                }
                loading={act.busy === 'update'}
                data-testid="update"
              >
                Update to {update.to}
              </Button>
            </Stack>
          ))}
      </Modal>
    </Stack>
  )
}

function RateIt({ itemId }: { itemId: string }) {
  const mine = useLoad(() => get('/api/marketplace/items/{id}/rating/mine', { params: { path: { id: itemId } } }), [itemId])
  const act = useAction()
  const rate = (stars: number) =>
    act.run('rate', async () => mine.setData(await put('/api/marketplace/items/{id}/rating', { params: { path: { id: itemId } }, body: { stars } })))
  return (
    <Group gap="xs">
      <Text size="sm">Your rating</Text>
      <Rating value={mine.data?.stars ?? 0} onChange={rate} data-testid="rating" />
      {mine.data && (
        <Button size="compact-xs" variant="subtle" onClick={() => act.run('unrate', async () => (await del('/api/marketplace/items/{id}/rating', { params: { path: { id: itemId } } }), mine.reload()))}>
          Remove
        </Button>
      )}
      <ErrorNote error={act.error} />
    </Group>
  )
}

function Installed() {
  const { workspace } = useSession()
  const installs = useLoad(() => get('/api/marketplace/installs'), [workspace?.id])
  return (
    <Stack>
      <ErrorNote error={installs.error} />
      <Table data-testid="installs">
        <Table.Tbody>
          {(installs.data ?? []).map((i: Install) => (
            <Table.Tr key={i.id}>
              <Table.Td>
                <Anchor component={Link} to={`/marketplace/${i.item_id}`}>
                  {i.item_name}
                </Anchor>
              </Table.Td>
              <Table.Td>{i.version}</Table.Td>
              <Table.Td>{i.auto_update ? `auto-update within ${i.range}` : 'updated by hand'}</Table.Td>
              <Table.Td>{i.held_version && <Badge color="yellow">{i.held_version} waits</Badge>}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {installs.data?.length === 0 && <Text c="dimmed">Nothing installed yet.</Text>}
    </Stack>
  )
}

function Publish() {
  const { workspace } = useSession()
  const scripts = useLoad(() => get('/api/scripts'), [workspace?.id])
  const nodeTypes = useLoad(async () => ((await get('/api/workflow-node-types')) ?? []).filter((n) => !n.builtin), [workspace?.id])
  const [what, setWhat] = useState<'script' | 'node'>('script')
  const [script, setScript] = useState('')
  const [nodeType, setNodeType] = useState('')
  const [version, setVersion] = useState('1.0.0')
  const [summary, setSummary] = useState('')
  const [changelog, setChangelog] = useState('')
  const [hosts, setHosts] = useState('')
  const act = useAction()
  const [done, setDone] = useState<Schemas['Published'] | null>(null)
  const submit = (e: React.FormEvent) => {
    e.preventDefault()
    act.run('publish', async () => {
      const outbound_hosts = hosts
        .split(/[\s,]+/)
        .map((h) => h.trim())
        .filter(Boolean)
      const common = { version: version.trim(), changelog, summary, capabilities: { outbound_hosts } }
      setDone(
        what === 'script'
          ? await post('/api/marketplace/scripts/publish', { body: { script_id: script || scripts.data?.[0]?.id || '', ...common } })
          : await post('/api/marketplace/nodes/publish', { body: { node_type_id: nodeType || nodeTypes.data?.[0]?.id || '', ...common } }),
      )
    })
  }
  return (
    <form onSubmit={submit}>
      <Stack maw={600}>
        <Text size="sm" c="dimmed">
          Publish a script of this workspace as a version of its item. Versions are semver and immutable; other workspaces see it once the instance's
          review approves it, or when your source grants it to them.
        </Text>
        <NativeSelect
          label="What"
          value={what}
          onChange={(e) => setWhat(e.currentTarget.value as 'script' | 'node')}
          data={[
            { value: 'script', label: 'A script' },
            { value: 'node', label: 'A node type (with its script)' },
          ]}
          data-testid="publish-what"
        />
        {what === 'node' && (
          <NativeSelect label="Node type" value={nodeType} onChange={(e) => setNodeType(e.currentTarget.value)} data={(nodeTypes.data ?? []).map((n) => ({ value: n.id ?? '', label: n.name }))} data-testid="publish-node" />
        )}
        {what === 'script' && <NativeSelect label="Script" value={script} onChange={(e) => setScript(e.currentTarget.value)} data={(scripts.data ?? []).map((s) => ({ value: s.id, label: s.name }))} data-testid="publish-script" />}
        <TextInput label="Version" value={version} onChange={(e) => setVersion(e.currentTarget.value)} maxLength={50} data-testid="publish-version" />
        <TextInput label="Summary" value={summary} onChange={(e) => setSummary(e.currentTarget.value)} maxLength={500} />
        <Textarea label="Changelog" value={changelog} onChange={(e) => setChangelog(e.currentTarget.value)} required maxLength={20000} data-testid="publish-changelog" />
        <TextInput label="Hosts it calls (comma-separated)" value={hosts} onChange={(e) => setHosts(e.currentTarget.value)} maxLength={2000} data-testid="publish-hosts" />
        <ErrorNote error={act.error || scripts.error || nodeTypes.error} />
        <Button type="submit" w="fit-content" loading={act.busy === 'publish'} data-testid="publish">
          Publish
        </Button>
        {done && (
          <Alert color="teal" data-testid="published">
            Published <Anchor component={Link} to={`/marketplace/${done.item.id}`}>{done.item.name}</Anchor> {done.version.version}
          </Alert>
        )}
      </Stack>
    </form>
  )
}

/** The active workspace's sources (the marketplace page and the owner console's marketplace-sources tab). */
export function Sources() {
  const { workspace } = useSession()
  const sources = useLoad(() => get('/api/marketplace/sources'), [workspace?.id])
  const act = useAction()
  const [grants, setGrants] = useState<Record<string, string>>({})
  return (
    <Stack>
      <ErrorNote error={sources.error || act.error} />
      <Table>
        <Table.Tbody>
          {(sources.data ?? []).map((s) => (
            <Table.Tr key={s.id}>
              <Table.Td>
                {s.name} <Badge size="xs">{s.kind}</Badge>
              </Table.Td>
              <Table.Td>{s.status}</Table.Td>
              <Table.Td>{s.items} items</Table.Td>
              <Table.Td>
                {s.kind === 'workspace' ? (
                  <Group gap={4}>
                    <TextInput
                      size="xs"
                      placeholder="workspace ids it grants, comma-separated"
                      value={grants[s.id] ?? (s.grants ?? []).join(', ')}
                      onChange={(e) => setGrants({ ...grants, [s.id]: e.currentTarget.value })}
                      w={320}
                    />
                    <Button
                      size="xs"
                      onClick={() =>
                        act.run(`grants-${s.id}`, async () => {
                          const list = (grants[s.id] ?? '').split(/[\s,]+/).filter(Boolean)
                          await patch('/api/marketplace/sources/{id}', { params: { path: { id: s.id } }, body: { grants: list } })
                          await sources.reload()
                        })
                      }
                    >
                      Save grants
                    </Button>
                  </Group>
                ) : (
                  <Button size="xs" variant="light" onClick={() => act.run(`sync-${s.id}`, async () => (await post('/api/marketplace/sources/{id}/sync', { params: { path: { id: s.id } } }), sources.reload()))}>
                    Sync
                  </Button>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  )
}

/** The owner console's marketplace-review tab: items no review decided yet. */
export function MarketplaceReviewTab() {
  const queue = useLoad(() => get('/api/admin/marketplace/review'), [])
  const act = useAction()
  const [reasons, setReasons] = useState<Record<string, string>>({})
  const decide = (id: string, verdict: 'approve' | 'reject') =>
    act.run(`${verdict}-${id}`, async () => {
      const body = { reason: reasons[id] || undefined }
      if (verdict === 'approve') await post('/api/admin/marketplace/items/{id}/review/approve', { params: { path: { id } }, body })
      else await post('/api/admin/marketplace/items/{id}/review/reject', { params: { path: { id } }, body })
      await queue.reload()
    })
  return (
    <Stack>
      <ErrorNote error={queue.error || act.error} />
      {queue.data?.length === 0 && <Text c="dimmed">Nothing waits for a review.</Text>}
      <Table>
        <Table.Tbody>
          {(queue.data ?? []).map((it) => (
            <Table.Tr key={it.id} data-testid={`review-${it.slug}`}>
              <Table.Td>{it.name}</Table.Td>
              <Table.Td>
                <Code>{it.slug}</Code>
              </Table.Td>
              <Table.Td>{it.verified ? 'approved' : 'undecided'}</Table.Td>
              <Table.Td>
                <TextInput size="xs" placeholder="reason (optional)" value={reasons[it.id] ?? ''} onChange={(e) => setReasons({ ...reasons, [it.id]: e.currentTarget.value })} maxLength={2000} />
              </Table.Td>
              <Table.Td>
                <Group gap={4}>
                  <Button size="xs" color="green" onClick={() => decide(it.id, 'approve')} data-testid="review-approve">
                    Approve
                  </Button>
                  <Button size="xs" color="red" variant="light" onClick={() => decide(it.id, 'reject')}>
                    Reject
                  </Button>
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  )
}
