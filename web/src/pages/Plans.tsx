// The public plans page (/plans): the active, public plans, cheapest first,
// for anyone, signed in or not. Prices are integer minor units, formatted
// like the owner console's plans tab.
import { Anchor, Badge, Button, Card, Container, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core'
import { Link } from 'react-router-dom'
import { get, type Schemas } from '../api'
import { price } from '../money'
import { ErrorNote, Loading, useLoad } from '../ui'

type Plan = Schemas['PublicPlan']

/** Included seats as text: "10 seats", "1 seat", "Unlimited seats". */
function seats(v: unknown): string {
  if (v === 'unlimited') return 'Unlimited seats'
  if (typeof v === 'number') return v === 1 ? '1 seat' : `${v} seats`
  return 'Seats on request'
}

export default function Plans() {
  const plans = useLoad(() => get('/api/plans'), [])
  const list: Plan[] = plans.data ?? []
  return (
    <Container size="lg" py="xl">
      <Stack gap="lg">
        <Group justify="space-between" align="flex-end">
          <Stack gap={4}>
            <Title order={1}>Slipway plans</Title>
            <Text c="dimmed">Hand work on your repositories to AI coding agents and automate the rest with workflows. Every plan runs on your own server.</Text>
          </Stack>
          <Button component={Link} to="/login" variant="light" data-testid="plans-sign-in">
            Sign in
          </Button>
        </Group>
        <ErrorNote error={plans.error} />
        {plans.loading && !plans.data ? (
          <Loading label="Loading the plans…" />
        ) : plans.error ? null : list.length === 0 ? (
          <Text c="dimmed" data-testid="plans-empty">
            No plan is offered at the moment.
          </Text>
        ) : (
          <SimpleGrid cols={{ base: 1, sm: 2, md: Math.min(3, list.length) }} data-testid="public-plans">
            {list.map((p) => (
              <Card key={p.id} withBorder shadow="sm" padding="lg" data-testid="public-plan" data-plan={p.id}>
                <Stack gap="xs">
                  <Group justify="space-between">
                    <Title order={3} data-testid="public-plan-name">
                      {p.name}
                    </Title>
                    {p.amount_cents === 0 && (
                      <Badge color="teal" variant="light">
                        free
                      </Badge>
                    )}
                  </Group>
                  <Text size="xl" fw={700} data-testid="public-plan-price">
                    {price(p.amount_cents, p.currency, p.interval)}
                  </Text>
                  <Text size="sm" c="dimmed" data-testid="public-plan-seats">
                    {seats(p.included_seats)} included
                  </Text>
                </Stack>
              </Card>
            ))}
          </SimpleGrid>
        )}
        <Text size="sm">
          Have an account?{' '}
          <Anchor component={Link} to="/login">
            Sign in
          </Anchor>
        </Text>
      </Stack>
    </Container>
  )
}
