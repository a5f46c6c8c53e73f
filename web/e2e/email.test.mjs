// Email into workflows through the console: a workflow gets a plus address
// on an imap mailbox (the tests' mail system: a real IMAP server fed by an
// SMTP server); mail to an alias no trigger has shows among the unrouted
// email, is routed from there to a workflow (its alias becomes the
// workflow's address, and the message starts a run) or deleted; a legacy
// email trigger is given an address of its own. The API is asked at each
// step whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { admin, adminSession, browser, startMail, startServer, until } from './harness.mjs'

let server, mail, chrome, page, call
const state = {}
const mailbox = 'support@example.test'
const message = (to, subject, id) =>
  `From: Cy <cy@customer.test>\nTo: ${to}\nSubject: ${subject}\nMessage-ID: <${id}@customer.test>\nDate: ${new Date().toUTCString()}\n\nHow much is it?\n`

before(async () => {
  mail = await startMail(mailbox, 'imap-e2e-passphrase')
  server = await startServer()
  chrome = await browser()
  const ctx = await chrome.newContext({ viewport: { width: 1400, height: 1000 } })
  page = await ctx.newPage()
  page.setDefaultTimeout(20_000)
  call = await adminSession(server.url)
})

after(async () => {
  await chrome?.close()
  await server?.stop()
  await mail?.stop()
})

test('setup: a mailbox resource and two workflows', async () => {
  const project = await call('POST', '/api/projects', { name: 'Mail desk', repo_url: server.repo })
  const res = await call('POST', '/api/resources', {
    kind: 'imap',
    name: 'Support mailbox',
    secret: 'imap-e2e-passphrase',
    config: { host: mail.imapHost, port: mail.imapPort, security: 'none', username: mailbox },
  })
  state.box = res.id
  const end = [{ key: 'end', kind: 'end', config: { output: 'input.subject' } }]
  state.billing = (await call('POST', '/api/workflows', { project_id: project.id, name: 'Billing desk', nodes: end })).id
  state.sales = (await call('POST', '/api/workflows', { project_id: project.id, name: 'Sales desk', nodes: end })).id
  state.legacy = (await call('POST', '/api/workflows', { project_id: project.id, name: 'Catch all', nodes: end })).id
})

test('sign in', async () => {
  await page.goto(server.url + '/login')
  await page.getByLabel('Email').fill(admin.email)
  await page.locator('input[type=password]').fill(admin.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/tasks\/board/)
})

test("a workflow's page gives it a plus address on the mailbox", async () => {
  await page.goto(`${server.url}/workflows/${state.billing}`)
  await page.getByTestId('trigger-kind').selectOption('email_plus_address')
  await until('the mailbox offered', async () => (await page.getByTestId('trigger-mailbox').locator('option').count()) === 1 || 'none yet')
  await page.getByTestId('trigger-alias').fill('billing')
  await page.getByTestId('add-trigger').click()
  await until('the address shown', async () => (await page.getByTestId('email-address').textContent()) === 'support+billing@example.test')
  const [t] = await call('GET', `/api/workflows/${state.billing}/triggers`)
  assert.equal(t.kind, 'email_plus_address')
  const alias = await call('GET', `/api/workflow_triggers/${t.id}/email_alias`)
  assert.equal(alias.address, 'support+billing@example.test')
  // Mail to it starts the workflow.
  await mail.send('cy@customer.test', 'support+billing@example.test', message('support+billing@example.test', 'Invoice 7', 'b1'))
  await until('the billing run', async () => {
    const runs = await call('GET', `/api/workflows/${state.billing}/runs?limit=5`)
    return (runs.length === 1 && runs[0].status === 'succeeded') || runs
  })
})

test('mail to an unknown alias is unrouted; routing it gives a workflow that address and starts it', async () => {
  await mail.send('cy@customer.test', 'support+sales@example.test', message('support+sales@example.test', 'Pricing?', 's1'))
  await page.goto(`${server.url}/workflows`)
  await page.getByTestId('email-link').click()
  await page.waitForURL(/\/workflows\/email$/)
  await until('the unrouted mail listed', async () => {
    if ((await page.getByTestId('unrouted-Pricing?').count()) === 1) return true
    await page.getByRole('button', { name: 'Refresh' }).click()
    return 'not yet'
  })
  await page.getByTestId('unrouted-Pricing?').getByTestId('route').click()
  assert.equal(await page.getByTestId('route-alias').inputValue(), 'sales')
  await page.getByTestId('route-workflow').selectOption({ label: 'Sales desk' })
  await page.getByTestId('route-submit').click()
  await until('the unrouted mail gone', async () => (await page.getByTestId('unrouted-Pricing?').count()) === 0)
  await page.getByTestId('alias-sales').waitFor()
  assert.match(await page.getByTestId('alias-sales').textContent(), /support\+sales@example\.test.*Sales desk/)
  await until('the sales run', async () => {
    const runs = await call('GET', `/api/workflows/${state.sales}/runs?limit=5`)
    return (runs.length === 1 && runs[0].status === 'succeeded') || runs
  })
})

test('an unrouted message is deleted', async () => {
  await mail.send('spam@spam.test', 'support+nobody@example.test', message('support+nobody@example.test', 'Cheap pills', 'x1'))
  await until('the spam listed', async () => {
    if ((await page.getByTestId('unrouted-Cheap pills').count()) === 1) return true
    await page.getByRole('button', { name: 'Refresh' }).click()
    return 'not yet'
  })
  await page.getByTestId('unrouted-Cheap pills').getByTestId('delete-unrouted').click()
  await until('the spam gone', async () => (await page.getByTestId('unrouted-Cheap pills').count()) === 0)
  await page.getByTestId('no-unrouted').waitFor()
  assert.equal((await call('GET', '/api/workflows/email-unrouted')).items.length, 0)
})

test('a legacy email trigger is given an address of its own', async () => {
  await call('POST', `/api/workflows/${state.legacy}/triggers`, { kind: 'email', config: { resource_id: state.box } })
  await page.goto(`${server.url}/workflows/${state.legacy}`)
  await page.getByTestId('migrate-email').click()
  await until('the address shown', async () => /^support\+catch-all@example\.test$/.test((await page.getByTestId('email-address').textContent()) ?? '') || 'not yet')
  const [t] = await call('GET', `/api/workflows/${state.legacy}/triggers`)
  assert.equal(t.kind, 'email_plus_address')
  assert.equal(t.email_address, 'support+catch-all@example.test')
})
