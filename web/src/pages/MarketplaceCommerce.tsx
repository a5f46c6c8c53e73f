// The marketplace's commerce in the console: the Selling tab (the
// person's seller profile, payout accounts, ledger with its balances and
// the purchases of their items), the Purchases tab (the workspace's, with
// invoices and cancellation), the price fields of the Publish tab, and a
// paid item's card on its page (its price, buying it, the workspace's
// license). Money is integer minor units: amounts are typed in major units
// and read back from their digits (money.ts), never through a float.
import { Alert, Anchor, Badge, Button, Card, Checkbox, Group, NativeSelect, Pagination, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core'
import { useDebouncedValue } from '@mantine/hooks'
import { Fragment, useEffect, useRef, useState } from 'react'
import { Link, useSearchParams } from 'react-router-dom'
import { ApiError, get, post, type Schemas } from '../api'
import { FacetChips, SortTh, type Order } from '../board'
import { majorToMinor, marketPrice, minorDigits, money } from '../money'
import { useSession } from '../session'
import { Confirm, count, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Item = Schemas['MarketItem']
type Price = Schemas['Price']
type Purchase = Schemas['Purchase']
type PurchaseStatus = Purchase['status']
type Ledger = Schemas['LedgerEntry']
type Profile = Schemas['SellerProfile']

const purchaseColor: Record<PurchaseStatus, string> = { pending: 'yellow', active: 'teal', cancelled: 'gray', ended: 'gray' }
const ledgerColor: Record<Ledger['status'], string> = { pending: 'yellow', available: 'teal', held: 'orange', paid: 'blue' }
const profileColor: Record<Profile['status'], string> = { pending_review: 'yellow', approved: 'teal', rejected: 'red' }

/** The signed-in person's seller profile; null when they have none (the API's 404). */
async function myProfile(): Promise<Profile | null> {
  try {
    return await get('/api/marketplace/seller/profile')
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null
    throw e
  }
}

/** Whether a purchase licenses the workspace now: active, within its paid period. */
export function licenses(p: Purchase | null | undefined): boolean {
  return !!p && p.status === 'active' && (!p.period_end || new Date(p.period_end).getTime() > Date.now())
}

function PurchaseBadge({ p }: { p: Purchase }) {
  return (
    <Badge color={purchaseColor[p.status] ?? 'gray'} variant="light" data-testid="purchase-status" data-status={p.status}>
      {p.status}
    </Badge>
  )
}

// ---------------------------------------------------------------------------
// The Publish tab's price.

/** The price fields' state: the amount as typed, in major units. */
export type PriceDraft = { sell: boolean; amount: string; currency: string; interval: Price['interval'] }
export const noPrice: PriceDraft = { sell: false, amount: '', currency: 'EUR', interval: 'once' }

/** The price to publish (undefined: free); throws a message for an amount or currency that does not read. */
export function priceOf(d: PriceDraft): Price | undefined {
  if (!d.sell) return undefined
  const currency = d.currency.trim().toUpperCase()
  if (!/^[A-Z]{3}$/.test(currency)) throw new Error('Currency: three letters (ISO 4217), as EUR.')
  const amount = majorToMinor(d.amount, currency)
  const digits = minorDigits(currency)
  if (amount === null || amount < 1) throw new Error(`Price: a positive amount in ${currency}, ${digits ? `with at most ${digits} decimals` : 'in whole units'}.`)
  return { amount_minor: amount, currency, interval: d.interval }
}

/** Optional price fields: sell the item, at an amount in the currency's major units, once or monthly. */
export function PriceFields({ value, onChange }: { value: PriceDraft; onChange: (d: PriceDraft) => void }) {
  const profile = useLoad(async () => (value.sell ? myProfile() : undefined), [value.sell])
  let preview = ''
  try {
    const p = priceOf(value)
    if (p) preview = `${marketPrice(p)} (${p.amount_minor} minor units)`
  } catch {
    preview = ''
  }
  return (
    <Card withBorder p="sm" data-testid="publish-price">
      <Stack gap="xs">
        <Checkbox
          label="Sell it: workspaces buy a license to install it"
          checked={value.sell}
          onChange={(e) => onChange({ ...value, sell: e.currentTarget.checked })}
          data-testid="publish-sell"
        />
        {value.sell && (
          <>
            <Group align="end">
              <TextInput
                label="Price"
                description="In the currency's units, as 4.99"
                value={value.amount}
                onChange={(e) => onChange({ ...value, amount: e.currentTarget.value })}
                inputMode="decimal"
                maxLength={16}
                w={160}
                data-testid="publish-price-amount"
              />
              <TextInput
                label="Currency"
                value={value.currency}
                onChange={(e) => onChange({ ...value, currency: e.currentTarget.value.toUpperCase() })}
                maxLength={3}
                w={90}
                data-testid="publish-price-currency"
              />
              <SegmentedControl
                value={value.interval}
                onChange={(v) => onChange({ ...value, interval: v as Price['interval'] })}
                data={[
                  { value: 'once', label: 'Once' },
                  { value: 'month', label: 'Monthly' },
                ]}
                data-testid="publish-price-interval"
              />
            </Group>
            {preview && (
              <Text size="xs" c="dimmed" data-testid="publish-price-preview">
                {preview}
              </Text>
            )}
            {profile.data === null && (
              <Alert color="yellow" data-testid="publish-needs-seller">
                Selling needs a seller profile: create yours in the{' '}
                <Anchor component={Link} to="/marketplace?tab=selling">
                  Selling tab
                </Anchor>
                .
              </Alert>
            )}
            <ErrorNote error={profile.error} />
          </>
        )}
      </Stack>
    </Card>
  )
}

// ---------------------------------------------------------------------------
// A paid item's card on its page.

/**
 * A paid item's price, and for a workspace that is not its publisher: its
 * license (the latest purchase that is not pending), buying it (a checkout:
 * the payment provider's page, or a development completion when there is
 * none) and the return from the provider (?purchase=, waited on until the
 * provider's confirmation arrives).
 */
export function ItemCommerce(props: { item: Item; versionId: string; subscription: { data?: Purchase | null; error: unknown; reload: () => Promise<void> }; onLicensed: () => unknown }) {
  const { item, versionId, subscription, onLicensed } = props
  const { workspace } = useSession()
  const [params, setParams] = useSearchParams()
  const returned = params.get('purchase') ?? ''
  const [checkout, setCheckout] = useState<Schemas['Checkout'] | null>(null)
  const [waiting, setWaiting] = useState<Purchase | null>(null)
  const [confirmed, setConfirmed] = useState(false)
  const act = useAction()
  const sub = subscription.data
  const licensed = licenses(sub)
  const canBuy = workspace?.role === 'owner' || workspace?.role === 'admin'
  // The poll below outlives renders: it calls the latest reloads.
  const reloads = useRef({ subscription: subscription.reload, onLicensed })
  reloads.current = { subscription: subscription.reload, onLicensed }

  // Back from the payment provider: the purchase stays pending until its
  // confirmation (a webhook) arrives, which may come after the buyer does.
  useEffect(() => {
    if (!returned) return
    let stop = false
    let timer = 0
    const started = Date.now()
    const poll = async () => {
      try {
        const p = await get('/api/marketplace/purchases/{id}', { params: { path: { id: returned } } })
        if (stop) return
        setWaiting(p)
        if (p.status !== 'pending') {
          setConfirmed(p.status === 'active')
          await reloads.current.subscription()
          await reloads.current.onLicensed()
          return
        }
      } catch {
        if (stop) return
      }
      if (Date.now() - started < 5 * 60_000) timer = window.setTimeout(poll, 1000)
    }
    void poll()
    return () => {
      stop = true
      window.clearTimeout(timer)
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [returned])

  if (!item.paid || !item.price) return null
  const buy = () =>
    act.run('buy', async () => {
      setCheckout(await post('/api/marketplace/checkout/{version_id}', { params: { path: { version_id: versionId } } }))
    })
  const complete = (path: string) =>
    act.run('complete', async () => {
      // dev_complete is /api/marketplace/checkout/{purchase_id}/dev/complete: the id is read back from it.
      const id = path.match(/\/checkout\/([^/]+)\/dev\/complete$/)?.[1] ?? checkout?.purchase.id ?? ''
      await post('/api/marketplace/checkout/{purchase_id}/dev/complete', { params: { path: { purchase_id: id } } })
      setCheckout(null)
      setConfirmed(true)
      await subscription.reload()
      await onLicensed()
    })
  return (
    <Card withBorder data-testid="item-commerce">
      <Stack gap="xs">
        <Group gap="xs">
          <Text fw={600}>Price</Text>
          <Badge size="lg" variant="light" color="grape" tt="none" data-testid="item-price">
            {marketPrice(item.price)}
          </Badge>
        </Group>
        {item.mine ? (
          <Text size="sm" c="dimmed" data-testid="item-yours">
            Your workspace publishes it: each workspace that installs it buys a license, and the sale reaches your seller ledger (Marketplace → Selling).
          </Text>
        ) : (
          <>
            {sub && (
              <Group gap="xs" data-testid="subscription">
                <Text size="sm">{licensed ? 'Licensed to this workspace' : 'This workspace bought it'}:</Text>
                <PurchaseBadge p={sub} />
                <Text size="sm">{marketPrice(sub)}</Text>
                {sub.period_end && (
                  <Text size="sm" data-testid="subscription-period-end">
                    {sub.status === 'active' ? (sub.cancel_at_period_end ? 'ends' : 'renews') : 'paid until'} {when(sub.period_end)}
                  </Text>
                )}
                {sub.cancel_at_period_end && (
                  <Badge color="orange" variant="outline" data-testid="subscription-cancel-at-period-end">
                    cancels at the period's end
                  </Badge>
                )}
                <Anchor component={Link} to="/marketplace?tab=purchases" size="sm">
                  Purchases
                </Anchor>
              </Group>
            )}
            {returned && waiting?.status === 'pending' && (
              <Alert color="blue" data-testid="checkout-waiting">
                Waiting for the payment provider to confirm the payment…
              </Alert>
            )}
            {confirmed && licensed && (
              <Alert
                color="teal"
                data-testid="checkout-confirmed"
                withCloseButton
                onClose={() => {
                  setConfirmed(false)
                  if (returned) setParams({}, { replace: true })
                }}
              >
                Bought: the workspace holds a license to {item.name}.
              </Alert>
            )}
            {!licensed && (
              <Stack gap="xs">
                {!canBuy && (
                  <Text size="sm" c="dimmed">
                    The workspace's owners and admins buy items.
                  </Text>
                )}
                <Group>
                  {!checkout && (
                    <Button w="fit-content" color="grape" onClick={buy} loading={act.busy === 'buy'} disabled={!canBuy || !versionId || !item.listed} data-testid="buy">
                      Buy {marketPrice(item.price)}
                    </Button>
                  )}
                  {checkout?.checkout_url && (
                    <Button component="a" href={checkout.checkout_url} variant="filled" color="indigo" data-testid="pay-stripe">
                      Pay with Stripe
                    </Button>
                  )}
                  {checkout?.dev_complete && (
                    <Button variant="light" color="orange" loading={act.busy === 'complete'} onClick={() => complete(checkout.dev_complete ?? '')} data-testid="dev-complete">
                      Complete purchase (development: no payment provider)
                    </Button>
                  )}
                </Group>
                {checkout && (
                  <Text size="xs" c="dimmed" data-testid="checkout-pending">
                    Purchase {checkout.purchase.id.slice(0, 8)} of {marketPrice(checkout.purchase)} waits for its payment.
                  </Text>
                )}
              </Stack>
            )}
          </>
        )}
        <ErrorNote error={act.error || subscription.error} />
      </Stack>
    </Card>
  )
}

// ---------------------------------------------------------------------------
// The Purchases tab: the workspace's.

const purchasesPage = 50

/** The workspace's purchases with a status filter; a purchase's invoices; cancelling a monthly subscription. */
export function PurchasesTab() {
  const { workspace } = useSession()
  const [status, setStatus] = useState<'' | PurchaseStatus>('')
  const [page, setPage] = useState(1)
  const [open, setOpen] = useState<string | null>(null)
  const [cancelling, setCancelling] = useState<{ p: Purchase; when: 'period_end' | 'now' } | null>(null)
  useEffect(() => setPage(1), [status])
  const list = useLoad(
    () => get('/api/marketplace/purchases', { params: { query: { status: status || undefined, limit: purchasesPage, offset: (page - 1) * purchasesPage } } }),
    [workspace?.id, status, page],
  )
  const act = useAction()
  const rows = list.data?.items ?? []
  const pages = list.data ? Math.max(1, Math.ceil(list.data.total / purchasesPage)) : 1
  const cancel = (p: Purchase, when: 'period_end' | 'now') =>
    act.run(`cancel-${p.id}`, async () => {
      await post('/api/marketplace/purchases/{id}/cancel', { params: { path: { id: p.id } }, body: { when } })
      await list.reload()
    })
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        What this workspace bought on the marketplace: an active purchase is its license to the item. A monthly subscription can end when its paid period does, or now with a
        refund of the unused remainder.
      </Text>
      <Group align="end">
        <NativeSelect
          label="Status"
          value={status}
          onChange={(e) => setStatus(e.currentTarget.value as '' | PurchaseStatus)}
          data={[
            { value: '', label: 'Any' },
            { value: 'pending', label: 'Pending (not paid yet)' },
            { value: 'active', label: 'Active' },
            { value: 'cancelled', label: 'Cancelled' },
            { value: 'ended', label: 'Ended' },
          ]}
          w={220}
          data-testid="purchases-status"
        />
        {list.data && (
          <Badge variant="light" data-testid="purchases-total">
            {count(list.data.total, 'purchase')}
          </Badge>
        )}
      </Group>
      <ErrorNote error={list.error || act.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <Text c="dimmed" data-testid="purchases-empty">
          {status ? 'No purchase has this status.' : 'Nothing bought yet.'}
        </Text>
      ) : (
        <Table data-testid="purchases">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Item</Table.Th>
              <Table.Th>Price</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Period end</Table.Th>
              <Table.Th>Bought</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((p) => {
              const cancellable = p.interval === 'month' && licenses(p)
              return (
                <Fragment key={p.id}>
                  <Table.Tr data-testid="purchase-row" data-purchase-id={p.id} data-item-id={p.item_id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/marketplace/${p.item_id}`}>
                        {p.item_name}
                      </Anchor>
                    </Table.Td>
                    <Table.Td data-testid="purchase-price">{marketPrice(p)}</Table.Td>
                    <Table.Td>
                      <Group gap={4}>
                        <PurchaseBadge p={p} />
                        {p.cancel_at_period_end && p.status === 'active' && (
                          <Badge color="orange" variant="outline" data-testid="purchase-cancel-at-period-end">
                            ends at the period's end
                          </Badge>
                        )}
                      </Group>
                    </Table.Td>
                    <Table.Td>{p.interval === 'month' ? when(p.period_end) : 'for good'}</Table.Td>
                    <Table.Td>{when(p.activated_at ?? p.created_at)}</Table.Td>
                    <Table.Td>
                      <Group gap={4} justify="end">
                        {p.status === 'pending' ? (
                          <Anchor component={Link} to={`/marketplace/${p.item_id}`} size="sm">
                            Pay on its page
                          </Anchor>
                        ) : (
                          <Button size="compact-xs" variant="light" onClick={() => setOpen(open === p.id ? null : p.id)} data-testid="purchase-invoices">
                            {open === p.id ? 'Hide invoices' : 'Invoices'}
                          </Button>
                        )}
                        {cancellable && !p.cancel_at_period_end && (
                          <Button size="compact-xs" variant="light" color="orange" loading={act.busy === `cancel-${p.id}`} onClick={() => setCancelling({ p, when: 'period_end' })} data-testid="purchase-cancel-period-end">
                            Cancel at period end
                          </Button>
                        )}
                        {cancellable && (
                          <Button size="compact-xs" variant="light" color="red" loading={act.busy === `cancel-${p.id}`} onClick={() => setCancelling({ p, when: 'now' })} data-testid="purchase-cancel-now">
                            Cancel now
                          </Button>
                        )}
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                  {open === p.id && (
                    <Table.Tr>
                      <Table.Td colSpan={6}>
                        <Invoices purchaseId={p.id} />
                      </Table.Td>
                    </Table.Tr>
                  )}
                </Fragment>
              )
            })}
          </Table.Tbody>
        </Table>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={setPage} data-testid="purchases-pages" />}
      <Confirm
        item={cancelling}
        title={(c) => `Cancel ${c.p.item_name}?`}
        message={(c) =>
          c.when === 'now'
            ? 'The license ends now; the unused remainder of the paid period is refunded as a credit note.'
            : `The license stays until the paid period ends (${when(c.p.period_end)}); it does not renew.`
        }
        action={(c) => (c.when === 'now' ? 'Cancel now' : 'Cancel at period end')}
        testid="purchase-cancel-confirm"
        onCancel={() => setCancelling(null)}
        onConfirm={(c) => cancel(c.p, c.when)}
      />
    </Stack>
  )
}

/** A purchase's invoices and credit notes (negative). */
function Invoices({ purchaseId }: { purchaseId: string }) {
  const invoices = useLoad(() => get('/api/marketplace/purchases/{id}/invoices', { params: { path: { id: purchaseId } } }), [purchaseId])
  if (invoices.loading && !invoices.data) return <Loading label="Loading the invoices…" />
  const list = invoices.data ?? []
  return (
    <Stack gap={4} data-testid="invoices">
      <ErrorNote error={invoices.error} />
      {list.length === 0 && !invoices.error && (
        <Text size="sm" c="dimmed">
          No invoice yet.
        </Text>
      )}
      {list.length > 0 && (
        <Table fz="sm" withRowBorders={false}>
          <Table.Tbody>
            {list.map((inv) => (
              <Table.Tr key={inv.id} data-testid="invoice-row">
                <Table.Td data-testid="invoice-number">{inv.number}</Table.Td>
                <Table.Td data-testid="invoice-amount">
                  {money(inv.amount_minor, inv.currency)}
                  {inv.amount_minor < 0 && (
                    <Badge size="xs" color="orange" variant="light" ml={6}>
                      credit note
                    </Badge>
                  )}
                </Table.Td>
                <Table.Td>
                  {when(inv.period_start)}
                  {inv.period_end ? ` – ${when(inv.period_end)}` : ''}
                </Table.Td>
                <Table.Td>issued {when(inv.issued_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  )
}

// ---------------------------------------------------------------------------
// The Selling tab: the person's.

/** The person's seller side: profile, payout accounts, ledger with balances, the purchases of their items. */
export function SellingTab() {
  const profile = useLoad(myProfile, [])
  if (profile.loading && profile.data === undefined) return <Loading />
  if (profile.error) return <ErrorNote error={profile.error} />
  const p = profile.data
  if (!p) return <BecomeSeller onCreated={(made) => profile.setData(made)} />
  return (
    <Stack>
      <Card withBorder data-testid="seller-profile">
        <Group gap="xs">
          <Text fw={600} data-testid="seller-name">
            {p.display_name}
          </Text>
          <Badge variant="outline">{p.country}</Badge>
          <Badge color={profileColor[p.status] ?? 'gray'} variant="light" data-testid="seller-status">
            {p.status.replace('_', ' ')}
          </Badge>
          <Text size="xs" c="dimmed">
            seller since {when(p.created_at)}
            {p.status === 'pending_review' ? ' · reviewed before your first payout' : ''}
          </Text>
        </Group>
      </Card>
      <PayoutAccounts />
      <LedgerBoard />
      <SalesBoard />
    </Stack>
  )
}

function BecomeSeller({ onCreated }: { onCreated: (p: Profile) => void }) {
  const { me } = useSession()
  const [name, setName] = useState(me?.display_name ?? '')
  const [country, setCountry] = useState('')
  const act = useAction()
  return (
    <Card withBorder maw={640} data-testid="become-seller">
      <form
        onSubmit={(e) => {
          e.preventDefault()
          act.run('create', async () => onCreated(await post('/api/marketplace/seller/profile', { body: { display_name: name.trim(), country: country.trim().toUpperCase() } })))
        }}
      >
        <Stack gap="xs">
          <Title order={4}>Become a seller</Title>
          <Text size="sm" c="dimmed">
            Sell what you publish: workspaces buy licenses, the sales (less the platform's fee) reach your ledger and are paid out to your bank account by SEPA transfer.
            One profile per person; it is reviewed before your first payout.
          </Text>
          <Group align="end">
            <TextInput label="Display name" value={name} onChange={(e) => setName(e.currentTarget.value)} required maxLength={100} w={280} data-testid="seller-display-name" />
            <TextInput
              label="Country"
              description="ISO 3166-1 alpha-2, as DE"
              value={country}
              onChange={(e) => setCountry(e.currentTarget.value.toUpperCase())}
              required
              maxLength={2}
              w={160}
              data-testid="seller-country"
            />
            <Button type="submit" loading={act.busy === 'create'} data-testid="seller-create">
              Become a seller
            </Button>
          </Group>
          <ErrorNote error={act.error} />
        </Stack>
      </form>
    </Card>
  )
}

function PayoutAccounts() {
  const accounts = useLoad(() => get('/api/marketplace/seller/payout-accounts'), [])
  const [holder, setHolder] = useState('')
  const [iban, setIban] = useState('')
  const [bic, setBic] = useState('')
  const act = useAction()
  const list = accounts.data ?? []
  return (
    <Card withBorder data-testid="payout-accounts">
      <Stack gap="xs">
        <Title order={4}>Payout accounts</Title>
        <ErrorNote error={accounts.error} />
        {accounts.data && list.length === 0 && (
          <Text size="sm" c="dimmed" data-testid="payout-accounts-empty">
            No payout account yet: add the bank account your sales are paid to.
          </Text>
        )}
        {list.length > 0 && (
          <Table fz="sm">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Holder</Table.Th>
                <Table.Th>IBAN</Table.Th>
                <Table.Th>BIC</Table.Th>
                <Table.Th>Country</Table.Th>
                <Table.Th>Added</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.map((a) => (
                <Table.Tr key={a.id} data-testid="payout-account" data-account-id={a.id}>
                  <Table.Td>{a.holder_name}</Table.Td>
                  <Table.Td ff="monospace" data-testid="payout-account-iban">
                    {a.iban}
                  </Table.Td>
                  <Table.Td ff="monospace">{a.bic}</Table.Td>
                  <Table.Td>{a.country}</Table.Td>
                  <Table.Td>{when(a.created_at)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        <form
          onSubmit={(e) => {
            e.preventDefault()
            act.run('add', async () => {
              await post('/api/marketplace/seller/payout-account', { body: { holder_name: holder.trim(), iban: iban.trim(), bic: bic.trim() } })
              setHolder('')
              setIban('')
              setBic('')
              await accounts.reload()
            })
          }}
        >
          <Group align="end">
            <TextInput label="Account holder" value={holder} onChange={(e) => setHolder(e.currentTarget.value)} required maxLength={70} w={220} data-testid="account-holder" />
            <TextInput label="IBAN" placeholder="DE89 3704 0044 0532 0130 00" value={iban} onChange={(e) => setIban(e.currentTarget.value)} required maxLength={42} w={280} data-testid="account-iban" />
            <TextInput label="BIC" value={bic} onChange={(e) => setBic(e.currentTarget.value)} required maxLength={11} w={140} data-testid="account-bic" />
            <Button type="submit" loading={act.busy === 'add'} data-testid="account-add">
              Add account
            </Button>
          </Group>
        </form>
        <ErrorNote error={act.error} />
        <Text size="xs" c="dimmed">
          The IBAN is stored sealed and shown masked.
        </Text>
      </Stack>
    </Card>
  )
}

const boardPage = 25

/** A board's state: search, one status facet, sort and order, page. */
function useBoardState<K extends string>(def: K, firstOrder: Record<K, Order>) {
  const [search, setSearch] = useState('')
  const [q] = useDebouncedValue(search.trim(), 250)
  const [status, setStatus] = useState('')
  const [sort, setSort] = useState<K>(def)
  const [order, setOrder] = useState<Order>(firstOrder[def])
  const [page, setPage] = useState(1)
  useEffect(() => setPage(1), [q, status, sort, order])
  const sortBy = (k: K) => {
    if (k === sort) setOrder(order === 'asc' ? 'desc' : 'asc')
    else {
      setSort(k)
      setOrder(firstOrder[k])
    }
  }
  return { search, setSearch, q, status, setStatus, sort, order, sortBy, page, setPage }
}

type LedgerSort = 'created' | 'amount' | 'kind'

function LedgerBoard() {
  const b = useBoardState<LedgerSort>('created', { created: 'desc', amount: 'desc', kind: 'asc' })
  const board = useLoad(
    () =>
      get('/api/marketplace/seller/ledger/board', {
        params: { query: { q: b.q || undefined, status: (b.status || undefined) as Ledger['status'] | undefined, sort: b.sort, order: b.order, page: b.page, page_size: boardPage } },
      }),
    [b.q, b.status, b.sort, b.order, b.page],
  )
  // The balances: every entry's sum per currency.
  const balances = useLoad(async () => (await get('/api/marketplace/seller/ledger', { params: { query: { limit: 1 } } })).balances ?? [], [board.data])
  const data = board.data
  const rows = data?.rows ?? []
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || boardPage))) : 1
  return (
    <Card withBorder data-testid="ledger">
      <Stack gap="xs">
        <Group justify="space-between">
          <Title order={4}>Ledger</Title>
          <Group gap="xs" data-testid="balances">
            <Text size="sm">Balance:</Text>
            {(balances.data ?? []).length === 0 && (
              <Text size="sm" c="dimmed" data-testid="balance-none">
                nothing yet
              </Text>
            )}
            {(balances.data ?? []).map((bal) => (
              <Badge key={bal.currency} size="lg" variant="light" tt="none" color={bal.amount_minor < 0 ? 'red' : 'teal'} data-testid={`balance-${bal.currency}`} data-amount-minor={bal.amount_minor}>
                {money(bal.amount_minor, bal.currency)}
              </Badge>
            ))}
          </Group>
        </Group>
        <Text size="xs" c="dimmed">
          Sales, the platform's fees, refunds and payouts: each entry adds to your balance (a fee, a refund or a payout takes from it).
        </Text>
        <TextInput placeholder="Search the memo or kind" value={b.search} onChange={(e) => b.setSearch(e.currentTarget.value)} w={320} data-testid="ledger-search" />
        <FacetChips name="Status" testid="ledger-status" facets={data?.facets.status ?? []} value={b.status} onChange={b.setStatus} />
        <ErrorNote error={board.error || balances.error} />
        {board.loading && !data ? (
          <Loading />
        ) : rows.length === 0 ? (
          <Text size="sm" c="dimmed" data-testid="ledger-empty">
            {b.q || b.status ? 'No entry matches.' : 'No entry yet: your sales appear here.'}
          </Text>
        ) : (
          <Table fz="sm" data-testid="ledger-list">
            <Table.Thead>
              <Table.Tr>
                <SortTh label="Time" column="created" sort={b.sort} order={b.order} onSort={b.sortBy} testid="ledger-sort" />
                <SortTh label="Kind" column="kind" sort={b.sort} order={b.order} onSort={b.sortBy} testid="ledger-sort" />
                <SortTh label="Amount" column="amount" sort={b.sort} order={b.order} onSort={b.sortBy} testid="ledger-sort" />
                <Table.Th>Status</Table.Th>
                <Table.Th>Memo</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((e) => (
                <Table.Tr key={e.id} data-testid="ledger-row" data-kind={e.kind} data-amount-minor={e.amount_minor}>
                  <Table.Td>{when(e.created_at)}</Table.Td>
                  <Table.Td>{e.kind}</Table.Td>
                  <Table.Td c={e.amount_minor < 0 ? 'red' : undefined} data-testid="ledger-amount">
                    {money(e.amount_minor, e.currency)}
                  </Table.Td>
                  <Table.Td>
                    <Badge size="sm" color={ledgerColor[e.status] ?? 'gray'} variant="light">
                      {e.status}
                    </Badge>
                  </Table.Td>
                  <Table.Td data-testid="ledger-memo">{e.memo}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        {pages > 1 && <Pagination total={pages} value={b.page} onChange={b.setPage} data-testid="ledger-pages" />}
      </Stack>
    </Card>
  )
}

type SaleSort = 'created' | 'amount' | 'item'

/** The purchases of the person's items (paid or ended; pending checkouts are not sales yet). */
function SalesBoard() {
  const b = useBoardState<SaleSort>('created', { created: 'desc', amount: 'desc', item: 'asc' })
  const board = useLoad(
    () =>
      get('/api/marketplace/seller/purchases/board', {
        params: {
          query: { q: b.q || undefined, status: (b.status || undefined) as 'active' | undefined, sort: b.sort, order: b.order, page: b.page, page_size: boardPage },
        },
      }),
    [b.q, b.status, b.sort, b.order, b.page],
  )
  const data = board.data
  const rows = data?.rows ?? []
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || boardPage))) : 1
  return (
    <Card withBorder data-testid="sales">
      <Stack gap="xs">
        <Group gap="xs">
          <Title order={4}>Purchases of your items</Title>
          {data && (
            <Badge variant="light" data-testid="sales-total">
              {count(data.total, 'purchase')}
            </Badge>
          )}
        </Group>
        <TextInput placeholder="Search by item" value={b.search} onChange={(e) => b.setSearch(e.currentTarget.value)} w={320} data-testid="sales-search" />
        <FacetChips name="Status" testid="sales-status" facets={data?.facets.status ?? []} value={b.status} onChange={b.setStatus} />
        <ErrorNote error={board.error} />
        {board.loading && !data ? (
          <Loading />
        ) : rows.length === 0 ? (
          <Text size="sm" c="dimmed" data-testid="sales-empty">
            {b.q || b.status ? 'No purchase matches.' : 'Nothing sold yet.'}
          </Text>
        ) : (
          <Table fz="sm" data-testid="sales-list">
            <Table.Thead>
              <Table.Tr>
                <SortTh label="Time" column="created" sort={b.sort} order={b.order} onSort={b.sortBy} testid="sales-sort" />
                <SortTh label="Item" column="item" sort={b.sort} order={b.order} onSort={b.sortBy} testid="sales-sort" />
                <SortTh label="Price" column="amount" sort={b.sort} order={b.order} onSort={b.sortBy} testid="sales-sort" />
                <Table.Th>Status</Table.Th>
                <Table.Th>Period end</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((p) => (
                <Table.Tr key={p.id} data-testid="sale-row" data-purchase-id={p.id}>
                  <Table.Td>{when(p.activated_at ?? p.created_at)}</Table.Td>
                  <Table.Td>
                    <Anchor component={Link} to={`/marketplace/${p.item_id}`}>
                      {p.item_name}
                    </Anchor>
                  </Table.Td>
                  <Table.Td data-testid="sale-price">{marketPrice(p)}</Table.Td>
                  <Table.Td>
                    <PurchaseBadge p={p} />
                  </Table.Td>
                  <Table.Td>{p.interval === 'month' ? when(p.period_end) : '—'}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        {pages > 1 && <Pagination total={pages} value={b.page} onChange={b.setPage} data-testid="sales-pages" />}
      </Stack>
    </Card>
  )
}
