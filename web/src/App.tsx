import { AppShell, Badge, Burger, Button, Group, NavLink, Select, Stack, Text, Title } from '@mantine/core'
import { useDisclosure } from '@mantine/hooks'
import { lazy, Suspense, useEffect, useState } from 'react'
import { Link, Navigate, Route, Routes, useLocation } from 'react-router-dom'
import { ApprovalsWaiting } from './Approvals'
import { Bell, InboxLabel } from './Bell'
import { onConnection } from './live'
import { Palette } from './Palette'
import { SessionProvider, useSession } from './session'
import { ErrorNote, Loading } from './ui'
import { Login } from './pages/Login'
import { InvitePage, MagicConfirmPage, ResetPage } from './pages/Mailed'
import { Projects } from './pages/Projects'
import { TaskBoard } from './pages/TaskBoard'
import { TaskPage } from './pages/Task'

// The canvas and the consoles load when first visited.
const Workflows = lazy(() => import('./pages/Workflows'))
const WorkflowPage = lazy(() => import('./pages/Workflow'))
const WorkflowRunPage = lazy(() => import('./pages/WorkflowRun'))
const Email = lazy(() => import('./pages/Email'))
const Marketplace = lazy(() => import('./pages/Marketplace'))
const MarketItemPage = lazy(() => import('./pages/Marketplace').then((m) => ({ default: m.MarketItemPage })))
const Runs = lazy(() => import('./pages/Runs'))
const Resources = lazy(() => import('./pages/Resources'))
const ResourcePage = lazy(() => import('./pages/Resources').then((m) => ({ default: m.ResourcePage })))
const Apps = lazy(() => import('./pages/Apps'))
const AppPage = lazy(() => import('./pages/AppPage'))
const Activity = lazy(() => import('./pages/Activity'))
const RunPage = lazy(() => import('./pages/Run'))
const Runners = lazy(() => import('./pages/Runners'))
const Members = lazy(() => import('./pages/Members'))
const Admin = lazy(() => import('./pages/Admin'))
const Settings = lazy(() => import('./pages/Settings'))
const ProjectSettings = lazy(() => import('./pages/ProjectSettings'))
const Plans = lazy(() => import('./pages/Plans'))
const Inbox = lazy(() => import('./pages/Inbox').then((m) => ({ default: m.Inbox })))
const Notifications = lazy(() => import('./pages/Notifications').then((m) => ({ default: m.Notifications })))
const Proposals = lazy(() => import('./pages/Proposals').then((m) => ({ default: m.Proposals })))
const ProposalPage = lazy(() => import('./pages/Proposals').then((m) => ({ default: m.ProposalPage })))

export function App() {
  return (
    <SessionProvider>
      <Routes>
        <Route path="/login" element={<Login />} />
        <Route path="/register" element={<Login register />} />
        <Route path="/invite" element={<InvitePage />} />
        <Route path="/reset" element={<ResetPage />} />
        <Route path="/magic/confirm" element={<MagicConfirmPage />} />
        <Route
          path="/plans"
          element={
            <Suspense fallback={<Loading />}>
              <Plans />
            </Suspense>
          }
        />
        <Route path="*" element={<Shell />} />
      </Routes>
    </SessionProvider>
  )
}

function LiveBadge() {
  const [up, setUp] = useState(false)
  useEffect(() => onConnection(setUp), [])
  return (
    <Badge variant="dot" color={up ? 'teal' : 'gray'} title={up ? 'Live updates connected' : 'Live updates not connected'}>
      {up ? 'live' : 'offline'}
    </Badge>
  )
}

const nav = [
  { to: '/inbox', label: 'Inbox' },
  { to: '/tasks/board', label: 'Tasks' },
  { to: '/projects', label: 'Projects' },
  { to: '/workflows', label: 'Workflows' },
  { to: '/marketplace', label: 'Marketplace' },
  { to: '/resources', label: 'Resources' },
  { to: '/apps', label: 'Apps' },
  { to: '/runs', label: 'Runs' },
  { to: '/activity', label: 'Activity' },
  { to: '/proposals', label: 'Proposals' },
  { to: '/runners', label: 'Runners' },
  { to: '/members', label: 'Members' },
  { to: '/settings', label: 'Settings' },
]

