// An app's files: the list, an editor for a text file (saved against the
// etag it was read at, so a change made meanwhile is not overwritten), a
// form for a new file (create-only) and deleting one.
import { Alert, Badge, Button, Card, Code, FileButton, Group, Stack, Table, Text, TextInput, Textarea, UnstyledButton } from '@mantine/core'
import { useState } from 'react'
import { ApiError, del, get, put, type Schemas } from '../api'
import { Confirm, ErrorNote, Loading, useAction, useLoad, when } from '../ui'
import { mono } from './Apps'

type FileInfo = Schemas['AppFileInfo']
type AppFile = Schemas['AppFile']

/**
 * The path parameters of a file's operations. The document writes the path
 * as Go's wildcard, {path...}, and openapi-fetch fills a template by the
 * name between its braces: the value goes under that name as well. It is
 * sent as one encoded segment (a / as %2F), which the server reads back as /.
 */
const fileAt = (id: string, path: string) => ({ id, path })

/** The If-Match header for an etag (the server answers etags quoted). */
const ifMatch = (etag: string) => ({ 'If-Match': `"${etag}"` })

const changedMeanwhile = (e: unknown) => e instanceof ApiError && e.status === 412

function sizeOf(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / (1 << 20)).toFixed(1)} MiB`
}

export function FilesSection({ id, entry }: { id: string; entry?: string }) {
  const files = useLoad(async () => (await get('/api/apps/{id}/files', { params: { path: { id } } })) ?? [], [id])
  const [open, setOpen] = useState<string | null>(null)
  const [deleting, setDeleting] = useState<FileInfo | null>(null)
  const action = useAction()
  const list = files.data ?? []
  const remove = async (f: FileInfo) => {
    const done = await action.run('delete', async () => {
      await del('/api/apps/{id}/files/{path}', { params: { path: fileAt(id, f.path), header: ifMatch(f.etag) } })
      return true
    })
    if (done) {
      if (open === f.path) setOpen(null)
      files.reload()
    }
  }
  return (
    <Stack data-testid="app-files">
      <ErrorNote error={files.error} />
      {entry && files.data && !list.some((f) => f.path === entry) && (
        <Alert color="yellow" data-testid="app-entry-missing">
          The manifest's entry page <Code>{entry}</Code> is not among the files yet: a build needs it.
        </Alert>
      )}
      {files.loading && !files.data ? (
        <Loading label="Loading files…" />
      ) : list.length === 0 ? (
        !files.error && (
          <Text c="dimmed" data-testid="app-files-empty">
            No files yet: add one below.
          </Text>
        )
      ) : (
        <Table striped highlightOnHover data-testid="app-file-list">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Path</Table.Th>
              <Table.Th>Size</Table.Th>
              <Table.Th>Updated</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.map((f) => (
              <Table.Tr key={f.path} data-testid={`app-file-${f.path}`} bg={open === f.path ? 'var(--mantine-color-blue-light)' : undefined}>
                <Table.Td>
                  <Group gap="xs">
                    <UnstyledButton onClick={() => setOpen(f.path)} data-testid="app-file-open" c="blue" fz="sm" ff="monospace">
                      {f.path}
                    </UnstyledButton>
                    {f.path === entry && (
                      <Badge size="xs" variant="light">
                        entry
                      </Badge>
                    )}
                  </Group>
                </Table.Td>
                <Table.Td>{sizeOf(f.size)}</Table.Td>
                <Table.Td>{when(f.updated_at)}</Table.Td>
                <Table.Td>
                  <Button size="compact-xs" color="red" variant="subtle" onClick={() => setDeleting(f)} data-testid="app-file-delete">
                    Delete
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {action.error ? (
        changedMeanwhile(action.error) ? (
          <Alert color="orange" data-testid="app-file-conflict">
            The file changed meanwhile — reload the list and try again.
          </Alert>
        ) : (
          <ErrorNote error={action.error} />
        )
      ) : null}
      {open && <FileEditor key={open} id={id} path={open} onSaved={() => files.reload()} onClose={() => setOpen(null)} />}
      <NewFile
        id={id}
        onCreated={(p) => {
          files.reload()
          setOpen(p)
        }}
      />
      <Confirm
        item={deleting}
        title={(f) => `Delete ${f.path}?`}
        message={() => 'The next build leaves it out; releases built before keep it.'}
        action={() => 'Delete file'}
        testid="confirm-delete-file"
        onCancel={() => setDeleting(null)}
        onConfirm={remove}
      />
    </Stack>
  )
}

/** Loads one file: text into the editor, a binary file as its size only. */
function FileEditor({ id, path, onSaved, onClose }: { id: string; path: string; onSaved: () => void; onClose: () => void }) {
  const file = useLoad(() => get('/api/apps/{id}/files/{path}', { params: { path: fileAt(id, path) } }), [id, path])
  const f = file.data
  return (
    <Card withBorder data-testid="app-file-editor" data-path={path}>
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600} ff="monospace" data-testid="app-file-editor-path">
            {path}
          </Text>
          <Group gap="xs">
            <Button size="xs" variant="default" onClick={() => file.reload()} data-testid="app-file-reload">
              Reload
            </Button>
            <Button size="xs" variant="default" onClick={onClose}>
              Close
            </Button>
          </Group>
        </Group>
        <ErrorNote error={file.error} />
        {file.loading && !f ? (
          <Loading />
        ) : !f ? null : f.encoding === 'base64' ? (
          <Text size="sm" c="dimmed" data-testid="app-file-binary">
            binary, {f.size} bytes
          </Text>
        ) : (
          // A reload (or a save) that changes the etag starts the editor again from the file as stored.
          <TextEditor key={f.etag} id={id} file={f} onSaved={onSaved} />
        )}
      </Stack>
    </Card>
  )
}

function TextEditor({ id, file, onSaved }: { id: string; file: AppFile; onSaved: () => void }) {
  const [text, setText] = useState(file.content)
  const [stored, setStored] = useState({ content: file.content, etag: file.etag })
  const [saved, setSaved] = useState(false)
  const action = useAction()
  const save = async () => {
    setSaved(false)
    const r = await action.run('save', () =>
      put('/api/apps/{id}/files/{path}', { params: { path: fileAt(id, file.path), header: ifMatch(stored.etag) }, body: { content: text } }),
    )
    if (r) {
      setStored({ content: text, etag: r.etag })
      setSaved(true)
      onSaved()
    }
  }
  return (
    <Stack gap="xs">
      <Textarea
        aria-label={`Content of ${file.path}`}
        value={text}
        onChange={(e) => {
          setText(e.currentTarget.value)
          setSaved(false)
        }}
        autosize
        minRows={6}
        maxRows={30}
        spellCheck={false}
        styles={mono}
        data-testid="app-file-content"
      />
      <Group>
        <Button size="xs" onClick={save} disabled={text === stored.content} loading={action.busy === 'save'} data-testid="app-file-save">
          Save
        </Button>
        {saved && (
          <Text size="sm" c="teal" data-testid="app-file-saved">
            Saved.
          </Text>
        )}
        <Text size="xs" c="dimmed" ff="monospace" data-testid="app-file-etag">
          etag {stored.etag.slice(0, 12)}
        </Text>
      </Group>
      {changedMeanwhile(action.error) ? (
        <Alert color="orange" data-testid="app-file-conflict">
          This file changed meanwhile — reload it to see the stored version (your edits here are not saved).
        </Alert>
      ) : (
        <ErrorNote error={action.error} />
      )}
    </Stack>
  )
}

/** A file's bytes, base64-encoded. */
async function base64Of(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer())
  let bin = ''
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(bin)
}

/**
 * A new file: typed text, or a file uploaded as it is (base64, for images
 * and other binaries). Create-only (If-None-Match: *), so an existing file
 * is never replaced from here.
 */
function NewFile({ id, onCreated }: { id: string; onCreated: (path: string) => void }) {
  const [path, setPath] = useState('')
  const [content, setContent] = useState('')
  const action = useAction()
  const createAt = async (p: string, body: Schemas['AppFileWrite']) => {
    const r = await put('/api/apps/{id}/files/{path}', { params: { path: fileAt(id, p.trim().replace(/^\/+/, '')), header: { 'If-None-Match': '*' } }, body })
    setPath('')
    setContent('')
    onCreated(r.path)
  }
  const create = (e: React.FormEvent) => {
    e.preventDefault()
    action.run('create', () => createAt(path, { content }))
  }
  // Uploaded at the path typed, else under the file's own name.
  const upload = (file: File | null) =>
    file && action.run('upload', async () => createAt(path.trim() || file.name, { content: await base64Of(file), encoding: 'base64' }))
  return (
    <Card withBorder>
      <form onSubmit={create} aria-label="New file">
        <Stack gap="xs">
          <Text fw={600}>New file</Text>
          <TextInput
            label="Path"
            placeholder="index.html or assets/app.js"
            required
            maxLength={255}
            value={path}
            onChange={(e) => setPath(e.currentTarget.value)}
            w={360}
            data-testid="app-new-file-path"
          />
          <Textarea
            label="Content"
            description="Text (UTF-8), at most 1 MiB"
            value={content}
            onChange={(e) => setContent(e.currentTarget.value)}
            autosize
            minRows={4}
            maxRows={20}
            spellCheck={false}
            styles={mono}
            data-testid="app-new-file-content"
          />
          <Group>
            <Button type="submit" size="xs" disabled={!path.trim()} loading={action.busy === 'create'} data-testid="app-new-file-create">
              Create file
            </Button>
            <FileButton onChange={upload}>
              {(props) => (
                <Button size="xs" variant="light" loading={action.busy === 'upload'} {...props} data-testid="app-file-upload">
                  Upload a file…
                </Button>
              )}
            </FileButton>
            <Text size="xs" c="dimmed">
              An upload goes to the path above, else under its own name.
            </Text>
          </Group>
          {changedMeanwhile(action.error) ? (
            <Alert color="orange" data-testid="app-new-file-exists">
              A file exists at this path already: open it from the list to change it.
            </Alert>
          ) : (
            <ErrorNote error={action.error} />
          )}
        </Stack>
      </form>
    </Card>
  )
}
