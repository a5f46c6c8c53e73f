// The pages mailed links open: accept an invite, reset a password (and ask
// for a reset link), confirm a sign-in link. They stand outside the shell:
// whoever opens them may not be signed in.
import { Alert, Anchor, Button, Card, Center, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link, useNavigate, useSearchParams } from 'react-router-dom'
import { get, messageOf, post } from '../api'
import { useSession } from '../session'

function Page({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <Center mih="100vh" p="md">
      <Card withBorder shadow="sm" w={440} p="lg">
        <Stack>
          <Title order={2}>{title}</Title>
          {children}
        </Stack>
      </Card>
    </Center>
  )
}

function Failure({ error }: { error: string }) {
  return error ? (
    <Alert color="red" role="alert">
      {error}
    </Alert>
  ) : null
}

/** Solves the server's proof-of-work captcha: SHA-256(challenge:solution) must start with `difficulty` zero bits. */
export async function solveCaptcha() {
  const c = await get('/api/auth/captcha/challenge')
  const enc = new TextEncoder()
  const zeroBits = (b: Uint8Array) => {
    let n = 0
    for (const byte of b) {
      if (byte === 0) {
        n += 8
        continue
      }
      return n + Math.clz32(byte) - 24
    }
    return n
  }
  for (let start = 0; ; start += 512) {
    const batch = await Promise.all(
      Array.from({ length: 512 }, (_, i) => crypto.subtle.digest('SHA-256', enc.encode(`${c.challenge}:${start + i}`))),
    )
    const i = batch.findIndex((d) => zeroBits(new Uint8Array(d)) >= c.difficulty)
    if (i >= 0) return { challenge: c.challenge, solution: String(start + i) }
  }
}

/** /invite?token=…: the invited account accepts; anyone else is asked to sign in or register with the invited address. */
export function InvitePage() {
  const { me, refresh } = useSession()
  const [params] = useSearchParams()
  const token = params.get('token') ?? ''
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')
  const [joined, setJoined] = useState(false)
  const here = `/invite?token=${encodeURIComponent(token)}`

  const accept = async () => {
    setBusy(true)
    setError('')
    try {
      await post('/organization/invites/accept', { body: { token } })
      setJoined(true)
      await refresh()
    } catch (e) {
      setError(messageOf(e))
    } finally {
      setBusy(false)
    }
  }

  return (
    <Page title="You are invited">
      {!token && <Failure error="This link has no invite in it: open the link from the mail as it is." />}
      {token && !me && (
        <>
          <Text size="sm">Someone invited your email address to their organization on Slipway. Sign in with that address to accept, or create an account with it first.</Text>
          <Button component={Link} to={`/login?next=${encodeURIComponent(here)}`} data-testid="invite-sign-in">
            Sign in to accept
          </Button>
          <Text size="sm">
            No account yet?{' '}
            <Anchor component={Link} to={`/register?next=${encodeURIComponent(here)}`} data-testid="invite-register">
              Create one with the invited address
            </Anchor>
          </Text>
        </>
      )}
      {token && me && !joined && (
        <>
          <Text size="sm">
            Signed in as <b>{me.email}</b>. Accepting adds this account to the organization and the workspaces the invite names.
          </Text>
          <Failure error={error} />
          <Button onClick={accept} loading={busy} data-testid="accept-invite">
            Accept the invite
          </Button>
        </>
      )}
      {joined && (
        <Alert color="teal" title="You joined" data-testid="invite-accepted">
          {me?.approved ? (
            <Anchor component={Link} to="/tasks/board">
              Open the console
            </Anchor>
          ) : (
            'Your account still waits for an instance admin to approve it; the organization is there once they do.'
          )}
        </Alert>
      )}
    </Page>
  )
}

/** /reset?token=…: set a new password. /reset alone: ask for a link. */
export function ResetPage() {
  const [params] = useSearchParams()
  const token = params.get('token') ?? ''
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')
  const [done, setDone] = useState(false)
  const [captcha, setCaptcha] = useState(false)

  useEffect(() => {
    get('/api/auth/setup').then((s) => setCaptcha(s.captcha), () => undefined)
  }, [])

  const submit = async (e: React.FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError('')
    try {
      if (token) {
        await post('/api/auth/reset/consume', { body: { token, password } })
      } else {
        const r = await post('/api/auth/reset/request', { body: { email, captcha: captcha ? await solveCaptcha() : undefined } })
        if (!r.ok) throw new Error('The request was not accepted: try again.')
      }
      setDone(true)
    } catch (err) {
      setError(messageOf(err))
    } finally {
      setBusy(false)
    }
  }

  if (done)
    return (
      <Page title={token ? 'Password changed' : 'Check your mail'}>
        <Alert color="teal" data-testid="reset-done">
          {token
            ? 'Your new password is set, and every other session of your account is signed out.'
            : 'If the address has an account with a password, a reset link is on its way. It works once, for a limited time.'}
        </Alert>
        <Anchor component={Link} to="/login">
          Sign in
        </Anchor>
      </Page>
    )
  return (
    <Page title={token ? 'Choose a new password' : 'Reset your password'}>
      <form onSubmit={submit}>
        <Stack>
          {token ? (
            <PasswordInput
              label="New password"
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
              required
              autoComplete="new-password"
              description="At least 10 characters, not a common password"
              data-testid="new-password"
            />
          ) : (
            <TextInput label="Email" type="email" value={email} onChange={(e) => setEmail(e.currentTarget.value)} required autoComplete="username" data-testid="reset-email" />
          )}
          <Failure error={error} />
          <Button type="submit" loading={busy} data-testid="reset-submit">
            {token ? 'Set the password' : 'Mail me a reset link'}
          </Button>
        </Stack>
      </form>
      <Anchor component={Link} to="/login" size="sm">
        Back to sign in
      </Anchor>
    </Page>
  )
}

/** /magic/confirm?token=…: the mailed sign-in link, consumed by a click here (mail scanners only follow links). */
export function MagicConfirmPage() {
  const { refresh } = useSession()
  const [params] = useSearchParams()
  const navigate = useNavigate()
  const token = params.get('token') ?? ''
  const [totpToken, setTotpToken] = useState('')
  const [code, setCode] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')

  const submit = async (e: React.FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError('')
    try {
      const r = totpToken ? await post('/api/auth/2fa/verify', { body: { token: totpToken, code } }) : await post('/api/auth/magic/consume', { body: { token } })
      if (r.totp_required && r.totp_token) {
        setTotpToken(r.totp_token)
        return
      }
      await refresh()
      navigate('/tasks/board', { replace: true })
    } catch (err) {
      setError(messageOf(err))
    } finally {
      setBusy(false)
    }
  }

  return (
    <Page title="Sign in with the mailed link">
      <form onSubmit={submit}>
        <Stack>
          {totpToken ? (
            <TextInput label="Two-factor code" value={code} onChange={(e) => setCode(e.currentTarget.value)} required autoComplete="one-time-code" />
          ) : (
            <Text size="sm">The link signs this browser in, once. It was sent because someone asked for it with your address.</Text>
          )}
          <Failure error={token ? error : 'This link has no sign-in token in it: open the link from the mail as it is.'} />
          <Button type="submit" loading={busy} disabled={!token} data-testid="magic-confirm">
            {totpToken ? 'Verify' : 'Sign in'}
          </Button>
        </Stack>
      </form>
    </Page>
  )
}
