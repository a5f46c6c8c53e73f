// The owner console's payouts tab (?tab=payouts&subtab=…): the queue of
// what each seller may be paid (with the negative balances) and the "Pay"
// dialog that drafts a SEPA batch; the batches board with a batch's detail
// and its life (approve: the SEPA file is written; submit, with the bank's
// TAN when it asks one; reconcile with the bank's status report; cancel;
// the file's download); the platform's fees.
import { Alert, Anchor, Badge, Button, Card, Code, Group, Modal, NativeSelect, Pagination, SimpleGrid, Stack, Table, Tabs, Text, TextInput, Title } from '@mantine/core'
import { useDebouncedValue } from '@mantine/hooks'
import { useEffect, useState } from 'react'
import { useSearchParams } from 'react-router-dom'
import { get, post, put, type Schemas } from '../api'
import { FacetChips, SortTh, type Order } from '../board'
import { majorToMinor, minorToMajor, money } from '../money'
import { Confirm, count, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type QueueEntry = Schemas['QueueEntry']
type Batch = Schemas['PayoutBatch']
type Account = Schemas['PayoutAccount']

const subtabs = [
  { key: 'queue', label: 'Queue' },
  { key: 'batches', label: 'Batches' },
  { key: 'fees', label: 'Fees' },
] as const
type Subtab = (typeof subtabs)[number]['key']
const subtabOf = (v: string | null): Subtab => subtabs.find((t) => t.key === v)?.key ?? 'queue'

export const batchColor: Record<Batch['status'], string> = {
  draft: 'gray',
  approved: 'blue',
  submitting: 'yellow',
  submitted: 'indigo',
  reconciled: 'teal',
  cancelled: 'dark',
}
const itemColor: Record<Schemas['PayoutItem']['status'], string> = { pending: 'yellow', paid: 'teal', rejected: 'red' }

export function PayoutsTab() {
  const [params, setParams] = useSearchParams()
  const sub = subtabOf(params.get('subtab'))
  const go = (subtab: Subtab, batch?: string) => setParams({ tab: 'payouts', subtab, ...(batch ? { batch } : {}) }, { replace: !batch })
  return (
    <Tabs value={sub} onChange={(v) => go(subtabOf(v))} keepMounted={false} variant="pills">
      <Tabs.List>
        {subtabs.map((t) => (
          <Tabs.Tab key={t.key} value={t.key} data-testid={`subtab-${t.key}`}>
            {t.label}
          </Tabs.Tab>
        ))}
      </Tabs.List>
      <Tabs.Panel value="queue" pt="md">
        <QueueSubtab onDrafted={(b) => go('batches', b.id)} />
      </Tabs.Panel>
      <Tabs.Panel value="batches" pt="md">
        <BatchesSubtab open={params.get('batch') ?? ''} onOpen={(id) => (id ? go('batches', id) : go('batches'))} />
      </Tabs.Panel>
      <Tabs.Panel value="fees" pt="md">
        <FeesSubtab />
      </Tabs.Panel>
    </Tabs>
  )
}

// ---------------------------------------------------------------------------
// The queue.

const queuePage = 50

function QueueSubtab({ onDrafted }: { onDrafted: (b: Batch) => void }) {
  const [page, setPage] = useState(1)
  const queue = useLoad(() => get('/api/admin/marketplace/payouts/queue', { params: { query: { limit: queuePage, offset: (page - 1) * queuePage } } }), [page])
  const negative = useLoad(() => get('/api/admin/marketplace/payouts/negative-balances'), [])
  const [paying, setPaying] = useState<QueueEntry[] | null>(null)
  const rows = queue.data?.items ?? []
  const payable = rows.filter((e) => !e.hold)
  const pages = queue.data ? Math.max(1, Math.ceil(queue.data.total / queuePage)) : 1
  return (
    <Stack>
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          What each seller may be paid now: the ledger's balance less what open batches hold. Paying drafts a SEPA batch; nothing moves before it is approved and submitted.
        </Text>
        {payable.length > 1 && (
          <Button size="xs" variant="light" onClick={() => setPaying(payable)} data-testid="queue-pay-all">
            Pay all {payable.length}
          </Button>
        )}
      </Group>
      <ErrorNote error={queue.error} />
      {queue.loading && !queue.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <Text c="dimmed" data-testid="queue-empty">
          No seller has anything to be paid.
        </Text>
      ) : (
        <Table data-testid="queue">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Seller</Table.Th>
              <Table.Th>Balance</Table.Th>
              <Table.Th>Reserved</Table.Th>
              <Table.Th>Available</Table.Th>
              <Table.Th>Accounts</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((e) => (
              <Table.Tr key={`${e.seller_id} ${e.currency}`} data-testid="queue-row" data-seller-id={e.seller_id} data-currency={e.currency} data-available-minor={e.available_minor}>
                <Table.Td>
                  {e.display_name}{' '}
                  <Badge size="xs" variant="light" color={e.seller_status === 'approved' ? 'teal' : e.seller_status === 'rejected' ? 'red' : 'yellow'}>
                    {e.seller_status.replace('_', ' ')}
                  </Badge>
                </Table.Td>
                <Table.Td>{money(e.balance_minor, e.currency)}</Table.Td>
                <Table.Td>{money(e.reserved_minor, e.currency)}</Table.Td>
                <Table.Td fw={600} data-testid="queue-available">
                  {money(e.available_minor, e.currency)}
                </Table.Td>
                <Table.Td>
                  <Text size="xs" ff="monospace">
                    {(e.accounts ?? []).map((a) => a.iban).join(', ') || '—'}
                  </Text>
                </Table.Td>
                <Table.Td>
                  {e.hold ? (
                    <Text size="sm" c="orange" data-testid="queue-hold">
                      {e.hold}
                    </Text>
                  ) : (
                    <Button size="compact-sm" onClick={() => setPaying([e])} data-testid="queue-pay">
                      Pay
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={setPage} />}
      <Title order={4} mt="md">
        Negative balances
      </Title>
      <ErrorNote error={negative.error} />
      {negative.data && negative.data.length === 0 && (
        <Text size="sm" c="dimmed" data-testid="negative-empty">
          No seller's ledger sums below zero.
        </Text>
      )}
      {(negative.data ?? []).length > 0 && (
        <Table data-testid="negative-balances">
          <Table.Tbody>
            {(negative.data ?? []).map((n) => (
              <Table.Tr key={`${n.seller_id} ${n.currency}`} data-testid="negative-row">
                <Table.Td>{n.display_name || n.seller_id}</Table.Td>
                <Table.Td c="red">{money(n.balance_minor, n.currency)}</Table.Td>
                <Table.Td>
                  <Text size="xs" c="dimmed">
                    Refunds or chargebacks after a payout: later sales settle it.
                  </Text>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {paying && (
        <PayDialog
          entries={paying}
          onClose={() => setPaying(null)}
          onDrafted={(b) => {
            setPaying(null)
            onDrafted(b)
          }}
        />
      )}
    </Stack>
  )
}

/** The account a payout goes to: one of the seller's payout accounts (the queue lists them, IBANs masked). */
function AccountSelect({ accounts, value, onChange, testid }: { accounts: Account[]; value: string; onChange: (id: string) => void; testid: string }) {
  return (
    <NativeSelect
      label="Payout account"
      value={value}
      onChange={(e) => onChange(e.currentTarget.value)}
      data={accounts.map((a) => ({ value: a.id, label: `${a.holder_name} · ${a.iban} · ${a.bic}` }))}
      data-testid={testid}
    />
  )
}

/** The newest account: the default a payout goes to. */
const newest = (accounts: Account[]) => [...accounts].sort((a, b) => b.created_at.localeCompare(a.created_at))[0]?.id ?? ''

/** Drafts a batch paying each entry's seller (its available amount unless changed) to the account chosen. */
function PayDialog({ entries, onClose, onDrafted }: { entries: QueueEntry[]; onClose: () => void; onDrafted: (b: Batch) => void }) {
  const [amounts, setAmounts] = useState<string[]>(entries.map((e) => minorToMajor(e.available_minor, e.currency)))
  const [accounts, setAccounts] = useState<string[]>(entries.map((e) => newest(e.accounts ?? [])))
  const [version, setVersion] = useState<'' | '09' | '03'>('')
  const act = useAction()
  const draft = () =>
    act.run('draft', async () => {
      const list = entries.map((e, i) => {
        const amount = majorToMinor(amounts[i], e.currency)
        if (amount === null || amount < 1) throw new Error(`${e.display_name}: the amount is a positive number of ${e.currency}, with at most two decimals.`)
        if (amount > e.available_minor) throw new Error(`${e.display_name}: at most ${money(e.available_minor, e.currency)} is available.`)
        if (!accounts[i]) throw new Error(`${e.display_name}: choose the payout account.`)
        return { seller_id: e.seller_id, account_id: accounts[i], amount_minor: amount }
      })
      onDrafted(await post('/api/admin/marketplace/payouts/batches', { body: { entries: list, pain_version: version || undefined } }))
    })
  return (
    <Modal opened onClose={onClose} title={entries.length === 1 ? `Pay ${entries[0].display_name}` : `Pay ${entries.length} sellers`} size="lg">
      <Stack data-testid="pay-dialog">
        {entries.map((e, i) => (
          <Card key={`${e.seller_id} ${e.currency}`} withBorder p="sm" data-testid="pay-entry">
            <Stack gap="xs">
              <Text fw={600}>
                {e.display_name}: {money(e.available_minor, e.currency)} available
              </Text>
              <Group align="end" grow>
                <TextInput
                  label={`Amount (${e.currency})`}
                  value={amounts[i]}
                  onChange={(ev) => {
                    const v = ev.currentTarget.value
                    setAmounts((a) => a.map((x, j) => (j === i ? v : x)))
                  }}
                  inputMode="decimal"
                  maxLength={16}
                  data-testid="pay-amount"
                />
                <AccountSelect accounts={e.accounts ?? []} value={accounts[i]} onChange={(id) => setAccounts((a) => a.map((x, j) => (j === i ? id : x)))} testid="pay-account" />
              </Group>
            </Stack>
          </Card>
        ))}
        <NativeSelect
          label="SEPA file version"
          value={version}
          onChange={(e) => setVersion(e.currentTarget.value as '' | '09' | '03')}
          data={[
            { value: '', label: "The server's default" },
            { value: '09', label: 'pain.001.001.09' },
            { value: '03', label: 'pain.001.001.03' },
          ]}
          w={240}
          data-testid="pay-version"
        />
        <ErrorNote error={act.error} />
        <Group justify="end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button loading={act.busy === 'draft'} onClick={draft} data-testid="pay-draft">
            Draft the batch
          </Button>
        </Group>
      </Stack>
    </Modal>
  )
}

// ---------------------------------------------------------------------------
// Batches.

type BatchSort = 'created' | 'total' | 'status'
const firstOrder: Record<BatchSort, Order> = { created: 'desc', total: 'desc', status: 'asc' }
const batchPage = 25

function BatchesSubtab({ open, onOpen }: { open: string; onOpen: (id: string) => void }) {
  const [search, setSearch] = useState('')
  const [q] = useDebouncedValue(search.trim(), 250)
  const [status, setStatus] = useState('')
  const [sort, setSort] = useState<BatchSort>('created')
  const [order, setOrder] = useState<Order>('desc')
  const [page, setPage] = useState(1)
  useEffect(() => setPage(1), [q, status, sort, order])
  const board = useLoad(
    () =>
      get('/api/admin/marketplace/payouts/batches/board', {
        params: { query: { q: q || undefined, status: (status || undefined) as Batch['status'] | undefined, sort, order, page, page_size: batchPage } },
      }),
    [q, status, sort, order, page],
  )
  const sortBy = (k: BatchSort) => {
    if (k === sort) setOrder(order === 'asc' ? 'desc' : 'asc')
    else {
      setSort(k)
      setOrder(firstOrder[k])
    }
  }
  const data = board.data
  const rows = data?.rows ?? []
  const pages = data ? Math.max(1, Math.ceil(data.total / (data.page_size || batchPage))) : 1
  return (
    <Stack>
      {open && <BatchDetail key={open} id={open} onClose={() => onOpen('')} onChanged={() => board.reload()} />}
      <Group gap="xs">
        <TextInput placeholder="Search the message id" value={search} onChange={(e) => setSearch(e.currentTarget.value)} w={320} data-testid="batches-search" />
        {data && (
          <Badge variant="light" data-testid="batches-total">
            {count(data.total, 'batch', 'batches')}
          </Badge>
        )}
      </Group>
      <FacetChips name="Status" testid="batches-status" facets={data?.facets.status ?? []} value={status} onChange={setStatus} />
      <ErrorNote error={board.error} />
      {board.loading && !data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <Text c="dimmed" data-testid="batches-empty">
          {q || status ? 'No batch matches.' : 'No batch yet: pay sellers from the queue.'}
        </Text>
      ) : (
        <Table highlightOnHover data-testid="batches">
          <Table.Thead>
            <Table.Tr>
              <SortTh label="Created" column="created" sort={sort} order={order} onSort={sortBy} testid="batches-sort" />
              <Table.Th>Message id</Table.Th>
              <SortTh label="Status" column="status" sort={sort} order={order} onSort={sortBy} testid="batches-sort" />
              <SortTh label="Total" column="total" sort={sort} order={order} onSort={sortBy} testid="batches-sort" />
              <Table.Th>Transfers</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((b) => (
              <Table.Tr
                key={b.id}
                data-testid="batch-row"
                data-batch-id={b.id}
                data-status={b.status}
                onClick={() => onOpen(b.id)}
                style={{ cursor: 'pointer' }}
                bg={b.id === open ? 'var(--mantine-color-blue-light)' : undefined}
              >
                <Table.Td>{when(b.created_at)}</Table.Td>
                <Table.Td>
                  <Anchor component="button" type="button" ff="monospace" size="sm" data-testid="batch-open">
                    {b.message_id}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  <Badge color={batchColor[b.status] ?? 'gray'} variant="light">
                    {b.status}
                  </Badge>
                </Table.Td>
                <Table.Td>{money(b.total_minor, b.currency)}</Table.Td>
                <Table.Td>{b.item_count}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={setPage} data-testid="batches-pages" />}
    </Stack>
  )
}

/** A batch with its transfers and what may be done with it now. */
function BatchDetail({ id, onClose, onChanged }: { id: string; onClose: () => void; onChanged: () => unknown }) {
  const batch = useLoad(() => get('/api/admin/marketplace/payouts/batches/{id}', { params: { path: { id } } }), [id])
  const act = useAction()
  const [challenge, setChallenge] = useState<Schemas['BankChallenge'] | null>(null)
  const [tan, setTan] = useState('')
  const [report, setReport] = useState<Schemas['ReconcileReport'] | null>(null)
  const [cancelling, setCancelling] = useState<Batch | null>(null)
  const b = batch.data
  const done = async (next: Batch) => {
    batch.setData(next)
    await onChanged()
  }
  if (!b) return batch.error ? <ErrorNote error={batch.error} /> : <Loading />
  const path = { params: { path: { id } } }
  const approve = () => act.run('approve', async () => done(await post('/api/admin/marketplace/payouts/batches/{id}/approve', path)))
  const submit = () =>
    act.run('submit', async () => {
      const r = await post('/api/admin/marketplace/payouts/batches/{id}/submit', path)
      setChallenge(r.challenge ?? null)
      await done(r.batch)
    })
  const confirmTan = () =>
    act.run('tan', async () => {
      await done(await post('/api/admin/marketplace/payouts/batches/{id}/tan', { params: { path: { id } }, body: { tan: tan.trim() } }))
      setTan('')
      setChallenge(null)
    })
  const reconcile = () =>
    act.run('reconcile', async () => {
      const r = await post('/api/admin/marketplace/payouts/batches/{id}/reconcile', path)
      setReport(r)
      await done(r.batch)
    })
  const cancel = () => act.run('cancel', async () => done(await post('/api/admin/marketplace/payouts/batches/{id}/cancel', path)))
  const open = b.status !== 'reconciled' && b.status !== 'cancelled'
  return (
    <Card withBorder data-testid="batch-detail" data-batch-id={b.id} data-status={b.status}>
      <Stack gap="xs">
        <Group justify="space-between">
          <Group gap="xs">
            <Title order={4} ff="monospace" data-testid="batch-message-id">
              {b.message_id}
            </Title>
            <Badge color={batchColor[b.status] ?? 'gray'} variant="light" size="lg" data-testid="batch-status">
              {b.status}
            </Badge>
          </Group>
          <Button size="xs" variant="subtle" onClick={onClose}>
            Close
          </Button>
        </Group>
        <SimpleGrid cols={{ base: 2, sm: 4 }}>
          <Fact label="Total" value={money(b.total_minor, b.currency)} testid="batch-total" />
          <Fact label="Transfers" value={String(b.item_count)} />
          <Fact label="SEPA file" value={`pain.001.001.${b.pain_version}`} />
          <Fact label="Created" value={when(b.created_at)} />
          {b.approved_at && <Fact label="Approved" value={when(b.approved_at)} />}
          {b.submitted_at && <Fact label="Submitted" value={when(b.submitted_at)} />}
          {b.reconciled_at && <Fact label="Reconciled" value={when(b.reconciled_at)} />}
          {b.cancelled_at && <Fact label="Cancelled" value={when(b.cancelled_at)} />}
        </SimpleGrid>
        {b.sepa_sha256 && (
          <Group gap="xs">
            <Anchor href={`/api/admin/marketplace/payouts/batches/${b.id}/sepa_xml`} download={`${b.message_id}.pain001.xml`} data-testid="batch-sepa">
              Download the SEPA file
            </Anchor>
            <Text size="xs" c="dimmed">
              SHA-256 <Code>{b.sepa_sha256}</Code>
            </Text>
          </Group>
        )}
        <Table fz="sm" data-testid="batch-items">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Seller</Table.Th>
              <Table.Th>Account</Table.Th>
              <Table.Th>Amount</Table.Th>
              <Table.Th>End-to-end id</Table.Th>
              <Table.Th>Status</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(b.items ?? []).map((it) => (
              <Table.Tr key={it.id} data-testid="batch-item" data-end-to-end-id={it.end_to_end_id} data-status={it.status}>
                <Table.Td>{it.seller_name}</Table.Td>
                <Table.Td>
                  {it.holder_name}
                  <Text size="xs" ff="monospace" c="dimmed">
                    {it.iban} · {it.bic}
                  </Text>
                </Table.Td>
                <Table.Td>{money(it.amount_minor, b.currency)}</Table.Td>
                <Table.Td ff="monospace">{it.end_to_end_id}</Table.Td>
                <Table.Td>
                  <Badge size="sm" color={itemColor[it.status] ?? 'gray'} variant="light">
                    {it.status}
                  </Badge>
                  {it.reason && (
                    <Text size="xs" c="red">
                      {it.reason}
                    </Text>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {b.status === 'submitting' && (
          <Alert color="yellow" title="The bank asks for a TAN" data-testid="batch-challenge">
            <Stack gap="xs">
              <Text size="sm" data-testid="batch-challenge-message">
                {challenge?.message ?? 'Confirm the batch as the bank asked (in its app or by the TAN it sent), then enter the TAN.'}
              </Text>
              <Group align="end">
                <TextInput label="TAN" value={tan} onChange={(e) => setTan(e.currentTarget.value)} maxLength={64} autoComplete="one-time-code" w={200} data-testid="batch-tan" />
                <Button onClick={confirmTan} loading={act.busy === 'tan'} disabled={!tan.trim()} data-testid="batch-tan-confirm">
                  Confirm
                </Button>
              </Group>
            </Stack>
          </Alert>
        )}
        {report && (
          <Alert color={report.rejected_minor > 0 ? 'orange' : report.pending_minor > 0 ? 'blue' : 'teal'} title="The bank's report" data-testid="batch-report">
            <Text size="sm">
              Paid <b data-testid="report-paid">{money(report.paid_minor, b.currency)}</b>, rejected <b data-testid="report-rejected">{money(report.rejected_minor, b.currency)}</b>,
              pending <b data-testid="report-pending">{money(report.pending_minor, b.currency)}</b>.
              {report.pending_minor > 0 ? ' The bank has not decided every transfer: reconcile again later.' : ''}
            </Text>
          </Alert>
        )}
        <Group gap="xs">
          {b.status === 'draft' && (
            <Button onClick={approve} loading={act.busy === 'approve'} data-testid="batch-approve">
              Approve (writes the SEPA file)
            </Button>
          )}
          {b.status === 'approved' && (
            <Button onClick={submit} loading={act.busy === 'submit'} data-testid="batch-submit">
              Submit to the bank
            </Button>
          )}
          {b.status === 'submitted' && (
            <Button onClick={reconcile} loading={act.busy === 'reconcile'} data-testid="batch-reconcile">
              Reconcile
            </Button>
          )}
          {open && (
            <Button color="red" variant="light" onClick={() => setCancelling(b)} loading={act.busy === 'cancel'} data-testid="batch-cancel">
              Cancel the batch
            </Button>
          )}
        </Group>
        <ErrorNote error={act.error} />
      </Stack>
      <Confirm
        item={cancelling}
        title={(x) => `Cancel ${x.message_id}?`}
        message={(x) =>
          x.status === 'submitted' || x.status === 'submitting'
            ? 'The bank is asked to withdraw it; it refuses once it has executed the batch. Its amounts become available again.'
            : 'Its amounts become available again; nothing was sent to the bank.'
        }
        action={() => 'Cancel the batch'}
        testid="batch-cancel-confirm"
        onCancel={() => setCancelling(null)}
        onConfirm={cancel}
      />
    </Card>
  )
}

function Fact({ label, value, testid }: { label: string; value: string; testid?: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text size="sm" data-testid={testid}>
        {value}
      </Text>
    </div>
  )
}

// ---------------------------------------------------------------------------
// Fees.

function FeesSubtab() {
  const fees = useLoad(() => get('/api/admin/marketplace/fee-settings'), [])
  const [pkg, setPkg] = useState<string | null>(null)
  const [runner, setRunner] = useState<string | null>(null)
  const act = useAction()
  const [saved, setSaved] = useState(false)
  const f = fees.data
  if (!f) return fees.error ? <ErrorNote error={fees.error} /> : <Loading />
  const pkgText = pkg ?? String(f.package_fee_percent)
  const runnerText = runner ?? String(f.runner_fee_percent)
  const percent = (label: string, text: string) => {
    if (!/^-?\d{1,4}$/.test(text.trim())) throw new Error(`${label}: a whole number of percent.`)
    return Number(text.trim())
  }
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        setSaved(false)
        act.run('save', async () => {
          // Out-of-range values go to the server as typed: its answer says what is allowed.
          const next = await put('/api/admin/marketplace/fee-settings', {
            body: { package_fee_percent: percent('Package fee', pkgText), runner_fee_percent: percent('Runner fee', runnerText) },
          })
          fees.setData(next)
          setPkg(null)
          setRunner(null)
          setSaved(true)
        })
      }}
    >
      <Stack maw={560} data-testid="fees">
        <Text size="sm" c="dimmed">
          The platform's share of each sale, in percent (0 to 100). Future sales settle with the fees in force when they are paid; past ledger entries keep theirs.
        </Text>
        <Group grow align="start">
          <TextInput label="Package fee (%)" description="Of each marketplace item sale" value={pkgText} onChange={(e) => setPkg(e.currentTarget.value)} inputMode="numeric" data-testid="fee-package" />
          <TextInput label="Runner fee (%)" description="Of each runner usage charge" value={runnerText} onChange={(e) => setRunner(e.currentTarget.value)} inputMode="numeric" data-testid="fee-runner" />
        </Group>
        <Text size="xs" c="dimmed" data-testid="fees-updated">
          {f.updated_at ? `Set ${when(f.updated_at)}.` : 'The defaults apply: no admin has set them yet.'}
        </Text>
        <ErrorNote error={act.error} />
        {saved && !act.error && (
          <Text size="sm" c="teal" data-testid="fees-saved">
            Saved.
          </Text>
        )}
        <Button type="submit" w="fit-content" loading={act.busy === 'save'} data-testid="fees-save">
          Save the fees
        </Button>
      </Stack>
    </form>
  )
}
