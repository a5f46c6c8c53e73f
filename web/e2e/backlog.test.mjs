// Forges and the backlog through the console: a GitHub resource pointed at
// a small GitHub double started here (only the REST calls the flow makes:
// the user's repositories, a repository, its open issues, a webhook), a
// repository imported from the projects page, the project's forge tab
// (its issues, its webhook installed once), and its backlog board: a scan
// previewed (nothing written) then applied, a card dragged where the
// allowlist refuses (it snaps back with the server's message), moves by
// drag and by menu, a reorder, a change made elsewhere arriving live, a
// card's drawer (body, gates, decision), and a card made ready, which
// starts a task (it fails: the double serves no git) and ends Blocked with
// the reason, its run linked from the card. The API is asked at each step
// whether it agrees.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import path from 'node:path'
import { admin, browser, startServer, adminSession, until } from './harness.mjs'

let server, chrome, page, call, gh
const shots = process.env.SCREENSHOTS // a directory: screenshots go there

async function shot(name) {
  if (!shots) return
  await page.evaluate(() => window.scrollTo(0, 0))
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true })
}

const token = 'ghp_e2eDoubleToken0123456789'

/**
 * A GitHub double: GET /user/repos (one page: no Link header), GET
 * /repos/{o}/{r}, GET /repos/{o}/{r}/issues (open ones, a pull request
 * among them as GitHub lists it) and POST /repos/{o}/{r}/hooks, with the
 * token checked as GitHub does. Anything else is a 404, recorded.
 */
async function startGitHub() {
  const st = { repos: new Map(), issues: new Map(), hooks: [], unknown: [], calls: [], nextHook: 9001 }
  const srv = http.createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      const u = new URL(req.url, 'http://github')
      st.calls.push(`${req.method} ${u.pathname}`)
      const json = (status, obj) => res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' }).end(JSON.stringify(obj))
      const notFound = () => json(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' })
      if (req.headers.authorization !== `Bearer ${token}`) return json(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' })
      if (req.method === 'GET' && u.pathname === '/user/repos') return json(200, [...st.repos.values()])
      const m = u.pathname.match(/^\/repos\/([\w.-]+)\/([\w.-]+)(\/issues|\/hooks)?$/)
      const repo = m && st.repos.get(`${m[1]}/${m[2]}`)
      if (!repo) {
        st.unknown.push(`${req.method} ${req.url}`)
        return notFound()
      }
      if (req.method === 'GET' && !m[3]) return json(200, repo)
      if (req.method === 'GET' && m[3] === '/issues') {
        if (u.searchParams.get('state') !== 'open') return json(422, { message: 'Validation Failed' })
        return json(200, st.issues.get(repo.full_name) ?? [])
      }
      if (req.method === 'POST' && m[3] === '/hooks') {
        const body = JSON.parse(raw || '{}')
        const id = st.nextHook++
        st.hooks.push({ repo: repo.full_name, id, body })
        return json(201, { id, type: 'Repository', name: 'web', active: true, events: body.events, config: { url: body.config?.url, content_type: 'json', insecure_ssl: '0' } })
      }
      st.unknown.push(`${req.method} ${req.url}`)
      notFound()
    })
  })
  await new Promise((r) => srv.listen(0, '127.0.0.1', r))
  const base = `http://127.0.0.1:${srv.address().port}`
  const addRepo = (full, description) =>
    st.repos.set(full, {
      id: st.repos.size + 100,
      name: full.split('/')[1],
      full_name: full,
      private: full.endsWith('tools'),
      description,
      html_url: `${base}/${full}`,
      clone_url: `${base}/${full}.git`,
      default_branch: 'main',
      owner: { login: full.split('/')[0] },
    })
  return {
    url: base,
    state: st,
    addRepo,
    setIssues: (full, list) =>
      st.issues.set(
        full,
        list.map((i) => ({
          id: 5000 + i.number,
          number: i.number,
          title: i.title,
          body: i.body ?? '',
          state: 'open',
          html_url: `${base}/${full}/${i.pr ? 'pull' : 'issues'}/${i.number}`,
          labels: (i.labels ?? []).map((name) => ({ name })),
          created_at: '2026-01-0' + i.number + 'T10:00:00Z',
          updated_at: '2026-01-0' + i.number + 'T12:00:00Z',
          ...(i.pr ? { pull_request: { url: `${base}/repos/${full}/pulls/${i.number}` } } : {}),
        })),
      ),
    stop: () => {
      srv.closeAllConnections()
      return new Promise((r) => srv.close(r))
    },
  }
}

