import { Anchor, Button, Card, Group, Stack, Text, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link } from 'react-router-dom'
import { get, type Schemas } from '../api'
import { watchTopic } from '../live'
import { useSession } from '../session'
import { ErrorNote, Loading, Status, useAction, useLoad, when } from '../ui'

type FeedItem = Schemas['FeedItem']

/** What an approval's decision reads as. */
const decided: Record<string, string> = { approved: 'approved', rejected: 'rejected', timed_out: 'timed out', superseded: 'superseded' }

/** One line of the feed, as a sentence: who did what, where. */
function Sentence({ it }: { it: FeedItem }) {
  const who = it.actor?.name ?? ''
  switch (it.kind) {
    case 'task':
      return (
        <Text size="sm">
          {who || 'A workflow'} started the task{' '}
          <Anchor component={Link} to={`/tasks/${it.id}`}>
            {it.title}
          </Anchor>{' '}
          in {it.project}
        </Text>
      )
    case 'workflow_run':
      return (
        <Text size="sm">
          {it.via ? `A ${it.via === 'schedule' ? 'schedule' : 'webhook'}` : who || 'A trigger'} ran the workflow{' '}
          <Anchor component={Link} to={`/workflows/runs/${it.id}`}>
            {it.title}
          </Anchor>{' '}
          in {it.project}
          {it.via && who ? ` (a trigger of ${who}'s)` : ''}
        </Text>
      )
    default:
      return (
        <Text size="sm">
          {it.status === 'timed_out' || it.status === 'superseded' ? (
            <>
              A request to run <code>{it.title}</code> was {decided[it.status]}
            </>
          ) : (
            <>
              {who || 'Someone'} {decided[it.status] ?? it.status} running <code>{it.title}</code>
            </>
          )}{' '}
          for the task{' '}
          <Anchor component={Link} to={`/tasks/${it.task_id}`}>
            {it.task_title}
          </Anchor>{' '}
          in {it.project}
        </Text>
      )
  }
}

/** The workspace's activity: tasks started, workflow runs and tool calls decided, newest first, live. */
export default function Activity() {
  const { workspace } = useSession()
  const first = useLoad(() => get('/api/activity'), [workspace?.id])
  const [older, setOlder] = useState<{ items: FeedItem[]; next: string } | null>(null)
  const more = useAction()
  // Live: a run starting or ending anywhere in the workspace refreshes the newest page.
  const { reload } = first
  useEffect(() => (workspace ? watchTopic('runs', workspace.id, () => reload()) : undefined), [workspace, reload])
  useEffect(() => setOlder(null), [workspace?.id])

  if (first.loading && !first.data) return <Loading label="Loading the activity…" />
  const items = [...(first.data?.items ?? []), ...(older?.items ?? []).filter((o) => !(first.data?.items ?? []).some((i) => i.id === o.id))]
  const next = older ? older.next : (first.data?.next ?? '')
  const loadMore = () =>
    more.run('more', async () => {
      const p = await get('/api/activity', { params: { query: { before: next } } })
      setOlder({ items: [...(older?.items ?? []), ...(p.items ?? [])], next: p.next })
    })
  return (
    <Stack maw={900}>
      <Title order={2}>Activity</Title>
      <ErrorNote error={first.error ?? more.error} />
      {items.length === 0 ? (
        <Text c="dimmed">Nothing has happened in this workspace yet: start a task or run a workflow.</Text>
      ) : (
        <Card withBorder p={0} data-testid="activity">
          {items.map((it) => (
            <Group key={`${it.kind}:${it.id}`} justify="space-between" wrap="nowrap" px="md" py={8} data-testid={`activity-${it.kind}`}
              style={{ borderBottom: '1px solid var(--mantine-color-default-border)' }}>
              <Sentence it={it} />
              <Group gap="xs" wrap="nowrap" style={{ flexShrink: 0 }}>
                {it.kind !== 'approval' && <Status status={it.status} />}
                <Text size="xs" c="dimmed" title={it.at}>
                  {when(it.at)}
                </Text>
              </Group>
            </Group>
          ))}
        </Card>
      )}
      {next && (
        <Button variant="default" onClick={loadMore} loading={more.busy === 'more'} data-testid="activity-more" w="fit-content">
          Older
        </Button>
      )}
    </Stack>
  )
}
