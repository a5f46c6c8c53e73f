// Small shared pieces: loading and error states, status badges, dates.
import { Alert, Badge, Button, Center, CopyButton, Group, Loader, Modal, Stack, Text } from '@mantine/core'
import { type ReactNode, useCallback, useEffect, useRef, useState } from 'react'
import { messageOf } from './api'

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <Center py="xl" aria-busy="true" aria-label={label}>
      <Loader size="sm" />
    </Center>
  )
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null
  return (
    <Alert color="red" title="Something went wrong" role="alert">
      {messageOf(error)}
    </Alert>
  )
}

const statusColor: Record<string, string> = {
  queued: 'gray',
  running: 'blue',
  needs_input: 'yellow',
  waiting: 'yellow',
  done: 'teal',
  done_pr: 'green',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'dark',
  timed_out: 'orange',
}

export function Status({ status }: { status: string }) {
  return (
    <Badge color={statusColor[status] ?? 'gray'} variant="light" data-status={status}>
      {status.replace('_', ' ')}
    </Badge>
  )
}

/** n and its noun, singular for one: count(1, 'file') is "1 file", count(2, 'file') "2 files". */
export function count(n: number, noun: string, plural = noun + 's'): string {
  return `${n} ${n === 1 ? noun : plural}`
}

export function when(ts?: string | null): string {
  if (!ts) return '—'
  const d = new Date(ts)
  return d.toLocaleString()
}

/** Loads data with a loading and an error state; reload() fetches again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined)
  const [error, setError] = useState<unknown>(null)
  const [loading, setLoading] = useState(true)
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const run = useCallback(load, deps)
  // Loads may overlap (a filter typed, a live hint): only the latest lands.
  const latest = useRef(0)
  const reload = useCallback(async () => {
    const n = ++latest.current
    try {
      const d = await run()
      if (n !== latest.current) return
      setData(d)
      setError(null)
    } catch (e) {
      if (n === latest.current) setError(e)
    } finally {
      if (n === latest.current) setLoading(false)
    }
  }, [run])
  useEffect(() => {
    setLoading(true)
    reload()
  }, [reload])
  return { data, error, loading, reload, setData }
}

/** One action at a time: its name while busy, its error after. */
export function useAction() {
  const [busy, setBusy] = useState('')
  const [error, setError] = useState<unknown>(null)
  const run = async <T,>(name: string, fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(name)
    setError(null)
    try {
      return await fn()
    } catch (e) {
      setError(e)
      return undefined
    } finally {
      setBusy('')
    }
  }
  return { busy, error, run }
}

/**
 * Asks before a destructive action on item (open while item is set). The
 * confirm button clears the item first, then hands it to onConfirm.
 */
export function Confirm<T>(props: {
  item: T | null
  title: (item: T) => string
  message: (item: T) => ReactNode
  action: (item: T) => string
  testid: string
  onCancel: () => void
  onConfirm: (item: T) => unknown
}) {
  const { item } = props
  return (
    <Modal opened={item !== null} onClose={props.onCancel} title={item !== null ? props.title(item) : ''}>
      {item !== null && (
        <Stack>
          <Text size="sm">{props.message(item)}</Text>
          <Group justify="end">
            <Button variant="default" onClick={props.onCancel}>
              Cancel
            </Button>
            <Button
              color="red"
              data-testid={props.testid}
              onClick={() => {
                props.onCancel()
                void props.onConfirm(item)
              }}
            >
              {props.action(item)}
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  )
}

/** A button that copies value (a link or a token shown once). */
export function Copy({ value, label, testid, size = 'xs' }: { value: string; label: string; testid?: string; size?: 'xs' | 'sm' }) {
  return (
    <CopyButton value={value}>
      {({ copied, copy }) => (
        <Button size={size} variant="light" color={copied ? 'teal' : 'blue'} onClick={copy} data-testid={testid}>
          {copied ? 'Copied' : label}
        </Button>
      )}
    </CopyButton>
  )
}
