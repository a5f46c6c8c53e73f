// The workspace's resources: typed connections (a database, an API, a mail
// server, a bot) with at most one secret, kept in the vault and never shown
// again. The list is the resources board; a resource's page edits it, tests
// its connection, shows what uses it, caps its concurrent use and, for the
// kinds that have them, lists a bot's channels or browses a share's folders.
// Below the list, the workspace's schemas in databases with row-level
// security (its db namespaces).
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Checkbox,
  Chip,
  Code,
  Group,
  Modal,
  NativeSelect,
  NumberInput,
  Pagination,
  PasswordInput,
  Stack,
  Table,
  Text,
  TextInput,
  Textarea,
  Title,
} from '@mantine/core'
import { useDebouncedValue } from '@mantine/hooks'
import { useEffect, useState } from 'react'
import { Link, useNavigate, useParams, useSearchParams } from 'react-router-dom'
import { del, get, messageOf, patch, post, put, type Schemas } from '../api'
import { problems, SchemaForm, type Schema } from '../canvas/SchemaForm'
import { useSession } from '../session'
import { Confirm, count, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Resource = Schemas['Resource']
type Kind = Schemas['ResourceKind']
type Facet = Schemas['Facet']
type Config = Record<string, unknown>

const pageSize = 50

/** The kinds with their schemas (GET /api/resource-kinds), loaded once per page. */
function useKinds() {
  return useLoad(async () => (await get('/api/resource-kinds')) ?? [], [])
}

/**
 * A kind's config schema as the form draws it: the required fields first (in
 * the order the server declares them), then the optional ones.
 */
function formSchema(kind: Kind): Schema {
  const s = (kind.config_schema ?? {}) as Schema
  const props = s.properties ?? {}
  const required = (s.required ?? []).filter((n) => n in props)
  const names = [...required, ...Object.keys(props).filter((n) => !required.includes(n))]
  return { ...s, properties: Object.fromEntries(names.map((n) => [n, props[n]])) }
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

function configOf(r: Resource): Config {
  return r.config && typeof r.config === 'object' ? { ...(r.config as Config) } : {}
}

function SecretBadge({ r }: { r: Resource }) {
  if (!r.has_secret)
    return (
      <Text size="sm" c="dimmed">
        —
      </Text>
    )
  return (
    <Badge size="sm" variant="light" color="grape" tt="none" data-testid="resource-secret">
      secret · set
    </Badge>
  )
}

const concurrencyText = (n: number | null | undefined) => (n == null ? 'unlimited' : String(n))

/** /resources: the board (search, kind chips, pages) and the form that adds one. */
export default function Resources() {
  const { workspace } = useSession()
  const [params, setParams] = useSearchParams()
  const kind = params.get('kind') ?? ''
  const q = params.get('q') ?? ''
  const page = Math.max(1, Number(params.get('page')) || 1)
  const [search, setSearch] = useState(q)
  const [debounced] = useDebouncedValue(search, 250)
  const [adding, setAdding] = useState(false)
  const kinds = useKinds()
  const board = useLoad(
    () => get('/api/resources/board', { params: { query: { page, page_size: pageSize, kind: kind || undefined, q: q || undefined } } }),
    [workspace?.id, kind, q, page],
  )

  const setFilter = (k: string, v: string) => {
    const next = new URLSearchParams(params)
    if (v) next.set(k, v)
    else next.delete(k)
    if (k !== 'page') next.delete('page')
    setParams(next, { replace: true })
  }
  // The search box writes the address bar once typing pauses.
  useEffect(() => {
    if (debounced.trim() !== q) setFilter('q', debounced.trim())
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [debounced])

  const label = (slug: string) => kinds.data?.find((k) => k.slug === slug)?.name ?? slug
  const data = board.data
  const rows = data?.rows ?? []
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || pageSize))) : 1
  return (
    <Stack>
      <Group justify="space-between">
        <Group gap="xs">
          <Title order={2}>Resources</Title>
          {data && <Badge variant="light">{count(data.total, 'resource')}</Badge>}
        </Group>
        <Button onClick={() => setAdding(true)} disabled={!kinds.data} data-testid="new-resource">
          Add resource
        </Button>
      </Group>
      <Text size="sm" c="dimmed">
        Connections workflow nodes use: databases, APIs, mail servers, bots, shares. A resource's secret is kept in the vault and never shown again.
      </Text>
      <Group align="end">
        <TextInput
          label="Search"
          placeholder="Name or description"
          value={search}
          onChange={(e) => setSearch(e.currentTarget.value)}
          w={280}
          data-testid="resource-search"
        />
      </Group>
      <Group gap="xs" role="group" aria-label="Kind">
        <Text size="sm" fw={500} w={50}>
          Kind
        </Text>
        <Chip.Group value={kind || 'all'} onChange={(v) => setFilter('kind', v === 'all' ? '' : String(v))}>
          <Chip value="all" size="xs" data-testid="kind-all">
            All
          </Chip>
          {(data?.facets.kind ?? []).map((f: Facet) => (
            <Chip key={f.value} value={f.value} size="xs" data-testid={`kind-${f.value}`}>
              {f.label} ({f.count})
            </Chip>
          ))}
        </Chip.Group>
      </Group>
      <ErrorNote error={board.error || kinds.error} />
      {board.loading && !data ? (
        <Loading label="Loading resources…" />
      ) : board.error ? null : rows.length === 0 ? (
        <Text c="dimmed" data-testid="resources-empty">
          {q || kind ? 'No resource matches.' : 'No resources yet: add one above.'}
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={640}>
          <Table striped highlightOnHover data-testid="resource-list">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Kind</Table.Th>
                <Table.Th>Secret</Table.Th>
                <Table.Th>Concurrency</Table.Th>
                <Table.Th>Updated</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((r) => (
                <Table.Tr key={r.id} data-testid={`resource-${r.name}`}>
                  <Table.Td>
                    <Anchor component={Link} to={`/resources/${r.id}`}>
                      {r.name}
                    </Anchor>
                    {r.description && (
                      <Text size="xs" c="dimmed" lineClamp={1}>
                        {r.description}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{label(r.kind)}</Table.Td>
                  <Table.Td>
                    <SecretBadge r={r} />
                  </Table.Td>
                  <Table.Td>{concurrencyText(r.max_concurrent_uses)}</Table.Td>
                  <Table.Td>{when(r.updated_at)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={(p) => setFilter('page', String(p))} data-testid="resource-pages" />}
      <Namespaces workspace={workspace?.id} />
      {adding && kinds.data && <NewResource kinds={kinds.data} onClose={() => setAdding(false)} />}
    </Stack>
  )
}

/** A kind's config as a form, with what the schema already knows is wrong. */
function ConfigForm({ kind, value, onChange }: { kind: Kind; value: Config; onChange: (c: Config) => void }) {
  return (
    <Card withBorder p="sm" data-testid="resource-config">
      <Text size="sm" fw={500} mb={4}>
        {kind.name} settings
      </Text>
      <SchemaForm schema={formSchema(kind)} value={value} onChange={onChange} suggestions={[]} />
    </Card>
  )
}

/** The create form: a kind first, then the form its schema makes, the secret, a name. */
function NewResource({ kinds, onClose }: { kinds: Kind[]; onClose: () => void }) {
  const navigate = useNavigate()
  const [slug, setSlug] = useState('')
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [config, setConfig] = useState<Config>({})
  const [secret, setSecret] = useState('')
  const [rls, setRLS] = useState(false)
  const action = useAction()
  const kind = kinds.find((k) => k.slug === slug)
  const wrong = kind ? Object.keys(problems(formSchema(kind), config)).length > 0 : true
  const create = async (e: React.FormEvent) => {
    e.preventDefault()
    if (!kind) return
    const r = await action.run('create', () =>
      post('/api/resources', {
        body: {
          kind: kind.slug,
          name: name.trim(),
          config,
          ...(description.trim() ? { description: description.trim() } : {}),
          ...(secret ? { secret } : {}),
          ...(kind.slug === 'postgresql' && rls ? { rls_managed: true } : {}),
        },
      }),
    )
    if (r) navigate(`/resources/${r.id}`)
  }
  return (
    <Modal opened onClose={onClose} title="New resource" size="lg">
      <form onSubmit={create} aria-label="New resource">
        <Stack gap="xs">
          <NativeSelect
            label="Kind"
            required
            value={slug}
            onChange={(e) => {
              setSlug(e.currentTarget.value)
              setConfig({})
            }}
            data={[{ value: '', label: 'Choose a kind…' }, ...kinds.map((k) => ({ value: k.slug, label: k.name }))]}
            data-testid="new-resource-kind"
          />
          {kind && (
            <>
              <Text size="sm" c="dimmed" data-testid="new-resource-kind-description">
                {kind.description}
              </Text>
              <TextInput label="Name" required maxLength={100} value={name} onChange={(e) => setName(e.currentTarget.value)} data-testid="resource-name" />
              <Textarea label="Description" maxLength={2000} autosize minRows={1} maxRows={4} value={description} onChange={(e) => setDescription(e.currentTarget.value)} data-testid="resource-description" />
              <ConfigForm kind={kind} value={config} onChange={setConfig} />
              <PasswordInput
                label={capital(kind.secret)}
                description="Kept in the vault; never shown again. Optional."
                value={secret}
                onChange={(e) => setSecret(e.currentTarget.value)}
                autoComplete="new-password"
                data-testid="resource-secret-input"
              />
              {kind.slug === 'postgresql' && (
                <Checkbox
                  label="Managed row-level security: a role and schema per workspace (rls_managed)"
                  checked={rls}
                  onChange={(e) => setRLS(e.currentTarget.checked)}
                  data-testid="resource-rls"
                />
              )}
            </>
          )}
          {action.error != null && (
            <Alert color="red" role="alert" data-testid="resource-form-error">
              {messageOf(action.error)}
            </Alert>
          )}
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={action.busy === 'create'} disabled={!kind || wrong || !name.trim()} data-testid="create-resource">
              Create resource
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  )
}

/**
 * The workspace's db namespaces: its schema in each database resource that
 * manages row-level security, where its db nodes and scripts read and
 * write. Shown once there is one.
 */
function Namespaces({ workspace }: { workspace?: string }) {
  const list = useLoad(async () => (await get('/api/db-namespaces')) ?? [], [workspace])
  if (list.error) return <ErrorNote error={list.error} />
  const rows = list.data ?? []
  if (rows.length === 0) return null
  return (
    <Card withBorder data-testid="db-namespaces">
      <Stack gap="xs">
        <Text fw={600}>Database namespaces</Text>
        <Text size="sm" c="dimmed">
          This workspace's schema in each database that manages row-level security: its db nodes and scripts see only its rows there.
        </Text>
        <Table>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Database</Table.Th>
              <Table.Th>Schema</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((n) => (
              <Table.Tr key={n.handle} data-testid={`db-namespace-${n.handle}`}>
                <Table.Td>{n.handle}</Table.Td>
                <Table.Td>
                  <Code>{n.schema}</Code>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Stack>
    </Card>
  )
}

/** /resources/:id: one resource, its settings, its connection test, what uses it. */
export function ResourcePage() {
  const { id = '' } = useParams()
  const navigate = useNavigate()
  const kinds = useKinds()
  const res = useLoad(() => get('/api/resources/{id}', { params: { path: { id } } }), [id])
  const usage = useLoad(() => get('/api/resources/{id}/usage', { params: { path: { id } } }), [id])
  const [deleting, setDeleting] = useState<Resource | null>(null)
  const action = useAction()
  const r = res.data
  const kind = kinds.data?.find((k) => k.slug === r?.kind)

  if ((res.loading && !r) || (kinds.loading && !kinds.data)) return <Loading label="Loading the resource…" />
  if (!r)
    return (
      <Stack>
        <Anchor component={Link} to="/resources" size="sm">
          ← Resources
        </Anchor>
        <ErrorNote error={res.error ?? 'The resource was not found.'} />
      </Stack>
    )
  const users = usage.data?.workflows ?? []
  const profiles = usage.data?.profiles ?? []
  return (
    <Stack maw={900}>
      <Anchor component={Link} to="/resources" size="sm">
        ← Resources
      </Anchor>
      <Group justify="space-between">
        <Group gap="xs">
          <Title order={2} data-testid="resource-title">
            {r.name}
          </Title>
          <Badge variant="light">{kind?.name ?? r.kind}</Badge>
          <SecretBadge r={r} />
        </Group>
        <Button color="red" variant="light" onClick={() => setDeleting(r)} loading={action.busy === 'delete'} data-testid="delete-resource">
          Delete
        </Button>
      </Group>
      <ErrorNote error={kinds.error || action.error} />
      <TestCard r={r} />
      {kind ? <EditCard r={r} kind={kind} onSaved={(n) => res.setData(n)} /> : <Text c="dimmed">Unknown kind {r.kind}.</Text>}
      <ConcurrencyCard key={`c-${r.max_concurrent_uses}`} r={r} onSaved={(n) => res.setData(n)} />
      <Card withBorder data-testid="resource-usage">
        <Stack gap="xs">
          <Text fw={600}>Used by</Text>
          <ErrorNote error={usage.error} />
          {usage.loading && !usage.data ? (
            <Loading />
          ) : users.length + profiles.length === 0 ? (
            <Text size="sm" c="dimmed" data-testid="resource-unused">
              No workflow or agent profile uses it.
            </Text>
          ) : (
            <Stack gap={4}>
              {profiles.map((p) => (
                <Group key={p.profile_id} gap="xs" data-testid={`uses-profile-${p.name}`}>
                  <Anchor component={Link} to="/settings" size="sm">
                    {p.name}
                  </Anchor>
                  <Text size="xs" c="dimmed">
                    agent profile: its tasks call this model
                  </Text>
                </Group>
              ))}
              {users.map((w) => (
                <Group key={w.workflow_id} gap="xs" data-testid={`uses-${w.name}`}>
                  <Anchor component={Link} to={`/workflows/${w.workflow_id}`} size="sm">
                    {w.name}
                  </Anchor>
                  <Text size="xs" c="dimmed">
                    {(w.node_keys ?? []).length === 1 ? 'node' : 'nodes'}
                  </Text>
                  {(w.node_keys ?? []).map((k) => (
                    <Code key={k}>{k}</Code>
                  ))}
                </Group>
              ))}
            </Stack>
          )}
        </Stack>
      </Card>
      {r.kind === 'postgresql' && r.rls_managed && <RLSCard r={r} />}
      {r.kind === 'discord' && <ChannelsCard r={r} />}
      {r.kind === 'seafile_webdav' && <FoldersCard r={r} />}
      <Text size="xs" c="dimmed">
        Created {when(r.created_at)} · updated {when(r.updated_at)}
        {r.secret_updated_at ? ` · secret set ${when(r.secret_updated_at)}` : ''}
      </Text>
      <Confirm
        item={deleting}
        title={(x) => `Delete ${x.name}?`}
        message={(x) =>
          `${users.length ? `${count(users.length, 'workflow')} name${users.length === 1 ? 's' : ''} it: their nodes that use it will fail. ` : ''}${
            profiles.length ? `${count(profiles.length, 'agent profile')} use${profiles.length === 1 ? 's' : ''} it: their tasks will fail until given another model. ` : ''
          }${
            x.has_secret ? 'Its secret is removed from the vault. ' : ''
          }This cannot be undone.`
        }
        action={() => 'Delete resource'}
        testid="confirm-delete-resource"
        onCancel={() => setDeleting(null)}
        onConfirm={async (x) => {
          const done = await action.run('delete', async () => {
            await del('/api/resources/{id}', { params: { path: { id: x.id } } })
            return true
          })
          if (done) navigate('/resources')
        }}
      />
    </Stack>
  )
}

/** Tests the connection with the stored secret: ok in green, the reason in red. */
function TestCard({ r }: { r: Resource }) {
  const [result, setResult] = useState<{ ok: boolean; message: string } | null>(null)
  const [busy, setBusy] = useState(false)
  const test = async () => {
    setBusy(true)
    setResult(null)
    try {
      setResult(await post('/api/resources/{id}/test', { params: { path: { id: r.id } } }))
    } catch (e) {
      // A config that cannot work (400) says why, like a failed test.
      setResult({ ok: false, message: messageOf(e) })
    } finally {
      setBusy(false)
    }
  }
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600}>Connection</Text>
          <Button size="xs" variant="light" onClick={test} loading={busy} data-testid="test-resource">
            Test connection
          </Button>
        </Group>
        {result && (
          <Alert color={result.ok ? 'green' : 'red'} title={result.ok ? 'Connected' : 'Failed'} data-testid="resource-test-result" data-ok={String(result.ok)}>
            {result.message}
          </Alert>
        )}
      </Stack>
    </Card>
  )
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/**
 * Edits a resource (PUT): only what changed is sent; the secret field starts
 * empty and, left so, keeps the stored one. The server refuses a new host or
 * URL without the secret: its message shows here.
 */
function EditCard({ r, kind, onSaved }: { r: Resource; kind: Kind; onSaved: (r: Resource) => void }) {
  const [name, setName] = useState(r.name)
  const [description, setDescription] = useState(r.description)
  const [config, setConfig] = useState<Config>(() => configOf(r))
  const [secret, setSecret] = useState('')
  const [rls, setRLS] = useState(r.rls_managed)
  const [saved, setSaved] = useState('')
  const [clearing, setClearing] = useState<Resource | null>(null)
  const action = useAction()
  const wrong = Object.keys(problems(formSchema(kind), config)).length > 0
  // What the server answered becomes the form's starting point again.
  const reset = (n: Resource) => {
    setName(n.name)
    setDescription(n.description)
    setConfig(configOf(n))
    setSecret('')
    setRLS(n.rls_managed)
    onSaved(n)
  }
  const save = async (e: React.FormEvent) => {
    e.preventDefault()
    setSaved('')
    const body: Schemas['ResourceUpdate'] = {}
    if (name.trim() !== r.name) body.name = name.trim()
    if (description !== r.description) body.description = description
    if (!same(config, configOf(r))) body.config = config
    if (secret) body.secret = secret
    if (r.kind === 'postgresql' && rls !== r.rls_managed) body.rls_managed = rls
    const n = await action.run('save', () => put('/api/resources/{id}', { params: { path: { id: r.id } }, body }))
    if (n) {
      setSaved('Saved.')
      reset(n)
    }
  }
  const clear = async () => {
    const n = await action.run('clear', () => put('/api/resources/{id}', { params: { path: { id: r.id } }, body: { secret: '' } }))
    if (n) {
      setSaved('Secret cleared.')
      reset(n)
    }
  }
  return (
    <Card withBorder data-testid="resource-edit">
      <form onSubmit={save} aria-label="Edit resource">
        <Stack gap="xs">
          <Text fw={600}>Settings</Text>
          <TextInput label="Name" required maxLength={100} value={name} onChange={(e) => setName(e.currentTarget.value)} data-testid="resource-name" />
          <Textarea label="Description" maxLength={2000} autosize minRows={1} maxRows={4} value={description} onChange={(e) => setDescription(e.currentTarget.value)} data-testid="resource-description" />
          <ConfigForm kind={kind} value={config} onChange={setConfig} />
          <Group align="end" gap="xs">
            <PasswordInput
              label={capital(kind.secret)}
              description={
                r.has_secret ? 'secret · set: leave empty to keep it, or type a new one to replace it' : 'None stored: type one to set it (kept in the vault, never shown again)'
              }
              value={secret}
              onChange={(e) => setSecret(e.currentTarget.value)}
              autoComplete="new-password"
              style={{ flex: 1 }}
              data-testid="resource-secret-input"
            />
            {r.has_secret && (
              <Button variant="subtle" color="red" onClick={() => setClearing(r)} loading={action.busy === 'clear'} data-testid="clear-secret">
                Clear secret
              </Button>
            )}
          </Group>
          {r.kind === 'postgresql' && (
            <Checkbox
              label="Managed row-level security: a role and schema per workspace (rls_managed)"
              checked={rls}
              onChange={(e) => setRLS(e.currentTarget.checked)}
              data-testid="resource-rls"
            />
          )}
          {action.error != null && (
            <Alert color="red" role="alert" data-testid="resource-form-error">
              {messageOf(action.error)}
            </Alert>
          )}
          <Group justify="end" gap="xs">
            {saved && (
              <Text size="sm" c="teal" data-testid="resource-saved">
                {saved}
              </Text>
            )}
            <Button type="submit" loading={action.busy === 'save'} disabled={wrong || !name.trim()} data-testid="save-resource">
              Save
            </Button>
          </Group>
        </Stack>
      </form>
      <Confirm
        item={clearing}
        title={(x) => `Clear the ${kind.secret} of ${x.name}?`}
        message={() => 'It is removed from the vault; nodes that use the resource then call without it until a new one is set.'}
        action={() => 'Clear secret'}
        testid="confirm-clear-secret"
        onCancel={() => setClearing(null)}
        onConfirm={clear}
      />
    </Card>
  )
}

/** How many runs may use the resource at once: a number, or unlimited. */
function ConcurrencyCard({ r, onSaved }: { r: Resource; onSaved: (r: Resource) => void }) {
  const [unlimited, setUnlimited] = useState(r.max_concurrent_uses == null)
  const [n, setN] = useState<number | ''>(r.max_concurrent_uses ?? 1)
  const action = useAction()
  const save = async (e: React.FormEvent) => {
    e.preventDefault()
    const out = await action.run('save', () =>
      patch('/api/resources/{id}/concurrency', { params: { path: { id: r.id } }, body: { max_concurrent_uses: unlimited ? null : Number(n) } }),
    )
    if (out) onSaved(out)
  }
  return (
    <Card withBorder data-testid="resource-concurrency">
      <form onSubmit={save}>
        <Stack gap="xs">
          <Group gap="xs">
            <Text fw={600}>Concurrency</Text>
            <Badge variant="default" tt="none" data-testid="resource-concurrency-now">
              {concurrencyText(r.max_concurrent_uses)}
            </Badge>
          </Group>
          <Text size="sm" c="dimmed">
            How many runs may use this resource at once; the others wait their turn.
          </Text>
          <Group align="end">
            <Checkbox label="Unlimited" checked={unlimited} onChange={(e) => setUnlimited(e.currentTarget.checked)} data-testid="concurrency-unlimited" />
            <NumberInput
              label="At most"
              min={1}
              max={100000}
              allowDecimal={false}
              disabled={unlimited}
              value={n}
              onChange={(v) => setN(v === '' ? '' : Number(v))}
              w={140}
              data-testid="concurrency-max"
            />
            <Button type="submit" variant="light" loading={action.busy === 'save'} disabled={!unlimited && !(Number(n) >= 1)} data-testid="save-concurrency">
              Set
            </Button>
          </Group>
          <ErrorNote error={action.error} />
        </Stack>
      </form>
    </Card>
  )
}

type RLSStatus = Schemas['RLSStatus']

/**
 * Row-level security of an rls_managed database: what the last refresh
 * provisioned for this workspace (its role and schema, how many shared
 * tables got a policy) or why it failed, and a refresh.
 */
function RLSCard({ r }: { r: Resource }) {
  const status = useLoad(async () => get('/api/resources/{id}/rls_status', { params: { path: { id: r.id } } }), [r.id])
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const refresh = async () => {
    setBusy(true)
    setError(null)
    try {
      status.setData(await post('/api/resources/{id}/rls_refresh', { params: { path: { id: r.id } } }))
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  const st = status.data as RLSStatus | undefined
  const color = st?.status === 'provisioned' ? 'green' : st?.status === 'failed' ? 'red' : 'gray'
  return (
    <Card withBorder data-testid="resource-rls-card">
      <Stack gap="xs">
        <Group justify="space-between">
          <Group gap="xs">
            <Text fw={600}>Row-level security</Text>
            {st && (
              <Badge color={color} variant="light" data-testid="rls-status">
                {st.status}
              </Badge>
            )}
          </Group>
          <Button size="xs" variant="light" onClick={refresh} loading={busy} data-testid="rls-refresh">
            Refresh
          </Button>
        </Group>
        <Text size="sm" c="dimmed">
          A role and a schema of this workspace in the database; shared tables with a workspace_id column show it only its rows.
          The workspace's database nodes connect as that role.
        </Text>
        {status.error != null && <ErrorNote error={status.error} />}
        {error != null && <ErrorNote error={error} />}
        {st?.role_name && (
          <Text size="sm">
            Role <Code>{st.role_name}</Code>, schema <Code>{st.schema_name}</Code>, {count(st.policies, 'shared table')} with a policy
          </Text>
        )}
        {st?.error && (
          <Alert color="red" data-testid="rls-error">
            {st.error}
          </Alert>
        )}
      </Stack>
    </Card>
  )
}

/** A Discord bot's servers and the channels it can post to (asked of Discord on demand). */
function ChannelsCard({ r }: { r: Resource }) {
  const [shown, setShown] = useState(false)
  return (
    <Card withBorder data-testid="resource-channels">
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600}>Channels</Text>
          <Button size="xs" variant="light" onClick={() => setShown(true)} disabled={shown} data-testid="load-channels">
            Show channels
          </Button>
        </Group>
        {shown && <Channels id={r.id} />}
      </Stack>
    </Card>
  )
}

function Channels({ id }: { id: string }) {
  const guilds = useLoad(async () => (await get('/api/resources/{id}/discord/channels', { params: { path: { id } } })) ?? [], [id])
  if (guilds.loading && !guilds.data) return <Loading label="Asking Discord…" />
  if (guilds.error) return <ErrorNote error={guilds.error} />
  if ((guilds.data ?? []).length === 0) return <Text size="sm" c="dimmed">The bot is in no server.</Text>
  return (
    <Stack gap="xs">
      {(guilds.data ?? []).map((g) => (
        <div key={g.guild_id} data-testid={`guild-${g.guild_id}`}>
          <Text size="sm" fw={500}>
            {g.guild_name}
          </Text>
          {(g.channels ?? []).length === 0 ? (
            <Text size="xs" c="dimmed">
              No text channel.
            </Text>
          ) : (
            (g.channels ?? []).map((c) => (
              <Text key={c.id} size="sm">
                #{c.name}{' '}
                <Text span size="xs" c="dimmed" ff="monospace">
                  {c.id}
                </Text>
              </Text>
            ))
          )}
        </div>
      ))}
    </Stack>
  )
}

/** A WebDAV share's folders, one level at a time from its root. */
function FoldersCard({ r }: { r: Resource }) {
  const [path, setPath] = useState<string | null>(null)
  const parts = (path ?? '').split('/').filter(Boolean)
  return (
    <Card withBorder data-testid="resource-folders">
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600}>Folders</Text>
          {path === null && (
            <Button size="xs" variant="light" onClick={() => setPath('')} data-testid="browse-folders">
              Browse
            </Button>
          )}
        </Group>
        {path !== null && (
          <>
            <Group gap={4} data-testid="folder-path">
              <Anchor size="sm" onClick={() => setPath('')}>
                /
              </Anchor>
              {parts.map((p, i) => (
                <Group key={i} gap={4}>
                  <Anchor size="sm" onClick={() => setPath(parts.slice(0, i + 1).join('/'))}>
                    {p}
                  </Anchor>
                  <Text size="sm" c="dimmed">
                    /
                  </Text>
                </Group>
              ))}
            </Group>
            <Folders id={r.id} path={path} onOpen={setPath} />
          </>
        )}
      </Stack>
    </Card>
  )
}

function Folders({ id, path, onOpen }: { id: string; path: string; onOpen: (p: string) => void }) {
  const folders = useLoad(async () => (await get('/api/resources/{id}/storage/folders', { params: { path: { id }, query: path ? { path } : {} } })) ?? [], [id, path])
  if (folders.loading && !folders.data) return <Loading label="Reading the share…" />
  if (folders.error) return <ErrorNote error={folders.error} />
  if ((folders.data ?? []).length === 0)
    return (
      <Text size="sm" c="dimmed">
        No sub-folder here.
      </Text>
    )
  return (
    <Stack gap={2}>
      {(folders.data ?? []).map((f) => (
        <Anchor key={f.path} size="sm" onClick={() => onOpen(f.path)} data-testid={`folder-${f.name}`}>
          📁 {f.name}
        </Anchor>
      ))}
    </Stack>
  )
}
