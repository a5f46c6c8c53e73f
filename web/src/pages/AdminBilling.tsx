// The owner console's plans and overrides tabs. Plans: every billing plan,
// inactive and non-public included, each row an editable draft saved on its
// own (every save is audited with before and after). Overrides: a grant
// form, and the board of grants above (or below) the plan; revoking stamps a
// grant revoked and keeps its row. Money is in integer minor units: an
// amount is typed as a decimal and converted to cents from its digits, never
// through a float.
import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Modal,
  NativeSelect,
  Pagination,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core'
import { useDebouncedValue } from '@mantine/hooks'
import { Fragment, useEffect, useState } from 'react'
import { get, post, put, type Schemas } from '../api'
import { FacetChips, SortTh, type Order } from '../board'
import { Confirm, count, ErrorNote, Loading, useAction, useLoad, when } from '../ui'
import { centsToDecimal, decimalToCents, price } from '../money'
import { valueText } from './PlanCard'

type Plan = Schemas['BillingPlan']
type PlanUpdate = Schemas['PlanUpdate']
type Feature = Schemas['EntitlementFeature']
type Override = Schemas['Override']
type OverrideCreate = Schemas['OverrideCreate']
type Currency = Plan['currency']
type Interval = Plan['interval']

const currencies: Currency[] = ['EUR', 'USD', 'GBP']
const intervals: { value: Interval; label: string }[] = [
  { value: 'month', label: 'Monthly' },
  { value: 'year', label: 'Yearly' },
  { value: 'one_time', label: 'One time' },
  { value: 'custom', label: 'Custom' },
]

// ---- plans ----

type Draft = {
  name: string
  amount: string
  currency: Currency
  interval: Interval
  seats: string
  unlimited: boolean
  active: boolean
  public: boolean
}

function draftOf(p: Plan): Draft {
  return {
    name: p.name,
    amount: centsToDecimal(p.amount_cents),
    currency: p.currency,
    interval: p.interval,
    seats: typeof p.included_seats === 'number' ? String(p.included_seats) : '',
    unlimited: p.included_seats === 'unlimited',
    active: p.active,
    public: p.public,
  }
}

/** The seats a draft asks for: "unlimited", a number, or the text as typed (the server says what is wrong with it). */
function seatsOf(d: Draft): unknown {
  if (d.unlimited) return 'unlimited'
  const t = d.seats.trim()
  return /^\d{1,15}$/.test(t) ? Number(t) : t
}

/** What a draft changes of its plan: only the fields that differ. */
function changes(p: Plan, d: Draft): PlanUpdate {
  const out: PlanUpdate = {}
  if (d.name !== p.name) out.name = d.name
  const cents = decimalToCents(d.amount)
  if (cents !== null && cents !== p.amount_cents) out.amount_cents = cents
  if (d.currency !== p.currency) out.currency = d.currency
  if (d.interval !== p.interval) out.interval = d.interval
  if (d.active !== p.active) out.active = d.active
  if (d.public !== p.public) out.public = d.public
  const seats = seatsOf(d)
  if (seats !== p.included_seats) out.included_seats = seats
  return out
}

