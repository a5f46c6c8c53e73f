// An app's database and backend: its migrations (recorded, then applied by
// the next deploy of a release built after them), its backend functions
// with a form that calls each one, and a run of a workflow submitted as the
// app's front end would (an input and files).
import { Anchor, Badge, Button, Card, Checkbox, Code, FileInput, Group, NumberInput, Select, Stack, Table, Text, TextInput, Textarea, Tooltip } from '@mantine/core'
import { useState } from 'react'
import { Link } from 'react-router-dom'
import { get, post, type Schemas } from '../api'
import { useSession } from '../session'
import { count, ErrorNote, Loading, useAction, useLoad, when } from '../ui'
import { mono } from './Apps'

type Fn = Schemas['FunctionInfo']
type Arg = Schemas['Arg']
type AppRun = Schemas['AppRun']

// A submission's bounds, as the server holds them: at most 10 files of 10 MiB each.
const maxRunFiles = 10
const maxRunFileBytes = 10 << 20

export function MigrationsSection({ id }: { id: string }) {
  const migrations = useLoad(async () => (await get('/api/apps/{id}/migrations', { params: { path: { id } } })) ?? [], [id])
  const list = migrations.data ?? []
  return (
    <Stack data-testid="app-migrations">
      <Text size="sm" c="dimmed">
        Migrations apply in the order they were recorded, at the next deploy of a release built after them. A recorded migration never changes.
      </Text>
      <ErrorNote error={migrations.error} />
      {migrations.loading && !migrations.data ? (
        <Loading label="Loading migrations…" />
      ) : list.length === 0 ? (
        !migrations.error && (
          <Text c="dimmed" data-testid="app-migrations-empty">
            No migrations yet.
          </Text>
        )
      ) : (
        <Table striped data-testid="app-migration-list">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Checksum</Table.Th>
              <Table.Th>Applied</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.map((m) => (
              <Table.Tr key={m.name} data-testid={`app-migration-${m.name}`}>
                <Table.Td>
                  <Text size="sm" fw={500}>
                    {m.name}
                  </Text>
                  <Code block style={{ whiteSpace: 'pre-wrap' }}>
                    {m.sql}
                  </Code>
                </Table.Td>
                <Table.Td>
                  <Tooltip label={m.checksum}>
                    <Code>{m.checksum.slice(0, 12)}</Code>
                  </Tooltip>
                </Table.Td>
                <Table.Td data-testid="app-migration-applied" data-applied={!!m.applied_at}>
                  {m.applied_at ? (
                    when(m.applied_at)
                  ) : (
                    <Badge color="yellow" variant="light">
                      pending
                    </Badge>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <NewMigration id={id} known={list} onAdded={() => migrations.reload()} />
    </Stack>
  )
}

function NewMigration({ id, known, onAdded }: { id: string; known: Schemas['AppMigration'][]; onAdded: () => void }) {
  const [name, setName] = useState('')
  const [sql, setSQL] = useState('')
  const [note, setNote] = useState('')
  const action = useAction()
  const add = async (e: React.FormEvent) => {
    e.preventDefault()
    setNote('')
    const n = name.trim()
    // 201 records it, 200 is the same name and SQL again: the client sees the body only, so the list tells them apart.
    const existed = known.some((m) => m.name === n)
    const m = await action.run('add', () => post('/api/apps/{id}/migrations', { params: { path: { id } }, body: { name: n, sql } }))
    if (m) {
      setNote(existed ? `${m.name} is recorded already with this SQL: nothing changed.` : `Recorded ${m.name}: it applies at the next deploy of a new build.`)
      if (!existed) {
        setName('')
        setSQL('')
      }
      onAdded()
    }
  }
  return (
    <Card withBorder>
      <form onSubmit={add} aria-label="New migration">
        <Stack gap="xs">
          <Text fw={600}>Add a migration</Text>
          <TextInput
            label="Name"
            description="Letters, digits, _ . - (e.g. 001_orders)"
            required
            maxLength={100}
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            w={320}
            data-testid="app-migration-name"
          />
          <Textarea
            label="SQL"
            required
            value={sql}
            onChange={(e) => setSQL(e.currentTarget.value)}
            autosize
            minRows={3}
            maxRows={20}
            spellCheck={false}
            styles={mono}
            data-testid="app-migration-sql"
          />
          <Group>
            <Button type="submit" size="xs" disabled={!name.trim() || !sql.trim()} loading={action.busy === 'add'} data-testid="app-migration-add">
              Add migration
            </Button>
            {note && (
              <Text size="sm" data-testid="app-migration-note">
                {note}
              </Text>
            )}
          </Group>
          <ErrorNote error={action.error} />
        </Stack>
      </form>
    </Card>
  )
}

export function BackendSection({ id }: { id: string }) {
  const fns = useLoad(async () => (await get('/api/apps/{id}/backend', { params: { path: { id } } })) ?? [], [id])
  const list = fns.data ?? []
  return (
    <Stack data-testid="app-backend">
      <Text size="sm" c="dimmed">
        The functions the deployed release's manifest declares (before a first deploy, the app's own manifest). A call runs the deployed release's function.
      </Text>
      <ErrorNote error={fns.error} />
      {fns.loading && !fns.data ? (
        <Loading label="Loading functions…" />
      ) : list.length === 0 ? (
        !fns.error && (
          <Text c="dimmed" data-testid="app-backend-empty">
            The manifest declares no functions.
          </Text>
        )
      ) : (
        list.map((f) => <FunctionCard key={f.name} id={id} fn={f} />)
      )}
      <SubmitRunCard id={id} />
    </Stack>
  )
}

/** The submission's input: a JSON object, else an error saying why. */
function runInput(text: string): string {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (e) {
    throw new Error(`Input: invalid JSON (${e instanceof Error ? e.message : String(e)})`)
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('Input: a JSON object, e.g. {"name": "value"}')
  return text
}

/**
 * Starts a run of a workflow of the workspace as the app does: a multipart
 * submission of the workflow, an input object and files, which the run's
 * input lists (kept a day, downloadable from the links shown).
 */
function SubmitRunCard({ id }: { id: string }) {
  const { workspace } = useSession()
  const workflows = useLoad(async () => (await get('/api/workflows')) ?? [], [workspace?.id])
  const [workflow, setWorkflow] = useState<string | null>(null)
  const [input, setInput] = useState('{}')
  const [files, setFiles] = useState<File[]>([])
  const [run, setRun] = useState<AppRun | null>(null)
  const action = useAction()
  const submit = async (e: React.FormEvent) => {
    e.preventDefault()
    setRun(null)
    const r = await action.run('submit', async () => {
      const sent = runInput(input)
      if (files.length > maxRunFiles) throw new Error(`At most ${maxRunFiles} files per submission.`)
      const big = files.find((f) => f.size > maxRunFileBytes)
      if (big) throw new Error(`${big.name}: larger than 10 MiB.`)
      const form = new FormData()
      form.append('workflow_id', workflow ?? '')
      form.append('input', sent)
      for (const f of files) form.append('files', f, f.name)
      // The API's own client sends it (the session's CSRF and workspace
      // headers); openapi-fetch passes FormData as it is and the browser sets
      // the multipart Content-Type with its boundary. The document types the
      // body as the form's parts, so it goes in as never.
      return post('/api/apps/{id}/runs', { params: { path: { id } }, body: form as never })
    })
    if (r) setRun(r)
  }
  const options = (workflows.data ?? []).map((w) => ({ value: w.id, label: w.name }))
  return (
    <Card withBorder data-testid="app-submit-run">
      <form onSubmit={submit} aria-label="Submit a run">
        <Stack gap="xs">
          <Text fw={600}>Submit a run</Text>
          <Text size="sm" c="dimmed">
            Starts a workflow of the workspace as the app's page or server would (<Code>POST /api/apps/…/runs</Code>): the input object, with the files listed
            in it as <Code>files</Code>. Files are kept a day.
          </Text>
          <ErrorNote error={workflows.error} />
          <Group align="end">
            <Select
              label="Workflow"
              placeholder={workflows.loading && !workflows.data ? 'Loading…' : options.length ? 'Pick a workflow' : 'The workspace has no workflows'}
              data={options}
              value={workflow}
              onChange={setWorkflow}
              searchable
              required
              w={280}
              data-testid="app-run-workflow"
            />
            <FileInput
              label="Files"
              description={`At most ${maxRunFiles}, 10 MiB each`}
              placeholder="None"
              multiple
              clearable
              value={files}
              onChange={setFiles}
              w={320}
              data-testid="app-run-files"
            />
          </Group>
          <Textarea
            label="Input (a JSON object)"
            value={input}
            onChange={(e) => setInput(e.currentTarget.value)}
            autosize
            minRows={2}
            maxRows={12}
            spellCheck={false}
            styles={mono}
            data-testid="app-run-input"
          />
          <Group>
            <Button type="submit" size="xs" disabled={!workflow} loading={action.busy === 'submit'} data-testid="app-run-submit">
              Submit
            </Button>
          </Group>
          <ErrorNote error={action.error} />
          {run && (
            <Stack gap={4} data-testid="app-run-result">
              <Group gap="xs">
                <Text size="sm">Started</Text>
                <Anchor component={Link} to={`/workflows/runs/${run.run_id}`} size="sm" data-testid="app-run-link">
                  run {run.run_id.slice(-12)}
                </Anchor>
              </Group>
              {(run.files ?? []).map((f, i) => (
                <Group key={f.id} gap="xs">
                  <Anchor href={f.url} download={f.name} size="sm" data-testid={`app-run-file-${i}`}>
                    {f.name}
                  </Anchor>
                  <Text size="xs" c="dimmed">
                    {count(f.size, 'byte')} · {f.content_type} · until {when(f.expires_at)}
                  </Text>
                </Group>
              ))}
            </Stack>
          )}
        </Stack>
      </form>
    </Card>
  )
}

type Value = string | number | boolean

function initial(a: Arg): Value {
  if (a.type === 'boolean') return false
  return ''
}

/** An argument as sent: numbers and booleans as they are, json parsed, an empty optional one as null. */
function argValue(a: Arg, v: Value): unknown {
  if (a.type === 'boolean') return Boolean(v)
  if (v === '' && !(a.type === 'string' && a.required)) return null
  if (a.type === 'integer' || a.type === 'number') return typeof v === 'number' ? v : Number(v)
  if (a.type === 'json') {
    try {
      return JSON.parse(String(v))
    } catch (e) {
      throw new Error(`${a.name}: invalid JSON (${e instanceof Error ? e.message : String(e)})`)
    }
  }
  return String(v)
}

/** One function: its arguments and a "Try it" form calling it. */
function FunctionCard({ id, fn }: { id: string; fn: Fn }) {
  const args = fn.args ?? []
  const [values, setValues] = useState<Value[]>(() => args.map(initial))
  const [result, setResult] = useState<unknown>(undefined)
  const action = useAction()
  const set = (i: number, v: Value) => setValues(values.map((x, j) => (j === i ? v : x)))
  const call = async (e: React.FormEvent) => {
    e.preventDefault()
    setResult(undefined)
    const r = await action.run('call', async () => {
      const sent = args.map((a, i) => argValue(a, values[i]))
      return post('/api/apps/{id}/backend/{function_name}', { params: { path: { id, function_name: fn.name } }, body: { args: sent } })
    })
    if (r) setResult(r.result)
  }
  return (
    <Card withBorder data-testid={`app-fn-${fn.name}`}>
      <form onSubmit={call} aria-label={`Try ${fn.name}`}>
        <Stack gap="xs">
          <Group gap="xs">
            <Text fw={600} ff="monospace">
              {fn.name}
            </Text>
            <Badge variant="light" color={fn.operation === 'query' ? 'blue' : 'grape'}>
              {fn.operation}
            </Badge>
            <Text size="sm" c="dimmed">
              ({args.map((a) => `${a.name}: ${a.type}${a.required ? '' : '?'}`).join(', ')})
            </Text>
          </Group>
          {args.length > 0 && (
            <Group align="end">
              {args.map((a, i) => (
                <ArgInput key={a.name} arg={a} value={values[i]} onChange={(v) => set(i, v)} />
              ))}
            </Group>
          )}
          <Group>
            <Button type="submit" size="xs" variant="light" loading={action.busy === 'call'} data-testid="app-fn-call">
              Try it
            </Button>
          </Group>
          <ErrorNote error={action.error} />
          {result !== undefined && (
            <Code block data-testid="app-fn-result">
              {JSON.stringify(result, null, 2)}
            </Code>
          )}
        </Stack>
      </form>
    </Card>
  )
}

function ArgInput({ arg, value, onChange }: { arg: Arg; value: Value; onChange: (v: Value) => void }) {
  const label = `${arg.name} (${arg.type})`
  const testid = `app-arg-${arg.name}`
  switch (arg.type) {
    case 'boolean':
      return <Checkbox label={label} checked={Boolean(value)} onChange={(e) => onChange(e.currentTarget.checked)} data-testid={testid} mb={8} />
    case 'integer':
    case 'number':
      return (
        <NumberInput
          label={label}
          required={arg.required}
          allowDecimal={arg.type === 'number'}
          value={value as number | string}
          onChange={(v) => onChange(v)}
          w={160}
          data-testid={testid}
        />
      )
    case 'json':
      return (
        <Textarea
          label={label}
          required={arg.required}
          placeholder='{"key": "value"}'
          value={String(value)}
          onChange={(e) => onChange(e.currentTarget.value)}
          autosize
          minRows={1}
          styles={mono}
          w={280}
          data-testid={testid}
        />
      )
    default:
      return <TextInput label={label} required={arg.required} value={String(value)} onChange={(e) => onChange(e.currentTarget.value)} w={220} data-testid={testid} />
  }
}
