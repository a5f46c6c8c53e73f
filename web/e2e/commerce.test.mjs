// The marketplace's commerce through the console, with a payment provider
// (the harness's Stripe double) and the file bank. Sam becomes a seller and
// adds a payout account in the Selling tab (a bad IBAN is refused first),
// publishes a script with a price from the Publish tab; once the instance
// admin approves it, Bea buys it from its page: Stripe's page, then the
// return, where the page waits until Stripe's signed
// checkout.session.completed event arrives; her workspace holds the
// license (its files and its install work now) and her Purchases tab shows
// it with its invoice. Sam's ledger shows the sale and the platform's fee.
// Ada, the instance admin, sets the fee in the owner console (an
// out-of-range value shows the server's refusal); a monthly subscription
// bought then pays the new fee, and Bea cancels it at the period's end and
// then at once (a credit note, a refund in Sam's ledger). Ada pays Sam from
// the payout queue: the batch is drafted, approved (its SEPA file
// downloads), submitted (the file bank writes it), and reconciled from the
// bank's pain.002 report; Sam's balance is paid out. The API is asked at
// each step whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { admin, adminSession, apiSession, browser, marketSessionCompleted, startServer, until } from './harness.mjs'

const seller = { email: 'sam@example.test', password: 'sam-passphrase-123', name: 'Sam Seller' }
const buyer = { email: 'bea@example.test', password: 'bea-passphrase-123', name: 'Bea Buyer' }
const sellerIBAN = 'DE44500105175407324931'
const sellerBIC = 'INGDDEFFXXX'
const payoutDir = mkdtempSync(path.join(tmpdir(), 'slipway-payouts-'))

let server, chrome
const pages = {}
const api = {}
const state = {}

async function signIn(p, who) {
  await p.goto(server.url + '/login')
  await p.getByLabel('Email').fill(who.email)
  await p.locator('input[type=password]').fill(who.password)
  await p.getByRole('button', { name: 'Sign in' }).click()
  await p.waitForURL(/\/tasks\/board|\/projects/)
}

async function newPage() {
  const ctx = await chrome.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true })
  const p = await ctx.newPage()
  p.setDefaultTimeout(20_000)
  return p
}

/** Registers a person and has the admin approve the account; answers an API session of theirs. */
async function person(who) {
  const r = await fetch(server.url + '/api/auth/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: who.email, password: who.password, display_name: who.name }),
  })
  assert.ok(r.ok, `register: ${r.status}`)
  const pending = await api.ada('GET', '/api/admin/users/pending')
  await api.ada('POST', `/api/admin/users/${pending.users.find((u) => u.email === who.email).id}/approve`)
  return apiSession(server.url, who.email, who.password)
}

/** The status an API call answers (its error's, or 200). */
async function statusOf(p) {
  try {
    await p
    return 200
  } catch (e) {
    return Number(/: (\d{3}) /.exec(e.message)?.[1] ?? 0)
  }
}

const shots = process.env.SCREENSHOTS // a directory: screenshots go there

async function shot(p, name) {
  if (!shots) return
  await p.evaluate(() => window.scrollTo(0, 0))
  await p.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true })
}

const text = async (locator) => (await locator.textContent()).replace(/\s+/g, ' ').trim()

before(async () => {
  server = await startServer({
    env: (url) => ({
      PUBLIC_URL: url, // where Stripe sends the buyer back
      SERVICE_PAYOUT_DEBTOR_NAME: 'Slipway Marketplace GmbH',
      SERVICE_PAYOUT_DEBTOR_IBAN: 'DE89370400440532013000',
      SERVICE_PAYOUT_DEBTOR_BIC: 'COBADEFFXXX',
      SERVICE_PAYOUT_DIR: payoutDir,
    }),
  })
  chrome = await browser()
  api.ada = await adminSession(server.url)
  api.sam = await person(seller)
  api.bea = await person(buyer)
  pages.ada = await newPage()
  pages.sam = await newPage()
  pages.bea = await newPage()
  await Promise.all([signIn(pages.ada, admin), signIn(pages.sam, seller), signIn(pages.bea, buyer)])
})

