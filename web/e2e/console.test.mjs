// The console end to end: the real binary, a real browser.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { execFileSync } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { admin, apiSession, browser, startServer, stripeSecret } from './harness.mjs'

let server, chrome, page
const shots = process.env.SCREENSHOTS // a directory: screenshots of the main pages go there

async function shot(name) {
  if (!shots) return
  // From the top: a page scrolled down would show the fixed header over its middle.
  await page.evaluate(() => window.scrollTo(0, 0))
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true })
}

before(async () => {
  server = await startServer()
  chrome = await browser()
  page = await (await chrome.newContext({ viewport: { width: 1360, height: 860 } })).newPage()
  page.setDefaultTimeout(20_000)
})

after(async () => {
  await chrome?.close()
  await server?.stop()
})

const state = {}

/** Registers an account through the API (it waits for the admin's approval). */
async function register(email, password, name) {
  const r = await fetch(server.url + '/api/auth/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password, display_name: name }),
  })
  assert.ok(r.ok, `register ${email}: ${r.status}`)
}

test('the sign-in page says how the first admin is made; registering the listed address signs in', async () => {
  await page.goto(server.url + '/')
  await page.waitForURL(/\/login/)
  await page.getByTestId('no-admin').waitFor()
  // The server lists first admins: the hint says to register one (it told to list an address, already done).
  const hint = await page.getByTestId('no-admin').innerText()
  assert.match(hint, /create an account with one of those addresses/)
  assert.doesNotMatch(hint, /SERVICE_INITIAL_ADMIN_EMAILS/)
  await shot('login')
  await page.getByRole('link', { name: 'Create an account' }).click()
  await page.getByLabel('Name').fill(admin.name)
  await page.getByLabel('Email').fill(admin.email)
  await page.locator('input[type=password]').fill(admin.password)
  await page.getByRole('button', { name: 'Create account' }).click()
  await page.waitForURL(/\/tasks\/board/)
  await page.getByText('Create a project first').waitFor()
})

test('a wrong password shows the API message', async () => {
  const ctx = await chrome.newContext()
  const p = await ctx.newPage()
  await p.goto(server.url + '/login')
  await p.getByLabel('Email').fill(admin.email)
  await p.locator('input[type=password]').fill('not-the-password')
  await p.getByRole('button', { name: 'Sign in' }).click()
  await p.getByRole('alert').getByText('invalid email or password').waitFor()
  await ctx.close()
})

test('create a project', async () => {
  await page.getByRole('link', { name: 'Projects' }).click()
  await page.getByTestId('project-name').fill('demo')
  await page.getByTestId('project-repo').fill(server.repo)
  await page.getByTestId('create-project').click()
  await page.getByTestId('project-demo').waitFor()
  await shot('projects')
})

test("the agent picker offers the workspace's profiles, and the task runs with the one picked", async () => {
  // Issue 24: the picker offered "llm", a profile no workspace has, and never its own.
  const call = await apiSession(server.url, admin.email, admin.password)
  await call('POST', '/api/agent-profiles', { name: 'nightly', agent_type: 'shell' })
  await page.getByRole('link', { name: 'Tasks' }).click()
  await page.getByTestId('task-agent').click()
  const options = await page.getByRole('option').allInnerTexts()
  assert.deepEqual(options.sort(), ['coder: plain language', 'nightly: the prompt is a script', 'shell: the prompt is a script'])
  await page.getByRole('option', { name: 'nightly: the prompt is a script' }).click()
  await page.getByTestId('task-prompt').fill('echo picked')
  await page.getByTestId('start-task').click()
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/)
  const task = await call('GET', '/api/tasks/' + page.url().split('/').pop())
  assert.equal(task.agent_profile, 'nightly')
  await page.locator('[data-status="done_pr"], [data-status="done"]').first().waitFor({ timeout: 60_000 })
  // Back to the default for the tests that follow.
  await page.getByRole('link', { name: 'Tasks' }).click()
})

test('start a task and watch its log arrive live', async () => {
  await page.getByRole('link', { name: 'Tasks' }).click()
  // The agent prints its first line, then waits for the test to open a gate
  // in its worktree (the sandbox lets it see nothing else of the machine).
  await page.getByTestId('task-prompt').fill('echo "tick 1"; while [ ! -e gate ]; do sleep 0.1; done; rm gate; for i in 2 3 4; do echo "tick $i"; done; echo done > result.txt')
  await page.getByTestId('start-task').click()
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/)
  state.taskURL = page.url()
  const gate = path.join(server.dir, 'data', 'git', 'worktrees', state.taskURL.split('/').pop(), 'gate')
  const log = page.getByTestId('event-log')
  await log.getByText('tick 1').waitFor()
  const before = await log.locator('[data-seq]').count()
  // Printed after the page showed the log: these lines can only come live.
  writeFileSync(gate, '')
  await log.getByText('tick 4').waitFor()
  assert.ok((await log.locator('[data-seq]').count()) > before, 'events arrived after the first ones')
  await page.locator('[data-status="done_pr"], [data-status="done"]').first().waitFor({ timeout: 60_000 })
  const seqs = await log.locator('[data-seq]').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq'))))
  assert.deepEqual(seqs, seqs.map((_, i) => i + 1), 'every event once, in order')
  // One file changed reads "1 file" (it read "1 files").
  assert.match(await page.getByTestId('pr').innerText(), /· 1 file, \+1 −0$/)
  await shot('task')
})

test("a finished task's change: the files and the patch, an undo counted down then run now, and its log searched and filtered", async () => {
  await page.goto(state.taskURL)
  const log = page.getByTestId('event-log')
  await log.getByText('tick 3').waitFor()
  const all = await log.locator('[data-seq]').count()
  await page.getByTestId('event-search').fill('tick 3')
  assert.equal(await log.locator('[data-seq]').count(), 1)
  assert.match(await page.getByTestId('event-count').innerText(), new RegExp(`^1 of ${all}$`))
  await page.getByTestId('event-search').fill('')
  await page.getByTestId('event-types').click()
  await page.getByRole('option', { name: 'status' }).click()
  await page.keyboard.press('Escape')
  const types = await log.locator('[data-seq]').evaluateAll((els) => [...new Set(els.map((e) => e.getAttribute('data-type')))])
  assert.deepEqual(types, ['status'])
  // Status changes read as words, not JSON.
  assert.match(await log.innerText(), /queued → running/)

  await page.getByTestId('tab-change').click()
  assert.match(await page.getByTestId('change-files').innerText(), /result\.txt/)
  assert.match(await page.getByTestId('patch').innerText(), /\+done/)
  await shot('task-change')
  await page.getByTestId('undo-revert_commit').click()
  const undo = page.getByTestId('undo-action-revert_commit')
  assert.match(await undo.getByTestId('undo-countdown').innerText(), /^runs in \d+ s$/)
  await undo.getByTestId('undo-run-now').click()
  await page.locator('[data-testid="undo-action-revert_commit"][data-status="executed"]').waitFor()
  await shot('task-undo')
  assert.match(await undo.innerText(), /revert/i)
})

test('cancel a running task', async () => {
  await page.getByRole('link', { name: 'Tasks' }).click()
  await page.getByTestId('task-prompt').fill('echo waiting; sleep 120')
  await page.getByTestId('start-task').click()
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/)
  await page.getByTestId('event-log').getByText('waiting').waitFor()
  await page.getByTestId('cancel-task').click()
  await page.locator('[data-status="cancelled"]').first().waitFor()
  const cancelled = page.url().split('/').pop()
  const done = state.taskURL.split('/').pop()
  await page.getByRole('link', { name: 'Tasks' }).click()
  // The board shows both: the finished one with the done ones, the cancelled one with the failed ones.
  await page.getByTestId('column-done_pr').getByTestId(`task-${done}`).waitFor()
  await page.getByTestId('column-failed').getByTestId(`task-${cancelled}`).waitFor()
  await shot('task-board')
})

test('build a three-node workflow on the canvas, run it, approve its human gate, see it finish', async () => {
  await page.getByRole('link', { name: 'Workflows' }).click()
  await page.getByTestId('new-workflow-name').fill('ship it')
  await page.getByTestId('new-workflow-project').selectOption({ label: 'demo' })
  await page.getByTestId('new-workflow').click()
  await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/)
  await page.getByTestId('workflow-canvas').waitFor()
  for (const [kind, key] of [['transform', 'start'], ['human', 'review']]) {
    await page.getByTestId('add-node-kind').selectOption(kind)
    await page.getByTestId('add-node-key').fill(key)
    await page.getByTestId('add-node').click()
    await page.getByTestId(`node-${key}`).waitFor()
  }
  // A human node's edge must name its output: saving without one shows the error on the node.
  await page.getByTestId('edge-source').selectOption('start')
  await page.getByTestId('edge-target').selectOption('review')
  await page.getByTestId('add-edge').click()
  await page.getByTestId('edge-source').selectOption('review')
  await page.getByTestId('edge-handle').selectOption('approved')
  await page.getByTestId('edge-target').selectOption('done')
  await page.getByTestId('add-edge').click()
  await page.getByTestId('arrange').click()
  await page.getByTestId('save-workflow').click()
  await page.getByTestId('workflow-saved').waitFor()
  await shot('workflow-canvas')
  await page.getByTestId('run-workflow').click()
  await page.waitForURL(/\/workflows\/runs\/[0-9a-f-]{36}$/)
  state.runURL = page.url()
  await page.locator('[data-testid="run-status"][data-status="running"]').waitFor()
  await page.getByTestId('gate-approve').waitFor()
  await shot('workflow-run-waiting')
  await page.getByTestId('gate-approve').click()
  await page.locator('[data-testid="run-status"][data-status="succeeded"]').waitFor()
  await shot('workflow-run-done')
})

test('a validation error shows on the node it names', async () => {
  await page.getByRole('link', { name: 'Workflows' }).click()
  await page.getByTestId('new-workflow-name').fill('broken')
  await page.getByTestId('new-workflow-project').selectOption({ label: 'demo' })
  await page.getByTestId('new-workflow').click()
  await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/)
  await page.getByTestId('add-node-kind').selectOption('gate')
  await page.getByTestId('add-node-key').fill('check')
  await page.getByTestId('add-node').click()
  // The empty condition is flagged on the node before anything is saved; saving is refused, saying which.
  await page.getByTestId('node-error-check').waitFor()
  await page.getByTestId('save-workflow').click()
  assert.match(await page.getByTestId('workflow-error').innerText(), /node "check": condition/)
  // Leaving with unsaved changes asks first: dismissed, the page stays; accepted, it goes.
  page.once('dialog', (d) => d.dismiss())
  await page.getByRole('link', { name: 'Workflows', exact: true }).click()
  await page.getByTestId('workflow-canvas').waitFor()
  assert.match(page.url(), /\/workflows\/[0-9a-f-]{36}$/)
  let asked = ''
  page.once('dialog', (d) => {
    asked = d.message()
    d.accept()
  })
  await page.getByRole('link', { name: 'Workflows', exact: true }).click()
  await page.waitForURL(/\/workflows$/)
  assert.match(asked, /unsaved changes/)
})