const issues = [
  { number: 1, title: 'Fix the login redirect', body: 'After signing in, the app opens /home instead of the page asked for.\n\nSteps: open /reports signed out, sign in.', labels: ['bug'] },
  { number: 2, title: 'Document the API', body: 'Every endpoint needs an example.', labels: ['docs'] },
  { number: 3, title: 'Speed up the build', body: 'The build takes four minutes.' },
  { number: 4, title: 'Add a CHANGELOG', body: 'A pull request, listed among the issues as GitHub does.', pr: true },
  { number: 5, title: 'Dark mode', body: 'Follow the system setting.', labels: ['ui', 'good first issue'] },
]

before(async () => {
  gh = await startGitHub()
  gh.addRepo('octo/demo', 'The demo application')
  gh.addRepo('octo/tools', 'Build tools')
  gh.setIssues('octo/demo', issues)
  // PUBLIC_URL: where the forge is told to send its webhook deliveries.
  server = await startServer({ env: (url) => ({ PUBLIC_URL: url }) })
  chrome = await browser()
  const ctx = await chrome.newContext({ viewport: { width: 1600, height: 1000 } })
  page = await ctx.newPage()
  page.setDefaultTimeout(20_000)
  call = await adminSession(server.url)
})

after(async () => {
  await chrome?.close()
  await server?.stop()
  await gh?.stop()
})

const state = {}
const column = (s) => page.getByTestId(`backlog-column-${s}`)
const card = (n) => page.getByTestId(`backlog-card-${n}`)
/** The issue numbers of a column's cards, top to bottom. */
const cardsIn = async (s) =>
  (await column(s).locator('[data-testid^="backlog-card-"][data-item-id]').evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')))).map((t) =>
    Number(t.replace('backlog-card-', '')),
  )
/** Where a drag takes a card: its top left corner, clear of its title link and its menu. */
const grip = { x: 4, y: 4 }
const apiBoard = () => call('GET', `/api/projects/${state.project}/backlog/board`)
const apiCards = async () => Object.fromEntries((await apiBoard()).columns.flatMap((c) => c.items.map((i) => [i.issue_number, i])))

test('sign in', async () => {
  await page.goto(server.url + '/login')
  await page.getByLabel('Email').fill(admin.email)
  await page.locator('input[type=password]').fill(admin.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/tasks\/board/)
})

test('the Resources page makes a forge resource from its kind\'s schema', async () => {
  await page.goto(server.url + '/resources')
  await page.getByTestId('new-resource').click()
  const form = page.getByRole('dialog', { name: 'New resource' })
  await page.getByTestId('new-resource-kind').selectOption({ label: 'Forgejo' })
  assert.match(await page.getByTestId('new-resource-kind-description').innerText(), /Forgejo instance/)
  await page.getByTestId('resource-name').fill('codeberg')
  assert.equal(await page.getByTestId('create-resource').isDisabled(), true, 'a Forgejo resource needs its address')
  await form.getByTestId('resource-config').getByTestId('field-base_url').fill('https://codeberg.example.test')
  await page.getByTestId('resource-secret-input').fill('forgejo-token-1')
  await page.getByTestId('create-resource').click()
  await page.waitForURL(/\/resources\/[^/]+$/)
  const made = (await call('GET', '/api/resources')).find((r) => r.name === 'codeberg')
  assert.equal(made.kind, 'forgejo')
  assert.equal(made.config.base_url, 'https://codeberg.example.test')
  assert.equal(made.has_secret, true)
})

