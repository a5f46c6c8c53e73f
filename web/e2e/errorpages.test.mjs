// App error pages end to end: the owner console's error-page tab edits the
// instance default as raw JSON (invalid JSON is refused in the browser,
// nothing sent), a save replaces the whole object, and the workspace
// settings card edits the workspace's page the same way.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { admin, browser, startServer, adminSession } from './harness.mjs'

let server, chrome, page, call
/** PUTs the page sent to an error-page operation, in order. */
const puts = []

before(async () => {
  server = await startServer()
  chrome = await browser()
  page = await (await chrome.newContext({ viewport: { width: 1360, height: 860 } })).newPage()
  page.setDefaultTimeout(20_000)
  page.on('request', (r) => {
    if (r.method() === 'PUT' && r.url().endsWith('/error-page')) puts.push({ url: new URL(r.url()).pathname, body: r.postData() })
  })
  // Setup the test does not click through: the first admin (approved as
  // listed in SERVICE_INITIAL_ADMIN_EMAILS).
  call = await adminSession(server.url)
})

after(async () => {
  await chrome?.close()
  await server?.stop()
})

/** Replaces the editor's text. */
async function type(testid, text) {
  await page.getByTestId(`${testid}-json`).fill(text)
}

test('sign in', async () => {
  await page.goto(server.url + '/login')
  await page.getByLabel('Email').fill(admin.email)
  await page.locator('input[type=password]').fill(admin.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/tasks\/board/)
})

test('the owner console edits the instance default: invalid JSON is never sent, a save replaces the whole object', async () => {
  await page.goto(server.url + '/admin?tab=error-page')
  const id = 'admin-error-page'
  const box = page.getByTestId(`${id}-json`)
  await box.waitFor()
  assert.equal(await box.inputValue(), '{}', 'none set: {}')
  const save = page.getByTestId(`${id}-save`)

  await type(id, '{"title": "Down for maintenance",')
  await page.getByTestId(`${id}-invalid`).getByText('Invalid JSON').waitFor()
  assert.ok(await save.isDisabled(), 'Save is disabled while the JSON is invalid')
  await save.click({ force: true }).catch(() => {}) // a click on the disabled button does nothing

  await type(id, '["not", "an", "object"]')
  await page.getByTestId(`${id}-invalid`).getByText('must be a JSON object').waitFor()
  assert.ok(await save.isDisabled())

  await type(id, '{"title": 5}')
  await page.getByTestId(`${id}-invalid`).getByText('title must be a string').waitFor()
  assert.ok(await save.isDisabled())
  assert.deepEqual(puts, [], 'nothing was sent')

  const first = { title: 'Down for maintenance', message: 'Back at noon.\nSorry!', contact: 'ops@example.test', brand: { color: '#123456', logo: null } }
  await type(id, JSON.stringify(first, null, 4))
  await page.getByTestId(`${id}-invalid`).waitFor({ state: 'detached' })
  await page.getByTestId(`${id}-preview-title`).getByText('Down for maintenance').waitFor()
  await page.getByTestId(`${id}-preview-contact`).getByText('ops@example.test').waitFor()
  assert.ok(await save.isEnabled())
  await save.click()
  await page.getByTestId(`${id}-saved`).waitFor()
  assert.equal(puts.length, 1)
  assert.deepEqual(JSON.parse(puts[0].body), first)
  assert.deepEqual(await call('GET', '/api/admin/error-page'), first)
  // The editor shows the page as stored, pretty-printed.
  assert.deepEqual(JSON.parse(await box.inputValue()), first)

  // Replace, no merge: the keys the second page lacks are gone.
  const second = { title: 'This app is failing for now' }
  await type(id, JSON.stringify(second))
  await save.click()
  await page.getByTestId(`${id}-saved`).waitFor()
  assert.deepEqual(await call('GET', '/api/admin/error-page'), second)

  // After a reload the console reads it back.
  await page.reload()
  await box.waitFor()
  assert.deepEqual(JSON.parse(await box.inputValue()), second)
})

test("the workspace settings card edits the workspace's page", async () => {
  await page.goto(server.url + '/settings')
  const id = 'workspace-error-page'
  const card = page.getByTestId('workspace-error-page-card')
  await card.scrollIntoViewIfNeeded()
  const box = page.getByTestId(`${id}-json`)
  await box.waitFor()
  assert.equal(await box.inputValue(), '{}')
  const save = page.getByTestId(`${id}-save`)

  await type(id, '{"title": ')
  await page.getByTestId(`${id}-invalid`).getByText('Invalid JSON').waitFor()
  assert.ok(await save.isDisabled())
  const sent = puts.length

  const ws = { title: 'Our apps are resting', message: 'Write to us.', contact: 'https://example.test/help', team: ['a', 'b'] }
  await type(id, JSON.stringify(ws, null, 2))
  await page.getByTestId(`${id}-preview-title`).getByText('Our apps are resting').waitFor()
  await save.click()
  await page.getByTestId(`${id}-saved`).waitFor()
  assert.equal(puts.length, sent + 1)
  assert.equal(puts.at(-1).url, '/api/workspace/error-page')
  assert.deepEqual(await call('GET', '/api/workspace/error-page'), ws)
  // The instance default is untouched.
  assert.deepEqual(await call('GET', '/api/admin/error-page'), { title: 'This app is failing for now' })

  // Clear, then save: {} clears the workspace's page.
  await page.getByTestId(`${id}-clear`).click()
  assert.equal(await box.inputValue(), '{}')
  await save.click()
  await page.getByTestId(`${id}-saved`).waitFor()
  assert.deepEqual(await call('GET', '/api/workspace/error-page'), {})
})
