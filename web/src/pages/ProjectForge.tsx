// A forge project's forge tab: what Slipway installed there (the webhook
// that tells it about pull requests, issues and checks; installing it
// again answers the one it has) and the repository's open issues, read
// from the forge when the tab opens.
import { Alert, Anchor, Badge, Button, Card, Group, Stack, Table, Text } from '@mantine/core'
import { useState } from 'react'
import { Link } from 'react-router-dom'
import { get, post, type Project } from '../api'
import { count, ErrorNote, Loading, useAction, useLoad, when } from '../ui'
import { projectPage } from './ProjectImport'

export function ForgeSection({ p }: { p: Project }) {
  const path = { params: { path: { id: p.id } } }
  const automations = useLoad(async () => (await get('/api/projects/{id}/automations', path)) ?? [], [p.id])
  const issues = useLoad(async () => (await get('/api/projects/{id}/issues', path)) ?? [], [p.id])
  const action = useAction()
  const [note, setNote] = useState('')

  const setup = () =>
    action.run('setup', async () => {
      setNote('')
      const had = automations.data ?? []
      const a = await post('/api/projects/{id}/automation_setup', path)
      setNote(had.some((x) => x.id === a.id) ? `The webhook was installed before (hook ${a.forge_hook_id} on the forge).` : `Webhook installed (hook ${a.forge_hook_id} on the forge).`)
      await automations.reload()
    })

  const installed = automations.data ?? []
  const open = issues.data ?? []
  return (
    <Stack maw={900}>
      <Card withBorder>
        <Stack gap="xs">
          <Group justify="space-between">
            <Text fw={600}>Automations</Text>
            <Button size="xs" onClick={setup} loading={action.busy === 'setup'} data-testid="project-automation-setup">
              Install webhook
            </Button>
          </Group>
          <Text size="sm" c="dimmed">
            A webhook on the repository tells Slipway about its pull requests, issues and checks, so that the backlog follows them. The forge must be able to
            reach this server's public address.
          </Text>
          <ErrorNote error={action.error} />
          {note && (
            <Alert color="teal" data-testid="project-automation-note">
              {note}
            </Alert>
          )}
          <ErrorNote error={automations.error} />
          {automations.loading && !automations.data ? (
            <Loading />
          ) : installed.length === 0 ? (
            <Text size="sm" c="dimmed" data-testid="project-automations" data-count={0}>
              Nothing installed on the forge yet.
            </Text>
          ) : (
            <Table data-testid="project-automations" data-count={installed.length}>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Kind</Table.Th>
                  <Table.Th>Hook on the forge</Table.Th>
                  <Table.Th>Installed</Table.Th>
                  <Table.Th>Last delivery</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {installed.map((a) => (
                  <Table.Tr key={a.id} data-testid={`project-automation-${a.forge_hook_id}`}>
                    <Table.Td>
                      {a.kind} · {a.provider}
                    </Table.Td>
                    <Table.Td ff="monospace">{a.forge_hook_id}</Table.Td>
                    <Table.Td>{when(a.created_at)}</Table.Td>
                    <Table.Td>{a.last_delivery_at ? when(a.last_delivery_at) : 'none yet'}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )}
        </Stack>
      </Card>
      <Card withBorder>
        <Stack gap="xs">
          <Group justify="space-between">
            <Group gap="xs">
              <Text fw={600}>Open issues</Text>
              {issues.data && <Badge variant="light">{count(open.length, 'issue')}</Badge>}
            </Group>
            <Group gap="xs">
              <Button size="xs" variant="subtle" onClick={() => issues.reload()} data-testid="project-issues-reload">
                Read again
              </Button>
              <Button size="xs" variant="light" component={Link} to={projectPage(p.id, 'backlog')} data-testid="project-open-backlog">
                Backlog
              </Button>
            </Group>
          </Group>
          <ErrorNote error={issues.error} />
          {issues.loading && !issues.data ? (
            <Loading label="Reading the issues from the forge…" />
          ) : issues.error ? null : (
            <Stack gap={4} data-testid="project-issues" data-count={open.length}>
              {open.length === 0 && (
                <Text size="sm" c="dimmed">
                  The repository has no open issue.
                </Text>
              )}
              {open.map((i) => (
                <Group key={i.number} gap="xs" wrap="nowrap" data-testid={`project-issue-${i.number}`}>
                  <Text size="sm" c="dimmed" ff="monospace">
                    #{i.number}
                  </Text>
                  <Anchor href={i.url} target="_blank" rel="noreferrer" size="sm">
                    {i.title}
                  </Anchor>
                  {(i.labels ?? []).map((l) => (
                    <Badge key={l} size="xs" variant="outline" tt="none">
                      {l}
                    </Badge>
                  ))}
                  <Text size="xs" c="dimmed">
                    {when(i.updated_at)}
                  </Text>
                </Group>
              ))}
            </Stack>
          )}
        </Stack>
      </Card>
    </Stack>
  )
}
