// The workspace's hosted apps: a board (search, a status facet, sortable
// columns, pages) whose rows say whether each app is deployed and where,
// and the form that creates one from a name and a manifest (YAML).
import { Anchor, Badge, Button, Card, Code, Group, Pagination, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core'
import { useDebouncedValue } from '@mantine/hooks'
import { useEffect, useState } from 'react'
import { Link, useNavigate, useSearchParams } from 'react-router-dom'
import { get, post, type Schemas } from '../api'
import { FacetChips, SortTh, type Order } from '../board'
import { useSession } from '../session'
import { count, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Deployment = Schemas['AppDeployment']
type SortKey = 'name' | 'created_at' | 'updated_at'

const pageSize = 50

// The direction a column starts in when first chosen: A to Z for the name,
// newest first for the times.
const firstOrder: Record<SortKey, Order> = { name: 'asc', created_at: 'desc', updated_at: 'desc' }
const sortKeys = Object.keys(firstOrder) as SortKey[]

/** The smallest manifest the server accepts: a name and the page served at the root. */
export const starterManifest = 'name: My app\nentry: index.html\n'

/** monospace for the YAML, SQL and file editors. */
export const mono = { input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 13 } }

/** Where an app is served, or that it is not: a badge and, when deployed, a link opening the app in a new tab. */
export function DeploymentBadge({ d, testid }: { d: Deployment | null | undefined; testid: string }) {
  if (!d)
    return (
      <Badge color="gray" variant="light" data-testid={testid} data-status="never">
        never deployed
      </Badge>
    )
  return (
    <Group gap="xs" wrap="nowrap" data-testid={testid} data-status={d.status}>
      <Badge color={d.status === 'deployed' ? 'green' : 'orange'} variant="light">
        {d.status}
      </Badge>
      {d.status === 'deployed' ? (
        <Anchor href={d.url} target="_blank" rel="noopener" size="sm" data-testid={`${testid}-url`}>
          {d.url}
        </Anchor>
      ) : (
        <Code>{d.route_path}</Code>
      )}
    </Group>
  )
}

/** /apps: the board and the form that adds an app. */
export default function Apps() {
  const { workspace } = useSession()
  const [params, setParams] = useSearchParams()
  const q = params.get('q') ?? ''
  const status = params.get('status') ?? ''
  const page = Math.max(1, Number(params.get('page')) || 1)
  const sort: SortKey = sortKeys.find((k) => k === params.get('sort')) ?? 'name'
  const order: Order = params.get('order') === 'desc' ? 'desc' : params.get('order') === 'asc' ? 'asc' : firstOrder[sort]
  const [search, setSearch] = useState(q)
  const [debounced] = useDebouncedValue(search, 250)
  const [adding, setAdding] = useState(false)
  const board = useLoad(
    () =>
      get('/api/apps/board', {
        params: {
          query: { page, page_size: pageSize, sort, order, q: q || undefined, status: (status || undefined) as 'deployed' | 'undeployed' | 'never' | undefined },
        },
      }),
    [workspace?.id, q, status, page, sort, order],
  )

  const setFilters = (changes: Record<string, string>) => {
    const next = new URLSearchParams(params)
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v)
      else next.delete(k)
    }
    if (!('page' in changes)) next.delete('page')
    setParams(next, { replace: true })
  }
  // The search box writes the address bar once typing pauses.
  useEffect(() => {
    if (debounced.trim() !== q) setFilters({ q: debounced.trim() })
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [debounced])
  const sortBy = (key: SortKey) => setFilters(key === sort ? { order: order === 'asc' ? 'desc' : 'asc' } : { sort: key, order: firstOrder[key] })

  const data = board.data
  const rows = data?.rows ?? []
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || pageSize))) : 1
  return (
    <Stack>
      <Group justify="space-between">
        <Group gap="xs">
          <Title order={2}>Apps</Title>
          {data && (
            <Badge variant="light" data-testid="apps-total">
              {count(data.total, 'app')}
            </Badge>
          )}
        </Group>
        <Button onClick={() => setAdding(!adding)} variant={adding ? 'default' : 'filled'} data-testid="new-app">
          {adding ? 'Close' : 'New app'}
        </Button>
      </Group>
      <Text size="sm" c="dimmed">
        Hosted apps: pages and a backend of SQL functions over the app's own database, built into releases and served at <Code>/a/…/</Code>.
      </Text>
      {adding && <NewApp />}
      <TextInput label="Search" placeholder="Name or description" value={search} onChange={(e) => setSearch(e.currentTarget.value)} w={280} data-testid="app-search" />
      <FacetChips name="Status" testid="app-status" facets={data?.facets.status ?? []} value={status} onChange={(v) => setFilters({ status: v })} />
      <ErrorNote error={board.error} />
      {board.loading && !data ? (
        <Loading label="Loading apps…" />
      ) : board.error ? null : rows.length === 0 ? (
        <Text c="dimmed" data-testid="apps-empty">
          {q || status ? 'No app matches.' : 'No apps yet: create one with New app.'}
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={720}>
          <Table striped highlightOnHover data-testid="app-list">
            <Table.Thead>
              <Table.Tr>
                <SortTh label="Name" column="name" sort={sort} order={order} onSort={sortBy} testid="app-sort" />
                <Table.Th>Deployment</Table.Th>
                <Table.Th>Installed</Table.Th>
                <SortTh label="Updated" column="updated_at" sort={sort} order={order} onSort={sortBy} testid="app-sort" />
                <SortTh label="Created" column="created_at" sort={sort} order={order} onSort={sortBy} testid="app-sort" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((a) => (
                <Table.Tr key={a.id} data-testid={`app-${a.name}`}>
                  <Table.Td>
                    <Anchor component={Link} to={`/apps/${a.id}`} data-testid="app-link">
                      {a.name}
                    </Anchor>
                    {a.description && (
                      <Text size="xs" c="dimmed" lineClamp={1}>
                        {a.description}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    {/* The document has deployment as an object, but the server answers null for an app never deployed. */}
                    <DeploymentBadge d={a.deployment} testid="app-deployment" />
                  </Table.Td>
                  <Table.Td>{a.installed ? 'yes' : '—'}</Table.Td>
                  <Table.Td>{when(a.updated_at)}</Table.Td>
                  <Table.Td>{when(a.created_at)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={(p) => setFilters({ page: String(p) })} data-testid="app-pages" />}
    </Stack>
  )
}

/** The create form: a name, a description, the manifest; the server's 400 (a manifest's problems) shows under it. */
function NewApp() {
  const navigate = useNavigate()
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [manifest, setManifest] = useState(starterManifest)
  const action = useAction()
  const create = async (e: React.FormEvent) => {
    e.preventDefault()
    const a = await action.run('create', () =>
      post('/api/apps', {
        body: { name: name.trim(), manifest_yaml: manifest, ...(description.trim() ? { description: description.trim() } : {}) },
      }),
    )
    if (a) navigate(`/apps/${a.id}`)
  }
  return (
    <Card withBorder>
      <form onSubmit={create} aria-label="New app">
        <Stack gap="xs">
          <Title order={4}>New app</Title>
          <TextInput label="Name" required maxLength={100} value={name} onChange={(e) => setName(e.currentTarget.value)} w={320} data-testid="new-app-name" />
          <Textarea
            label="Description"
            description="Optional"
            value={description}
            onChange={(e) => setDescription(e.currentTarget.value)}
            autosize
            minRows={1}
            maxLength={4000}
            data-testid="new-app-description"
          />
          <Textarea
            label="Manifest (YAML)"
            description={
              <>
                Validated against the schema at{' '}
                <Anchor href="/api/apps/manifest-schema" target="_blank" rel="noopener" size="xs">
                  /api/apps/manifest-schema
                </Anchor>
                : name, entry, routes, functions, resources, env.
              </>
            }
            required
            value={manifest}
            onChange={(e) => setManifest(e.currentTarget.value)}
            autosize
            minRows={4}
            maxRows={24}
            spellCheck={false}
            styles={mono}
            data-testid="new-app-manifest"
          />
          <Group>
            <Button type="submit" loading={action.busy === 'create'} disabled={!name.trim() || !manifest.trim()} data-testid="create-app">
              Create app
            </Button>
          </Group>
          <ErrorNote error={action.error} />
        </Stack>
      </form>
    </Card>
  )
}
