// The inbox, the notification bell and proposals through the console: an
// agent's failed task, its proposals and a workflow's human gate arrive as
// notifications; the bell's unread count moves over the realtime socket
// when a new one is made elsewhere (no reload); the inbox decides a gate
// and rejects a proposal (with a note) in place and marks a notification
// read; a proposal's page approves another, which applies it. The API is
// asked at each step whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { admin, browser, startServer, adminSession, until } from './harness.mjs'

let server, chrome, page, call
const state = {}

before(async () => {
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
})


const proposalLine = (id, title, key, value) =>
  `echo '${JSON.stringify({ type: 'proposal', id, kind: 'env_var', title, summary: `so that ${key} is ${value}`, payload: { key, value } })}'`

async function taskEnds(id) {
  await until('the task ends', async () => {
    const t = await call('GET', `/api/tasks/${id}`)
    return ['done', 'done_pr', 'failed'].includes(t.status) || t.status
  })
}

test('setup: a failed task, two proposals and a waiting human gate', async () => {
  const project = await call('POST', '/api/projects', { name: 'Inboxed', repo_url: server.repo })
  state.project = project.id
  const failed = await call('POST', '/api/tasks', { project_id: project.id, title: 'Broken build', prompt: 'exit 2' })
  const proposer = await call('POST', '/api/tasks', {
    project_id: project.id,
    title: 'Tidy settings',
    prompt: [proposalLine('a', 'Set MODE to fast', 'MODE', 'fast'), proposalLine('b', 'Set LEVEL to 3', 'LEVEL', '3'), 'exit 0'].join('\n'),
  })
  await taskEnds(failed.id)
  await taskEnds(proposer.id)
  const wf = await call('POST', '/api/workflows', { project_id: project.id, name: 'Release', nodes: [{ key: 'ask', kind: 'human', config: { message: 'Ship 1.2?' } }] })
  state.run = (await call('POST', `/api/workflows/${wf.id}/runs`, {})).run_id
  await until('four notifications', async () => (await call('GET', '/notifications')).facets.unread === 4 || (await call('GET', '/notifications')).facets)
})

test('sign in: the bell shows the unread count', async () => {
  await page.goto(server.url + '/login')
  await page.getByLabel('Email').fill(admin.email)
  await page.locator('input[type=password]').fill(admin.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/tasks\/board/)
  await until('the bell says 4', async () => (await page.getByTestId('bell-count').textContent()) === '4' || (await page.getByTestId('bell-count').textContent()))
})

test('a notification made elsewhere moves the bell over the socket, without a reload', async () => {
  const loads = []
  page.on('framenavigated', (f) => f === page.mainFrame() && loads.push(f.url()))
  const t = await call('POST', '/api/tasks', { project_id: state.project, title: 'Broken again', prompt: 'exit 3' })
  await taskEnds(t.id)
  await until('the bell says 5', async () => (await page.getByTestId('bell-count').textContent()) === '5' || (await page.getByTestId('bell-count').textContent()))
  assert.deepEqual(loads, [], 'the page was not reloaded')
  await page.getByTestId('bell').click()
  const items = page.getByTestId('bell-item')
  await until('the bell lists the newest first', async () => (await items.first().textContent()).includes('Broken again') || (await items.first().textContent()))
  await page.keyboard.press('Escape')
})

