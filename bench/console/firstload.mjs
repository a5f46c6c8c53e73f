// The console's first load on loopback (bench/README.md, "Console and
// realtime"): a fresh browser context (empty cache) opens /login until the
// sign-in form can be used, then, signed in, /tasks/board until the task
// form can be used; bytes transferred and the time it took, over several
// runs. Run from the repository root after building the binary:
//
//   (cd web && npm ci) && CGO_ENABLED=0 go build -o /tmp/slipway ./cmd/slipway
//   SLIPWAY_BIN=/tmp/slipway node bench/console/firstload.mjs [runs]
import { admin, browser, startServer } from '../../web/e2e/harness.mjs'

const runs = Number(process.argv[2] ?? 15)
const server = await startServer()
const chrome = await browser()

/** Cold loads of path (a new context each: empty cache), until ready(page) resolves. */
async function measure(path, ready, cookies = []) {
  const times = []
  const bytes = []
  const dcl = []
  for (let i = 0; i < runs; i++) {
    const ctx = await chrome.newContext()
    await ctx.addCookies(cookies)
    const page = await ctx.newPage()
    const t0 = performance.now()
    await page.goto(server.url + path)
    await ready(page)
    times.push(performance.now() - t0)
    const m = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0]
      const res = performance.getEntriesByType('resource')
      return {
        bytes: nav.transferSize + res.reduce((n, r) => n + r.transferSize, 0),
        dcl: nav.domContentLoadedEventEnd,
      }
    })
    bytes.push(m.bytes)
    dcl.push(m.dcl)
    await ctx.close()
  }
  return { times, bytes, dcl }
}

const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const max = (xs) => Math.max(...xs)
const report = (what, r) => {
  console.log(`${runs} cold loads of ${what} (empty cache)`)
  console.log(`  transferred: ${(med(r.bytes) / 1024).toFixed(1)} KiB (compressed as served, every request until usable)`)
  console.log(`  DOMContentLoaded: median ${med(r.dcl).toFixed(1)} ms`)
  console.log(`  navigation → usable: median ${med(r.times).toFixed(1)} ms, max ${max(r.times).toFixed(1)} ms`)
}

try {
  report('/login', await measure('/login', (page) => page.getByRole('button', { name: 'Sign in' }).waitFor({ state: 'visible' })))

  // The first admin registers (SERVICE_INITIAL_ADMIN_EMAILS lists it) and signs in; a project makes the board's form usable.
  const post = (path, body, cookie = '', csrf = '') =>
    fetch(server.url + path, { method: 'POST', headers: { 'Content-Type': 'application/json', Cookie: cookie, 'X-CSRF-Token': csrf }, body: JSON.stringify(body) })
  await post('/api/auth/register', { email: admin.email, password: admin.password, display_name: admin.name })
  const login = await post('/api/auth/login', { email: admin.email, password: admin.password })
  const jar = login.headers.getSetCookie().map((c) => c.split(';')[0])
  const csrf = jar.find((c) => c.startsWith('service_csrf='))?.split('=')[1] ?? ''
  await post('/api/projects', { name: 'bench', repo_url: server.repo }, jar.join('; '), csrf)
  const host = new URL(server.url).hostname
  const cookies = jar.map((c) => {
    const [name, ...v] = c.split('=')
    return { name, value: v.join('='), domain: host, path: '/' }
  })
  report('/tasks/board, signed in', await measure('/tasks/board', (page) => page.getByTestId('start-task').waitFor({ state: 'visible' }), cookies))
} finally {
  await chrome.close()
  await server.stop()
}
