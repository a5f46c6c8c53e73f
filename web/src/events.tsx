// A task's or run's event log: every stored page, then each new event live,
// in order; shown with fixed columns so long payloads wrap in their own.
import { Button, Group, MultiSelect, ScrollArea, Stack, Switch, Text, TextInput } from '@mantine/core'
import { useEffect, useMemo, useRef, useState } from 'react'
import { get, messageOf, type TaskEvent } from './api'
import { followEvents } from './live'
import { ErrorNote, Loading } from './ui'

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

/** The log as readable rows, kept scrolled to its newest line: search, a filter by type, raw JSON on demand, and a download. */
export function EventLog({ events, loading, height, name = 'events' }: { events: TaskEvent[]; loading: boolean; height: number; name?: string }) {
  const bottom = useRef<HTMLDivElement>(null)
  const [query, setQuery] = useState('')
  const [types, setTypes] = useState<string[]>([])
  const [raw, setRaw] = useState(false)
  const present = useMemo(() => [...new Set(events.map((e) => e.event_type))].sort(), [events])
  const shown = useMemo(() => {
    const q = query.trim().toLowerCase()
    return events.filter((e) => (types.length === 0 || types.includes(e.event_type)) && (!q || lineText(e).toLowerCase().includes(q)))
  }, [events, types, query])
  // A block body: in newer browsers scrollIntoView answers a promise, which an effect must not return.
  useEffect(() => {
    if (!query && types.length === 0) bottom.current?.scrollIntoView({ block: 'end' })
  }, [events.length, query, types.length])
  if (loading) return <Loading label="Loading the event log…" />
  const download = () => {
    const url = URL.createObjectURL(new Blob([JSON.stringify(events, null, 2)], { type: 'application/json' }))
    const a = document.createElement('a')
    a.href = url
    a.download = `${name}.json`
    a.click()
    URL.revokeObjectURL(url)
  }
  return (
    <Stack gap="xs">
      <Group gap="xs" align="end">
        <TextInput placeholder="Search the log" value={query} onChange={(e) => setQuery(e.currentTarget.value)} size="xs" w={220} data-testid="event-search" />
        <MultiSelect placeholder={types.length ? undefined : 'All types'} data={present} value={types} onChange={setTypes} size="xs" w={260} clearable data-testid="event-types" />
        <Switch label="Raw JSON" checked={raw} onChange={(e) => setRaw(e.currentTarget.checked)} size="xs" data-testid="event-raw" />
        <Button size="compact-xs" variant="light" onClick={download} data-testid="event-download">
          Download
        </Button>
        {shown.length !== events.length && (
          <Text size="xs" c="dimmed" data-testid="event-count">
            {shown.length} of {events.length}
          </Text>
        )}
      </Group>
      <ScrollArea h={height} type="auto">
        <Stack gap={0} ff="monospace" fz="xs" data-testid="event-log">
          {shown.length === 0 && (
            <Text c="dimmed" fz="xs">
              {events.length === 0 ? 'No events yet.' : 'No event matches.'}
            </Text>
          )}
          {shown.map((e) => (
            <EventLine key={e.sequence_num} e={e} raw={raw} />
          ))}
          <div ref={bottom} />
        </Stack>
      </ScrollArea>
    </Stack>
  )
}

const columns = { display: 'grid', gridTemplateColumns: '3.5em 6.5em 7.5em minmax(0, 1fr)', columnGap: 'var(--mantine-spacing-xs)', alignItems: 'start' }

const typeColor: Record<string, string> = {
  message: 'teal',
  tool_call: 'violet',
  tool_result: 'grape',
  status: 'blue',
  error: 'red',
  result: 'indigo',
  git: 'orange',
  approval_request: 'yellow',
  routing: 'cyan',
}

