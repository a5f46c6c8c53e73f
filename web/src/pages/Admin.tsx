import { Badge, Button, Card, Code, Group, Pagination, SimpleGrid, Stack, Table, Tabs, Text, Title } from '@mantine/core'
import { useState } from 'react'
import { Navigate, useSearchParams } from 'react-router-dom'
import { del, get, post, type Schemas } from '../api'
import { useSession } from '../session'
import { AuditTab } from './AdminAudit'
import { ErrorPageTab } from './AdminErrorPage'
import { OverridesTab, PlansTab } from './AdminBilling'
import { CustomersTab, QueuesTab, SeoTab } from './AdminInsights'
import { TemplatesTab } from './AdminTemplates'
import { MarketplaceReviewTab, Sources as MarketplaceSourcesTab } from './Marketplace'
import { PayoutsTab } from './AdminPayouts'
import { Confirm, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Pending = Schemas['PendingUser']
type Profile = Schemas['Profile']

// The owner console's tabs built so far; an unknown or absent tab shows the first.
const tabs = [
  { key: 'users', label: 'Users' },
  { key: 'features', label: 'Features' },
  { key: 'seo', label: 'SEO' },
  { key: 'plans', label: 'Plans' },
  { key: 'overrides', label: 'Overrides' },
  { key: 'templates', label: 'Mail templates' },
  { key: 'customers', label: 'Customers' },
  { key: 'queues', label: 'Queues' },
  { key: 'error-page', label: 'Error page' },
  { key: 'audit', label: 'Audit' },
  { key: 'marketplace-review', label: 'Marketplace review' },
  { key: 'marketplace-sources', label: 'Marketplace sources' },
  { key: 'payouts', label: 'Payouts' },
] as const
type TabKey = (typeof tabs)[number]['key']

function tabOf(v: string | null): TabKey {
  return tabs.find((t) => t.key === v)?.key ?? 'users'
}

/** The owner console (/admin/?tab=…): instance-wide administration, for instance admins only. */
export default function Admin() {
  const { me } = useSession()
  const [params, setParams] = useSearchParams()
  const tab = tabOf(params.get('tab'))
  // Not a security boundary: every /api/admin call is refused to non-admins anyway.
  if (me && !me.is_admin) return <Navigate to="/settings" replace />
  return (
    <Stack>
      <Title order={2}>Owner console</Title>
      <Tabs value={tab} onChange={(v) => setParams({ tab: tabOf(v) }, { replace: true })} keepMounted={false}>
        <Tabs.List>
          {tabs.map((t) => (
            <Tabs.Tab key={t.key} value={t.key} data-testid={`tab-${t.key}`}>
              {t.label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        <Tabs.Panel value="users" pt="md">
          <UsersTab />
        </Tabs.Panel>
        <Tabs.Panel value="features" pt="md">
          <FeaturesTab />
        </Tabs.Panel>
        <Tabs.Panel value="seo" pt="md">
          <SeoTab />
        </Tabs.Panel>
        <Tabs.Panel value="plans" pt="md">
          <PlansTab />
        </Tabs.Panel>
        <Tabs.Panel value="overrides" pt="md">
          <OverridesTab />
        </Tabs.Panel>
        <Tabs.Panel value="templates" pt="md">
          <TemplatesTab />
        </Tabs.Panel>
        <Tabs.Panel value="customers" pt="md">
          <CustomersTab />
        </Tabs.Panel>
        <Tabs.Panel value="queues" pt="md">
          <QueuesTab />
        </Tabs.Panel>
        <Tabs.Panel value="error-page" pt="md">
          <ErrorPageTab />
        </Tabs.Panel>
        <Tabs.Panel value="marketplace-review" pt="md">
          <MarketplaceReviewTab />
        </Tabs.Panel>
        <Tabs.Panel value="marketplace-sources" pt="md">
          <MarketplaceSourcesTab />
        </Tabs.Panel>
        <Tabs.Panel value="payouts" pt="md">
          <PayoutsTab />
        </Tabs.Panel>
        <Tabs.Panel value="audit" pt="md">
          <AuditTab />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  )
}

const pageSize = 100

/** Approval of accounts: the pending ones first, then everyone. No control here grants admin. */
function UsersTab() {
  const pending = useLoad(() => get('/api/admin/users/pending', { params: { query: { limit: 500 } } }), [])
  const [page, setPage] = useState(1)
  const all = useLoad(() => get('/api/admin/users', { params: { query: { limit: pageSize, offset: (page - 1) * pageSize } } }), [page])
  const action = useAction()
  const busy = action.busy
  const [rejecting, setRejecting] = useState<Pending | null>(null)

  const decide = async (u: Pending, verdict: 'approve' | 'reject') => {
    const done = await action.run(`${verdict}-${u.id}`, async () => {
      if (verdict === 'approve') await post('/api/admin/users/{user_id}/approve', { params: { path: { user_id: u.id } } })
      else await del('/api/admin/users/{user_id}/reject', { params: { path: { user_id: u.id } } })
      return true
    })
    if (done) await Promise.all([pending.reload(), all.reload()])
  }

  const users = pending.data?.users ?? []
  const total = all.data?.total ?? 0
  return (
    <Stack>
      <Group gap="xs">
        <Title order={4}>Waiting for approval</Title>
        <Badge variant="light">{pending.data?.total ?? 0}</Badge>
      </Group>
      <ErrorNote error={action.error} />
      <ErrorNote error={pending.error} />
      {pending.loading && !pending.data ? (
        <Loading />
      ) : users.length === 0 ? (
        !pending.error && <Text c="dimmed" data-testid="no-pending">No account is waiting.</Text>
      ) : (
        <Table striped highlightOnHover data-testid="pending-users">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Email</Table.Th>
              <Table.Th>Name</Table.Th>
              <Table.Th>Registered</Table.Th>
              <Table.Th>Invited by</Table.Th>
              <Table.Th>Decision</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {users.map((u) => (
              <Table.Tr key={u.id} data-testid={`pending-${u.email}`}>
                <Table.Td>
                  {u.email}
                  {u.email_verified && (
                    <Badge size="xs" variant="outline" color="teal" ml={6}>
                      verified
                    </Badge>
                  )}
                </Table.Td>
                <Table.Td>{u.display_name}</Table.Td>
                <Table.Td>{when(u.created_at)}</Table.Td>
                <Table.Td>
                  {(u.invited_by ?? []).length === 0 ? (
                    <Text size="sm" c="dimmed">
                      nobody (signed up)
                    </Text>
                  ) : (
                    <Group gap={4}>
                      {(u.invited_by ?? []).map((o) => (
                        <Badge key={o} variant="default" size="sm">
                          {o}
                        </Badge>
                      ))}
                    </Group>
                  )}
                </Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    <Button size="compact-sm" loading={busy === `approve-${u.id}`} disabled={!!busy} onClick={() => decide(u, 'approve')} data-testid={`approve-${u.email}`}>
                      Approve
                    </Button>
                    <Button
                      size="compact-sm"
                      color="red"
                      variant="light"
                      loading={busy === `reject-${u.id}`}
                      disabled={!!busy}
                      onClick={() => setRejecting(u)}
                      data-testid={`reject-${u.email}`}
                    >
                      Reject
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}

      <Group gap="xs" mt="md">
        <Title order={4}>All users</Title>
        <Badge variant="light">{total}</Badge>
      </Group>
      <ErrorNote error={all.error} />
      {all.loading && !all.data ? <Loading /> : <UserTable users={all.data?.users ?? []} />}
      {total > pageSize && <Pagination total={Math.ceil(total / pageSize)} value={page} onChange={setPage} />}

      <Confirm
        item={rejecting}
        title={(u) => `Reject ${u.email}?`}
        message={() => 'The account is deleted with its sessions and its personal organization. There is no undo; the person may register again.'}
        action={() => 'Reject and delete'}
        testid="confirm-reject"
        onCancel={() => setRejecting(null)}
        onConfirm={(u) => decide(u, 'reject')}
      />
    </Stack>
  )
}

function UserTable({ users }: { users: Profile[] }) {
  return (
    <Table striped highlightOnHover data-testid="all-users">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Email</Table.Th>
          <Table.Th>Name</Table.Th>
          <Table.Th>State</Table.Th>
          <Table.Th>Registered</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {users.map((u) => (
          <Table.Tr key={u.id} data-testid={`user-${u.email}`}>
            <Table.Td>{u.email}</Table.Td>
            <Table.Td>{u.display_name}</Table.Td>
            <Table.Td>
              <Group gap={4}>
                <Badge color={u.approved ? 'teal' : 'yellow'} variant="light">
                  {u.approved ? 'approved' : 'pending'}
                </Badge>
                {u.is_admin && (
                  <Badge color="grape" variant="light">
                    instance admin
                  </Badge>
                )}
                {u.email_verified && (
                  <Badge color="gray" variant="outline">
                    email verified
                  </Badge>
                )}
              </Group>
            </Table.Td>
            <Table.Td>{when(u.created_at)}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  )
}

/** Which optional, secret-backed features the instance has configured: env var names, never values. */
function FeaturesTab() {
  const report = useLoad(() => get('/api/admin/feature-availability'), [])
  const r = report.data
  if (report.loading && !r) return <Loading />
  if (!r) return <ErrorNote error={report.error} />
  return (
    <Stack data-testid="features">
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Secret backend
          </Text>
          <Group gap="xs">
            <Text fw={600} ff="monospace" data-testid="features-backend">
              {r.secret_backend}
            </Text>
            {r.boot_critical && (
              <Badge color="orange" variant="light" title="The server refuses to start when the secret backend's settings are wrong, and every secret goes through it" data-testid="features-boot-critical">
                boot-critical
              </Badge>
            )}
          </Group>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Edition
          </Text>
          <Text fw={600} data-testid="features-edition">
            {r.edition}
          </Text>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Features configured
          </Text>
          <Group gap="xs">
            <Text fw={600} data-testid="features-count">
              {r.available} of {r.total} available
            </Text>
            <Badge color="gray" variant="light" data-testid="features-unavailable">
              {r.unavailable} unavailable
            </Badge>
          </Group>
        </Card>
      </SimpleGrid>
      <Text size="sm" c="dimmed">
        What the server's environment turns on; set the variables and restart to change it. Values are never shown here.
      </Text>
      <Table.ScrollContainer minWidth={640}>
        <Table striped data-testid="feature-rows">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Category</Table.Th>
              <Table.Th>Feature</Table.Th>
              <Table.Th>Environment variables</Table.Th>
              <Table.Th w={130}>Status</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(r.features ?? []).map((f) => (
              <Table.Tr key={f.name} data-testid={`feature-${f.name}`} data-available={String(f.available)}>
                <Table.Td>{f.category}</Table.Td>
                <Table.Td>
                  {f.name}
                  {f.boot_critical && (
                    <Badge size="xs" color="orange" variant="outline" ml={6}>
                      boot-critical
                    </Badge>
                  )}
                </Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    {(f.env_vars ?? []).map((v) => (
                      <Code key={v}>{v}</Code>
                    ))}
                  </Group>
                </Table.Td>
                <Table.Td>
                  <Badge color={f.available ? 'teal' : 'gray'} variant="light" tt="none" miw={100}>
                    {f.available ? 'Available' : 'Unavailable'}
                  </Badge>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </Stack>
  )
}