test('a second user in another workspace sees none of it', async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  await register('bo@example.test', 'bo-passphrase-123', 'Bo Other')
  // The admin approves Bo in the owner console's users tab.
  await page.goto(server.url + '/admin/?tab=users')
  await page.getByTestId('approve-bo@example.test').click()
  await page.getByTestId('approve-bo@example.test').waitFor({ state: 'detached' })
  await shot('admin-users')
  const users = await call('GET', '/api/admin/users')
  assert.ok(JSON.stringify(users).includes('bo@example.test'))

  const ctx = await chrome.newContext()
  const bo = await ctx.newPage()
  await bo.goto(server.url + '/login')
  await bo.getByLabel('Email').fill('bo@example.test')
  await bo.locator('input[type=password]').fill('bo-passphrase-123')
  await bo.getByRole('button', { name: 'Sign in' }).click()
  await bo.waitForURL(/\/tasks\/board/)
  await bo.getByText('Create a project first').waitFor()
  await bo.goto(state.taskURL)
  await bo.getByRole('alert').getByText('not found').waitFor()
  await bo.goto(state.runURL)
  await bo.getByRole('alert').first().waitFor()
  assert.equal(await bo.getByTestId('gate-approve').count(), 0)
  await bo.goto(server.url + '/workflows')
  await bo.getByText('No workflows yet').waitFor()
  assert.equal(await bo.getByText('ship it').count(), 0, "another workspace's workflow is not listed")
  await bo.goto(server.url + '/projects')
  await bo.getByText('No projects yet').waitFor()
  assert.equal(await bo.getByText('demo').count(), 0)
  await ctx.close()
})

test('destructive actions ask first: cancel keeps, confirm does it', async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  await register('cy@example.test', 'cy-passphrase-123', 'Cy Spam')
  const pending = async () => JSON.stringify(await call('GET', '/api/admin/users/pending')).includes('cy@example.test')

  await page.goto(server.url + '/admin/?tab=users')
  await page.getByTestId('reject-cy@example.test').click()
  const reject = page.getByRole('dialog', { name: 'Reject cy@example.test?' })
  await reject.getByRole('button', { name: 'Cancel' }).click()
  await reject.waitFor({ state: 'detached' })
  assert.ok(await pending(), 'cancelling keeps the account')
  await page.getByTestId('reject-cy@example.test').click()
  await page.getByTestId('confirm-reject').click()
  await page.getByTestId('pending-cy@example.test').waitFor({ state: 'detached' })
  assert.equal(await pending(), false, 'confirming rejects the account')

  // A runner: created with its token shown once, then deleted.
  await page.goto(server.url + '/runners')
  await page.getByTestId('runner-name').fill('spare')
  await page.getByTestId('create-runner').click()
  const token = await page.getByTestId('runner-token').innerText()
  assert.match(token, /^scrn_/)
  await page.getByTestId('close-runner-token').click()

  // It heartbeats: online, but hub mode is off here, so the console does
  // not call it eligible; a failing backend check shows why it takes no work.
  const beat = async (unhealthy) => {
    const r = await fetch(server.url + '/api/runner/v1/heartbeat', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
      body: JSON.stringify({ version: 'e2e', backend: 'docker', slots: 1, unhealthy }),
    })
    assert.equal(r.status, 200)
  }
  await beat('')
  await page.reload()
  await page.locator('[data-testid="runner-spare"] [data-status="online"]').waitFor()
  // One runner reads "1 runner" (it read "1 runners").
  assert.match(await page.getByTestId('runner-next-step').innerText(), /\b1 runner · 1 online · 1 ready once hub mode is on · 0 enrollment tokens pending/, 'not "eligible" while hub mode is off')
  assert.equal(await page.getByTestId('eligible-spare').count(), 0, 'no "eligible" while hub mode is off')
  await beat('no container engine at unix:///gone.sock')
  await page.reload()
  assert.match(await page.getByTestId('health-spare').innerText(), /no container engine/)

  await page.getByTestId('delete-spare').click()
  const remove = page.getByRole('dialog', { name: 'Delete spare?' })
  await remove.getByRole('button', { name: 'Cancel' }).click()
  await remove.waitFor({ state: 'detached' })
  await page.getByTestId('runner-spare').waitFor()
  await page.getByTestId('delete-spare').click()
  await page.getByTestId('confirm-delete-runner').click()
  await page.getByTestId('runner-spare').waitFor({ state: 'detached' })
  assert.equal(JSON.stringify(await call('GET', '/api/organization/runners')).includes('"spare"'), false)
})

test("the owner console's templates tab: edit a mail for the whole instance, and the next mail uses it (dev outbox)", async () => {
  await page.goto(server.url + '/admin/?tab=templates')
  await page.getByTestId('template-reset').click()
  await page.getByTestId('template-placeholders').getByText('{{link}}').waitFor()
  await page.getByTestId('template-subject').fill('Reset your Slipway password, {{name}}')
  // A placeholder the mail does not fill in: flagged here, refused by the API.
  await page.getByTestId('template-body').fill('Hi {{name}}, {{nope}}')
  assert.match(await page.getByTestId('template-unknown').innerText(), /\{\{nope\}\}/)
  await page.getByTestId('save-template').click()
  await page.getByRole('alert').waitFor()
  await page.getByTestId('template-body').fill('Hi {{name}}, reset here: {{link}} (until {{expires}})')
  assert.equal(await page.getByTestId('template-unknown').count(), 0)
  await page.getByTestId('template-reason').fill('clearer')
  await page.getByTestId('save-template').click()
  await page.getByTestId('template-saved').waitFor()
  await page.getByTestId('template-reset').getByText(/edited/).waitFor()
  await shot('admin-templates')

  const r = await fetch(server.url + '/api/auth/reset/request', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: admin.email }),
  })
  assert.equal(r.status, 202)
  const row = page.getByTestId(`mail-${admin.email}`)
  await row.getByText(`Reset your Slipway password, ${admin.name}`).waitFor({ timeout: 30_000 })
  await row.click()
  assert.match(await page.getByTestId('mail-body').innerText(), new RegExp(`^Hi ${admin.name}, reset here: \\S*/reset\\?token=srst_`))
})

test('an agent asks to run a tool: the header counts it live, its task page approves it, the task finishes', async () => {
  // A model that speaks the chat completions protocol: first a bash call
  // (which needs approval at this autonomy), then finish.
  let calls = 0
  const completion = (tool, args) => ({
    id: 'c',
    model: 'test-model',
    choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: '', tool_calls: [{ id: `call_${calls}`, type: 'function', function: { name: tool, arguments: JSON.stringify(args) } }] } }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  })
  const model = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      calls++
      res.setHeader('Content-Type', 'application/json')
      res.end(JSON.stringify(calls === 1 ? completion('bash', { command: 'echo approved > approved.txt' }) : completion('finish', { summary: 'wrote it' })))
    })
  })
  await new Promise((resolve) => model.listen(0, '127.0.0.1', resolve))
  try {
    const call = await apiSession(server.url, admin.email, admin.password)
    await call('POST', '/api/agent-profiles', { name: 'asker', agent_type: 'llm', model: 'test-model', base_url: `http://127.0.0.1:${model.address().port}/v1`, api_key: 'test-key' })
    const [ws] = await call('GET', '/api/workspaces')
    await call('PUT', `/api/workspaces/${ws.id}/autonomy`, { level: 20 })
    const project = (await call('GET', '/api/projects')).find((p) => p.name === 'demo')

    await page.goto(server.url + '/projects')
    await page.getByTestId('project-demo').waitFor()
    const task = await call('POST', '/api/tasks', { project_id: project.id, prompt: 'Write approved.txt', agent_profile: 'asker' })
    const waiting = page.getByTestId('approvals-waiting')
    await waiting.getByText('1 waiting for approval').waitFor({ timeout: 30_000 })
    await waiting.click()
    await page.getByRole('menuitem', { name: /bash/ }).click()
    await page.waitForURL(new RegExp(`/tasks/${task.id}$`))
    const ask = page.getByTestId('tool-approval')
    assert.match(await ask.innerText(), /echo approved > approved\.txt/)
    await ask.getByRole('button', { name: 'Approve' }).click()
    await page.locator('[data-status^="done"]').first().waitFor({ timeout: 30_000 })
    await waiting.waitFor({ state: 'detached' })
    assert.equal(calls, 2)
  } finally {
    model.close()
  }
})

test('interrupt an llm task while its model thinks, message it from its page, and it finishes having read the message', async () => {
  const note = 'Stop there and finish, please.'
  const bodies = []
  let release
  const model = http.createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', () => {
      bodies.push(body)
      if (bodies.length === 1) {
        release = () => res.destroy() // the first call hangs until the interrupt stops it
        return
      }
      res.setHeader('Content-Type', 'application/json')
      res.end(
        JSON.stringify({
          id: 'c',
          model: 'test-model',
          choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: '', tool_calls: [{ id: 'f', type: 'function', function: { name: 'finish', arguments: '{"summary":"stopped"}' } }] } }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      )
    })
  })
  await new Promise((resolve) => model.listen(0, '127.0.0.1', resolve))
  try {
    const call = await apiSession(server.url, admin.email, admin.password)
    await call('POST', '/api/agent-profiles', { name: 'thinker', agent_type: 'llm', model: 'test-model', base_url: `http://127.0.0.1:${model.address().port}/v1`, api_key: 'test-key' })
    const project = (await call('GET', '/api/projects')).find((p) => p.name === 'demo')
    const task = await call('POST', '/api/tasks', { project_id: project.id, prompt: 'Think for a long time', agent_profile: 'thinker' })
    await page.goto(`${server.url}/tasks/${task.id}`)
    for (let i = 0; i < 300 && bodies.length === 0; i++) await new Promise((r) => setTimeout(r, 100))
    assert.equal(bodies.length, 1, 'the model was called')
    await page.getByTestId('interrupt-task').click()
    await page.locator('[data-status="needs_input"]').first().waitFor()
    await page.getByTestId('message-text').fill(note)
    await page.getByTestId('message-send').click()
    await page.locator('[data-status^="done"]').first().waitFor({ timeout: 30_000 })
    assert.equal(bodies.length, 2)
    assert.ok(bodies[1].includes(note), 'the second model call carries the message')
    const [m] = await call('GET', `/api/agent/conversations/${task.id}/messages?role=user`)
    assert.equal(m.status, 'delivered', 'delivered: the model read it')
  } finally {
    release?.()
    model.close()
  }
})

/** The TOTP code (RFC 6238: SHA-1, 6 digits, 30 s) of a base32 secret at time t. */
function totp(secret, t = Date.now()) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'
  let bits = ''
  for (const c of secret.replace(/=+$/, '')) bits += alphabet.indexOf(c).toString(2).padStart(5, '0')
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)))
  const counter = Buffer.alloc(8)
  counter.writeBigUInt64BE(BigInt(Math.floor(t / 30_000)))
  const mac = createHmac('sha1', key).update(counter).digest()
  const o = mac[mac.length - 1] & 15
  return String((mac.readUInt32BE(o) & 0x7fffffff) % 1_000_000).padStart(6, '0')
}

