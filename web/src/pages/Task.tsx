import { Alert, Anchor, Badge, Button, Card, Code, Group, ScrollArea, Stack, Text, Textarea, Title } from '@mantine/core'
import { useEffect, useRef, useState } from 'react'
import { useParams } from 'react-router-dom'
import { get, messageOf, post, type Schemas, type Task, type TaskEvent } from '../api'
import { followEvents, watchTopic } from '../live'
import { useSession } from '../session'
import { ErrorNote, Loading, Status, useAction, useLoad, when } from '../ui'

type Approval = Schemas['ToolApproval']

const active = ['queued', 'running', 'needs_input']

/** One task: its state, live event log, pull request and the actions it allows. */
export function TaskPage() {
  const { id = '' } = useParams()
  const { workspace } = useSession()
  const task = useLoad(() => get<Task>(`/api/tasks/${id}`), [id])
  const approvals = useLoad(async () => (await get<Approval[]>('/api/tool-approvals/pending?limit=100')).filter((a) => a.task_id === id), [id])
  const [events, setEvents] = useState<TaskEvent[]>([])
  const [logError, setLogError] = useState('')
  const action = useAction()
  const busy = action.busy
  const [message, setMessage] = useState('')
  const bottom = useRef<HTMLDivElement>(null)

  // The log: what is stored, then every new event live, in order.
  useEffect(() => {
    let stop: (() => void) | undefined
    let cancelled = false
    setEvents([])
    ;(async () => {
      const all: TaskEvent[] = []
      for (;;) {
        const after = all.length ? all[all.length - 1].sequence_num : 0
        const page = await get<TaskEvent[]>(`/api/tasks/${id}/events?after_sequence=${after}&limit=1000`)
        all.push(...(page ?? []))
        if (!page || page.length < 1000) break
      }
      if (cancelled) return
      setEvents(all)
      const last = all.length ? all[all.length - 1].sequence_num : 0
      stop = followEvents('task', id, last, (_, e) => setEvents((prev) => [...prev, e as TaskEvent]), setLogError)
    })().catch((e) => setLogError(messageOf(e)))
    return () => {
      cancelled = true
      stop?.()
    }
  }, [id])

  // Status and approvals follow the workspace's topics.
  const reloadTask = task.reload
  const reloadApprovals = approvals.reload
  useEffect(() => (workspace ? watchTopic('tasks', workspace.id, (changed) => (!changed || changed === id) && reloadTask()) : undefined), [workspace, id, reloadTask])
  useEffect(() => (workspace ? watchTopic('approvals', workspace.id, () => reloadApprovals()) : undefined), [workspace, reloadApprovals])
  useEffect(() => {
    bottom.current?.scrollIntoView({ block: 'end' })
  }, [events.length])

  const act = (name: string, path: string, body?: unknown) =>
    action.run(name, async () => {
      await post(path, body)
      await Promise.all([task.reload(), approvals.reload()])
      return true
    })

  if (task.loading && !task.data) return <Loading />
  if (!task.data) return <ErrorNote error={task.error} />
  const t = task.data
  const running = active.includes(t.status)
  return (
    <Stack>
      <Group justify="space-between">
        <Stack gap={2}>
          <Title order={2}>{t.title}</Title>
          <Group gap="xs">
            <Status status={t.status} />
            {t.held && <Badge color="gray">held</Badge>}
            <Text size="sm" c="dimmed">
              created {when(t.created_at)} · agent {t.agent_profile}
            </Text>
          </Group>
        </Stack>
        <Group>
          {t.held && (
            <Button variant="light" loading={busy === 'launch'} onClick={() => act('launch', `/api/tasks/${id}/launch`)}>
              Launch
            </Button>
          )}
          {running && (
            <Button color="red" variant="light" loading={busy === 'cancel'} onClick={() => act('cancel', `/api/tasks/${id}/cancel`)} data-testid="cancel-task">
              Cancel
            </Button>
          )}
          {!running && (
            <>
              <Button variant="light" loading={busy === 'rerun'} onClick={() => act('rerun', `/api/tasks/${id}/rerun`)}>
                Rerun
              </Button>
              <Button variant="light" loading={busy === 'restart'} onClick={() => act('restart', `/api/tasks/${id}/restart`)}>
                Restart
              </Button>
            </>
          )}
        </Group>
      </Group>
      <ErrorNote error={action.error} />
      {t.error && (
        <Alert color="red" title="The task failed">
          {t.error}
        </Alert>
      )}
      <Card withBorder>
        <Group gap="lg">
          <Text size="sm">
            Branch <Code>{t.branch}</Code>
          </Text>
          {t.pr && (
            <Text size="sm" data-testid="pr">
              Pull request{' '}
              {t.pr.url ? (
                <Anchor href={t.pr.url} target="_blank" rel="noreferrer">
                  {t.pr.url}
                </Anchor>
              ) : (
                <Code>{t.pr.branch}</Code>
              )}{' '}
              · {t.pr.files_changed} files, <Text span c="green">+{t.pr.insertions}</Text> <Text span c="red">−{t.pr.deletions}</Text>
            </Text>
          )}
        </Group>
      </Card>
      {(approvals.data ?? []).map((a) => (
        <Alert key={a.id} color="yellow" title={`The agent asks to run ${a.tool}`} data-testid="tool-approval">
          <Stack gap="xs">
            {a.reason && <Text size="sm">{a.reason}</Text>}
            <Code block>{JSON.stringify(a.arguments, null, 2)}</Code>
            <Group>
              <Button size="xs" loading={busy === 'approve'} onClick={() => act('approve', `/api/tool-approvals/${a.id}/decide`, { verdict: 'approve' })}>
                Approve
              </Button>
              <Button size="xs" color="red" variant="light" loading={busy === 'reject'} onClick={() => act('reject', `/api/tool-approvals/${a.id}/decide`, { verdict: 'reject' })}>
                Reject
              </Button>
            </Group>
          </Stack>
        </Alert>
      ))}
      {running && (
        <form
          onSubmit={(e) => {
            e.preventDefault()
            act('intervene', `/api/tasks/${id}/intervene`, { text: message }).then((sent) => sent && setMessage(''))
          }}
        >
          <Group align="end">
            <Textarea label="Message the agent" autosize style={{ flex: 1 }} value={message} onChange={(e) => setMessage(e.currentTarget.value)} required />
            <Button type="submit" loading={busy === 'intervene'}>
              Send
            </Button>
          </Group>
        </form>
      )}
      <Title order={4}>Event log</Title>
      {logError && <ErrorNote error={logError} />}
      <ScrollArea h={420} type="auto">
        <Stack gap={0} ff="monospace" fz="xs" data-testid="event-log">
          {events.map((e) => (
            <EventLine key={e.sequence_num} e={e} />
          ))}
          <div ref={bottom} />
        </Stack>
      </ScrollArea>
    </Stack>
  )
}

function EventLine({ e }: { e: TaskEvent }) {
  const p = (e.payload ?? {}) as Record<string, unknown>
  const line = typeof p.line === 'string' ? p.line : typeof p.text === 'string' ? p.text : JSON.stringify(p)
  return (
    <Group gap="xs" wrap="nowrap" data-seq={e.sequence_num} data-type={e.event_type}>
      <Text span c="dimmed" fz="xs" w={40} ta="right">
        {e.sequence_num}
      </Text>
      <Text span c="dimmed" fz="xs" w={90}>
        {e.event_type}
      </Text>
      <Text span fz="xs" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
        {line}
      </Text>
    </Group>
  )
}
