// The organization's plan as a member sees it on the settings page: for the
// active workspace, each feature's value, what is used of it, and where the
// value came from (the plan, the Community default, or an override); the
// organization's seats; then the upgrade path. On an instance that takes
// payments, the owner checks out a plan at Stripe and manages the
// subscription in Stripe's billing portal; without payments an instance
// admin changes the plan.
import { Alert, Badge, Button, Card, Code, Group, Stack, Table, Text, Title } from '@mantine/core'
import { useEffect } from 'react'
import { useSearchParams } from 'react-router-dom'
import { get, post, type Schemas } from '../api'
import { price } from '../money'
import { SeatsCard } from './SeatsCard'
import { useSession } from '../session'
import { ErrorNote, Loading, useAction, useLoad } from '../ui'

type Decision = Schemas['EntitlementDecision']
type Step = Schemas['DecisionStep']

/** An entitlement's value as text: a count, "unlimited", on or off, or the object's JSON. */
export function valueText(v: unknown): string {
  if (v === 'unlimited') return 'unlimited'
  if (typeof v === 'boolean') return v ? 'on' : 'off'
  if (typeof v === 'number') return String(v)
  if (v === null || v === undefined) return '—'
  return JSON.stringify(v)
}

const overrideScopes: Record<string, string> = {
  global: 'instance-wide override',
  workspace: 'override for this workspace',
  user: 'override for you',
  user_in_workspace: 'override for you in this workspace',
}

/** Where a decision's value came from: its last override or plan step. */
export function sourceText(chain: Step[]): string {
  const step = [...chain].reverse().find((s) => s.source !== 'usage')
  if (!step) return '—'
  switch (step.source) {
    case 'override':
      return overrideScopes[step.scope ?? ''] ?? 'override'
    case 'plan':
      return `the ${step.id} plan`
    case 'default':
      return 'Community default'
  }
  return step.source
}

function usageText(d: Decision): string | null {
  if (d.usage === null || d.usage === undefined) return null
  if (d.limit !== null && d.limit !== undefined) return `${d.usage} of ${d.limit}`
  return String(d.usage)
}

export function PlanCard() {
  const { workspace } = useSession()
  const list = useLoad(async () => (await get('/api/entitlements')) ?? [], [workspace?.id])
  const seats = useLoad(() => get('/organization/seat-summary'), [workspace?.id])
  const decisions = list.data ?? []
  const planID = decisions[0]?.plan_id
  return (
    <Card withBorder data-testid="plan-card">
      <Stack gap="xs">
        <Group justify="space-between">
          <Title order={4}>Plan</Title>
          {planID && (
            <Group gap={6}>
              <Text size="sm" c="dimmed">
                The organization is on
              </Text>
              <Badge variant="light" tt="none" data-testid="plan-id">
                {planID}
              </Badge>
            </Group>
          )}
        </Group>
        <ErrorNote error={list.error} />
        {list.loading && !list.data ? (
          <Loading label="Loading the plan…" />
        ) : (
          decisions.length > 0 && (
            <Table.ScrollContainer minWidth={520}>
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Feature</Table.Th>
                    <Table.Th>Value</Table.Th>
                    <Table.Th>Used</Table.Th>
                    <Table.Th>From</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {decisions.map((d) => {
                    const used = usageText(d)
                    const over = d.usage !== null && d.limit !== null && d.usage > d.limit
                    return (
                      <Table.Tr key={d.feature} data-testid="plan-feature" data-feature={d.feature}>
                        <Table.Td>
                          <Text size="sm">{d.name}</Text>
                          <Code fz="xs">{d.feature}</Code>
                        </Table.Td>
                        <Table.Td data-testid="plan-feature-value">{valueText(d.value)}</Table.Td>
                        <Table.Td data-testid="plan-feature-usage">
                          {used ? (
                            <Text size="sm" c={over ? 'red' : undefined}>
                              {used}
                            </Text>
                          ) : (
                            <Text size="sm" c="dimmed">
                              —
                            </Text>
                          )}
                        </Table.Td>
                        <Table.Td data-testid="plan-feature-source">
                          <Text size="sm">{sourceText(d.chain ?? [])}</Text>
                        </Table.Td>
                      </Table.Tr>
                    )
                  })}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )
        )}
        {seats.data && <SeatsCard s={seats.data} />}
        <Billing />
      </Stack>
    </Card>
  )
}