test('the inbox decides a gate and rejects a proposal in place', async () => {
  await page.getByRole('link', { name: 'Inbox' }).first().click()
  await page.waitForURL(/\/inbox/)
  const items = page.getByTestId('inbox-item')
  // The gate, two proposals, two failed tasks (the proposal and gate notifications are the decisions themselves).
  await until('five items', async () => (await items.count()) === 5 || (await items.count()))
  await until('three decisions', async () => (await page.getByTestId('inbox-actionable').textContent()).startsWith('3 decisions') || (await page.getByTestId('inbox-actionable').textContent()))
  await until('the nav counts them', async () => (await page.getByTestId('inbox-decisions').textContent()) === '3' || (await page.getByTestId('inbox-decisions').textContent()))
  await page.getByTestId('inbox-chip-gate').click()
  await until('only the gate', async () => (await items.count()) === 1 || (await items.count()))
  await items.first().getByTestId('inbox-approve').click()
  await until('the gate is decided', async () => (await items.count()) === 0 || (await items.count()))
  await until('the run goes on', async () => (await call('GET', `/api/workflows/runs/${state.run}`)).status === 'succeeded')

  await page.getByTestId('inbox-chip-proposal').click()
  const level = items.filter({ hasText: 'Set LEVEL to 3' })
  await level.getByTestId('inbox-reject').click()
  await level.getByTestId('inbox-reject-note').fill('Level 3 is too noisy')
  await level.getByTestId('inbox-reject-confirm').click()
  await until('one proposal left', async () => (await items.count()) === 1 || (await items.count()))
  const rejected = (await call('GET', '/api/proposals?status=rejected')).find((p) => p.title === 'Set LEVEL to 3')
  assert.equal(rejected?.review_note, 'Level 3 is too noisy')

  await page.getByTestId('inbox-chip-notification').click()
  await until('two failed tasks', async () => (await items.count()) === 2 || (await items.count()))
  await items.first().getByTestId('inbox-read').click()
  await until('one left unread', async () => (await items.count()) === 1 || (await items.count()))
  // Five unread before: the decided gate and proposal settled theirs, and one was read.
  await until('the bell follows', async () => (await page.getByTestId('bell-count').textContent()) === '2' || (await page.getByTestId('bell-count').textContent()))
})

test("a proposal's page shows the change and approves it", async () => {
  await page.getByRole('link', { name: 'Proposals' }).first().click()
  await page.waitForURL(/\/proposals/)
  await until('the status chips count', async () => (await page.getByTestId('proposals-status').innerText()).replace(/\s+/g, ' ').includes('Pending · 1') || (await page.getByTestId('proposals-status').innerText()))
  await page.getByTestId('proposal-row').filter({ hasText: 'Set MODE to fast' }).getByRole('link').click()
  await page.waitForURL(/\/proposals\/[0-9a-f-]+$/)
  assert.match(await page.getByTestId('proposal-payload').textContent(), /"key": "MODE"/)
  await page.getByTestId('proposal-approve').click()
  await page.getByTestId('proposal-materialized').waitFor()
  const vars = await call('GET', '/api/settings/env-vars')
  const mode = vars.find((v) => v.key === 'MODE')
  assert.equal(mode?.value, 'fast')
  assert.equal(await page.getByTestId('proposal-materialized').textContent(), mode.id)
  assert.equal(await call('GET', '/api/inbox/decisions/count'), 0)
})

test('the notifications page filters, reads and deletes', async () => {
  await page.getByTestId('bell').click()
  await page.getByTestId('bell-all').click()
  await page.waitForURL(/\/inbox\/notifications$/)
  const items = page.getByTestId('notification')
  const total = (await call('GET', '/notifications')).total
  await until('every notification listed', async () => (await items.count()) === total || (await items.count()))
  await page.getByTestId('notifications-source-run_failed').click()
  await until('the failed ones', async () => (await items.count()) === 2 || (await items.count()))
  await page.getByTestId('notifications-search').fill('Broken again')
  await page.getByTestId('notifications-search').press('Enter')
  await until('the search', async () => (await items.count()) === 1 || (await items.count()))
  await items.first().getByTestId('notification-delete').click()
  await until('deleted', async () => (await items.count()) === 0 || (await items.count()))
  assert.equal((await call('GET', '/notifications?source=run_failed')).total, 1)
})

test('the notifications page sets whether notifications are also mailed', async () => {
  assert.equal((await call('GET', '/api/notifications/settings')).mail, 'off')
  await page.getByTestId('mail-setting').getByText('Decisions').click()
  await until('saved', async () => (await call('GET', '/api/notifications/settings')).mail === 'decisions' || 'not yet')
  await page.reload()
  await until('shown after a reload', async () => (await page.getByTestId('mail-setting').locator('input:checked').inputValue()) === 'decisions' || 'not yet')
})