test('two-factor sign-in: the settings offer to turn it on while off and to turn it off while on', async () => {
  // Issue 24: the "Turn off" form showed while two-factor sign-in was off.
  await page.getByRole('link', { name: 'Settings' }).click()
  await page.getByTestId('2fa-enroll').waitFor()
  assert.equal(await page.getByTestId('2fa-disable-code').count(), 0, 'no turn-off form while it is off')
  await page.getByTestId('2fa-enroll').click()
  const secret = (await page.getByTestId('2fa-secret').innerText()).trim()
  await page.getByTestId('2fa-code').fill(totp(secret))
  await page.getByTestId('2fa-confirm').click()
  const codes = page.getByTestId('recovery-codes')
  await codes.waitFor()
  await page.getByTestId('2fa-disable-code').waitFor()
  assert.equal(await page.getByTestId('2fa-enroll').count(), 0, 'no set-up button while it is on')
  // Off again with a recovery code, so the tests that sign in with a password still can.
  const recovery = (await codes.locator('code').allInnerTexts()).join('\n').match(/[A-Za-z0-9-]{8,}/)[0]
  await page.getByTestId('2fa-disable-code').fill(recovery)
  await page.getByTestId('2fa-disable').click()
  await page.getByTestId('2fa-disabled').waitFor()
  await page.getByTestId('2fa-enroll').waitFor()
  assert.equal(await page.getByTestId('2fa-disable-code').count(), 0)
})

test('sessions: another browser signed in shows in settings; signing it out there ends it at once, and so does "everywhere else"', async () => {
  const signedIn = async (userAgent) => {
    const p = await (await chrome.newContext({ userAgent })).newPage()
    p.setDefaultTimeout(20_000)
    await p.goto(server.url + '/login')
    await p.getByLabel('Email').fill(admin.email)
    await p.locator('input[type=password]').fill(admin.password)
    await p.getByRole('button', { name: 'Sign in' }).click()
    await p.waitForURL(/\/tasks\/board/)
    return p
  }
  const laptop = await signedIn('Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:131.0) Gecko/20100101 Firefox/131.0')
  const phone = await signedIn('Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36')
  await page.getByRole('link', { name: 'Settings' }).click()
  await page.reload()
  const card = page.getByTestId('sessions')
  const laptopRow = card.getByTestId('session-row').filter({ hasText: 'Firefox on Windows' })
  await laptopRow.waitFor()
  await card.getByTestId('session-row').filter({ hasText: 'Chrome on Android' }).waitFor()
  assert.match(await card.locator('[data-current=true]').innerText(), /this browser/i)
  assert.equal(await card.locator('[data-current=true]').count(), 1)

  await laptopRow.getByRole('button', { name: 'Sign out' }).click()
  await page.getByTestId('confirm-sign-out').click()
  await laptopRow.waitFor({ state: 'detached' })
  await laptop.reload()
  await laptop.waitForURL(/\/login/)
  // The phone is still in.
  await phone.reload()
  await phone.getByText('Tasks', { exact: true }).first().waitFor()
  assert.doesNotMatch(phone.url(), /\/login/)

  await card.getByTestId('sign-out-others').click()
  await page.getByTestId('confirm-sign-out').click()
  await card.getByTestId('sign-out-others').waitFor({ state: 'detached' })
  assert.equal(await card.getByTestId('session-row').count(), 1, 'only this browser is left')
  await phone.reload()
  await phone.waitForURL(/\/login/)
  await laptop.context().close()
  await phone.context().close()
})

test('an unknown address shows the console saying so (404), not JSON; the console has an icon', async () => {
  // Issue 24: unknown console URLs answered raw JSON, and there was no favicon.
  const resp = await page.goto(server.url + '/no/such/page')
  assert.equal(resp.status(), 404)
  await page.getByText('This page does not exist.').waitFor()
  const icon = await page.locator('link[rel="icon"]').getAttribute('href')
  const r = await fetch(server.url + icon)
  assert.equal(r.status, 200)
  assert.match(r.headers.get('content-type'), /^image\/svg\+xml/)
})

test('on a phone the header stays one line and covers none of the page', async () => {
  // Issue 24: on a narrow screen the header wrapped onto several lines over the page.
  const ctx = await chrome.newContext({ viewport: { width: 390, height: 844 } })
  const p = await ctx.newPage()
  await p.goto(server.url + '/login')
  await p.getByLabel('Email').fill(admin.email)
  await p.locator('input[type=password]').fill(admin.password)
  await p.getByRole('button', { name: 'Sign in' }).click()
  await p.waitForURL(/\/tasks\/board/)
  for (const where of ['/tasks/board', '/projects', '/settings']) {
    await p.goto(server.url + where)
    await p.locator('main h2').first().waitFor()
    // Everything the header shows lies inside its bar (wrapped content spilled below it, over the page).
    const [barBottom, contentBottom, contentRight] = await p.evaluate(() => {
      const bar = document.querySelector('header').getBoundingClientRect()
      let bottom = 0
      let right = 0
      for (const el of document.querySelectorAll('header *')) {
        const r = el.getBoundingClientRect()
        if (r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden') {
          bottom = Math.max(bottom, r.bottom)
          right = Math.max(right, r.right)
        }
      }
      return [bar.bottom, bottom, right]
    })
    assert.ok(contentBottom <= barBottom + 1, `${where}: the header's content reaches ${contentBottom}px, below its bar (${barBottom}px)`)
    assert.ok(contentRight <= 390 + 1, `${where}: the header's content reaches ${contentRight}px, past the screen`)
    const title = await p.locator('main h2').first().boundingBox()
    assert.ok(title.y >= barBottom, `${where}: the page's title (y ${title.y}) starts below the header (${barBottom})`)
    const sizes = await p.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth])
    assert.ok(sizes[0] <= sizes[1], `${where}: the page scrolls sideways (${sizes[0]} > ${sizes[1]})`)
  }
  await ctx.close()
})

/** The newest mailed link to the address that matches re, from the dev outbox, once it is there. */
async function mailedLink(call, to, re) {
  for (let i = 0; i < 100; i++) {
    const mails = await call('GET', '/api/admin/mail/outbox')
    const m = mails.find((m) => m.to === to && re.test(m.body ?? ''))
    if (m) return m.body.match(re)[0]
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`no mail to ${to} matching ${re}`)
}

test('a colleague invited in the console accepts through the mailed link; a forgotten password is reset through the mailed link', async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  await page.goto(server.url + '/members')
  await page.getByTestId('invite-email').fill('ivan@example.test')
  await page.getByTestId('invite-submit').click()
  await page.getByTestId('invite-ivan@example.test').waitFor()

  // The mailed link is absolute (no SERVICE_PUBLIC_URL here: the request's own origin) and opens the console's page.
  const invite = await mailedLink(call, 'ivan@example.test', /\S+\/invite\?token=\S+/)
  assert.ok(invite.startsWith(server.url + '/invite?token='), invite)
  const ivan = await (await chrome.newContext()).newPage()
  ivan.setDefaultTimeout(20_000)
  await ivan.goto(invite)
  await ivan.getByTestId('invite-register').click()
  await ivan.getByTestId('login-name').fill('Ivan Invitee')
  await ivan.getByTestId('login-email').fill('ivan@example.test')
  await ivan.getByTestId('login-password').fill('ivan-passphrase-123')
  await ivan.getByRole('button', { name: 'Create account' }).click()
  await ivan.getByTestId('accept-invite').click()
  await ivan.getByTestId('invite-accepted').waitFor()
  const members = JSON.stringify(await call('GET', '/organization/members'))
  assert.ok(members.includes('ivan@example.test'), 'the invitee is a member')
  await ivan.context().close()

  // Forgot password: asked for on the sign-in page, set through the mailed link.
  const anon = await (await chrome.newContext()).newPage()
  anon.setDefaultTimeout(20_000)
  await anon.goto(server.url + '/login')
  await anon.getByTestId('forgot-password').click()
  await anon.getByTestId('reset-email').fill('ivan@example.test')
  await anon.getByTestId('reset-submit').click()
  await anon.getByTestId('reset-done').waitFor()
  const reset = await mailedLink(call, 'ivan@example.test', /\S+\/reset\?token=\S+/)
  assert.ok(reset.startsWith(server.url + '/reset?token='), reset)
  await anon.goto(reset)
  await anon.getByTestId('new-password').fill('ivan-new-passphrase-456')
  await anon.getByTestId('reset-submit').click()
  await anon.getByTestId('reset-done').waitFor()
  await anon.context().close()
  const login = await fetch(server.url + '/api/auth/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: 'ivan@example.test', password: 'ivan-new-passphrase-456' }),
  })
  assert.equal(login.status, 200, 'the new password signs in')

  // The address check and the sign-in link land on console pages too.
  const pending = await call('GET', '/api/admin/users/pending')
  const ivanID = pending.users.find((u) => u.email === 'ivan@example.test').id
  await call('POST', `/api/admin/users/${ivanID}/approve`)
  const mailer = async (p) =>
    assert.equal((await fetch(server.url + p, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: 'ivan@example.test' }) })).status, 202)
  const guest = await (await chrome.newContext()).newPage()
  guest.setDefaultTimeout(20_000)
  await guest.goto(server.url + '/login?next=/settings')
  await guest.getByTestId('login-email').fill('ivan@example.test')
  await guest.getByTestId('login-password').fill('ivan-new-passphrase-456')
  await guest.getByRole('button', { name: 'Sign in' }).click()
  await guest.getByTestId('confirm-address').click()
  await guest.getByText('Link sent: check your mail').waitFor()
  const verify = await mailedLink(call, 'ivan@example.test', /\S+\/api\/auth\/verify\/consume\?token=\S+/)
  await guest.goto(verify)
  assert.match(await guest.getByTestId('verified').innerText(), /confirmed/)
  await guest.context().close()
  const other = await (await chrome.newContext()).newPage()
  other.setDefaultTimeout(20_000)
  await mailer('/api/auth/magic/request')
  const magic = await mailedLink(call, 'ivan@example.test', /\S+\/api\/auth\/magic\/consume\?token=\S+/)
  await other.goto(magic)
  await other.getByTestId('magic-confirm').click()
  await other.waitForURL(/\/tasks\/board/)
  await other.context().close()
})

