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

/**
 * How many decimals a currency's minor unit has (ISO 4217 as the browser
 * knows it): EUR 2, JPY 0, KWD 3; 2 for a code it does not know.
 */
export function minorDigits(currency: string): number {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2
  } catch {
    return 2
  }
}

/**
 * An amount typed in a currency's major units as integer minor units, read
 * from its digits ("4.99" EUR → 499, "500" JPY → 500); null when it is not
 * a non-negative amount with at most the currency's decimals.
 */
export function majorToMinor(text: string, currency: string): number | null {
  const digits = minorDigits(currency)
  const m = /^(\d{1,12})(?:[.,](\d*))?$/.exec(text.trim())
  if (!m || (m[2] ?? '').length > digits) return null
  return Number(m[1] + (m[2] ?? '').padEnd(digits, '0'))
}

/** Integer minor units as a decimal string in major units: 499 EUR → "4.99", -5 EUR → "-0.05", 500 JPY → "500". */
export function minorToMajor(amount: number, currency: string): string {
  const digits = minorDigits(currency)
  const neg = amount < 0
  const s = String(Math.abs(Math.trunc(amount))).padStart(digits + 1, '0')
  const whole = digits ? `${s.slice(0, -digits)}.${s.slice(-digits)}` : s
  return (neg ? '-' : '') + whole
}

/** "€4.99": an amount in minor units with its currency (its sign kept). */
export function money(amount: number, currency: string): string {
  const digits = minorDigits(currency)
  try {
    // amount / 10^digits is the double nearest the amount, exact once rounded to its digits.
    return new Intl.NumberFormat('en', { style: 'currency', currency, minimumFractionDigits: digits, maximumFractionDigits: digits }).format(amount / 10 ** digits)
  } catch {
    return `${minorToMajor(amount, currency)} ${currency}`
  }
}

/** A marketplace price: "€4.99 once", "€9.00 / month". */
export function marketPrice(p: { amount_minor: number; currency: string; interval: 'once' | 'month' }): string {
  return money(p.amount_minor, p.currency) + (p.interval === 'month' ? ' / month' : ' once')
}
