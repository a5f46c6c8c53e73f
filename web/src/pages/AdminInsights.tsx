// The owner console's read-only reports. Customers: every workspace grouped
// by its organization, with the organization's plan and subscription
// status, searched and paged by organization; the workspaces without
// organization data in one ungrouped bucket, last. SEO: the health of the
// public pages' metadata (sign-in and plans) as this server serves them.
import { Anchor, Badge, Card, Code, Group, Image, Pagination, RingProgress, SimpleGrid, Stack, Table, Text, TextInput, Title } from '@mantine/core'
import { useDebouncedValue } from '@mantine/hooks'
import { useEffect, useState } from 'react'
import { get, type Schemas } from '../api'
import { count, ErrorNote, Loading, useLoad, when } from '../ui'

type Customer = Schemas['Customer']
type CustomerWorkspace = Schemas['CustomerWorkspace']
type Check = Schemas['SEOCheck']

const pageSize = 25

const statusColor: Record<string, string> = {
  active: 'teal',
  trialing: 'blue',
  past_due: 'orange',
  unpaid: 'red',
  incomplete: 'yellow',
  canceled: 'gray',
  none: 'gray',
}

export function CustomersTab() {
  const [search, setSearch] = useState('')
  const [debounced] = useDebouncedValue(search.trim(), 250)
  const [page, setPage] = useState(1)
  // A new search starts again on the first page.
  useEffect(() => setPage(1), [debounced])
  const list = useLoad(() => get('/api/admin/customers', { params: { query: { q: debounced || undefined, page, page_size: pageSize } } }), [debounced, page])

  const data = list.data
  const orgs = data?.organizations ?? []
  const ungrouped = data?.ungrouped ?? []
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || pageSize))) : 1
  return (
    <Stack>
      <Group gap="xs">
        <Text size="sm" c="dimmed">
          Every workspace, grouped by the organization that owns it, with the organization's plan and subscription. Read-only: plans are changed
          in the plans tab.
        </Text>
        {data && (
          <Badge variant="light" data-testid="customers-total">
            {count(data.total, 'organization')}
          </Badge>
        )}
      </Group>
      <TextInput
        label="Search"
        placeholder="An organization's or a workspace's name"
        value={search}
        onChange={(e) => setSearch(e.currentTarget.value)}
        w={320}
        data-testid="customers-search"
      />
      <ErrorNote error={list.error} />
      {list.loading && !data ? (
        <Loading label="Loading the customers…" />
      ) : list.error ? null : (
        <>
          {orgs.length === 0 && (
            <Text c="dimmed" data-testid="customers-empty">
              {debounced ? 'No organization matches.' : 'No organization yet.'}
            </Text>
          )}
          {orgs.map((o) => (
            <Organization key={o.organization_id} org={o} />
          ))}
          {ungrouped.length > 0 && (
            <Card withBorder data-testid="customer-ungrouped">
              <Stack gap="xs">
                <Group gap="xs">
                  <Title order={5}>Without organization data</Title>
                  <Badge variant="light" color="gray">
                    {count(ungrouped.length, 'workspace')}
                  </Badge>
                </Group>
                <Workspaces workspaces={ungrouped} />
              </Stack>
            </Card>
          )}
        </>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={setPage} data-testid="customers-pages" />}
    </Stack>
  )
}