export function PlansTab() {
  const plans = useLoad(async () => (await get('/api/admin/plans')) ?? [], [])
  const features = useLoad(async () => (await get('/api/admin/entitlement-features')) ?? [], [])
  const name = (key: string) => features.data?.find((f) => f.key === key)?.name ?? key
  const saved = (p: Plan) => plans.setData((list) => (list ?? []).map((q) => (q.id === p.id ? p : q)))
  const list = plans.data ?? []
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        Every billing plan, inactive and non-public ones too. A change applies at once to every organization on the plan, and each save is recorded in the audit log with
        the plan before and after. Amounts are typed in the currency's units (49.00) and kept in cents.
      </Text>
      <ErrorNote error={plans.error || features.error} />
      {plans.loading && !plans.data ? (
        <Loading label="Loading the plans…" />
      ) : (
        list.length > 0 && (
          <Table.ScrollContainer minWidth={1180}>
            <Table verticalSpacing="sm" data-testid="plans">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Plan</Table.Th>
                  <Table.Th>Price</Table.Th>
                  <Table.Th>Included seats</Table.Th>
                  <Table.Th>Visibility</Table.Th>
                  <Table.Th>Other entitlements</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.map((p) => (
                  <PlanRow key={p.id} plan={p} name={name} onSaved={saved} />
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )
      )}
      {list.length > 0 && <AssignPlan plans={list} />}
    </Stack>
  )
}

/**
 * Puts an organization on a plan without a payment provider (audited). An
 * organization Stripe bills follows its subscription: the server refuses
 * (409) and the message says so.
 */
function AssignPlan({ plans }: { plans: Plan[] }) {
  const [search, setSearch] = useState('')
  const [debounced] = useDebouncedValue(search.trim(), 250)
  const found = useLoad(() => get('/api/admin/customers', { params: { query: { q: debounced || undefined, page_size: 50 } } }), [debounced])
  const orgs = found.data?.organizations ?? []
  const [org, setOrg] = useState('')
  const [plan, setPlan] = useState(plans[0]?.id ?? '')
  const [done, setDone] = useState('')
  const action = useAction()
  const chosen = orgs.find((o) => o.organization_id === org)
  const assign = async () => {
    setDone('')
    const r = await action.run('assign', () => put('/api/admin/organizations/{organization_id}/plan', { params: { path: { organization_id: org } }, body: { plan_id: plan } }))
    if (r) {
      setDone(`${chosen?.name ?? org} is on ${plans.find((p) => p.id === plan)?.name ?? plan}.`)
      await found.reload()
    }
  }
  return (
    <Card withBorder data-testid="assign-plan">
      <Stack gap="xs">
        <Title order={5}>Put an organization on a plan</Title>
        <Group align="end" wrap="wrap">
          <TextInput label="Find" placeholder="An organization's or a workspace's name" value={search} onChange={(e) => setSearch(e.currentTarget.value)} w={260} data-testid="assign-search" />
          <NativeSelect
            label="Organization"
            value={org}
            onChange={(e) => setOrg(e.currentTarget.value)}
            data={[{ value: '', label: 'Choose…' }, ...orgs.map((o) => ({ value: o.organization_id, label: `${o.name} (now ${o.plan_id})` }))]}
            w={320}
            data-testid="assign-org"
          />
          <NativeSelect label="Plan" value={plan} onChange={(e) => setPlan(e.currentTarget.value)} data={plans.map((p) => ({ value: p.id, label: p.name }))} data-testid="assign-plan-id" />
          <Button onClick={assign} disabled={!org || !plan} loading={action.busy === 'assign'} data-testid="assign-submit">
            Assign
          </Button>
        </Group>
        <ErrorNote error={found.error || action.error} />
        {done && (
          <Text size="sm" c="teal" data-testid="assign-done">
            {done}
          </Text>
        )}
      </Stack>
    </Card>
  )
}

function PlanRow({ plan, name, onSaved }: { plan: Plan; name: (key: string) => string; onSaved: (p: Plan) => void }) {
  const [syncing, setSyncing] = useState(false)
  const [draft, setDraft] = useState<Draft>(() => draftOf(plan))
  const [saved, setSaved] = useState(false)
  const [problem, setProblem] = useState('')
  // The last save's error shows until the draft is edited again.
  const [failed, setFailed] = useState(false)
  const action = useAction()
  const diff = changes(plan, draft)
  const cents = decimalToCents(draft.amount)
  // An amount that is no amount counts as a change: Save then says what is wrong.
  const changed = Object.keys(diff).length > 0 || cents === null

  const edit = (patch: Partial<Draft>) => {
    setDraft((d) => ({ ...d, ...patch }))
    setSaved(false)
    setProblem('')
    setFailed(false)
  }
  const save = async () => {
    setSaved(false)
    setProblem('')
    setFailed(false)
    if (cents === null) {
      setProblem('The amount is a number with at most two decimals, such as 49 or 49.90.')
      return
    }
    const p = await action.run('save', () => put('/api/admin/plans/{plan_id}', { params: { path: { plan_id: plan.id } }, body: diff }))
    if (p) {
      onSaved(p)
      setDraft(draftOf(p))
      setSaved(true)
    } else setFailed(true)
  }

  const others = Object.entries(plan.entitlements ?? {}).filter(([k]) => k !== 'users.max')
  const error = Boolean(problem || (failed && action.error))
  return (
    <Fragment>
      <Table.Tr data-testid="plan-row" data-plan={plan.id} data-changed={String(changed)} style={error ? { borderBottom: 'none' } : undefined}>
        <Table.Td miw={200}>
          <Stack gap={4}>
            <TextInput
              aria-label={`Name of the plan ${plan.id}`}
              value={draft.name}
              onChange={(e) => edit({ name: e.currentTarget.value })}
              maxLength={100}
              size="xs"
              data-testid="plan-name"
            />
            <Group gap={6}>
              <Code fz="xs" data-testid="plan-id">
                {plan.id}
              </Code>
              {!plan.active && (
                <Badge size="xs" color="gray" variant="light">
                  inactive
                </Badge>
              )}
            </Group>
          </Stack>
        </Table.Td>
        <Table.Td miw={260}>
          <Stack gap={4}>
            <Group gap={6} wrap="nowrap">
              <TextInput
                aria-label={`Amount of the plan ${plan.id}`}
                value={draft.amount}
                onChange={(e) => edit({ amount: e.currentTarget.value })}
                inputMode="decimal"
                size="xs"
                w={100}
                error={cents === null}
                data-testid="plan-amount"
              />
              <NativeSelect
                aria-label={`Currency of the plan ${plan.id}`}
                data={currencies}
                value={draft.currency}
                onChange={(e) => edit({ currency: e.currentTarget.value as Currency })} // one of currencies
                size="xs"
                w={76}
                data-testid="plan-currency"
              />
              <NativeSelect
                aria-label={`Billing interval of the plan ${plan.id}`}
                data={intervals}
                value={draft.interval}
                onChange={(e) => edit({ interval: e.currentTarget.value as Interval })} // one of intervals
                size="xs"
                w={100}
                data-testid="plan-interval"
              />
            </Group>
            <Text size="xs" c="dimmed" data-testid="plan-price">
              {cents === null ? 'Not an amount' : `${price(cents, draft.currency, draft.interval)} · ${count(cents, 'cent')}`}
            </Text>
          </Stack>
        </Table.Td>
        <Table.Td miw={170}>
          <Group gap={6} wrap="nowrap">
            <TextInput
              aria-label={`Included seats of the plan ${plan.id}`}
              value={draft.unlimited ? '' : draft.seats}
              placeholder={draft.unlimited ? '∞' : undefined}
              onChange={(e) => edit({ seats: e.currentTarget.value })}
              disabled={draft.unlimited}
              inputMode="numeric"
              size="xs"
              w={70}
              data-testid="plan-seats"
            />
            <Switch
              label="Unlimited"
              size="xs"
              checked={draft.unlimited}
              onChange={(e) => edit({ unlimited: e.currentTarget.checked })}
              data-testid="plan-seats-unlimited"
            />
          </Group>
        </Table.Td>
        <Table.Td>
          <Stack gap={6}>
            <Switch label="Active" size="xs" checked={draft.active} onChange={(e) => edit({ active: e.currentTarget.checked })} data-testid="plan-active" />
            <Switch label="Public" size="xs" checked={draft.public} onChange={(e) => edit({ public: e.currentTarget.checked })} data-testid="plan-public" />
          </Stack>
        </Table.Td>
        <Table.Td maw={320}>
          {others.length === 0 ? (
            <Text size="xs" c="dimmed">
              none: the Community defaults
            </Text>
          ) : (
            <Group gap={4} data-testid="plan-entitlements">
              {others.map(([k, v]) => (
                <Badge key={k} size="sm" variant="default" tt="none" fw={400} title={k} data-testid="plan-entitlement" data-feature={k}>
                  {name(k)}: {valueText(v)}
                </Badge>
              ))}
            </Group>
          )}
        </Table.Td>
        <Table.Td>
          <Group gap={6} wrap="nowrap">
            <Button size="compact-sm" onClick={save} disabled={!changed} loading={action.busy === 'save'} data-testid="plan-save">
              Save
            </Button>
            <Button size="compact-sm" variant="subtle" onClick={() => setSyncing(true)} data-testid="plan-stripe-sync">
              Stripe sync
            </Button>
            {saved && !changed && (
              <Text size="sm" c="teal" data-testid="plan-saved">
                Saved
              </Text>
            )}
          </Group>
        </Table.Td>
      </Table.Tr>
      {syncing && <StripeSyncModal plan={plan} onClose={() => setSyncing(false)} />}
      {error && (
        <Table.Tr data-testid="plan-error" data-plan={plan.id}>
          <Table.Td colSpan={6} pt={0}>
            {problem ? (
              <Alert color="red" role="alert" p="xs">
                {problem}
              </Alert>
            ) : (
              <ErrorNote error={action.error} />
            )}
          </Table.Td>
        </Table.Tr>
      )}
    </Fragment>
  )
}

// ---- overrides ----

const pageSize = 50
type SortKey = 'created_at' | 'feature' | 'expires_at' | 'status'
const firstOrder: Record<SortKey, Order> = { created_at: 'desc', feature: 'asc', expires_at: 'asc', status: 'asc' }
type ScopeFilter = '' | Override['scope']
type StatusFilter = '' | Override['status']

const scopeNames: Record<Override['scope'], string> = { global: 'Global', workspace: 'Workspace', user: 'User', user_in_workspace: 'User in workspace' }
const statusColors: Record<Override['status'], string> = { active: 'teal', revoked: 'gray', expired: 'orange' }

export function OverridesTab() {
  const features = useLoad(async () => (await get('/api/admin/entitlement-features')) ?? [], [])
  const [search, setSearch] = useState('')
  const [debounced] = useDebouncedValue(search.trim(), 250)
  const [feature, setFeature] = useState('')
  const [scope, setScope] = useState<ScopeFilter>('')
  const [status, setStatus] = useState<StatusFilter>('')
  const [sort, setSort] = useState<SortKey>('created_at')
  const [order, setOrder] = useState<Order>('desc')
  const [page, setPage] = useState(1)
  const [revoking, setRevoking] = useState<Override | null>(null)
  const action = useAction()

  // A new search, filter or sort starts again on the first page.
  useEffect(() => setPage(1), [debounced, feature, scope, status, sort, order])

  const board = useLoad(
    () =>
      get('/api/admin/overrides/board', {
        params: {
          query: {
            page,
            page_size: pageSize,
            sort,
            order,
            q: debounced || undefined,
            feature: feature || undefined,
            scope: scope || undefined,
            status: status || undefined,
          },
        },
      }),
    [debounced, feature, scope, status, sort, order, page],
  )

  const sortBy = (key: SortKey) => {
    if (key === sort) setOrder(order === 'asc' ? 'desc' : 'asc')
    else {
      setSort(key)
      setOrder(firstOrder[key])
    }
  }
  const name = (key: string) => features.data?.find((f) => f.key === key)?.name ?? key

  const revoke = async (o: Override) => {
    await action.run(`revoke-${o.id}`, () => post('/api/admin/overrides/{override_id}/revoke', { params: { path: { override_id: o.id } } }))
    // Either way the board shows the grant as it is now (revoked meanwhile by someone else: a 409 says so above it).
    await board.reload()
  }

  const data = board.data
  const rows = data?.rows ?? []
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || pageSize))) : 1
  const filtered = Boolean(debounced || feature || scope || status)
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        Grants above (or below) an organization's plan: for every organization (no scope), one workspace, one user, or one user in one workspace. The most specific grant
        in force wins. Revoking keeps the row, stamped revoked.
      </Text>
      <ErrorNote error={features.error} />
      {features.data && <GrantForm features={features.data} onGranted={board.reload} />}

      <Group gap="xs" mt="md">
        <Title order={4}>Overrides</Title>
        {data && (
          <Badge variant="light" data-testid="override-total">
            {count(data.total, 'override')}
          </Badge>
        )}
      </Group>
      <TextInput label="Search" placeholder="Feature or reason" value={search} onChange={(e) => setSearch(e.currentTarget.value)} w={320} data-testid="override-search" />
      <FacetChips name="Feature" testid="override-feature-facet" facets={data?.facets.feature ?? []} value={feature} onChange={setFeature} />
      <FacetChips name="Scope" testid="override-scope-facet" facets={data?.facets.scope ?? []} value={scope} onChange={(v) => setScope(v as ScopeFilter)} />
      <FacetChips name="Status" testid="override-status-facet" facets={data?.facets.status ?? []} value={status} onChange={(v) => setStatus(v as StatusFilter)} />
      <ErrorNote error={board.error || action.error} />
      {board.loading && !data ? (
        <Loading label="Loading the overrides…" />
      ) : board.error ? null : rows.length === 0 ? (
        <Text c="dimmed" data-testid="override-empty">
          {filtered ? 'No override matches.' : 'No override has been granted yet.'}
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={980}>
          <Table striped highlightOnHover data-testid="override-list">
            <Table.Thead>
              <Table.Tr>
                <SortTh label="Feature" column="feature" sort={sort} order={order} onSort={sortBy} testid="override-sort" />
                <Table.Th>Scope</Table.Th>
                <Table.Th>Value</Table.Th>
                <SortTh label="Expires" column="expires_at" sort={sort} order={order} onSort={sortBy} testid="override-sort" />
                <SortTh label="Status" column="status" sort={sort} order={order} onSort={sortBy} testid="override-sort" />
                <Table.Th>Reason</Table.Th>
                <SortTh label="Granted" column="created_at" sort={sort} order={order} onSort={sortBy} testid="override-sort" />
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((o) => (
                <Table.Tr key={o.id} data-testid="override-row" data-id={o.id} data-feature={o.feature} data-status={o.status} data-scope={o.scope}>
                  <Table.Td>
                    <Text size="sm">{name(o.feature)}</Text>
                    <Code fz="xs">{o.feature}</Code>
                  </Table.Td>
                  <Table.Td data-testid="override-scope">
                    <Text size="sm">{scopeNames[o.scope]}</Text>
                    {o.workspace_id && (
                      <Text size="xs" c="dimmed" ff="monospace" title="Workspace">
                        ws {o.workspace_id}
                      </Text>
                    )}
                    {o.user_id && (
                      <Text size="xs" c="dimmed" ff="monospace" title="User">
                        user {o.user_id}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td data-testid="override-value-cell">{valueText(o.value)}</Table.Td>
                  <Table.Td>{o.expires_at ? when(o.expires_at) : <Text size="sm" c="dimmed">never</Text>}</Table.Td>
                  <Table.Td>
                    <Badge color={statusColors[o.status]} variant="light" data-testid="override-status">
                      {o.status}
                    </Badge>
                    {o.revoked_at && (
                      <Text size="xs" c="dimmed">
                        {when(o.revoked_at)}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td maw={260}>
                    <Text size="sm" lineClamp={2} title={o.reason}>
                      {o.reason}
                    </Text>
                  </Table.Td>
                  <Table.Td>{when(o.created_at)}</Table.Td>
                  <Table.Td>
                    {o.status === 'active' && (
                      <Button
                        size="compact-sm"
                        color="red"
                        variant="light"
                        loading={action.busy === `revoke-${o.id}`}
                        disabled={!!action.busy}
                        onClick={() => setRevoking(o)}
                        data-testid="override-revoke"
                      >
                        Revoke
                      </Button>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={setPage} data-testid="override-pages" />}

      <Confirm
        item={revoking}
        title={(o) => `Revoke the override of ${o.feature}?`}
        message={(o) =>
          `${scopeNames[o.scope]} grant of ${valueText(o.value)}. It stops counting at once and the plan's value applies again; the row stays, marked revoked.`
        }
        action={() => 'Revoke'}
        testid="confirm-revoke"
        onCancel={() => setRevoking(null)}
        onConfirm={revoke}
      />
    </Stack>
  )
}

/** The grant form: a feature, a value fitting its kind, why, and optionally a scope and an expiry. */
function GrantForm({ features, onGranted }: { features: Feature[]; onGranted: () => Promise<void> }) {
  const [key, setKey] = useState(features[0]?.key ?? '')
  const [amount, setAmount] = useState('')
  const [unlimited, setUnlimited] = useState(false)
  const [on, setOn] = useState(true)
  const [reason, setReason] = useState('')
  const [workspaceID, setWorkspaceID] = useState('')
  const [userID, setUserID] = useState('')
  const [expires, setExpires] = useState('')
  const [problem, setProblem] = useState('')
  const [granted, setGranted] = useState<Override | null>(null)
  const action = useAction()
  const f = features.find((x) => x.key === key)
  const kind = f?.kind ?? 'count'
  const scope = workspaceID.trim() && userID.trim() ? 'user_in_workspace' : userID.trim() ? 'user' : workspaceID.trim() ? 'workspace' : 'global'

  const touched = () => {
    setProblem('')
    setGranted(null)
  }
  const submit = async (e: React.FormEvent) => {
    e.preventDefault()
    touched()
    let value: unknown
    if (kind === 'flag') value = on
    else if (unlimited) value = 'unlimited'
    else if (/^\d{1,15}$/.test(amount.trim())) value = Number(amount.trim())
    else {
      setProblem('The value is a whole number, or turn on Unlimited.')
      return
    }
    const body: OverrideCreate = { feature: key, value, reason: reason.trim() }
    if (workspaceID.trim()) body.workspace_id = workspaceID.trim()
    if (userID.trim()) body.user_id = userID.trim()
    if (expires) {
      const at = new Date(expires)
      if (Number.isNaN(at.getTime())) {
        setProblem('The expiry is not a date and time.')
        return
      }
      body.expires_at = at.toISOString()
    }
    const o = await action.run('grant', () => post('/api/admin/overrides', { body }))
    if (o) {
      setGranted(o)
      setAmount('')
      setUnlimited(false)
      setReason('')
      setWorkspaceID('')
      setUserID('')
      setExpires('')
      await onGranted()
    }
  }

  return (
    <Card withBorder>
      <form onSubmit={submit} data-testid="override-form">
        <Stack gap="sm">
          <Title order={4}>Grant an override</Title>
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <NativeSelect
              label="Feature"
              description={f?.description}
              data={features.map((x) => ({ value: x.key, label: `${x.name} (${x.key})` }))}
              value={key}
              onChange={(e) => {
                setKey(e.currentTarget.value)
                touched()
              }}
              data-testid="override-feature"
            />
            {kind === 'flag' ? (
              <Stack gap={4}>
                <Text size="sm" fw={500}>
                  Value
                </Text>
                <Switch
                  label={on ? 'On' : 'Off'}
                  checked={on}
                  onChange={(e) => {
                    setOn(e.currentTarget.checked)
                    touched()
                  }}
                  data-testid="override-flag"
                />
              </Stack>
            ) : (
              <Stack gap={4}>
                <TextInput
                  label="Value"
                  description={f?.scope ? `Counted per ${f.scope}` : undefined}
                  placeholder={unlimited ? 'unlimited' : 'A whole number'}
                  value={unlimited ? '' : amount}
                  disabled={unlimited}
                  inputMode="numeric"
                  onChange={(e) => {
                    setAmount(e.currentTarget.value)
                    touched()
                  }}
                  data-testid="override-value"
                />
                <Switch
                  label="Unlimited"
                  size="xs"
                  checked={unlimited}
                  onChange={(e) => {
                    setUnlimited(e.currentTarget.checked)
                    touched()
                  }}
                  data-testid="override-unlimited"
                />
              </Stack>
            )}
            <TextInput
              label="Reason"
              description="Kept with the grant and in the audit log"
              value={reason}
              onChange={(e) => {
                setReason(e.currentTarget.value)
                touched()
              }}
              required
              maxLength={500}
              data-testid="override-reason"
            />
            <TextInput
              label="Workspace id"
              description="Optional: only this workspace"
              value={workspaceID}
              onChange={(e) => {
                setWorkspaceID(e.currentTarget.value)
                touched()
              }}
              ff="monospace"
              data-testid="override-workspace"
            />
            <TextInput
              label="User id"
              description="Optional: only when this user acts"
              value={userID}
              onChange={(e) => {
                setUserID(e.currentTarget.value)
                touched()
              }}
              data-testid="override-user"
            />
            <TextInput
              label="Expires"
              description="Optional: stops counting then (your local time)"
              type="datetime-local"
              value={expires}
              onChange={(e) => {
                setExpires(e.currentTarget.value)
                touched()
              }}
              data-testid="override-expires"
            />
          </SimpleGrid>
          <Text size="sm" c="dimmed" data-testid="override-scope-preview">
            Scope: {scopeNames[scope]}
            {scope === 'global' && ' (every organization on the instance)'}
          </Text>
          {problem && (
            <Alert color="red" role="alert" p="xs">
              {problem}
            </Alert>
          )}
          <ErrorNote error={action.error} />
          {granted && (
            <Alert color="teal" p="xs" data-testid="override-granted">
              Granted {granted.feature} = {valueText(granted.value)} ({scopeNames[granted.scope]}).
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={action.busy === 'grant'} disabled={!key} data-testid="override-grant">
              Grant
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  )
}


/**
 * stripe-sync for one plan: a preview of reconciling it with its Stripe
 * prices (which price sells it, what a rotation would do). Nothing is
 * created, archived or charged from here.
 */
function StripeSyncModal({ plan, onClose }: { plan: Plan; onClose: () => void }) {
  const preview = useLoad(() => post('/api/admin/plans/{plan_id}/stripe-sync', { params: { path: { plan_id: plan.id } } }), [plan.id])
  const p = preview.data
  const actions = p?.actions ?? []
  const prices = p?.prices ?? []
  return (
    <Modal opened onClose={onClose} title={`Stripe sync: ${plan.name}`} size="lg">
      <Stack gap="xs" data-testid="stripe-sync">
        <ErrorNote error={preview.error} />
        {preview.loading && !p && <Loading />}
        {p && (
          <>
            <Group gap="xs">
              <Badge color={p.in_sync ? 'teal' : 'orange'} data-testid="stripe-sync-state">
                {p.in_sync ? 'in sync' : 'out of sync'}
              </Badge>
              {p.price_id && <Code>{p.price_id}</Code>}
            </Group>
            {!p.configured && (
              <Text size="sm" c="dimmed">
                No Stripe API key (STRIPE_SECRET_KEY): a save changes the plan here only.
              </Text>
            )}
            {actions.length > 0 && (
              <Stack gap={2}>
                <Text size="sm" fw={500}>
                  A save of this price would:
                </Text>
                {actions.map((a) => (
                  <Text key={a} size="sm" data-testid="stripe-sync-action">
                    · {a}
                  </Text>
                ))}
              </Stack>
            )}
            {prices.length > 0 && (
              <Table>
                <Table.Tbody>
                  {prices.map((pr) => (
                    <Table.Tr key={pr.price_id}>
                      <Table.Td>
                        <Code>{pr.price_id}</Code>
                      </Table.Td>
                      <Table.Td>{price(pr.amount_cents, pr.currency, pr.interval as Plan['interval'])}</Table.Td>
                      <Table.Td>{pr.archived_at ? `archived ${when(pr.archived_at)}` : 'active'}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
          </>
        )}
      </Stack>
    </Modal>
  )
}
