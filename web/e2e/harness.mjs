// The browser tests' harness: the real binary (SQLite, agents as local
// processes) on a free port with a fresh data directory, a git repository
// to work on, and Debian's Chromium driven by playwright-core.
import { spawn, execFileSync } from 'node:child_process'
import { createHmac } from 'node:crypto'
import http from 'node:http'
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { chromium } from 'playwright-core'
import assert from 'node:assert/strict'

/** The Stripe webhook secret the test server verifies events with. */
export const stripeSecret = 'whsec_e2e_0123456789abcdef'

/**
 * The signed event Stripe sends once a marketplace session (of the double,
 * paid on its page) is paid: checkout.session.completed with the purchase's
 * id in the session's metadata; delivered to the server's webhook.
 */
export async function marketSessionCompleted(server, sessionID) {
  const s = server.stripe.state.sessions.get(sessionID)
  if (!s?.market) throw new Error(`no marketplace session ${sessionID}`)
  const payload = JSON.stringify({
    id: `evt_e2e_${sessionID}`, object: 'event', type: 'checkout.session.completed', created: Math.floor(Date.now() / 1000),
    data: { object: { id: sessionID, object: 'checkout.session', mode: s.mode, payment_status: s.paid ? 'paid' : 'unpaid', subscription: s.subscription ?? null,
      metadata: { slipway_purchase: s.purchase } } },
  })
  return fetch(server.url + '/api/billing/webhooks/stripe', { method: 'POST', headers: { 'Content-Type': 'application/json', 'Stripe-Signature': stripeSignature(payload) }, body: payload })
}

/** The Stripe API key the test server calls the Stripe double with. */
const stripeKey = 'sk_test_E2e0123456789abcdef'

/** Signs a Stripe event as Stripe does: t=<time>,v1=HMAC-SHA256("t.payload"). */
export function stripeSignature(payload) {
  const t = Math.floor(Date.now() / 1000)
  return `t=${t},v1=${createHmac('sha256', stripeSecret).update(`${t}.${payload}`).digest('hex')}`
}

const page = (title, body) => `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`

/**
 * A stand-in for Stripe: the API calls the server makes (products, prices,
 * customers, Checkout and Billing Portal sessions, a marketplace
 * subscription's cancellation), and the two pages Stripe shows a customer.
 * Paying on its checkout page for a plan makes the subscription and sends
 * its signed event to the server's webhook, then returns to the success
 * URL, as Stripe does. A marketplace purchase's session (an inline price,
 * no customer, the purchase's id in its metadata) is marked paid and
 * returns to the success URL; its checkout.session.completed event is the
 * test's to deliver (marketSessionCompleted), as Stripe does after a
 * payment, on its own schedule.
 */
