// A task's or run's event log: every stored page, then each new event live,
// in order; shown with fixed columns so long payloads wrap in their own.
import { ScrollArea, Stack, Text } from '@mantine/core'
import { useEffect, useRef, useState } from 'react'
import { get, messageOf, type TaskEvent } from './api'
import { followEvents } from './live'
import { Loading } from './ui'

const pageLimit = 1000

/** The stored events, every page of them, then each new one live, in order. */
export function useEventLog(stream: 'task' | 'run', id: string) {
  const [list, setList] = useState<TaskEvent[]>([])
  const [error, setError] = useState('')
  const [loading, setLoading] = useState(true)
  useEffect(() => {
    let stop: (() => void) | undefined
    let cancelled = false
    setList([])
    setError('')
    setLoading(true)
    ;(async () => {
      const all: TaskEvent[] = []
      for (;;) {
        const after = all.length ? all[all.length - 1].sequence_num : 0
        const query = { after_sequence: after, limit: pageLimit }
        const page = await (stream === 'task'
          ? get('/api/tasks/{id}/events', { params: { path: { id }, query } })
          : get('/api/runs/{id}/events', { params: { path: { id }, query } }))
        all.push(...(page ?? []))
        if (!page || page.length < pageLimit) break
      }
      if (cancelled) return
      setList(all)
      setLoading(false)
      const last = all.length ? all[all.length - 1].sequence_num : 0
      stop = followEvents(stream, id, last, (_, e) => setList((prev) => [...prev, e as TaskEvent]), setError)
    })().catch((e) => {
      if (cancelled) return
      setError(messageOf(e))
      setLoading(false)
    })
    return () => {
      cancelled = true
      stop?.()
    }
  }, [stream, id])
  return { list, error, loading }
}

/** The log, kept scrolled to its newest line. */
export function EventLog({ events, loading, height }: { events: TaskEvent[]; loading: boolean; height: number }) {
  const bottom = useRef<HTMLDivElement>(null)
  // A block body: in newer browsers scrollIntoView answers a promise, which an effect must not return.
  useEffect(() => {
    bottom.current?.scrollIntoView({ block: 'end' })
  }, [events.length])
  if (loading) return <Loading label="Loading the event log…" />
  return (
    <ScrollArea h={height} type="auto">
      <Stack gap={0} ff="monospace" fz="xs" data-testid="event-log">
        {events.length === 0 && (
          <Text c="dimmed" fz="xs">
            No events yet.
          </Text>
        )}
        {events.map((e) => (
          <EventLine key={e.sequence_num} e={e} />
        ))}
        <div ref={bottom} />
      </Stack>
    </ScrollArea>
  )
}

const columns = { display: 'grid', gridTemplateColumns: '3.5em 6.5em 7em minmax(0, 1fr)', columnGap: 'var(--mantine-spacing-xs)', alignItems: 'start' }

function EventLine({ e }: { e: TaskEvent }) {
  return (
    <div style={columns} data-seq={e.sequence_num} data-type={e.event_type}>
      <Text span c="dimmed" fz="xs" ta="right">
        {e.sequence_num}
      </Text>
      <Text span c="dimmed" fz="xs" title={e.timestamp}>
        {new Date(e.timestamp).toLocaleTimeString()}
      </Text>
      <Text span c="blue" fz="xs">
        {e.event_type}
      </Text>
      <Text span fz="xs" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
        {payloadText(e.payload)}
      </Text>
    </div>
  )
}

/** A log line as its text; anything else as compact JSON. */
function payloadText(payload: unknown): string {
  if (payload && typeof payload === 'object' && !Array.isArray(payload)) {
    const p = payload as Record<string, unknown>
    const keys = Object.keys(p)
    const text = typeof p.line === 'string' ? p.line : typeof p.text === 'string' ? p.text : undefined
    if (text !== undefined && keys.every((k) => k === 'line' || k === 'text' || k === 'stream')) return p.stream === 'stderr' ? `[stderr] ${text}` : text
  }
  if (payload === undefined || payload === null) return ''
  return typeof payload === 'string' ? payload : JSON.stringify(payload)
}
