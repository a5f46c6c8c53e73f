// The organization's seats as the seat summary computes them: shown on the
// members page and, beside the plan, on the settings page.
import { Badge, Card, Group, Stack, Text } from '@mantine/core'
import type { Schemas } from '../api'
import { price } from '../money'

type SeatSummary = Schemas['SeatSummary']

/** What the organization's seats cost: the plan's included seats against the active members, the seats beyond them, the add-ons, and the monthly total. */
export function SeatsCard({ s }: { s: SeatSummary }) {
  const included = s.included_seats === 'unlimited' ? 'unlimited' : String(s.included_seats)
  const money = (cents: number) => price(cents, s.currency as Parameters<typeof price>[1], 'month')
  return (
    <Card withBorder data-testid="seat-summary">
      <Stack gap={4}>
        <Group justify="space-between">
          <Text fw={600}>Seats</Text>
          <Badge variant="light">{s.plan_name}</Badge>
        </Group>
        <Text size="sm" data-testid="seat-usage">
          {s.active_members} active {s.active_members === 1 ? 'member' : 'members'} of {included} included
          {s.suspended_members > 0 ? ` · ${s.suspended_members} suspended (no seat)` : ''}
        </Text>
        {s.overage_seats > 0 && (
          <Text size="sm" data-testid="seat-overage">
            {s.overage_seats} beyond the included: {money(s.overage_amount_cents)}
          </Text>
        )}
        {(s.add_ons ?? []).map((l) => (
          <Text size="sm" key={l.seat_type} data-testid="seat-addon" data-seat={l.seat_type}>
            {l.members} × {l.name}: {money(l.amount_cents)}
          </Text>
        ))}
        <Text size="sm" fw={500} data-testid="seat-mrr">
          In all {money(s.mrr_cents)}
        </Text>
      </Stack>
    </Card>
  )
}
