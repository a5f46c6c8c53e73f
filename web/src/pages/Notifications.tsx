// Every notification of the signed-in person (the active workspace's and
// their account's), newest first: chips by source and by state, a search of
// titles, and each one read, opened or deleted; "mark all read" for the rest.
import { Anchor, Button, Card, Chip, Group, Pagination, SegmentedControl, Stack, Text, TextInput, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link, useSearchParams } from 'react-router-dom'
import { del, get, post, put } from '../api'
import { watchNotifications } from '../live'
import { useSession } from '../session'
import { ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Source = 'approval' | 'gate' | 'proposal' | 'mention' | 'run_failed' | 'invite' | 'backlog'

export function Notifications() {
  const { workspace } = useSession()
  const [params, setParams] = useSearchParams()
  const source = (params.get('source') ?? '') as Source | ''
  const state = (params.get('state') ?? '') as 'unread' | 'read' | ''
  const page = Number(params.get('page') ?? '1') || 1
  const [q, setQ] = useState(params.get('q') ?? '')
  const set = (k: string, v: string) => {
    const next = new URLSearchParams(params)
    if (v) next.set(k, v)
    else next.delete(k)
    if (k !== 'page') next.delete('page')
    setParams(next)
  }
  const board = useLoad(
    () =>
      get('/api/notifications/board', {
        params: { query: { source: source || undefined, state: state || undefined, q: params.get('q') || undefined, page, page_size: 50 } },
      }),
    [workspace?.id, source, state, page, params.get('q')],
  )
  const reload = board.reload
  useEffect(() => watchNotifications(() => reload()), [reload])
  const act = useAction()
  const facets = board.data?.facets ?? {}
  const rows = board.data?.rows ?? []
  const pages = board.data ? Math.max(1, Math.ceil(board.data.total / board.data.page_size)) : 1
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Notifications</Title>
        <MailSetting />
        <Button size="xs" variant="light" onClick={() => act.run('all', async () => (await post('/notifications/read-all'), reload()))} data-testid="notifications-read-all">
          Mark all read
        </Button>
      </Group>
      <Group gap="xs">
        <Chip.Group multiple={false} value={state || 'any'} onChange={(v) => set('state', v === 'any' ? '' : (v as string))}>
          <Chip value="any" size="xs">
            Any
          </Chip>
          {(facets.state ?? []).map((f) => (
            <Chip key={f.value} value={f.value} size="xs" wrapperProps={{ 'data-testid': `notifications-state-${f.value}` }}>
              {f.label} · {f.count}
            </Chip>
          ))}
        </Chip.Group>
        <Chip.Group multiple={false} value={source || 'all'} onChange={(v) => set('source', v === 'all' ? '' : (v as string))}>
          <Chip value="all" size="xs">
            Every source
          </Chip>
          {(facets.source ?? [])
            .filter((f) => f.count > 0 || f.value === source)
            .map((f) => (
              <Chip key={f.value} value={f.value} size="xs" wrapperProps={{ 'data-testid': `notifications-source-${f.value}` }}>
                {f.label} · {f.count}
              </Chip>
            ))}
        </Chip.Group>
        <form
          onSubmit={(e) => {
            e.preventDefault()
            set('q', q.trim())
          }}
        >
          <TextInput size="xs" placeholder="Search titles" value={q} onChange={(e) => setQ(e.currentTarget.value)} maxLength={200} data-testid="notifications-search" />
        </form>
      </Group>
      <ErrorNote error={board.error || act.error} />
      {board.loading && !board.data && <Loading />}
      {board.data && rows.length === 0 && <Text c="dimmed">No notifications here.</Text>}
      {rows.map((n) => (
        <Card key={n.id} withBorder padding="xs" data-testid="notification" data-read={n.read}>
          <Group justify="space-between" wrap="nowrap">
            <Stack gap={0} miw={0}>
              <Anchor component={Link} to={n.link || '/inbox'} size="sm" fw={n.read ? 400 : 600}>
                {n.title}
              </Anchor>
              {n.body && (
                <Text size="xs" c="dimmed" lineClamp={2}>
                  {n.body}
                </Text>
              )}
              <Text size="xs" c="dimmed">
                {n.source.replace('_', ' ')} · {when(n.created_at)}
              </Text>
            </Stack>
            <Group gap="xs" wrap="nowrap">
              {!n.read && (
                <Button size="compact-xs" variant="light" onClick={() => act.run(n.id, async () => (await put('/notifications/{id}/read', { params: { path: { id: n.id } } }), reload()))} data-testid="notification-read">
                  Mark read
                </Button>
              )}
              <Button size="compact-xs" variant="subtle" color="red" onClick={() => act.run(n.id, async () => (await del('/notifications/{id}', { params: { path: { id: n.id } } }), reload()))} data-testid="notification-delete">
                Delete
              </Button>
            </Group>
          </Group>
        </Card>
      ))}
      {pages > 1 && <Pagination value={page} total={pages} onChange={(p) => set('page', String(p))} size="sm" />}
    </Stack>
  )
}

/** Whether notifications are also mailed: off, decisions (approvals, gates, proposals) or all. */
function MailSetting() {
  const setting = useLoad(() => get('/api/notifications/settings'), [])
  const act = useAction()
  const save = (mail: string) =>
    act.run('mail', async () => setting.setData(await put('/api/notifications/settings', { body: { mail: mail as 'off' | 'decisions' | 'all' } })))
  return (
    <Group gap="xs">
      <Text size="sm" c="dimmed">
        Also by mail
      </Text>
      <SegmentedControl
        size="xs"
        value={setting.data?.mail ?? 'off'}
        onChange={save}
        disabled={!setting.data || act.busy === 'mail'}
        data={[
          { value: 'off', label: 'Off' },
          { value: 'decisions', label: 'Decisions' },
          { value: 'all', label: 'Everything' },
        ]}
        data-testid="mail-setting"
      />
      <ErrorNote error={act.error || setting.error} />
    </Group>
  )
}
