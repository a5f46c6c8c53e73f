// The marketplace's commerce without a payment provider and with a bank's
// payment API that asks for a TAN. Without Stripe, publishing a price
// needs a seller profile first (the Publish tab says so, and shows the
// server's refusal), and the item page completes a purchase itself
// (development). In the owner console a drafted batch is cancelled (its
// amount available again); the next one is approved and submitted: the
// bank's challenge is shown with a TAN field, a wrong TAN is refused, the
// right one executes it; the bank rejects the transfer, and reconciling
// shows the rejection with its reason (the amount is available again). The
// API is asked at each step whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { adminSession, admin, apiSession, browser, startServer, until } from './harness.mjs'

const seller = { email: 'sid@example.test', password: 'sid-passphrase-123', name: 'Sid Seller' }
const buyer = { email: 'bob@example.test', password: 'bob-passphrase-123', name: 'Bob Buyer' }
const bankToken = 'bank-token-e2e-0123456789'
const challengeMessage = 'Confirm the transfer in your banking app and enter the TAN it shows.'
const rightTAN = '424242'

let server, chrome, bank
const pages = {}
const api = {}
const state = {}

/**
 * A bank's payment API (what bank.API speaks): a pain.001 upload answered
 * with a TAN challenge, the TAN, a pain.002 status report of the outcomes
 * the test decides, cancellation.
 */
async function startBank() {
  const st = { batches: new Map(), outcomes: new Map(), tans: [], n: 0 }
  const srv = http.createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      const json = (status, obj) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(obj))
      if (req.headers.authorization !== `Bearer ${bankToken}`) return json(401, { error: 'unauthorized' })
      const m = req.url.match(/^\/v1\/payments\/batches(?:\/([^/]+)\/(tan|status|cancel))?$/)
      if (!m) return json(404, { error: 'not found' })
      if (!m[1] && req.method === 'POST') {
        const id = `bank-${++st.n}`
        const endToEnd = [...raw.matchAll(/<EndToEndId>([^<]+)<\/EndToEndId>/g)].map((x) => x[1])
        st.batches.set(id, { id, messageId: req.headers['x-message-id'], doc: raw, endToEnd, state: 'challenge', challenge: `ch-${st.n}` })
        return json(201, { id, status: 'challenge', challenge: { id: `ch-${st.n}`, message: challengeMessage } })
      }
      const b = st.batches.get(decodeURIComponent(m[1] ?? ''))
      if (!b) return json(404, { error: 'no such batch' })
      if (m[2] === 'tan' && req.method === 'POST') {
        const { challenge_id: challenge, tan } = JSON.parse(raw)
        st.tans.push(tan)
        if (challenge !== b.challenge || tan !== rightTAN) return json(422, { error: 'the TAN is not right' })
        b.state = 'accepted'
        return json(200, {})
      }
      if (m[2] === 'status' && req.method === 'GET') {
        const txs = b.endToEnd
          .filter((e) => st.outcomes.has(e))
          .map((e) => {
            const o = st.outcomes.get(e)
            const why = o.reason ? `<StsRsnInf><Rsn><Cd>${o.reason.code}</Cd></Rsn><AddtlInf>${o.reason.info}</AddtlInf></StsRsnInf>` : ''
            return `<TxInfAndSts><OrgnlEndToEndId>${e}</OrgnlEndToEndId><TxSts>${o.status}</TxSts>${why}</TxInfAndSts>`
          })
        const doc = `<?xml version="1.0" encoding="UTF-8"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.10"><CstmrPmtStsRpt><OrgnlGrpInfAndSts><OrgnlMsgId>${b.messageId}</OrgnlMsgId></OrgnlGrpInfAndSts><OrgnlPmtInfAndSts>${txs.join('')}</OrgnlPmtInfAndSts></CstmrPmtStsRpt></Document>`
        return res.writeHead(200, { 'Content-Type': 'application/xml' }).end(doc)
      }
      if (m[2] === 'cancel' && req.method === 'POST') {
        if (b.endToEnd.some((e) => st.outcomes.has(e))) return json(409, { error: 'the batch was executed' })
        b.state = 'cancelled'
        return json(200, {})
      }
      json(405, { error: 'method not allowed' })
    })
  })
  await new Promise((r) => srv.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    state: st,
    stop: () => {
      srv.closeAllConnections()
      return new Promise((r) => srv.close(r))
    },
  }
}