test("settings: an agent profile with its key kept sealed, the workspace's autonomy, a project's branch checked against its repository, its cap, and its deletion said in full", async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  await page.goto(server.url + '/settings')
  await page.getByTestId('new-profile').click()
  await page.getByTestId('profile-name').fill('console-llm')
  await page.getByTestId('profile-model').fill('test-model')
  await page.getByTestId('profile-base-url').fill('http://127.0.0.1:9/v1')
  await page.getByTestId('profile-key').fill('sk-console-secret-123')
  await page.getByTestId('profile-save').click()
  await page.getByTestId('profile-console-llm').getByText('own key').waitFor()
  const profiles = JSON.stringify(await call('GET', '/api/agent-profiles'))
  assert.ok(profiles.includes('"console-llm"') && !profiles.includes('sk-console-secret-123'), 'the key is kept, never shown')
  await page.getByTestId('delete-profile-console-llm').click()
  await page.getByTestId('confirm-delete-profile').click()
  await page.getByTestId('profile-console-llm').waitFor({ state: 'detached' })

  const thumb = page.getByTestId('autonomy').getByRole('slider')
  await thumb.focus()
  await page.keyboard.press('Home')
  for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowRight')
  assert.match(await page.getByTestId('autonomy-meaning').innerText(), /^25: Agents ask before running commands/)
  await page.getByTestId('autonomy-save').click()
  await page.getByTestId('autonomy').getByText('Saved.').waitFor()
  const [ws] = await call('GET', '/api/workspaces')
  assert.equal((await call('GET', `/api/workspaces/${ws.id}/autonomy`)).level, 25)
  await shot('settings')

  await page.goto(server.url + '/projects')
  await page.getByTestId('settings-demo').click()
  await page.getByTestId('project-settings-branch').fill('no-such-branch')
  await page.getByTestId('project-settings-save').click()
  await page.getByText(/"no-such-branch" does not exist in the repository/).waitFor()
  await page.getByTestId('project-settings-branch').fill('main')
  await page.getByTestId('project-settings-cap').fill('2')
  await page.getByTestId('project-settings-profile').click()
  await page.getByRole('option', { name: /^coder/ }).click()
  await page.getByTestId('project-settings-save').click()
  await page.getByTestId('project-settings-saved').waitFor()
  await shot('project-settings')
  const demo = (await call('GET', '/api/projects')).find((p) => p.name === 'demo')
  assert.equal(demo.max_concurrent_runs, 2)
  assert.equal(demo.default_branch, 'main')
  assert.equal(demo.agent_profile, 'coder', 'the project runs its tasks with the chosen profile')
  await call('PUT', `/api/projects/${demo.id}`, { agent_profile: '' })

  const scratch = await call('POST', '/api/projects', { name: 'scratch', repo_url: demo.repo_url })
  await page.goto(`${server.url}/projects/${scratch.id}/settings`)
  await page.getByTestId('delete-project').click()
  const confirm = page.getByRole('dialog', { name: 'Delete scratch?' })
  assert.match(await confirm.innerText(), /its tasks with their runs/)
  await page.getByTestId('confirm-delete-project').click()
  await page.waitForURL(/\/projects$/)
  await page.getByTestId('project-demo').waitFor()
  assert.equal(await page.getByTestId('project-scratch').count(), 0)
})

test('settings: environment variables for all projects and for one, a secret shown only as "secret · set" and replaced, locked and unlocked, deleted after asking', async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  await page.goto(server.url + '/settings')
  const card = page.getByTestId('env-vars')
  const row = (key, scope) => card.locator(`[data-testid=env-var-row][data-key="${key}"][data-scope="${scope}"]`)
  await card.getByTestId('env-vars-empty').waitFor()

  await card.getByTestId('new-env-var').click()
  await page.getByTestId('env-var-key').fill('LOG_LEVEL')
  await page.getByTestId('env-var-value-input').fill('debug')
  await page.getByTestId('env-var-save').click()
  await row('LOG_LEVEL', 'all').getByText('debug').waitFor()

  // A secret for one project: its value is never shown again, not even to whoever set it.
  await card.getByTestId('new-env-var').click()
  await page.getByTestId('env-var-key').fill('API_TOKEN')
  await page.getByTestId('env-var-project').click()
  await page.getByRole('option', { name: 'demo' }).click()
  await page.getByTestId('env-var-secret-box').check()
  await page.getByTestId('env-var-value-input').fill('tok-console-s3cret-1')
  await page.getByTestId('env-var-save').click()
  await row('API_TOKEN', 'demo').getByText('secret · set').waitFor()
  const demo = (await call('GET', '/api/projects')).find((p) => p.name === 'demo')
  let listed = await call('GET', `/api/settings/env-vars?project_id=${demo.id}`)
  assert.deepEqual(
    listed.map((v) => [v.key, v.project_id, v.is_secret, v.value]),
    [
      ['LOG_LEVEL', null, false, 'debug'],
      ['API_TOKEN', demo.id, true, ''],
    ],
  )
  assert.doesNotMatch(await card.innerText(), /tok-console-s3cret/)

  // Editing it starts empty; a new value replaces the stored one.
  await row('API_TOKEN', 'demo').getByTestId('edit-env-var').click()
  assert.equal(await page.getByTestId('env-var-value-input').inputValue(), '')
  await page.getByText('secret · set: a new value replaces it').waitFor()
  await page.getByTestId('env-var-value-input').fill('tok-console-s3cret-2')
  await page.getByTestId('env-var-save').click()
  await page.getByTestId('env-var-save').waitFor({ state: 'detached' })
  assert.doesNotMatch(JSON.stringify(await call('GET', '/api/settings/env-vars')), /tok-console-s3cret/)

  // A plain one is edited in place.
  await row('LOG_LEVEL', 'all').getByTestId('edit-env-var').click()
  assert.equal(await page.getByTestId('env-var-value-input').inputValue(), 'debug')
  await page.getByTestId('env-var-value-input').fill('info')
  await page.getByTestId('env-var-save').click()
  await row('LOG_LEVEL', 'all').getByText('info').waitFor()

  // The workspace's owner locks and unlocks.
  await row('LOG_LEVEL', 'all').getByTestId('lock-env-var').click()
  await row('LOG_LEVEL', 'all').getByTestId('env-var-locked').waitFor()
  assert.equal((await call('GET', '/api/settings/env-vars')).find((v) => v.key === 'LOG_LEVEL').locked, true)
  assert.equal(await row('LOG_LEVEL', 'all').getByTestId('lock-env-var').innerText(), 'Unlock')
  await row('LOG_LEVEL', 'all').getByTestId('lock-env-var').click()
  await row('LOG_LEVEL', 'all').getByTestId('env-var-locked').waitFor({ state: 'detached' })

  // Deleting asks first: cancel keeps it, confirm removes it.
  await row('API_TOKEN', 'demo').getByTestId('delete-env-var').click()
  const confirm = page.getByRole('dialog', { name: 'Delete API_TOKEN?' })
  assert.match(await confirm.innerText(), /Runs of demo no longer get it; its value is removed from the vault/)
  await confirm.getByRole('button', { name: 'Cancel' }).click()
  await confirm.waitFor({ state: 'detached' })
  await row('API_TOKEN', 'demo').getByTestId('delete-env-var').click()
  await page.getByTestId('confirm-delete-env-var').click()
  await row('API_TOKEN', 'demo').waitFor({ state: 'detached' })
  listed = await call('GET', '/api/settings/env-vars')
  assert.deepEqual(
    listed.map((v) => [v.key, v.value, v.locked]),
    [['LOG_LEVEL', 'info', false]],
  )
  await call('DELETE', `/api/settings/env-vars/${listed[0].id}`)
})

