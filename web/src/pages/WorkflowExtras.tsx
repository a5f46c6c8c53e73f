// Around a workflow's canvas: its triggers (a webhook's receiver URL and
// token shown once; a schedule's next ticks previewed while its cron is
// typed), its newest runs, and its YAML.
import { Alert, Anchor, Badge, Button, Card, Code, Group, Modal, NativeSelect, PasswordInput, Stack, Switch, Table, Text, Textarea, TextInput } from '@mantine/core'
import { useEffect, useRef, useState } from 'react'
import { Link } from 'react-router-dom'
import { del, get, messageOf, patch, post, type Schemas } from '../api'
import { readsOf } from '../canvas/graph'
import { ScriptLog } from '../events'
import { Copy, ErrorNote, Loading, Status, useAction, useLoad, when } from '../ui'

type Trigger = Schemas['Trigger']
type Kind = 'webhook' | 'schedule' | 'intercom' | 'helpscout' | 'email_plus_address' | 'email'

/** Support products whose conversation webhooks start runs (a customer's message also becomes a backlog card). */
const conversation: Partial<Record<Kind, string>> = { intercom: 'Intercom', helpscout: 'Help Scout' }

export function TriggersCard({ workflowId, justCreated }: { workflowId: string; justCreated?: Trigger | null }) {
  const triggers = useLoad(async () => (await get('/api/workflows/{id}/triggers', { params: { path: { id: workflowId } } })) ?? [], [workflowId])
  const action = useAction()
  const [kind, setKind] = useState<Kind>('webhook')
  const [mode, setMode] = useState<'async' | 'sync'>('async')
  const [secret, setSecret] = useState('')
  const [cron, setCron] = useState('0 9 * * 1-5')
  const [tz, setTz] = useState(Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC')
  const [shown, setShown] = useState<Trigger | null>(justCreated ?? null)
  const [mailbox, setMailbox] = useState('')
  const [alias, setAlias] = useState('')
  const isEmail = kind === 'email_plus_address' || kind === 'email'
  const mailboxes = useLoad(async () => (isEmail ? ((await get('/api/resources', { params: { query: { kind: 'imap' } } })) ?? []) : null), [isEmail])
  const preview = kind === 'schedule' ? nextTicks(cron, tz, 3) : null

  const add = (e: React.FormEvent) => {
    e.preventDefault()
    action.run('add', async () => {
      const body =
        kind === 'webhook'
          ? { kind, config: { response_mode: mode }, ...(secret ? { secret } : {}) }
          : kind === 'schedule'
            ? { kind, config: { cron: cron.trim(), timezone: tz.trim() || 'UTC' } }
            : kind === 'email_plus_address'
              ? { kind, config: { resource_id: mailbox || mailboxes.data?.[0]?.id || '', ...(alias.trim() ? { alias: alias.trim() } : {}) } }
              : kind === 'email'
                ? { kind, config: { resource_id: mailbox || mailboxes.data?.[0]?.id || '' } }
                : { kind, ...(secret ? { secret } : {}) }
      const t = await post('/api/workflows/{id}/triggers', { params: { path: { id: workflowId } }, body })
      setSecret('')
      setAlias('')
      if (t.token) setShown(t)
      await triggers.reload()
    })
  }
  const toggle = (t: Trigger) =>
    action.run(`toggle-${t.id}`, async () => {
      await patch('/api/workflows/triggers/{trigger_id}', { params: { path: { trigger_id: t.id } }, body: { enabled: !t.enabled } })
      await triggers.reload()
    })
  const remove = (t: Trigger) =>
    action.run(`remove-${t.id}`, async () => {
      await del('/api/workflows/triggers/{trigger_id}', { params: { path: { trigger_id: t.id } } })
      await triggers.reload()
    })
  const migrate = (t: Trigger) =>
    action.run(`migrate-${t.id}`, async () => {
      await post('/api/workflows/triggers/{trigger_id}/migrate-email', { params: { path: { trigger_id: t.id } } })
      await triggers.reload()
    })
  const rotate = (t: Trigger) =>
    action.run(`rotate-${t.id}`, async () => {
      setShown(await post('/api/workflows/triggers/{trigger_id}/rotate-token', { params: { path: { trigger_id: t.id } } }))
    })

  return (
    <Card withBorder data-testid="triggers">
      <Stack gap="xs">
        <Text fw={600}>Triggers</Text>
        {triggers.loading && !triggers.data ? (
          <Loading />
        ) : (triggers.data ?? []).length === 0 ? (
          <Text size="sm" c="dimmed">
            No trigger: runs start by hand (or through the API).
          </Text>
        ) : (
          <Table fz="sm">
            <Table.Tbody>
              {(triggers.data ?? []).map((t) => (
                <Table.Tr key={t.id} data-testid={`trigger-${t.kind}`}>
                  <Table.Td>
                    <Badge variant="light">{t.kind}</Badge>
                  </Table.Td>
                  <Table.Td>
                    {t.kind === 'schedule' ? (
                      <Text size="xs">
                        <Code>{t.config.cron ?? `every ${t.config.interval_seconds} s`}</Code> {t.config.timezone ?? 'UTC'}
                        {t.next_fire_at && ` · next ${when(t.next_fire_at)}`}
                      </Text>
                    ) : t.kind === 'email_plus_address' ? (
                      <Group gap={4} wrap="nowrap">
                        <Text size="xs">
                          Mail to <Code data-testid="email-address">{t.email_address}</Code> starts a run
                        </Text>
                        {t.email_address && <Copy value={t.email_address} label="Copy" />}
                      </Group>
                    ) : t.kind === 'email' ? (
                      <Text size="xs">Every message of the mailbox that no alias takes (legacy): give it an address of its own</Text>
                    ) : conversation[t.kind as Kind] ? (
                      <Text size="xs">{conversation[t.kind as Kind]}'s conversation webhook · signed deliveries · messages go to the backlog</Text>
                    ) : (
                      <Text size="xs">
                        {t.config.response_mode ?? 'async'}
                        {t.has_secret ? ' · signed deliveries' : ''}
                      </Text>
                    )}
                    {t.last_fired_at && (
                      <Text size="xs" c="dimmed">
                        last fired {when(t.last_fired_at)}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      <Switch size="xs" checked={t.enabled} onChange={() => toggle(t)} label={t.enabled ? 'on' : 'off'} />
                      {t.kind === 'email' && (
                        <Button size="compact-xs" variant="light" loading={action.busy === `migrate-${t.id}`} onClick={() => migrate(t)} data-testid="migrate-email">
                          Give it an address
                        </Button>
                      )}
                      {t.kind !== 'schedule' && t.kind !== 'email' && t.kind !== 'email_plus_address' && (
                        <Button size="compact-xs" variant="light" loading={action.busy === `rotate-${t.id}`} onClick={() => rotate(t)}>
                          New token
                        </Button>
                      )}
                      <Button size="compact-xs" variant="light" color="red" loading={action.busy === `remove-${t.id}`} onClick={() => remove(t)}>
                        Remove
                      </Button>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        <form onSubmit={add}>
          <Group align="end" gap="xs">
            <NativeSelect
              label="Add"
              size="xs"
              value={kind}
              onChange={(e) => setKind(e.currentTarget.value as Kind)}
              data={[
                { value: 'webhook', label: 'Webhook' },
                { value: 'schedule', label: 'Schedule' },
                { value: 'intercom', label: 'Intercom conversations' },
                { value: 'helpscout', label: 'Help Scout conversations' },
                { value: 'email_plus_address', label: 'Email (a plus address)' },
                { value: 'email', label: 'Email (the whole mailbox, legacy)' },
              ]}
              data-testid="trigger-kind"
            />
            {kind === 'webhook' ? (
              <>
                <NativeSelect
                  label="Answer"
                  size="xs"
                  value={mode}
                  onChange={(e) => setMode(e.currentTarget.value as 'async' | 'sync')}
                  data={[
                    { value: 'async', label: 'at once (202)' },
                    { value: 'sync', label: 'with the run’s output' },
                  ]}
                  data-testid="trigger-mode"
                />
                <PasswordInput label="Signing secret (optional)" size="xs" value={secret} onChange={(e) => setSecret(e.currentTarget.value)} maxLength={256} w={200} />
              </>
            ) : isEmail ? (
              <>
                <NativeSelect
                  label="Mailbox (an imap resource)"
                  size="xs"
                  value={mailbox}
                  onChange={(e) => setMailbox(e.currentTarget.value)}
                  data={(mailboxes.data ?? []).map((r) => ({ value: r.id, label: r.name }))}
                  data-testid="trigger-mailbox"
                />
                {kind === 'email_plus_address' && (
                  <TextInput
                    label="Alias (optional: made from the name)"
                    size="xs"
                    value={alias}
                    onChange={(e) => setAlias(e.currentTarget.value)}
                    maxLength={63}
                    w={200}
                    data-testid="trigger-alias"
                  />
                )}
                {mailboxes.data && mailboxes.data.length === 0 && (
                  <Text size="xs" c="dimmed">
                    No imap resource yet: <Anchor component={Link} to="/resources">add the mailbox</Anchor> first.
                  </Text>
                )}
              </>
            ) : conversation[kind] ? (
              <PasswordInput
                label={kind === 'intercom' ? "The app's client secret" : 'Signing secret (optional: one is made)'}
                size="xs"
                value={secret}
                onChange={(e) => setSecret(e.currentTarget.value)}
                maxLength={256}
                w={220}
                data-testid="trigger-secret"
              />
            ) : (
              <>
                <TextInput label="Cron" size="xs" value={cron} onChange={(e) => setCron(e.currentTarget.value)} maxLength={200} w={150} data-testid="trigger-cron" />
                <TextInput label="Time zone" size="xs" value={tz} onChange={(e) => setTz(e.currentTarget.value)} maxLength={100} w={150} />
              </>
            )}
            <Button type="submit" size="xs" loading={action.busy === 'add'} data-testid="add-trigger">
              Add trigger
            </Button>
          </Group>
        </form>
        {preview && (
          <Text size="xs" c={preview.error ? 'red' : 'dimmed'} data-testid="cron-preview">
            {preview.error ? preview.error : `Next: ${preview.times.join(' · ')}`}
          </Text>
        )}
        {(triggers.data ?? []).some((t) => t.kind === 'email_plus_address' || t.kind === 'email') && (
          <Text size="xs" c="dimmed">
            Mail to an alias no trigger has waits among the <Anchor component={Link} to="/workflows/email">unrouted email</Anchor>.
          </Text>
        )}
        <ErrorNote error={action.error || triggers.error || mailboxes.error} />
      </Stack>
      <Modal opened={!!shown} onClose={() => setShown(null)} title="The webhook's address, shown once" size="lg" closeOnClickOutside={false}>
        {shown && (
          <Stack>
            <Alert color="yellow">Keep it now: the token in it is never shown again (New token replaces it).</Alert>
            <Code block data-testid="webhook-url">
              {absolute(shown.receiver_url ?? '')}
            </Code>
            {shown.signing_secret && (
              <>
                <Text size="sm">The signing secret (paste it where {conversation[shown.kind as Kind]} asks for the webhook's secret):</Text>
                <Code block data-testid="webhook-secret">
                  {shown.signing_secret}
                </Code>
              </>
            )}
            <Group>
              <Copy value={absolute(shown.receiver_url ?? '')} label="Copy the address" size="sm" />
              <Button variant="default" onClick={() => setShown(null)} data-testid="close-webhook">
                I have kept it
              </Button>
            </Group>
            <Text size="xs" c="dimmed">
              Deliver with <Code>POST</Code> and a JSON body: the body is the run's input.
            </Text>
          </Stack>
        )}
      </Modal>
    </Card>
  )
}

/** The workflow's newest runs. */
export function HistoryCard({ workflowId }: { workflowId: string }) {
  const runs = useLoad(async () => (await get('/api/workflows/{id}/runs', { params: { path: { id: workflowId }, query: { limit: 20 } } })) ?? [], [workflowId])
  return (
    <Card withBorder data-testid="run-history">
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600}>Recent runs</Text>
          <Button size="compact-xs" variant="subtle" onClick={() => runs.reload()}>
            Refresh
          </Button>
        </Group>
        <ErrorNote error={runs.error} />
        {(runs.data ?? []).length === 0 ? (
          <Text size="sm" c="dimmed">
            No run yet.
          </Text>
        ) : (
          <Table fz="sm">
            <Table.Tbody>
              {(runs.data ?? []).map((r) => (
                <Table.Tr key={r.id} data-testid={`history-${r.id}`}>
                  <Table.Td>
                    <Anchor component={Link} to={`/workflows/runs/${r.id}`} size="sm">
                      {when(r.created_at)}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <Status status={r.status} />
                  </Table.Td>
                  <Table.Td>
                    <Text size="xs" c="red" lineClamp={1}>
                      {r.error}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Stack>
    </Card>
  )
}

/** Downloads the workflow as its YAML document. */
export async function exportYAML(workflowId: string, name: string) {
  const yaml = String(await get('/api/workflows/{id}/export', { params: { path: { id: workflowId } } }))
  const url = URL.createObjectURL(new Blob([yaml], { type: 'application/yaml' }))
  const a = document.createElement('a')
  a.href = url
  a.download = `${name.replace(/[^\w.-]+/g, '-')}.yaml`
  a.click()
  URL.revokeObjectURL(url)
}

/** A receiver URL as the server gives it: absolute with SERVICE_PUBLIC_URL, else a path of this origin. */
const absolute = (u: string) => (/^https?:\/\//.test(u) ? u : location.origin + u)

// ---------------------------------------------------------------------------
// A cron preview: the next ticks of a five-field expression (or @hourly…)
// in a time zone, computed here while it is typed. The server parses it
// again when the trigger is saved (and says so when it disagrees).

const macros: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
}

function field(spec: string, lo: number, hi: number, names: string[] = []): Set<number> | string {
  const out = new Set<number>()
  for (const part of spec.toLowerCase().split(',')) {
    const [range, stepText] = part.split('/')
    const step = stepText === undefined ? 1 : Number(stepText)
    if (!Number.isInteger(step) || step < 1) return `bad step in ${part}`
    const value = (s: string) => {
      const i = names.indexOf(s)
      return i >= 0 ? i + lo : Number(s)
    }
    let a: number
    let b: number
    if (range === '*') {
      a = lo
      b = hi
    } else if (range.includes('-')) {
      const [x, y] = range.split('-')
      a = value(x)
      b = value(y)
    } else {
      a = value(range)
      b = stepText === undefined ? a : hi
    }
    if (!Number.isInteger(a) || !Number.isInteger(b) || a < lo || b > hi || a > b) return `${part} is out of ${lo}–${hi}`
    for (let v = a; v <= b; v += step) out.add(v)
  }
  return out
}

type Parts = { minute: number; hour: number; day: number; month: number; weekday: number }

function partsIn(tz: string, t: Date): Parts {
  const f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', weekday: 'short' })
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, x.value]))
  const weekdays = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
  return { minute: Number(p.minute), hour: Number(p.hour), day: Number(p.day), month: Number(p.month), weekday: weekdays.indexOf(p.weekday) }
}

/** The next n ticks of a cron expression in a time zone, as local text; or why it cannot be read. */
export function nextTicks(expr: string, tz: string, n: number): { times: string[]; error?: string } {
  const spec = (macros[expr.trim().toLowerCase()] ?? expr).trim().split(/\s+/)
  if (spec.length !== 5) return { times: [], error: 'A cron expression has five fields: minute hour day month weekday.' }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
  } catch {
    return { times: [], error: `${tz} is not a time zone.` }
  }
  const months = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
  const days = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat']
  const sets = [field(spec[0], 0, 59), field(spec[1], 0, 23), field(spec[2], 1, 31), field(spec[3], 1, 12, months), field(spec[4], 0, 7, days)]
  const bad = sets.find((x) => typeof x === 'string')
  if (bad) return { times: [], error: bad as string }
  const [mins, hours, doms, mons, dows] = sets as Set<number>[]
  if (dows.has(7)) dows.add(0)
  const domAny = spec[2] === '*'
  const dowAny = spec[4] === '*'
  const times: string[] = []
  let t = new Date(Math.ceil((Date.now() + 1) / 60_000) * 60_000)
  // Minute by minute, skipping whole hours and days that cannot match; a year at most.
  for (let guard = 0; times.length < n && guard < 200_000; guard++) {
    const p = partsIn(tz, t)
    const dayOK = domAny && dowAny ? true : domAny ? dows.has(p.weekday) : dowAny ? doms.has(p.day) : doms.has(p.day) || dows.has(p.weekday)
    if (!mons.has(p.month) || !dayOK) {
      t = new Date(t.getTime() + (24 * 60 - p.hour * 60 - p.minute) * 60_000)
      continue
    }
    if (!hours.has(p.hour)) {
      t = new Date(t.getTime() + (60 - p.minute) * 60_000)
      continue
    }
    if (mins.has(p.minute)) times.push(t.toLocaleString())
    t = new Date(t.getTime() + 60_000)
  }
  return times.length ? { times } : { times, error: 'It never fires within a year.' }
}

type NodeTestResult = Schemas['NodeTestResult']

/**
 * "Test this node": the node as edited (saved or not) run alone by the server
 * with sample input and other nodes' outputs, prefilled from the last run.
 */
export function NodeTest(props: { workflowId: string; nodeKey: string; kind: string; config: Record<string, unknown>; inLoop: boolean }) {
  const { workflowId, nodeKey, kind, config, inLoop } = props
  const blank = () => {
    const nodes: Record<string, unknown> = {}
    for (const k of readsOf(config)) if (k !== nodeKey) nodes[k] = null
    return JSON.stringify({ input: {}, trigger: null, nodes, ...(inLoop ? { item: null } : {}) }, null, 2)
  }
  const [sample, setSample] = useState(blank)
  const [result, setResult] = useState<NodeTestResult | null>(null)
  const [note, setNote] = useState('')
  const action = useAction()
  const open = useRef(true)
  useEffect(() => {
    open.current = true
    return () => {
      open.current = false
    }
  }, [])
  const fromLastRun = () =>
    action.run('last-run', async () => {
      const runs = await get('/api/workflows/{id}/runs', { params: { path: { id: workflowId }, query: { limit: 1 } } })
      if (!runs?.length) {
        setNote('No run yet: fill the samples by hand.')
        return
      }
      const run = await get('/api/workflows/runs/{run_id}', { params: { path: { run_id: runs[0].id } } })
      const ran = run.nodes ?? []
      const nodes: Record<string, unknown> = {}
      for (const k of readsOf(config)) {
        const nr = ran.find((n) => n.key === k && n.frame === '')
        if (k !== nodeKey) nodes[k] = nr?.output ?? null
      }
      setSample(JSON.stringify({ input: run.input ?? null, trigger: null, nodes, ...(inLoop ? { item: null } : {}) }, null, 2))
      setNote(`From run ${runs[0].id.slice(0, 8)} (${run.status})${inLoop ? '; the loop item is yours to fill' : ''}.`)
    })
  const test = () =>
    action.run('test', async () => {
      setResult(null)
      let s: { input?: unknown; trigger?: unknown; nodes?: Record<string, unknown>; item?: unknown }
      try {
        s = JSON.parse(sample)
      } catch (e) {
        throw new Error(`The samples are not valid JSON: ${messageOf(e)}`)
      }
      const body = { node: { key: nodeKey, kind, config }, input: s.input ?? null, trigger: s.trigger ?? null, nodes: s.nodes ?? {}, item: s.item }
      let r = await post('/api/workflows/{id}/test-node', { params: { path: { id: workflowId } }, body: body as Schemas['NodeTest'] })
      setResult(r)
      // A code node's test is a job: followed until it ends (its logs show
      // as it runs), or until the panel closes.
      while (open.current && r.test_id && (r.status === 'queued' || r.status === 'running')) {
        await new Promise((done) => setTimeout(done, 500))
        r = await get('/api/workflows/{id}/node-tests/{test_id}', { params: { path: { id: workflowId, test_id: r.test_id } } })
        setResult(r)
      }
    })
  return (
    <Stack gap={6} data-testid="node-test">
      <Group justify="space-between">
        <Text size="sm" fw={500}>
          Test this node
        </Text>
        <Button size="compact-xs" variant="subtle" onClick={fromLastRun} loading={action.busy === 'last-run'} data-testid="node-test-last-run">
          Use the last run
        </Button>
      </Group>
      <Text size="xs" c="dimmed">
        Runs this node alone, as edited, with these samples
        {kind === 'http_request' || kind === 'notify_webhook' ? ' (it really sends its request)' : kind === 'code' ? ' (its script runs sandboxed, as in a run)' : ''}. Nothing
        else is saved.
      </Text>
      <Textarea
        value={sample}
        onChange={(e) => setSample(e.currentTarget.value)}
        autosize
        minRows={3}
        maxRows={12}
        spellCheck={false}
        aria-label="Sample data"
        styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 12 } }}
        data-testid="node-test-sample"
      />
      {note && (
        <Text size="xs" c="dimmed">
          {note}
        </Text>
      )}
      <Button size="xs" onClick={test} loading={action.busy === 'test'} data-testid="node-test-run">
        Test
      </Button>
      <ErrorNote error={action.error} />
      {result && (
        <Stack gap={4} data-testid="node-test-result" data-status={result.status}>
          <Group gap="xs">
            <Status status={result.status} />
            {result.handle && <Badge variant="light">fires {result.handle}</Badge>}
            <Text size="xs" c="dimmed">
              {result.duration_ms} ms
            </Text>
          </Group>
          {result.error && (
            <Text size="sm" c="red">
              {result.error}
            </Text>
          )}
          {result.waits && <Text size="sm">In a run it would wait for {result.waits}</Text>}
          {result.output !== null && result.output !== undefined && (
            <Code block data-testid="node-test-output">
              {JSON.stringify(result.output, null, 2)}
            </Code>
          )}
          {result.test_id && result.status !== 'queued' && <ScriptLog id={result.test_id} />}
        </Stack>
      )}
    </Stack>
  )
}
