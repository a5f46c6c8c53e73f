// The marketplace's bundles, app listings and Git sources through the
// console. A workflow (a code node running a saved script, a connector on
// an http resource) is published from its own page's button as a bundle;
// once approved, another workspace sees its graph and its need on the
// item's page, installs it into a project with the need bound in the
// install dialog, and later updates it to a version that reads one more
// resource, bound in the update dialog. An app is published from its
// page's button and installed. A Git source that cannot be reached shows
// its sync error; it is synced, edited and deleted from the Sources tab,
// and a deletion the API refuses shows why. The API is asked at each step
// whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { admin, adminSession, apiSession, browser, startServer, until } from './harness.mjs'

let server, chrome, page, call, buyerPage, buyerCall
const buyer = { email: 'bo@example.test', password: 'bo-passphrase-1234', name: 'Bo Buyer' }
const state = {}
const shots = process.env.SCREENSHOTS // a directory: screenshots go there

async function shot(p, name) {
  if (!shots) return
  await p.evaluate(() => window.scrollTo(0, 0))
  await p.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true })
}

async function signIn(p, who) {
  await p.goto(server.url + '/login')
  await p.getByLabel('Email').fill(who.email)
  await p.locator('input[type=password]').fill(who.password)
  await p.getByRole('button', { name: 'Sign in' }).click()
  await p.waitForURL(/\/tasks\/board|\/projects/)
}

before(async () => {
  server = await startServer()
  chrome = await browser()
  const ctx = await chrome.newContext({ viewport: { width: 1400, height: 1000 } })
  page = await ctx.newPage()
  page.setDefaultTimeout(20_000)
  call = await adminSession(server.url)
  await signIn(page, admin)
  // Bo, with a workspace of his own, in a browser of his own.
  const r = await fetch(server.url + '/api/auth/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: buyer.email, password: buyer.password, display_name: buyer.name }),
  })
  assert.ok(r.ok, `register: ${r.status}`)
  const pending = await call('GET', '/api/admin/users/pending')
  await call('POST', `/api/admin/users/${pending.users.find((u) => u.email === buyer.email).id}/approve`)
  buyerCall = await apiSession(server.url, buyer.email, buyer.password)
  const bctx = await chrome.newContext({ viewport: { width: 1400, height: 1000 } })
  buyerPage = await bctx.newPage()
  buyerPage.setDefaultTimeout(20_000)
  await signIn(buyerPage, buyer)
})

after(async () => {
  await chrome?.close()
  await server?.stop()
})

const http = (c, name) => c('POST', '/api/resources', { name, kind: 'http', config: { base_url: 'https://api.example.com' } })