function Organization({ org: o }: { org: Customer }) {
  const workspaces = o.workspaces ?? []
  return (
    <Card withBorder data-testid="customer-org" data-org-name={o.name} data-org-id={o.organization_id}>
      <Stack gap="xs">
        <Group justify="space-between" wrap="wrap">
          <Group gap="xs">
            <Title order={5}>{o.name}</Title>
            <Text size="xs" c="dimmed" ff="monospace">
              {o.organization_id}
            </Text>
          </Group>
          <Group gap="xs">
            <Badge variant="outline" tt="none" data-testid="customer-plan" data-plan={o.plan_id} title="Plan">
              {o.plan_id}
            </Badge>
            <Badge
              color={statusColor[o.subscription_status] ?? 'gray'}
              variant="light"
              tt="none"
              data-testid="customer-status"
              data-status={o.subscription_status}
              title="Subscription status"
            >
              {o.subscription_status === 'none' ? 'no subscription' : o.subscription_status.replace('_', ' ')}
            </Badge>
            {o.provider !== 'none' && (
              <Badge color="gray" variant="outline" tt="none" title="Billed by">
                {o.provider}
              </Badge>
            )}
          </Group>
        </Group>
        <Text size="xs" c="dimmed">
          Since {when(o.created_at)} · {count(workspaces.length, 'workspace')}
        </Text>
        <Workspaces workspaces={workspaces} />
      </Stack>
    </Card>
  )
}

