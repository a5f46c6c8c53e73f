// The active workspace's App error page: what a visitor of one of its Apps
// sees when the App is not deployed or is failing and has no page of its
// own. Its owner and admins edit it; members read it.
import { Card, Stack, Text } from '@mantine/core'
import { useCallback } from 'react'
import { get, put } from '../api'
import { useSession } from '../session'
import { ErrorPageEditor } from './AdminErrorPage'

export function WorkspaceErrorPageCard() {
  const { workspace } = useSession()
  const id = workspace?.id ?? ''
  const admin = workspace?.role === 'owner' || workspace?.role === 'admin'
  // The workspace goes as X-Workspace-Id; a new one loads its own page.
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const load = useCallback(() => get('/api/workspace/error-page'), [id])
  const save = useCallback((page: Record<string, unknown>) => put('/api/workspace/error-page', { body: page }), [])
  if (!workspace) return null
  return (
    <Card withBorder data-testid="workspace-error-page-card">
      <Stack gap="xs">
        <Text fw={600}>App error page</Text>
        <Text size="sm" c="dimmed">
          Shown by the workspace's Apps when they are not deployed or are failing, unless an App has its own page. Without one here, the instance default
          applies. {!admin && 'Only the workspace’s owner or admins can change it.'}
        </Text>
        <ErrorPageEditor key={id} load={load} save={save} readOnly={!admin} testid="workspace-error-page" />
      </Stack>
    </Card>
  )
}