async function signIn(p, who) {
  await p.goto(server.url + '/login')
  await p.getByLabel('Email').fill(who.email)
  await p.locator('input[type=password]').fill(who.password)
  await p.getByRole('button', { name: 'Sign in' }).click()
  await p.waitForURL(/\/tasks\/board|\/projects/)
}

async function newPage() {
  const ctx = await chrome.newContext({ viewport: { width: 1400, height: 1000 } })
  const p = await ctx.newPage()
  p.setDefaultTimeout(20_000)
  return p
}

async function person(who) {
  const r = await fetch(server.url + '/api/auth/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: who.email, password: who.password, display_name: who.name }),
  })
  assert.ok(r.ok, `register: ${r.status}`)
  const pending = await api.admin('GET', '/api/admin/users/pending')
  await api.admin('POST', `/api/admin/users/${pending.users.find((u) => u.email === who.email).id}/approve`)
  return apiSession(server.url, who.email, who.password)
}

async function statusOf(p) {
  try {
    await p
    return 200
  } catch (e) {
    return Number(/: (\d{3}) /.exec(e.message)?.[1] ?? 0)
  }
}

before(async () => {
  bank = await startBank()
  server = await startServer({
    env: {
      // No payment provider: purchases complete in development.
      STRIPE_WEBHOOK_SECRET: '',
      STRIPE_SECRET_KEY: '',
      SERVICE_PAYOUT_DEBTOR_NAME: 'Slipway Marketplace GmbH',
      SERVICE_PAYOUT_DEBTOR_IBAN: 'DE89370400440532013000',
      SERVICE_PAYOUT_DEBTOR_BIC: 'COBADEFFXXX',
      SERVICE_PAYOUT_BANK: 'api',
      SERVICE_PAYOUT_BANK_URL: bank.url,
      SERVICE_PAYOUT_BANK_TOKEN: bankToken,
    },
  })
  chrome = await browser()
  api.admin = await adminSession(server.url)
  api.sid = await person(seller)
  api.bob = await person(buyer)
  pages.admin = await newPage()
  pages.sid = await newPage()
  pages.bob = await newPage()
  await Promise.all([signIn(pages.admin, admin), signIn(pages.sid, seller), signIn(pages.bob, buyer)])
})

after(async () => {
  await chrome?.close()
  await server?.stop()
  await bank?.stop()
})

test('a price needs a seller profile: the Publish tab says so and shows the refusal; with one it publishes', async () => {
  const script = await api.sid('POST', '/api/scripts', { name: 'Counter', slug: 'counter', language: 'sh', source: "echo '{\"n\": 1}'\n" })
  const p = pages.sid
  await p.goto(server.url + '/marketplace?tab=publish')
  await until('the script offered', async () => (await p.getByTestId('publish-script').locator('option').count()) === 1 || 'none')
  await p.getByTestId('publish-changelog').fill('First version.')
  await p.getByTestId('publish-sell').check()
  await p.getByTestId('publish-needs-seller').waitFor()
  await p.getByTestId('publish-price-amount').fill('12')
  await p.getByTestId('publish-price-interval').getByText('Monthly').click()
  assert.equal(await p.getByTestId('publish-price-preview').textContent(), '€12.00 / month (1200 minor units)')
  await p.getByTestId('publish').click()
  await p.getByText(/a paid listing needs your seller profile first/).waitFor()
  assert.equal((await api.sid('GET', '/api/marketplace/items?q=counter')).total, 0)

  // The profile and an account (through the API: the Selling tab is the other file's), then the same form publishes.
  state.sellerId = (await api.sid('POST', '/api/marketplace/seller/profile', { display_name: 'Sid Scripts', country: 'FR' })).id
  state.account = (await api.sid('POST', '/api/marketplace/seller/payout-account', { holder_name: 'Sid Seller', iban: 'FR1420041010050500013M02606', bic: 'PSSTFRPPPAR' })).id
  await p.getByTestId('publish').click()
  await p.getByTestId('published').waitFor()
  const [item] = (await api.sid('GET', '/api/marketplace/items?q=counter')).items
  assert.deepEqual(item.price, { amount_minor: 1200, currency: 'EUR', interval: 'month' })
  await api.admin('POST', `/api/admin/marketplace/items/${item.id}/review/approve`, {})
  state.item = item.id
  assert.ok(script.id)
})