test('a workflow is published as a bundle from its page', async () => {
  const script = await call('POST', '/api/scripts', { name: 'Fetch', slug: 'fetch', language: 'sh', source: "echo '{\"sky\": \"sunny\"}'\n" })
  const api = await http(call, 'Weather API')
  const project = await call('POST', '/api/projects', { name: 'Weather', repo_url: server.repo })
  state.nodes = [
    { key: 'fetch', kind: 'code', config: { script_id: script.id }, position: { x: 0, y: 0 } },
    { key: 'call', kind: 'connector', config: { resource_id: api.id, path: '/today' }, position: { x: 300, y: 0 } },
  ]
  state.edges = [{ source: 'fetch', target: 'call' }]
  const wf = await call('POST', '/api/workflows', { project_id: project.id, name: 'Daily weather', nodes: state.nodes, edges: state.edges })
  state.wf = wf.id

  await page.goto(`${server.url}/workflows/${wf.id}`)
  await page.getByTestId('publish-to-marketplace').click()
  await page.waitForURL(new RegExp(`/marketplace\\?tab=publish&what=bundle&workflow=${wf.id}$`))
  // The Publish tab, preselected: workflows, this one chosen.
  assert.equal(await page.getByTestId('publish-what').inputValue(), 'bundle')
  await page.getByRole('tabpanel').getByText('Daily weather', { exact: true }).waitFor()
  await page.getByTestId('publish-summary').fill('Weather every morning')
  await page.getByTestId('publish-changelog').fill('First version.')
  await page.getByTestId('publish-hosts').fill('api.example.com')
  await shot(page, 'publish-bundle')
  await page.getByTestId('publish').click()
  await page.getByTestId('published').waitFor()
  assert.match(await page.getByTestId('published-needs').textContent(), /weather-api \(http resource\)/)

  const [item] = (await call('GET', '/api/marketplace/items?kind=bundle&q=daily')).items
  assert.equal(item.slug, 'daily-weather')
  assert.equal(item.latest_version, '1.0.0')
  assert.equal(item.verified, false)
  const v = await call('GET', `/api/marketplace/items/${item.id}/versions/1.0.0`)
  assert.deepEqual(v.needs, [{ key: 'weather-api', type: 'resource', kind: 'http', name: 'Weather API' }])
  assert.ok(v.objects.some((o) => o.key === 'workflow:daily-weather'))
  assert.ok(v.objects.some((o) => o.key === 'script:fetch'))
  state.bundle = item.id
  // The instance's review approves it.
  await call('POST', `/api/admin/marketplace/items/${item.id}/review/approve`, {})
  assert.equal((await call('GET', `/api/marketplace/items/${item.id}`)).verified, true)
})

test("another workspace sees the bundle's graph and its need", async () => {
  const p = buyerPage
  await p.goto(server.url + '/marketplace')
  await p.getByTestId('market-search').fill('daily')
  await p.getByRole('button', { name: 'Search' }).click()
  await p.getByTestId('market-item-daily-weather').getByRole('link').click()
  await p.waitForURL(new RegExp(`/marketplace/${state.bundle}$`))
  const graph = p.getByTestId('bundle-graph')
  await graph.getByTestId('bundle-node-fetch').waitFor()
  await graph.getByTestId('bundle-node-call').waitFor()
  assert.equal(await graph.getByTestId('bundle-node-call').getAttribute('data-kind'), 'connector')
  assert.match(await graph.getByTestId('bundle-node-call').innerText(), /needs weather-api/)
  assert.equal(await graph.locator('.react-flow__edge').count(), 1)
  const need = graph.getByTestId('need-weather-api')
  assert.match(await need.innerText(), /http resource/)
  assert.match(await need.innerText(), /Weather API/)
  // A node's config, with its placeholders.
  await graph.getByTestId('bundle-node-call').click()
  assert.match(await graph.getByTestId('bundle-node-config').textContent(), /"resource_id": "need:weather-api"/)
  await graph.getByTestId('bundle-node-fetch').click()
  assert.match(await graph.getByTestId('bundle-node-config').textContent(), /"script_id": "script:fetch"/)
  await shot(p, 'bundle-item')
  // The API's graph is the one shown.
  const g = await buyerCall('GET', `/api/marketplace/items/${state.bundle}/preview/graph`)
  assert.deepEqual(
    g.workflows[0].nodes.map((n) => n.key),
    ['fetch', 'call'],
  )
})

