// An app's builds (immutable releases; one with a build step runs as a job,
// followed until it ends, its log a run), its deployment (where it is
// served, which release: deploy, undeploy, roll back, its own error page)
// and its App token.
import { Alert, Anchor, Badge, Button, Card, Code, Group, NativeSelect, Stack, Table, Text, TextInput } from '@mantine/core'
import { useCallback, useEffect, useState } from 'react'
import { Link } from 'react-router-dom'
import { del, get, patch, post, type Schemas } from '../api'
import { useSession } from '../session'
import { Copy, ErrorNote, Loading, Status, useAction, useLoad, when } from '../ui'
import { ErrorPageEditor } from './AdminErrorPage'

type Build = Schemas['AppBuild']
type Deployment = Schemas['AppDeployment']

function useReleases(id: string) {
  return useLoad(async () => (await get('/api/apps/{id}/releases', { params: { path: { id } } })) ?? [], [id])
}

/** The app's deployment, null when it never was. */
function useDeployment(id: string) {
  return useLoad(async () => (await get('/api/apps/{id}/deployment', { params: { path: { id } } })) ?? null, [id])
}

/** The releases a deployment can serve, for a select. */
function releaseOptions(list: Build[]) {
  return list.filter((b) => b.status === 'succeeded').map((b) => ({ value: b.id, label: `#${b.number} · ${when(b.created_at)}` }))
}

/** A build not ended yet: its build step is queued or running. */
const inProgress = (b: Build) => b.status === 'queued' || b.status === 'running'

/** What the note says of a build that ended. */
function ended(b: Build): string {
  return b.status === 'failed' ? `Build #${b.number} failed${b.error ? `: ${b.error}` : ''}` : `Built release #${b.number}`
}

/** A route path suggested from the app's name: /my-app. */
function routeFor(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
  return '/' + (slug || 'app')
}