after(async () => {
  await chrome?.close()
  await server?.stop()
})

test('Sam becomes a seller and adds a payout account in the Selling tab; a bad IBAN is refused first', async () => {
  const p = pages.sam
  await p.goto(server.url + '/marketplace?tab=selling')
  await p.getByTestId('become-seller').waitFor()
  assert.equal(await statusOf(api.sam('GET', '/api/marketplace/seller/profile')), 404)
  await p.getByTestId('seller-display-name').fill('Sam Scripts')
  await p.getByTestId('seller-country').fill('de')
  await p.getByTestId('seller-create').click()
  await p.getByTestId('seller-profile').waitFor()
  assert.equal(await p.getByTestId('seller-status').textContent(), 'pending review')
  const profile = await api.sam('GET', '/api/marketplace/seller/profile')
  assert.deepEqual([profile.display_name, profile.country, profile.status], ['Sam Scripts', 'DE', 'pending_review'])
  state.sellerId = profile.id

  // A wrong check digit: the server's message, and no account.
  await p.getByTestId('payout-accounts-empty').waitFor()
  await p.getByTestId('account-holder').fill('Sam Seller')
  await p.getByTestId('account-iban').fill('DE44 5001 0517 5407 3249 32')
  await p.getByTestId('account-bic').fill(sellerBIC)
  await p.getByTestId('account-add').click()
  const alert = p.getByTestId('payout-accounts').getByRole('alert')
  await alert.waitFor()
  assert.match(await alert.textContent(), /iban: not a valid IBAN/)
  assert.deepEqual(await api.sam('GET', '/api/marketplace/seller/payout-accounts'), [])

  await p.getByTestId('account-iban').fill('DE44 5001 0517 5407 3249 31')
  await p.getByTestId('account-add').click()
  await p.getByTestId('payout-account').waitFor()
  assert.equal(await alert.count(), 0)
  const [account] = await api.sam('GET', '/api/marketplace/seller/payout-accounts')
  assert.deepEqual([account.holder_name, account.iban, account.bic], ['Sam Seller', 'DE44 •••• 4931', sellerBIC])
  assert.equal(await p.getByTestId('payout-account-iban').textContent(), 'DE44 •••• 4931')
  assert.ok(!(await p.content()).includes('5407324931'), 'the full IBAN is not on the page')
  state.accountId = account.id
  assert.equal(await p.getByTestId('payout-account').getAttribute('data-account-id'), account.id)
  // Nothing sold yet.
  await p.getByTestId('ledger-empty').waitFor()
  await p.getByTestId('sales-empty').waitFor()
  await shot(p, 'commerce-selling-new')
})

