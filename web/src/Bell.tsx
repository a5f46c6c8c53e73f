// The shell's notification bell: the signed-in person's unread count, kept
// current by their personal realtime topic, and a menu of the latest with
// "mark all read" and the way to the inbox.
import { Badge, Button, Group, Menu, Text } from '@mantine/core'
import { useEffect } from 'react'
import { Link, useNavigate } from 'react-router-dom'
import { get, post, put } from './api'
import { watchNotifications, watchTopic } from './live'
import { useLoad, when } from './ui'

export function Bell({ workspace }: { workspace: string }) {
  const page = useLoad(() => get('/notifications', { params: { query: { limit: 8 } } }), [workspace])
  const reload = page.reload
  useEffect(() => watchNotifications(() => reload()), [reload])
  const navigate = useNavigate()
  const unread = page.data?.facets.unread ?? 0
  const items = page.data?.items ?? []
  return (
    <Menu position="bottom-end" width={380}>
      <Menu.Target>
        <Button size="xs" variant={unread > 0 ? 'light' : 'subtle'} color={unread > 0 ? 'orange' : 'gray'} data-testid="bell" aria-label={`${unread} unread notifications`}>
          Notifications
          {unread > 0 && (
            <Badge ml={6} size="sm" color="orange" variant="filled" data-testid="bell-count">
              {unread > 999 ? '999+' : unread}
            </Badge>
          )}
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        {items.length === 0 && <Menu.Label>Nothing yet</Menu.Label>}
        {items.map((n) => (
          <Menu.Item
            key={n.id}
            data-testid="bell-item"
            onClick={async () => {
              if (!n.read) await put('/notifications/{id}/read', { params: { path: { id: n.id } } }).catch(() => undefined)
              navigate(n.link || '/inbox')
            }}
          >
            <Group justify="space-between" wrap="nowrap" gap="xs">
              <Text size="sm" fw={n.read ? 400 : 600} lineClamp={1}>
                {n.title}
              </Text>
              <Text size="xs" c="dimmed" style={{ whiteSpace: 'nowrap' }}>
                {when(n.created_at)}
              </Text>
            </Group>
            {n.body && (
              <Text size="xs" c="dimmed" lineClamp={2}>
                {n.body}
              </Text>
            )}
          </Menu.Item>
        ))}
        <Menu.Divider />
        <Menu.Item component={Link} to="/inbox" data-testid="bell-inbox">
          Open the inbox
        </Menu.Item>
        <Menu.Item component={Link} to="/inbox/notifications" data-testid="bell-all">
          All notifications
        </Menu.Item>
        <Menu.Item
          disabled={unread === 0}
          data-testid="bell-read-all"
          onClick={async () => {
            await post('/notifications/read-all').catch(() => undefined)
            reload()
          }}
        >
          Mark all read
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  )
}

/** The inbox's nav label: how many decisions wait for the signed-in person, kept current. */
export function InboxLabel({ workspace }: { workspace: string }) {
  const count = useLoad(() => get('/api/inbox/decisions/count'), [workspace])
  const reload = count.reload
  useEffect(() => {
    const offs = [watchTopic('approvals', workspace, () => reload()), watchTopic('proposals', workspace, () => reload()), watchNotifications(() => reload())]
    return () => offs.forEach((off) => off())
  }, [workspace, reload])
  const n = Number(count.data ?? 0)
  return (
    <Group gap={6} wrap="nowrap">
      Inbox
      {n > 0 && (
        <Badge size="xs" color="yellow" variant="filled" data-testid="inbox-decisions">
          {n}
        </Badge>
      )}
    </Group>
  )
}
