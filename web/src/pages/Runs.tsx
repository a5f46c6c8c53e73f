import { Anchor, Badge, Chip, Group, Pagination, Stack, Table, Text, Title } from '@mantine/core'
import { useEffect } from 'react'
import { Link, useSearchParams } from 'react-router-dom'
import { get, type Query, type Schemas } from '../api'
import { watchTopic } from '../live'
import { useSession } from '../session'
import { ErrorNote, Loading, Status, useLoad, when, count } from '../ui'

type Filter = Query<'/api/runs/board'>
type Run = Schemas['Run']
type Facet = Schemas['Facet']

const pageSize = 50

/** The workspace's runs: status and kind facets as filter chips, live. */
export default function Runs() {
  const { workspace } = useSession()
  const [params, setParams] = useSearchParams()
  const status = params.get('status') ?? ''
  const kind = params.get('kind') ?? ''
  const page = Math.max(1, Number(params.get('page')) || 1)

  const board = useLoad(() => {
    return get('/api/runs/board', { params: { query: { page, page_size: pageSize, status: (status || undefined) as Filter['status'], kind: (kind || undefined) as Filter['kind'] } } })
  }, [workspace?.id, status, kind, page])

  // Live: a run starting or ending anywhere in the workspace refetches the page.
  const { reload } = board
  useEffect(() => (workspace ? watchTopic('runs', workspace.id, () => reload()) : undefined), [workspace, reload])

  const setFilter = (k: string, v: string) => {
    const next = new URLSearchParams(params)
    if (v) next.set(k, v)
    else next.delete(k)
    if (k !== 'page') next.delete('page')
    setParams(next, { replace: true })
  }

  const data = board.data
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || pageSize))) : 1
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Runs</Title>
        {data && <Badge variant="light">{count(data.total, 'run')}</Badge>}
      </Group>
      <FacetChips label="Status" name="status" facets={data?.facets.status} value={status} onChange={(v) => setFilter('status', v)} />
      <FacetChips label="Kind" name="kind" facets={data?.facets.kind} value={kind} onChange={(v) => setFilter('kind', v)} />
      <ErrorNote error={board.error} />
      {board.loading && !data ? (
        <Loading />
      ) : board.error ? null : (data?.rows ?? []).length === 0 ? (
        <Text c="dimmed" data-testid="runs-empty">
          No runs match.
        </Text>
      ) : (
        <RunTable runs={data?.rows ?? []} />
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={(p) => setFilter('page', String(p))} data-testid="runs-pages" />}
    </Stack>
  )
}

/** One facet as a row of single-choice chips, "All" first; counts come from the board. */
function FacetChips({ label, name, facets, value, onChange }: { label: string; name: string; facets?: Facet[] | null; value: string; onChange: (v: string) => void }) {
  return (
    <Group gap="xs" role="group" aria-label={label}>
      <Text size="sm" fw={500} w={50}>
        {label}
      </Text>
      <Chip.Group value={value || 'all'} onChange={(v) => onChange(v === 'all' ? '' : v)}>
        <Chip value="all" size="xs" data-testid={`${name}-all`}>
          All
        </Chip>
        {(facets ?? []).map((f) => (
          <Chip key={f.value} value={f.value} size="xs" data-testid={`${name}-${f.value}`}>
            {f.label} ({f.count})
          </Chip>
        ))}
      </Chip.Group>
    </Group>
  )
}

function RunTable({ runs }: { runs: Run[] }) {
  return (
    <Table striped highlightOnHover data-testid="runs-table">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Run</Table.Th>
          <Table.Th>Kind</Table.Th>
          <Table.Th>Status</Table.Th>
          <Table.Th>Task</Table.Th>
          <Table.Th>Attempt</Table.Th>
          <Table.Th>Backend</Table.Th>
          <Table.Th>Exit</Table.Th>
          <Table.Th>Started</Table.Th>
          <Table.Th>Finished</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {runs.map((r) => (
          <Table.Tr key={r.id} data-testid={`run-${r.id}`}>
            <Table.Td>
              <Anchor component={Link} to={`/runs/${r.id}`} ff="monospace" size="sm">
                {r.id.slice(-12)}
              </Anchor>
              {r.parent_run_id && (
                <Text span size="xs" c="dimmed" ml={4}>
                  (child)
                </Text>
              )}
            </Table.Td>
            <Table.Td>{r.kind}</Table.Td>
            <Table.Td>
              <Status status={r.status} />
            </Table.Td>
            <Table.Td>
              {r.task_id ? (
                <Anchor component={Link} to={`/tasks/${r.task_id}`} size="sm">
                  task
                </Anchor>
              ) : (
                '—'
              )}
            </Table.Td>
            <Table.Td>{r.attempt}</Table.Td>
            <Table.Td>{r.backend || '—'}</Table.Td>
            <Table.Td>{r.exit_code ?? '—'}</Table.Td>
            <Table.Td>{when(r.created_at)}</Table.Td>
            <Table.Td>{when(r.finished_at)}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  )
}