test('without a payment provider the item page completes the purchase (development)', async () => {
  const p = pages.bob
  await p.goto(`${server.url}/marketplace/${state.item}`)
  assert.equal(await p.getByTestId('item-price').textContent(), '€12.00 / month')
  assert.equal(await statusOf(api.bob('GET', `/api/marketplace/items/${state.item}/files`)), 403)
  await p.getByTestId('buy').click()
  await p.getByTestId('dev-complete').waitFor()
  assert.equal(await p.getByTestId('pay-stripe').count(), 0, 'no provider: no Stripe link')
  assert.equal(await p.getByTestId('dev-complete').textContent(), 'Complete purchase (development: no payment provider)')
  const [pending] = (await api.bob('GET', '/api/marketplace/purchases?status=pending')).items
  assert.equal(pending.item_id, state.item)
  await p.getByTestId('dev-complete').click()
  await p.getByTestId('checkout-confirmed').waitFor()
  assert.equal(await p.getByTestId('subscription').getByTestId('purchase-status').textContent(), 'active')
  const sub = await api.bob('GET', `/api/marketplace/items/${state.item}/subscription`)
  assert.deepEqual([sub.id, sub.status, sub.interval], [pending.id, 'active', 'month'])
  assert.ok((await api.bob('GET', `/api/marketplace/items/${state.item}/files`)).length > 0)
  const ledger = await api.sid('GET', '/api/marketplace/seller/ledger')
  assert.deepEqual(ledger.balances, [{ currency: 'EUR', amount_minor: 1080 }], 'the sale less the default 10% fee')
})

test('a drafted batch is cancelled: its amount is available again', async () => {
  const p = pages.admin
  await p.goto(server.url + '/admin/?tab=payouts&subtab=queue')
  const row = p.locator(`[data-testid=queue-row][data-seller-id="${state.sellerId}"]`)
  await row.getByTestId('queue-pay').click()
  const dialog = p.getByTestId('pay-dialog')
  assert.equal(await dialog.getByTestId('pay-amount').inputValue(), '10.80')
  await dialog.getByTestId('pay-amount').fill('5')
  await dialog.getByTestId('pay-draft').click()
  await p.waitForURL(/subtab=batches&batch=/)
  const id = new URL(p.url()).searchParams.get('batch')
  const detail = p.getByTestId('batch-detail')
  await detail.getByTestId('batch-status').waitFor()
  assert.equal((await api.admin('GET', `/api/admin/marketplace/payouts/batches/${id}`)).total_minor, 500)
  assert.equal((await api.admin('GET', '/api/admin/marketplace/payouts/queue')).items[0].available_minor, 580)
  await detail.getByTestId('batch-cancel').click()
  await p.getByTestId('batch-cancel-confirm').click()
  await until('cancelled', async () => (await detail.getByTestId('batch-status').textContent()) === 'cancelled' || 'not yet')
  assert.equal((await api.admin('GET', `/api/admin/marketplace/payouts/batches/${id}`)).status, 'cancelled')
  assert.equal((await api.admin('GET', '/api/admin/marketplace/payouts/queue')).items[0].available_minor, 1080)
  assert.equal(await detail.getByTestId('batch-cancel').count(), 0)
  assert.equal(bank.state.batches.size, 0, 'nothing reached the bank')
})

