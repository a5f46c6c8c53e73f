// Hosted apps end to end through the console: an app made on /apps with a
// backend function over a migrated table, its files (typed and uploaded), a
// migration, builds, a deploy at /shop (the page read at /a/shop/), calls
// through "Try it", an edit saved against its etag (a change made meanwhile
// refused), a second release, a rollback, the app's own error page, and an
// App token shown once. The API is asked at each step whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { admin, apiSession, browser, startServer, adminSession } from './harness.mjs'

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
  call = await adminSession(server.url)
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

test('a build step, a run submitted with files, and an install for another member', async (t) => {
  // The build step's command goes as a YAML string; the harness runs it with the process backend (the image is not pulled).
  const site = (command) => `name: Site\nbuild:\n  image: busybox\n  command: ${JSON.stringify(command)}\n  output: dist\n`
  const app = await call('POST', '/api/apps', { name: 'Site', manifest_yaml: site('mkdir -p dist && cp src/index.html dist/index.html && echo copied index.html') })
  const api = (method, p, body) => call(method, `/api/apps/${app.id}${p}`, body)
  await api('PUT', '/files/src/index.html', { content: html('built') })
  // Every text the build note shows, in order, however briefly (a build step of a few milliseconds is queued only that long).
  const watchNote = () =>
    page.evaluate(() => {
      window.__buildNotes = []
      if (window.__buildNoteObserver) return
      window.__buildNoteObserver = new MutationObserver(() => {
        const text = document.querySelector('[data-testid="app-build-note"]')?.textContent ?? ''
        if (text && window.__buildNotes.at(-1) !== text) window.__buildNotes.push(text)
      })
      window.__buildNoteObserver.observe(document.body, { subtree: true, childList: true, characterData: true })
    })
  const notes = () => page.evaluate(() => window.__buildNotes)

  await t.test('a build step: the build is queued, followed until built, and its log is a run', async () => {
    await page.goto(`${server.url}/apps/${app.id}?tab=builds`)
    await page.getByTestId('app-builds-empty').waitFor()
    await watchNote()
    await page.getByTestId('app-build').click()
    await note('app-build-note', 'Built release #1')
    assert.deepEqual(await notes(), ['Build #1 queued', 'Built release #1'], 'queued first, then built')
    const [b] = await api('GET', '/releases')
    assert.equal(b.status, 'succeeded')
    assert.ok(b.run_id, 'the build step ran as a run')
    const row = page.getByTestId('app-release-1')
    await row.getByText('succeeded').waitFor()
    const log = page.getByTestId('app-release-log-1')
    assert.equal(await log.getAttribute('href'), `/runs/${b.run_id}`)
    await log.click()
    await page.waitForURL(new RegExp(`/runs/${b.run_id}$`))
    await page.getByTestId(`tree-${b.run_id}`).getByText('succeeded').waitFor()
    await page.getByTestId('event-log').getByText('copied index.html').waitFor()
    // The release is the build's output: dist/index.html served as the entry page.
    const d = await api('POST', '/deploy', { route_path: '/site' })
    await page.goto(server.url + d.url)
    await page.getByText('Orders built').waitFor()
  })

  await t.test('a failing build step: the note says it failed and why', async () => {
    await api('PUT', '', { manifest_yaml: site('exit 3') })
    await page.goto(`${server.url}/apps/${app.id}?tab=builds`)
    await page.getByTestId('app-release-1').waitFor()
    await watchNote()
    await page.getByTestId('app-build').click()
    await note('app-build-note', /^Build #2 failed: /)
    const [b] = await api('GET', '/releases')
    assert.equal(b.status, 'failed')
    assert.match(b.error, /3/, 'the error names the exit code')
    assert.deepEqual(await notes(), ['Build #2 queued', `Build #2 failed: ${b.error}`])
    const row = page.getByTestId('app-release-2')
    await row.getByText('failed', { exact: true }).waitFor()
    await row.getByText(b.error).waitFor()
    assert.equal(await page.getByTestId('app-release-log-2').getAttribute('href'), `/runs/${b.run_id}`)
    assert.equal((await api('GET', '/deployment')).release, 1, 'the deployment still serves release 1')
  })

  await t.test('submit a run: invalid JSON is not sent; the run and its files are linked, a file downloads as sent', async () => {
    const project = await call('POST', '/api/projects', { name: 'intake', repo_url: server.repo })
    const wf = await call('POST', '/api/workflows', { name: 'Intake', project_id: project.id, nodes: [{ key: 'e', kind: 'end', config: { output: 'input' } }] })
    await page.goto(`${server.url}/apps/${app.id}?tab=backend`)
    const card = page.getByTestId('app-submit-run')
    assert.equal(await card.getByTestId('app-run-input').inputValue(), '{}')
    assert.ok(await card.getByTestId('app-run-submit').isDisabled(), 'no workflow picked yet')
    await card.getByTestId('app-run-workflow').click()
    await page.getByRole('option', { name: 'Intake' }).click()
    await card.getByTestId('app-run-input').fill('{"ticket": ')
    await card.getByTestId('app-run-submit').click()
    await card.getByRole('alert').getByText(/invalid JSON/).waitFor()
    assert.equal(((await call('GET', `/api/workflows/${wf.id}/runs`)) ?? []).length, 0, 'nothing was sent')

    await card.getByTestId('app-run-input').fill('{"ticket": 42}')
    const notes = 'first line\nsecond line\n'
    await card.locator('input[type=file]').setInputFiles([
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from(notes) },
      { name: 'data.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2\n') },
    ])
    await card.getByTestId('app-run-submit').click()
    const link = card.getByTestId('app-run-link')
    await link.waitFor()
    assert.equal(await card.getByRole('alert').count(), 0)
    const runs = await call('GET', `/api/workflows/${wf.id}/runs`)
    assert.equal(runs.length, 1, 'one run started')
    const runID = runs[0].id
    assert.equal(await link.getAttribute('href'), `/workflows/runs/${runID}`)
    const file = card.getByTestId('app-run-file-0')
    await file.getByText('notes.txt').waitFor()
    assert.match(await card.getByTestId('app-run-result').innerText(), /notes\.txt\s+23 bytes[\s\S]*data\.csv\s+8 bytes/)
    const url = await file.getAttribute('href')
    assert.match(url, /^\/api\/app_uploads\/[^/]+\/download$/)
    assert.match(await card.getByTestId('app-run-file-1').getAttribute('href'), /^\/api\/app_uploads\/[^/]+\/download$/)
    // The link downloads with the session's cookie: the file as it was sent, as an attachment.
    const got = await page.evaluate(async (u) => {
      const r = await fetch(u, { credentials: 'include' })
      return { status: r.status, body: await r.text(), disposition: r.headers.get('content-disposition') ?? '' }
    }, url)
    assert.equal(got.status, 200)
    assert.equal(got.body, notes)
    assert.match(got.disposition, /^attachment/)

    // The run's page: the input it got lists the files by their links.
    await link.click()
    await page.waitForURL(new RegExp(`/workflows/runs/${runID}$`))
    await page.locator('[data-testid="run-status"][data-status="succeeded"]').waitFor()
    const run = await call('GET', `/api/workflows/runs/${runID}`)
    const output = JSON.stringify(run.output)
    assert.ok(output.includes('"ticket":42') && output.includes(url), output)
    await call('DELETE', `/api/workflows/${wf.id}`)
  })

  await t.test('install for a member, then uninstall; a member who is not an admin is refused', async () => {
    const mia = { email: 'mia@example.test', password: 'mia-passphrase-123', name: 'Mia Member' }
    const invite = await call('POST', '/organization/invites', { email: mia.email, role: 'member' })
    const r = await fetch(server.url + '/api/auth/register', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: mia.email, password: mia.password, display_name: mia.name }),
    })
    assert.ok(r.ok, `register: ${r.status}`)
    await (await apiSession(server.url, mia.email, mia.password))('POST', '/organization/invites/accept', { token: invite.token })
    const pending = await call('GET', '/api/admin/users/pending')
    await call('POST', `/api/admin/users/${pending.users.find((u) => u.email === mia.email).id}/approve`)

    // Mia in a browser of her own, in the workspace she was invited to (she has one of her own too).
    const miaCtx = await chrome.newContext({ viewport: { width: 1360, height: 860 } })
    const other = await miaCtx.newPage()
    other.setDefaultTimeout(20_000)
    await other.goto(server.url + '/login')
    await other.getByLabel('Email').fill(mia.email)
    await other.locator('input[type=password]').fill(mia.password)
    await other.getByRole('button', { name: 'Sign in' }).click()
    await other.waitForURL(/\/tasks\/board/)
    await other.getByTestId('workspace-switcher').click()
    await other.getByRole('option', { name: "Default · Ada Admin's organization" }).click()
    const miaSees = async (state) => {
      await other.goto(`${server.url}/apps/${app.id}`)
      await other.getByTestId('app-installed').getByText(state, { exact: true }).waitFor()
    }
    await miaSees('not installed')

    await page.goto(`${server.url}/apps/${app.id}`)
    await page.getByTestId('app-member-select').click()
    await page.getByRole('option', { name: /Mia Member/ }).click()
    await page.getByTestId('app-member-install').click()
    const answer = page.getByTestId('app-member-note')
    await answer.getByText('Mia Member: installed').waitFor()
    assert.equal(await answer.getAttribute('data-installed'), 'true')
    await miaSees('installed')

    await page.getByTestId('app-member-uninstall').click()
    await answer.getByText('Mia Member: not installed').waitFor()
    assert.equal(await answer.getAttribute('data-installed'), 'false')
    await miaSees('not installed')

    // Mia is a member, not an admin: installing for Ada is refused (403), and nothing changes.
    await other.getByTestId('app-member-select').click()
    await other.getByRole('option', { name: /Ada Admin/ }).click()
    await other.getByTestId('app-member-install').click()
    await other.getByTestId('app-member-install-card').getByRole('alert').getByText(/only a workspace admin/).waitFor()
    assert.equal(await other.getByTestId('app-member-note').count(), 0)
    assert.equal((await api('GET', '')).installed, false, "Ada's install is unchanged")
    await miaCtx.close()
    await api('DELETE', '')
  })
})
