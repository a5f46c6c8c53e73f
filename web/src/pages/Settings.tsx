import { Alert, Badge, Button, Card, Code, Group, PasswordInput, Select, SimpleGrid, Stack, Table, Text, TextInput, Title } from '@mantine/core'
import { useState } from 'react'
import { del, get, patch, post, put, type Profile, type Schemas } from '../api'
import { solveCaptcha } from './Mailed'
import { useSession } from '../session'
import { Confirm, Copy, ErrorNote, Loading, count, useAction, useLoad, when } from '../ui'
import { AutonomyCard, EnvVarsCard, ProfilesCard } from './WorkspaceSettings'
import { PlanCard } from './PlanCard'
import { WorkspaceErrorPageCard } from './WorkspaceErrorPageCard'

type Verbosity = NonNullable<Profile['verbosity']>

/** The signed-in person's settings (profile, password, two-factor sign-in, sessions), then the active workspace's (autonomy, agent profiles, env vars). */
export default function Settings() {
  const { me, workspace } = useSession()
  if (!me) return null
  return (
    <Stack maw={860}>
      <Title order={2}>Settings</Title>
      <ProfileCard me={me} />
      <PasswordCard />
      <TwoFactorCard />
      <SessionsCard />
      {workspace && (
        <>
          <Title order={3}>Workspace {workspace.name}</Title>
          <PlanCard />
          <AutonomyCard />
          <ProfilesCard />
          <EnvVarsCard />
          <WorkspaceErrorPageCard />
        </>
      )}
    </Stack>
  )
}

const verbosities = [
  { value: 'unset', label: 'Not set' },
  { value: 'quiet', label: 'Quiet' },
  { value: 'normal', label: 'Normal' },
  { value: 'verbose', label: 'Verbose' },
]