function Workspaces({ workspaces }: { workspaces: CustomerWorkspace[] }) {
  if (workspaces.length === 0)
    return (
      <Text size="sm" c="dimmed">
        No workspace.
      </Text>
    )
  return (
    <Table withRowBorders={false} verticalSpacing={4}>
      <Table.Tbody>
        {workspaces.map((w) => (
          <Table.Tr key={w.id} data-testid="customer-workspace" data-workspace-id={w.id}>
            <Table.Td>{w.name}</Table.Td>
            <Table.Td>
              <Text size="xs" c="dimmed" ff="monospace">
                {w.id}
              </Text>
            </Table.Td>
            <Table.Td>
              <Text size="xs" c="dimmed">
                created {when(w.created_at)}
              </Text>
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  )
}

const checkColor: Record<Check['status'], string> = { pass: 'teal', warn: 'yellow', fail: 'red' }

function scoreColor(score: number): string {
  return score >= 90 ? 'teal' : score >= 60 ? 'yellow' : 'red'
}

/** An address on the canonical base URL as a path of this server (the page's CSP loads images from its own origin only). */
function ownPath(url: string, base?: string | null): string {
  return base && url.startsWith(base + '/') ? url.slice(base.length) : url
}

export function SeoTab() {
  const report = useLoad(() => get('/api/admin/seo'), [])
  const r = report.data
  if (report.loading && !r) return <Loading />
  if (!r) return <ErrorNote error={report.error} />
  const checks = r.checks ?? []
  const passing = checks.filter((c) => c.status === 'pass').length
  return (
    <Stack data-testid="seo">
      <Text size="sm" c="dimmed">
        How the public pages (sign-in and plans) look to search engines and to sites that preview shared links: read from the files this server
        serves, its robots.txt and sitemap, and the public plans.
      </Text>
      <SimpleGrid cols={{ base: 1, sm: 2, md: 4 }}>
        <Card withBorder>
          <Group gap="sm" wrap="nowrap">
            <RingProgress
              size={72}
              thickness={7}
              sections={[{ value: r.score, color: scoreColor(r.score) }]}
              label={
                <Text ta="center" fw={700} size="sm" data-testid="seo-score" data-score={r.score}>
                  {r.score}
                </Text>
              }
            />
            <Stack gap={0}>
              <Text size="xs" c="dimmed">
                Score
              </Text>
              <Text size="sm">
                {passing} of {count(checks.length, 'check')} passing
              </Text>
            </Stack>
          </Group>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Canonical base URL
          </Text>
          {r.canonical_base_url ? (
            <Text fw={600} ff="monospace" size="sm" data-testid="seo-canonical">
              {r.canonical_base_url}
            </Text>
          ) : (
            <Text size="sm" c="dimmed" data-testid="seo-canonical">
              not set (<Code>PUBLIC_URL</Code>)
            </Text>
          )}
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Indexed routes
          </Text>
          <Group gap={4} data-testid="seo-routes">
            {(r.indexed_routes ?? []).map((p) => (
              <Code key={p}>{p}</Code>
            ))}
          </Group>
          <Text size="xs" c="dimmed" mt={6}>
            Locales
          </Text>
          <Group gap={4} data-testid="seo-locales">
            {(r.locales ?? []).map((l) => (
              <Badge key={l} variant="default" tt="none">
                {l}
              </Badge>
            ))}
          </Group>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Public plans
          </Text>
          <Text fw={600} data-testid="seo-plans">
            {r.public_plan_count}
          </Text>
          <Text size="xs" c="dimmed" mt={6}>
            Card type
          </Text>
          <Text size="sm" ff="monospace" data-testid="seo-card">
            {r.card_type || '—'}
          </Text>
        </Card>
      </SimpleGrid>
      <Card withBorder>
        <Group align="flex-start" wrap="wrap">
          {r.social_image ? (
            <>
              <Image src={ownPath(r.social_image.url, r.canonical_base_url)} alt="The social image" w={300} radius="sm" fit="contain" />
              <Stack gap={4}>
                <Text size="xs" c="dimmed">
                  Social image
                </Text>
                <Anchor href={r.social_image.url} target="_blank" rel="noreferrer" size="sm" ff="monospace">
                  {r.social_image.url}
                </Anchor>
                <Text fw={600} data-testid="seo-image" data-width={r.social_image.width} data-height={r.social_image.height}>
                  {r.social_image.width}×{r.social_image.height}
                </Text>
              </Stack>
            </>
          ) : (
            <Text size="sm" c="dimmed" data-testid="seo-image">
              The pages name no social image.
            </Text>
          )}
        </Group>
      </Card>
      <Title order={4}>Checks</Title>
      <Stack gap="xs" data-testid="seo-checks">
        {checks.map((c) => (
          <Group key={c.id} gap="sm" wrap="nowrap" align="flex-start" data-testid="seo-check" data-check={c.id} data-status={c.status}>
            <Badge color={checkColor[c.status]} variant="light" miw={56}>
              {c.status}
            </Badge>
            <Stack gap={0}>
              <Text size="sm" fw={600}>
                {c.name}
              </Text>
              <Text size="sm" c="dimmed">
                {c.detail}
              </Text>
            </Stack>
          </Group>
        ))}
      </Stack>
    </Stack>
  )
}

const reconciliation: Record<string, { color: string; text: string }> = {
  ok: { color: 'teal', text: 'Every event received is applied.' },
  pending: { color: 'yellow', text: 'Some events wait to be applied; they are retried every minute.' },
  attention: { color: 'red', text: 'An event has waited over five minutes: its organization or its price is not known here yet.' },
  not_configured: { color: 'gray', text: 'No payment provider is configured (STRIPE_WEBHOOK_SECRET): admins assign plans.' },
}

/** The queues tab: the payment provider's events, read-only (no requeue, no replay). */
export function QueuesTab() {
  const q = useLoad(() => get('/api/admin/queues'), [])
  if (q.loading && !q.data) return <Loading />
  const d = q.data
  const r = reconciliation[d?.reconciliation_status ?? 'ok']
  return (
    <Stack data-testid="queues">
      <ErrorNote error={q.error} />
      {d && (
        <>
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <Card withBorder>
              <Text size="sm" c="dimmed">
                Events received
              </Text>
              <Title order={3} data-testid="queues-total">
                {d.total_received}
              </Title>
            </Card>
            <Card withBorder>
              <Text size="sm" c="dimmed">
                Pending
              </Text>
              <Title order={3} data-testid="queues-pending">
                {d.pending}
              </Title>
              {d.oldest_pending_at && (
                <Text size="xs" c="dimmed">
                  oldest {when(d.oldest_pending_at)}
                </Text>
              )}
            </Card>
            <Card withBorder>
              <Text size="sm" c="dimmed">
                Reconciliation
              </Text>
              <Badge color={r.color} size="lg" data-testid="queues-status">
                {d.reconciliation_status.replace('_', ' ')}
              </Badge>
            </Card>
          </SimpleGrid>
          <Text size="sm" c="dimmed">
            {r.text}
          </Text>
        </>
      )}
    </Stack>
  )
}
