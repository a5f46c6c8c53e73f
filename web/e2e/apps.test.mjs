// Hosted apps end to end through the console: an app made on /apps with a
// backend function over a migrated table, its files (typed and uploaded), a
// migration, builds, a deploy at /shop (the page read at /a/shop/), calls
// through "Try it", an edit saved against its etag (a change made meanwhile
// refused), a second release, a rollback, the app's own error page, and an
// App token shown once. The API is asked at each step whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { admin, apiSession, browser, startServer } from './harness.mjs'

let server, chrome, ctx, page, call
const shots = process.env.SCREENSHOTS // a directory: screenshots go there

async function shot(name) {
  if (!shots) return
  // From the top: a page scrolled down would show the fixed header over its middle.
  await page.evaluate(() => window.scrollTo(0, 0))
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true })
}

before(async () => {
  server = await startServer()
  chrome = await browser()
  ctx = await chrome.newContext({ viewport: { width: 1360, height: 860 } })
  page = await ctx.newPage()
  page.setDefaultTimeout(20_000)
  // Setup the test does not click through: the first admin (approved as
  // listed in SERVICE_INITIAL_ADMIN_EMAILS).
  const r = await fetch(server.url + '/api/auth/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: admin.email, password: admin.password, display_name: admin.name }),
  })
  assert.ok(r.ok, `register: ${r.status}`)
  call = await apiSession(server.url, admin.email, admin.password)
})

after(async () => {
  await chrome?.close()
  await server?.stop()
})

const manifest = `name: Orders
functions:
  - name: add_order
    operation: execute
    sql: INSERT INTO orders (customer, total) VALUES ($1, $2)
    args: [{name: customer, type: string}, {name: total, type: integer}]
  - name: list_orders
    operation: query
    sql: SELECT customer, total FROM orders ORDER BY id
`
const migration = 'CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total INTEGER NOT NULL)'
const html = (v) => `<!doctype html><html><head><title>Orders</title></head><body><h1>Orders ${v}</h1></body></html>\n`

const tab = (name) => page.getByTestId(`app-tab-${name}`).click()
const note = (testid, text) => page.getByTestId(testid).getByText(text).waitFor()

test('sign in', async () => {
  await page.goto(server.url + '/login')
  await page.getByLabel('Email').fill(admin.email)
  await page.locator('input[type=password]').fill(admin.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/tasks\/board/)
})