type Account = Schemas['Account']

/** The upgrade path: checkout and the billing portal, or the instance admin. */
function Billing() {
  const { workspace } = useSession()
  const [params] = useSearchParams()
  const checkout = params.get('checkout')
  const account = useLoad(async () => (await get('/organization/billing')) as Account, [workspace?.id])
  const action = useAction()
  const a = account.data
  // Back from Stripe's checkout: the plan changes when Stripe's event
  // arrives, usually within seconds; look again until it has.
  const waiting = checkout === 'done' && !!a && !a.subscribed
  useEffect(() => {
    if (!waiting) return
    const t = setInterval(account.reload, 2000)
    return () => clearInterval(t)
  }, [waiting, account.reload])
  const go = async (name: string, open: () => Promise<{ url: string } | undefined>) => {
    const link = await action.run(name, open)
    if (link?.url) window.location.assign(link.url)
  }
  if (!a) return <ErrorNote error={account.error} />
  const plans = a.plans ?? []
  if (!a.payments) {
    return (
      <Text size="sm" c="dimmed" data-testid="plan-upgrade">
        Ask your instance admin to change the plan.
      </Text>
    )
  }
  return (
    <Stack gap="xs" data-testid="billing" data-status={a.status} data-subscribed={String(a.subscribed)}>
      {waiting && (
        <Alert color="blue" data-testid="checkout-waiting">
          Thank you. The plan changes as soon as Stripe confirms the payment.
        </Alert>
      )}
      {checkout === 'canceled' && !a.subscribed && (
        <Alert color="gray" data-testid="checkout-canceled">
          The checkout was canceled; nothing was charged.
        </Alert>
      )}
      {a.subscribed ? (
        <Text size="sm" data-testid="plan-upgrade">
          Billed by Stripe ({a.status.replace('_', ' ')}). Change the plan, the payment method or cancel in the billing portal.
        </Text>
      ) : (
        <Text size="sm" data-testid="plan-upgrade">
          {a.can_manage ? 'Upgrade: subscribe to a plan, paid at Stripe.' : "The organization's owner can subscribe it to a plan."}
        </Text>
      )}
      {!a.subscribed && plans.length > 0 && (
        <Table>
          <Table.Tbody>
            {plans.map((p) => (
              <Table.Tr key={p.id} data-testid="billing-plan" data-plan={p.id}>
                <Table.Td>{p.name}</Table.Td>
                <Table.Td>{price(p.amount_cents, p.currency, p.interval)}</Table.Td>
                <Table.Td>{p.included_seats === 'unlimited' ? 'unlimited seats' : `${p.included_seats} seats included`}</Table.Td>
                <Table.Td align="right">
                  {a.can_manage && (
                    <Button
                      size="xs"
                      data-testid="billing-subscribe"
                      loading={action.busy === `checkout-${p.id}`}
                      disabled={!!action.busy || p.id === a.plan_id}
                      onClick={() => go(`checkout-${p.id}`, () => post('/organization/billing/checkout', { body: { plan_id: p.id } }))}
                    >
                      {p.id === a.plan_id ? 'Current plan' : 'Subscribe'}
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {a.can_manage && a.customer && (
        <Group>
          <Button
            variant="default"
            size="xs"
            data-testid="billing-portal"
            loading={action.busy === 'portal'}
            disabled={!!action.busy}
            onClick={() => go('portal', () => post('/organization/billing/portal'))}
          >
            Manage billing
          </Button>
        </Group>
      )}
      <ErrorNote error={action.error} />
    </Stack>
  )
}