test('resources: an HTTP API added from its kind\'s form, its connection tested, edited (a new address needs the secret again), capped, its secret cleared, shown in use by a workflow, deleted after asking', async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  // The far end: a bearer token it knows answers 200, anything else 401.
  const seen = []
  const api = http.createServer((req, res) => {
    seen.push({ path: req.url, auth: req.headers.authorization ?? '' })
    const known = ['Bearer tok-e2e-res-1', 'Bearer tok-e2e-res-2'].includes(req.headers.authorization)
    res.writeHead(known ? 200 : 401, { 'Content-Type': 'application/json' })
    res.end(known ? '{"ok": true}' : '{"error": "who are you"}')
  })
  await new Promise((resolve) => api.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${api.address().port}`
  try {
    await page.getByRole('link', { name: 'Resources' }).click()
    await page.getByTestId('resources-empty').waitFor()

    // A kind first; its schema makes the form: required fields marked, docs as descriptions, the secret named by the kind.
    await page.getByTestId('new-resource').click()
    const form = page.getByRole('dialog', { name: 'New resource' })
    await page.getByTestId('new-resource-kind').selectOption({ label: 'HTTP API' })
    assert.match(await page.getByTestId('new-resource-kind-description').innerText(), /connector and http_request nodes/)
    const baseURL = form.getByTestId('resource-config').getByTestId('field-base_url')
    assert.equal(await baseURL.getAttribute('required'), '')
    await form.getByText('Requests go to paths below it').waitFor()
    assert.deepEqual(await form.getByTestId('field-auth').locator('option').allInnerTexts(), ['Default', 'none', 'bearer', 'basic', 'header'])
    await form.getByText('Token or password').waitFor()
    await page.getByTestId('resource-name').fill('echo api')
    assert.equal(await page.getByTestId('create-resource').isDisabled(), true, 'base url is required')
    // What only the server knows: its 400 shows in the form.
    await baseURL.fill('ftp://127.0.0.1/files')
    await page.getByTestId('resource-secret-input').fill('tok-e2e-res-1')
    await page.getByTestId('create-resource').click()
    assert.match(await page.getByTestId('resource-form-error').innerText(), /must be an http or https URL/)
    await baseURL.fill(base + '/v1')
    await shot('resource-new')
    await page.getByTestId('create-resource').click()
    await page.waitForURL(/\/resources\/[0-9a-f-]{36}$/)
    const id = page.url().split('/').pop()
    await page.getByTestId('resource-title').getByText('echo api').waitFor()
    await page.getByTestId('resource-secret').getByText('secret · set').waitFor()
    let stored = await call('GET', `/api/resources/${id}`)
    assert.deepEqual([stored.kind, stored.has_secret, stored.config], ['http', true, { base_url: base + '/v1' }])
    assert.doesNotMatch(JSON.stringify(stored), /tok-e2e-res/)

    // The test calls the far end with the stored secret: ok, in green.
    await page.getByTestId('test-resource').click()
    const result = page.getByTestId('resource-test-result')
    await result.getByText(/HTTP 200 from 127\.0\.0\.1:\d+/).waitFor()
    assert.equal(await result.getAttribute('data-ok'), 'true')
    assert.deepEqual(seen.at(-1), { path: '/v1', auth: 'Bearer tok-e2e-res-1' })

    // Editing: the secret field starts empty; a new address without the secret is refused, saying why; with it, saved.
    assert.equal(await page.getByTestId('resource-secret-input').inputValue(), '')
    await page.getByText('secret · set: leave empty to keep it').waitFor()
    await page.getByTestId('resource-description').fill('The echo service')
    await page.getByTestId('resource-edit').getByTestId('field-base_url').fill(base + '/v2')
    await page.getByTestId('save-resource').click()
    assert.match(await page.getByTestId('resource-form-error').innerText(), /requires sending the secret again/)
    assert.equal((await call('GET', `/api/resources/${id}`)).config.base_url, base + '/v1', 'nothing was saved')
    await page.getByTestId('resource-secret-input').fill('tok-e2e-res-2')
    await page.getByTestId('save-resource').click()
    await page.getByTestId('resource-saved').waitFor()
    assert.equal(await page.getByTestId('resource-form-error').count(), 0)
    assert.equal(await page.getByTestId('resource-secret-input').inputValue(), '')
    stored = await call('GET', `/api/resources/${id}`)
    assert.deepEqual([stored.description, stored.config.base_url, stored.has_secret], ['The echo service', base + '/v2', true])
    await page.getByTestId('test-resource').click()
    await result.getByText(/HTTP 200 from/).waitFor()
    assert.deepEqual(seen.at(-1), { path: '/v2', auth: 'Bearer tok-e2e-res-2' })

    // At most two runs at once.
    await page.getByTestId('concurrency-unlimited').uncheck()
    await page.getByTestId('concurrency-max').fill('2')
    await page.getByTestId('save-concurrency').click()
    await page.getByTestId('resource-concurrency-now').getByText('2', { exact: true }).waitFor()
    assert.equal((await call('GET', `/api/resources/${id}`)).max_concurrent_uses, 2)

    // Clearing the secret asks first; without it the far end refuses the test, in red.
    await page.getByTestId('clear-secret').click()
    await page.getByTestId('confirm-clear-secret').click()
    await page.getByTestId('resource-secret').waitFor({ state: 'detached' })
    assert.equal((await call('GET', `/api/resources/${id}`)).has_secret, false)
    await page.getByTestId('test-resource').click()
    await result.getByText(/HTTP 401 from .+: the credentials were refused/).waitFor()
    assert.equal(await result.getAttribute('data-ok'), 'false')
    await shot('resource')

    // A workflow whose connector node names it: the page lists it, linked.
    await page.getByTestId('resource-unused').waitFor()
    const demo = (await call('GET', '/api/projects')).find((p) => p.name === 'demo')
    const wf = await call('POST', '/api/workflows', {
      name: 'call echo',
      project_id: demo.id,
      nodes: [
        { key: 'ping', kind: 'connector', config: { resource_id: id, path: '/ping' }, position: { x: 0, y: 0 } },
        { key: 'done', kind: 'end', position: { x: 0, y: 120 } },
      ],
      edges: [{ source: 'ping', target: 'done' }],
    })
    await page.reload()
    const uses = page.getByTestId('uses-call echo')
    await uses.getByText('ping', { exact: true }).waitFor()
    await uses.getByRole('link', { name: 'call echo' }).click()
    await page.waitForURL(new RegExp(`/workflows/${wf.id}$`))
    await page.getByTestId('node-ping').waitFor()

    // The list: its kind's label, the secret (none now), the cap; a search and the kind chips narrow it.
    await page.getByRole('link', { name: 'Resources' }).click()
    const row = page.getByTestId('resource-echo api')
    await row.getByText('HTTP API').waitFor()
    assert.match(await row.innerText(), /echo api\s+The echo service\s+HTTP API\s+—\s+2\s+/)
    const kinds = page.getByRole('group', { name: 'Kind' })
    await kinds.getByText('HTTP API (1)').click()
    await page.waitForURL(/\/resources\?kind=http$/)
    await row.waitFor()
    await kinds.getByText('All').click()
    await page.getByTestId('resource-search').fill('nothing like it')
    await page.getByTestId('resources-empty').getByText('No resource matches.').waitFor()
    await page.getByTestId('resource-search').fill('echo')
    await row.waitFor()
    await shot('resources')

    // Deleting asks first, saying what uses it; cancel keeps it, confirm removes it.
    await row.getByRole('link', { name: 'echo api' }).click()
    await page.getByTestId('delete-resource').click()
    const confirm = page.getByRole('dialog', { name: 'Delete echo api?' })
    assert.match(await confirm.innerText(), /1 workflow names it: their nodes that use it will fail/)
    await confirm.getByRole('button', { name: 'Cancel' }).click()
    await confirm.waitFor({ state: 'detached' })
    await page.getByTestId('delete-resource').click()
    await page.getByTestId('confirm-delete-resource').click()
    await page.waitForURL(/\/resources$/)
    await page.getByTestId('resources-empty').waitFor()
    assert.deepEqual(await call('GET', '/api/resources'), [])
    await call('DELETE', `/api/workflows/${wf.id}`)
  } finally {
    api.close()
  }
})

test("an llm profile takes its model from one of the workspace's resources: picked in the profile's form, its task calls that model with the resource's key, and the resource's page lists the profile", async () => {
  const seen = []
  const model = http.createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', () => {
      seen.push({ auth: req.headers.authorization, model: JSON.parse(body).model })
      res.setHeader('Content-Type', 'application/json')
      res.end(
        JSON.stringify({
          id: 'c',
          model: 'team-default',
          choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: '', tool_calls: [{ id: 'f', type: 'function', function: { name: 'finish', arguments: '{"summary":"nothing to change"}' } }] } }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      )
    })
  })
  await new Promise((resolve) => model.listen(0, '127.0.0.1', resolve))
  const call = await apiSession(server.url, admin.email, admin.password)
  const res = await call('POST', '/api/resources', {
    name: 'Team model', kind: 'openai_compatible', secret: 'sk-team-e2e-key-42',
    config: { base_url: `http://127.0.0.1:${model.address().port}/v1`, model: 'team-default' },
  })
  try {
    await page.goto(server.url + '/settings')
    await page.getByTestId('new-profile').click()
    await page.getByTestId('profile-name').fill('team-llm')
    await page.getByTestId('profile-base-url').waitFor()
    await page.getByTestId('profile-resource-select').selectOption({ label: 'Resource: Team model' })
    assert.equal(await page.getByTestId('profile-base-url').count(), 0, 'the resource replaces the endpoint and the key')
    await page.getByTestId('profile-save').click()
    const row = page.getByTestId('profile-team-llm')
    await row.getByText('via Team model').waitFor()
    await row.getByText("resource's key").waitFor()
    const profile = (await call('GET', '/api/agent-profiles')).find((p) => p.name === 'team-llm')
    assert.equal(profile.resource_id, res.id)

    const project = (await call('GET', '/api/projects')).find((p) => p.name === 'demo')
    const task = await call('POST', '/api/tasks', { project_id: project.id, prompt: 'Look around', agent_profile: 'team-llm' })
    let ended
    for (let i = 0; i < 300 && !ended; i++) {
      const t = await call('GET', `/api/tasks/${task.id}`)
      if (['done', 'done_pr', 'failed', 'cancelled'].includes(t.status)) ended = t
      else await new Promise((r) => setTimeout(r, 100))
    }
    assert.equal(ended?.status, 'done', `the task: ${JSON.stringify(ended)}`)
    assert.deepEqual(seen, [{ auth: 'Bearer sk-team-e2e-key-42', model: 'team-default' }])

    await page.goto(`${server.url}/resources/${res.id}`)
    await page.getByTestId('uses-profile-team-llm').waitFor()
    await page.getByTestId('delete-resource').click()
    const confirm = page.getByRole('dialog', { name: 'Delete Team model?' })
    assert.match(await confirm.innerText(), /1 agent profile uses it: their tasks will fail until given another model/)
    await confirm.getByRole('button', { name: 'Cancel' }).click()
    await call('DELETE', `/api/agent-profiles/${profile.id}`)
  } finally {
    await call('DELETE', `/api/resources/${res.id}`)
    model.close()
  }
})

test('row-level security: an rls_managed database shows its status and refreshes from its page (a database that cannot be reached says why)', async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  const res = await call('POST', '/api/resources', {
    name: 'shared db', kind: 'postgresql', rls_managed: true, secret: 'pg-e2e-pass-1',
    config: { host: '127.0.0.1', port: 1, database: 'shared', user: 'admin', sslmode: 'disable' },
  })
  try {
    await page.goto(`${server.url}/resources/${res.id}`)
    const card = page.getByTestId('resource-rls-card')
    assert.equal(await card.getByTestId('rls-status').innerText(), 'UNPROVISIONED')
    await card.getByTestId('rls-refresh').click()
    await card.getByTestId('rls-status').getByText('failed').waitFor()
    assert.match(await card.getByTestId('rls-error').innerText(), /127\.0\.0\.1|refus|connect/i)
    assert.doesNotMatch(await card.innerText(), /pg-e2e-pass-1/)
    const status = await call('GET', `/api/resources/${res.id}/rls_status`)
    assert.equal(status.status, 'failed')
  } finally {
    await call('DELETE', `/api/resources/${res.id}`)
  }
})

// The machine's PostgreSQL (CI exports its address): a database whose row-level security really provisions.
const pgURL = process.env.SERVICE_TEST_POSTGRES_URL ? new URL(process.env.SERVICE_TEST_POSTGRES_URL) : null

test("row-level security provisioned in a real PostgreSQL: refreshed from the resource's page, and the resources page lists the workspace's schema", { skip: !pgURL && 'SERVICE_TEST_POSTGRES_URL is not set' }, async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  let schema
  const res = await call('POST', '/api/resources', {
    name: 'team db', kind: 'postgresql', rls_managed: true, secret: 'pg-e2e-pass-2',
    config: { host: pgURL.hostname, port: Number(pgURL.port || 5432), database: pgURL.pathname.slice(1) || 'postgres', user: decodeURIComponent(pgURL.username || 'postgres'), sslmode: 'disable' },
  })
  try {
    await page.goto(`${server.url}/resources/${res.id}`)
    const card = page.getByTestId('resource-rls-card')
    await card.getByTestId('rls-refresh').click()
    await card.getByTestId('rls-status').getByText('provisioned', { exact: true }).waitFor()
    const status = await call('GET', `/api/resources/${res.id}/rls_status`)
    assert.match(status.schema_name, /^[a-z0-9_]+$/)

    await page.goto(server.url + '/resources')
    const row = page.getByTestId('db-namespace-team db')
    await row.waitFor()
    assert.equal(await row.locator('code').innerText(), status.schema_name)
    assert.deepEqual(await call('GET', '/api/db-namespaces'), [{ handle: 'team db', schema: status.schema_name }])
    schema = status.schema_name
  } finally {
    await call('DELETE', `/api/resources/${res.id}`)
    // Deleting the resource drops the role and keeps the schema with its data (docs/decisions.md): the test drops it.
    if (schema) execFileSync('psql', [process.env.SERVICE_TEST_POSTGRES_URL, '-qc', `DROP SCHEMA IF EXISTS ${schema} CASCADE`])
  }
  await page.goto(server.url + '/resources')
  await page.getByTestId('resources-empty').waitFor()
  assert.equal(await page.getByTestId('db-namespaces').count(), 0, 'deleted, the database takes its namespace along')
})

test("the owner console's features tab: the secret backend (boot-critical), the edition, and each optional feature with its env vars, never a value", async () => {
  await page.getByRole('link', { name: 'Owner console' }).click()
  await page.getByTestId('tab-features').click()
  await page.waitForURL(/\/admin\/\?tab=features$/)
  assert.equal(await page.getByTestId('features-backend').innerText(), 'env')
  await page.getByTestId('features-boot-critical').waitFor()
  assert.equal(await page.getByTestId('features-edition').innerText(), 'Community')
  const report = await (await apiSession(server.url, admin.email, admin.password))('GET', '/api/admin/feature-availability')
  assert.equal(await page.getByTestId('features-count').innerText(), `${report.available} of ${report.total} available`)
  assert.equal(await page.locator('[data-testid^="feature-"][data-available]').count(), report.total)
  const vault = page.getByTestId('feature-Secret vault')
  assert.equal(await vault.getAttribute('data-available'), 'true')
  assert.match(await vault.innerText(), /Secrets\s+Secret vault\s+boot-critical\s+SECRET_BACKEND\s+SERVICE_VAULT_KEYS\s+Available/i)
  assert.match(await page.getByTestId('feature-Outgoing mail').innerText(), /SERVICE_SMTP_HOST[\s\S]*Unavailable/)
  await shot('admin-features')
})

