// Pieces shared by the console's board pages: facet chips and sortable
// column headers.
import { Chip, Group, Table, Text, UnstyledButton } from '@mantine/core'
import type { Schemas } from './api'

type Facet = Schemas['Facet']

/**
 * One facet's chips: All, then each value with its count. A chosen value
 * the current search no longer finds stays visible, to undo it. The test
 * ids sit on the chips' wrappers (the input itself is hidden).
 */
export function FacetChips(props: { name: string; testid: string; facets: Facet[]; value: string; onChange: (v: string) => void }) {
  const { name, testid, facets, value, onChange } = props
  return (
    <Group gap="xs" role="group" aria-label={name}>
      <Text size="sm" fw={500} w={60}>
        {name}
      </Text>
      <Chip.Group value={value || 'all'} onChange={(v) => onChange(v === 'all' ? '' : String(v))}>
        <Chip value="all" size="xs" wrapperProps={{ 'data-testid': `${testid}-all` }}>
          All
        </Chip>
        {facets.map((f) => (
          <Chip key={f.value} value={f.value} size="xs" wrapperProps={{ 'data-testid': `${testid}-${f.value}` }}>
            {f.label} ({f.count})
          </Chip>
        ))}
        {value && !facets.some((f) => f.value === value) && (
          <Chip value={value} size="xs" wrapperProps={{ 'data-testid': `${testid}-${value}` }}>
            {value} (0)
          </Chip>
        )}
      </Chip.Group>
    </Group>
  )
}

export type Order = 'asc' | 'desc'

/** A column header that sorts by its column; a second click turns the order. */
export function SortTh<K extends string>(props: { label: string; column: K; sort: K; order: Order; onSort: (k: K) => void; testid: string }) {
  const { label, column, sort, order, onSort, testid } = props
  const active = sort === column
  return (
    <Table.Th aria-sort={active ? (order === 'asc' ? 'ascending' : 'descending') : 'none'}>
      <UnstyledButton onClick={() => onSort(column)} data-testid={`${testid}-${column}`} fw={600} fz="sm">
        {label} {active ? (order === 'asc' ? '▲' : '▼') : ''}
      </UnstyledButton>
    </Table.Th>
  )
}
