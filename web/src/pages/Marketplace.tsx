// The marketplace: browse the catalog (the official items, the verified
// ones, the workspace's own and those granted to it), an item's versions
// with their changelogs and capabilities, install with a preview, update
// with the code diff and the capability diff, auto-update, ratings; a
// bundle's workflows on the canvas and the needs its install binds; what
// the workspace installed; publishing its scripts, node types, workflows
// (as a bundle) and apps, free or with a price; its sources (its own, with
// grants, and Git); selling (MarketplaceCommerce: the person's seller side)
// and the workspace's purchases.
import { Alert, Anchor, Badge, Button, Card, Code, Group, Modal, MultiSelect, NativeSelect, Rating, Stack, Switch, Table, Tabs, Text, Textarea, TextInput, Title } from '@mantine/core'
import { useState } from 'react'
import { Link, useParams, useSearchParams } from 'react-router-dom'
import { del, get, patch, post, put, type Schemas } from '../api'
import { useSession } from '../session'
import { Confirm, ErrorNote, Loading, useAction, useLoad, when } from '../ui'
import { BundleGraphCard, NeedBindings, needWhat, type Bindings, type Need } from './MarketplaceBundle'
import { ItemCommerce, licenses, noPrice, PriceFields, priceOf, PurchasesTab, SellingTab, type PriceDraft } from './MarketplaceCommerce'
import { marketPrice } from '../money'

type Item = Schemas['MarketItem']
type Install = Schemas['MarketInstall']
type Caps = Schemas['Capabilities']
type Preview = Schemas['InstallPreview']
type Source = Schemas['MarketSource']

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
          <Tabs.Tab value="purchases" data-testid="tab-purchases">
            Purchases
          </Tabs.Tab>
          <Tabs.Tab value="selling" data-testid="tab-selling">
            Selling
          </Tabs.Tab>
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
        <Tabs.Panel value="purchases" pt="md">
          <PurchasesTab />
        </Tabs.Panel>
        <Tabs.Panel value="selling" pt="md">
          <SellingTab />
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
              <Table.Th>Price</Table.Th>
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
                <Table.Td data-testid="market-item-price">{it.paid && it.price ? marketPrice(it.price) : 'free'}</Table.Td>
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

