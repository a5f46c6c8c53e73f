import { Alert, Anchor, Badge, Button, Card, Code, Group, Stack, Tabs, Text, Textarea, Title } from '@mantine/core'
import { lazy, Suspense, useEffect, useState } from 'react'
import { useParams } from 'react-router-dom'
import { get, post } from '../api'
import { watchTopic } from '../live'
import { useSession } from '../session'
import { EventLog, useEventLog } from '../events'
import { ErrorNote, Loading, Status, useAction, useLoad, when, count } from '../ui'

const active = ['queued', 'running', 'needs_input']

// The change and its undo load when first opened.
const ChangeView = lazy(() => import('./TaskChange').then((m) => ({ default: m.ChangeView })))
const UndoPanel = lazy(() => import('./TaskChange').then((m) => ({ default: m.UndoPanel })))

/** One task: its state, live event log, pull request and the actions it allows. */
export function TaskPage() {
  const { id = '' } = useParams()
  const { workspace } = useSession()
  const task = useLoad(() => get('/api/tasks/{id}', { params: { path: { id } } }), [id])
  const approvals = useLoad(async () => ((await get('/api/tool-approvals/pending', { params: { query: { limit: 200 } } })) ?? []).filter((a) => a.task_id === id), [id])
  const log = useEventLog('task', id)
  const action = useAction()
  const busy = action.busy
  const [message, setMessage] = useState('')

  // Status and approvals follow the workspace's topics.
  const reloadTask = task.reload
  const reloadApprovals = approvals.reload
  useEffect(() => (workspace ? watchTopic('tasks', workspace.id, (changed) => (!changed || changed === id) && reloadTask()) : undefined), [workspace, id, reloadTask])
  useEffect(() => (workspace ? watchTopic('approvals', workspace.id, () => reloadApprovals()) : undefined), [workspace, reloadApprovals])

  const act = (name: string, send: () => Promise<unknown>) =>
    action.run(name, async () => {
      await send()
      await Promise.all([task.reload(), approvals.reload()])
      return true
    })
  const step = (op: 'launch' | 'cancel' | 'rerun' | 'restart' | 'interrupt') => () => post(`/api/tasks/{id}/${op}`, { params: { path: { id } } })
  const [tab, setTab] = useState<string | null>('log')
  const decide = (approval: string, verdict: 'approve' | 'reject') => () =>
    post('/api/tool-approvals/{id}/decide', { params: { path: { id: approval } }, body: { verdict } })

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
            <Button variant="light" loading={busy === 'launch'} onClick={() => act('launch', step('launch'))}>
              Launch
            </Button>
          )}
          {t.status === 'running' && (
            <Button
              color="yellow"
              variant="light"
              loading={busy === 'interrupt'}
              onClick={() => act('interrupt', step('interrupt'))}
              title="Stop the agent's current step; it waits for your message"
              data-testid="interrupt-task"
            >
              Interrupt
            </Button>
          )}
          {running && (
            <Button color="red" variant="light" loading={busy === 'cancel'} onClick={() => act('cancel', step('cancel'))} data-testid="cancel-task">
              Cancel
            </Button>
          )}
          {!running && (
            <>
              <Button variant="light" loading={busy === 'rerun'} onClick={() => act('rerun', step('rerun'))}>
                Rerun
              </Button>
              <Button variant="light" loading={busy === 'restart'} onClick={() => act('restart', step('restart'))}>
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
              · {count(t.pr.files_changed, 'file')}, <Text span c="green">+{t.pr.insertions}</Text> <Text span c="red">−{t.pr.deletions}</Text>
            </Text>
          )}
        </Group>
      </Card>
      <ErrorNote error={approvals.error} />
      {(approvals.data ?? []).map((a) => (
        <Alert key={a.id} color="yellow" title={`The agent asks to run ${a.tool}`} data-testid="tool-approval">
          <Stack gap="xs">
            {a.reason && <Text size="sm">{a.reason}</Text>}
            <Code block>{JSON.stringify(a.arguments, null, 2)}</Code>
            <Group>
              <Button size="xs" loading={busy === `approve-${a.id}`} onClick={() => act(`approve-${a.id}`, decide(a.id, 'approve'))}>
                Approve
              </Button>
              <Button size="xs" color="red" variant="light" loading={busy === `reject-${a.id}`} onClick={() => act(`reject-${a.id}`, decide(a.id, 'reject'))}>
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
            act('intervene', () => post('/api/tasks/{id}/intervene', { params: { path: { id } }, body: { text: message } })).then((sent) => sent && setMessage(''))
          }}
        >
          <Group align="end">
            <Textarea label="Message the agent" autosize style={{ flex: 1 }} value={message} onChange={(e) => setMessage(e.currentTarget.value)} required data-testid="message-text" />
            <Button type="submit" loading={busy === 'intervene'} data-testid="message-send">
              Send
            </Button>
          </Group>
        </form>
      )}
      <Tabs value={tab} onChange={setTab} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="log">Event log</Tabs.Tab>
          {t.pr?.commit && (
            <Tabs.Tab value="change" data-testid="tab-change">
              Change
            </Tabs.Tab>
          )}
        </Tabs.List>
        <Tabs.Panel value="log" pt="xs">
          {log.error && <ErrorNote error={log.error} />}
          <EventLog events={log.list} loading={log.loading} height={420} name={`task-${t.id}-events`} />
        </Tabs.Panel>
        {t.pr?.commit && (
          <Tabs.Panel value="change" pt="xs">
            <Suspense fallback={<Loading />}>
              <Stack>
                {!running && <UndoPanel task={t} />}
                <ChangeView task={t} />
              </Stack>
            </Suspense>
          </Tabs.Panel>
        )}
      </Tabs>
    </Stack>
  )
}