async function startStripe() {
  const st = {
    products: new Set(), prices: new Map(), customers: new Map(), sessions: new Map(), portals: new Map(), subscriptions: new Map(), replays: new Map(),
    target: '', n: 0,
  }
  const next = (prefix) => `${prefix}_e2e${++st.n}`
  const srv = http.createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      const f = new URLSearchParams(raw)
      const u = new URL(req.url, 'http://stripe')
      const json = (status, obj) => {
        const body = JSON.stringify(obj)
        if (req.method === 'POST' && status === 200 && req.headers['idempotency-key']) st.replays.set(req.headers['idempotency-key'], body)
        res.writeHead(status, { 'Content-Type': 'application/json' }).end(body)
      }
      const html = (body) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(body)
      const fail = (status, message) => json(status, { error: { type: 'invalid_request_error', message } })
      const pay = u.pathname.match(/^\/pay\/([\w]+)$/)
      if (pay) {
        const s = st.sessions.get(pay[1])
        if (!s) return fail(404, 'No such checkout session')
        if (req.method === 'GET') {
          const what = s.market ? `${s.name}: ${s.amount} ${s.currency.toUpperCase()}${s.mode === 'subscription' ? ' per month' : ''}` : s.price
          return html(page('Test checkout', `<p data-testid="stripe-what">${what}</p><form method="post"><button data-testid="stripe-pay">Pay</button></form><a href="${s.cancel_url}">Back</a>`))
        }
        if (s.market) {
          s.paid = true
          if (s.mode === 'subscription') {
            s.subscription = next('sub')
            st.subscriptions.set(s.subscription, { id: s.subscription, object: 'subscription', status: 'active', cancel_at_period_end: false, metadata: { slipway_purchase: s.purchase } })
          }
          return res.writeHead(303, { Location: s.success_url }).end()
        }
        const meta = {}
        for (const [k, v] of Object.entries(s.form)) {
          const m = k.match(/^subscription_data\[metadata\]\[(\w+)\]$/)
          if (m) meta[m[1]] = v
        }
        const payload = JSON.stringify({
          id: next('evt'), object: 'event', type: 'customer.subscription.created', created: Math.floor(Date.now() / 1000),
          data: { object: { id: next('sub'), object: 'subscription', customer: s.customer, status: 'active', metadata: meta,
            items: { object: 'list', data: [{ id: next('si'), object: 'subscription_item', price: { id: s.price, object: 'price' } }] } } },
        })
        fetch(st.target + '/api/billing/webhooks/stripe', { method: 'POST', headers: { 'Content-Type': 'application/json', 'Stripe-Signature': stripeSignature(payload) }, body: payload })
          .then((r) => res.writeHead(r.ok ? 303 : 502, { Location: s.success_url }).end())
          .catch(() => res.writeHead(502).end())
        return
      }
      const portal = u.pathname.match(/^\/portal\/([\w]+)$/)
      if (portal) {
        const p = st.portals.get(portal[1])
        if (!p) return fail(404, 'No such portal session')
        return html(page('Test billing portal', `<p>${p.customer}</p><a data-testid="stripe-return" href="${p.return_url}">Return to Slipway</a>`))
      }
      if (req.headers.authorization !== `Bearer ${stripeKey}`) return fail(401, 'Invalid API Key provided')
      const replay = req.method === 'POST' && st.replays.get(req.headers['idempotency-key'])
      if (replay) return res.writeHead(200, { 'Content-Type': 'application/json' }).end(replay)
      const base = `http://127.0.0.1:${srv.address().port}`
      const parts = u.pathname.split('/').filter(Boolean)
      if (req.method === 'GET' && parts[1] === 'products' && parts[2]) {
        return st.products.has(parts[2]) ? json(200, { id: parts[2], object: 'product' }) : fail(404, 'No such product')
      }
      if (req.method === 'POST' && u.pathname === '/v1/products') {
        st.products.add(f.get('id'))
        return json(200, { id: f.get('id'), object: 'product' })
      }
      if (req.method === 'POST' && u.pathname === '/v1/prices') {
        const p = { id: next('price'), object: 'price', active: true, product: f.get('product'), currency: f.get('currency'), unit_amount: Number(f.get('unit_amount')) }
        st.prices.set(p.id, p)
        return json(200, p)
      }
      if (req.method === 'POST' && parts[1] === 'prices' && st.prices.has(parts[2])) {
        const p = st.prices.get(parts[2])
        p.active = f.get('active') !== 'false'
        return json(200, p)
      }
      if (req.method === 'POST' && u.pathname === '/v1/customers') {
        const c = { id: next('cus'), object: 'customer', name: f.get('name'), email: f.get('email') }
        st.customers.set(c.id, c)
        return json(200, c)
      }
      if (req.method === 'POST' && u.pathname === '/v1/checkout/sessions' && f.has('line_items[0][price_data][currency]')) {
        // A marketplace purchase: an inline price, no customer; the purchase's id in the session's metadata (and its payment's or subscription's).
        const purchase = f.get('metadata[slipway_purchase]')
        const mode = f.get('mode')
        const s = {
          market: true, purchase, mode, currency: f.get('line_items[0][price_data][currency]'), amount: Number(f.get('line_items[0][price_data][unit_amount]')),
          name: f.get('line_items[0][price_data][product_data][name]'), success_url: f.get('success_url'), cancel_url: f.get('cancel_url'), form: Object.fromEntries(f),
        }
        if (!purchase) return fail(400, 'metadata[slipway_purchase] is required')
        if (f.has('customer')) return fail(400, 'a marketplace checkout names no customer')
        if (!/^[a-z]{3}$/.test(s.currency)) return fail(400, `Invalid currency: ${s.currency}`)
        if (!Number.isInteger(s.amount) || s.amount < 1 || String(s.amount) !== f.get('line_items[0][price_data][unit_amount]')) return fail(400, 'Invalid integer: unit_amount')
        if (!s.name) return fail(400, 'line_items[0][price_data][product_data][name] is required')
        if (!s.success_url || !s.cancel_url) return fail(400, 'success_url and cancel_url are required')
        if (mode === 'subscription') {
          if (f.get('line_items[0][price_data][recurring][interval]') !== 'month') return fail(400, 'a subscription needs a recurring price')
          if (f.get('subscription_data[metadata][slipway_purchase]') !== purchase) return fail(400, "the subscription carries the purchase's id")
        } else if (mode === 'payment') {
          if (f.get('payment_intent_data[metadata][slipway_purchase]') !== purchase) return fail(400, "the payment carries the purchase's id")
        } else return fail(400, `Invalid mode: ${mode}`)
        const id = next('cs')
        st.sessions.set(id, s)
        return json(200, { id, object: 'checkout.session', mode, url: `${base}/pay/${id}`, metadata: { slipway_purchase: purchase } })
      }
      const subscription = parts[1] === 'subscriptions' && parts[2] && st.subscriptions.get(parts[2])
      if (subscription && (req.method === 'POST' || req.method === 'DELETE')) {
        // A marketplace subscription cancelled: at its period's end (an update), or now (a deletion).
        if (req.method === 'POST') subscription.cancel_at_period_end = f.get('cancel_at_period_end') === 'true'
        else subscription.status = 'canceled'
        return json(200, subscription)
      }
      if (req.method === 'POST' && u.pathname === '/v1/checkout/sessions') {
        if (!st.customers.has(f.get('customer'))) return fail(400, 'No such customer')
        if (!st.prices.get(f.get('line_items[0][price]'))?.active) return fail(400, 'No such price')
        const id = next('cs')
        st.sessions.set(id, { customer: f.get('customer'), price: f.get('line_items[0][price]'), success_url: f.get('success_url'), cancel_url: f.get('cancel_url'), form: Object.fromEntries(f) })
        return json(200, { id, object: 'checkout.session', url: `${base}/pay/${id}` })
      }
      if (req.method === 'POST' && u.pathname === '/v1/billing_portal/sessions') {
        if (!st.customers.has(f.get('customer'))) return fail(400, 'No such customer')
        const id = next('bps')
        st.portals.set(id, { customer: f.get('customer'), return_url: f.get('return_url') })
        return json(200, { id, object: 'billing_portal.session', url: `${base}/portal/${id}` })
      }
      fail(404, 'Unrecognized request URL')
    })
  })
  await new Promise((r) => srv.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    state: st,
    stop: () => {
      srv.closeAllConnections()
      return new Promise((r) => srv.close(r))
    },
  }
}

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

