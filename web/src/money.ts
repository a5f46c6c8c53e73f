// Money in integer minor units: formatted for display, and typed amounts
// read back as exact cents from their digits, never through a float. Its
// own module: the public plans page formats prices without loading the
// owner console's.
import type { Schemas } from './api'

type Interval = Schemas['BillingPlan']['interval']

/** Cents as a decimal string: 4900 → "49.00". */
export function centsToDecimal(cents: number): string {
  const neg = cents < 0
  const s = String(Math.abs(Math.trunc(cents))).padStart(3, '0')
  return `${neg ? '-' : ''}${s.slice(0, -2)}.${s.slice(-2)}`
}

/**
 * A decimal amount typed in major units as whole cents, read from its
 * digits ("49", "49.5", "49.50" → 4900, 4950, 4950); null when it is not a
 * non-negative amount with at most two decimals.
 */
export function decimalToCents(text: string): number | null {
  const m = /^(\d{1,12})(?:[.,](\d{0,2}))?$/.exec(text.trim())
  if (!m) return null
  return Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'))
}

const intervalSuffix: Record<Interval, string> = { month: ' / month', year: ' / year', one_time: ' once', custom: ' (custom terms)' }

/** "€49.00 / month". cents / 100 is the double nearest the amount, exact to the cent once rounded to two places. */
export function price(cents: number, currency: string, interval: Interval): string {
  let amount: string
  try {
    amount = new Intl.NumberFormat('en', { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(cents / 100)
  } catch {
    amount = `${centsToDecimal(cents)} ${currency}`
  }
  return amount + intervalSuffix[interval]
}