test('mark all read empties the bell', async () => {
  await page.getByTestId('bell').click()
  await page.getByTestId('bell-read-all').click()
  await until('no unread count', async () => (await page.getByTestId('bell-count').count()) === 0 || 'still shown')
  assert.equal((await call('GET', '/notifications')).facets.unread, 0)
})

test("a workflow's Help Scout conversations trigger: its secret shown once, a customer's message becomes a card on the backlog", async () => {
  const wf = await call('POST', '/api/workflows', {
    project_id: state.project,
    name: 'Support',
    nodes: [{ key: 'sh', kind: 'code', config: { language: 'sh', source: 'printf \'{"n": %s}\\n\' "${#SC_TRIGGER_CONTEXT}"' } }],
  })
  await page.goto(`${server.url}/workflows/${wf.id}`)
  await page.getByTestId('trigger-kind').selectOption('helpscout')
  await page.getByTestId('add-trigger').click()
  const url = (await page.getByTestId('webhook-url').innerText()).trim()
  assert.match(url, new RegExp(`^${server.url}/api/workflows/triggers/helpscout/whk_`))
  const secret = (await page.getByTestId('webhook-secret').innerText()).trim()
  assert.match(secret, /^[0-9a-f]{40}$/)
  await page.getByTestId('close-webhook').click()
  await page.getByTestId('trigger-helpscout').waitFor()
  assert.equal((await call('GET', `/api/workflows/${wf.id}/triggers`))[0].signing_secret, undefined, 'the secret is not listed again')

  // Help Scout delivers a customer's new conversation, signed as it signs.
  const body = JSON.stringify({
    id: 4242,
    createdBy: { id: 7, type: 'customer', first: 'Vera', last: 'Bear', email: 'vera@example.test' },
    _embedded: { threads: [{ id: 99001, type: 'customer', state: 'published', body: 'The export button does nothing.', createdBy: { id: 7, type: 'customer', first: 'Vera', last: 'Bear' }, createdAt: new Date().toISOString() }] },
  })
  const sig = crypto.createHmac('sha1', secret).update(body).digest('base64')
  const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-HelpScout-Signature': sig, 'X-HelpScout-Event': 'convo.created' }, body })
  const ack = await r.json()
  assert.equal(r.status, 200)
  assert.deepEqual(Object.keys(ack), ['status', 'backlog_item_id', 'reason'])
  assert.equal(ack.status, 'enqueued')

  // The card waits in the project's inbox column, gated.
  await page.goto(`${server.url}/projects/${state.project}/settings`)
  await page.getByTestId('project-tab-backlog').click()
  const card = page.getByTestId(`backlog-card-${ack.backlog_item_id}`)
  await card.waitFor()
  assert.equal(await card.getAttribute('data-state'), 'inbox')
  assert.match(await card.innerText(), /Message · Vera Bear: The export button does nothing\./)
})

// Last: the approved change's task runs (and, its prompt being prose to
// the tests' shell agent, fails), which the counts above must not see.
test("an approved repository change opens the task that makes it", async () => {
  const payload = { project_id: state.project, title: 'Document the tests', description: 'Say how to run the tests in the README.' }
  const line = JSON.stringify({ type: 'proposal', id: 'rc', kind: 'repo_change', title: 'Document the tests', payload })
  const t = await call('POST', '/api/tasks', { project_id: state.project, title: 'Propose docs', prompt: `printf '%s\\n' '${line}'` })
  await taskEnds(t.id)
  const [p] = await call('GET', '/api/proposals?status=pending')
  assert.equal(p.kind, 'repo_change')
  await page.goto(`${server.url}/proposals/${p.id}`)
  assert.match(await page.getByText(/A repo change change/).textContent(), /repo:/)
  await page.getByTestId('proposal-approve').click()
  await page.getByTestId('proposal-open').click()
  await page.waitForURL(/\/tasks\/[0-9a-f-]+$/)
  const made = (await call('GET', `/api/proposals/${p.id}`)).materialized_id
  assert.ok(page.url().endsWith(`/tasks/${made}`))
  assert.equal((await call('GET', `/api/tasks/${made}`)).title, 'Document the tests')
})
