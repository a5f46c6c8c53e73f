// The marketplace through the console: the official catalog is there; a
// script of the workspace is published from the Publish tab, approved in
// the owner console's marketplace-review tab, found by a search and
// installed after its preview; a new version that adds an outbound host
// shows its code diff and its capability growth before the update, which
// then applies; the install is rated. The API is asked at each step
// whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { admin, adminSession, apiSession, browser, startServer, until } from './harness.mjs'

let server, chrome, page, call, buyerPage, buyerCall
const buyer = { email: 'bea@example.test', password: 'bea-passphrase-123', name: 'Bea Buyer' }
const state = {}

before(async () => {
  server = await startServer()
  chrome = await browser()
  const ctx = await chrome.newContext({ viewport: { width: 1400, height: 1000 } })
  page = await ctx.newPage()
  page.setDefaultTimeout(20_000)
  call = await adminSession(server.url)
  state.admin = call
})

after(async () => {
  await chrome?.close()
  await server?.stop()
})

test('setup and sign in: a script to publish', async () => {
  state.script = (await call('POST', '/api/scripts', { name: 'Greeter', slug: 'greeter', language: 'sh', source: "echo '{\"hi\": 1}'\n" })).id
  await page.goto(server.url + '/login')
  await page.getByLabel('Email').fill(admin.email)
  await page.locator('input[type=password]').fill(admin.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/tasks\/board/)
})

test('the catalog lists the official items', async () => {
  await page.getByRole('link', { name: 'Marketplace' }).first().click()
  await page.waitForURL(/\/marketplace$/)
  await page.getByTestId('market-item-slugify').waitFor()
})

test('publish from the Publish tab, approve in the owner console', async () => {
  await page.getByTestId('tab-publish').click()
  await page.getByTestId('publish-changelog').fill('First version.')
  await page.getByTestId('publish').click()
  await page.getByTestId('published').waitFor()
  const item = (await call('GET', '/api/marketplace/items?q=greeter')).items[0]
  assert.equal(item.latest_version, '1.0.0')
  assert.equal(item.verified, false)
  state.item = item.id
  await page.goto(server.url + '/admin/?tab=marketplace-review')
  await page.getByTestId('review-greeter').getByTestId('review-approve').click()
  await until('approved', async () => (await call('GET', `/api/marketplace/items/${state.item}`)).verified === true || 'not yet')
  await until('gone from the queue', async () => (await page.getByTestId('review-greeter').count()) === 0)
  // The sources tab: the official source and this workspace's own, with its item.
  await page.getByTestId('tab-marketplace-sources').click()
  await until('the sources', async () => /Official[\s\S]*Published here[\s\S]*1 items/.test(await page.locator('table').innerText()) || (await page.locator('table').innerText()))
})

test('publish a node type, with its script, from the Publish tab', async () => {
  const script = await call('POST', '/api/scripts', { name: 'Shout', slug: 'shout', language: 'sh', source: "echo '{}'\n" })
  await call('POST', '/api/workflow-node-types', { slug: 'shouter', name: 'Shouter', script_id: script.id, config_schema: { type: 'object' } })
  await page.goto(server.url + '/marketplace?tab=publish')
  await page.getByTestId('publish-what').selectOption('node')
  await until('the node type offered', async () => (await page.getByTestId('publish-node').locator('option').count()) === 1 || 'none')
  await page.getByTestId('publish-changelog').fill('First version.')
  await page.getByTestId('publish').click()
  await page.getByTestId('published').waitFor()
  const [node] = (await call('GET', '/api/marketplace/items?kind=node')).items
  assert.equal(node.slug, 'shouter')
})

test("another workspace's admin searches, previews and installs it", async () => {
  // Bea, with a workspace of her own, in a browser of her own.
  const r = await fetch(server.url + '/api/auth/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: buyer.email, password: buyer.password, display_name: buyer.name }),
  })
  assert.ok(r.ok, `register: ${r.status}`)
  const pending = await call('GET', '/api/admin/users/pending')
  await call('POST', `/api/admin/users/${pending.users.find((u) => u.email === buyer.email).id}/approve`)
  buyerCall = await apiSession(server.url, buyer.email, buyer.password)
  const ctx = await chrome.newContext({ viewport: { width: 1400, height: 1000 } })
  buyerPage = await ctx.newPage()
  buyerPage.setDefaultTimeout(20_000)
  await buyerPage.goto(server.url + '/login')
  await buyerPage.getByLabel('Email').fill(buyer.email)
  await buyerPage.locator('input[type=password]').fill(buyer.password)
  await buyerPage.getByRole('button', { name: 'Sign in' }).click()
  await buyerPage.waitForURL(/\/tasks\/board|\/projects/)
  state.adminPage = page
  page = buyerPage
  call = buyerCall
  await page.goto(server.url + '/marketplace')
  await page.getByTestId('market-search').fill('greet')
  await page.getByRole('button', { name: 'Search' }).click()
  await page.getByTestId('market-item-greeter').getByRole('link').click()
  await page.getByTestId('install-preview').click()
  await page.getByTestId('install').click()
  await until('installed', async () => (await page.getByTestId('installed-version').textContent()) === '1.0.0' || 'not yet')
  const [inst] = await call('GET', '/api/marketplace/installs')
  assert.equal(inst.version, '1.0.0')
  state.install = inst.id
})

test('a new version that calls out: the code diff and the capability growth, then the update', async () => {
  await state.admin('PATCH', `/api/scripts/${state.script}`, { source: 'curl -s https://api.example.com/hi\n' })
  await state.admin('POST', '/api/marketplace/scripts/publish', { script_id: state.script, version: '1.1.0', changelog: 'Calls the API.', capabilities: { outbound_hosts: ['api.example.com'] } })
  await page.reload()
  await page.getByTestId('update-preview').click()
  await page.getByTestId('capabilities-grew').waitFor()
  assert.match(await page.getByTestId('capabilities-grew').textContent(), /outbound_hosts: api\.example\.com/)
  assert.match(await page.getByTestId('file-diff').first().textContent(), /\+\s+"source": "curl -s https:\/\/api\.example\.com\/hi\\n"/)
  await page.getByTestId('update').click()
  await until('updated', async () => (await page.getByTestId('installed-version').textContent()) === '1.1.0' || 'not yet')
  assert.equal((await call('GET', '/api/marketplace/installs'))[0].version, '1.1.0')
})

test('rate the install', async () => {
  const four = await page.getByTestId('rating').locator('input[value="4"]').getAttribute('id')
  await page.locator(`label[for="${four}"]`).click()
  await until('rated', async () => (await call('GET', `/api/marketplace/items/${state.item}/rating/mine`))?.stars === 4 || 'not yet')
})

test('an instance admin takes the item down and restores it from its page', async () => {
  const p = state.adminPage
  await p.goto(`${server.url}/marketplace/${state.item}`)
  await p.getByTestId('takedown').click()
  await until('taken down', async () => (await state.admin('GET', `/api/marketplace/items/${state.item}`)).listed === false || 'not yet')
  await until('the button says restore', async () => (await p.getByTestId('takedown').textContent()) === 'Restore' || 'not yet')
  await p.getByTestId('takedown').click()
  await until('restored', async () => (await state.admin('GET', `/api/marketplace/items/${state.item}`)).listed === true || 'not yet')
})