test("the README's workflow built in the console: nodes from the library, forms with completion, undo, a run approved, the code node's output and logs; a webhook trigger fired; a schedule previewed", async () => {
  await page.goto(server.url + '/workflows')
  await page.getByTestId('new-workflow-name').fill('release')
  await page.getByTestId('new-workflow-project').selectOption({ label: 'demo' })
  await page.getByTestId('new-workflow').click()
  await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/)
  const canvas = page.getByTestId('workflow-canvas')
  await canvas.waitFor()
  const wfID = page.url().split('/').pop()

  // A code node dragged from the library; its source typed into its form.
  await page.getByTestId('library-code').dragTo(canvas)
  await page.getByTestId('node-code').waitFor()
  await page.getByTestId('field-source').fill(`echo "checking"; echo '{"ok": true}'`)
  // A gate clicked in; its condition completed from what the run knows.
  await page.getByTestId('library-gate').click()
  await page.getByTestId('node-gate').waitFor()
  assert.match(await page.getByTestId('node-error-gate').innerText(), /condition: Required/)
  const condition = page.getByTestId('field-condition')
  await condition.click()
  await condition.pressSequentially('nodes.c')
  await page.getByTestId('expr-suggestion').filter({ hasText: 'nodes.code.output' }).click()
  assert.equal(await condition.inputValue(), 'nodes.code.output')
  await condition.press('End')
  await condition.pressSequentially('.result.ok')
  await page.getByTestId('node-error-gate').waitFor({ state: 'detached' })
  // A human gate whose message is a template: {{ opens the completion.
  await page.getByTestId('library-human').click()
  const message = page.getByTestId('field-message')
  await message.click()
  await message.pressSequentially('Ship {{ inp')
  await page.getByTestId('expr-suggestion').filter({ hasText: /^input$/ }).click()
  assert.equal(await message.inputValue(), 'Ship {{ input }}')

  for (const [src, handle, tgt] of [['code', null, 'gate'], ['gate', 'true', 'human'], ['human', 'approved', 'done']]) {
    await page.getByTestId('edge-source').selectOption(src)
    if (handle) await page.getByTestId('edge-handle').selectOption(handle)
    await page.getByTestId('edge-target').selectOption(tgt)
    await page.getByTestId('add-edge').click()
  }
  // Undo takes the last edge away; redo puts it back.
  const edgeCount = () => page.locator('.react-flow__edge').count()
  assert.equal(await edgeCount(), 3)
  await page.getByTestId('undo').click()
  assert.equal(await edgeCount(), 2)
  await page.getByTestId('redo').click()
  assert.equal(await edgeCount(), 3)
  await page.getByTestId('arrange').click()
  await page.getByTestId('save-workflow').click()
  await page.getByTestId('workflow-saved').waitFor()
  await page.getByTestId('node-gate').click()
  await shot('workflow-editor')
  const download = page.waitForEvent('download')
  await page.getByTestId('export-yaml').click()
  assert.equal((await download).suggestedFilename(), 'release.yaml')
  state.releaseYAML = readFileSync(await (await download).path(), 'utf8')

  // Run it: it waits at the human gate; approved, it succeeds; the code node shows its output and its logs.
  await page.getByTestId('run-input').fill('{"version": "1.0"}')
  await page.getByTestId('run-workflow').click()
  await page.waitForURL(/\/workflows\/runs\/[0-9a-f-]{36}$/)
  await page.getByTestId('gate-approve').click()
  await page.locator('[data-testid="run-status"][data-status="succeeded"]').waitFor({ timeout: 30_000 })
  await page.getByTestId('node-run-code').click()
  assert.match(await page.getByTestId('node-output-code').innerText(), /"ok": true/)
  await page.getByTestId('node-logs').getByText('checking').waitFor()
  assert.match(await page.getByTestId('node-input-code').innerText(), /"version": "1.0"/)
  await shot('workflow-run-node-logs')
  // The gate's input: the run's input and the code node's output it reads.
  await page.getByTestId('node-run-gate').click()
  const gateInput = JSON.parse(await page.getByTestId('node-input-gate').innerText())
  assert.equal(gateInput.input.version, '1.0')
  assert.equal(gateInput.nodes.code.result.ok, true)

  // A webhook trigger: its address shown once; a delivery starts a run, which the history lists.
  await page.goto(`${server.url}/workflows/${wfID}`)
  await page.getByTestId('trigger-kind').selectOption('webhook')
  await page.getByTestId('add-trigger').click()
  const hook = (await page.getByTestId('webhook-url').innerText()).trim()
  assert.match(hook, new RegExp(`^${server.url}/api/workflows/triggers/webhook/`))
  await page.getByTestId('close-webhook').click()
  await page.getByTestId('trigger-webhook').waitFor()
  const fired = await fetch(hook, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ version: '2.0' }) })
  assert.ok(fired.status < 300, `webhook answered ${fired.status}`)
  const history = page.getByTestId('run-history')
  for (let i = 0; i < 50 && (await history.locator('[data-testid^="history-"]').count()) < 2; i++) {
    await history.getByRole('button', { name: 'Refresh' }).click()
    await new Promise((r) => setTimeout(r, 200))
  }
  assert.equal(await history.locator('[data-testid^="history-"]').count(), 2, 'the webhook started a second run')
  await shot('workflow-triggers')

  // Test the gate alone: samples from the last run, then edited by hand.
  await page.getByTestId('node-gate').click()
  await page.getByTestId('node-test-last-run').click()
  await page.getByText(/^From run [0-9a-f]{8}/).waitFor()
  assert.equal(JSON.parse(await page.getByTestId('node-test-sample').inputValue()).nodes.code.result.ok, true)
  await page.getByTestId('node-test-run').click()
  await page.locator('[data-testid="node-test-result"][data-status="succeeded"]').getByText('fires true').waitFor()
  await page.getByTestId('node-test-sample').fill('{"nodes": {"code": {"result": {"ok": false}}}}')
  await page.getByTestId('node-test-run').click()
  await page.getByTestId('node-test-result').getByText('fires false').waitFor()
  // The human gate says what it would ask, rendered from the sample input.
  await page.getByTestId('node-human').click()
  await page.getByTestId('node-test-sample').fill('{"input": "3.1"}')
  await page.getByTestId('node-test-run').click()
  await page.locator('[data-testid="node-test-result"][data-status="waiting"]').getByText('Ship 3.1').waitFor()
  await shot('workflow-test-node')
  // The code node's test runs its script as a job: followed to its end, with its logs.
  await page.getByTestId('node-code').click()
  await page.getByTestId('node-test-run').click()
  await page.locator('[data-testid="node-test-result"][data-status="succeeded"]').waitFor({ timeout: 60_000 })
  assert.match(await page.getByTestId('node-test-output').innerText(), /"ok": true/)
  await page.getByTestId('node-test').getByTestId('node-logs').getByText('checking').waitFor()

  // A schedule: the next ticks previewed as the cron is typed; a bad one says why.
  await page.getByTestId('trigger-kind').selectOption('schedule')
  await page.getByTestId('trigger-cron').fill('0 9 * * 1-5')
  assert.match(await page.getByTestId('cron-preview').innerText(), /^Next: .+ · .+ · .+/)
  await page.getByTestId('trigger-cron').fill('61 * * * *')
  assert.match(await page.getByTestId('cron-preview').innerText(), /61 is out of 0–59/)
})

test('a workflow imported from the exported YAML, and one made from a template with its webhook address shown once', async () => {
  assert.match(state.releaseYAML, /name: release/)
  const file = path.join(server.dir, 'release-copy.yaml')
  writeFileSync(file, state.releaseYAML.replace(/name: release/, 'name: release copy'))
  await page.goto(server.url + '/workflows')
  await page.getByTestId('new-workflow-project').selectOption({ label: 'demo' })
  await page.locator('input[type=file]').setInputFiles(file)
  await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/)
  await page.getByRole('heading', { name: 'release copy' }).waitFor()
  for (const key of ['code', 'gate', 'human', 'done']) await page.getByTestId(`node-${key}`).waitFor()

  await page.goto(server.url + '/workflows')
  await page.getByTestId('new-workflow-project').selectOption({ label: 'demo' })
  await page.getByTestId('template-select').selectOption('webhook-respond')
  await page.getByTestId('from-template').click()
  await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/)
  assert.match(await page.getByTestId('webhook-url').innerText(), new RegExp(`^${server.url}/api/workflows/triggers/webhook/`))
  await page.getByTestId('close-webhook').click()
  await page.getByTestId('trigger-webhook').waitFor()

  // An n8n export: converted, opened, its webhook address shown once, and the converted flow answers.
  await page.goto(server.url + '/workflows')
  await page.getByTestId('new-workflow-project').selectOption({ label: 'demo' })
  await page.locator('input[type=file]').setInputFiles(path.join(import.meta.dirname, '../../internal/n8nimport/testdata/bench.json'))
  await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/)
  await page.getByRole('heading', { name: 'Bench: double n' }).waitFor()
  const receiver = (await page.getByTestId('webhook-url').innerText()).trim()
  const answer = await fetch(receiver, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"n": 21}' })
  assert.deepEqual(await answer.json(), { n: 42, ok: true })
  await page.getByTestId('close-webhook').click()
})

test('the activity feed reads as sentences: tasks started, workflow runs, tool calls decided; each leads to its page', async () => {
  await page.getByRole('link', { name: 'Activity', exact: true }).click()
  const feed = page.getByTestId('activity')
  await feed.waitFor()
  const text = await feed.innerText()
  assert.match(text, /Ada Admin ran the workflow release in demo/)
  assert.match(text, /Ada Admin approved running bash for the task .+ in demo/)
  assert.match(text, /Ada Admin started the task .+ in demo/)
  assert.match(text, /A webhook ran the workflow release in demo \(a trigger of Ada Admin's\)/, 'a delivery is not a person running it')
  await shot('activity')
  await feed.getByTestId('activity-workflow_run').first().getByRole('link').click()
  await page.waitForURL(/\/workflows\/runs\/[0-9a-f-]{36}$/)
})

test("the owner console's audit tab: a rename found by searching, its before and after side by side; chips filter; nothing edits the log", async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  const org = await call('GET', '/organization')
  const renamed = `${org.name} (audited)`
  await call('PUT', '/organization', { name: renamed })
  await page.goto(server.url + '/admin/?tab=audit')
  await page.getByTestId('tab-audit').waitFor()
  assert.equal(await page.getByTestId('tab-audit').getAttribute('aria-selected'), 'true')
  await page.getByTestId('audit-row').first().waitFor()
  // Newest first: the rename just made leads the unfiltered log.
  assert.equal(await page.getByTestId('audit-row').first().getAttribute('data-action'), 'organization.rename')

  await page.getByTestId('audit-search').fill('RENAME')
  await page.waitForFunction(() => {
    const rs = [...document.querySelectorAll('[data-testid="audit-row"]')]
    return rs.length > 0 && rs.every((r) => r.getAttribute('data-action') === 'organization.rename')
  })
  const row = page.locator(`[data-testid="audit-row"][data-target-id="${org.id}"]`).first()
  assert.match(await row.innerText(), new RegExp(admin.email.replace(/[.+]/g, '\\$&')))
  await row.getByTestId('audit-expand').click()
  const before = page.getByTestId('audit-before')
  const afterSnap = page.getByTestId('audit-after')
  await before.waitFor()
  assert.equal(JSON.parse(await before.innerText()).name, org.name)
  assert.equal(JSON.parse(await afterSnap.innerText()).name, renamed)
  // Side by side: the after snapshot sits to the right of the before.
  const [b, a] = [await before.boundingBox(), await afterSnap.boundingBox()]
  assert.ok(a.x > b.x + b.width / 2 && Math.abs(a.y - b.y) < 40, `before ${JSON.stringify(b)}, after ${JSON.stringify(a)}`)
  await shot('admin-audit')
  await row.getByTestId('audit-expand').click()
  await before.waitFor({ state: 'detached' })

  // The chips: the target kind facet narrows to organizations.
  const all = await call('GET', '/api/admin/audit/board')
  const orgs = await call('GET', '/api/admin/audit/board?target_kind=organization')
  assert.ok(orgs.total >= 1 && orgs.total < all.total, `${orgs.total} of ${all.total} entries are about organizations`)
  await page.getByTestId('audit-search').fill('')
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="audit-row"]').length === n, Math.min(all.total, 50))
  await page.getByTestId('audit-target-kind-organization').click()
  await page.waitForFunction(
    (n) => {
      const rs = [...document.querySelectorAll('[data-testid="audit-row"]')]
      return rs.length === n && rs.every((r) => r.getAttribute('data-target-kind') === 'organization')
    },
    Math.min(orgs.total, 50),
  )
  assert.match(await page.getByTestId('audit-total').innerText(), new RegExp(`^${orgs.total} entr`, 'i'))

  // Append-only: there is no control to change an entry, and no route either.
  assert.equal(await page.getByRole('button', { name: /delete|edit|retention/i }).count(), 0)
  await assert.rejects(call('DELETE', '/api/admin/audit/board'), /: 40[45] /)
})