test('it is installed into a project with the need bound in the dialog', async () => {
  const p = buyerPage
  // Two of each, so nothing is chosen for him.
  state.forecast = (await http(buyerCall, 'Forecast')).id
  state.spare = (await http(buyerCall, 'Spare API')).id
  state.mornings = (await buyerCall('POST', '/api/projects', { name: 'Mornings', repo_url: server.repo })).id
  await buyerCall('POST', '/api/projects', { name: 'Evenings', repo_url: server.repo })
  await p.reload()
  await p.getByTestId('install-preview').click()
  const dialog = p.getByRole('dialog')
  await dialog.getByTestId('install-object-workflow:daily-weather').waitFor()
  assert.match(await dialog.getByTestId('install-object-workflow:daily-weather').textContent(), /create workflow Daily weather/)
  assert.match(await dialog.getByTestId('install-object-script:fetch').textContent(), /create script Fetch/)
  // Nothing chosen yet: the install waits for the project and the binding.
  assert.equal(await dialog.getByTestId('install').isDisabled(), true)
  await dialog.getByTestId('install-project').selectOption({ label: 'Mornings' })
  const bind = dialog.getByTestId('bind-weather-api')
  await until('the http resources offered', async () => (await bind.locator('option').allInnerTexts()).join('|') === 'Choose…|Forecast|Spare API' || (await bind.locator('option').allInnerTexts()))
  await bind.selectOption({ label: 'Forecast' })
  await shot(p, 'bundle-install')
  await dialog.getByTestId('install').click()
  await until('installed', async () => (await p.getByTestId('installed-version').textContent()) === '1.0.0' || 'not yet')

  const inst = (await buyerCall('GET', '/api/marketplace/installs')).find((i) => i.item_id === state.bundle)
  assert.equal(inst.version, '1.0.0')
  assert.equal(inst.project_id, state.mornings)
  assert.deepEqual(inst.bindings, { 'weather-api': state.forecast })
  const flow = inst.objects['workflow:daily-weather']
  const wf = await buyerCall('GET', `/api/workflows/${flow}`)
  assert.equal(wf.name, 'Daily weather')
  assert.equal(wf.project_id, state.mornings)
  assert.equal(wf.nodes.find((n) => n.key === 'call').config.resource_id, state.forecast)
  assert.equal(wf.nodes.find((n) => n.key === 'fetch').config.script_id, inst.objects['script:fetch'])
  state.install = inst.id
  state.flow = flow
  // Its page links the workflow it made.
  await p.getByTestId('installed-workflow-daily-weather').click()
  await p.waitForURL(new RegExp(`/workflows/${flow}$`))
  await p.getByTestId('node-call').waitFor()
})

test('an update that reads one more resource binds it in the update dialog (from the Installed tab)', async () => {
  const alerts = await http(call, 'Alerts')
  const nodes = [...state.nodes, { key: 'alert', kind: 'connector', config: { resource_id: alerts.id, method: 'POST' }, position: { x: 600, y: 0 } }]
  await call('PUT', `/api/workflows/${state.wf}`, { nodes, edges: [...state.edges, { source: 'call', target: 'alert' }] })
  await call('POST', '/api/marketplace/bundles/publish', { workflow_ids: [state.wf], version: '1.1.0', changelog: 'Sends alerts.', capabilities: { outbound_hosts: ['api.example.com'] } })

  const p = buyerPage
  await p.goto(server.url + '/marketplace?tab=installed')
  await p.getByTestId(`install-row-${state.bundle}`).getByTestId('installed-update').click()
  const dialog = p.getByRole('dialog')
  await dialog.getByTestId('update-unbound').waitFor()
  assert.match(await dialog.getByTestId('file-diff').first().textContent(), /need:alerts/)
  assert.equal(await dialog.getByTestId('update').isDisabled(), true)
  await dialog.getByTestId('bind-alerts').selectOption({ label: 'Spare API' })
  await shot(p, 'bundle-update')
  await dialog.getByTestId('update').click()
  await until('updated', async () => (await buyerCall('GET', '/api/marketplace/installs')).find((i) => i.id === state.install).version === '1.1.0' || 'not yet')
  const inst = (await buyerCall('GET', '/api/marketplace/installs')).find((i) => i.id === state.install)
  assert.deepEqual(inst.bindings, { 'weather-api': state.forecast, alerts: state.spare })
  assert.equal(inst.objects['workflow:daily-weather'], state.flow, 'the same workflow, updated')
  const wf = await buyerCall('GET', `/api/workflows/${state.flow}`)
  assert.equal(wf.nodes.find((n) => n.key === 'alert').config.resource_id, state.spare)
  await until('the dialog closed', async () => (await p.getByRole('dialog').count()) === 0 || 'open')
  await p.getByTestId(`install-row-${state.bundle}`).getByText('1.1.0').waitFor()

  // On the item's page, a binding is changed in place.
  await p.getByTestId(`install-row-${state.bundle}`).getByRole('link').click()
  const bound = p.getByTestId('bindings')
  await until('the bindings shown', async () => (await bound.getByTestId('bind-alerts').inputValue()) === state.spare || 'not yet')
  assert.equal(await bound.getByTestId('bind-weather-api').inputValue(), state.forecast)
  await bound.getByTestId('bind-weather-api').selectOption({ label: 'Spare API' })
  await bound.getByTestId('rebind-save').click()
  await until('rebound', async () => (await buyerCall('GET', '/api/marketplace/installs')).find((i) => i.id === state.install).bindings['weather-api'] === state.spare || 'not yet')
  const after = await buyerCall('GET', `/api/workflows/${state.flow}`)
  assert.equal(after.nodes.find((n) => n.key === 'call').config.resource_id, state.spare)
  await until('saved', async () => (await bound.getByTestId('rebind-save').count()) === 0 || 'the save button is still there')
})