test('Sam publishes a script with a price from the Publish tab; the instance admin approves it', async () => {
  await api.sam('POST', '/api/scripts', { name: 'Greeter', slug: 'greeter', language: 'sh', source: "echo '{\"hi\": 1}'\n" })
  const p = pages.sam
  await p.goto(server.url + '/marketplace?tab=publish')
  await until('the script offered', async () => (await p.getByTestId('publish-script').locator('option').count()) === 1 || 'none')
  await p.getByTestId('publish-summary').fill('Says hello.')
  await p.getByTestId('publish-changelog').fill('First version.')
  await p.getByTestId('publish-sell').check()
  // An amount with three decimals does not read: refused before it is sent.
  await p.getByTestId('publish-price-amount').fill('4.999')
  await p.getByTestId('publish').click()
  await p.getByRole('alert').waitFor()
  assert.match(await p.getByRole('alert').textContent(), /Price: a positive amount in EUR, with at most 2 decimals/)
  assert.equal((await api.sam('GET', '/api/marketplace/items?q=greeter')).total, 0)
  await p.getByTestId('publish-price-amount').fill('4.99')
  assert.equal(await p.getByTestId('publish-price-preview').textContent(), '€4.99 once (499 minor units)')
  await shot(p, 'commerce-publish-price')
  await p.getByTestId('publish').click()
  await p.getByTestId('published').waitFor()
  assert.match(await p.getByTestId('published-price').textContent(), /€4\.99 once/)
  const [item] = (await api.sam('GET', '/api/marketplace/items?q=greeter')).items
  assert.equal(item.paid, true)
  assert.deepEqual(item.price, { amount_minor: 499, currency: 'EUR', interval: 'once' })
  state.item = item.id
  await api.ada('POST', `/api/admin/marketplace/items/${item.id}/review/approve`, {})
  assert.equal((await api.bea('GET', `/api/marketplace/items/${item.id}`)).verified, true)
  // The catalog shows its price.
  await p.goto(server.url + '/marketplace')
  assert.equal(await p.getByTestId('market-item-greeter').getByTestId('market-item-price').textContent(), '€4.99 once')
  // Its publisher's page says it is sold, offers no purchase.
  await p.goto(`${server.url}/marketplace/${item.id}`)
  await p.getByTestId('item-yours').waitFor()
  assert.equal(await p.getByTestId('buy').count(), 0)
})

test('Bea buys it from its page: Stripe, then its signed event; the license opens the files and the install', async () => {
  const p = pages.bea
  await p.goto(`${server.url}/marketplace/${state.item}`)
  assert.equal(await p.getByTestId('item-price').textContent(), '€4.99 once')
  await p.getByTestId('install-needs-license').waitFor()
  assert.equal(await p.getByTestId('install-preview').isDisabled(), true)
  assert.equal(await statusOf(api.bea('GET', `/api/marketplace/items/${state.item}/files`)), 403)
  assert.equal(await api.bea('GET', `/api/marketplace/items/${state.item}/subscription`), null)

  await p.getByTestId('buy').click()
  await p.getByTestId('pay-stripe').waitFor()
  await shot(p, 'commerce-item-checkout')
  const [pending] = (await api.bea('GET', '/api/marketplace/purchases?status=pending')).items
  assert.deepEqual([pending.item_id, pending.amount_minor, pending.currency, pending.interval], [state.item, 499, 'EUR', 'once'])
  state.purchase = pending.id
  // Stripe's page: the inline price the server asked for.
  const href = await p.getByTestId('pay-stripe').getAttribute('href')
  assert.ok(href.startsWith(server.stripe.url + '/pay/'), href)
  state.session = href.split('/').pop()
  const session = server.stripe.state.sessions.get(state.session)
  assert.deepEqual([session.mode, session.amount, session.currency, session.name, session.purchase], ['payment', 499, 'eur', 'Greeter', pending.id])
  await p.getByTestId('pay-stripe').click()
  await p.waitForURL((u) => u.href.startsWith(server.stripe.url + '/pay/'))
  assert.equal(await p.getByTestId('stripe-what').textContent(), 'Greeter: 499 EUR')
  await p.getByTestId('stripe-pay').click()
  // Back before Stripe's event: the page waits for it.
  await p.waitForURL((u) => u.href === `${server.url}/marketplace/${state.item}?purchase=${pending.id}`)
  await p.getByTestId('checkout-waiting').waitFor()
  assert.equal((await api.bea('GET', `/api/marketplace/purchases/${pending.id}`)).status, 'pending')
  assert.equal(await statusOf(api.bea('GET', `/api/marketplace/items/${state.item}/files`)), 403)

  // Stripe delivers checkout.session.completed, signed.
  const r = await marketSessionCompleted(server, state.session)
  assert.equal(r.status, 200, await r.text())
  await p.getByTestId('checkout-confirmed').waitFor()
  assert.equal(await p.getByTestId('subscription').getByTestId('purchase-status').textContent(), 'active')
  await shot(p, 'commerce-item-licensed')
  const sub = await api.bea('GET', `/api/marketplace/items/${state.item}/subscription`)
  assert.deepEqual([sub.id, sub.status, sub.period_end], [pending.id, 'active', null])
  assert.equal(await p.getByTestId('buy').count(), 0)
  // Delivered again (Stripe retries): still one sale.
  const again = await marketSessionCompleted(server, state.session)
  assert.equal(again.status, 200)

  // The license: its files, and the install from the page.
  const files = await api.bea('GET', `/api/marketplace/items/${state.item}/files`)
  assert.ok(files.length > 0)
  assert.equal(await p.getByTestId('install-needs-license').count(), 0)
  await p.getByTestId('install-preview').click()
  await p.getByTestId('install').click()
  await until('installed', async () => (await p.getByTestId('installed-version').textContent()) === '1.0.0' || 'not yet')
  const installs = await api.bea('GET', '/api/marketplace/installs')
  assert.deepEqual(installs.map((i) => [i.item_id, i.version]), [[state.item, '1.0.0']])
})