test("the owner console's plans and overrides: a plan edited and saved, an override granted and revoked, both found in the audit tab, and the settings page shows the organization's plan", async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  const team = (await call('GET', '/api/admin/plans')).find((p) => p.id === 'team')
  const ws = (await call('GET', '/api/workspaces')).find((w) => w.is_default)
  const reason = 'e2e: a trial of three workflows'
  let granted
  try {
    // Plans: each row is a draft saved on its own; Save waits for a change.
    await page.goto(server.url + '/admin/?tab=plans')
    assert.equal(await page.getByTestId('tab-plans').getAttribute('aria-selected'), 'true')
    const row = page.locator('[data-testid="plan-row"][data-plan="team"]')
    await row.waitFor()
    assert.equal(await page.getByTestId('plan-row').count(), (await call('GET', '/api/admin/plans')).length, 'every plan, inactive and non-public ones too')
    assert.equal(await row.getByTestId('plan-amount').inputValue(), '49.00')
    assert.match(await row.getByTestId('plan-price').innerText(), /^€49\.00 \/ month/)
    assert.equal(await row.getByTestId('plan-seats').inputValue(), String(team.included_seats))
    assert.ok(await row.getByTestId('plan-save').isDisabled(), 'nothing changed yet')
    assert.match(await row.getByTestId('plan-entitlements').innerText(), /Workflows: 500/)

    await row.getByTestId('plan-name').fill('Team (console)')
    await row.getByTestId('plan-amount').fill('59.9')
    assert.match(await row.getByTestId('plan-price').innerText(), /^€59\.90 \/ month · 5990 cents/)
    await row.getByTestId('plan-save').click()
    await row.getByTestId('plan-saved').waitFor()
    assert.ok(await row.getByTestId('plan-save').isDisabled(), 'saved: the draft is the plan again')
    const saved = (await call('GET', '/api/admin/plans')).find((p) => p.id === 'team')
    assert.equal(saved.name, 'Team (console)')
    assert.equal(saved.amount_cents, 5990, 'a decimal typed becomes exact cents')
    assert.equal(saved.included_seats, team.included_seats)
    assert.equal(saved.currency, team.currency)

    // A value the server refuses: its message under the row, nothing saved.
    await row.getByTestId('plan-seats').fill('lots')
    await row.getByTestId('plan-save').click()
    const problem = page.locator('[data-testid="plan-error"][data-plan="team"]')
    await problem.waitFor()
    assert.match(await problem.innerText(), /included_seats must be a non-negative whole number/)
    await row.getByTestId('plan-seats').fill(String(team.included_seats))
    await problem.waitFor({ state: 'detached' })
    assert.ok(await row.getByTestId('plan-save').isDisabled())
    assert.equal((await call('GET', '/api/admin/plans')).find((p) => p.id === 'team').included_seats, team.included_seats)

    // Overrides: a grant for the admin's default workspace.
    await page.getByTestId('tab-overrides').click()
    await page.waitForURL(/\/admin\/\?tab=overrides$/)
    const form = page.getByTestId('override-form')
    await form.getByTestId('override-feature').selectOption('workflows.max')
    await form.getByTestId('override-value').fill('3')
    await form.getByTestId('override-reason').fill(reason)
    await form.getByTestId('override-workspace').fill(ws.id)
    assert.match(await form.getByTestId('override-scope-preview').innerText(), /Scope: Workspace/)
    await form.getByTestId('override-grant').click()
    await page.getByTestId('override-granted').waitFor()
    const active = await call('GET', '/api/admin/overrides/board?feature=workflows.max&status=active')
    assert.equal(active.total, 1)
    granted = active.rows[0]
    assert.equal(granted.value, 3)
    assert.equal(granted.scope, 'workspace')
    assert.equal(granted.workspace_id, ws.id)
    assert.equal(granted.reason, reason)
    const orow = page.locator(`[data-testid="override-row"][data-id="${granted.id}"]`)
    await orow.waitFor()
    assert.equal(await orow.getAttribute('data-feature'), 'workflows.max')
    assert.equal(await orow.getAttribute('data-status'), 'active')
    assert.match(await orow.innerText(), new RegExp(`Workflows\\s+workflows\\.max\\s+Workspace\\s+ws ${ws.id}\\s+3\\s+never\\s+active\\s+${reason}`, 'i'))

    // The settings page: the organization's plan, the override in force and where it came from.
    const decisions = await call('GET', '/api/entitlements')
    const wf = decisions.find((d) => d.feature === 'workflows.max')
    assert.equal(wf.limit, 3)
    await page.goto(server.url + '/settings')
    const card = page.getByTestId('plan-card')
    const feature = card.locator('[data-testid="plan-feature"][data-feature="workflows.max"]')
    await feature.waitFor()
    assert.equal(await card.getByTestId('plan-id').innerText(), wf.plan_id)
    assert.equal(await card.getByTestId('plan-feature').count(), decisions.length)
    assert.equal(await feature.getByTestId('plan-feature-value').innerText(), '3')
    assert.equal(await feature.getByTestId('plan-feature-usage').innerText(), `${wf.usage} of 3`)
    assert.equal(await feature.getByTestId('plan-feature-source').innerText(), 'override for this workspace')
    // The seats beside the plan, as the seat summary computes them.
    const seats = await call('GET', '/organization/seat-summary')
    assert.match(await card.getByTestId('seat-usage').innerText(), new RegExp(`^${seats.active_members} active members? of ${seats.included_seats} included`))
    assert.match(await card.getByTestId('seat-mrr').innerText(), /^In all /)
    // This instance takes payments (the harness's Stripe double): the upgrade path is a checkout.
    assert.match(await card.getByTestId('plan-upgrade').innerText(), /Upgrade: subscribe to a plan, paid at Stripe/)
    await shot('settings-plan')

    // Revoked from the board, after asking: the row stays, marked revoked.
    await page.goto(server.url + '/admin/?tab=overrides')
    await orow.getByTestId('override-revoke').click()
    await page.getByTestId('confirm-revoke').click()
    await page.waitForFunction(
      (id) => document.querySelector(`[data-testid="override-row"][data-id="${id}"]`)?.getAttribute('data-status') === 'revoked',
      granted.id,
    )
    assert.equal(await orow.getByTestId('override-revoke').count(), 0, 'nothing more to revoke')
    assert.match(await orow.getByTestId('override-status').innerText(), /^revoked$/i)
    await page.getByTestId('override-status-facet-revoked').click()
    await page.waitForFunction(() => {
      const rs = [...document.querySelectorAll('[data-testid="override-row"]')]
      return rs.length > 0 && rs.every((r) => r.getAttribute('data-status') === 'revoked')
    })
    await shot('admin-overrides')
    assert.equal((await call('GET', '/api/admin/overrides/board?feature=workflows.max&status=active')).total, 0)
    const gone = (await call('GET', '/api/entitlements')).find((d) => d.feature === 'workflows.max')
    assert.ok(!gone.chain.some((s) => s.source === 'override'), 'revoked, the grant no longer counts')

    // The audit tab has the plan's save (before and after) and the grant and its revocation.
    await page.getByTestId('tab-audit').click()
    await page.waitForURL(/\/admin\/\?tab=audit$/)
    await page.getByTestId('audit-search').fill('plan.update')
    await page.waitForFunction(() => {
      const rs = [...document.querySelectorAll('[data-testid="audit-row"]')]
      return rs.length > 0 && rs.every((r) => r.getAttribute('data-action') === 'plan.update')
    })
    const edit = page.locator('[data-testid="audit-row"][data-target-id="team"]').first()
    await edit.getByTestId('audit-expand').click()
    await page.getByTestId('audit-after').waitFor()
    assert.deepEqual(
      [JSON.parse(await page.getByTestId('audit-before').innerText()).name, JSON.parse(await page.getByTestId('audit-after').innerText()).amount_cents],
      [team.name, 5990],
    )
    await page.getByTestId('audit-search').fill(granted.id)
    await page.waitForFunction((id) => {
      const rs = [...document.querySelectorAll('[data-testid="audit-row"]')]
      return rs.length === 2 && rs.every((r) => r.getAttribute('data-target-id') === id)
    }, granted.id)
    const actions = await page.getByTestId('audit-row').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-action')))
    assert.deepEqual(actions, ['override.revoke', 'override.grant'])
  } finally {
    // Leave the plan as it was and nothing granted.
    if (granted) await call('POST', `/api/admin/overrides/${granted.id}/revoke`).catch(() => undefined)
    await call('PUT', '/api/admin/plans/team', { name: team.name, amount_cents: team.amount_cents })
  }
})

