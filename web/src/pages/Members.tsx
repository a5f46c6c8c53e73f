import { Alert, Badge, Button, Card, Code, Group, MultiSelect, NativeSelect, Pagination, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core'
import { useState } from 'react'
import { del, get, post, put, type Schemas, type Workspace } from '../api'
import { SeatsCard } from './SeatsCard'
import { useSession } from '../session'
import { Confirm, Copy, ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Member = Schemas['MemberView']
type Invite = Schemas['Invite']
type Issued = Schemas['IssuedInvite']
type Role = Member['role']
type SeatType = Schemas['SeatType']

const pageSize = 100
const roles: { value: Role; label: string }[] = [
  { value: 'owner', label: 'Owner' },
  { value: 'admin', label: 'Admin' },
  { value: 'member', label: 'Member' },
]

/** The organization's people: members with role and status, pending invites, and the invite form. */
export default function Members() {
  const { me, workspace, workspaces, refresh } = useSession()
  const [q, setQ] = useState('')
  const [search, setSearch] = useState('')
  const [page, setPage] = useState(1)
  // The members board carries each member's status (active or suspended) besides the role.
  const members = useLoad(() => {
    return get('/api/organization/members/board', { params: { query: { page, page_size: pageSize, q: q || undefined } } })
  }, [workspace?.id, q, page])
  const invites = useLoad(async () => (await get('/organization/invites')) ?? [], [workspace?.id])
  const action = useAction()
  const [issued, setIssued] = useState<Issued | null>(null)
  const [offboarding, setOffboarding] = useState<Member | null>(null)
  const orgWorkspaces = workspaces.filter((w) => w.organization_id === workspace?.organization_id)
  const rows = members.data?.rows ?? []
  const org = useLoad(() => get('/organization'), [workspace?.id])
  const myRole = org.data?.role
  // Seats: the plan's included seats against the active members, and each member's seat type.
  const seats = useLoad(() => get('/organization/seat-summary'), [workspace?.id])
  const seatTypes = useLoad(async () => (await get('/organization/seat-types')) ?? [], [])
  const seatOf = (userID: string) => seats.data?.assigned?.find((a) => a.user_id === userID)?.seat_type ?? ''
  const reloadSeats = async () => {
    await seats.reload()
  }

  const act = async (name: string, fn: () => Promise<unknown>, after: () => Promise<unknown>) => {
    const ok = await action.run(name, async () => {
      await fn()
      return true
    })
    if (ok) await after()
  }
  const offboard = async (m: Member) => {
    const self = m.user_id === me?.id
    await act(`offboard-${m.user_id}`, () => del('/organization/members/{user_id}', { params: { path: { user_id: m.user_id } } }), self ? refresh : members.reload)
  }
  const resend = async (i: Invite) => {
    const r = await action.run(`resend-${i.id}`, () => post('/organization/invites/{id}/resend', { params: { path: { id: i.id } } }))
    if (r) {
      setIssued(r)
      await invites.reload()
    }
  }

  const pages = members.data ? Math.max(1, Math.ceil(members.data.total / (members.data.page_size || pageSize))) : 1
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Members</Title>
        {workspace && <Text c="dimmed">{workspace.organization_name}</Text>}
      </Group>
      {myRole === 'member' && (
        <Alert color="gray" data-testid="member-note">
          Only the organization's owners and admins invite people and change roles; you can read the list.
        </Alert>
      )}
      <InviteForm
        workspaces={orgWorkspaces}
        onIssued={(i) => {
          setIssued(i)
          invites.reload()
        }}
      />
      {issued && <IssuedLink invite={issued} onDismiss={() => setIssued(null)} />}
      <ErrorNote error={action.error} />

      <Group justify="space-between" align="end">
        <Title order={4}>People</Title>
        <form
          onSubmit={(e) => {
            e.preventDefault()
            setPage(1)
            setQ(search.trim())
          }}
        >
          <TextInput label="Search members" placeholder="Name or email" value={search} onChange={(e) => setSearch(e.currentTarget.value)} data-testid="members-q" />
        </form>
      </Group>
      <ErrorNote error={members.error} />
      {members.loading && !members.data ? (
        <Loading />
      ) : (
        <Table striped highlightOnHover data-testid="members-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Email</Table.Th>
              <Table.Th>Role</Table.Th>
              <Table.Th>Seat</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Joined</Table.Th>
              <Table.Th>Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((m) => (
              <MemberRow
                key={m.user_id}
                m={m}
                self={m.user_id === me?.id}
                busy={action.busy}
                onRole={(role) => act(`role-${m.user_id}`, () => put('/organization/members/{user_id}/role', { params: { path: { user_id: m.user_id } }, body: { role } }), members.reload)}
                seat={seatOf(m.user_id)}
                seatTypes={seatTypes.data ?? []}
                onSeat={(seat) =>
                  act(`seat-${m.user_id}`, () => put('/organization/members/{user_id}/seat-type', { params: { path: { user_id: m.user_id } }, body: { seat_type: seat || null } }), reloadSeats)
                }
                onSuspend={() =>
                  act(`suspend-${m.user_id}`, () => post(`/organization/members/{user_id}/${m.status === 'suspended' ? 'reactivate' : 'suspend'}`, { params: { path: { user_id: m.user_id } } }), members.reload)
                }
                onOffboard={() => setOffboarding(m)}
              />
            ))}
          </Table.Tbody>
        </Table>
      )}
      {pages > 1 && <Pagination total={pages} value={page} onChange={setPage} />}
      <ErrorNote error={seats.error} />
      {seats.data && <SeatsCard s={seats.data} />}

      <Title order={4}>Pending invites</Title>
      <ErrorNote error={invites.error} />
      {invites.loading && !invites.data ? (
        <Loading />
      ) : (invites.data ?? []).length === 0 ? (
        !invites.error && <Text c="dimmed" data-testid="no-invites">No pending invites.</Text>
      ) : (
        <InviteTable
          invites={invites.data ?? []}
          busy={action.busy}
          onRevoke={(i) => {
            if (issued?.id === i.id) setIssued(null)
            act(`revoke-${i.id}`, () => del('/organization/invites/{id}', { params: { path: { id: i.id } } }), invites.reload)
          }}
          onResend={resend}
        />
      )}

      <Confirm
        item={offboarding}
        title={(m) => (m.user_id === me?.id ? 'Leave the organization?' : `Offboard ${m.display_name}?`)}
        message={(m) =>
          m.user_id === me?.id
            ? 'You lose access to the organization and every workspace in it. Your other organizations stay.'
            : `${m.email} leaves the organization and every workspace in it, and is signed out everywhere. Invite them again to bring them back.`
        }
        action={(m) => (m.user_id === me?.id ? 'Leave' : 'Offboard')}
        testid="confirm-offboard"
        onCancel={() => setOffboarding(null)}
        onConfirm={offboard}
      />
    </Stack>
  )
}