function Shell() {
  const { me, loading, error, refresh, workspaces, workspace, chooseWorkspace, signOut } = useSession()
  const [opened, { toggle }] = useDisclosure()
  const loc = useLocation()
  if (loading) return <Loading label="Signing in…" />
  if (!me && error)
    return (
      <Stack p="xl" maw={560}>
        <ErrorNote error={error} />
        <Button variant="light" onClick={() => refresh()}>
          Try again
        </Button>
      </Stack>
    )
  if (!me) return <Navigate to={`/login?next=${encodeURIComponent(loc.pathname + loc.search)}`} replace />
  if (!me.approved) return <Navigate to="/login?pending=1" replace />
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        {/* One line at every width: on a phone the header keeps the menu, the workspace and sign-out (it wrapped and covered the page). */}
        <Group h="100%" px="md" justify="space-between" wrap="nowrap" gap="xs" data-testid="header">
          <Group wrap="nowrap" gap="xs" miw={0}>
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Menu" />
            <Title order={4} visibleFrom="xs">
              Slipway
            </Title>
            <Select
              aria-label="Workspace"
              data-testid="workspace-switcher"
              size="xs"
              w={{ base: 140, sm: 240 }}
              value={workspace?.id ?? null}
              data={workspaces.map((w) => ({ value: w.id, label: `${w.name} · ${w.organization_name}` }))}
              onChange={(v) => v && chooseWorkspace(v)}
              allowDeselect={false}
            />
          </Group>
          <Group wrap="nowrap" gap="xs">
            {workspace && <ApprovalsWaiting key={workspace.id} workspace={workspace.id} />}
            {workspace && <Bell key={`bell-${workspace.id}`} workspace={workspace.id} />}
            {workspace && <Palette />}
            <Group visibleFrom="sm" wrap="nowrap" gap="xs">
              <LiveBadge />
              <Text size="sm" c="dimmed">
                {me.display_name}
              </Text>
            </Group>
            <Button size="xs" variant="subtle" onClick={() => signOut()}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs">
        {nav.map((n) => (
          <NavLink
            key={n.to}
            component={Link}
            to={n.to}
            label={n.to === '/inbox' && workspace ? <InboxLabel key={workspace.id} workspace={workspace.id} /> : n.label}
            active={loc.pathname.startsWith(n.to)}
          />
        ))}
        {me.is_admin && <NavLink component={Link} to="/admin/?tab=users" label="Owner console" active={loc.pathname.startsWith('/admin')} />}
      </AppShell.Navbar>
      <AppShell.Main>
        {workspace ? (
          <Suspense fallback={<Loading />}>
            <Routes key={workspace.id}>
              <Route path="/" element={<Navigate to="/tasks/board" replace />} />
              <Route path="/tasks/board" element={<TaskBoard />} />
              <Route path="/tasks/:id" element={<TaskPage />} />
              <Route path="/projects" element={<Projects />} />
              <Route path="/projects/:id/settings" element={<ProjectSettings />} />
              <Route path="/workflows" element={<Workflows />} />
              <Route path="/workflows/email" element={<Email />} />
              <Route path="/marketplace" element={<Marketplace />} />
              <Route path="/marketplace/:id" element={<MarketItemPage />} />
              <Route path="/workflows/:id" element={<WorkflowPage />} />
              <Route path="/workflows/runs/:runId" element={<WorkflowRunPage />} />
              <Route path="/resources" element={<Resources />} />
              <Route path="/resources/:id" element={<ResourcePage />} />
              <Route path="/apps" element={<Apps />} />
              <Route path="/apps/:id" element={<AppPage />} />
              <Route path="/runs" element={<Runs />} />
              <Route path="/activity" element={<Activity />} />
              <Route path="/inbox" element={<Inbox />} />
              <Route path="/inbox/notifications" element={<Notifications />} />
              <Route path="/proposals" element={<Proposals />} />
              <Route path="/proposals/:id" element={<ProposalPage />} />
              <Route path="/runs/:id" element={<RunPage />} />
              <Route path="/runners" element={<Runners />} />
              <Route path="/members" element={<Members />} />
              <Route path="/settings" element={<Settings />} />
              <Route path="/admin" element={<Admin />} />
              <Route path="*" element={<Text>This page does not exist.</Text>} />
            </Routes>
          </Suspense>
        ) : (
          <Text>You have not joined a workspace yet. Ask an organization owner or admin to invite you.</Text>
        )}
      </AppShell.Main>
    </AppShell>
  )
}