test('import a repository from the forge: listed with the one imported before, chosen, imported', async () => {
  // Setup through the API: the GitHub resource (the double's address and
  // token), a resource that is no forge, and octo/tools imported already.
  const res = await call('POST', '/api/resources', { kind: 'github', name: 'octo github', config: { base_url: gh.url }, secret: token })
  await call('POST', '/api/resources', { kind: 'http', name: 'plain api', config: { base_url: 'http://127.0.0.1:9' } })
  const before = await call('POST', '/api/projects/sync_import', { resource_id: res.id, repositories: ['octo/tools'] })
  assert.equal(before.created, 1)
  state.tools = before.projects[0].id

  await page.getByRole('link', { name: 'Projects', exact: true }).click()
  await page.waitForURL(/\/projects$/)
  await page.getByTestId('project-tools').waitFor()
  assert.match(await page.getByTestId('project-provider-tools').innerText(), /GitHub · octo\/tools/)
  await page.getByTestId('projects-import').click()
  const select = page.getByTestId('import-resource')
  await select.waitFor()
  const options = await select.locator('option').allInnerTexts()
  assert.deepEqual(options.sort(), ['codeberg · Forgejo', 'octo github · GitHub'], 'forge resources only')
  await select.selectOption({ label: 'octo github · GitHub' })
  await page.getByTestId('import-list').click()
  await page.getByTestId('import-repos').waitFor()
  const demo = page.getByTestId('import-repo-octo/demo')
  const tools = page.getByTestId('import-repo-octo/tools')
  assert.equal(await demo.isDisabled(), false)
  assert.equal(await tools.isDisabled(), true, 'imported before: not offered again')
  assert.equal(await page.getByTestId('import-imported-octo/tools').getAttribute('href'), `/projects/${state.tools}/settings`)
  assert.equal(await page.getByTestId('import-imported-octo/demo').count(), 0)
  assert.equal(await page.getByTestId('import-submit').isDisabled(), true, 'nothing chosen yet')
  await shot('import-dialog')

  await demo.check()
  await page.getByTestId('import-autodev').check()
  await page.getByTestId('import-submit').click()
  const result = page.getByTestId('import-result')
  await result.waitFor()
  assert.equal(await result.getAttribute('data-created'), '1')
  assert.match(await result.innerText(), /1 project created/)
  // The list again: octo/demo is now imported too.
  await page.getByTestId('import-imported-octo/demo').waitFor()
  assert.equal(await demo.isDisabled(), true)
  const p = (await call('GET', '/api/projects')).find((x) => x.forge_repo === 'octo/demo')
  assert.ok(p, 'the project was made')
  assert.equal(p.name, 'demo')
  assert.equal(p.provider, 'github')
  assert.equal(p.forge_resource_id, res.id)
  assert.equal(p.repo_url, `${gh.url}/octo/demo.git`)
  assert.equal(p.autodev, true)
  state.project = p.id
  await page.getByTestId('import-project-demo').click()
  await page.waitForURL(new RegExp(`/projects/${p.id}/settings$`))
})

test('a forge project\'s page: provider and repository, its open issues, its webhook installed once', async () => {
  await page.getByTestId('project-title').getByText('demo').waitFor()
  assert.equal(await page.getByTestId('project-provider').getAttribute('data-provider'), 'github')
  assert.equal(await page.getByTestId('project-forge-repo').innerText(), 'octo/demo')
  await page.getByTestId('project-settings-name').waitFor() // the settings are the first tab
  await page.getByTestId('project-tab-forge').click()
  await page.waitForURL(/\?tab=forge$/)
  const list = page.getByTestId('project-issues')
  await list.waitFor()
  assert.equal(await list.getAttribute('data-count'), '4', 'the pull request listed among the issues is not one')
  for (const n of [1, 2, 3, 5]) await list.getByTestId(`project-issue-${n}`).waitFor()
  assert.equal(await list.getByTestId('project-issue-4').count(), 0)
  assert.match(await list.getByTestId('project-issue-1').innerText(), /Fix the login redirect[\s\S]*bug/)

  assert.equal(await page.getByTestId('project-automations').getAttribute('data-count'), '0')
  await page.getByTestId('project-automation-setup').click()
  await page.getByTestId('project-automation-note').getByText('Webhook installed (hook 9001').waitFor()
  await page.getByTestId('project-automation-9001').waitFor()
  assert.equal(gh.state.hooks.length, 1)
  const hook = gh.state.hooks[0]
  assert.equal(hook.repo, 'octo/demo')
  assert.ok(hook.body.config.url.startsWith(`${server.url}/api/forge/hooks/`), hook.body.config.url)
  assert.ok(hook.body.events.includes('issues') && hook.body.events.includes('pull_request'), hook.body.events)
  assert.ok(hook.body.config.secret, 'signed with a secret')
  // Again: the one it has, nothing new on the forge.
  await page.getByTestId('project-automation-setup').click()
  await page.getByTestId('project-automation-note').getByText('installed before').waitFor()
  assert.equal(gh.state.hooks.length, 1)
  assert.equal(await page.getByTestId('project-automations').getAttribute('data-count'), '1')
  const autos = await call('GET', `/api/projects/${state.project}/automations`)
  assert.deepEqual(
    autos.map((a) => a.forge_hook_id),
    ['9001'],
  )
  await shot('project-forge')
})

