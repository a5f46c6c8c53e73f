// The realtime hub (GET /api/realtime): one socket per page, shared by
// every subscription. It reconnects by itself (at once when the server asks,
// with back-off otherwise) and resumes each event stream after the last
// sequence it delivered, so a subscriber sees every event once and in order.

type LiveMessage = {
  type: 'subscribed' | 'event' | 'changed' | 'reset' | 'error' | 'unsubscribed' | 'reconnect'
  sub?: string
  seq?: number
  event?: unknown
  topic?: string
  id?: string
  code?: string
  error?: string
}

type Sub = {
  key: string
  stream: string
  id?: string
  workspace?: string
  after: number
  onEvent?: (seq: number, event: unknown) => void
  onChange?: (id: string | undefined, reset: boolean) => void
  onError?: (message: string) => void
}

let socket: WebSocket | null = null
let open = false
let seq = 0
let backoff = 500
const subs = new Map<string, Sub>()
const listeners = new Set<(connected: boolean) => void>()

function url() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:'
  return `${proto}//${location.host}/api/realtime`
}

function send(s: Sub) {
  if (!socket || !open) return
  socket.send(JSON.stringify({ op: 'subscribe', sub: s.key, stream: s.stream, id: s.id, workspace_id: s.workspace || undefined, after: s.after }))
}

function connect() {
  if (socket) return
  const ws = new WebSocket(url())
  socket = ws
  ws.onopen = () => {
    open = true
    backoff = 500
    listeners.forEach((l) => l(true))
    subs.forEach(send)
  }
  ws.onmessage = (m) => {
    let msg: LiveMessage
    try {
      msg = JSON.parse(m.data as string)
    } catch {
      return
    }
    if (msg.type === 'reconnect') {
      backoff = 50 // the server is going away: another replica answers at once
      return
    }
    const s = msg.sub ? subs.get(msg.sub) : undefined
    if (!s) return
    switch (msg.type) {
      case 'event':
        if (msg.seq !== undefined && msg.seq > s.after) {
          s.after = msg.seq
          s.onEvent?.(msg.seq, msg.event)
        }
        break
      case 'changed':
        s.onChange?.(msg.id, false)
        break
      case 'reset':
        s.onChange?.(undefined, true)
        break
      case 'error':
        s.onError?.(msg.error ?? 'subscription failed')
        break
    }
  }
  ws.onclose = () => {
    socket = null
    open = false
    listeners.forEach((l) => l(false))
    if (subs.size > 0) {
      setTimeout(connect, backoff)
      backoff = Math.min(backoff * 2, 10_000)
    }
  }
}

/** Follows a task's or run's event log after `after`; returns the unsubscribe. */
export function followEvents(stream: 'task' | 'run', id: string, after: number, onEvent: (seq: number, event: unknown) => void, onError?: (m: string) => void): () => void {
  return add({ key: `${stream}-${id}-${++seq}`, stream, id, after, onEvent, onError })
}

/** Hears changes on a workspace topic (tasks, runs, approvals, backlog: the id is a card's or a project's; proposals); returns the unsubscribe. */
export function watchTopic(
  topic: 'tasks' | 'runs' | 'approvals' | 'backlog' | 'proposals',
  workspace: string,
  onChange: (id: string | undefined, reset: boolean) => void,
): () => void {
  return add({ key: `${topic}-${++seq}`, stream: topic, workspace, after: 0, onChange })
}

/** Hears changes of the signed-in person's own notifications (whatever the workspace); returns the unsubscribe. */
export function watchNotifications(onChange: (id: string | undefined, reset: boolean) => void): () => void {
  return add({ key: `notifications-${++seq}`, stream: 'notifications', after: 0, onChange })
}

function add(s: Sub): () => void {
  subs.set(s.key, s)
  connect()
  send(s)
  return () => {
    subs.delete(s.key)
    if (socket && open) socket.send(JSON.stringify({ op: 'unsubscribe', sub: s.key }))
  }
}

/** Tells whether the socket is up (for the connection badge). */
export function onConnection(l: (connected: boolean) => void): () => void {
  listeners.add(l)
  l(open)
  return () => listeners.delete(l)
}