test('an official bundle installs into a project with no needs', async () => {
  const p = buyerPage
  const [tpl] = (await buyerCall('GET', '/api/marketplace/items?kind=bundle&q=health')).items
  assert.equal(tpl.slug, 'http-health-check')
  await p.goto(`${server.url}/marketplace/${tpl.id}`)
  await p.getByTestId('bundle-graph').getByTestId('no-needs').waitFor()
  await p.getByTestId('install-preview').click()
  const dialog = p.getByRole('dialog')
  await dialog.getByTestId('install-project').selectOption({ label: 'Evenings' })
  await dialog.getByTestId('install').click()
  await until('installed', async () => (await p.getByTestId('installed-version').count()) === 1 || 'not yet')
  const inst = (await buyerCall('GET', '/api/marketplace/installs')).find((i) => i.item_id === tpl.id)
  const wf = await buyerCall('GET', `/api/workflows/${inst.objects['workflow:http-health-check']}`)
  assert.equal(wf.name, 'HTTP health check')
})

test('an app is published from its page and installed', async () => {
  const manifest = 'name: Orders\nentry: index.html\nroutes:\n  - path: /orders/*\n    file: index.html\n'
  const app = await call('POST', '/api/apps', { name: 'Orders', description: 'Track orders', manifest_yaml: manifest })
  await call('PUT', `/api/apps/${app.id}/files/index.html`, { content: '<h1>Orders</h1>\n' })
  await page.goto(`${server.url}/apps/${app.id}`)
  await page.getByTestId('publish-to-marketplace').click()
  await page.waitForURL(new RegExp(`/marketplace\\?tab=publish&what=app&app=${app.id}$`))
  assert.equal(await page.getByTestId('publish-what').inputValue(), 'app')
  await until('the app preselected', async () => (await page.getByTestId('publish-app').inputValue()) === app.id || (await page.getByTestId('publish-app').inputValue()))
  await page.getByTestId('publish-changelog').fill('First version.')
  await page.getByTestId('publish').click()
  await page.getByTestId('published').waitFor()
  const [item] = (await call('GET', '/api/marketplace/items?kind=app')).items
  assert.equal(item.slug, 'orders')
  await call('POST', `/api/admin/marketplace/items/${item.id}/review/approve`, {})

  const p = buyerPage
  await p.goto(`${server.url}/marketplace/${item.id}`)
  assert.equal(await p.getByTestId('item-kind').textContent(), 'app')
  await p.getByTestId('install-preview').click()
  const dialog = p.getByRole('dialog')
  await dialog.getByTestId('install-object-app').waitFor()
  assert.equal(await dialog.getByTestId('install-project').count(), 0, 'an app joins no project')
  await dialog.getByTestId('install').click()
  await until('installed', async () => (await p.getByTestId('installed-version').count()) === 1 || 'not yet')
  const inst = (await buyerCall('GET', '/api/marketplace/installs')).find((i) => i.item_id === item.id)
  assert.equal(inst.version, '1.0.0')
  const made = await buyerCall('GET', `/api/apps/${inst.objects.app}`)
  assert.equal(made.name, 'Orders')
  assert.equal(made.manifest_yaml, manifest)
  await p.getByTestId('installed-app').click()
  await p.waitForURL(new RegExp(`/apps/${inst.objects.app}$`))
  assert.equal(await p.getByTestId('app-title').textContent(), 'Orders')
})