function EventLine({ e, raw }: { e: TaskEvent; raw: boolean }) {
  const failed = isFailure(e)
  return (
    <div style={columns} data-seq={e.sequence_num} data-type={e.event_type}>
      <Text span c="dimmed" fz="xs" ta="right">
        {e.sequence_num}
      </Text>
      <Text span c="dimmed" fz="xs" title={e.timestamp}>
        {new Date(e.timestamp).toLocaleTimeString()}
      </Text>
      <Text span c={typeColor[e.event_type] ?? 'blue'} fz="xs">
        {e.event_type}
      </Text>
      <Text span fz="xs" c={failed ? 'red' : undefined} style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
        {raw ? JSON.stringify(e.payload) : lineText(e)}
      </Text>
    </div>
  )
}

type Payload = Record<string, unknown>

const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v))

function isFailure(e: TaskEvent): boolean {
  const p = (e.payload ?? {}) as Payload
  return e.event_type === 'error' || (e.event_type === 'tool_result' && p.ok === false) || (e.event_type === 'result' && p.status !== undefined && p.status !== 'success')
}

/** An event as a person reads it: what happened, in words; anything unknown as compact JSON. */
export function lineText(e: TaskEvent): string {
  const payload = e.payload
  if (payload === undefined || payload === null) return ''
  if (typeof payload !== 'object' || Array.isArray(payload)) return str(payload)
  const p = payload as Payload
  switch (e.event_type) {
    case 'log':
      return p.stream === 'stderr' ? `[stderr] ${str(p.line ?? p.text)}` : str(p.line ?? p.text)
    case 'message':
      return p.role && p.role !== 'assistant' ? `${str(p.role)}: ${str(p.text)}` : str(p.text)
    case 'tool_call':
      return `${str(p.name)} ${str(p.arguments)}`
    case 'tool_result':
      return `${str(p.name)} ${p.ok === false ? 'failed' : 'ok'}${p.truncated ? ' (cut)' : ''}\n${str(p.output)}`
    case 'status':
      return `${str(p.from)} → ${str(p.to)}${p.reason ? `: ${str(p.reason)}` : ''}`
    case 'cost':
      return `${str(p.model)}: ${str(p.total_tokens)} tokens${typeof p.cost_usd === 'number' && p.cost_usd > 0 ? `, $${p.cost_usd.toFixed(4)}` : ''}`
    case 'git':
      return Object.entries(p)
        .map(([k, v]) => (k === 'action' ? str(v) : `${k} ${str(v)}`))
        .join(' · ')
    case 'routing':
      return `to ${str(p.to)}${Array.isArray(p.labels) && p.labels.length ? ` (labels ${p.labels.join(', ')})` : ''}: ${str(p.reason)}`
    case 'seen':
      return `the model read the messages up to #${str(p.seq)}`
    case 'result':
      return `${str(p.status)}${p.summary ? `: ${str(p.summary)}` : ''}${p.error ? `: ${str(p.error)}` : ''}`
    case 'approval_request':
      return `asks to run ${str(p.tool)} ${str(p.arguments)}${p.reason ? ` (${str(p.reason)})` : ''}`
    case 'intervention':
      return `message: ${str(p.text)}`
    case 'error':
      return str(p.message)
  }
  const keys = Object.keys(p)
  const text = typeof p.line === 'string' ? p.line : typeof p.text === 'string' ? p.text : undefined
  if (text !== undefined && keys.every((k) => k === 'line' || k === 'text' || k === 'stream')) return p.stream === 'stderr' ? `[stderr] ${text}` : text
  return JSON.stringify(p)
}

/** A code node's logs: its script run's stdout and stderr, live while it runs. */
export function ScriptLog({ id }: { id: string }) {
  const log = useEventLog('run', id)
  return (
    <Stack gap={2} data-testid="node-logs">
      <Text size="sm" fw={500}>
        Logs
      </Text>
      {log.error && <ErrorNote error={log.error} />}
      <EventLog events={log.list} loading={log.loading} height={200} name={`script-run-${id}`} />
    </Stack>
  )
}
