// The shell's count of tool calls waiting for a decision in the workspace,
// kept current by the hub's approvals topic; each links to its task, where
// it is approved or rejected. With none waiting it shows nothing (and still
// listens, which keeps the live connection up on every page).
import { Button, Menu, Text } from '@mantine/core'
import { useEffect } from 'react'
import { Link } from 'react-router-dom'
import { get } from './api'
import { watchTopic } from './live'
import { useLoad } from './ui'

export function ApprovalsWaiting({ workspace }: { workspace: string }) {
  const pending = useLoad(() => get('/api/tool-approvals/pending', { params: { query: { limit: 200 } } }), [workspace])
  const reload = pending.reload
  useEffect(() => watchTopic('approvals', workspace, () => reload()), [workspace, reload])
  const list = pending.data ?? []
  if (list.length === 0) return null
  return (
    <Menu position="bottom-end" width={360}>
      <Menu.Target>
        <Button size="xs" variant="light" color="yellow" data-testid="approvals-waiting">
          {list.length === 200 ? '200+' : list.length} waiting for approval
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        {list.slice(0, 10).map((a) => (
          <Menu.Item key={a.id} component={Link} to={`/tasks/${a.task_id}`}>
            <Text size="sm" fw={600}>
              {a.tool}
            </Text>
            <Text size="xs" c="dimmed" lineClamp={2}>
              {a.reason}
            </Text>
          </Menu.Item>
        ))}
        {list.length > 10 && <Menu.Label>and {list.length - 10} more</Menu.Label>}
      </Menu.Dropdown>
    </Menu>
  )
}
