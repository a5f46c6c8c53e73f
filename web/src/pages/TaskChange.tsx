// A finished task's published change: its files and patch, and the undo
// actions that reverse it (each waits out its grace period, counted down
// here, unless run now).
import { Alert, Badge, Button, Card, Code, Group, ScrollArea, Stack, Table, Text } from '@mantine/core'
import { useEffect, useState } from 'react'
import { get, post, type Schemas, type Task } from '../api'
import { ErrorNote, Loading, count, useAction, useLoad, when } from '../ui'

type UndoAction = Schemas['Action']

/** The files and the patch of the task's published commit. */
export function ChangeView({ task }: { task: Task }) {
  const change = useLoad(() => get('/api/tasks/{id}/diff', { params: { path: { id: task.id } } }), [task.id, task.pr?.commit])
  if (change.loading && !change.data) return <Loading label="Reading the change…" />
  if (!change.data) return <ErrorNote error={change.error} />
  const c = change.data
  return (
    <Stack gap="xs" data-testid="change">
      <Text size="sm" c="dimmed">
        {count((c.files ?? []).length, 'file')} changed on <Code>{c.branch}</Code> against <Code>{c.base}</Code>, commit <Code>{c.commit.slice(0, 12)}</Code>
      </Text>
      <Table withTableBorder fz="xs" data-testid="change-files">
        <Table.Tbody>
          {(c.files ?? []).map((f) => (
            <Table.Tr key={f.path}>
              <Table.Td ff="monospace">{f.path}</Table.Td>
              <Table.Td w={120}>
                {f.binary ? (
                  <Badge size="xs" color="gray">
                    binary
                  </Badge>
                ) : (
                  <>
                    <Text span c="green" fz="xs">
                      +{f.insertions}
                    </Text>{' '}
                    <Text span c="red" fz="xs">
                      −{f.deletions}
                    </Text>
                  </>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <ScrollArea h={420} type="auto">
        <pre style={{ margin: 0, fontSize: 'var(--mantine-font-size-xs)' }} data-testid="patch">
          {c.patch.split('\n').map((line, i) => (
            <div key={i} style={{ color: patchColor(line), whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
              {line || ' '}
            </div>
          ))}
        </pre>
      </ScrollArea>
      {c.truncated && <Alert color="yellow">The patch is longer than the console shows (512 KiB); the files above are all of them.</Alert>}
    </Stack>
  )
}

function patchColor(line: string): string | undefined {
  if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ') || line.startsWith('index ')) return 'var(--mantine-color-dimmed)'
  if (line.startsWith('+')) return 'var(--mantine-color-green-7)'
  if (line.startsWith('-')) return 'var(--mantine-color-red-7)'
  if (line.startsWith('@@')) return 'var(--mantine-color-blue-6)'
  return undefined
}

const kinds: { kind: UndoAction['kind']; label: string; what: string }[] = [
  { kind: 'revert_commit', label: 'Revert the commit', what: 'adds a commit that reverts the task’s on its branch' },
  { kind: 'delete_branch', label: 'Delete the branch', what: 'deletes the task’s branch on the remote' },
  { kind: 'close_pr', label: 'Close the pull request', what: 'closes the open pull request without merging' },
]

/** Undo: schedule a reversal, watch its grace period count down, run it now. */
export function UndoPanel({ task }: { task: Task }) {
  const actions = useLoad(async () => (await get('/api/tasks/{id}/undo', { params: { path: { id: task.id } } })) ?? [], [task.id])
  const action = useAction()
  const now = useNow(1000)
  const reload = actions.reload
  const graced = (actions.data ?? []).some((a) => a.status === 'grace' || a.status === 'executing')
  // While an action waits or runs, look again every few seconds: the sweep runs it when its grace ends.
  useEffect(() => {
    if (!graced) return
    const t = setInterval(reload, 3000)
    return () => clearInterval(t)
  }, [graced, reload])
  const act = (name: string, send: () => Promise<unknown>) =>
    action.run(name, async () => {
      await send()
      await reload()
    })
  const open = task.pr?.opened_at && !task.pr?.closed_at
  return (
    <Card withBorder data-testid="undo">
      <Stack gap="xs">
        <Text fw={600}>Undo the published change</Text>
        <Group gap="xs">
          {kinds
            .filter((k) => k.kind !== 'close_pr' || open)
            .map((k) => (
              <Button
                key={k.kind}
                size="xs"
                variant="light"
                color="orange"
                title={k.what}
                loading={action.busy === k.kind}
                onClick={() => act(k.kind, () => post('/api/tasks/{id}/undo', { params: { path: { id: task.id } }, body: { kind: k.kind } }))}
                data-testid={`undo-${k.kind}`}
              >
                {k.label}
              </Button>
            ))}
        </Group>
        <ErrorNote error={action.error || actions.error} />
        {(actions.data ?? []).map((a) => {
          const left = Math.max(0, Math.ceil((new Date(a.grace_until).getTime() - now) / 1000))
          return (
            <Group key={a.id} gap="xs" data-testid={`undo-action-${a.kind}`} data-status={a.status}>
              <Badge color={a.status === 'executed' ? 'teal' : a.status === 'failed' ? 'red' : 'yellow'}>{a.status}</Badge>
              <Text size="sm">{kinds.find((k) => k.kind === a.kind)?.label ?? a.kind}</Text>
              {a.status === 'grace' && (
                <>
                  <Text size="sm" c="dimmed" data-testid="undo-countdown">
                    runs in {left} s
                  </Text>
                  <Button size="compact-xs" loading={action.busy === `run-${a.id}`} onClick={() => act(`run-${a.id}`, () => post('/api/undo/{id}/execute', { params: { path: { id: a.id } } }))} data-testid="undo-run-now">
                    Run now
                  </Button>
                </>
              )}
              {a.result && <Text size="sm">{a.result}</Text>}
              {a.error && (
                <Text size="sm" c="red">
                  {a.error}
                </Text>
              )}
              <Text size="xs" c="dimmed">
                {when(a.created_at)}
              </Text>
            </Group>
          )
        })}
      </Stack>
    </Card>
  )
}

/** The time now, moving every `every` ms. */
function useNow(every: number) {
  const [now, setNow] = useState(Date.now())
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), every)
    return () => clearInterval(t)
  }, [every])
  return now
}