function ProfileCard({ me }: { me: Profile }) {
  const { refresh } = useSession()
  const [name, setName] = useState(me.display_name)
  const [verbosity, setVerbosity] = useState<Verbosity | 'unset'>(me.verbosity ?? 'unset')
  const [saved, setSaved] = useState(false)
  const action = useAction()
  const save = async (e: React.FormEvent) => {
    e.preventDefault()
    setSaved(false)
    const ok = await action.run('profile', async () => {
      if (name !== me.display_name) await put('/api/me', { body: { display_name: name } })
      if (verbosity !== (me.verbosity ?? 'unset')) await patch('/api/me/verbosity', { body: { verbosity: verbosity === 'unset' ? null : verbosity } })
      return true
    })
    if (ok) {
      setSaved(true)
      await refresh()
    }
  }
  return (
    <Card withBorder>
      <form onSubmit={save}>
        <Stack gap="xs">
          <Title order={4}>Profile</Title>
          <TextInput label="Email" value={me.email} readOnly description={me.email_verified ? 'Verified' : 'Not verified yet'} />
          {!me.email_verified && <ConfirmAddress email={me.email} />}
          <TextInput
            label="Display name"
            value={name}
            onChange={(e) => {
              setName(e.currentTarget.value)
              setSaved(false)
            }}
            required
            maxLength={100}
            data-testid="display-name"
          />
          <Select
            label="Live feed verbosity"
            description="How much a running agent's feed shows by default"
            data={verbosities}
            value={verbosity}
            onChange={(v) => {
              setVerbosity((v ?? 'unset') as Verbosity | 'unset') // one of verbosities
              setSaved(false)
            }}
            allowDeselect={false}
            data-testid="verbosity"
          />
          <ErrorNote error={action.error} />
          {saved && (
            <Alert color="teal" data-testid="profile-saved">
              Saved.
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={action.busy === 'profile'} data-testid="save-profile">
              Save profile
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  )
}

function PasswordCard() {
  const [current, setCurrent] = useState('')
  const [next, setNext] = useState('')
  const [again, setAgain] = useState('')
  const [done, setDone] = useState(false)
  const action = useAction()
  const mismatch = again !== '' && next !== again
  const change = async (e: React.FormEvent) => {
    e.preventDefault()
    if (mismatch) return
    setDone(false)
    const ok = await action.run('password', () => put('/api/me/password', { body: { current_password: current, new_password: next } }))
    if (ok) {
      setCurrent('')
      setNext('')
      setAgain('')
      setDone(true)
    }
  }
  return (
    <Card withBorder>
      <form onSubmit={change}>
        <Stack gap="xs">
          <Title order={4}>Password</Title>
          <PasswordInput label="Current password" value={current} onChange={(e) => setCurrent(e.currentTarget.value)} required autoComplete="current-password" data-testid="current-password" />
          <PasswordInput
            label="New password"
            description="At least 10 characters, not a common password"
            value={next}
            onChange={(e) => setNext(e.currentTarget.value)}
            required
            autoComplete="new-password"
            data-testid="new-password"
          />
          <PasswordInput
            label="Repeat the new password"
            value={again}
            onChange={(e) => setAgain(e.currentTarget.value)}
            required
            autoComplete="new-password"
            error={mismatch ? 'The passwords differ' : undefined}
            data-testid="repeat-password"
          />
          <ErrorNote error={action.error} />
          {done && (
            <Alert color="teal" data-testid="password-changed">
              Password changed. Your other sessions were signed out.
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={action.busy === 'password'} disabled={mismatch} data-testid="change-password">
              Change password
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  )
}

/** TOTP: enrol (secret and URI), confirm with a code (recovery codes, once), or turn it off with a code. */
function TwoFactorCard() {
  const { me, refresh } = useSession()
  const on = me?.two_factor ?? false
  const [enrollment, setEnrollment] = useState<Schemas['TOTPEnrollment'] | null>(null)
  const [code, setCode] = useState('')
  const [recovery, setRecovery] = useState<string[] | null>(null)
  const [offCode, setOffCode] = useState('')
  const [disabled, setDisabled] = useState(false)
  const action = useAction()

  const enroll = async () => {
    setRecovery(null)
    setDisabled(false)
    const r = await action.run('enroll', () => post('/api/me/2fa/enroll'))
    if (r) {
      setEnrollment(r)
      setCode('')
    }
  }
  const confirm = async (e: React.FormEvent) => {
    e.preventDefault()
    const r = await action.run('confirm', () => post('/api/me/2fa/confirm', { body: { code: code.trim() } }))
    if (r) {
      setEnrollment(null)
      setCode('')
      setRecovery(r.recovery_codes ?? [])
      await refresh()
    }
  }
  const disable = async (e: React.FormEvent) => {
    e.preventDefault()
    const r = await action.run('disable', () => post('/api/me/2fa/disable', { body: { code: offCode.trim() } }))
    if (r) {
      setOffCode('')
      setRecovery(null)
      setDisabled(true)
      await refresh()
    }
  }

  return (
    <Card withBorder>
      <Stack gap="sm">
        <Title order={4}>Two-factor sign-in</Title>
        <Text size="sm" c="dimmed">
          With two-factor sign-in on, signing in asks for a code from an authenticator app after the password.
        </Text>
        <ErrorNote error={action.error} />
        {recovery && <RecoveryCodes codes={recovery} />}
        {disabled && (
          <Alert color="teal" data-testid="2fa-disabled">
            Two-factor sign-in is off.
          </Alert>
        )}
        {on ? null : !enrollment ? (
          <Group>
            <Button variant="light" loading={action.busy === 'enroll'} onClick={enroll} data-testid="2fa-enroll">
              Set up two-factor sign-in
            </Button>
          </Group>
        ) : (
          <form onSubmit={confirm}>
            <Stack gap="xs" data-testid="2fa-enrollment">
              <Text size="sm">Add this account to your authenticator app with the link or the secret, then enter the code it shows.</Text>
              <Text size="sm" fw={500}>
                Setup link
              </Text>
              <Group gap="xs" wrap="nowrap" align="start">
                <Code block style={{ wordBreak: 'break-all', whiteSpace: 'pre-wrap', flex: 1 }} data-testid="2fa-uri">
                  {enrollment.uri}
                </Code>
                <Copy value={enrollment.uri} label="Copy link" />
              </Group>
              <Text size="sm" fw={500}>
                Secret (base32)
              </Text>
              <Group gap="xs">
                <Code fz="md" data-testid="2fa-secret">
                  {enrollment.secret}
                </Code>
                <Copy value={enrollment.secret} label="Copy secret" />
              </Group>
              <Group align="end">
                <TextInput
                  label="Code from the app"
                  value={code}
                  onChange={(e) => setCode(e.currentTarget.value)}
                  required
                  maxLength={40}
                  inputMode="numeric"
                  autoComplete="one-time-code"
                  data-testid="2fa-code"
                />
                <Button type="submit" loading={action.busy === 'confirm'} data-testid="2fa-confirm">
                  Turn on
                </Button>
                <Button variant="subtle" color="gray" onClick={() => setEnrollment(null)}>
                  Cancel
                </Button>
              </Group>
            </Stack>
          </form>
        )}
        {on && (
          <form onSubmit={disable}>
            <Group align="end">
              <TextInput
                label="Turn off: a code or a recovery code"
                value={offCode}
                onChange={(e) => setOffCode(e.currentTarget.value)}
                required
                maxLength={40}
                autoComplete="one-time-code"
                data-testid="2fa-disable-code"
              />
              <Button type="submit" color="red" variant="light" loading={action.busy === 'disable'} data-testid="2fa-disable">
                Turn off two-factor sign-in
              </Button>
            </Group>
          </form>
        )}
      </Stack>
    </Card>
  )
}

function RecoveryCodes({ codes }: { codes: string[] }) {
  return (
    <Alert color="yellow" title="Two-factor sign-in is on: keep these recovery codes" data-testid="recovery-codes">
      <Stack gap="xs">
        <Text size="sm">Each code signs in once when the authenticator is lost. They are shown only now and will not be shown again.</Text>
        <SimpleGrid cols={{ base: 2, sm: 5 }} spacing={4}>
          {codes.map((c) => (
            <Code key={c}>{c}</Code>
          ))}
        </SimpleGrid>
        <Group>
          <Copy value={codes.join('\n')} label="Copy all codes" testid="copy-recovery-codes" />
        </Group>
      </Stack>
    </Alert>
  )
}

/** Mails a link that confirms the address (the link opens the sign-in page saying so). */
function ConfirmAddress({ email }: { email: string }) {
  const action = useAction()
  const [sent, setSent] = useState(false)
  const send = () =>
    action.run('verify', async () => {
      const setup = await get('/api/auth/setup')
      const r = await post('/api/auth/verify/request', { body: { email, captcha: setup.captcha ? await solveCaptcha() : undefined } })
      if (!r.ok) throw new Error('The request was not accepted: try again.')
      setSent(true)
    })
  return (
    <Group gap="xs">
      <Button size="xs" variant="light" onClick={send} loading={action.busy === 'verify'} disabled={sent} data-testid="confirm-address">
        {sent ? 'Link sent: check your mail' : 'Mail me a confirmation link'}
      </Button>
      <ErrorNote error={action.error} />
    </Group>
  )
}

type SignedIn = Schemas['SignedIn']

/** A user agent in a few words: the browser and the system it names, else the string itself. */
export function device(ua: string): string {
  if (!ua) return 'Unknown client'
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : ''
  const system = /Windows/.test(ua) ? 'Windows' : /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Linux/.test(ua) ? 'Linux' : ''
  if (browser) return system ? `${browser} on ${system}` : browser
  return ua.length > 60 ? ua.slice(0, 60) + '…' : ua
}

/** Where this account is signed in, each session signed out on its own, or all the others at once. */
function SessionsCard() {
  const { signOut } = useSession()
  const list = useLoad(() => get('/api/me/sessions'), [])
  const [confirm, setConfirm] = useState<SignedIn | 'others' | null>(null)
  const action = useAction()
  const sessions = list.data ?? []
  const others = sessions.filter((s) => !s.current)
  const end = async (target: SignedIn | 'others') => {
    if (target !== 'others' && target.current) {
      await signOut()
      return
    }
    await action.run('sign-out', async () => {
      for (const s of target === 'others' ? others : [target]) {
        await del('/api/me/sessions/{id}', { params: { path: { id: s.id } } })
      }
    })
    await list.reload()
  }
  return (
    <Card withBorder data-testid="sessions">
      <Stack gap="xs">
        <Group justify="space-between">
          <Title order={4}>Sessions</Title>
          {others.length > 0 && (
            <Button size="xs" variant="default" color="red" onClick={() => setConfirm('others')} data-testid="sign-out-others">
              Sign out everywhere else
            </Button>
          )}
        </Group>
        <Text size="sm" c="dimmed">
          {list.loading ? 'Where your account is signed in.' : `Signed in in ${count(sessions.length, 'place')}. Signing a session out ends it at once.`}
        </Text>
        {list.loading && <Loading />}
        <ErrorNote error={list.error ?? action.error} />
        {sessions.length > 0 && (
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Device</Table.Th>
                <Table.Th>Address</Table.Th>
                <Table.Th>Signed in</Table.Th>
                <Table.Th>Expires</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {sessions.map((s) => (
                <Table.Tr key={s.id} data-testid="session-row" data-current={s.current ? 'true' : undefined}>
                  <Table.Td title={s.user_agent}>
                    {device(s.user_agent)}{' '}
                    {s.current && (
                      <Badge size="xs" variant="light">
                        this browser
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>{s.ip || '—'}</Table.Td>
                  <Table.Td>{when(s.created_at)}</Table.Td>
                  <Table.Td>{when(s.expires_at)}</Table.Td>
                  <Table.Td>
                    <Button size="compact-xs" variant="subtle" color="red" loading={action.busy !== '' && !s.current} onClick={() => setConfirm(s)}>
                      Sign out
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Stack>
      <Confirm
        item={confirm}
        title={(c) => (c === 'others' ? 'Sign out everywhere else?' : c.current ? 'Sign out of this browser?' : 'Sign this session out?')}
        message={(c) =>
          c === 'others'
            ? `${others.length === 1 ? 'The other session ends' : `The ${others.length} other sessions end`} at once; this browser stays signed in.`
            : c.current
              ? 'You will be back at the sign-in page.'
              : `${device(c.user_agent)} from ${c.ip || 'an unknown address'} is signed out at once and has to sign in again.`
        }
        action={(c) => (c === 'others' ? 'Sign them out' : 'Sign out')}
        testid="confirm-sign-out"
        onCancel={() => setConfirm(null)}
        onConfirm={end}
      />
    </Card>
  )
}