test('the backlog: a scan previewed writes nothing, applied fills the inbox', async () => {
  await page.getByTestId('project-tab-backlog').click()
  await page.waitForURL(/\?tab=backlog$/)
  await page.getByTestId('backlog-empty').waitFor()
  for (const s of ['inbox', 'ready', 'in_progress', 'review', 'blocked', 'done']) assert.equal(await column(s).getAttribute('data-total'), '0', s)

  await page.getByTestId('backlog-scan').click()
  const preview = page.getByTestId('backlog-scan-preview')
  await preview.waitFor()
  assert.equal(await preview.getAttribute('data-added'), '4')
  assert.equal(await preview.getAttribute('data-updated'), '0')
  assert.equal(await preview.getAttribute('data-removed'), '0')
  for (const n of [1, 2, 3, 5]) await preview.getByTestId(`backlog-scan-added-${n}`).waitFor()
  assert.equal(await preview.getByTestId('backlog-scan-added-4').count(), 0)
  // A preview writes nothing: the board stays empty, here and in the API.
  assert.equal((await apiBoard()).columns.reduce((n, c) => n + c.total, 0), 0)
  await page.reload()
  await page.getByTestId('backlog-empty').waitFor()
  assert.equal(await column('inbox').getAttribute('data-total'), '0')

  await page.getByTestId('backlog-scan').click()
  await page.getByTestId('backlog-scan-apply').click()
  await page.getByTestId('backlog-scan-applied').getByText('4 added, 0 updated, 0 removed').waitFor()
  await until('four cards in the inbox', async () => (await column('inbox').getAttribute('data-total')) === '4' || (await column('inbox').getAttribute('data-total')))
  assert.deepEqual(await cardsIn('inbox'), [1, 2, 3, 5])
  assert.equal(await page.getByTestId('backlog-count-inbox').getAttribute('data-count'), '4')
  assert.equal(await card(4).count(), 0)
  const cards = await apiCards()
  assert.deepEqual(Object.keys(cards).map(Number).sort(), [1, 2, 3, 5])
  assert.ok(Object.values(cards).every((c) => c.state === 'inbox'))
  // Scanned again: nothing to change.
  await page.getByTestId('backlog-scan').click()
  assert.equal(await preview.getAttribute('data-added'), '0')
  assert.equal(await page.getByTestId('backlog-scan-apply').isDisabled(), true)
  await page.getByTestId('backlog-scan-discard').click()
  await shot('backlog-scanned')
})

test('the backlog: a drag the allowlist refuses snaps back with the server\'s message', async () => {
  await card(1).dragTo(column('review'), { sourcePosition: grip })
  const err = page.getByTestId('backlog-move-error')
  await err.waitFor()
  assert.match(await err.innerText(), /cannot be moved from inbox to review/)
  await column('inbox').getByTestId('backlog-card-1').waitFor()
  assert.equal(await column('review').getByTestId('backlog-card-1').count(), 0)
  assert.equal(await column('review').getAttribute('data-total'), '0')
  assert.equal((await apiCards())[1].state, 'inbox')
})