test('an app from /apps to a deployed backend, a second release, a rollback and an App token', async (t) => {
  let id = ''
  let shop // the deployed app, in a tab of the same browser context
  const api = (method, p, body) => call(method, `/api/apps/${id}${p}`, body)

  await t.test('the board creates an app; a manifest the server refuses shows its message', async () => {
    await page.getByRole('link', { name: 'Apps', exact: true }).click()
    await page.waitForURL(/\/apps$/)
    await page.getByTestId('apps-empty').waitFor()
    await page.getByTestId('new-app').click()
    assert.equal(await page.getByTestId('new-app-manifest').inputValue(), 'name: My app\nentry: index.html\n', 'a minimal valid manifest to start from')
    await page.getByTestId('new-app-name').fill('Orders')
    await page.getByTestId('new-app-description').fill('Takes orders')
    await page.getByTestId('new-app-manifest').fill('name: Orders\nfunctions:\n  - name: broken\n    operation: query\n    sql: SELECT $1\n')
    await page.getByTestId('create-app').click()
    await page.getByRole('alert').getByText(/functions/).waitFor()
    assert.equal((await call('GET', '/api/apps')).length, 0, 'nothing was created')

    await page.getByTestId('new-app-manifest').fill(manifest)
    await page.getByTestId('create-app').click()
    await page.waitForURL(/\/apps\/[^/]+$/)
    id = new URL(page.url()).pathname.split('/').pop()
    await page.getByTestId('app-title').getByText('Orders').waitFor()
    await page.getByTestId('app-header-deployment').getByText('never deployed').waitFor()
    const a = await api('GET', '')
    assert.equal(a.name, 'Orders')
    assert.equal(a.description, 'Takes orders')
    assert.equal(a.manifest_yaml, manifest)
    assert.deepEqual(
      a.manifest.functions.map((f) => f.name),
      ['add_order', 'list_orders'],
    )
  })

  await t.test('install for me', async () => {
    await page.getByTestId('app-install').click()
    await page.getByTestId('app-installed').getByText('installed', { exact: true }).waitFor()
    assert.equal((await api('GET', '')).installed, true)
  })

  await t.test('files: index.html and a nested one, created from the form', async () => {
    await tab('files')
    await page.getByTestId('app-entry-missing').waitFor()
    await page.getByTestId('app-new-file-path').fill('index.html')
    await page.getByTestId('app-new-file-content').fill(html('v1'))
    await page.getByTestId('app-new-file-create').click()
    await page.getByTestId('app-file-index.html').waitFor()
    await page.getByTestId('app-file-editor-path').getByText('index.html').waitFor()
    assert.equal(await page.getByTestId('app-file-content').inputValue(), html('v1'))
    await page.getByTestId('app-entry-missing').waitFor({ state: 'detached' })

    await page.getByTestId('app-new-file-path').fill('assets/app.js')
    await page.getByTestId('app-new-file-content').fill("console.log('orders')\n")
    await page.getByTestId('app-new-file-create').click()
    await page.getByTestId('app-file-assets/app.js').waitFor()
    // Create-only: the same path again is refused, nothing replaced.
    await page.getByTestId('app-new-file-path').fill('index.html')
    await page.getByTestId('app-new-file-content').fill('replaced?')
    await page.getByTestId('app-new-file-create').click()
    await page.getByTestId('app-new-file-exists').waitFor()
    // A binary file, uploaded under its own name: listed, shown as its size only.
    await page.getByTestId('app-new-file-path').fill('')
    const logo = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff])
    await page.locator('input[type=file]').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: logo })
    await page.getByTestId('app-file-logo.png').waitFor()
    await page.getByTestId('app-file-binary').getByText('binary, 6 bytes').waitFor()
    assert.equal(await page.getByTestId('app-file-content').count(), 0, 'no editor for a binary file')

    const files = await api('GET', '/files')
    assert.deepEqual(files.map((f) => f.path).sort(), ['assets/app.js', 'index.html', 'logo.png'])
    const bin = await api('GET', '/files/logo.png')
    assert.equal(bin.encoding, 'base64')
    assert.equal(bin.content, logo.toString('base64'))
    assert.equal((await api('GET', '/files/index.html')).content, html('v1'))
    assert.equal((await api('GET', '/files/assets/app.js')).content, "console.log('orders')\n")
  })

  await t.test('a migration, pending until a deploy', async () => {
    await tab('migrations')
    await page.getByTestId('app-migrations-empty').waitFor()
    await page.getByTestId('app-migration-name').fill('001_orders')
    await page.getByTestId('app-migration-sql').fill(migration)
    await page.getByTestId('app-migration-add').click()
    await note('app-migration-note', /Recorded 001_orders/)
    await page.getByTestId('app-migration-001_orders').getByText('pending').waitFor()
    const ms = await api('GET', '/migrations')
    assert.equal(ms.length, 1)
    assert.equal(ms[0].sql, migration)
    assert.equal(ms[0].applied_at, null)
  })

  await t.test('build: release 1, then the same source is the same build', async () => {
    await tab('builds')
    await page.getByTestId('app-builds-empty').waitFor()
    await page.getByTestId('app-build').click()
    await note('app-build-note', 'Built release #1')
    await page.getByTestId('app-release-1').waitFor()
    await page.getByTestId('app-build').click()
    await note('app-build-note', 'Unchanged source: build #1')
    const rs = await api('GET', '/releases')
    assert.equal(rs.length, 1)
    assert.equal(rs[0].status, 'succeeded')
    assert.equal(rs[0].files, 3)
    assert.deepEqual(rs[0].migrations, ['001_orders'])
  })

  await t.test('deploy at /shop: the page is served at /a/shop/ and the migration applied', async () => {
    await tab('deployment')
    await page.getByTestId('app-never-deployed').waitFor()
    await page.getByTestId('app-deploy-route').fill('/shop')
    await page.getByTestId('app-deploy').click()
    await page.getByTestId('app-deployment-status').getByText('deployed').waitFor()
    await page.getByTestId('app-deployment-route').getByText('/shop').waitFor()
    await page.getByTestId('app-deployment-release').getByText('#1').waitFor()
    await page.getByTestId('app-header-deployment-url').getByText('/a/shop/').waitFor()
    const d = await api('GET', '/deployment')
    assert.equal(d.status, 'deployed')
    assert.equal(d.route_path, '/shop')
    assert.equal(d.url, '/a/shop/')
    assert.equal(d.release, 1)
    assert.notEqual((await api('GET', '/migrations'))[0].applied_at, null, 'the deploy applied the migration')

    const [popup] = await Promise.all([ctx.waitForEvent('page'), page.getByTestId('app-deployment-url').click()])
    shop = popup
    await shop.waitForLoadState()
    assert.equal(new URL(shop.url()).pathname, '/a/shop/')
    await shop.getByText('Orders v1').waitFor()
    // The console in front again: a background tab's timers and frames are throttled.
    await page.bringToFront()
  })

  await t.test('the board shows it deployed, with its link', async () => {
    await page.getByRole('link', { name: '← Apps' }).click()
    await page.waitForURL(/\/apps$/)
    const row = page.getByTestId('app-Orders')
    await row.getByTestId('app-deployment-url').getByText('/a/shop/').waitFor()
    assert.equal(await row.getByTestId('app-deployment-url').getAttribute('target'), '_blank')
    await page.getByTestId('app-status-deployed').click()
    await page.waitForURL(/status=deployed/)
    await row.waitFor()
    await page.getByTestId('app-status-all').click()
    await shot('apps')
    await row.getByTestId('app-link').click()
    await page.waitForURL(new RegExp(`/apps/${id}$`))
  })

  await t.test('Try it: add_order then list_orders show the row', async () => {
    await tab('backend')
    const add = page.getByTestId('app-fn-add_order')
    await add.getByTestId('app-arg-customer').fill('Ada')
    await add.getByTestId('app-arg-total').fill('42')
    await add.getByTestId('app-fn-call').click()
    await add.getByTestId('app-fn-result').getByText(/"rows_affected": 1/).waitFor()
    const list = page.getByTestId('app-fn-list_orders')
    await list.getByTestId('app-fn-call').click()
    await list.getByTestId('app-fn-result').getByText(/"Ada"/).waitFor()
    const r = await api('POST', '/backend/list_orders', { args: [] })
    assert.equal(r.result.row_count, 1)
    assert.deepEqual(r.result.rows, [{ customer: 'Ada', total: 42 }])
  })

  await t.test('edit index.html: a change made meanwhile is refused, then the save holds to the new etag', async () => {
    await tab('files')
    await page.getByTestId('app-file-index.html').getByTestId('app-file-open').click()
    await page.getByTestId('app-file-editor-path').getByText('index.html').waitFor()
    assert.equal(await page.getByTestId('app-file-content').inputValue(), html('v1'))
    // Someone else changes the file after the editor read it.
    await api('PUT', '/files/index.html', { content: html('meanwhile') })
    await page.getByTestId('app-file-content').fill(html('v2'))
    await page.getByTestId('app-file-save').click()
    await page.getByTestId('app-file-conflict').getByText(/changed meanwhile — reload/).waitFor()
    assert.equal((await api('GET', '/files/index.html')).content, html('meanwhile'), 'nothing overwritten')

    await page.getByTestId('app-file-reload').click()
    await page.waitForFunction(() => document.querySelector('[data-testid="app-file-content"]')?.value.includes('meanwhile'), null, { polling: 100 })
    await page.getByTestId('app-file-content').fill(html('v2'))
    await page.getByTestId('app-file-save').click()
    await page.getByTestId('app-file-saved').waitFor()
    const f = await api('GET', '/files/index.html')
    assert.equal(f.content, html('v2'))
    assert.ok((await page.getByTestId('app-file-etag').textContent()).includes(f.etag.slice(0, 12)), 'the editor holds the new etag')
  })

  await t.test('build 2 and deploy it: /a/shop/ shows the new text', async () => {
    await tab('builds')
    await page.getByTestId('app-build').click()
    await note('app-build-note', 'Built release #2')
    await tab('deployment')
    assert.equal(await page.getByTestId('app-deploy-route').inputValue(), '/shop')
    await page.getByTestId('app-deploy').click()
    await page.getByTestId('app-deployment-release').getByText('#2').waitFor()
    assert.equal((await api('GET', '/deployment')).release, 2)
    await shop.reload()
    await shop.getByText('Orders v2').waitFor()
  })

  await t.test('roll back to release 1: the old text again, no rebuild', async () => {
    const rs = await api('GET', '/releases')
    const first = rs.find((r) => r.number === 1)
    await page.getByTestId('app-rollback-release').selectOption(first.id)
    await page.getByTestId('app-rollback-serve').click()
    await page.getByTestId('app-deployment-release').getByText('#1').waitFor()
    const d = await api('GET', '/deployment')
    assert.equal(d.release, 1)
    assert.equal(d.release_id, first.id)
    assert.equal((await api('GET', '/releases')).length, 2, 'nothing was rebuilt')
    await shop.reload()
    await shop.getByText('Orders v1').waitFor()
    // The row is still there: the rollback left the database as it was.
    const r = await api('POST', '/backend/list_orders', { args: [] })
    assert.equal(r.result.row_count, 1)
  })

  await t.test("the app's own error page: invalid JSON is not sent, a valid one shows when undeployed", async () => {
    await page.getByTestId('app-error-page-source').getByText('default').waitFor()
    const box = page.getByTestId('app-error-page-editor-json')
    await box.fill('{"title": ')
    await page.getByTestId('app-error-page-editor-invalid').waitFor()
    assert.ok(await page.getByTestId('app-error-page-editor-save').isDisabled())
    await box.fill('{"title": "The shop is closed"}')
    await page.getByTestId('app-error-page-editor-save').click()
    await page.getByTestId('app-error-page-editor-saved').waitFor()
    await page.getByTestId('app-error-page-source').getByText('app').waitFor()
    assert.equal((await api('GET', '/deployment/error-page')).source, 'app')
    await shot('app')

    await page.getByTestId('app-undeploy').click()
    await page.getByTestId('app-deployment-status').getByText('undeployed').waitFor()
    assert.equal((await api('GET', '/deployment')).status, 'undeployed')
    await shop.reload()
    await shop.getByText('The shop is closed').waitFor()
    // Serving the release again deploys it.
    await page.getByTestId('app-rollback-serve').click()
    await page.getByTestId('app-deployment-status').getByText('deployed', { exact: true }).waitFor()
    await shop.reload()
    await shop.getByText('Orders v1').waitFor()
  })

  await t.test('the App token is shown once, works, and is revoked', async () => {
    await tab('token')
    await page.getByTestId('app-token-state').getByText('no token').waitFor()
    await page.getByTestId('app-token-create').click()
    const value = page.getByTestId('app-token-value')
    await value.waitFor()
    const token = (await value.textContent()).trim()
    assert.match(token, /^scwa_/)
    await page.getByTestId('app-token-shown').getByText(/will not be shown again/).waitFor()
    await page.getByTestId('app-token-copy').waitFor()
    await page.getByTestId('app-token-state').getByText('a token exists').waitFor()
    assert.equal((await api('GET', '/deployment')).has_token, true)
    const r = await fetch(`${server.url}/api/apps/${id}/backend/list_orders`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ args: [] }),
    })
    assert.equal(r.status, 200, 'the token calls the backend')

    // Shown once: opening the tab again does not show it.
    await tab('overview')
    await tab('token')
    await page.getByTestId('app-token-state').getByText('a token exists').waitFor()
    assert.equal(await page.getByTestId('app-token-value').count(), 0)

    await page.getByTestId('app-token-revoke').click()
    await page.getByTestId('app-token-revoked').getByText(/Revoked/).waitFor()
    await page.getByTestId('app-token-state').getByText('no token').waitFor()
    assert.equal((await api('GET', '/deployment')).has_token, false)
  })

  await t.test('overview: description cleared, then the app deleted after a confirmation', async () => {
    await tab('overview')
    await page.getByTestId('app-description').fill('')
    await page.getByTestId('app-save-details').click()
    await page.getByTestId('app-details-saved').waitFor()
    assert.equal((await api('GET', '')).description, null)

    await page.getByTestId('delete-app').click()
    await page.getByTestId('confirm-delete-app').click()
    await page.waitForURL(/\/apps$/)
    await page.getByTestId('apps-empty').waitFor()
    assert.equal((await call('GET', '/api/apps')).length, 0)
  })
})