/** An item: its versions, install (with a preview), its install's update and auto-update, ratings; a bundle's graph and needs. */
export function MarketItemPage() {
  const { id = '' } = useParams()
  const { workspace, me } = useSession()
  const item = useLoad(() => get('/api/marketplace/items/{id}', { params: { path: { id } } }), [id, workspace?.id])
  const versions = useLoad(() => get('/api/marketplace/items/{id}/versions', { params: { path: { id } } }), [id, workspace?.id])
  const installs = useLoad(() => get('/api/marketplace/installs'), [workspace?.id])
  const paid = !!item.data?.paid && !item.data.mine
  // A paid item's license: the workspace's latest purchase of it that is not pending.
  const subscription = useLoad(async () => (paid ? await get('/api/marketplace/items/{id}/subscription', { params: { path: { id } } }) : null), [id, workspace?.id, paid])
  const install = (installs.data ?? []).find((i) => i.item_id === id)
  const [preview, setPreview] = useState<Preview | null>(null)
  const [updating, setUpdating] = useState(false)
  const act = useAction()
  if (!item.data) return item.error ? <ErrorNote error={item.error} /> : <Loading />
  const it: Item = item.data
  const latest = it.latest_version
  const reload = () => Promise.all([installs.reload(), item.reload()])
  const versionNames = (versions.data ?? []).filter((v) => !v.withdrawn).map((v) => v.version)
  const installedNeeds = (versions.data ?? []).find((v) => v.version === install?.version)?.needs ?? []
  const latestId = (versions.data ?? []).find((v) => v.version === latest)?.id ?? ''
  const unlicensed = paid && !licenses(subscription.data)
  return (
    <Stack maw={1100}>
      <Anchor component={Link} to="/marketplace" size="sm">
        ← Marketplace
      </Anchor>
      <Group justify="space-between">
        <Title order={2}>{it.name}</Title>
        <Group gap="xs">
          {it.verified && <Badge color="teal">verified</Badge>}
          {!it.listed && <Badge color="red">taken down</Badge>}
          <Badge variant="light" data-testid="item-kind">
            {it.kind}
          </Badge>
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
      <ItemCommerce item={it} versionId={latestId} subscription={subscription} onLicensed={reload} />
      <Card withBorder data-testid="market-install">
        {install ? (
          <Stack gap="xs">
            <Text>
              Installed: <b data-testid="installed-version">{install.version}</b> <Code>{install.digest.slice(0, 19)}…</Code>, range <Code>{install.range}</Code>
            </Text>
            <InstallMade install={install} />
            {install.held_version && (
              <Alert color="yellow" data-testid="held">
                {install.held_version} waits for you: {install.held_reason}
              </Alert>
            )}
            <Group>
              <Button size="xs" onClick={() => setUpdating(true)} data-testid="update-preview">
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
            {installedNeeds.length > 0 && <Rebind key={`${install.version} ${JSON.stringify(install.bindings)}`} install={install} needs={installedNeeds} onSaved={reload} />}
            <RateIt itemId={id} />
          </Stack>
        ) : (
          <Group>
          <Button
            w="fit-content"
            disabled={!it.listed || unlicensed || subscription.loading}
            loading={act.busy === 'preview'}
            onClick={() =>
              act.run('preview', async () => setPreview(await post('/api/marketplace/items/{id}/versions/{version}/install_preview', { params: { path: { id, version: latest } } })))
            }
            data-testid="install-preview"
          >
            Install {latest}
          </Button>
          {unlicensed && !subscription.loading && (
            <Text size="sm" c="dimmed" data-testid="install-needs-license">
              A paid item: buy a license to install it.
            </Text>
          )}
          </Group>
        )}
        <ErrorNote error={act.error || installs.error} />
      </Card>
      {it.kind === 'bundle' && <BundleGraphCard itemId={id} versions={versionNames} latest={latest} />}
      <Card withBorder>
        <Text fw={600} mb="xs">
          Versions
        </Text>
        <ErrorNote error={versions.error} />
        <Table fz="sm" data-testid="versions">
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
                <Table.Td>
                  <Text size="xs" c="dimmed">
                    {(v.objects ?? []).map((o) => `${o.type} ${o.key.replace(/^[a-z_]+:/, '')}`).join(', ')}
                  </Text>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Card>
      {preview && (
        <InstallDialog
          item={it}
          preview={preview}
          onClose={() => setPreview(null)}
          onInstalled={async () => {
            setPreview(null)
            await reload()
          }}
        />
      )}
      {updating && install && (
        <UpdateDialog
          install={install}
          versions={versionNames}
          onClose={() => setUpdating(false)}
          onUpdated={async () => {
            setUpdating(false)
            await reload()
          }}
        />
      )}
    </Stack>
  )
}

/** What an install made that has a page: a bundle's workflows (in its project), an app. */
function InstallMade({ install }: { install: Install }) {
  const flows = Object.entries(install.objects ?? {}).filter(([k]) => k.startsWith('workflow:'))
  const app = install.objects?.app
  if (flows.length === 0 && !app) return null
  return (
    <Group gap="xs" data-testid="install-made">
      {flows.length > 0 && <Text size="sm">Its workflows:</Text>}
      {flows.map(([k, wid]) => (
        <Anchor key={k} component={Link} to={`/workflows/${wid}`} size="sm" data-testid={`installed-${k.replace(':', '-')}`}>
          {k.slice('workflow:'.length)}
        </Anchor>
      ))}
      {app && (
        <Anchor component={Link} to={`/apps/${app}`} size="sm" data-testid="installed-app">
          Its app
        </Anchor>
      )}
    </Group>
  )
}

/** An installed bundle's bindings, changed in place (an update to the same version with new bindings). */
function Rebind({ install, needs, onSaved }: { install: Install; needs: Need[]; onSaved: () => unknown }) {
  const [bindings, setBindings] = useState<Bindings>(install.bindings ?? {})
  const act = useAction()
  const changed = needs.filter((n) => (bindings[n.key] ?? '') !== (install.bindings?.[n.key] ?? ''))
  return (
    <Stack gap="xs" data-testid="bindings">
      <Text size="sm" fw={600}>
        Bound to
      </Text>
      <NeedBindings needs={needs} value={bindings} setValue={setBindings} />
      {changed.length > 0 && (
        <Button
          size="xs"
          w="fit-content"
          loading={act.busy === 'rebind'}
          disabled={changed.some((n) => !bindings[n.key])}
          onClick={() =>
            act.run('rebind', async () => {
              const body = { version: install.version, bindings: Object.fromEntries(changed.map((n) => [n.key, bindings[n.key]])) }
              await post('/api/marketplace/installs/{id}/update', { params: { path: { id: install.id } }, body })
              await onSaved()
            })
          }
          data-testid="rebind-save"
        >
          Save the bindings
        </Button>
      )}
      <ErrorNote error={act.error} />
    </Stack>
  )
}

