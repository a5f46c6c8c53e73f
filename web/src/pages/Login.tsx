import { Alert, Anchor, Button, Card, Center, Code, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link, useNavigate, useSearchParams } from 'react-router-dom'
import { get, messageOf, post, type Schemas } from '../api'
import { useSession } from '../session'

type Setup = Schemas['Setup']

/** Sign-in and registration; explains the wait for approval and how the first admin is made. */
export function Login({ register = false }: { register?: boolean }) {
  const { me, refresh } = useSession()
  const [params] = useSearchParams()
  const navigate = useNavigate()
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [name, setName] = useState('')
  const [code, setCode] = useState('')
  const [totpToken, setTotpToken] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')
  const [registered, setRegistered] = useState(false)
  const [setup, setSetup] = useState<Setup | null>(null)

  useEffect(() => {
    get('/api/auth/setup').then(setSetup, () => undefined)
  }, [])

  const pending = me && !me.approved
  const next = params.get('next') || ''
  // Only a path of this console: never another site.
  const safeNext = next.startsWith('/') && !next.startsWith('//') ? next : ''
  useEffect(() => {
    // An invite may be accepted while the account waits for approval.
    // The address check lands here to say how it went: that stays on screen.
    if (params.has('verified')) return
    if (me?.approved || (me && safeNext.startsWith('/invite'))) navigate(safeNext || '/tasks/board', { replace: true })
  }, [me, navigate, safeNext, params])

  const signIn = async (e: React.FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError('')
    try {
      if (register) {
        await post('/api/auth/register', { body: { email, password, display_name: name } })
        setRegistered(true)
      }
      const r = totpToken
        ? await post('/api/auth/2fa/verify', { body: { token: totpToken, code } })
        : await post('/api/auth/login', { body: { email, password } })
      if (r.totp_required && r.totp_token) {
        setTotpToken(r.totp_token)
      } else {
        await refresh()
      }
    } catch (err) {
      setError(messageOf(err))
    } finally {
      setBusy(false)
    }
  }

  return (
    <Center mih="100vh" p="md">
      <Card withBorder shadow="sm" w={420} p="lg">
        <Stack>
          <Title order={2}>{register ? 'Create an account' : 'Sign in to Slipway'}</Title>
          {setup && !setup.has_admin && (
            <Alert color="blue" title="No instance admin yet" data-testid="no-admin">
              {setup.initial_admins ? (
                <Text size="sm">
                  This instance has no administrator yet. The server names its first admins: create an account with one of those addresses
                  and it is the administrator at once.
                </Text>
              ) : (
                <Text size="sm">
                  This instance has no administrator. Make one on the server: list the address in <Code>SERVICE_INITIAL_ADMIN_EMAILS</Code> before
                  it registers, or run <Code>slipway users create --admin --email grace@example.com</Code> offline. No control in this console
                  grants admin.
                </Text>
              )}
            </Alert>
          )}
          {(pending || params.get('pending')) && (
            <Alert color="yellow" title="Waiting for approval" data-testid="pending">
              Your account exists and waits for an instance admin to approve it. You can sign in, but nothing is shown until then; an invite
              from an organization still needs the approval.
            </Alert>
          )}
          {registered && !pending && <Alert color="teal">Account created.</Alert>}
          {params.get('verified') === '1' && (
            <Alert color="teal" data-testid="verified">
              Your email address is confirmed.{' '}
              {me && (
                <Anchor component={Link} to="/tasks/board">
                  Open the console
                </Anchor>
              )}
            </Alert>
          )}
          {params.get('verified') === '0' && (
            <Alert color="red" data-testid="verified">
              This confirmation link is not valid: it is unknown, already used or expired. Sign in and mail yourself a new one from Settings.
            </Alert>
          )}
          <form onSubmit={signIn}>
            <Stack>
              {!totpToken && (
                <>
                  {register && <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} required maxLength={100} data-testid="login-name" />}
                  <TextInput label="Email" type="email" value={email} onChange={(e) => setEmail(e.currentTarget.value)} required autoComplete="username" data-testid="login-email" />
                  <PasswordInput
                    label="Password"
                    value={password}
                    onChange={(e) => setPassword(e.currentTarget.value)}
                    required
                    autoComplete={register ? 'new-password' : 'current-password'}
                    data-testid="login-password"
                    description={register ? 'At least 10 characters, not a common password' : undefined}
                  />
                </>
              )}
              {totpToken && (
                <TextInput label="Two-factor code" value={code} onChange={(e) => setCode(e.currentTarget.value)} required autoComplete="one-time-code" />
              )}
              {error && (
                <Alert color="red" role="alert">
                  {error}
                </Alert>
              )}
              <Button type="submit" loading={busy}>
                {register ? 'Create account' : totpToken ? 'Verify' : 'Sign in'}
              </Button>
            </Stack>
          </form>
          <Text size="sm">
            {register ? (
              <>
                Have an account?{' '}
                <Anchor component={Link} to={`/login${safeNext ? `?next=${encodeURIComponent(safeNext)}` : ''}`}>
                  Sign in
                </Anchor>
              </>
            ) : (
              <>
                New here?{' '}
                <Anchor component={Link} to={`/register${safeNext ? `?next=${encodeURIComponent(safeNext)}` : ''}`}>
                  Create an account
                </Anchor>
                {' · '}
                <Anchor component={Link} to="/reset" data-testid="forgot-password">
                  Forgot password?
                </Anchor>
              </>
            )}
          </Text>
          <Text size="sm" c="dimmed">
            <Anchor component={Link} to="/plans" data-testid="plans-link">
              See the plans and prices
            </Anchor>
          </Text>
        </Stack>
      </Card>
    </Center>
  )
}
