import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Modal,
  MultiSelect,
  SegmentedControl,
  Select,
  Stack,
  Table,
  TagsInput,
  Text,
  TextInput,
  Title,
} from '@mantine/core'
import { useEffect, useState } from 'react'
import { del, get, patch, post, type Schemas, type Workspace } from '../api'
import { useSession } from '../session'
import { Confirm, Copy, ErrorNote, Loading, useAction, useLoad, when, count } from '../ui'

type Runner = Schemas['Runner']
type Onboarding = Schemas['Onboarding']

/** A token the server answers once: shown in a modal until dismissed. */
type Secret = { title: string; token: string; env: string; expires?: string | null }

const statusColor: Record<Runner['status'], string> = { online: 'teal', offline: 'gray', draining: 'yellow', disabled: 'dark' }

const nextStep: Record<Onboarding['next_step'], string> = {
  enable_hub_mode: 'Hub mode is off (SERVICE_HUB_MODE): every task runs on this server. Turn it on to send work to runners.',
  create_runner: 'No runner yet: create one below, with a static token or an enrollment token.',
  start_runner: 'No runner is online: start one with its token (slipway runner).',
  enable_runner: 'No runner is eligible: enable a runner or end its drain.',
  done: '',
}

/** The organization's runners: their state, the owner's and admins' actions, tokens shown once. */
export default function Runners() {
  const { workspace, workspaces } = useSession()
  const runners = useLoad(async () => (await get('/api/organization/runners')) ?? [], [workspace?.id])
  const onboarding = useLoad(() => get('/api/organization/runners/onboarding-status'), [workspace?.id])
  const action = useAction()
  const [secret, setSecret] = useState<Secret | null>(null)
  const [editing, setEditing] = useState<Runner | null>(null)
  const [deleting, setDeleting] = useState<Runner | null>(null)
  const orgWorkspaces = workspaces.filter((w) => w.organization_id === workspace?.organization_id)

  // Heartbeats change online and last-seen: refresh while the page is open.
  const reloadRunners = runners.reload
  const reloadOnboarding = onboarding.reload
  useEffect(() => {
    const t = setInterval(() => {
      reloadRunners()
      reloadOnboarding()
    }, 15_000)
    return () => clearInterval(t)
  }, [reloadRunners, reloadOnboarding])

  const refresh = () => Promise.all([runners.reload(), onboarding.reload()])
  const act = async (name: string, fn: () => Promise<unknown>) => {
    const ok = await action.run(name, async () => {
      await fn()
      return true
    })
    if (ok) await refresh()
    return ok
  }
  const rotate = async (r: Runner) => {
    const t = await action.run(`rotate-${r.id}`, () => post('/api/organization/runners/{id}/rotate-token', { params: { path: { id: r.id } } }))
    if (!t) return
    setSecret(
      t.kind === 'static'
        ? { title: `New token for ${r.name}`, token: t.token, env: 'SERVICE_RUNNER_TOKEN' }
        : { title: `Enrollment token to re-enrol ${r.name}`, token: t.token, env: 'SERVICE_RUNNER_ENROLLMENT_TOKEN', expires: t.expires_at },
    )
    await refresh()
  }

  return (
    <Stack>
      <Title order={2}>Runners</Title>
      {onboarding.data && onboarding.data.next_step !== 'done' && (
        <Alert color="blue" title="Next step" data-testid="runner-next-step">
          {nextStep[onboarding.data.next_step]}
          <Text size="xs" c="dimmed" mt={4}>
            {count(onboarding.data.runners, 'runner')} · {onboarding.data.online} online ·{' '}
            {onboarding.data.next_step === 'enable_hub_mode' ? `${onboarding.data.eligible} ready once hub mode is on` : `${onboarding.data.eligible} eligible`} ·{' '}
            {count(onboarding.data.pending_enrollments, 'enrollment token')} pending{onboarding.data.fleet_only ? ' · fleet only: no fallback to the server' : ''}
          </Text>
        </Alert>
      )}
      <CreateRunner workspaces={orgWorkspaces} onCreated={(s) => {
          setSecret(s)
          refresh()
        }} />
      <ErrorNote error={action.error} />
      <ErrorNote error={runners.error} />
      {runners.loading && !runners.data ? (
        <Loading />
      ) : runners.error ? null : (runners.data ?? []).length === 0 ? (
        <Text c="dimmed" data-testid="no-runners">
          No runners yet.
        </Text>
      ) : (
        <Table striped highlightOnHover data-testid="runners-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Online</Table.Th>
              <Table.Th>Labels</Table.Th>
              <Table.Th>Slots</Table.Th>
              <Table.Th>Last heartbeat</Table.Th>
              <Table.Th>Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(runners.data ?? []).map((r) => (
              <RunnerRow
                key={r.id}
                r={r}
                hubMode={onboarding.data?.hub_mode ?? false}
                busy={action.busy}
                onDrain={() => act(`drain-${r.id}`, () => post('/api/organization/runners/{id}/drain', { params: { path: { id: r.id } } }))}
                onStatus={(s) => act(`status-${r.id}`, () => post('/api/organization/runners/{id}/status', { params: { path: { id: r.id } }, body: { status: s } }))}
                onRotate={() => rotate(r)}
                onEdit={() => setEditing(r)}
                onDelete={() => setDeleting(r)}
              />
            ))}
          </Table.Tbody>
        </Table>
      )}
      <SecretModal secret={secret} onClose={() => setSecret(null)} />
      {editing && (
        <EditRunner
          runner={editing}
          workspaces={orgWorkspaces}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null)
            refresh()
          }}
        />
      )}
      <Confirm
        item={deleting}
        title={(r) => `Delete ${r.name}?`}
        message={() => 'Its token stops working at once and the work it holds loses its lease. This cannot be undone.'}
        action={() => 'Delete runner'}
        testid="confirm-delete-runner"
        onCancel={() => setDeleting(null)}
        onConfirm={(r) => act(`delete-${r.id}`, () => del('/api/organization/runners/{id}', { params: { path: { id: r.id } } }))}
      />
    </Stack>
  )
}

