// The console talks only to the public API (docs/api/public.json; the
// types in api-types.ts are generated from it: `npm run types`, and CI
// fails when they differ from a regeneration). Calls go through
// openapi-fetch, so a path, its path and query parameters, its request body
// and its answer are checked against that document at compile time.
import createClient, { type ClientPathsWithMethod, type FetchResponse, type ParamsOption, type RequestBodyOption } from 'openapi-fetch'
import type { components, paths } from './api-types'

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

// A request that does not reach the server rejects with the same ApiError
// whatever the path (fetch itself is looked up per call).
const send = (req: Request) =>
  globalThis.fetch(req).catch(() => {
    throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.')
  })

const client = createClient<paths>({ credentials: 'same-origin', fetch: send })

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete'
/** The document's paths that have this method. */
export type PathOf<M extends Method> = ClientPathsWithMethod<typeof client, M>
type Op<M extends Method, P extends PathOf<M>> = paths[P][M] extends infer O extends Record<string, any> ? O : never
/** What a call takes besides its path: params ({path, query}) and body, as the document has them. */
export type Options<M extends Method, P extends PathOf<M>> = ParamsOption<Op<M, P>> & RequestBodyOption<Op<M, P>>
/** A GET operation's query parameters (to narrow a value read from the address bar). */
export type Query<P extends PathOf<'get'>> = NonNullable<NonNullable<Options<'get', P>['params']>['query']>
type Args<O> = {} extends O ? [options?: O] : [options: O]
type Success<M extends Method, P extends PathOf<M>> = Extract<FetchResponse<Op<M, P>, {}, `${string}/${string}`>, { data: unknown }>['data']
/** The decoded body of a successful answer (undefined for an operation that answers none). */
export type Answer<M extends Method, P extends PathOf<M>> = [Success<M, P>] extends [never] ? undefined : Success<M, P>

/** Decodes an answer's text: JSON, else the text itself; nothing for an empty body. */
function decode(text: string | undefined): unknown {
  if (!text) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * Sends one request; resolves with the decoded body, rejects with an
 * ApiError. Untyped inside: the typed functions below are its only callers.
 */
async function call(method: string, path: string, options: { params?: unknown; body?: unknown }): Promise<unknown> {
  const headers: Record<string, string> = { Accept: 'application/json' }
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = csrf()
  if (workspace) headers['X-Workspace-Id'] = workspace
  // openapi-fetch sets Content-Type: application/json when there is a body,
  // fills path parameters in (encoded) and appends the query. The body is
  // read as text and decoded here so that a success answer that is not JSON
  // resolves with its text, as before.
  const { data, error, response } = await client.request(method.toLowerCase() as 'get', path as '/api/me', {
    params: options.params as never,
    body: options.body as never,
    headers,
    parseAs: 'text',
  })
  if (!response.ok) {
    const e = (error ?? {}) as { code?: string; error?: string }
    throw new ApiError(response.status, e.code ?? 'error', e.error ?? `The server answered ${response.status}.`)
  }
  return decode(data)
}

/** POSTs a document that is not JSON built here (a YAML or an n8n export file) and decodes the answer. */
export async function postDocument<T>(path: string, query: Record<string, string>, body: string, contentType: string): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', 'Content-Type': contentType, 'X-CSRF-Token': csrf() }
  if (workspace) headers['X-Workspace-Id'] = workspace
  const r = await send(new Request(`${path}?${new URLSearchParams(query)}`, { method: 'POST', headers, body, credentials: 'same-origin' }))
  const data = decode(await r.text()) as T & { code?: string; error?: string }
  if (!r.ok) throw new ApiError(r.status, data?.code ?? 'error', data?.error ?? `The server answered ${r.status}.`)
  return data
}

// POST, PUT and PATCH send {} when the caller gives no body, as the console
// always has.
export const get = <P extends PathOf<'get'>>(path: P, ...[o]: Args<Options<'get', P>>) =>
  call('GET', path, { ...o }) as Promise<Answer<'get', P>>
export const post = <P extends PathOf<'post'>>(path: P, ...[o]: Args<Options<'post', P>>) =>
  call('POST', path, { ...o, body: (o as { body?: unknown } | undefined)?.body ?? {} }) as Promise<Answer<'post', P>>
export const put = <P extends PathOf<'put'>>(path: P, ...[o]: Args<Options<'put', P>>) =>
  call('PUT', path, { ...o, body: (o as { body?: unknown } | undefined)?.body ?? {} }) as Promise<Answer<'put', P>>
export const patch = <P extends PathOf<'patch'>>(path: P, ...[o]: Args<Options<'patch', P>>) =>
  call('PATCH', path, { ...o, body: (o as { body?: unknown } | undefined)?.body ?? {} }) as Promise<Answer<'patch', P>>
export const del = <P extends PathOf<'delete'>>(path: P, ...[o]: Args<Options<'delete', P>>) =>
  call('DELETE', path, { ...o }) as Promise<Answer<'delete', P>>

/** The message to show for anything thrown. */
export function messageOf(e: unknown): string {
  if (e instanceof ApiError) return e.message
  if (e instanceof Error) return e.message
  return String(e)
}