type RowProps = {
  m: Member
  self: boolean
  busy: string
  onRole: (r: Role) => void
  seat: string
  seatTypes: SeatType[]
  onSeat: (seat: string) => void
  onSuspend: () => void
  onOffboard: () => void
}

function MemberRow({ m, self, busy, onRole, seat, seatTypes, onSeat, onSuspend, onOffboard }: RowProps) {
  const suspended = m.status === 'suspended'
  return (
    <Table.Tr data-testid={`member-${m.email}`}>
      <Table.Td>
        {m.display_name}
        {self && (
          <Badge variant="outline" size="xs" ml={6}>
            you
          </Badge>
        )}
      </Table.Td>
      <Table.Td>{m.email}</Table.Td>
      <Table.Td>
        <Select
          aria-label={`Role of ${m.email}`}
          size="xs"
          w={120}
          data={roles}
          value={m.role}
          allowDeselect={false}
          disabled={busy === `role-${m.user_id}`}
          onChange={(v) => v && v !== m.role && onRole(v as Role)}
          data-testid={`role-${m.email}`}
        />
      </Table.Td>
      <Table.Td>
        <NativeSelect
          aria-label={`Seat of ${m.email}`}
          size="xs"
          w={150}
          value={seat}
          disabled={busy === `seat-${m.user_id}`}
          onChange={(e) => e.currentTarget.value !== seat && onSeat(e.currentTarget.value)}
          data={[{ value: '', label: 'Standard' }, ...seatTypes.map((t) => ({ value: t.id, label: t.name }))]}
          data-testid={`seat-${m.email}`}
        />
      </Table.Td>
      <Table.Td>
        <Badge color={suspended ? 'orange' : 'teal'} variant="light" data-status={m.status}>
          {m.status}
        </Badge>
        {suspended && m.suspended_at && (
          <Text size="xs" c="dimmed">
            since {when(m.suspended_at)}
          </Text>
        )}
      </Table.Td>
      <Table.Td>{when(m.joined_at)}</Table.Td>
      <Table.Td>
        <Group gap={4}>
          {!self && (
            <Button
              size="compact-xs"
              variant="light"
              color={suspended ? 'teal' : 'orange'}
              loading={busy === `suspend-${m.user_id}`}
              onClick={onSuspend}
              data-testid={`${suspended ? 'reactivate' : 'suspend'}-${m.email}`}
            >
              {suspended ? 'Reactivate' : 'Suspend'}
            </Button>
          )}
          <Button size="compact-xs" variant="subtle" color="red" loading={busy === `offboard-${m.user_id}`} onClick={onOffboard} data-testid={`offboard-${m.email}`}>
            {self ? 'Leave' : 'Offboard'}
          </Button>
        </Group>
      </Table.Td>
    </Table.Tr>
  )
}

