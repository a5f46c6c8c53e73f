// The App error page editor: a page is a raw JSON object of which the
// server shows title, message and contact (other keys are kept and not
// shown). The owner console's error-page tab edits the instance default,
// the last fallback after an App's own page and its workspace's; the
// workspace settings card edits the workspace's page with the same editor.
import { Alert, Button, Card, Code, Group, Stack, Text, Textarea, Title } from '@mantine/core'
import { useState } from 'react'
import { get, put } from '../api'
import { ErrorNote, Loading, useAction, useLoad } from '../ui'

type Page = Record<string, unknown>

/** The keys the server renders, with their bounds (in characters). */
const known = [
  { key: 'title', max: 200 },
  { key: 'message', max: 2000 },
  { key: 'contact', max: 200 },
] as const

/** A page as stored, pretty-printed for editing ({} when none is set). */
function pretty(v: unknown): string {
  return JSON.stringify(v && typeof v === 'object' && !Array.isArray(v) ? v : {}, null, 2)
}

/** Parses the editor's text: the page, or why it cannot be sent. */
export function parsePage(text: string): { page: Page; problem?: undefined } | { page?: undefined; problem: string } {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (e) {
    return { problem: `Invalid JSON: ${e instanceof Error ? e.message : String(e)}` }
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { problem: 'Invalid page: it must be a JSON object ({…}).' }
  const page = v as Page
  for (const k of known) {
    if (!(k.key in page)) continue
    const s = page[k.key]
    if (typeof s !== 'string') return { problem: `Invalid page: ${k.key} must be a string.` }
    if ([...s].length > k.max) return { problem: `Invalid page: ${k.key} must be at most ${k.max} characters.` }
  }
  return { page }
}

/**
 * Edits one error page: load reads it, save replaces it whole (no merge;
 * {} clears it). Invalid JSON disables Save, so nothing is sent.
 */
export function ErrorPageEditor({ load, save, readOnly, testid }: { load: () => Promise<unknown>; save: (page: Page) => Promise<unknown>; readOnly?: boolean; testid: string }) {
  const current = useLoad(load, [load])
  if (current.loading && current.data === undefined) return <Loading />
  if (current.error && current.data === undefined) return <ErrorNote error={current.error} />
  return <Editor key={pretty(current.data)} stored={pretty(current.data)} save={save} readOnly={readOnly} testid={testid} />
}

function Editor({ stored, save, readOnly, testid }: { stored: string; save: (page: Page) => Promise<unknown>; readOnly?: boolean; testid: string }) {
  const [text, setText] = useState(stored)
  const [saved, setSaved] = useState(stored)
  const [done, setDone] = useState(false)
  const action = useAction()
  const parsed = parsePage(text)
  const changed = text !== saved
  const submit = async () => {
    if (!parsed.page) return
    setDone(false)
    const answer = await action.run('save', () => save(parsed.page))
    if (answer !== undefined) {
      const p = pretty(answer)
      setText(p)
      setSaved(p)
      setDone(true)
    }
  }
  return (
    <Stack gap="xs" data-testid={testid}>
      <Textarea
        label="Page (JSON object)"
        description="Shown: title, message and contact (as text). Other keys are kept and not shown. Saving replaces the whole page; {} clears it."
        value={text}
        onChange={(e) => {
          setText(e.currentTarget.value)
          setDone(false)
        }}
        readOnly={readOnly}
        autosize
        minRows={6}
        maxRows={24}
        spellCheck={false}
        styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 13 } }}
        error={!!parsed.problem}
        data-testid={`${testid}-json`}
      />
      {parsed.problem && (
        <Text size="sm" c="red" data-testid={`${testid}-invalid`} role="status">
          {parsed.problem} Nothing is sent until it is fixed.
        </Text>
      )}
      <ErrorNote error={action.error} />
      {!readOnly && (
        <Group>
          <Button size="xs" onClick={submit} disabled={!parsed.page || !changed} loading={action.busy === 'save'} data-testid={`${testid}-save`}>
            Save
          </Button>
          <Button size="xs" variant="default" onClick={() => setText('{}')} disabled={text.trim() === '{}'} data-testid={`${testid}-clear`}>
            Clear
          </Button>
          {done && (
            <Text size="sm" c="teal" data-testid={`${testid}-saved`}>
              Saved.
            </Text>
          )}
        </Group>
      )}
      <Preview page={parsed.page} testid={testid} />
    </Stack>
  )
}

/** What a visitor would read (the server's built-in texts where the page has none; here as for a 404). */
function Preview({ page, testid }: { page?: Page; testid: string }) {
  const text = (k: string) => (page && typeof page[k] === 'string' ? (page[k] as string) : '')
  const title = text('title') || 'This app is not deployed'
  const message = text('message') || 'There is nothing to show here yet. If this is your app, deploy it from the console.'
  const contact = text('contact')
  return (
    <Card withBorder bg="var(--mantine-color-default-hover)" data-testid={`${testid}-preview`}>
      <Text size="xs" c="dimmed" mb={4}>
        Preview
      </Text>
      <Title order={4} data-testid={`${testid}-preview-title`}>
        {title}
      </Title>
      <Text size="sm" style={{ whiteSpace: 'pre-line' }} data-testid={`${testid}-preview-message`}>
        {message}
      </Text>
      {contact && (
        <Text size="sm" c="dimmed" mt="xs" data-testid={`${testid}-preview-contact`}>
          Contact: {contact}
        </Text>
      )}
    </Card>
  )
}

const loadInstance = () => get('/api/admin/error-page')
const saveInstance = (page: Page) => put('/api/admin/error-page', { body: page })

/** The owner console's error-page tab: the instance-default App error page. */
export function ErrorPageTab() {
  return (
    <Stack data-testid="error-page">
      <Alert variant="light">
        The instance-default App error page: what a visitor sees when an App is not deployed or is failing, unless the App has its own page or its workspace
        has one. It is the last fallback before the built-in page. A page is a JSON object; <Code>title</Code>, <Code>message</Code> and <Code>contact</Code>{' '}
        are shown.
      </Alert>
      <ErrorPageEditor load={loadInstance} save={saveInstance} testid="admin-error-page" />
    </Stack>
  )
}