test("a deployed page's script calls its own backend as its viewer, though sandboxed (no cookies, origin null)", async () => {
  const app = await call('POST', '/api/apps', { name: 'Counter', manifest_yaml: manifest })
  await call('POST', `/api/apps/${app.id}/migrations`, { name: '001_orders', sql: migration })
  // The page reads its id and view token from the meta tags Slipway puts in its head, then calls its backend.
  const script = `<script>
    const meta = (n) => document.querySelector('meta[name="' + n + '"]').content
    const api = (fn, args) => fetch('/api/apps/' + meta('slipway-app-id') + '/backend/' + fn, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + meta('slipway-view-token') },
      body: JSON.stringify({ args }) }).then((r) => r.json())
    let cookies = 'readable'
    try { cookies = document.cookie } catch { cookies = 'blocked' }
    api('add_order', ['from the page', 5]).then(() => api('list_orders', [])).then((r) => {
      document.getElementById('out').textContent = r.result.rows.map((o) => o.customer + ':' + o.total).join(',') + ' cookies ' + cookies
    }).catch((e) => { document.getElementById('out').textContent = 'failed ' + e })
  </script>`
  await call('PUT', `/api/apps/${app.id}/files/index.html`, { content: `<!doctype html><html><head><title>Counter</title></head><body><p id="out">…</p>${script}</body></html>` })
  await call('POST', `/api/apps/${app.id}/builds`)
  const d = await call('POST', `/api/apps/${app.id}/deploy`, { route_path: '/counter' })
  await page.goto(server.url + d.url)
  await page.locator('#out').getByText('from the page:5').waitFor()
  const out = await page.locator('#out').innerText()
  assert.match(out, /cookies blocked$/, 'the sandboxed page cannot read the session cookie')
  const listed = await call('POST', `/api/apps/${app.id}/backend/list_orders`, { args: [] })
  assert.deepEqual(listed.result.rows, [{ customer: 'from the page', total: 5 }])
  await call('DELETE', `/api/apps/${app.id}`)
})
