// The console talks only to the public API (docs/api/public.json; the
// types in api-types.ts are generated from it: `npm run types`).
import type { components } from './api-types'

export type Schemas = components['schemas']
export type Task = Schemas['Task']
export type TaskEvent = Schemas['TaskEvent']
export type Profile = Schemas['Profile']
export type Project = Schemas['Project']
export type Workspace = Schemas['Workspace']

/** An error answered by the API: its code and message, shown as they are. */
export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message)
  }
}

let workspace = localStorage.getItem('slipway.workspace') ?? ''

/** The active workspace, sent as X-Workspace-Id ('' = the account's default). */
export function activeWorkspace(): string {
  return workspace
}

export function setActiveWorkspace(id: string) {
  workspace = id
  if (id) localStorage.setItem('slipway.workspace', id)
  else localStorage.removeItem('slipway.workspace')
}

function csrf(): string {
  const m = document.cookie.match(/(?:^|; )service_csrf=([^;]*)/)
  return m ? decodeURIComponent(m[1]) : ''
}

/** Calls the API; resolves with the decoded body, rejects with an ApiError. */
export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = csrf()
  if (workspace) headers['X-Workspace-Id'] = workspace
  let resp: Response
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' })
  } catch {
    throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.')
  }
  const text = await resp.text()
  let data: unknown = undefined
  if (text) {
    try {
      data = JSON.parse(text)
    } catch {
      data = text
    }
  }
  if (!resp.ok) {
    const e = (data ?? {}) as { code?: string; error?: string }
    throw new ApiError(resp.status, e.code ?? 'error', e.error ?? `The server answered ${resp.status}.`)
  }
  return data as T
}

export const get = <T,>(path: string) => api<T>('GET', path)
export const post = <T,>(path: string, body?: unknown) => api<T>('POST', path, body ?? {})
export const put = <T,>(path: string, body?: unknown) => api<T>('PUT', path, body ?? {})
export const patch = <T,>(path: string, body?: unknown) => api<T>('PATCH', path, body ?? {})
export const del = <T,>(path: string) => api<T>('DELETE', path)

/** The message to show for anything thrown. */
export function messageOf(e: unknown): string {
  if (e instanceof ApiError) return e.message
  if (e instanceof Error) return e.message
  return String(e)
}
