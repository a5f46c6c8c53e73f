import { Alert, Anchor, Button, Card, FileButton, Group, NativeSelect, Stack, Table, Text, TextInput, Title } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link, useNavigate } from 'react-router-dom'
import { get, messageOf, post, postDocument, type Project, type Schemas } from '../api'
import { useSession } from '../session'
import { ErrorNote, Loading, useAction, useLoad, when } from '../ui'

// A workflow needs at least one node: a new one starts as a single end node
// that the canvas then grows.
const starterNodes: Schemas['NodeInput'][] = [{ key: 'done', kind: 'end', position: { x: 0, y: 0 } }]

/** The workspace's workflows, and a form that creates one. */
export default function Workflows() {
  const { workspace } = useSession()
  const workflows = useLoad(() => get('/api/workflows'), [workspace?.id])
  const projects = useLoad(() => get('/api/projects'), [workspace?.id])
  const projectName = new Map((projects.data ?? []).map((p) => [p.id, p.name]))
  const list = workflows.data ?? []

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Workflows</Title>
        <Anchor component={Link} to="/workflows/email" data-testid="email-link">
          Email addresses and unrouted mail
        </Anchor>
      </Group>
      <NewWorkflow projects={(projects.data ?? []).filter((p) => !p.archived_at)} loading={projects.loading} />
      <ErrorNote error={projects.error} />
      <ErrorNote error={workflows.error} />
      {workflows.loading && !workflows.data ? (
        <Loading label="Loading workflows…" />
      ) : list.length === 0 ? (
        !workflows.error && <Text c="dimmed">No workflows yet: create one above.</Text>
      ) : (
        <Table striped highlightOnHover data-testid="workflow-list">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Project</Table.Th>
              <Table.Th>Nodes</Table.Th>
              <Table.Th>Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.map((w) => (
              <Table.Tr key={w.id} data-testid={`workflow-${w.name}`}>
                <Table.Td>
                  <Anchor component={Link} to={`/workflows/${w.id}`}>
                    {w.name}
                  </Anchor>
                </Table.Td>
                <Table.Td>{projectName.get(w.project_id) ?? '—'}</Table.Td>
                <Table.Td>{w.nodes?.length ?? 0}</Table.Td>
                <Table.Td>{when(w.created_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  )
}

function NewWorkflow({ projects, loading }: { projects: Project[]; loading: boolean }) {
  const navigate = useNavigate()
  const [name, setName] = useState('')
  const [project, setProject] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')

  // Default to the first project once they load.
  useEffect(() => {
    if (!project && projects.length > 0) setProject(projects[0].id)
  }, [project, projects])

  const create = async (e: React.FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError('')
    try {
      const w = await post('/api/workflows', { body: { name: name.trim(), project_id: project, nodes: starterNodes } })
      navigate(`/workflows/${w.id}`)
    } catch (err) {
      setError(messageOf(err))
      setBusy(false)
    }
  }

  return (
    <Card withBorder>
      <form onSubmit={create} aria-label="New workflow">
        <Stack gap="xs">
          <Title order={4}>New workflow</Title>
          <Group align="end">
            <TextInput
              label="Name"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              required
              maxLength={200}
              w={280}
              data-testid="new-workflow-name"
            />
            <NativeSelect
              label="Project"
              value={project}
              onChange={(e) => setProject(e.currentTarget.value)}
              data={projects.length ? projects.map((p) => ({ value: p.id, label: p.name })) : [{ value: '', label: loading ? 'Loading…' : 'No projects' }]}
              disabled={projects.length === 0}
              required
              w={240}
              data-testid="new-workflow-project"
            />
            <Button type="submit" loading={busy} disabled={!project} data-testid="new-workflow">
              Create workflow
            </Button>
          </Group>
          {!loading && projects.length === 0 && (
            <Text size="sm" c="dimmed">
              A workflow belongs to a project: <Anchor component={Link} to="/projects">create a project</Anchor> first.
            </Text>
          )}
          {error && <ErrorNote error={error} />}
          {project && <StartFrom project={project} />}
        </Stack>
      </form>
    </Card>
  )
}

/** Other ways to begin: a shipped template, or a file (our YAML, or an n8n export). */
function StartFrom({ project }: { project: string }) {
  const navigate = useNavigate()
  const templates = useLoad(async () => (await get('/api/workflows/templates')) ?? [], [])
  const [slug, setSlug] = useState('')
  const action = useAction()
  const [imported, setImported] = useState<{ id: string; warnings: string[]; shown: unknown } | null>(null)
  const fromTemplate = () =>
    action.run('template', async () => {
      const r = await post('/api/workflows/templates/{slug}', { params: { path: { slug: slug || (templates.data ?? [])[0]?.slug } }, body: { project_id: project } })
      // A webhook's address is shown once: the workflow page shows it.
      navigate(`/workflows/${r.workflow_id}`, { state: { shown: (r.triggers ?? []).find((t) => t.token) ?? null } })
    })
  const fromFile = (file: File | null) =>
    file &&
    action.run('import', async () => {
      const text = await file.text()
      const n8n = file.name.endsWith('.json')
      if (n8n) {
        const r = await postDocument<Schemas['N8nImport']>('/api/workflows/import/n8n', { project_id: project }, text, 'application/json')
        const shown = (r.triggers ?? []).find((t) => t.token) ?? null
        // With warnings the page stays to show them, with a link on.
        if (r.warnings?.length) setImported({ id: r.workflow_id, warnings: r.warnings, shown })
        else navigate(`/workflows/${r.workflow_id}`, { state: { shown } })
        return
      }
      const w = await postDocument<{ id: string }>('/api/workflows/import', { project_id: project }, text, 'application/yaml')
      navigate(`/workflows/${w.id}`)
    })
  return (
    <Stack gap={6}>
      <Group align="end" gap="xs">
        <NativeSelect
          label="Or start from a template"
          size="xs"
          value={slug}
          onChange={(e) => setSlug(e.currentTarget.value)}
          data={(templates.data ?? []).map((t) => ({ value: t.slug, label: `${t.name}: ${t.description}` }))}
          w={360}
          data-testid="template-select"
        />
        <Button size="xs" variant="light" onClick={fromTemplate} loading={action.busy === 'template'} disabled={!templates.data?.length} data-testid="from-template">
          Use template
        </Button>
        <FileButton onChange={fromFile} accept=".yaml,.yml,.json,application/yaml,application/json">
          {(props) => (
            <Button size="xs" variant="light" loading={action.busy === 'import'} {...props} data-testid="import-file">
              Import a file (YAML, or an n8n .json export)
            </Button>
          )}
        </FileButton>
      </Group>
      <ErrorNote error={action.error || templates.error} />
      {imported && (
        <Alert color="yellow" title="Imported from n8n, with warnings" data-testid="n8n-warnings">
          <Stack gap={2}>
            {imported.warnings.map((w) => (
              <Text key={w} size="xs">
                {w}
              </Text>
            ))}
            <Anchor component={Link} to={`/workflows/${imported.id}`} state={{ shown: imported.shown }} size="sm" data-testid="open-imported">
              Open the imported workflow
            </Anchor>
          </Stack>
        </Alert>
      )}
    </Stack>
  )
}