test("the owner console's customers and seo tabs, and the public plans page", async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  const org = await call('GET', '/organization')
  const ws = (await call('GET', '/api/workspaces')).find((w) => w.is_default)
  const mine = (await call('GET', `/api/admin/customers?q=${encodeURIComponent(org.name)}`)).organizations.find((o) => o.organization_id === org.id)
  assert.ok(mine, "the admin's organization is a customer")

  // Customers: every organization with its plan, status and workspaces; a search narrows them.
  await page.goto(server.url + '/admin/?tab=customers')
  assert.equal(await page.getByTestId('tab-customers').getAttribute('aria-selected'), 'true')
  const card = page.locator(`[data-testid="customer-org"][data-org-id="${org.id}"]`)
  await card.waitFor()
  assert.equal(await card.getAttribute('data-org-name'), org.name)
  assert.equal(await card.getByTestId('customer-plan').innerText(), mine.plan_id)
  assert.equal(await card.getByTestId('customer-status').getAttribute('data-status'), mine.subscription_status)
  assert.equal(await card.getByTestId('customer-workspace').count(), mine.workspaces.length)
  assert.match(await card.locator(`[data-testid="customer-workspace"][data-workspace-id="${ws.id}"]`).innerText(), new RegExp(ws.name))
  const all = await call('GET', '/api/admin/customers')
  assert.equal(await page.getByTestId('customer-org').count(), Math.min(all.total, 25))
  // Searching the organization's name leaves the organizations that match it, the admin's among them.
  const found = (await call('GET', `/api/admin/customers?q=${encodeURIComponent(org.name)}`)).organizations.map((o) => o.name)
  assert.ok(found.length < all.total, 'the search narrows the list')
  await page.getByTestId('customers-search').fill(org.name)
  await page.waitForFunction(
    (names) => {
      const cs = [...document.querySelectorAll('[data-testid="customer-org"]')].map((c) => c.getAttribute('data-org-name'))
      return cs.length === names.length && cs.every((n, i) => n === names[i])
    },
    found,
  )
  await card.waitFor()
  await page.getByTestId('customers-search').fill('no organization is called this')
  await page.getByTestId('customers-empty').waitFor()
  assert.equal(await page.getByTestId('customer-org').count(), 0)
  await page.getByTestId('customers-search').fill('')
  await card.waitFor()
  await shot('admin-customers')

  // SEO: the score, the served social image's size, each check's status.
  const report = await call('GET', '/api/admin/seo')
  await page.getByTestId('tab-seo').click()
  await page.waitForURL(/\/admin\/\?tab=seo$/)
  assert.equal(await page.getByTestId('seo-score').innerText(), String(report.score))
  assert.ok(report.score > 0 && report.score < 100, 'without PUBLIC_URL one check warns')
  assert.equal(await page.getByTestId('seo-image').innerText(), '1200×630')
  assert.equal(await page.getByTestId('seo-check').count(), report.checks.length)
  assert.equal(await page.locator('[data-testid="seo-check"][data-check="canonical_url"]').getAttribute('data-status'), 'warn')
  assert.equal(await page.locator('[data-testid="seo-check"][data-check="social_image"]').getAttribute('data-status'), 'pass')
  assert.equal(await page.locator('[data-testid="seo-check"][data-check="sitemap"]').getAttribute('data-status'), 'pass')
  assert.equal(await page.getByTestId('seo-card').innerText(), 'summary_large_image')
  assert.equal(await page.getByTestId('seo-plans').innerText(), String(report.public_plan_count))
  // The image shown is the served one.
  await page.waitForFunction(() => [...document.images].some((i) => i.complete && i.naturalWidth === 1200 && i.naturalHeight === 630))
  await shot('admin-seo')

  // The public plans page, for someone without a session: the plans, cheapest first, with their prices.
  const plans = await (await fetch(server.url + '/api/plans')).json()
  assert.ok(plans.length > 0)
  const ctx = await chrome.newContext()
  try {
    const anon = await ctx.newPage()
    await anon.goto(server.url + '/login')
    await anon.getByTestId('plans-link').click()
    await anon.waitForURL(/\/plans$/)
    await anon.getByTestId('public-plan').first().waitFor()
    assert.deepEqual(
      await anon.getByTestId('public-plan').evaluateAll((cs) => cs.map((c) => c.getAttribute('data-plan'))),
      plans.map((p) => p.id),
    )
    const team = anon.locator('[data-testid="public-plan"][data-plan="team"]')
    assert.match(await team.getByTestId('public-plan-price').innerText(), /^€49\.00 \/ month$/)
    assert.match(await team.getByTestId('public-plan-seats').innerText(), /^10 seats included$/)
    assert.match(await anon.locator('[data-testid="public-plan"][data-plan="community"]').getByTestId('public-plan-price').innerText(), /^€0\.00 \/ month$/)
    await anon.getByTestId('plans-sign-in').click()
    await anon.waitForURL(/\/login$/)
  } finally {
    await ctx.close()
  }
  const robots = await (await fetch(server.url + '/robots.txt')).text()
  assert.match(robots, /^Allow: \/plans$/m)
  assert.match(robots, new RegExp(`^Sitemap: ${server.url}/sitemap.xml$`, 'm'))
})

test("the owner console's queues tab: Stripe's events received and pending, read-only", async () => {
  // A subscription on a price no plan has: stored, pending until one does.
  const payload = JSON.stringify({
    id: 'evt_e2e_1', object: 'event', type: 'customer.subscription.created', created: Math.floor(Date.now() / 1000),
    data: { object: { id: 'sub_e2e', object: 'subscription', customer: 'cus_e2e', status: 'active', metadata: {},
      items: { object: 'list', data: [{ id: 'si_1', object: 'subscription_item', price: { id: 'price_unknown', object: 'price' } }] } } },
  })
  const t = Math.floor(Date.now() / 1000)
  const sig = createHmac('sha256', stripeSecret).update(`${t}.${payload}`).digest('hex')
  const r = await fetch(server.url + '/api/billing/webhooks/stripe', {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'Stripe-Signature': `t=${t},v1=${sig}` }, body: payload,
  })
  assert.equal(r.status, 200)
  assert.match((await r.json()).outcome, /^pending: no organization for customer cus_e2e/)
  const bad = await fetch(server.url + '/api/billing/webhooks/stripe', {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'Stripe-Signature': `t=${t},v1=00` }, body: payload,
  })
  assert.equal(bad.status, 400)

  await page.goto(server.url + '/admin/?tab=queues')
  const tab = page.getByTestId('queues')
  await tab.waitFor()
  assert.equal(await page.getByTestId('queues-total').innerText(), '1')
  assert.equal(await page.getByTestId('queues-pending').innerText(), '1')
  assert.match(await page.getByTestId('queues-status').innerText(), /pending/i)
  assert.equal(await tab.getByRole('button').count(), 0, 'nothing to requeue or replay')
  await shot('admin-queues')
})

test("the plans tab's Stripe sync previews a plan's prices and what a save would do, and moves nothing", async () => {
  const pricesBefore = server.stripe.state.prices.size
  await page.goto(server.url + '/admin/?tab=plans')
  const row = page.locator('[data-testid=plan-row][data-plan=business]')
  await row.getByTestId('plan-stripe-sync').click()
  const modal = page.getByTestId('stripe-sync')
  await modal.getByTestId('stripe-sync-state').waitFor()
  assert.match(await modal.getByTestId('stripe-sync-state').innerText(), /out of sync/i)
  assert.match(await modal.getByTestId('stripe-sync-action').first().innerText(), /create a price of 19900 EUR per month for product slipway_plan_business/)
  assert.doesNotMatch(await modal.innerText(), /No Stripe API key/)
  await page.keyboard.press('Escape')
  await modal.waitFor({ state: 'detached' })
  assert.equal(server.stripe.state.prices.size, pricesBefore, 'a preview creates no price')
})

test('members: a seat type given from the members page shows as an add-on in the seats card, and goes back to standard', async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  await page.goto(server.url + '/members')
  const card = page.getByTestId('seat-summary')
  await card.waitFor()
  const before = await call('GET', '/organization/seat-summary')
  assert.match(await card.getByTestId('seat-usage').innerText(), new RegExp(`^${before.active_members} active members? of unlimited included`))
  await page.getByTestId('seat-ivan@example.test').selectOption({ label: 'Pro' })
  await card.locator('[data-testid=seat-addon][data-seat=pro]').getByText('1 × Pro: €20.00 / month').waitFor()
  assert.match(await card.getByTestId('seat-mrr').innerText(), /In all €20\.00 \/ month/)
  const after = await call('GET', '/organization/seat-summary')
  assert.equal(after.mrr_cents, 2000)
  await shot('members-seats')
  await page.getByTestId('seat-ivan@example.test').selectOption({ label: 'Standard' })
  await card.locator('[data-testid=seat-addon]').waitFor({ state: 'detached' })
  assert.equal((await call('GET', '/organization/seat-summary')).mrr_cents, 0)
})

test("the plans tab puts an organization on a plan, which the settings page's plan card then shows", async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  const org = await call('GET', '/organization')
  const assign = async (label) => {
    await page.goto(server.url + '/admin/?tab=plans')
    const card = page.getByTestId('assign-plan')
    await card.getByTestId('assign-search').fill(org.name)
    await card.locator(`[data-testid=assign-org] option[value="${org.id}"]`).waitFor({ state: 'attached' })
    await card.getByTestId('assign-org').selectOption(org.id)
    await card.getByTestId('assign-plan-id').selectOption({ label })
    await card.getByTestId('assign-submit').click()
    await card.getByTestId('assign-done').waitFor()
  }
  await assign('Business')
  const customers = await call('GET', '/api/admin/customers?q=' + encodeURIComponent(org.name))
  assert.equal(customers.organizations.find((o) => o.organization_id === org.id).plan_id, 'business')
  await page.goto(server.url + '/settings')
  await page.getByTestId('plan-card').getByText('business').first().waitFor()
  await assign('Community')
  assert.equal((await call('GET', '/api/admin/customers?q=' + encodeURIComponent(org.name))).organizations.find((o) => o.organization_id === org.id).plan_id, 'community')
})

test("the settings page's plan card: the owner checks out a plan at Stripe, is moved onto it by Stripe's event, and opens the billing portal", async () => {
  const call = await apiSession(server.url, admin.email, admin.password)
  const before = await call('GET', '/organization/billing')
  assert.equal(before.subscribed, false)
  assert.equal(before.payments, true)
  await page.goto(server.url + '/settings')
  const card = page.getByTestId('plan-card')
  const team = card.locator('[data-testid=billing-plan][data-plan=team]')
  await team.waitFor()
  assert.match(await team.innerText(), /Team\s+€49\.00 \/ month\s+10 seats included/)
  assert.equal(await card.getByTestId('billing-plan').count(), before.plans.length)
  assert.equal(await card.getByTestId('billing-portal').count(), before.customer ? 1 : 0)
  await shot('settings-billing')

  // Subscribe: to Stripe's checkout page, pay, and back to the settings page.
  await team.getByTestId('billing-subscribe').click()
  await page.waitForURL((u) => u.href.startsWith(server.stripe.url + '/pay/'))
  await page.getByTestId('stripe-pay').click()
  await page.waitForURL(/\/settings\?checkout=done$/)
  await page.locator('[data-testid=billing][data-subscribed=true]').waitFor()
  assert.equal(await card.getByTestId('plan-id').innerText(), 'team')
  assert.match(await card.getByTestId('plan-upgrade').innerText(), /Billed by Stripe \(active\)/)
  assert.equal(await card.getByTestId('billing-subscribe').count(), 0, 'subscribed: plan changes go through the portal')
  const after = await call('GET', '/organization/billing')
  assert.deepEqual([after.plan_id, after.status, after.provider, after.customer], ['team', 'active', 'stripe', true])
  const customer = [...server.stripe.state.customers.values()].at(-1)
  assert.equal(customer.email, admin.email)

  // The billing portal, and back.
  await card.getByTestId('billing-portal').click()
  await page.waitForURL((u) => u.href.startsWith(server.stripe.url + '/portal/'))
  await page.getByTestId('stripe-return').click()
  await page.waitForURL(/\/settings$/)
  await page.locator('[data-testid=billing][data-subscribed=true]').waitFor()
})
