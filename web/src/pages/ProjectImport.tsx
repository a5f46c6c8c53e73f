// Projects imported from a forge: one of the workspace's forge resources
// (GitHub, GitLab, Gitea, Forgejo), the repositories it can see (those
// imported before shown with their project, not offered again), and an
// import of the ones chosen, which says how many projects it made.
import { Alert, Anchor, Badge, Button, Checkbox, Group, Modal, NativeSelect, Stack, Table, Text } from '@mantine/core'
import { useEffect, useState } from 'react'
import { Link } from 'react-router-dom'
import { get, post, type Schemas } from '../api'
import { useSession } from '../session'
import { count, ErrorNote, Loading, useAction, useLoad } from '../ui'

type SyncRepo = Schemas['SyncRepo']
type SyncImport = Schemas['SyncImport']

/** The resource kinds that are forges. */
export const forgeKinds = ['github', 'gitlab', 'gitea', 'forgejo']

export const providerLabel: Record<string, string> = { local: 'local', github: 'GitHub', gitlab: 'GitLab', gitea: 'Gitea', forgejo: 'Forgejo' }

/** The project's page: its settings, its forge and its backlog are tabs of it. */
export const projectPage = (id: string, tab?: string) => `/projects/${id}/settings${tab ? `?tab=${tab}` : ''}`

export function ImportDialog({ onClose, onImported }: { onClose: () => void; onImported: () => unknown }) {
  const { workspace } = useSession()
  const resources = useLoad(async () => ((await get('/api/resources')) ?? []).filter((r) => forgeKinds.includes(r.kind)), [workspace?.id])
  const [resource, setResource] = useState('')
  const [repos, setRepos] = useState<SyncRepo[] | null>(null)
  const [chosen, setChosen] = useState<string[]>([])
  const [autodev, setAutodev] = useState(false)
  const [result, setResult] = useState<SyncImport | null>(null)
  const action = useAction()

  // The first forge resource is chosen to start with.
  useEffect(() => {
    if (!resource && resources.data?.length) setResource(resources.data[0].id)
  }, [resources.data, resource])

  const list = () =>
    action.run('list', async () => {
      setResult(null)
      const r = await post('/api/projects/sync_list', { body: { resource_id: resource } })
      setRepos(r.repositories ?? [])
      setChosen([])
    })
  const submit = () =>
    action.run('import', async () => {
      const r = await post('/api/projects/sync_import', { body: { resource_id: resource, repositories: chosen, autodev } })
      setResult(r)
      setChosen([])
      await onImported()
      // The list again: what was just imported now shows its project.
      const again = await post('/api/projects/sync_list', { body: { resource_id: resource } })
      setRepos(again.repositories ?? [])
    })
  const toggle = (name: string, on: boolean) => setChosen((c) => (on ? [...c.filter((n) => n !== name), name] : c.filter((n) => n !== name)))

  const forges = resources.data ?? []
  return (
    <Modal opened onClose={onClose} title="Import from a forge" size="xl">
      <Stack gap="sm" data-testid="import-dialog">
        <ErrorNote error={resources.error} />
        {resources.loading && !resources.data ? (
          <Loading label="Loading the forge resources…" />
        ) : forges.length === 0 ? (
          <Text size="sm" c="dimmed" data-testid="import-no-resource">
            This workspace has no forge resource yet: add a GitHub, GitLab, Gitea or Forgejo resource with an access token on the{' '}
            <Anchor component={Link} to="/resources">
              Resources
            </Anchor>{' '}
            page first.
          </Text>
        ) : (
          <Group align="end">
            <NativeSelect
              label="Forge resource"
              value={resource}
              onChange={(e) => {
                setResource(e.currentTarget.value)
                setRepos(null)
                setChosen([])
                setResult(null)
              }}
              data={forges.map((r) => ({ value: r.id, label: `${r.name} · ${providerLabel[r.kind] ?? r.kind}` }))}
              w={{ base: '100%', sm: 320 }}
              data-testid="import-resource"
            />
            <Button variant="light" onClick={list} loading={action.busy === 'list'} disabled={!resource} data-testid="import-list">
              List repositories
            </Button>
          </Group>
        )}
        {repos && repos.length === 0 && (
          <Text size="sm" c="dimmed" data-testid="import-empty">
            The resource's token sees no repository.
          </Text>
        )}
        {repos && repos.length > 0 && (
          <Table.ScrollContainer minWidth={560} mah={420}>
            <Table striped data-testid="import-repos">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th w={40} />
                  <Table.Th>Repository</Table.Th>
                  <Table.Th>Branch</Table.Th>
                  <Table.Th>Project</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {repos.map((r) => (
                  <Table.Tr key={r.full_name} data-testid={`import-row-${r.full_name}`}>
                    <Table.Td>
                      <Checkbox
                        aria-label={`Import ${r.full_name}`}
                        checked={!r.project_id && chosen.includes(r.full_name)}
                        disabled={!!r.project_id}
                        onChange={(e) => toggle(r.full_name, e.currentTarget.checked)}
                        data-testid={`import-repo-${r.full_name}`}
                      />
                    </Table.Td>
                    <Table.Td>
                      <Group gap={6}>
                        <Anchor href={r.web_url} target="_blank" rel="noreferrer" size="sm" ff="monospace">
                          {r.full_name}
                        </Anchor>
                        {r.private && (
                          <Badge size="xs" color="gray" variant="light">
                            private
                          </Badge>
                        )}
                      </Group>
                      {r.description && (
                        <Text size="xs" c="dimmed" lineClamp={1}>
                          {r.description}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">{r.default_branch}</Text>
                    </Table.Td>
                    <Table.Td>
                      {r.project_id ? (
                        <Anchor component={Link} to={projectPage(r.project_id)} size="sm" data-testid={`import-imported-${r.full_name}`}>
                          imported: open its project
                        </Anchor>
                      ) : (
                        <Text size="sm" c="dimmed">
                          —
                        </Text>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        {repos && repos.length > 0 && (
          <Group justify="space-between">
            <Checkbox
              label="Open pull requests automatically in the new projects"
              checked={autodev}
              onChange={(e) => setAutodev(e.currentTarget.checked)}
              data-testid="import-autodev"
            />
            <Button onClick={submit} loading={action.busy === 'import'} disabled={chosen.length === 0} data-testid="import-submit">
              Import {chosen.length > 0 ? count(chosen.length, 'repository', 'repositories') : ''}
            </Button>
          </Group>
        )}
        <ErrorNote error={action.error} />
        {result && (
          <Alert color="teal" title={`${count(result.created, 'project')} created`} data-testid="import-result" data-created={result.created}>
            <Stack gap={4}>
              {(result.projects ?? []).map((p) => (
                <Anchor key={p.id} component={Link} to={projectPage(p.id)} size="sm" data-testid={`import-project-${p.name}`}>
                  {p.name} ({p.forge_repo})
                </Anchor>
              ))}
            </Stack>
          </Alert>
        )}
      </Stack>
    </Modal>
  )
}