function InviteTable({ invites, busy, onRevoke, onResend }: { invites: Invite[]; busy: string; onRevoke: (i: Invite) => void; onResend: (i: Invite) => void }) {
  const now = Date.now()
  return (
    <Table striped data-testid="invites-table">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Email</Table.Th>
          <Table.Th>Role</Table.Th>
          <Table.Th>Sent</Table.Th>
          <Table.Th>Expires</Table.Th>
          <Table.Th>Actions</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {invites.map((i) => (
          <Table.Tr key={i.id} data-testid={`invite-${i.email}`}>
            <Table.Td>{i.email}</Table.Td>
            <Table.Td>{i.role}</Table.Td>
            <Table.Td>{when(i.created_at)}</Table.Td>
            <Table.Td>
              {when(i.expires_at)}
              {new Date(i.expires_at).getTime() < now && (
                <Badge color="red" variant="light" size="xs" ml={6}>
                  expired
                </Badge>
              )}
            </Table.Td>
            <Table.Td>
              <Group gap={4}>
                <Button size="compact-xs" variant="light" loading={busy === `resend-${i.id}`} onClick={() => onResend(i)} data-testid={`resend-${i.email}`}>
                  Resend
                </Button>
                <Button size="compact-xs" variant="subtle" color="red" loading={busy === `revoke-${i.id}`} onClick={() => onRevoke(i)} data-testid={`revoke-${i.email}`}>
                  Revoke
                </Button>
              </Group>
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  )
}

function InviteForm({ workspaces, onIssued }: { workspaces: Workspace[]; onIssued: (i: Issued) => void }) {
  const [email, setEmail] = useState('')
  const [role, setRole] = useState<'admin' | 'member'>('member')
  const [joins, setJoins] = useState<string[]>([])
  const action = useAction()
  const submit = async (e: React.FormEvent) => {
    e.preventDefault()
    const body = { email: email.trim(), role, ...(joins.length ? { workspace_ids: joins } : {}) }
    const r = await action.run('invite', () => post('/organization/invites', { body }))
    if (!r) return
    setEmail('')
    setJoins([])
    onIssued(r)
  }
  return (
    <Card withBorder>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Text fw={600}>Invite someone</Text>
          <Group align="end">
            <TextInput label="Email" type="email" value={email} onChange={(e) => setEmail(e.currentTarget.value)} required maxLength={254} w={280} data-testid="invite-email" />
            <Select
              label="Role"
              data={[
                { value: 'member', label: 'Member' },
                { value: 'admin', label: 'Admin' },
              ]}
              value={role}
              onChange={(v) => setRole(v === 'admin' ? 'admin' : 'member')}
              allowDeselect={false}
              w={130}
              data-testid="invite-role"
            />
            <MultiSelect
              label="Workspaces"
              placeholder={joins.length ? undefined : 'Default: the first one'}
              data={workspaces.map((w) => ({ value: w.id, label: w.name }))}
              value={joins}
              onChange={setJoins}
              w={260}
              data-testid="invite-workspaces"
            />
            <Button type="submit" loading={action.busy === 'invite'} data-testid="invite-submit">
              Send invite
            </Button>
          </Group>
          <ErrorNote error={action.error} />
        </Stack>
      </form>
    </Card>
  )
}

/** The accept link of a fresh (or resent) invite: answered once, so it is shown to pass on now. */
function IssuedLink({ invite, onDismiss }: { invite: Issued; onDismiss: () => void }) {
  const url = new URL(invite.accept_url, window.location.origin).toString()
  return (
    <Alert color="teal" title={`Invite for ${invite.email}`} withCloseButton onClose={onDismiss} data-testid="invite-issued">
      <Stack gap="xs">
        <Text size="sm">Send this link to {invite.email}. It is shown only now, works once and expires {when(invite.expires_at)}.</Text>
        <Group gap="xs" wrap="nowrap">
          <Code data-testid="invite-link" style={{ wordBreak: 'break-all' }}>
            {url}
          </Code>
          <Copy value={url} label="Copy link" testid="copy-invite-link" />
        </Group>
      </Stack>
    </Alert>
  )
}