/** The install dialog: what it makes, what it may do; a bundle's project and the binding of each need. */
function InstallDialog({ item, preview, onClose, onInstalled }: { item: Item; preview: Preview; onClose: () => void; onInstalled: () => unknown }) {
  const { workspace } = useSession()
  const bundle = item.kind === 'bundle'
  const needs = preview.needs ?? []
  const projects = useLoad(async () => (bundle ? ((await get('/api/projects')) ?? []).filter((p) => !p.archived_at) : []), [bundle, workspace?.id])
  const [project, setProject] = useState('')
  const [bindings, setBindings] = useState<Bindings>({})
  const [range, setRange] = useState('')
  const act = useAction()
  const chosen = project || (projects.data?.length === 1 ? projects.data[0].id : '')
  const missing = bundle ? [...(chosen ? [] : ['a project']), ...needs.filter((n) => !bindings[n.key]).map((n) => n.key)] : []
  return (
    <Modal opened onClose={onClose} title={`Install ${item.name} ${preview.version}`} size="lg">
      <Stack>
        {preview.installed && (
          <Text size="sm" c="dimmed">
            {preview.installed} is installed already.
          </Text>
        )}
        <Text size="sm">It makes:</Text>
        <Stack gap={2} data-testid="install-objects">
          {(preview.objects ?? []).map((o) => (
            <Text key={o.key} size="sm" data-testid={`install-object-${o.key}`}>
              {o.action} {o.type.replace('_', ' ')} <b>{o.name}</b>
            </Text>
          ))}
        </Stack>
        {bundle && (
          <>
            <NativeSelect
              label="Project its workflows join"
              value={chosen}
              onChange={(e) => setProject(e.currentTarget.value)}
              data={[{ value: '', label: projects.data?.length === 0 ? 'No project in this workspace' : 'Choose…' }, ...(projects.data ?? []).map((p) => ({ value: p.id, label: p.name }))]}
              data-testid="install-project"
            />
            <ErrorNote error={projects.error} />
          </>
        )}
        {needs.length > 0 && (
          <>
            <Text size="sm">It reads, from this workspace:</Text>
            <NeedBindings needs={needs} value={bindings} setValue={setBindings} />
          </>
        )}
        <Text size="sm">It may:</Text>
        <CapBadges caps={preview.capabilities} />
        <TextInput
          label="Updates within"
          description="A semver range auto-update keeps within"
          placeholder={`^${preview.version}`}
          value={range}
          onChange={(e) => setRange(e.currentTarget.value)}
          maxLength={100}
          w={240}
          data-testid="install-range"
        />
        <Text size="xs" c="dimmed">
          Pinned to {preview.digest}
        </Text>
        <ErrorNote error={act.error} />
        {missing.length > 0 && (
          <Text size="xs" c="dimmed" data-testid="install-missing">
            Choose {missing.join(', ')} to install.
          </Text>
        )}
        <Button
          w="fit-content"
          disabled={missing.length > 0}
          onClick={() =>
            act.run('install', async () => {
              const body = bundle ? { project_id: chosen, bindings: Object.fromEntries(needs.map((n) => [n.key, bindings[n.key]])) } : {}
              await post('/api/marketplace/items/{id}/versions/{version}/install', {
                params: { path: { id: item.id, version: preview.version } },
                body: { ...body, range: range.trim() || undefined },
              })
              await onInstalled()
            })
          }
          loading={act.busy === 'install'}
          data-testid="install"
        >
          Install
        </Button>
      </Stack>
    </Modal>
  )
}

/**
 * The update dialog: the version (the latest within the install's range,
 * or one chosen), its file diff, its capability diff, what it changes, and
 * a select for each need the install has no binding for yet.
 */
