// The browser tests' harness: the real binary (SQLite, agents as local
// processes) on a free port with a fresh data directory, a git repository
// to work on, and Debian's Chromium driven by playwright-core.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { chromium } from 'playwright-core'

/** The Stripe webhook secret the test server verifies events with. */
export const stripeSecret = 'whsec_e2e_0123456789abcdef'

export const admin = { email: 'admin@example.test', password: 'admin-passphrase-1', name: 'Ada Admin' }

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

/** A bare repository with one commit on main. */
export function repository(dir) {
  const bare = path.join(dir, 'demo.git')
  const work = path.join(dir, 'demo')
  execFileSync('git', ['init', '-q', '--bare', bare])
  execFileSync('git', ['clone', '-q', bare, work])
  writeFileSync(path.join(work, 'README.md'), 'hello\n')
  const git = (...a) => execFileSync('git', ['-C', work, '-c', 'user.name=e2e', '-c', 'user.email=e2e@example.test', ...a])
  git('add', '.')
  git('commit', '-qm', 'init')
  git('push', '-q', 'origin', 'HEAD:main')
  return bare
}

/** Starts the server; resolves with its base URL and a stop function. */
export async function startServer() {
  const bin = process.env.SLIPWAY_BIN
  if (!bin) throw new Error('SLIPWAY_BIN must name the slipway binary (web/e2e/run.sh builds it)')
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-e2e-'))
  mkdirSync(path.join(dir, 'data'))
  const port = await freePort()
  const env = {
    ...process.env,
    SERVER_PORT: String(port),
    SERVICE_DATA_DIR: path.join(dir, 'data'),
    SERVICE_INITIAL_ADMIN_EMAILS: admin.email,
    SERVICE_AGENT_BACKEND: 'process',
    SERVICE_ARGON2_MEMORY_KIB: '1024',
    SERVICE_ARGON2_TIME: '1',
    SERVICE_SHUTDOWN_LB_DELAY_SECS: '0',
    SERVICE_LOG_LEVEL: 'warn',
    // Resources and workflow nodes call servers the tests start on loopback.
    SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE: 'true',
    // Stripe's events, signed by the tests (stripeSecret).
    STRIPE_WEBHOOK_SECRET: stripeSecret,
  }
  const proc = spawn(bin, ['serve'], { env, stdio: ['ignore', 'inherit', 'inherit'] })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(url + '/readyz')).ok) break
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    dir,
    repo: repository(dir),
    stop: () =>
      new Promise((resolve) => {
        proc.on('exit', resolve)
        proc.kill('SIGTERM')
      }),
  }
}

export async function browser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}

/** Calls the API with a session of its own (setup the test does not click through). */
export async function apiSession(url, email, password) {
  const r = await fetch(url + '/api/auth/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }) })
  const cookies = r.headers.getSetCookie().map((c) => c.split(';')[0])
  const csrf = cookies.find((c) => c.startsWith('service_csrf='))?.split('=')[1] ?? ''
  return async (method, p, body) => {
    const resp = await fetch(url + p, {
      method,
      headers: { 'Content-Type': 'application/json', Cookie: cookies.join('; '), 'X-CSRF-Token': csrf },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await resp.text()
    if (!resp.ok) throw new Error(`${method} ${p}: ${resp.status} ${text}`)
    return text ? JSON.parse(text) : null
  }
}