type RowProps = {
  r: Runner
  /** Work reaches runners only in hub mode: "eligible" means nothing without it. */
  hubMode: boolean
  busy: string
  onDrain: () => void
  onStatus: (s: 'enabled' | 'disabled') => void
  onRotate: () => void
  onEdit: () => void
  onDelete: () => void
}

function RunnerRow({ r, hubMode, busy, onDrain, onStatus, onRotate, onEdit, onDelete }: RowProps) {
  const labels = r.labels ?? []
  return (
    <Table.Tr data-testid={`runner-${r.name}`}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {r.name}
        </Text>
        <Text size="xs" c="dimmed">
          {r.class} · {r.hostname || 'no host yet'}
          {r.version ? ` · ${r.version}` : ''}
          {r.backend ? ` · ${r.backend}` : ''}
        </Text>
      </Table.Td>
      <Table.Td>
        <Badge color={statusColor[r.status]} variant="light" data-status={r.status}>
          {r.status}
        </Badge>
        {r.eligible && hubMode && (
          <Badge color="green" variant="outline" ml={4} data-testid={`eligible-${r.name}`}>
            eligible
          </Badge>
        )}
        {r.online && !r.healthy && (
          <Badge color="red" variant="outline" ml={4} title={r.health_error}>
            unhealthy
          </Badge>
        )}
        {r.online && !r.healthy && (
          <Text size="xs" c="red" data-testid={`health-${r.name}`}>
            {r.health_error}
          </Text>
        )}
      </Table.Td>
      <Table.Td>{r.online ? 'yes' : 'no'}</Table.Td>
      <Table.Td>
        <Group gap={4}>
          {labels.length === 0 ? <Text size="xs" c="dimmed">none</Text> : labels.map((l) => <Badge key={l} variant="default" size="sm">{l}</Badge>)}
        </Group>
        {(r.allowed_labels ?? []).length > 0 && (
          <Text size="xs" c="dimmed">
            may serve: {(r.allowed_labels ?? []).join(', ')}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        {r.running} / {r.slots}
      </Table.Td>
      <Table.Td>{when(r.last_heartbeat_at)}</Table.Td>
      <Table.Td>
        <Group gap={4}>
          {!r.draining && !r.disabled && (
            <Button size="compact-xs" variant="light" color="yellow" loading={busy === `drain-${r.id}`} onClick={onDrain} data-testid={`drain-${r.name}`}>
              Drain
            </Button>
          )}
          {r.disabled || r.draining ? (
            <Button size="compact-xs" variant="light" loading={busy === `status-${r.id}`} onClick={() => onStatus('enabled')} data-testid={`enable-${r.name}`}>
              Enable
            </Button>
          ) : (
            <Button size="compact-xs" variant="light" color="gray" loading={busy === `status-${r.id}`} onClick={() => onStatus('disabled')} data-testid={`disable-${r.name}`}>
              Disable
            </Button>
          )}
          <Button size="compact-xs" variant="light" loading={busy === `rotate-${r.id}`} onClick={onRotate} data-testid={`rotate-${r.name}`}>
            Rotate token
          </Button>
          <Button size="compact-xs" variant="subtle" onClick={onEdit} data-testid={`edit-${r.name}`}>
            Edit
          </Button>
          <Button size="compact-xs" variant="subtle" color="red" loading={busy === `delete-${r.id}`} onClick={onDelete} data-testid={`delete-${r.name}`}>
            Delete
          </Button>
        </Group>
      </Table.Td>
    </Table.Tr>
  )
}

const expiries = [
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '1 day' },
  { value: '604800', label: '7 days' },
]

/** Creates a runner with a static token, or an enrollment token that creates one when redeemed. */
function CreateRunner({ workspaces, onCreated }: { workspaces: Workspace[]; onCreated: (s: Secret) => void }) {
  const [mode, setMode] = useState<'static' | 'enrollment'>('static')
  const [name, setName] = useState('')
  const [labels, setLabels] = useState<string[]>([])
  const [allowed, setAllowed] = useState<string[]>([])
  const [expires, setExpires] = useState('3600')
  const action = useAction()

  const submit = async (e: React.FormEvent) => {
    e.preventDefault()
    const grant = { allowed_labels: labels, allowed_workspace_ids: allowed }
    const s = await action.run('create', async (): Promise<Secret> => {
      if (mode === 'static') {
        const c = await post('/api/organization/runners', { body: { name, ...grant } })
        return { title: `Token for ${c.runner.name}`, token: c.token, env: 'SERVICE_RUNNER_TOKEN' }
      }
      const en = await post('/api/organization/runners/enrollment-tokens', {
        body: { ...(name ? { name } : {}), ...grant, expires_in_secs: Number(expires) },
      })
      return { title: 'Enrollment token', token: en.token, env: 'SERVICE_RUNNER_ENROLLMENT_TOKEN', expires: en.expires_at }
    })
    if (!s) return
    setName('')
    setLabels([])
    setAllowed([])
    onCreated(s)
  }

  return (
    <Card withBorder>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Group justify="space-between">
            <Text fw={600}>Add a runner</Text>
            <SegmentedControl
              size="xs"
              value={mode}
              onChange={(v) => setMode(v === 'enrollment' ? 'enrollment' : 'static')}
              data={[
                { value: 'static', label: 'Static token' },
                { value: 'enrollment', label: 'Enrollment token' },
              ]}
              data-testid="runner-mode"
              aria-label="Token kind"
            />
          </Group>
          <Group align="end">
            <TextInput
              label="Name"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              required={mode === 'static'}
              maxLength={100}
              placeholder={mode === 'enrollment' ? 'Default: its SERVICE_RUNNER_NAME' : undefined}
              w={260}
              data-testid="runner-name"
            />
            <TagsInput label="Allowed labels" description="Empty: any it advertises" value={labels} onChange={setLabels} w={260} data-testid="runner-labels" />
            <MultiSelect
              label="Allowed workspaces"
              description="Empty: every workspace"
              data={workspaces.map((w) => ({ value: w.id, label: w.name }))}
              value={allowed}
              onChange={setAllowed}
              w={260}
              data-testid="runner-workspaces"
            />
            {mode === 'enrollment' && (
              <Select label="Expires after" data={expiries} value={expires} onChange={(v) => setExpires(v ?? '3600')} allowDeselect={false} w={130} data-testid="runner-expiry" />
            )}
            <Button type="submit" loading={action.busy === 'create'} data-testid="create-runner">
              {mode === 'static' ? 'Create runner' : 'Create enrollment token'}
            </Button>
          </Group>
          <ErrorNote error={action.error} />
        </Stack>
      </form>
    </Card>
  )
}

/** Renames a runner or changes what it may serve (PATCH). */
function EditRunner({ runner, workspaces, onClose, onSaved }: { runner: Runner; workspaces: Workspace[]; onClose: () => void; onSaved: () => void }) {
  const [name, setName] = useState(runner.name)
  const [labels, setLabels] = useState<string[]>(runner.allowed_labels ?? [])
  const [allowed, setAllowed] = useState<string[]>(runner.allowed_workspace_ids ?? [])
  const action = useAction()
  const save = async (e: React.FormEvent) => {
    e.preventDefault()
    const ok = await action.run('save', () => patch('/api/organization/runners/{id}', { params: { path: { id: runner.id } }, body: { name, allowed_labels: labels, allowed_workspace_ids: allowed } }))
    if (ok) onSaved()
  }
  return (
    <Modal opened onClose={onClose} title={`Edit ${runner.name}`}>
      <form onSubmit={save}>
        <Stack>
          <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} required maxLength={100} data-testid="edit-runner-name" />
          <TagsInput label="Allowed labels" description="Empty: any it advertises" value={labels} onChange={setLabels} />
          <MultiSelect
            label="Allowed workspaces"
            description="Empty: every workspace"
            data={workspaces.map((w) => ({ value: w.id, label: w.name }))}
            value={allowed}
            onChange={setAllowed}
          />
          <ErrorNote error={action.error} />
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={action.busy === 'save'} data-testid="save-runner">
              Save
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  )
}

/** The plaintext token, once: a copy button and a warning that it will not be shown again. */
function SecretModal({ secret, onClose }: { secret: Secret | null; onClose: () => void }) {
  return (
    <Modal opened={!!secret} onClose={onClose} title={secret?.title} size="lg" closeOnClickOutside={false}>
      {secret && (
        <Stack>
          <Alert color="yellow" title="Copy it now">
            This token is shown only once and will not be shown again: only its hash is kept. Give it to the runner as <Code>{secret.env}</Code>.
            {secret.expires ? ` It expires ${when(secret.expires)} and works once.` : ''}
          </Alert>
          <Code block data-testid="runner-token" style={{ wordBreak: 'break-all', whiteSpace: 'pre-wrap' }}>
            {secret.token}
          </Code>
          <Group justify="end">
            <Copy value={secret.token} label="Copy token" testid="copy-runner-token" size="sm" />
            <Button onClick={onClose} data-testid="close-runner-token">
              Done
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  )
}