function UpdateDialog({ install, versions, onClose, onUpdated }: { install: Install; versions?: string[]; onClose: () => void; onUpdated: () => unknown }) {
  const [version, setVersion] = useState('')
  const preview = useLoad(
    () => post('/api/marketplace/installs/{id}/update_preview', { params: { path: { id: install.id } }, body: version ? { version } : undefined }),
    [install.id, version],
  )
  const [bindings, setBindings] = useState<Bindings>({})
  const act = useAction()
  const up = preview.data
  const unbound = (up?.needs ?? []).filter((n) => (up?.unbound ?? []).includes(n.key))
  const missing = unbound.filter((n) => !bindings[n.key])
  return (
    <Modal opened onClose={onClose} title={up ? `${up.from} → ${up.to}` : `Update ${install.item_name}`} size="xl">
      <Stack>
        {versions && versions.length > 1 && (
          <NativeSelect
            label="Version"
            value={version}
            onChange={(e) => setVersion(e.currentTarget.value)}
            data={[{ value: '', label: `The latest within ${install.range}` }, ...versions.map((v) => ({ value: v, label: v }))]}
            w={260}
            data-testid="update-version"
          />
        )}
        <ErrorNote error={preview.error} />
        {!up ? (
          !preview.error && <Loading label="Comparing the versions…" />
        ) : up.from === up.to && unbound.length === 0 ? (
          <Text data-testid="up-to-date">Up to date.</Text>
        ) : (
          <>
            {up.capabilities.grew && (
              <Alert color="yellow" data-testid="capabilities-grew">
                The new version may do more: {(up.capabilities.added ?? []).join(', ')}
              </Alert>
            )}
            {(up.capabilities.removed ?? []).length > 0 && (
              <Text size="sm" c="dimmed">
                It no longer declares: {(up.capabilities.removed ?? []).join(', ')}
              </Text>
            )}
            {(up.objects ?? []).length > 0 && (
              <Stack gap={2} data-testid="update-objects">
                {(up.objects ?? []).map((o) => (
                  <Text key={o.key} size="sm">
                    {o.action} {o.type.replace('_', ' ')} <b>{o.name}</b>
                  </Text>
                ))}
              </Stack>
            )}
            {unbound.length > 0 && (
              <Stack gap="xs" data-testid="update-unbound">
                <Alert color="blue">{up.to} reads more of the workspace than the install binds: bind it to update.</Alert>
                <NeedBindings needs={unbound} value={bindings} setValue={setBindings} />
              </Stack>
            )}
            {(up.files ?? []).map((f) => (
              <Stack key={f.path} gap={2}>
                <Text size="sm">
                  <Code>{f.path}</Code> {f.status}
                </Text>
                <Code block data-testid="file-diff">
                  {f.patch || '(too large to show)'}
                </Code>
              </Stack>
            ))}
            <ErrorNote error={act.error} />
            <Button
              w="fit-content"
              disabled={missing.length > 0}
              onClick={() =>
                act.run('update', async () => {
                  const bound = unbound.length ? { bindings: Object.fromEntries(unbound.map((n) => [n.key, bindings[n.key]])) } : {}
                  await post('/api/marketplace/installs/{id}/update', { params: { path: { id: install.id } }, body: { version: up.to, ...bound } })
                  await onUpdated()
                })
              }
              loading={act.busy === 'update'}
              data-testid="update"
            >
              Update to {up.to}
            </Button>
          </>
        )}
      </Stack>
    </Modal>
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
  const projects = useLoad(async () => ((installs.data ?? []).some((i) => i.project_id) ? ((await get('/api/projects')) ?? []) : []), [workspace?.id, installs.data])
  const [updating, setUpdating] = useState<Install | null>(null)
  const projectName = (pid: string) => projects.data?.find((p) => p.id === pid)?.name ?? 'a project'
  return (
    <Stack>
      <ErrorNote error={installs.error} />
      <Table data-testid="installs">
        <Table.Tbody>
          {(installs.data ?? []).map((i: Install) => (
            <Table.Tr key={i.id} data-testid={`install-row-${i.item_id}`}>
              <Table.Td>
                <Anchor component={Link} to={`/marketplace/${i.item_id}`}>
                  {i.item_name}
                </Anchor>
                {i.project_id && (
                  <Text size="xs" c="dimmed">
                    in {projectName(i.project_id)}
                    {Object.keys(i.bindings ?? {}).length > 0 ? ` · ${Object.keys(i.bindings).length} bound` : ''}
                  </Text>
                )}
              </Table.Td>
              <Table.Td>{i.version}</Table.Td>
              <Table.Td>{i.auto_update ? `auto-update within ${i.range}` : 'updated by hand'}</Table.Td>
              <Table.Td>{i.held_version && <Badge color="yellow">{i.held_version} waits</Badge>}</Table.Td>
              <Table.Td>
                <Button size="compact-xs" variant="light" onClick={() => setUpdating(i)} data-testid="installed-update">
                  Check for an update
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {installs.data?.length === 0 && <Text c="dimmed">Nothing installed yet.</Text>}
      {updating && (
        <UpdateDialog
          install={updating}
          onClose={() => setUpdating(null)}
          onUpdated={async () => {
            setUpdating(null)
            await installs.reload()
          }}
        />
      )}
    </Stack>
  )
}

type What = 'script' | 'node' | 'bundle' | 'app'
const whats: What[] = ['script', 'node', 'bundle', 'app']

/** Comma- or space-separated words. */
const words = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((w) => w.trim())
    .filter(Boolean)

/**
 * Publishing: a script, a node type, workflows (a bundle) or an app. The
 * address may choose what and preselect it (?what=bundle&workflow=<id>,
 * ?what=app&app=<id>), as the workflow and app pages link here.
 */
function Publish() {
  const { workspace } = useSession()
  const [params] = useSearchParams()
  const [what, setWhat] = useState<What>(whats.find((w) => w === params.get('what')) ?? 'script')
  const scripts = useLoad(async () => (what === 'script' ? await get('/api/scripts') : undefined), [workspace?.id, what === 'script'])
  const nodeTypes = useLoad(async () => (what === 'node' ? ((await get('/api/workflow-node-types')) ?? []).filter((n) => !n.builtin) : undefined), [workspace?.id, what === 'node'])
  const workflows = useLoad(async () => (what === 'bundle' ? ((await get('/api/workflows')) ?? []) : undefined), [workspace?.id, what === 'bundle'])
  const apps = useLoad(async () => (what === 'app' ? ((await get('/api/apps')) ?? []) : undefined), [workspace?.id, what === 'app'])
  const [script, setScript] = useState('')
  const [nodeType, setNodeType] = useState('')
  const [flows, setFlows] = useState<string[]>(params.getAll('workflow').flatMap(words))
  const [app, setApp] = useState(params.get('app') ?? '')
  const [version, setVersion] = useState('1.0.0')
  const [summary, setSummary] = useState('')
  const [changelog, setChangelog] = useState('')
  const [name, setName] = useState('')
  const [slug, setSlug] = useState('')
  const [tags, setTags] = useState('')
  const [hosts, setHosts] = useState('')
  const [secrets, setSecrets] = useState('')
  const [resourceKinds, setResourceKinds] = useState('')
  const [labels, setLabels] = useState('')
  const [price, setPrice] = useState<PriceDraft>(noPrice)
  const act = useAction()
  const [done, setDone] = useState<Schemas['Published'] | null>(null)
  const submit = (e: React.FormEvent) => {
    e.preventDefault()
    act.run('publish', async () => {
      setDone(null)
      const capabilities = { outbound_hosts: words(hosts), secrets: words(secrets), resource_kinds: words(resourceKinds), runner_labels: words(labels) }
      const common = { version: version.trim(), changelog, summary, capabilities, name: name.trim() || undefined, slug: slug.trim() || undefined, tags: words(tags), price: priceOf(price) }
      let out: Schemas['Published']
      switch (what) {
        case 'script':
          out = await post('/api/marketplace/scripts/publish', { body: { script_id: script || scripts.data?.[0]?.id || '', ...common } })
          break
        case 'node':
          out = await post('/api/marketplace/nodes/publish', { body: { node_type_id: nodeType || nodeTypes.data?.[0]?.id || '', ...common } })
          break
        case 'bundle':
          out = await post('/api/marketplace/bundles/publish', { body: { workflow_ids: flows, ...common } })
          break
        case 'app':
          out = await post('/api/marketplace/publish', { body: { app_id: app || apps.data?.[0]?.id || '', ...common } })
          break
      }
      setDone(out)
    })
  }
  const explain: Record<What, string> = {
    script: 'Publish a script of this workspace as a version of its item.',
    node: 'Publish a node type of this workspace, with the script it runs.',
    bundle:
      'Publish workflows of this workspace as one bundle, with the scripts, node types and code files they use. The resources and apps they read become needs: whoever installs the bundle binds each to one of their own.',
    app: "Publish an app's source (its manifest and files) as a listing; an install makes the app, for the workspace to build and deploy.",
  }
  const needs = done?.version.needs ?? []
  return (
    <form onSubmit={submit}>
      <Stack maw={640}>
        <Text size="sm" c="dimmed">
          {explain[what]} Versions are semver and immutable; other workspaces see it once the instance's review approves it, or when your source grants it to them.
        </Text>
        <NativeSelect
          label="What"
          value={what}
          onChange={(e) => setWhat(e.currentTarget.value as What)}
          data={[
            { value: 'script', label: 'A script' },
            { value: 'node', label: 'A node type (with its script)' },
            { value: 'bundle', label: 'Workflows (bundle)' },
            { value: 'app', label: 'An app' },
          ]}
          data-testid="publish-what"
        />
        {what === 'node' && (
          <NativeSelect label="Node type" value={nodeType} onChange={(e) => setNodeType(e.currentTarget.value)} data={(nodeTypes.data ?? []).map((n) => ({ value: n.id ?? '', label: n.name }))} data-testid="publish-node" />
        )}
        {what === 'script' && <NativeSelect label="Script" value={script} onChange={(e) => setScript(e.currentTarget.value)} data={(scripts.data ?? []).map((s) => ({ value: s.id, label: s.name }))} data-testid="publish-script" />}
        {what === 'bundle' && (
          <MultiSelect
            label="Workflows"
            description="1 to 20 workflows, published together"
            placeholder={flows.length ? undefined : 'Choose workflows'}
            data={(workflows.data ?? []).map((w) => ({ value: w.id, label: w.name }))}
            value={flows}
            onChange={setFlows}
            maxValues={20}
            searchable
            data-testid="publish-workflows"
          />
        )}
        {what === 'app' && (
          <NativeSelect
            label="App"
            value={app || apps.data?.[0]?.id || ''}
            onChange={(e) => setApp(e.currentTarget.value)}
            data={(apps.data ?? []).map((a) => ({ value: a.id, label: a.name }))}
            data-testid="publish-app"
          />
        )}
        <TextInput label="Version" value={version} onChange={(e) => setVersion(e.currentTarget.value)} maxLength={50} data-testid="publish-version" />
        <Group grow>
          <TextInput label="Name (optional)" description="Default: the published object's" value={name} onChange={(e) => setName(e.currentTarget.value)} maxLength={100} data-testid="publish-name" />
          <TextInput label="Slug (optional)" description="Default: from its name" value={slug} onChange={(e) => setSlug(e.currentTarget.value)} maxLength={63} data-testid="publish-slug" />
        </Group>
        <TextInput label="Summary" value={summary} onChange={(e) => setSummary(e.currentTarget.value)} maxLength={500} data-testid="publish-summary" />
        <TextInput label="Tags (comma-separated)" value={tags} onChange={(e) => setTags(e.currentTarget.value)} maxLength={500} data-testid="publish-tags" />
        <Textarea label="Changelog" value={changelog} onChange={(e) => setChangelog(e.currentTarget.value)} required maxLength={20000} data-testid="publish-changelog" />
        <Text size="sm" fw={500}>
          What it may do
        </Text>
        <TextInput label="Hosts it calls (comma-separated)" value={hosts} onChange={(e) => setHosts(e.currentTarget.value)} maxLength={2000} data-testid="publish-hosts" />
        <Group grow>
          <TextInput label="Secrets it reads" value={secrets} onChange={(e) => setSecrets(e.currentTarget.value)} maxLength={2000} data-testid="publish-secrets" />
          <TextInput label="Resource kinds it reads" value={resourceKinds} onChange={(e) => setResourceKinds(e.currentTarget.value)} maxLength={2000} data-testid="publish-resource-kinds" />
          <TextInput label="Runner labels it needs" value={labels} onChange={(e) => setLabels(e.currentTarget.value)} maxLength={2000} data-testid="publish-runner-labels" />
        </Group>
        <PriceFields value={price} onChange={setPrice} />
        <ErrorNote error={act.error || scripts.error || nodeTypes.error || workflows.error || apps.error} />
        <Button type="submit" w="fit-content" loading={act.busy === 'publish'} disabled={what === 'bundle' && flows.length === 0} data-testid="publish">
          Publish
        </Button>
        {done && (
          <Alert color="teal" data-testid="published">
            Published{' '}
            <Anchor component={Link} to={`/marketplace/${done.item.id}`}>
              {done.item.name}
            </Anchor>{' '}
            {done.version.version}
            {done.item.paid && done.item.price ? <span data-testid="published-price"> at {marketPrice(done.item.price)}</span> : null}
            {needs.length > 0 && (
              <Text size="sm" mt={4} data-testid="published-needs">
                Whoever installs it binds: {needs.map((n) => `${n.key} (${needWhat(n)})`).join(', ')}.
              </Text>
            )}
          </Alert>
        )}
      </Stack>
    </form>
  )
}

const sourceStatusColor: Record<Source['status'], string> = { enabled: 'teal', disabled: 'gray', sync_error: 'red' }

/** The active workspace's sources (the marketplace page and the owner console's marketplace-sources tab). */
export function Sources() {
  const { workspace } = useSession()
  const sources = useLoad(() => get('/api/marketplace/sources'), [workspace?.id])
  const act = useAction()
  const [grants, setGrants] = useState<Record<string, string>>({})
  const [removing, setRemoving] = useState<Source | null>(null)
  const [editing, setEditing] = useState<Source | null>(null)
  const list = sources.data ?? []
  return (
    <Stack>
      <ErrorNote error={sources.error || act.error} />
      <Table data-testid="sources">
        <Table.Tbody>
          {list.map((s) => (
            <Table.Tr key={s.id} data-testid="source-row" data-source-id={s.id} data-kind={s.kind}>
              <Table.Td>
                {s.name} <Badge size="xs">{s.kind}</Badge>
                {s.kind === 'git' && (
                  <Text size="xs" c="dimmed">
                    {s.url} · {s.branch}
                  </Text>
                )}
              </Table.Td>
              <Table.Td>
                <Badge color={sourceStatusColor[s.status] ?? 'gray'} variant="light" data-testid="source-status">
                  {s.status}
                </Badge>
                {s.status === 'sync_error' && s.last_error && (
                  <Text size="xs" c="red" maw={360} data-testid="source-error">
                    {s.last_error}
                  </Text>
                )}
                {s.synced_at && (
                  <Text size="xs" c="dimmed">
                    synced {when(s.synced_at)}
                  </Text>
                )}
              </Table.Td>
              <Table.Td data-testid="source-items">{s.items} items</Table.Td>
              <Table.Td>
                <Group gap={4}>
                  {s.kind === 'workspace' && (
                    <>
                      <TextInput
                        size="xs"
                        placeholder="workspace ids it grants, comma-separated"
                        value={grants[s.id] ?? (s.grants ?? []).join(', ')}
                        onChange={(e) => setGrants({ ...grants, [s.id]: e.currentTarget.value })}
                        w={320}
                      />
                      <Button
                        size="xs"
                        loading={act.busy === `grants-${s.id}`}
                        onClick={() =>
                          act.run(`grants-${s.id}`, async () => {
                            const list = words(grants[s.id] ?? (s.grants ?? []).join(','))
                            await patch('/api/marketplace/sources/{id}', { params: { path: { id: s.id } }, body: { grants: list } })
                            await sources.reload()
                          })
                        }
                      >
                        Save grants
                      </Button>
                    </>
                  )}
                  {s.kind !== 'workspace' && (
                    <Button
                      size="xs"
                      variant="light"
                      loading={act.busy === `sync-${s.id}`}
                      disabled={s.status === 'disabled'}
                      title={s.status === 'disabled' ? 'Enable it to sync' : undefined}
                      onClick={() => act.run(`sync-${s.id}`, async () => (await post('/api/marketplace/sources/{id}/sync', { params: { path: { id: s.id } } }), sources.reload()))}
                      data-testid="source-sync"
                    >
                      Sync
                    </Button>
                  )}
                  {s.kind !== 'official' && (
                    <>
                      <Button size="xs" variant="default" onClick={() => setEditing(s)} data-testid="source-edit">
                        Edit
                      </Button>
                      <Button size="xs" color="red" variant="light" loading={act.busy === `delete-${s.id}`} onClick={() => setRemoving(s)} data-testid="source-delete">
                        Delete
                      </Button>
                    </>
                  )}
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <AddGitSource onAdded={() => sources.reload()} />
      {sources.data && !list.some((s) => s.kind === 'workspace') && (
        <Button
          w="fit-content"
          variant="light"
          loading={act.busy === 'own'}
          onClick={() => act.run('own', async () => (await post('/api/marketplace/sources', { body: { kind: 'workspace', name: 'Published here' } }), sources.reload()))}
          data-testid="source-add-own"
        >
          Add this workspace's own source (to grant its published items)
        </Button>
      )}
      <Confirm
        item={removing}
        title={(s) => `Delete ${s.name}?`}
        message={(s) =>
          s.kind === 'git'
            ? `Its ${s.items} items leave the catalog. A source whose items are installed cannot go: remove those installs first.`
            : 'It can go once it has no published items.'
        }
        action={() => 'Delete'}
        testid="source-delete-confirm"
        onCancel={() => setRemoving(null)}
        onConfirm={(s) => act.run(`delete-${s.id}`, async () => (await del('/api/marketplace/sources/{id}', { params: { path: { id: s.id } } }), sources.reload()))}
      />
      {editing && (
        <EditSource
          source={editing}
          onClose={() => setEditing(null)}
          onSaved={async () => {
            setEditing(null)
            await sources.reload()
          }}
        />
      )}
    </Stack>
  )
}

/** Renames a source, enables or disables it. */
function EditSource({ source, onClose, onSaved }: { source: Source; onClose: () => void; onSaved: () => unknown }) {
  const [name, setName] = useState(source.name)
  const [enabled, setEnabled] = useState(source.status !== 'disabled')
  const act = useAction()
  return (
    <Modal opened onClose={onClose} title={`Edit ${source.name}`}>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          act.run('save', async () => {
            const status: 'enabled' | 'disabled' | undefined = enabled === (source.status !== 'disabled') ? undefined : enabled ? 'enabled' : 'disabled'
            await patch('/api/marketplace/sources/{id}', { params: { path: { id: source.id } }, body: { name: name.trim() !== source.name ? name.trim() : undefined, status } })
            await onSaved()
          })
        }}
      >
        <Stack>
          <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} required maxLength={100} data-testid="source-name" />
          <Switch label="Enabled (a disabled source is not synced)" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} data-testid="source-enabled" />
          <ErrorNote error={act.error} />
          <Button type="submit" w="fit-content" loading={act.busy === 'save'} data-testid="source-save">
            Save
          </Button>
        </Stack>
      </form>
    </Modal>
  )
}

/** Adds a Git source: a public https repository of published items, synced at once. */
function AddGitSource({ onAdded }: { onAdded: () => unknown }) {
  const [name, setName] = useState('')
  const [url, setUrl] = useState('')
  const [branch, setBranch] = useState('')
  const act = useAction()
  const [added, setAdded] = useState<Source | null>(null)
  return (
    <Card withBorder maw={720}>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          act.run('add', async () => {
            setAdded(null)
            const s = await post('/api/marketplace/sources', { body: { kind: 'git', name: name.trim(), url: url.trim(), branch: branch.trim() || undefined } })
            setAdded(s)
            setName('')
            setUrl('')
            setBranch('')
            await onAdded()
          })
        }}
      >
        <Stack gap="xs">
          <Text fw={600}>Add a Git source</Text>
          <Text size="xs" c="dimmed">
            A public repository (https) of published items: it is read now and when you sync it; its items are this workspace's to install.
          </Text>
          <Group align="end">
            <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} required maxLength={100} w={180} data-testid="git-source-name" />
            <TextInput
              label="Repository URL"
              placeholder="https://example.com/catalog.git"
              type="url"
              value={url}
              onChange={(e) => setUrl(e.currentTarget.value)}
              required
              maxLength={2000}
              w={300}
              data-testid="git-source-url"
            />
            <TextInput label="Branch" placeholder="main" value={branch} onChange={(e) => setBranch(e.currentTarget.value)} maxLength={200} w={120} data-testid="git-source-branch" />
            <Button type="submit" loading={act.busy === 'add'} data-testid="git-source-add">
              Add and sync
            </Button>
          </Group>
          <ErrorNote error={act.error} />
          {added && (
            <Text size="sm" c={added.status === 'sync_error' ? 'red' : 'teal'} data-testid="git-source-added">
              {added.status === 'sync_error' ? `Added ${added.name}, but its sync failed: ${added.last_error ?? ''}` : `Added ${added.name}: ${added.items} items.`}
            </Text>
          )}
        </Stack>
      </form>
    </Card>
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