/**
 * Starts the server; resolves with its base URL and a stop function.
 * options.env adds variables to the server's environment: an object, or a
 * function of the server's URL answering one (PUBLIC_URL, say).
 */
export async function startServer(options = {}) {
  const bin = process.env.SLIPWAY_BIN
  if (!bin) throw new Error('SLIPWAY_BIN must name the slipway binary (web/e2e/run.sh builds it)')
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-e2e-'))
  mkdirSync(path.join(dir, 'data'))
  const port = await freePort()
  const stripe = await startStripe()
  const url = `http://127.0.0.1:${port}`
  const extra = typeof options.env === 'function' ? options.env(url) : (options.env ?? {})
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
    // Stripe's events, signed by the tests (stripeSecret), and its API: the
    // double above.
    STRIPE_WEBHOOK_SECRET: stripeSecret,
    STRIPE_SECRET_KEY: stripeKey,
    STRIPE_API_BASE: stripe.url,
    ...extra,
  }
  const proc = spawn(bin, ['serve'], { env, stdio: ['ignore', 'inherit', 'inherit'] })
  stripe.state.target = url
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
    stripe,
    stop: () =>
      new Promise((resolve) => {
        proc.on('exit', resolve)
        proc.kill('SIGTERM')
      }).then(stripe.stop),
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

