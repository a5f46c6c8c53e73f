// The owner console's templates tab: the transactional mail templates, edited
// for the whole instance, and the dev outbox (what was sent, and without an
// SMTP server the mails themselves).
import { Badge, Button, Card, Code, Grid, Group, NavLink, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { get, put, type Schemas } from '../api'
import { ErrorNote, Loading, useAction, useLoad, when } from '../ui'

type Template = Schemas['MailTemplate']
type Mail = Schemas['OutboxMail']

// As the server detects them (internal/mail/templates.go).
const placeholder = /\{\{\s*([a-z_]+)\s*\}\}/g

function placeholders(...texts: string[]): string[] {
  const found = new Set<string>()
  for (const t of texts) for (const m of t.matchAll(placeholder)) found.add(m[1])
  return [...found].sort()
}

const templateNames: Record<string, string> = {
  invite: 'Organization invite',
  reset: 'Password reset',
  verify: 'Address verification',
  magic: 'Sign-in link',
}

export function TemplatesTab() {
  const list = useLoad(() => get('/api/admin/templates'), [])
  const [selected, setSelected] = useState('')
  const templates = list.data ?? []
  const current = templates.find((t) => t.key === selected) ?? templates[0]
  return (
    <Stack>
      <ErrorNote error={list.error} />
      {list.loading && !list.data ? (
        <Loading label="Loading the templates…" />
      ) : (
        current && (
          <Grid>
            <Grid.Col span={{ base: 12, md: 3 }}>
              <Stack gap={2} data-testid="template-list">
                {templates.map((t) => (
                  <NavLink
                    key={t.key}
                    active={t.key === current.key}
                    onClick={() => setSelected(t.key)}
                    label={templateNames[t.key] ?? t.key}
                    description={t.custom ? `edited ${when(t.updated_at)}` : 'built-in default'}
                    data-testid={`template-${t.key}`}
                  />
                ))}
              </Stack>
            </Grid.Col>
            <Grid.Col span={{ base: 12, md: 9 }}>
              <TemplateEditor key={current.key} template={current} onSaved={list.reload} />
            </Grid.Col>
          </Grid>
        )
      )}
      <Outbox />
    </Stack>
  )
}

function TemplateEditor({ template, onSaved }: { template: Template; onSaved: () => Promise<void> }) {
  const [subject, setSubject] = useState(template.subject)
  const [body, setBody] = useState(template.body)
  const [reason, setReason] = useState('')
  const [saved, setSaved] = useState(false)
  const action = useAction()
  const allowed = template.allowed_variables ?? []
  const used = placeholders(subject, body)
  const unknown = used.filter((v) => !allowed.includes(v))
  const changed = subject !== template.subject || body !== template.body

  const save = async (e: React.FormEvent) => {
    e.preventDefault()
    setSaved(false)
    const ok = await action.run('save', () => put('/api/admin/templates/{key}', { params: { path: { key: template.key } }, body: reason ? { subject, body, reason } : { subject, body } }))
    if (ok) {
      setSaved(true)
      await onSaved()
    }
  }

  return (
    <Card withBorder>
      <form onSubmit={save}>
        <Stack gap="sm">
          <Group justify="space-between">
            <Title order={4}>{templateNames[template.key] ?? template.key}</Title>
            <Badge variant="light" color={template.custom ? 'blue' : 'gray'}>
              {template.custom ? 'edited' : 'default'}
            </Badge>
          </Group>
          <TextInput label="Subject" value={subject} onChange={(e) => setSubject(e.currentTarget.value)} required maxLength={300} data-testid="template-subject" />
          <Textarea
            label="Body"
            value={body}
            onChange={(e) => setBody(e.currentTarget.value)}
            required
            autosize
            minRows={6}
            maxLength={20000}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
            data-testid="template-body"
          />
          <Group gap={6} data-testid="template-placeholders">
            <Text size="sm" c="dimmed">
              Placeholders this mail fills in:
            </Text>
            {allowed.map((v) => (
              <Code key={v} color={used.includes(v) ? 'blue.1' : undefined}>{`{{${v}}}`}</Code>
            ))}
          </Group>
          {unknown.length > 0 && (
            <Text size="sm" c="red" data-testid="template-unknown">
              Not filled in by this mail: {unknown.map((v) => `{{${v}}}`).join(', ')}
            </Text>
          )}
          <TextInput label="Reason (optional, for the audit log)" value={reason} onChange={(e) => setReason(e.currentTarget.value)} maxLength={500} data-testid="template-reason" />
          <ErrorNote error={action.error} />
          <Group>
            <Button type="submit" loading={action.busy === 'save'} disabled={!changed} data-testid="save-template">
              Save for the whole instance
            </Button>
            {saved && !changed && (
              <Text size="sm" c="teal" data-testid="template-saved">
                Saved.
              </Text>
            )}
          </Group>
        </Stack>
      </form>
    </Card>
  )
}

const statusColor: Record<string, string> = { queued: 'yellow', sent: 'green', failed: 'red' }

/** The newest mails; bodies only when the instance has no SMTP server (the dev outbox). */
function Outbox() {
  const mails = useLoad(() => get('/api/admin/mail/outbox'), [])
  const [open, setOpen] = useState('')
  const reload = mails.reload
  // Mail goes out within seconds: keep the list current while the tab is open.
  useEffect(() => {
    const t = setInterval(reload, 5000)
    return () => clearInterval(t)
  }, [reload])
  const list = mails.data ?? []
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={4}>Outbox</Title>
        <Button variant="subtle" size="compact-sm" onClick={reload}>
          Refresh
        </Button>
      </Group>
      <ErrorNote error={mails.error} />
      {mails.loading && !mails.data ? (
        <Loading label="Loading the outbox…" />
      ) : list.length === 0 ? (
        <Text c="dimmed" size="sm" data-testid="outbox-empty">
          No mail yet.
        </Text>
      ) : (
        <Table striped data-testid="outbox">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Queued</Table.Th>
              <Table.Th>To</Table.Th>
              <Table.Th>Subject</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Attempts</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.map((m) => (
              <MailRow key={m.id} m={m} open={open === m.id} onToggle={() => setOpen(open === m.id ? '' : m.id)} />
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  )
}

function MailRow({ m, open, onToggle }: { m: Mail; open: boolean; onToggle: () => void }) {
  return (
    <>
      <Table.Tr data-testid={`mail-${m.to}`} onClick={m.body ? onToggle : undefined} style={m.body ? { cursor: 'pointer' } : undefined}>
        <Table.Td>{when(m.created_at)}</Table.Td>
        <Table.Td>{m.to}</Table.Td>
        <Table.Td>{m.subject}</Table.Td>
        <Table.Td>
          <Badge variant="light" color={statusColor[m.status]} title={m.last_error || undefined}>
            {m.status}
          </Badge>
        </Table.Td>
        <Table.Td>{m.attempts}</Table.Td>
      </Table.Tr>
      {open && m.body && (
        <Table.Tr>
          <Table.Td colSpan={5}>
            <Code block data-testid="mail-body">
              {m.body}
            </Code>
          </Table.Td>
        </Table.Tr>
      )}
    </>
  )
}