test('the Sources tab: a Git source that cannot be reached, synced, edited and deleted', async () => {
  await page.goto(server.url + '/marketplace?tab=sources')
  const rows = page.getByTestId('source-row')
  const official = rows.filter({ hasText: 'official' })
  await official.waitFor()
  assert.equal(await official.getByTestId('source-delete').count(), 0, 'the official source has no delete')

  await page.getByTestId('git-source-name').fill('Mirror')
  await page.getByTestId('git-source-url').fill('https://example.invalid/x.git')
  await page.getByTestId('git-source-add').click()
  await page.getByTestId('git-source-added').waitFor({ timeout: 150_000 })
  const mirror = rows.filter({ hasText: 'Mirror' })
  await until('the sync error shown', async () => (await mirror.getByTestId('source-status').textContent()) === 'sync_error' || (await mirror.getByTestId('source-status').textContent()))
  const shown = await mirror.getByTestId('source-error').textContent()
  let src = (await call('GET', '/api/marketplace/sources')).find((s) => s.name === 'Mirror')
  assert.equal(src.kind, 'git')
  assert.equal(src.status, 'sync_error')
  assert.equal(src.branch, 'main')
  assert.ok(src.last_error, 'a sync error')
  assert.equal(shown, src.last_error)
  assert.match(shown, /example\.invalid/)

  // Sync: it fails again, as the API says.
  await mirror.getByTestId('source-sync').click()
  await until('synced', async () => (await mirror.getByTestId('source-sync').getAttribute('data-loading')) === null || 'syncing', 150_000)
  src = (await call('GET', '/api/marketplace/sources')).find((s) => s.name === 'Mirror')
  assert.equal(src.status, 'sync_error')
  assert.equal(await mirror.getByTestId('source-status').textContent(), 'sync_error')

  // Disabled: it is not synced.
  await mirror.getByTestId('source-edit').click()
  await page.getByTestId('source-name').fill('Mirror two')
  await page.getByTestId('source-enabled').uncheck()
  await page.getByTestId('source-save').click()
  const renamed = rows.filter({ hasText: 'Mirror two' })
  await until('disabled', async () => (await renamed.getByTestId('source-status').textContent()) === 'disabled' || 'not yet')
  src = (await call('GET', '/api/marketplace/sources')).find((s) => s.id === src.id)
  assert.equal(src.name, 'Mirror two')
  assert.equal(src.status, 'disabled')
  assert.equal(await renamed.getByTestId('source-sync').isDisabled(), true)
  await shot(page, 'sources')

  // The workspace's own source still lists its published items: the API refuses, the console shows it.
  const own = rows.filter({ hasText: 'workspace' })
  await own.getByTestId('source-delete').click()
  await page.getByTestId('source-delete-confirm').click()
  await page.getByRole('alert').filter({ hasText: /still has 2 published items/ }).waitFor()
  assert.ok((await call('GET', '/api/marketplace/sources')).some((s) => s.kind === 'workspace'))

  // The Git source goes.
  await renamed.getByTestId('source-delete').click()
  await page.getByTestId('source-delete-confirm').click()
  await until('deleted', async () => (await renamed.count()) === 0 || 'still listed')
  assert.equal((await call('GET', '/api/marketplace/sources')).some((s) => s.id === src.id), false)
  await until('no error left', async () => (await page.getByRole('alert').count()) === 0 || (await page.getByRole('alert').allInnerTexts()))
})
