// The inbox: what waits for the signed-in person in the workspace — tool
// approvals, human gates of their runs, proposals, unread notifications —
// newest first, each decided in place through its own endpoint (the same
// decisions as on its own page). Live: any change to a source refetches.
import { Anchor, Badge, Button, Card, Chip, Group, Stack, Text, Textarea, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link, useSearchParams } from 'react-router-dom'
import { del, get, post, put, type Schemas } from '../api'
import { watchNotifications, watchTopic } from '../live'
import { useSession } from '../session'
import { count, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Item = Schemas['InboxItem']
type Source = 'approval' | 'gate' | 'proposal' | 'notification'

const label: Record<Source, string> = { approval: 'Tool approval', gate: 'Human gate', proposal: 'Proposal', notification: 'Notification' }
const color: Record<Source, string> = { approval: 'yellow', gate: 'grape', proposal: 'blue', notification: 'gray' }

export function Inbox() {
  const { workspace } = useSession()
  const ws = workspace!.id
  const [params, setParams] = useSearchParams()
  const source = (params.get('source') ?? '') as Source | ''
  const board = useLoad(() => get('/api/inbox/board', { params: { query: { source: source || undefined, page_size: 100 } } }), [ws, source])
  const reload = board.reload
  useEffect(() => {
    const offs = [
      watchTopic('approvals', ws, () => reload()),
      watchTopic('proposals', ws, () => reload()),
      watchTopic('runs', ws, () => reload()),
      watchNotifications(() => reload()),
    ]
    return () => offs.forEach((off) => off())
  }, [ws, reload])
  const act = useAction()
  const [rejecting, setRejecting] = useState<string | null>(null)
  const [note, setNote] = useState('')
  const facets = board.data?.facets?.source ?? []
  const rows = board.data?.rows ?? []

  const decide = (it: Item, approve: boolean) =>
    act.run(`${it.id}:${approve ? 'approve' : 'reject'}`, async () => {
      switch (it.source) {
        case 'approval':
          await post('/api/tool-approvals/{id}/decide', { params: { path: { id: it.id } }, body: { verdict: approve ? 'approve' : 'reject' } })
          break
        case 'gate':
          await post('/api/workflows/runs/{run_id}/nodes/{node_key}/decision', {
            params: { path: { run_id: it.id, node_key: it.node_key ?? '' } },
            body: { decision: approve ? 'approve' : 'reject' },
          })
          break
        case 'proposal':
          if (approve) await post('/api/proposals/{id}/approve', { params: { path: { id: it.id } } })
          else await post('/api/proposals/{id}/reject', { params: { path: { id: it.id } }, body: { note: note.trim() || undefined } })
          setRejecting(null)
          setNote('')
          break
      }
      await reload()
    })

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Inbox</Title>
        {board.data && (
          <Text c="dimmed" data-testid="inbox-actionable">
            {board.data.actionable === 0 ? 'No decision waits for you' : `${count(board.data.actionable, 'decision')} wait for you`}
          </Text>
        )}
      </Group>
      <Chip.Group multiple={false} value={source || 'all'} onChange={(v) => setParams(v === 'all' ? {} : { source: v as string })}>
        <Group gap="xs">
          <Chip value="all" size="sm" wrapperProps={{ "data-testid": "inbox-chip-all" }}>
            All
          </Chip>
          {facets.map((f) => (
            <Chip key={f.value} value={f.value} size="sm" wrapperProps={{ "data-testid": `inbox-chip-${f.value}` }}>
              {f.label} · {f.count}
            </Chip>
          ))}
        </Group>
      </Chip.Group>
      <ErrorNote error={board.error || act.error} />
      {board.loading && !board.data && <Loading />}
      {board.data && rows.length === 0 && <Text c="dimmed">Nothing waits here.</Text>}
      {rows.map((it) => (
        <Card key={`${it.source}-${it.id}-${it.node_key ?? ''}`} withBorder padding="sm" data-testid="inbox-item" data-source={it.source}>
          <Group justify="space-between" align="start" wrap="nowrap">
            <Stack gap={2} miw={0}>
              <Group gap="xs">
                <Badge color={color[it.source as Source]} variant="light">
                  {label[it.source as Source]}
                  {it.kind ? ` · ${it.kind.replace('_', ' ')}` : ''}
                </Badge>
                <Anchor component={Link} to={it.link} fw={600} size="sm">
                  {it.title}
                </Anchor>
              </Group>
              {it.body && (
                <Text size="sm" c="dimmed" lineClamp={3}>
                  {it.body}
                </Text>
              )}
              <Text size="xs" c="dimmed">
                {when(it.created_at)}
              </Text>
            </Stack>
            <Group gap="xs" wrap="nowrap">
              {it.source !== 'notification' && it.actionable && (
                <>
                  <Button size="xs" color="green" loading={act.busy === `${it.id}:approve`} onClick={() => decide(it, true)} data-testid="inbox-approve">
                    Approve
                  </Button>
                  <Button
                    size="xs"
                    color="red"
                    variant="light"
                    loading={act.busy === `${it.id}:reject`}
                    onClick={() => (it.source === 'proposal' ? setRejecting(it.id) : decide(it, false))}
                    data-testid="inbox-reject"
                  >
                    Reject
                  </Button>
                </>
              )}
              {it.source === 'proposal' && !it.actionable && (
                <Text size="xs" c="dimmed">
                  a workspace admin decides
                </Text>
              )}
              {it.source === 'notification' && (
                <>
                  <Button
                    size="xs"
                    variant="light"
                    data-testid="inbox-read"
                    onClick={() => act.run(`${it.id}:read`, async () => (await put('/notifications/{id}/read', { params: { path: { id: it.id } } }), reload()))}
                  >
                    Mark read
                  </Button>
                  <Button
                    size="xs"
                    variant="subtle"
                    color="red"
                    onClick={() => act.run(`${it.id}:delete`, async () => (await del('/notifications/{id}', { params: { path: { id: it.id } } }), reload()))}
                  >
                    Delete
                  </Button>
                </>
              )}
            </Group>
          </Group>
          {rejecting === it.id && (
            <Stack gap="xs" mt="sm">
              <Textarea label="A note for the audit log (optional)" value={note} onChange={(e) => setNote(e.currentTarget.value)} maxLength={2000} autosize minRows={2} data-testid="inbox-reject-note" />
              <Group gap="xs">
                <Button size="xs" color="red" onClick={() => decide(it, false)} loading={act.busy === `${it.id}:reject`} data-testid="inbox-reject-confirm">
                  Reject the proposal
                </Button>
                <Button size="xs" variant="default" onClick={() => setRejecting(null)}>
                  Cancel
                </Button>
              </Group>
            </Stack>
          )}
        </Card>
      ))}
    </Stack>
  )
}
