// Proposals: changes agents asked for instead of making them. The list by
// status, and a proposal's page with the change itself, what it targets,
// and — for the workspace's owner or an admin — approve (the change is
// applied, unless its target moved since) or reject with a note.
import { Anchor, Badge, Button, Card, Code, Group, SegmentedControl, Stack, Table, Text, Textarea, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link, useParams, useSearchParams } from 'react-router-dom'
import { get, post, type Schemas } from '../api'
import { watchTopic } from '../live'
import { useSession } from '../session'
import { ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Proposal = Schemas['Proposal']

const statusColor: Record<string, string> = { pending: 'yellow', applied: 'green', rejected: 'red' }

function ProposalStatus({ status }: { status: string }) {
  return (
    <Badge color={statusColor[status] ?? 'gray'} variant="light" data-status={status}>
      {status}
    </Badge>
  )
}

export function Proposals() {
  const { workspace } = useSession()
  const ws = workspace!.id
  const [params, setParams] = useSearchParams()
  const status = (params.get('status') ?? 'pending') as 'pending' | 'applied' | 'rejected' | 'all'
  const list = useLoad(() => get('/api/proposals', { params: { query: { status: status === 'all' ? undefined : status, limit: 200 } } }), [ws, status])
  const counts = useLoad(() => get('/api/proposals/board'), [ws])
  const reload = list.reload
  const reloadCounts = counts.reload
  useEffect(() => watchTopic('proposals', ws, () => (reload(), reloadCounts())), [ws, reload, reloadCounts])
  const n = (s: string) => (counts.data ? ` · ${counts.data.counts[s] ?? 0}` : '')
  return (
    <Stack>
      <Title order={2}>Proposals</Title>
      <Text c="dimmed" size="sm">
        Changes agents asked for instead of making them. The workspace's owner or an admin approves (the change is made) or rejects them.
      </Text>
      <SegmentedControl
        w={480}
        value={status}
        onChange={(v) => setParams({ status: v })}
        data={[
          { value: 'pending', label: `Pending${n('pending')}` },
          { value: 'applied', label: `Applied${n('applied')}` },
          { value: 'rejected', label: `Rejected${n('rejected')}` },
          { value: 'all', label: 'All' },
        ]}
        data-testid="proposals-status"
      />
      <ErrorNote error={list.error} />
      {list.loading && !list.data && <Loading />}
      {list.data && list.data.length === 0 && <Text c="dimmed">No proposals here.</Text>}
      {list.data && list.data.length > 0 && (
        <Table striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Proposal</Table.Th>
              <Table.Th>Kind</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Proposed</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.data.map((p) => (
              <Table.Tr key={p.id} data-testid="proposal-row">
                <Table.Td>
                  <Anchor component={Link} to={`/proposals/${p.id}`}>
                    {p.title}
                  </Anchor>
                </Table.Td>
                <Table.Td>{p.kind}</Table.Td>
                <Table.Td>
                  <ProposalStatus status={p.status} />
                </Table.Td>
                <Table.Td>{when(p.created_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  )
}

export function ProposalPage() {
  const { id = '' } = useParams()
  const { workspace } = useSession()
  const ws = workspace!.id
  const p = useLoad(() => get('/api/proposals/{id}', { params: { path: { id } } }), [ws, id])
  const reload = p.reload
  useEffect(() => watchTopic('proposals', ws, (changed) => (!changed || changed === id) && reload()), [ws, id, reload])
  const act = useAction()
  const [note, setNote] = useState('')
  const admin = workspace?.role === 'owner' || workspace?.role === 'admin'
  if (p.loading && !p.data) return <Loading />
  if (!p.data) return <ErrorNote error={p.error} />
  const pr: Proposal = p.data
  return (
    <Stack maw={900}>
      <Group justify="space-between">
        <Title order={2}>{pr.title}</Title>
        <ProposalStatus status={pr.status} />
      </Group>
      {pr.summary && <Text>{pr.summary}</Text>}
      <Text size="sm" c="dimmed">
        A {pr.kind.replaceAll('_', ' ')} change to <Code>{pr.target || '—'}</Code>, proposed {when(pr.created_at)}
        {pr.task_id && (
          <>
            {' '}
            by the agent of{' '}
            <Anchor component={Link} to={`/tasks/${pr.task_id}`}>
              its task
            </Anchor>
          </>
        )}
        .
      </Text>
      <Card withBorder>
        <Text fw={600} size="sm" mb="xs">
          The change
        </Text>
        <Code block data-testid="proposal-payload">
          {JSON.stringify(pr.payload, null, 2)}
        </Code>
      </Card>
      {pr.review_note && (
        <Text size="sm">
          <b>Note:</b> {pr.review_note}
        </Text>
      )}
      {pr.status === 'applied' && (
        <Card withBorder>
          <Text fw={600} size="sm" mb="xs">
            Applied {when(pr.decided_at)}: made <Code data-testid="proposal-materialized">{pr.materialized_id}</Code>
          </Text>
          {pr.materialized_id && made(pr) && (
            <Anchor component={Link} to={made(pr)!.to} data-testid="proposal-open">
              {made(pr)!.label}
            </Anchor>
          )}
        </Card>
      )}
      <ErrorNote error={act.error} />
      {pr.status === 'pending' && admin && (
        <Stack gap="xs">
          <Textarea label="A note for the audit log if you reject it (optional)" value={note} onChange={(e) => setNote(e.currentTarget.value)} maxLength={2000} autosize minRows={2} />
          <Group>
            <Button color="green" loading={act.busy === 'approve'} onClick={() => act.run('approve', async () => p.setData(await post('/api/proposals/{id}/approve', { params: { path: { id } } })))} data-testid="proposal-approve">
              Approve and apply
            </Button>
            <Button
              color="red"
              variant="light"
              loading={act.busy === 'reject'}
              onClick={() => act.run('reject', async () => p.setData(await post('/api/proposals/{id}/reject', { params: { path: { id } }, body: { note: note.trim() || undefined } })))}
              data-testid="proposal-reject"
            >
              Reject
            </Button>
          </Group>
        </Stack>
      )}
      {pr.status === 'pending' && !admin && <Text c="dimmed">The workspace's owner or an admin decides this proposal.</Text>}
    </Stack>
  )
}

/** Where what an applied proposal made is shown. */
function made(pr: Proposal): { to: string; label: string } | null {
  const id = pr.materialized_id
  const payload = (pr.payload ?? {}) as { project_id?: string }
  switch (pr.kind) {
    case 'workflow':
      return { to: `/workflows/${id}`, label: 'Open the workflow' }
    case 'resource':
      return { to: `/resources/${id}`, label: 'Open the resource (set its secret there)' }
    case 'backlog_item':
      return payload.project_id ? { to: `/projects/${payload.project_id}/settings?tab=backlog`, label: "Open the project's backlog" } : null
    case 'repo_change':
      return { to: `/tasks/${id}`, label: 'Open the task making the change' }
    case 'env_var':
      return { to: '/settings', label: 'Open the env vars' }
  }
  return null
}
