// Email into workflows: the workspace's plus addresses (each starts a
// workflow), and the mail that came to an alias no trigger has — routed
// from here to a workflow (a new alias, the message back to the inbox) or
// deleted. Unrouted mail is for workspace admins.
import { Alert, Anchor, Badge, Button, Card, Code, Group, Modal, NativeSelect, Stack, Table, Text, TextInput, Title } from '@mantine/core'
import { useState } from 'react'
import { Link } from 'react-router-dom'
import { del, get, post, type Schemas } from '../api'
import { useSession } from '../session'
import { Copy, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Unrouted = Schemas['UnroutedEmail']

export default function Email() {
  const { workspace } = useSession()
  const unrouted = useLoad(() => get('/api/workflows/email-unrouted'), [workspace?.id])
  const aliases = useLoad(
    async () => (workspace ? get('/api/workspaces/{wid}/email_aliases', { params: { path: { wid: workspace.id }, query: { limit: 200 } } }) : null),
    [workspace?.id],
  )
  const workflows = useLoad(() => get('/api/workflows'), [workspace?.id])
  const workflowName = new Map((workflows.data ?? []).map((w) => [w.id, w.name]))
  const action = useAction()
  const [routing, setRouting] = useState<Unrouted | null>(null)

  const remove = (m: Unrouted) =>
    action.run(`delete-${m.resource_id}-${m.uid}`, async () => {
      await del('/api/workflows/email-unrouted/{uid}', { params: { path: { uid: m.uid }, query: { resource_id: m.resource_id } } })
      await unrouted.reload()
    })

  return (
    <Stack>
      <Title order={2}>Email</Title>
      <Text c="dimmed" size="sm">
        An email trigger gives a workflow a plus address on a mailbox (an imap resource): mail to it starts a run with the message as its input and
        its attachments as files. Add one on a <Anchor component={Link} to="/workflows">workflow</Anchor>'s page.
      </Text>

      <Card withBorder data-testid="unrouted">
        <Stack gap="xs">
          <Group justify="space-between">
            <Text fw={600}>Unrouted email</Text>
            <Button size="xs" variant="default" loading={unrouted.loading} onClick={() => unrouted.reload()}>
              Refresh
            </Button>
          </Group>
          <Text size="xs" c="dimmed">
            Mail to an alias no trigger has is moved to the mailbox's unrouted folder. Route it to a workflow (the alias becomes its address, and
            the message goes back to the inbox, where it starts a run) or delete it.
          </Text>
          {(unrouted.data?.errors ?? []).map((e) => (
            <Alert key={e.resource_id} color="orange" data-testid="mailbox-error">
              {e.mailbox}: {e.error}
            </Alert>
          ))}
          {unrouted.loading && !unrouted.data ? (
            <Loading label="Reading the mailboxes…" />
          ) : (unrouted.data?.items ?? []).length === 0 ? (
            !unrouted.error && (
              <Text size="sm" c="dimmed" data-testid="no-unrouted">
                No unrouted mail.
              </Text>
            )
          ) : (
            <Table fz="sm">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Received</Table.Th>
                  <Table.Th>From</Table.Th>
                  <Table.Th>To alias</Table.Th>
                  <Table.Th>Subject</Table.Th>
                  <Table.Th>Mailbox</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {(unrouted.data?.items ?? []).map((m) => (
                  <Table.Tr key={`${m.resource_id}-${m.uid}`} data-testid={`unrouted-${m.subject}`}>
                    <Table.Td>{when(m.date)}</Table.Td>
                    <Table.Td>{m.from}</Table.Td>
                    <Table.Td>{m.alias ? <Badge variant="light">{m.alias}</Badge> : <Text size="xs" c="dimmed">none</Text>}</Table.Td>
                    <Table.Td>{m.subject}</Table.Td>
                    <Table.Td>{m.mailbox}</Table.Td>
                    <Table.Td>
                      <Group gap={4} wrap="nowrap">
                        <Button size="compact-xs" variant="light" onClick={() => setRouting(m)} data-testid="route">
                          Route to a workflow
                        </Button>
                        <Button
                          size="compact-xs"
                          variant="light"
                          color="red"
                          loading={action.busy === `delete-${m.resource_id}-${m.uid}`}
                          onClick={() => remove(m)}
                          data-testid="delete-unrouted"
                        >
                          Delete
                        </Button>
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )}
          <ErrorNote error={unrouted.error || action.error} />
        </Stack>
      </Card>

      <Card withBorder data-testid="aliases">
        <Stack gap="xs">
          <Text fw={600}>Addresses</Text>
          {aliases.loading && !aliases.data ? (
            <Loading />
          ) : (aliases.data?.items ?? []).length === 0 ? (
            <Text size="sm" c="dimmed">
              No workflow has an address yet.
            </Text>
          ) : (
            <Table fz="sm">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Address</Table.Th>
                  <Table.Th>Workflow</Table.Th>
                  <Table.Th>Since</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {(aliases.data?.items ?? []).map((a) => (
                  <Table.Tr key={a.id} data-testid={`alias-${a.alias}`}>
                    <Table.Td>
                      <Group gap={4} wrap="nowrap">
                        <Code>{a.address}</Code>
                        <Copy value={a.address} label="Copy" />
                      </Group>
                    </Table.Td>
                    <Table.Td>
                      <Anchor component={Link} to={`/workflows/${a.workflow_id}`}>
                        {workflowName.get(a.workflow_id) ?? a.workflow_id}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{when(a.created_at)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )}
          <ErrorNote error={aliases.error || workflows.error} />
        </Stack>
      </Card>

      <Modal opened={!!routing} onClose={() => setRouting(null)} title="Route to a workflow">
        {routing && (
          <RouteForm
            message={routing}
            workflows={(workflows.data ?? []).map((w) => ({ value: w.id, label: w.name }))}
            onDone={async () => {
              setRouting(null)
              await Promise.all([unrouted.reload(), aliases.reload()])
            }}
          />
        )}
      </Modal>
    </Stack>
  )
}

function RouteForm({ message, workflows, onDone }: { message: Unrouted; workflows: { value: string; label: string }[]; onDone: () => Promise<void> }) {
  const [workflow, setWorkflow] = useState(workflows[0]?.value ?? '')
  const [slug, setSlug] = useState(message.alias)
  const action = useAction()
  const submit = (e: React.FormEvent) => {
    e.preventDefault()
    action.run('route', async () => {
      await post('/api/workflows/email-unrouted/{uid}/create-alias', {
        params: { path: { uid: message.uid } },
        body: { workflow_id: workflow, resource_id: message.resource_id, ...(slug.trim() ? { slug: slug.trim() } : {}) },
      })
      await onDone()
    })
  }
  return (
    <form onSubmit={submit}>
      <Stack>
        <Text size="sm">
          “{message.subject}” from {message.from}
        </Text>
        <NativeSelect label="Workflow" value={workflow} onChange={(e) => setWorkflow(e.currentTarget.value)} data={workflows} data-testid="route-workflow" />
        <TextInput
          label="Alias"
          description="The workflow's new address is the mailbox's with +alias; mail to it starts the workflow."
          value={slug}
          onChange={(e) => setSlug(e.currentTarget.value)}
          maxLength={63}
          required
          data-testid="route-alias"
        />
        <ErrorNote error={action.error} />
        <Group>
          <Button type="submit" loading={action.busy === 'route'} disabled={!workflow} data-testid="route-submit">
            Route it
          </Button>
        </Group>
      </Stack>
    </form>
  )
}