test("Bea's Purchases tab: the purchase with its invoice, and the status filter", async () => {
  const p = pages.bea
  await p.goto(server.url + '/marketplace?tab=purchases')
  const row = p.locator(`[data-testid=purchase-row][data-purchase-id="${state.purchase}"]`)
  await row.waitFor()
  assert.equal(await row.getByTestId('purchase-status').textContent(), 'active')
  assert.equal(await row.getByTestId('purchase-price').textContent(), '€4.99 once')
  // A one-time purchase does not renew: nothing to cancel.
  assert.equal(await row.getByTestId('purchase-cancel-now').count(), 0)
  await row.getByTestId('purchase-invoices').click()
  const invoice = p.getByTestId('invoice-row')
  await invoice.waitFor()
  const [inv] = await api.bea('GET', `/api/marketplace/purchases/${state.purchase}/invoices`)
  assert.deepEqual([inv.amount_minor, inv.currency], [499, 'EUR'])
  assert.equal(await invoice.getByTestId('invoice-number').textContent(), inv.number)
  assert.equal(await invoice.getByTestId('invoice-amount').textContent(), '€4.99')
  await shot(p, 'commerce-purchases')
  await p.getByTestId('purchases-status').selectOption('cancelled')
  await p.getByTestId('purchases-empty').waitFor()
  assert.equal((await api.bea('GET', '/api/marketplace/purchases?status=cancelled')).total, 0)
  await p.getByTestId('purchases-status').selectOption('active')
  await row.waitFor()
  assert.equal((await api.bea('GET', '/api/marketplace/purchases?status=active')).total, 1)
})

