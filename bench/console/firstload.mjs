// The console's first load on loopback (bench/README.md, "Console and
// realtime"): a fresh browser context (empty cache) opens /login until the
// sign-in form can be used; bytes transferred and the time it took, over
// several runs. Run from the repository root after building the binary:
//
//   (cd web && npm ci) && CGO_ENABLED=0 go build -o /tmp/slipway ./cmd/slipway
//   SLIPWAY_BIN=/tmp/slipway node bench/console/firstload.mjs [runs]
import { browser, startServer } from '../../web/e2e/harness.mjs'

const runs = Number(process.argv[2] ?? 15)
const server = await startServer()
const chrome = await browser()
const times = []
const bytes = []
const dcl = []
try {
  for (let i = 0; i < runs; i++) {
    const ctx = await chrome.newContext()
    const page = await ctx.newPage()
    const t0 = performance.now()
    await page.goto(server.url + '/login')
    await page.getByRole('button', { name: 'Sign in' }).waitFor({ state: 'visible' })
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
} finally {
  await chrome.close()
  await server.stop()
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const max = (xs) => Math.max(...xs)
console.log(`${runs} cold loads of /login (empty cache)`)
console.log(`transferred: ${(med(bytes) / 1024).toFixed(1)} KiB (compressed as served)`)
console.log(`DOMContentLoaded: median ${med(dcl).toFixed(1)} ms`)
console.log(`navigation → sign-in form usable: median ${med(times).toFixed(1)} ms, max ${max(times).toFixed(1)} ms`)
