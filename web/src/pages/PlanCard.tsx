// The organization's plan as a member sees it on the settings page: for the
// active workspace, each feature's value, what is used of it, and where the
// value came from (the plan, the Community default, or an override). There
// is no payment provider yet: changing the plan is an instance admin's job.
import { Badge, Card, Code, Group, Stack, Table, Text, Title } from '@mantine/core'
import { get, type Schemas } from '../api'
import { useSession } from '../session'
import { ErrorNote, Loading, useLoad } from '../ui'

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
        <Text size="sm" c="dimmed" data-testid="plan-upgrade">
          Ask your instance admin to change the plan.
        </Text>
      </Stack>
    </Card>
  )
}