export function BuildsSection({ id }: { id: string }) {
  const releases = useReleases(id)
  const deployment = useDeployment(id)
  const [note, setNote] = useState('')
  // The new build the note follows until it ends (a build step runs as a job).
  const [followed, setFollowed] = useState('')
  const action = useAction()
  const list = releases.data ?? []
  const pending = list.some(inProgress)
  // While a listed build is queued or running, the list is read again every second.
  const { reload } = releases
  useEffect(() => {
    if (!pending) return
    const t = setInterval(reload, 1000)
    return () => clearInterval(t)
  }, [pending, reload])
  // The followed build, once listed as ended, says so in the note.
  useEffect(() => {
    const b = followed ? releases.data?.find((r) => r.id === followed) : undefined
    if (b && !inProgress(b)) {
      setNote(ended(b))
      setFollowed('')
    }
  }, [followed, releases.data])
  const build = async () => {
    setNote('')
    setFollowed('')
    await action.run('build', async () => {
      // 201 is a new build, 200 the existing build of the same source: the
      // client sees the body only, so the list before tells them apart.
      const before = releases.data ?? (await get('/api/apps/{id}/releases', { params: { path: { id } } })) ?? []
      const b = await post('/api/apps/{id}/builds', { params: { path: { id } } })
      if (before.some((r) => r.id === b.id)) setNote(`Unchanged source: build #${b.number}`)
      else if (inProgress(b)) {
        setNote(`Build #${b.number} ${b.status}`)
        setFollowed(b.id)
      } else setNote(ended(b))
      reload()
    })
  }
  const serving = deployment.data?.status === 'deployed' ? deployment.data.release_id : ''
  return (
    <Stack data-testid="app-builds">
      <Group>
        <Button onClick={build} loading={action.busy === 'build'} data-testid="app-build">
          Build
        </Button>
        <Text size="sm" c="dimmed">
          Builds the manifest, the files and the migrations as they stand into a release that never changes; a build step runs first when the manifest has one.
        </Text>
      </Group>
      {note && (
        <Text size="sm" fw={500} data-testid="app-build-note">
          {note}
        </Text>
      )}
      <ErrorNote error={action.error || releases.error} />
      {releases.loading && !releases.data ? (
        <Loading label="Loading releases…" />
      ) : list.length === 0 ? (
        !releases.error && (
          <Text c="dimmed" data-testid="app-builds-empty">
            Never built.
          </Text>
        )
      ) : (
        <Table striped data-testid="app-release-list">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Release</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Files</Table.Th>
              <Table.Th>Migrations</Table.Th>
              <Table.Th>Built</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.map((b) => (
              <Table.Tr key={b.id} data-testid={`app-release-${b.number}`}>
                <Table.Td>
                  <Group gap="xs">
                    <Text fw={500}>#{b.number}</Text>
                    {b.id === serving && (
                      <Badge size="xs" color="green" variant="light" data-testid="app-release-serving">
                        serving
                      </Badge>
                    )}
                  </Group>
                </Table.Td>
                <Table.Td>
                  <Group gap="xs">
                    <Status status={b.status} />
                    {b.run_id && (
                      <Anchor component={Link} to={`/runs/${b.run_id}`} size="xs" data-testid={`app-release-log-${b.number}`}>
                        Log
                      </Anchor>
                    )}
                  </Group>
                  {b.error && (
                    <Text size="xs" c="red">
                      {b.error}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>{b.files}</Table.Td>
                <Table.Td>{(b.migrations ?? []).length ? (b.migrations ?? []).join(', ') : '—'}</Table.Td>
                <Table.Td>{when(b.created_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  )
}

export function DeploymentSection({ id, name, onChanged }: { id: string; name: string; onChanged: () => void }) {
  const deployment = useDeployment(id)
  const releases = useReleases(id)
  const d = deployment.data
  const changed = () => {
    deployment.reload()
    onChanged()
  }
  if (deployment.loading && d === undefined) return <Loading label="Loading the deployment…" />
  return (
    <Stack data-testid="app-deployment">
      <ErrorNote error={deployment.error || releases.error} />
      <CurrentCard d={d ?? null} id={id} onChanged={changed} />
      {d !== undefined && <DeployCard key={d?.route_path ?? ''} id={id} d={d} name={name} releases={releases.data ?? []} onChanged={changed} />}
      {d && <RollbackCard key={d.release_id} id={id} d={d} releases={releases.data ?? []} onChanged={changed} />}
      <ErrorPageCard id={id} deployed={!!d} />
    </Stack>
  )
}

function CurrentCard({ d, id, onChanged }: { d: Deployment | null; id: string; onChanged: () => void }) {
  const action = useAction()
  const undeploy = async () => {
    if (await action.run('undeploy', () => post('/api/apps/{id}/undeploy', { params: { path: { id } } }))) onChanged()
  }
  return (
    <Card withBorder data-testid="app-current-deployment">
      <Stack gap="xs">
        <Text fw={600}>Current deployment</Text>
        {!d ? (
          <Text size="sm" c="dimmed" data-testid="app-never-deployed">
            Never deployed: build the app, then deploy it at a route path below.
          </Text>
        ) : (
          <>
            <Group gap="lg">
              <Group gap={6}>
                <Text size="sm" c="dimmed">
                  Status
                </Text>
                <Badge color={d.status === 'deployed' ? 'green' : 'orange'} variant="light" data-testid="app-deployment-status">
                  {d.status}
                </Badge>
              </Group>
              <Group gap={6}>
                <Text size="sm" c="dimmed">
                  Route
                </Text>
                <Code data-testid="app-deployment-route">{d.route_path}</Code>
              </Group>
              <Group gap={6}>
                <Text size="sm" c="dimmed">
                  Release
                </Text>
                <Text size="sm" fw={500} data-testid="app-deployment-release">
                  #{d.release}
                </Text>
              </Group>
              <Anchor href={d.url} target="_blank" rel="noopener" data-testid="app-deployment-url">
                {d.url}
              </Anchor>
            </Group>
            <Text size="xs" c="dimmed">
              Deployed {when(d.deployed_at)} · changed {when(d.updated_at)}
            </Text>
            {d.status === 'deployed' && (
              <Group>
                <Button size="xs" color="orange" variant="light" onClick={undeploy} loading={action.busy === 'undeploy'} data-testid="app-undeploy">
                  Undeploy
                </Button>
                <Text size="xs" c="dimmed">
                  The route then shows the error page until the app is deployed again.
                </Text>
              </Group>
            )}
          </>
        )}
        <ErrorNote error={action.error} />
      </Stack>
    </Card>
  )
}

/** Deploys a release (the latest succeeded one unless chosen) at a route path, or moves the route alone. */
function DeployCard({ id, d, name, releases, onChanged }: { id: string; d: Deployment | null; name: string; releases: Build[]; onChanged: () => void }) {
  const [route, setRoute] = useState(d?.route_path ?? routeFor(name))
  const [build, setBuild] = useState('')
  const action = useAction()
  const deploy = async (e: React.FormEvent) => {
    e.preventDefault()
    const r = await action.run('deploy', () =>
      post('/api/apps/{id}/deploy', { params: { path: { id } }, body: { route_path: route.trim(), ...(build ? { build_id: build } : {}) } }),
    )
    if (r) onChanged()
  }
  const move = async () => {
    if (await action.run('move', () => patch('/api/apps/{id}/deployment', { params: { path: { id } }, body: { route_path: route.trim() } }))) onChanged()
  }
  return (
    <Card withBorder>
      <form onSubmit={deploy} aria-label="Deploy">
        <Stack gap="xs">
          <Text fw={600}>Deploy</Text>
          <Group align="end">
            <TextInput
              label="Route path"
              description={`Served at /a${route.trim() || '/…'}/`}
              required
              maxLength={100}
              value={route}
              onChange={(e) => setRoute(e.currentTarget.value)}
              w={240}
              data-testid="app-deploy-route"
            />
            <NativeSelect
              label="Release"
              value={build}
              onChange={(e) => setBuild(e.currentTarget.value)}
              data={[{ value: '', label: 'The latest succeeded build' }, ...releaseOptions(releases)]}
              w={280}
              data-testid="app-deploy-release"
            />
            <Button type="submit" disabled={!route.trim()} loading={action.busy === 'deploy'} data-testid="app-deploy">
              Deploy
            </Button>
            {d && (
              <Button
                variant="default"
                onClick={move}
                disabled={!route.trim() || route.trim() === d.route_path}
                loading={action.busy === 'move'}
                data-testid="app-move-route"
              >
                Move the route only
              </Button>
            )}
          </Group>
          <Text size="xs" c="dimmed">
            A deploy applies the release's pending migrations to the app's database first.
          </Text>
          <ErrorNote error={action.error} />
        </Stack>
      </form>
    </Card>
  )
}

/** Points the deployment at another release: nothing is rebuilt; refused (409) when its migrations part from those applied. */
function RollbackCard({ id, d, releases, onChanged }: { id: string; d: Deployment; releases: Build[]; onChanged: () => void }) {
  const [build, setBuild] = useState(d.release_id)
  const action = useAction()
  const serve = async () => {
    if (await action.run('serve', () => patch('/api/apps/{id}/deployment', { params: { path: { id } }, body: { build_id: build } }))) onChanged()
  }
  const options = releaseOptions(releases)
  return (
    <Card withBorder data-testid="app-rollback">
      <Stack gap="xs">
        <Text fw={600}>Roll back or forward</Text>
        <Group align="end">
          <NativeSelect
            label="Release"
            value={build}
            onChange={(e) => setBuild(e.currentTarget.value)}
            data={options.map((o) => (o.value === d.release_id ? { ...o, label: `${o.label} (served)` } : o))}
            w={280}
            data-testid="app-rollback-release"
          />
          <Button
            variant="light"
            onClick={serve}
            disabled={!build || (build === d.release_id && d.status === 'deployed')}
            loading={action.busy === 'serve'}
            data-testid="app-rollback-serve"
          >
            Serve this release
          </Button>
        </Group>
        <ErrorNote error={action.error} />
      </Stack>
    </Card>
  )
}

/** The page shown when the app is undeployed or failing, as resolved; and the app's own page, edited as JSON. */
function ErrorPageCard({ id, deployed }: { id: string; deployed: boolean }) {
  const resolved = useLoad(() => get('/api/apps/{id}/deployment/error-page', { params: { path: { id } } }), [id])
  const r = resolved.data
  // The app's own page is the resolved one when it comes from the app; else none ({}).
  const load = useCallback(async () => {
    const p = await get('/api/apps/{id}/deployment/error-page', { params: { path: { id } } })
    return p.source === 'app' ? p.page : {}
  }, [id])
  const save = useCallback(
    async (page: Record<string, unknown>) => {
      await patch('/api/apps/{id}/deployment', { params: { path: { id } }, body: { error_page: page } })
      const p = await get('/api/apps/{id}/deployment/error-page', { params: { path: { id } } })
      resolved.setData(p)
      return p.source === 'app' ? p.page : {}
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [id],
  )
  return (
    <Card withBorder data-testid="app-error-page">
      <Stack gap="xs">
        <Text fw={600}>Error page</Text>
        <Text size="sm" c="dimmed">
          What a visitor sees when the app is undeployed or failing: the app's own page, else its workspace's, else the instance's, else the built-in one.
        </Text>
        <ErrorNote error={resolved.error} />
        {r && (
          <Stack gap={4}>
            <Group gap="xs">
              <Text size="sm">Shown now, from</Text>
              <Badge variant="light" data-testid="app-error-page-source">
                {r.source}
              </Badge>
            </Group>
            <Code block data-testid="app-error-page-resolved">
              {JSON.stringify(r.page, null, 2)}
            </Code>
          </Stack>
        )}
        <Text size="sm" fw={500}>
          The app's own page
        </Text>
        {deployed ? (
          <ErrorPageEditor load={load} save={save} testid="app-error-page-editor" />
        ) : (
          <Text size="sm" c="dimmed">
            The app's own page belongs to its deployment: deploy it first.
          </Text>
        )}
      </Stack>
    </Card>
  )
}

/** The deployment's App token: minted (shown once) and revoked by a workspace owner or admin. */
export function TokenSection({ id }: { id: string }) {
  const { workspace } = useSession()
  const admin = workspace?.role === 'owner' || workspace?.role === 'admin'
  const deployment = useDeployment(id)
  const [token, setToken] = useState<string | null>(null)
  const [revoked, setRevoked] = useState<boolean | null>(null)
  const action = useAction()
  const d = deployment.data
  const create = async () => {
    setRevoked(null)
    const r = await action.run('create', () => post('/api/apps/{id}/deployment/token', { params: { path: { id } } }))
    if (r) {
      setToken(r.token)
      deployment.reload()
    }
  }
  const revoke = async () => {
    setToken(null)
    const r = await action.run('revoke', () => del('/api/apps/{id}/deployment/token', { params: { path: { id } } }))
    if (r) {
      setRevoked(r.deleted)
      deployment.reload()
    }
  }
  if (deployment.loading && d === undefined) return <Loading />
  return (
    <Card withBorder data-testid="app-token">
      <Stack gap="xs">
        <Text fw={600}>App token</Text>
        <Text size="sm" c="dimmed">
          One per deployment, for server-side use: it calls the app's backend functions (<Code>Authorization: Bearer scwa_…</Code>). Creating one replaces the
          one before.
        </Text>
        <ErrorNote error={deployment.error} />
        {!d ? (
          <Text size="sm" c="dimmed" data-testid="app-token-undeployed">
            Deploy the app first: an App token belongs to a deployment.
          </Text>
        ) : (
          <Group gap="xs">
            <Badge color={d.has_token ? 'grape' : 'gray'} variant="light" data-testid="app-token-state" data-has-token={d.has_token}>
              {d.has_token ? 'a token exists' : 'no token'}
            </Badge>
          </Group>
        )}
        {!admin && (
          <Text size="sm" c="dimmed" data-testid="app-token-not-admin">
            Only the workspace's owner or admins create or revoke App tokens.
          </Text>
        )}
        <Group>
          <Button size="xs" onClick={create} disabled={!admin || !d} loading={action.busy === 'create'} data-testid="app-token-create">
            {d?.has_token ? 'Replace token' : 'Create token'}
          </Button>
          <Button size="xs" color="red" variant="light" onClick={revoke} disabled={!admin || !d?.has_token} loading={action.busy === 'revoke'} data-testid="app-token-revoke">
            Revoke
          </Button>
        </Group>
        {token && (
          <Alert color="yellow" title="Copy the token now: it will not be shown again" data-testid="app-token-shown">
            <Group gap="xs" wrap="nowrap">
              <Code data-testid="app-token-value" style={{ wordBreak: 'break-all' }}>
                {token}
              </Code>
              <Copy value={token} label="Copy" testid="app-token-copy" />
            </Group>
          </Alert>
        )}
        {revoked !== null && (
          <Text size="sm" data-testid="app-token-revoked">
            {revoked ? 'Revoked: the token no longer works.' : 'There was no token to revoke.'}
          </Text>
        )}
        <ErrorNote error={action.error} />
      </Stack>
    </Card>
  )
}
