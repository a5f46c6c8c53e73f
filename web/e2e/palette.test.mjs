// The command palette end to end: the real binary, a real browser, only the
// keyboard. It walks the command protocol (resolve → need_param → … → ready
// → invoke) and the commands really run: a task is created, then cancelled,
// then listed.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { admin, browser, startServer, adminSession } from './harness.mjs'

let server, chrome, page, call, project
const prompt = 'echo from the palette; sleep 120'
const state = {}

before(async () => {
  server = await startServer()
  chrome = await browser()
  page = await (await chrome.newContext({ viewport: { width: 1360, height: 860 } })).newPage()
  page.setDefaultTimeout(20_000)
  // Setup the test does not click through: the first admin and a project.
  call = await adminSession(server.url)
  project = await call('POST', '/api/projects', { name: 'demo', repo_url: server.repo })
})

after(async () => {
  await chrome?.close()
  await server?.stop()
})

/** Opens the palette with the keyboard and waits until its input has the focus. */
async function openPalette() {
  await page.keyboard.press('Control+K')
  await page.getByTestId('palette').waitFor()
  await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'palette-input')
}

async function closePalette() {
  await page.keyboard.press('Escape')
  await page.getByTestId('palette').waitFor({ state: 'hidden' })
}

/** Waits for the palette to stand at a stage (commands, ask, ready, result, failed) with nothing in flight. */
async function atStage(kind) {
  await page.locator(`[data-testid="palette"][data-stage="${kind}"]:not([aria-busy])`).waitFor()
}

test('sign in', async () => {
  await page.goto(server.url + '/login')
  await page.getByLabel('Email').fill(admin.email)
  await page.locator('input[type=password]').fill(admin.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/tasks\/board/)
  await page.getByTestId('palette-open').waitFor()
})

test('the header button opens the palette with every command a workspace admin may run; Escape closes it', async () => {
  await page.getByTestId('palette-open').click()
  await page.getByTestId('palette-item-new').waitFor()
  await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'palette-input')
  for (const word of ['cancel', 'rerun', 'approve', 'reject', 'run', 'tasks', 'autonomy']) {
    await page.getByTestId(`palette-item-${word}`).waitFor()
  }
  // Typing filters by word, alias and description.
  await page.keyboard.type('workflow')
  await page.getByTestId('palette-item-run').waitFor()
  assert.equal(await page.getByTestId('palette-item-new').count(), 0)
  await closePalette()
})

test('new: pick the project from its choices, type the prompt, see what will run, Enter runs it', async () => {
  await openPalette()
  await page.keyboard.type('new')
  await page.locator('[data-testid="palette-item-new"][data-active]').waitFor()
  await page.keyboard.press('Enter')
  // need_param project: the projects provider's choices.
  await atStage('ask')
  await page.getByTestId(`palette-choice-${project.id}`).waitFor()
  await page.keyboard.type('dem')
  await page.locator(`[data-testid="palette-choice-${project.id}"][data-active]`).waitFor()
  await page.keyboard.press('Enter')
  // need_param prompt: free text.
  await page.getByTestId('palette-trail').getByText('project: demo').waitFor()
  await atStage('ask')
  await page.keyboard.type(prompt)
  await page.keyboard.press('Enter')
  // ready: the invocation is shown, with the project by its name.
  await atStage('ready')
  const ready = await page.getByTestId('palette-ready').innerText()
  assert.match(ready, /new project=demo prompt="echo from the palette; sleep 120"/)
  await page.keyboard.press('Enter')
  await atStage('result')
  const result = page.getByTestId('palette-result')
  assert.equal(await result.getAttribute('data-status'), 'executed')
  assert.match(await result.innerText(), /Task "echo from the palette; sleep 120" is queued for the shell agent\./)
  await closePalette()

  const { tasks } = await call('GET', '/api/tasks')
  const task = tasks.find((t) => t.title === prompt)
  assert.ok(task, 'the palette created the task')
  assert.equal(task.project_id, project.id)
  state.task = task
})

test('cancel (typed by its alias stop): pick the task by filtering, Enter cancels it', async () => {
  await openPalette()
  await page.keyboard.type('stop')
  await page.locator('[data-testid="palette-item-cancel"][data-active]').waitFor()
  await page.keyboard.press('Enter')
  await atStage('ask')
  await page.getByTestId(`palette-choice-${state.task.id}`).waitFor()
  await page.keyboard.type('from the pal')
  await page.locator(`[data-testid="palette-choice-${state.task.id}"][data-active]`).waitFor()
  await page.keyboard.press('Enter')
  await atStage('ready')
  assert.match(await page.getByTestId('palette-ready').innerText(), /cancel task="echo from the palette; sleep 120"/)
  await page.keyboard.press('Enter')
  await atStage('result')
  assert.match(await page.getByTestId('palette-result').innerText(), /Task "echo from the palette; sleep 120" is cancelled\./)
  // A follow-up is offered (running it again), highlighted only once the arrow keys reach it.
  await page.getByTestId('palette-followup-0').getByText('Run again').waitFor()
  assert.equal(await page.locator('[data-testid="palette-followup-0"][data-active]').count(), 0)
  await page.keyboard.press('ArrowDown')
  await page.locator('[data-testid="palette-followup-0"][data-active]').waitFor()
  await closePalette()

  const t = await call('GET', `/api/tasks/${state.task.id}`)
  assert.equal(t.status, 'cancelled')
})

test('cancelling it again: the task API refuses and the palette shows its message', async () => {
  await openPalette()
  await page.keyboard.type('cancel')
  await page.keyboard.press('Enter')
  await atStage('ask')
  // A ref may be given by its id: typed, it matches its choice.
  await page.keyboard.type(state.task.id)
  await page.locator(`[data-testid="palette-choice-${state.task.id}"][data-active]`).waitFor()
  await page.keyboard.press('Enter')
  await atStage('ready')
  await page.keyboard.press('Enter')
  await atStage('failed')
  const result = page.getByTestId('palette-result')
  assert.equal(await result.getAttribute('data-status'), 'error')
  assert.match(await result.innerText(), /cannot cancel a task that is cancelled/)
  await closePalette()
})

test('tasks: an optional limit out of range is invalid with the hint; a good one lists the tasks', async () => {
  await openPalette()
  await page.keyboard.type('tasks')
  await page.keyboard.press('Enter')
  // Nothing is required: ready at once, the optional limit below Run.
  await atStage('ready')
  await page.keyboard.press('ArrowDown')
  await page.locator('[data-testid="palette-set-limit"][data-active]').waitFor()
  await page.keyboard.press('Enter')
  await atStage('ask')
  await page.keyboard.type('99')
  await page.keyboard.press('Enter')
  await page.getByTestId('palette-invalid').waitFor()
  assert.match(await page.getByTestId('palette-invalid').innerText(), /limit must be a whole number from 1 to 50/)
  await atStage('ask')
  await page.keyboard.type('5')
  await page.keyboard.press('Enter')
  await atStage('ready')
  assert.match(await page.getByTestId('palette-ready').innerText(), /tasks limit=5/)
  await page.keyboard.press('Enter')
  await atStage('result')
  assert.match(await page.getByTestId('palette-result').innerText(), /echo from the palette; sleep 120 — cancelled/)
  await closePalette()
})
