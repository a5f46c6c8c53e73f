import { Anchor, Badge, Button, Card, Group, Stack, Switch, Table, Text, TextInput, Title } from '@mantine/core'
import { useState } from 'react'
import { Link } from 'react-router-dom'
import { post, get, type Project } from '../api'
import { ErrorNote, Loading, useAction, useLoad, when } from '../ui'
import { useSession } from '../session'
import { ImportDialog, projectPage, providerLabel } from './ProjectImport'

/** The workspace's projects: list, create, archive and restore. */
export function Projects() {
  const { workspace } = useSession()
  const { data, error, loading, reload } = useLoad(() => get('/api/projects'), [workspace?.id])
  const [name, setName] = useState('')
  const [repo, setRepo] = useState('')
  const [autodev, setAutodev] = useState(false)
  const [branch, setBranch] = useState('')
  const [importing, setImporting] = useState(false)
  const { busy, error: actionError, run } = useAction()

  const create = (e: React.FormEvent) => {
    e.preventDefault()
    run('create', async () => {
      await post('/api/projects', { body: { name, repo_url: repo, autodev, ...(branch.trim() ? { default_branch: branch.trim() } : {}) } })
      setName('')
      setRepo('')
      setBranch('')
      await reload()
    })
  }
  const archive = (p: Project) =>
    run(p.id, async () => {
      await post(`/api/projects/{id}/${p.archived_at ? 'restore' : 'archive'}`, { params: { path: { id: p.id } } })
      await reload()
    })

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Projects</Title>
        <Button variant="light" onClick={() => setImporting(true)} data-testid="projects-import">
          Import from a forge
        </Button>
      </Group>
      {importing && <ImportDialog onClose={() => setImporting(false)} onImported={reload} />}
      <Card withBorder>
        <form onSubmit={create}>
          <Group align="end">
            <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} required maxLength={100} data-testid="project-name" />
            <TextInput
              label="Repository"
              placeholder="https://… or a path to a local repository"
              value={repo}
              onChange={(e) => setRepo(e.currentTarget.value)}
              required
              w={{ base: '100%', sm: 360 }}
              data-testid="project-repo"
            />
            <TextInput
              label="Default branch"
              placeholder="the repository's own"
              value={branch}
              onChange={(e) => setBranch(e.currentTarget.value)}
              maxLength={200}
              w={{ base: '100%', sm: 180 }}
              data-testid="project-branch"
            />
            <Switch label="Open pull requests automatically" checked={autodev} onChange={(e) => setAutodev(e.currentTarget.checked)} />
            <Button type="submit" loading={busy === 'create'} data-testid="create-project">
              Create project
            </Button>
          </Group>
        </form>
      </Card>
      <ErrorNote error={actionError} />
      <ErrorNote error={error} />
      {loading && !data ? (
        <Loading />
      ) : (
        <Table.ScrollContainer minWidth={640}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Repository</Table.Th>
                <Table.Th>Branch</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {(data ?? []).map((p) => (
                <Table.Tr key={p.id} data-testid={`project-${p.name}`}>
                  <Table.Td>
                    <Group gap="xs">
                      <Anchor component={Link} to={`/tasks/board?project=${p.id}`}>
                        {p.name}
                      </Anchor>
                      {p.provider !== 'local' && (
                        <Badge color="grape" variant="light" tt="none" data-testid={`project-provider-${p.name}`}>
                          {providerLabel[p.provider] ?? p.provider}
                          {p.forge_repo ? ` · ${p.forge_repo}` : ''}
                        </Badge>
                      )}
                      {p.archived_at && <Badge color="gray">archived</Badge>}
                      {p.autodev && <Badge color="indigo" variant="light">autodev</Badge>}
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {p.repo_url}
                    </Text>
                  </Table.Td>
                  <Table.Td>{p.default_branch}</Table.Td>
                  <Table.Td>{when(p.created_at)}</Table.Td>
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      <Button size="xs" variant="light" component={Link} to={projectPage(p.id)} data-testid={`settings-${p.name}`}>
                        Settings
                      </Button>
                      {p.forge_repo && (
                        <Button size="xs" variant="light" component={Link} to={projectPage(p.id, 'backlog')} data-testid={`backlog-${p.name}`}>
                          Backlog
                        </Button>
                      )}
                      <Button size="xs" variant="light" loading={busy === p.id} onClick={() => archive(p)}>
                        {p.archived_at ? 'Restore' : 'Archive'}
                      </Button>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {data && data.length === 0 && <Text c="dimmed">No projects yet: create one on a repository above, or import repositories from a forge.</Text>}
    </Stack>
  )
}