test("Sam's ledger: the sale and the platform's fee, the balance; the sale among the purchases of his items", async () => {
  const p = pages.sam
  await p.goto(server.url + '/marketplace?tab=selling')
  await until('two entries', async () => (await p.getByTestId('ledger-row').count()) === 2 || (await p.getByTestId('ledger-row').count()))
  const ledger = await api.sam('GET', '/api/marketplace/seller/ledger')
  const kinds = Object.fromEntries(ledger.items.map((e) => [e.kind, e.amount_minor]))
  assert.deepEqual(kinds, { sale: 499, fee: -49 }, 'the default fee: 10%, rounded down')
  assert.deepEqual(ledger.balances, [{ currency: 'EUR', amount_minor: 450 }])
  assert.equal(await p.getByTestId('balance-EUR').textContent(), '€4.50')
  assert.equal(await p.locator('[data-testid=ledger-row][data-kind=sale]').getByTestId('ledger-amount').textContent(), '€4.99')
  assert.equal(await p.locator('[data-testid=ledger-row][data-kind=fee]').getByTestId('ledger-amount').textContent(), '-€0.49')
  assert.match(await p.locator('[data-testid=ledger-row][data-kind=fee]').getByTestId('ledger-memo').textContent(), /platform fee 10%/)
  // The status facet: both available.
  assert.match(await p.getByTestId('ledger-status-available').textContent(), /available \(2\)/)
  await shot(p, 'commerce-selling-ledger')
  await p.getByTestId('ledger-status-available').click()
  await until('filtered', async () => (await p.getByTestId('ledger-row').count()) === 2 || 'not yet')
  assert.equal((await api.sam('GET', '/api/marketplace/seller/ledger/board?status=available')).total, 2)
  // Search the memo.
  await p.getByTestId('ledger-search').fill('platform')
  await until('one entry', async () => (await p.getByTestId('ledger-row').count()) === 1 || (await p.getByTestId('ledger-row').count()))
  assert.equal(await p.getByTestId('ledger-row').getAttribute('data-kind'), 'fee')
  // The purchases of his items.
  const sale = p.locator(`[data-testid=sale-row][data-purchase-id="${state.purchase}"]`)
  await sale.waitFor()
  assert.equal(await sale.getByTestId('sale-price').textContent(), '€4.99 once')
  assert.equal(await sale.getByTestId('purchase-status').textContent(), 'active')
  const sold = await api.sam('GET', '/api/marketplace/seller/purchases/board')
  assert.deepEqual(sold.rows.map((r) => [r.id, r.status]), [[state.purchase, 'active']])
})

test("Ada sets the fee in the owner console's payouts → fees; an out-of-range value shows the server's refusal", async () => {
  const p = pages.ada
  await p.goto(server.url + '/admin/?tab=payouts&subtab=fees')
  await p.getByTestId('fees').waitFor()
  assert.equal(await p.getByTestId('fee-package').inputValue(), '10')
  assert.match(await p.getByTestId('fees-updated').textContent(), /defaults apply/)
  await p.getByTestId('fee-package').fill('101')
  await p.getByTestId('fees-save').click()
  const alert = p.getByTestId('fees').getByRole('alert')
  await alert.waitFor()
  assert.match(await alert.textContent(), /package_fee_percent|100/)
  assert.equal((await api.ada('GET', '/api/admin/marketplace/fee-settings')).package_fee_percent, 10)
  await p.getByTestId('fee-package').fill('20')
  await p.getByTestId('fees-save').click()
  await p.getByTestId('fees-saved').waitFor()
  await shot(p, 'commerce-fees')
  const fees = await api.ada('GET', '/api/admin/marketplace/fee-settings')
  assert.deepEqual([fees.package_fee_percent, fees.runner_fee_percent], [20, 10])
  assert.ok(fees.updated_at)
  // The tabs are addressable: the subtab is in the address.
  await p.getByTestId('subtab-queue').click()
  await p.waitForURL(/tab=payouts&subtab=queue/)
})