test('the bank asks a TAN: its challenge and a TAN field; a wrong TAN is refused; it rejects the transfer, reconciling shows why', async () => {
  const p = pages.admin
  await p.goto(server.url + '/admin/?tab=payouts&subtab=queue')
  await p.locator(`[data-testid=queue-row][data-seller-id="${state.sellerId}"]`).getByTestId('queue-pay').click()
  const dialog = p.getByTestId('pay-dialog')
  assert.equal(await dialog.getByTestId('pay-account').inputValue(), state.account)
  await dialog.getByTestId('pay-version').selectOption('03')
  await dialog.getByTestId('pay-draft').click()
  await p.waitForURL(/subtab=batches&batch=/)
  const id = new URL(p.url()).searchParams.get('batch')
  const detail = p.getByTestId('batch-detail')
  await detail.getByTestId('batch-approve').click()
  await detail.getByTestId('batch-submit').click()
  await detail.getByTestId('batch-challenge').waitFor()
  assert.equal(await detail.getByTestId('batch-challenge-message').textContent(), challengeMessage)
  assert.equal(await detail.getByTestId('batch-status').textContent(), 'submitting')
  let batch = await api.admin('GET', `/api/admin/marketplace/payouts/batches/${id}`)
  assert.deepEqual([batch.status, batch.pain_version], ['submitting', '03'])
  const [sent] = [...bank.state.batches.values()]
  assert.equal(sent.messageId, batch.message_id)
  assert.match(sent.doc, /pain\.001\.001\.03/)
  assert.ok(sent.doc.includes('FR1420041010050500013M02606'))

  await detail.getByTestId('batch-tan').fill('000000')
  await detail.getByTestId('batch-tan-confirm').click()
  await detail.getByRole('alert').filter({ hasText: 'the TAN is not right' }).waitFor()
  assert.equal((await api.admin('GET', `/api/admin/marketplace/payouts/batches/${id}`)).status, 'submitting')
  await detail.getByTestId('batch-tan').fill(rightTAN)
  await detail.getByTestId('batch-tan-confirm').click()
  await until('submitted', async () => (await detail.getByTestId('batch-status').textContent()) === 'submitted' || 'not yet')
  assert.equal(await detail.getByTestId('batch-challenge').count(), 0)
  assert.deepEqual(bank.state.tans, ['000000', rightTAN])
  assert.equal((await api.admin('GET', `/api/admin/marketplace/payouts/batches/${id}`)).status, 'submitted')

  // The bank rejects the transfer: reconciling says so, with the bank's reason.
  bank.state.outcomes.set(sent.endToEnd[0], { status: 'RJCT', reason: { code: 'AC04', info: 'Closed account' } })
  await detail.getByTestId('batch-reconcile').click()
  await detail.getByTestId('batch-report').waitFor()
  await until('reconciled', async () => (await detail.getByTestId('batch-status').textContent()) === 'reconciled' || 'not yet')
  assert.equal(await detail.getByTestId('report-rejected').textContent(), '€10.80')
  assert.equal(await detail.getByTestId('report-paid').textContent(), '€0.00')
  assert.equal(await detail.getByTestId('batch-item').getAttribute('data-status'), 'rejected')
  assert.match(await detail.getByTestId('batch-item').textContent(), /AC04 Closed account/)
  batch = await api.admin('GET', `/api/admin/marketplace/payouts/batches/${id}`)
  assert.deepEqual([batch.status, batch.items[0].status, batch.items[0].reason], ['reconciled', 'rejected', 'AC04 Closed account'])
  // Nothing was paid: the balance stands and is available again.
  assert.deepEqual((await api.sid('GET', '/api/marketplace/seller/ledger')).balances, [{ currency: 'EUR', amount_minor: 1080 }])
  assert.equal((await api.admin('GET', '/api/admin/marketplace/payouts/queue')).items[0].available_minor, 1080)
  // The board's facet: one cancelled, one reconciled.
  await until('the facets', async () => ((await p.getByTestId('batches-status-reconciled').count()) === 1 && (await p.getByTestId('batches-status-cancelled').count()) === 1) || 'not yet')
  await p.getByTestId('batches-status-cancelled').click()
  await until('one row', async () => (await p.getByTestId('batch-row').count()) === 1 || 'not yet')
  assert.equal(await p.getByTestId('batch-row').getAttribute('data-status'), 'cancelled')
})