test('the backlog: moves by menu and by drag, and a reorder', async () => {
  // By menu: #2 to Blocked, saying why.
  await card(2).getByTestId('backlog-card-move-2').selectOption('blocked')
  await page.getByTestId('backlog-block-reason').fill('waiting for the design')
  await page.getByTestId('backlog-block-confirm').click()
  await column('blocked').getByTestId('backlog-card-2').waitFor()
  await page.getByTestId('backlog-card-reason-2').getByText('waiting for the design').waitFor()
  assert.equal(await page.getByTestId('backlog-move-error').count(), 0, 'the earlier refusal is gone')
  let cards = await apiCards()
  assert.equal(cards[2].state, 'blocked')
  assert.equal(cards[2].blocked_reason, 'waiting for the design')

  // By drag: #3 to Blocked (allowed), no reason given.
  await card(3).dragTo(column('blocked'), { sourcePosition: grip })
  await page.getByTestId('backlog-block-confirm').click()
  await column('blocked').getByTestId('backlog-card-3').waitFor()
  await until('the Blocked column total', async () => (await column('blocked').getAttribute('data-total')) === '2' || (await column('blocked').getAttribute('data-total')))
  assert.deepEqual(await cardsIn('blocked'), [2, 3])
  assert.deepEqual(await cardsIn('inbox'), [1, 5])
  cards = await apiCards()
  assert.equal(cards[3].state, 'blocked')
  assert.equal(cards[3].blocked_reason, null)
  // The menu offers the allowlist's moves only.
  assert.deepEqual(await card(3).getByTestId('backlog-card-move-3').locator('option').allInnerTexts(), ['Move to…', 'Inbox', 'Ready'])

  // Reorder: #5 above #1 in the inbox.
  assert.equal(await card(5).getByTestId('backlog-card-down-5').isDisabled(), true, 'the last card goes no lower')
  await card(5).getByTestId('backlog-card-up-5').click()
  await until('#5 above #1', async () => JSON.stringify(await cardsIn('inbox')) === '[5,1]' || (await cardsIn('inbox')))
  cards = await apiCards()
  assert.ok(cards[5].priority < cards[1].priority, `priorities: #5 ${cards[5].priority}, #1 ${cards[1].priority}`)
  const inbox = (await apiBoard()).columns.find((c) => c.state === 'inbox')
  assert.deepEqual(
    inbox.items.map((i) => i.issue_number),
    [5, 1],
  )
  await page.reload()
  await column('inbox').getByTestId('backlog-card-5').waitFor()
  assert.deepEqual(await cardsIn('inbox'), [5, 1], 'kept after a reload')
  await shot('backlog-board')
})

test('the backlog follows changes made elsewhere, live', async () => {
  const cards = await apiCards()
  await call('PATCH', `/api/projects/${state.project}/backlog/items/${cards[2].id}`, { state: 'inbox' })
  await column('inbox').getByTestId('backlog-card-2').waitFor()
  assert.equal(await column('blocked').getByTestId('backlog-card-2').count(), 0)
  await until('counts', async () => (await page.getByTestId('backlog-count-inbox').getAttribute('data-count')) === '3' || 'not yet')
})

test('a card\'s drawer: its issue, body, labels, gates and no decision yet', async () => {
  await page.getByTestId('backlog-card-open-1').click()
  await page.waitForURL(/[?&]item=/)
  const item = page.getByTestId('backlog-item')
  await item.waitFor()
  assert.equal(await item.getByTestId('backlog-item-title').innerText(), '#1 Fix the login redirect')
  assert.match(await item.getByTestId('backlog-item-body').innerText(), /opens \/home instead of the page asked for\.\n\nSteps: open \/reports signed out/)
  assert.equal(await item.getByTestId('backlog-item-link').getAttribute('href'), `${gh.url}/octo/demo/issues/1`)
  assert.equal(await item.getByTestId('backlog-item-state').getAttribute('data-state'), 'inbox')
  assert.match(await item.getByTestId('backlog-item-labels').innerText(), /bug/)
  const gates = item.getByTestId('backlog-gates')
  assert.equal(await gates.getAttribute('data-green'), 'false')
  assert.equal(await gates.getByTestId('backlog-gates-reason').innerText(), 'its task has not succeeded (none)')
  assert.equal(await item.getByTestId('backlog-decision').getAttribute('data-decision'), 'none')
  assert.equal(await item.getByTestId('backlog-runs').getAttribute('data-count'), '0')
  await shot('backlog-card')
  // A reload opens the same card (its id is in the address).
  await page.reload()
  await page.getByTestId('backlog-item').getByTestId('backlog-item-title').getByText('#1 Fix the login redirect').waitFor()
  await page.keyboard.press('Escape')
  await page.getByTestId('backlog-item').waitFor({ state: 'detached' })
  assert.doesNotMatch(page.url(), /item=/)
})