test('a monthly subscription pays the new fee; Bea cancels it at the period end, then at once (a credit note, a refund)', async () => {
  await api.sam('POST', '/api/scripts', { name: 'Reporter', slug: 'reporter', language: 'sh', source: "echo '{}'\n" })
  const scripts = await api.sam('GET', '/api/scripts')
  const published = await api.sam('POST', '/api/marketplace/scripts/publish', {
    script_id: scripts.find((s) => s.slug === 'reporter').id, version: '1.0.0', changelog: 'First.', price: { amount_minor: 900, currency: 'EUR', interval: 'month' },
  })
  state.monthly = published.item.id
  await api.ada('POST', `/api/admin/marketplace/items/${state.monthly}/review/approve`, {})
  const p = pages.bea
  await p.goto(`${server.url}/marketplace/${state.monthly}`)
  assert.equal(await p.getByTestId('item-price').textContent(), '€9.00 / month')
  await p.getByTestId('buy').click()
  await p.getByTestId('pay-stripe').click()
  await p.waitForURL((u) => u.href.startsWith(server.stripe.url + '/pay/'))
  assert.equal(await p.getByTestId('stripe-what').textContent(), 'Reporter: 900 EUR per month')
  const sessionId = new URL(p.url()).pathname.split('/').pop()
  await p.getByTestId('stripe-pay').click()
  await p.getByTestId('checkout-waiting').waitFor()
  const session = server.stripe.state.sessions.get(sessionId)
  assert.equal(session.mode, 'subscription')
  assert.equal((await marketSessionCompleted(server, sessionId)).status, 200)
  await p.getByTestId('checkout-confirmed').waitFor()
  const sub = await api.bea('GET', `/api/marketplace/items/${state.monthly}/subscription`)
  assert.equal(sub.status, 'active')
  assert.ok(new Date(sub.period_end) > new Date(Date.now() + 27 * 86400_000), sub.period_end)
  assert.match(await p.getByTestId('subscription-period-end').textContent(), /^renews /)
  // The new fee: 20%.
  const fee = (await api.sam('GET', '/api/marketplace/seller/ledger')).items.find((e) => e.purchase_id === sub.id && e.kind === 'fee')
  assert.equal(fee.amount_minor, -180)

  await p.goto(server.url + '/marketplace?tab=purchases')
  const row = p.locator(`[data-testid=purchase-row][data-purchase-id="${sub.id}"]`)
  await row.getByTestId('purchase-cancel-period-end').click()
  await p.getByTestId('purchase-cancel-confirm').click()
  await row.getByTestId('purchase-cancel-at-period-end').waitFor()
  let after = await api.bea('GET', `/api/marketplace/purchases/${sub.id}`)
  assert.deepEqual([after.status, after.cancel_at_period_end], ['active', true])
  assert.equal(server.stripe.state.subscriptions.get(session.subscription).cancel_at_period_end, true, 'Stripe was told first')
  assert.equal(await row.getByTestId('purchase-cancel-period-end').count(), 0)
  await p.goto(`${server.url}/marketplace/${state.monthly}`)
  await p.getByTestId('subscription-cancel-at-period-end').waitFor()
  assert.match(await p.getByTestId('subscription-period-end').textContent(), /^ends /)

  await p.goto(server.url + '/marketplace?tab=purchases')
  await row.getByTestId('purchase-cancel-now').click()
  await p.getByTestId('purchase-cancel-confirm').click()
  await until('cancelled', async () => (await row.getByTestId('purchase-status').textContent()) === 'cancelled' || 'not yet')
  after = await api.bea('GET', `/api/marketplace/purchases/${sub.id}`)
  assert.equal(after.status, 'cancelled')
  assert.equal(server.stripe.state.subscriptions.get(session.subscription).status, 'canceled')
  await row.getByTestId('purchase-invoices').click()
  await until('two invoices', async () => (await p.getByTestId('invoice-row').count()) === 2 || 'not yet')
  const invoices = await api.bea('GET', `/api/marketplace/purchases/${sub.id}/invoices`)
  const credit = invoices.find((i) => i.amount_minor < 0)
  assert.ok(credit && credit.amount_minor >= -900 && credit.amount_minor < -800, JSON.stringify(invoices))
  assert.match(await p.getByText('credit note').textContent(), /credit note/)
  assert.equal(await statusOf(api.bea('GET', `/api/marketplace/items/${state.monthly}/files`)), 403, 'no license any more')
  // Sam's ledger: the refund, and the fee's share of it returned.
  const ledger = await api.sam('GET', '/api/marketplace/seller/ledger')
  const refund = ledger.items.find((e) => e.kind === 'refund')
  assert.equal(refund.amount_minor, credit.amount_minor)
  const sp = pages.sam
  await sp.goto(server.url + '/marketplace?tab=selling')
  await sp.locator('[data-testid=ledger-row][data-kind=refund]').waitFor()
  assert.equal(Number(await sp.getByTestId('balance-EUR').getAttribute('data-amount-minor')), ledger.balances[0].amount_minor)
  state.balance = ledger.balances[0].amount_minor
})

