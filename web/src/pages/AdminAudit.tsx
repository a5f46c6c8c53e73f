// The owner console's audit tab: the append-only log of admin and billing
// changes as a board (search, action and target kind chips, sortable columns,
// pages). A row opens to its before and after snapshots side by side. There
// is nothing here to edit, delete or expire: the log only grows.
import { ActionIcon, Badge, Code, Group, Pagination, SimpleGrid, Stack, Table, Text, TextInput } from '@mantine/core'
import { useDebouncedValue } from '@mantine/hooks'
import { Fragment, useEffect, useState } from 'react'
import { get, type Schemas } from '../api'
import { FacetChips, SortTh, type Order } from '../board'
import { count, ErrorNote, Loading, useLoad, when } from '../ui'

type Entry = Schemas['AuditEntry']
type SortKey = 'created_at' | 'action' | 'target'

const pageSize = 50

// The direction a column starts in when first chosen: newest first for time,
// A to Z for the others.
const firstOrder: Record<SortKey, Order> = { created_at: 'desc', action: 'asc', target: 'asc' }

function snapshot(v: unknown): string {
  if (v === null || v === undefined) return 'null'
  return JSON.stringify(v, null, 2)
}

export function AuditTab() {
  const [search, setSearch] = useState('')
  const [debounced] = useDebouncedValue(search.trim(), 250)
  const [action, setAction] = useState('')
  const [targetKind, setTargetKind] = useState('')
  const [sort, setSort] = useState<SortKey>('created_at')
  const [order, setOrder] = useState<Order>('desc')
  const [page, setPage] = useState(1)
  const [open, setOpen] = useState<string | null>(null)

  // A new search, filter or sort starts again on the first page.
  useEffect(() => setPage(1), [debounced, action, targetKind, sort, order])

  const board = useLoad(
    () =>
      get('/api/admin/audit/board', {
        params: {
          query: {
            page,
            page_size: pageSize,
            sort,
            order,
            q: debounced || undefined,
            action: action || undefined,
            target_kind: targetKind || undefined,
          },
        },
      }),
    [debounced, action, targetKind, sort, order, page],
  )

  const sortBy = (key: SortKey) => {
    if (key === sort) setOrder(order === 'asc' ? 'desc' : 'asc')
    else {
      setSort(key)
      setOrder(firstOrder[key])
    }
  }

  const data = board.data
  const rows = data?.rows ?? []
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || pageSize))) : 1
  const filtered = Boolean(debounced || action || targetKind)
  return (
    <Stack>
      <Group gap="xs">
        <Text size="sm" c="dimmed">
          Every admin and billing change, with what it was before and after. The log only grows: nothing here edits, deletes or expires an entry.
        </Text>
        {data && (
          <Badge variant="light" data-testid="audit-total">
            {count(data.total, 'entry', 'entries')}
          </Badge>
        )}
      </Group>
      <TextInput
        label="Search"
        placeholder="Action, target or actor's email"
        value={search}
        onChange={(e) => setSearch(e.currentTarget.value)}
        w={320}
        data-testid="audit-search"
      />
      <FacetChips name="Action" testid="audit-action" facets={data?.facets.action ?? []} value={action} onChange={setAction} />
      <FacetChips name="Target" testid="audit-target-kind" facets={data?.facets.target_kind ?? []} value={targetKind} onChange={setTargetKind} />
      <ErrorNote error={board.error} />
      {board.loading && !data ? (
        <Loading label="Loading the audit log…" />
      ) : board.error ? null : rows.length === 0 ? (
        <Text c="dimmed" data-testid="audit-empty">
          {filtered ? 'No entry matches.' : 'Nothing has been recorded yet.'}
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={720}>
          <Table highlightOnHover data-testid="audit-list">
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={32} />
                <SortTh label="Time" column="created_at" sort={sort} order={order} onSort={sortBy} testid="audit-sort" />
                <Table.Th>Actor</Table.Th>
                <SortTh label="Action" column="action" sort={sort} order={order} onSort={sortBy} testid="audit-sort" />
                <SortTh label="Target" column="target" sort={sort} order={order} onSort={sortBy} testid="audit-sort" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((e) => (
                <Row key={e.id} entry={e} open={open === e.id} onToggle={() => setOpen(open === e.id ? null : e.id)} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={setPage} data-testid="audit-pages" />}
    </Stack>
  )
}


function Row({ entry: e, open, onToggle }: { entry: Entry; open: boolean; onToggle: () => void }) {
  return (
    <Fragment>
      <Table.Tr data-testid="audit-row" data-action={e.action} data-target-kind={e.target_kind} data-target-id={e.target_id} onClick={onToggle} style={{ cursor: 'pointer' }}>
        <Table.Td>
          <ActionIcon
            variant="subtle"
            size="sm"
            aria-label={open ? 'Hide the snapshots' : 'Show the snapshots'}
            aria-expanded={open}
            data-testid="audit-expand"
            onClick={(ev) => {
              ev.stopPropagation()
              onToggle()
            }}
          >
            {open ? '▾' : '▸'}
          </ActionIcon>
        </Table.Td>
        <Table.Td>{when(e.created_at)}</Table.Td>
        <Table.Td data-testid="audit-actor">
          {e.actor_email ?? (
            <Text span size="sm" c="dimmed">
              {e.actor_id ? 'deleted account' : 'system'}
            </Text>
          )}
        </Table.Td>
        <Table.Td>
          <Code>{e.action}</Code>
        </Table.Td>
        <Table.Td>
          <Text size="sm">
            {e.target_kind}{' '}
            <Text span size="xs" c="dimmed" ff="monospace">
              {e.target_id}
            </Text>
          </Text>
        </Table.Td>
      </Table.Tr>
      {open && (
        <Table.Tr data-testid="audit-detail">
          <Table.Td colSpan={5}>
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              <Stack gap={4}>
                <Text size="xs" fw={600} c="dimmed">
                  Before
                </Text>
                <Code block data-testid="audit-before">
                  {snapshot(e.before)}
                </Code>
              </Stack>
              <Stack gap={4}>
                <Text size="xs" fw={600} c="dimmed">
                  After
                </Text>
                <Code block data-testid="audit-after">
                  {snapshot(e.after)}
                </Code>
              </Stack>
            </SimpleGrid>
          </Table.Td>
        </Table.Tr>
      )}
    </Fragment>
  )
}