test('a card made ready starts a task; it fails (the double serves no git) and the card ends Blocked with the reason, its run on its page', async () => {
  await card(1).getByTestId('backlog-card-move-1').selectOption('ready')
  // The dispatcher takes it at once: it leaves Ready for In progress, and
  // its task's end (heard live) moves it to Blocked.
  await until('#1 dispatched', async () => {
    const c = (await apiCards())[1]
    return c.state !== 'ready' && c.state !== 'inbox' ? true : c.state
  })
  const dispatched = (await call('GET', `/api/projects/${state.project}/backlog/items/${(await apiCards())[1].id}`))
  assert.equal(dispatched.runs.length, 1)
  const task = dispatched.runs[0].task_id
  assert.ok(task, 'the run names its task')
  assert.equal(dispatched.decision.decision, 'dispatched')
  const t = await call('GET', `/api/tasks/${task}`)
  assert.equal(t.project_id, state.project)
  assert.match(t.title, /^#1 Fix the login redirect/)
  await column('ready').getByTestId('backlog-card-1').waitFor({ state: 'detached' })

  await column('blocked').getByTestId('backlog-card-1').waitFor({ timeout: 60_000 })
  const reason = await page.getByTestId('backlog-card-reason-1').innerText()
  assert.match(reason, /^its task (failed|timed_out|cancelled)/)
  const after = (await apiCards())[1]
  assert.equal(after.state, 'blocked')
  assert.equal(after.blocked_reason, reason)
  assert.equal(after.task_id, task)

  await page.getByTestId('backlog-card-open-1').click()
  const item = page.getByTestId('backlog-item')
  await item.getByTestId('backlog-item-reason').getByText(reason).waitFor()
  assert.equal(await item.getByTestId('backlog-decision').getAttribute('data-decision'), 'dispatched')
  assert.match(await item.getByTestId('backlog-decision').innerText(), new RegExp(`task ${task} started for the card`))
  assert.equal(await item.getByTestId('backlog-runs').getAttribute('data-count'), '1')
  const run = item.getByTestId(`backlog-run-${task}`)
  await run.locator('[data-status]').waitFor()
  assert.match(await run.locator('[data-status]').getAttribute('data-status'), /^(failed|timed_out|cancelled)$/)
  assert.equal(await item.getByTestId('backlog-gates').getAttribute('data-green'), 'false')
  await shot('backlog-card-blocked')
  await run.getByRole('link').click()
  await page.waitForURL(new RegExp(`/tasks/${task}$`))
})

test('a later scan updates a card whose issue changed and takes off one closed', async () => {
  gh.setIssues(
    'octo/demo',
    issues.filter((i) => i.number !== 5).map((i) => (i.number === 3 ? { ...i, title: 'Speed up the build (CI too)' } : i)),
  )
  await page.goto(`${server.url}/projects/${state.project}/settings?tab=backlog`)
  await card(3).waitFor()
  await page.getByTestId('backlog-scan').click()
  const preview = page.getByTestId('backlog-scan-preview')
  await preview.getByTestId('backlog-scan-updated-3').getByText('Speed up the build (CI too)').waitFor()
  await preview.getByTestId('backlog-scan-removed-5').waitFor()
  assert.equal(await preview.getAttribute('data-added'), '0')
  assert.equal(await card(3).innerText().then((s) => s.includes('(CI too)')), false, 'a preview changes no card')
  await page.getByTestId('backlog-scan-apply').click()
  await card(3).getByText('#3 Speed up the build (CI too)').waitFor()
  await card(5).waitFor({ state: 'detached' })
  const cards = await apiCards()
  assert.equal(cards[3].title, 'Speed up the build (CI too)')
  assert.equal(cards[5], undefined)
  assert.deepEqual(gh.state.unknown.filter((c) => !c.includes('.git/')), [], 'the server asked the double only what it answers')
})