test('Ada pays Sam from the queue: a batch drafted, approved (its SEPA file), submitted, reconciled from the bank’s report', async () => {
  const p = pages.ada
  await p.goto(server.url + '/admin/?tab=payouts&subtab=queue')
  const row = p.locator(`[data-testid=queue-row][data-seller-id="${state.sellerId}"]`)
  await row.waitFor()
  const [entry] = (await api.ada('GET', '/api/admin/marketplace/payouts/queue')).items
  assert.deepEqual([entry.seller_id, entry.currency, entry.balance_minor, entry.available_minor, entry.hold], [state.sellerId, 'EUR', state.balance, state.balance, ''])
  assert.deepEqual(entry.accounts.map((a) => [a.id, a.iban]), [[state.accountId, 'DE44 •••• 4931']])
  await p.getByTestId('negative-empty').waitFor()
  await shot(p, 'commerce-queue')
  await row.getByTestId('queue-pay').click()
  const dialog = p.getByTestId('pay-dialog')
  await dialog.waitFor()
  await shot(p, 'commerce-pay-dialog')
  const major = (state.balance / 100).toFixed(2)
  assert.equal(await dialog.getByTestId('pay-amount').inputValue(), major)
  assert.equal(await dialog.getByTestId('pay-account').inputValue(), state.accountId)
  // More than is available: the dialog says so.
  await dialog.getByTestId('pay-amount').fill('1000')
  await dialog.getByTestId('pay-draft').click()
  await dialog.getByRole('alert').waitFor()
  assert.match(await dialog.getByRole('alert').textContent(), /is available/)
  await dialog.getByTestId('pay-amount').fill(major)
  await dialog.getByTestId('pay-draft').click()
  await p.waitForURL(/subtab=batches&batch=/)
  const batchId = new URL(p.url()).searchParams.get('batch')
  const detail = p.getByTestId('batch-detail')
  await detail.waitFor()
  assert.equal(await detail.getByTestId('batch-status').textContent(), 'draft')
  let batch = await api.ada('GET', `/api/admin/marketplace/payouts/batches/${batchId}`)
  assert.deepEqual([batch.status, batch.total_minor, batch.items.length], ['draft', state.balance, 1])
  assert.deepEqual([batch.items[0].seller_id, batch.items[0].account_id, batch.items[0].amount_minor], [state.sellerId, state.accountId, state.balance])
  const e2e = batch.items[0].end_to_end_id
  assert.equal(await detail.getByTestId('batch-item').getAttribute('data-end-to-end-id'), e2e)
  // The board: the batch under its status facet; the queue reserves it.
  await p.locator(`[data-testid=batch-row][data-batch-id="${batchId}"]`).waitFor()
  assert.match(await p.getByTestId('batches-status-draft').textContent(), /draft \(1\)/)
  const reserved = (await api.ada('GET', '/api/admin/marketplace/payouts/queue')).items
  assert.equal(reserved.length, 0, 'nothing more is available while the batch holds it')

  await detail.getByTestId('batch-approve').click()
  await until('approved', async () => (await detail.getByTestId('batch-status').textContent()) === 'approved' || 'not yet')
  batch = await api.ada('GET', `/api/admin/marketplace/payouts/batches/${batchId}`)
  assert.equal(batch.status, 'approved')
  assert.ok(batch.sepa_sha256)
  assert.equal((await api.sam('GET', '/api/marketplace/seller/profile')).status, 'approved', 'the approval reviewed the seller')
  // The SEPA file downloads: the transfer to Sam's full IBAN, from the platform's account.
  const [download] = await Promise.all([p.waitForEvent('download'), detail.getByTestId('batch-sepa').click()])
  const sepa = readFileSync(await download.path(), 'utf8')
  assert.equal(download.suggestedFilename(), `${batch.message_id}.pain001.xml`)
  for (const want of [batch.message_id, e2e, sellerIBAN, 'DE89370400440532013000', 'Slipway Marketplace GmbH', `>${major}<`]) assert.ok(sepa.includes(want), want)

  await detail.getByTestId('batch-submit').click()
  await until('submitted', async () => (await detail.getByTestId('batch-status').textContent()) === 'submitted' || 'not yet')
  assert.equal(await detail.getByTestId('batch-challenge').count(), 0, 'the file bank asks no TAN')
  assert.equal((await api.ada('GET', `/api/admin/marketplace/payouts/batches/${batchId}`)).status, 'submitted')
  const written = path.join(payoutDir, `${batch.message_id}.pain001.xml`)
  assert.ok(existsSync(written), written)
  assert.equal(readFileSync(written, 'utf8'), sepa, 'the file submitted is the file approved')

  // Reconciling before the bank reported: still pending.
  await detail.getByTestId('batch-reconcile').click()
  await detail.getByTestId('batch-report').waitFor()
  assert.equal(await detail.getByTestId('report-pending').textContent(), `€${major}`)
  assert.equal(await detail.getByTestId('batch-status').textContent(), 'submitted')

  // The bank's report: the transfer paid.
  writeFileSync(
    path.join(payoutDir, `${batch.message_id}.pain002.xml`),
    `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.10"><CstmrPmtStsRpt><OrgnlGrpInfAndSts><OrgnlMsgId>${batch.message_id}</OrgnlMsgId></OrgnlGrpInfAndSts><OrgnlPmtInfAndSts><TxInfAndSts><OrgnlEndToEndId>${e2e}</OrgnlEndToEndId><TxSts>ACSC</TxSts></TxInfAndSts></OrgnlPmtInfAndSts></CstmrPmtStsRpt></Document>
`,
  )
  await detail.getByTestId('batch-reconcile').click()
  await until('reconciled', async () => (await detail.getByTestId('batch-status').textContent()) === 'reconciled' || 'not yet')
  assert.equal(await detail.getByTestId('report-paid').textContent(), `€${major}`)
  assert.equal(await detail.getByTestId('report-pending').textContent(), '€0.00')
  await shot(p, 'commerce-batch-reconciled')
  assert.equal(await detail.getByTestId('batch-item').getAttribute('data-status'), 'paid')
  batch = await api.ada('GET', `/api/admin/marketplace/payouts/batches/${batchId}`)
  assert.deepEqual([batch.status, batch.items[0].status], ['reconciled', 'paid'])
  assert.ok(batch.reconciled_at)
  // The board's facet follows.
  await until('the facet', async () => ((await p.getByTestId('batches-status-reconciled').count()) === 1 && /reconciled \(1\)/.test(await text(p.getByTestId('batches-status-reconciled')))) || 'not yet')

  // Sam's ledger: the payout takes the balance to zero; the queue has nothing for him.
  const ledger = await api.sam('GET', '/api/marketplace/seller/ledger')
  const payout = ledger.items.find((e) => e.kind === 'payout')
  assert.deepEqual([payout.amount_minor, payout.status], [-state.balance, 'paid'])
  assert.deepEqual(ledger.balances, [{ currency: 'EUR', amount_minor: 0 }])
  assert.equal((await api.ada('GET', '/api/admin/marketplace/payouts/queue')).total, 0)
  const sp = pages.sam
  await sp.goto(server.url + '/marketplace?tab=selling')
  await sp.locator('[data-testid=ledger-row][data-kind=payout]').waitFor()
  assert.equal(await sp.getByTestId('balance-EUR').textContent(), '€0.00')
  assert.equal(await sp.getByTestId('seller-status').textContent(), 'approved')
})