/** Registers the admin (the server's initial admin) and answers an API session of theirs. */
export async function adminSession(url) {
  const r = await fetch(url + '/api/auth/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: admin.email, password: admin.password, display_name: admin.name }),
  })
  if (!r.ok) throw new Error(`register: ${r.status} ${await r.text()}`)
  return apiSession(url, admin.email, admin.password)
}

/** Waits until fn() holds (answers true), failing with what it last answered. */
export async function until(what, fn, ms = 30_000) {
  const end = Date.now() + ms
  let last
  for (;;) {
    last = await fn()
    if (last === true) return
    if (Date.now() > end) assert.fail(`${what}: ${JSON.stringify(last)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/**
 * Starts the tests' mail system (the mailtest program: an IMAP server with
 * one mailbox and an SMTP server delivering into it); resolves with its
 * addresses, a send function (plain SMTP) and a stop function.
 */
export async function startMail(user, password) {
  const bin = process.env.MAILTEST_BIN
  if (!bin) throw new Error('MAILTEST_BIN must name the mailtest program (web/e2e/run.sh builds it)')
  const proc = spawn(bin, ['-user', user, '-password', password], { stdio: ['pipe', 'pipe', 'inherit'] })
  const line = await new Promise((resolve, reject) => {
    let out = ''
    proc.stdout.on('data', (c) => {
      out += c
      if (out.includes('\n')) resolve(out.split('\n')[0])
    })
    proc.on('exit', (code) => reject(new Error(`mailtest exited ${code}`)))
  })
  const addrs = JSON.parse(line)
  const [host, port] = addrs.imap.split(':')
  return {
    imapHost: host,
    imapPort: Number(port),
    send: (from, to, raw) => smtpSend(addrs.smtp, from, to, raw),
    stop: () => new Promise((resolve) => (proc.on('exit', resolve), proc.stdin.end())),
  }
}

/** Sends one message over SMTP: the dialogue, each answer checked. */
async function smtpSend(addr, from, to, raw) {
  const [host, port] = addr.split(':')
  const sock = net.connect(Number(port), host)
  let buf = ''
  const waiting = []
  sock.on('data', (c) => {
    buf += c
    while (buf.includes('\r\n')) {
      const i = buf.indexOf('\r\n')
      const l = buf.slice(0, i)
      buf = buf.slice(i + 2)
      if (l[3] !== '-') waiting.shift()?.(l)
    }
  })
  const reply = () => new Promise((resolve) => waiting.push(resolve))
  const expect = async (code, send) => {
    const r = reply()
    if (send !== undefined) sock.write(send + '\r\n')
    const l = await r
    if (!l.startsWith(code)) throw new Error(`SMTP ${send ?? 'greeting'}: ${l}`)
  }
  await expect('220')
  await expect('250', 'HELO e2e.test')
  await expect('250', `MAIL FROM:<${from}>`)
  await expect('250', `RCPT TO:<${to}>`)
  await expect('354', 'DATA')
  await expect('250', raw.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..') + '\r\n.')
  await expect('221', 'QUIT')
  sock.end()
}
