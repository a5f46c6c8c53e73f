// A project's backlog (a forge's issues, customers' messages): its cards by column at a glance, a scan of the
// repository's open issues (previewed first: a dry run writes nothing),
// and the board. A card is dragged to another column (native drag and
// drop) or moved with its "Move to…" menu; the server keeps the allowlist
// of moves, so a move it refuses puts the card back where it was and
// shows why. Up and down reorder a column. A card opens in a drawer (its
// id in the address bar: ?item=) with its issue's body, its gates, the
// latest routing decision and the tasks dispatched for it. The board
// follows the realtime hub's backlog topic.
import { ActionIcon, Alert, Anchor, Badge, Button, Card, Drawer, Group, Modal, NativeSelect, Paper, SimpleGrid, Stack, Text, TextInput } from '@mantine/core'
import { useEffect, useRef, useState } from 'react'
import { Link, useSearchParams } from 'react-router-dom'
import { get, patch, post, type Project, type Schemas } from '../api'
import { watchTopic } from '../live'
import { useSession } from '../session'
import { count, ErrorNote, Loading, Status, useAction, useLoad, when } from '../ui'

type Item = Schemas['Item']
type Board = Schemas['Board']
type Column = Schemas['Column']
type ScanResult = Schemas['ScanResult']
export type CardState = Item['state']

const order: CardState[] = ['inbox', 'ready', 'in_progress', 'review', 'blocked', 'done']
const labels: Record<CardState, string> = { inbox: 'Inbox', ready: 'Ready', in_progress: 'In progress', review: 'Review', blocked: 'Blocked', done: 'Done' }
const colors: Record<CardState, string> = { inbox: 'gray', ready: 'blue', in_progress: 'cyan', review: 'grape', blocked: 'orange', done: 'teal' }

/** The drag's payload type: a card's id. */
const dragType = 'application/x-slipway-card'

/** The board with the card moved to another column (kept in priority order): what the move would show. */
function moved(b: Board, it: Item, to: CardState): Board {
  const card = { ...it, state: to }
  return {
    ...b,
    columns: (b.columns ?? []).map((c) => {
      if (c.state === it.state) return { ...c, total: Math.max(0, c.total - 1), items: (c.items ?? []).filter((x) => x.id !== it.id) }
      if (c.state === to) return { ...c, total: c.total + 1, items: [...(c.items ?? []), card].sort((x, y) => x.priority - y.priority) }
      return c
    }),
  }
}

/** The board with a column's cards in a new order. */
function reordered(b: Board, state: CardState, items: Item[]): Board {
  return { ...b, columns: (b.columns ?? []).map((c) => (c.state === state ? { ...c, items } : c)) }
}

export function BacklogSection({ p }: { p: Project }) {
  const { workspace } = useSession()
  const [params, setParams] = useSearchParams()
  const itemId = params.get('item') ?? ''
  const path = { params: { path: { id: p.id } } }
  const status = useLoad(() => get('/api/projects/{id}/backlog', path), [p.id])
  const board = useLoad(() => get('/api/projects/{id}/backlog/board', path), [p.id])
  const [moveError, setMoveError] = useState<unknown>(null)
  const [blocking, setBlocking] = useState<Item | null>(null)
  const [dragging, setDragging] = useState<Item | null>(null)
  const [over, setOver] = useState<CardState | null>(null)
  // Bumped by every backlog hint: the open card reads itself again.
  const [tick, setTick] = useState(0)

  // Live: a change to any card of the workspace reloads the board.
  const { reload: reloadBoard } = board
  const { reload: reloadStatus } = status
  useEffect(
    () =>
      workspace
        ? watchTopic('backlog', workspace.id, () => {
            reloadBoard()
            reloadStatus()
            setTick((t) => t + 1)
          })
        : undefined,
    [workspace, reloadBoard, reloadStatus],
  )
  const refresh = () => Promise.all([reloadBoard(), reloadStatus()])

  const items = (board.data?.columns ?? []).flatMap((c) => c.items ?? [])
  const find = (id: string) => items.find((x) => x.id === id)

  /** Sends a move; shows it at once, and puts the card back if the server refuses it. */
  const move = async (it: Item, to: CardState, reason?: string) => {
    setMoveError(null)
    if (it.state === to) return
    const before = board.data
    if (before) board.setData(moved(before, it, to))
    try {
      await patch('/api/projects/{id}/backlog/items/{item_id}', {
        params: { path: { id: p.id, item_id: it.id } },
        body: { state: to, ...(reason?.trim() ? { blocked_reason: reason.trim() } : {}) },
      })
    } catch (e) {
      if (before) board.setData(before)
      setMoveError(e)
    }
    await refresh()
  }
  /** A move to blocked asks why first; the others go at once. */
  const steer = (it: Item, to: CardState) => {
    if (to === it.state) return
    if (to === 'blocked') setBlocking(it)
    else void move(it, to)
  }
  /** Swaps a card with its neighbour in the column (dir -1: up): a plan of the two priorities. */
  const reorder = async (col: Column, index: number, dir: -1 | 1) => {
    const list = col.items ?? []
    const a = list[index]
    const b = list[index + dir]
    if (!a || !b) return
    setMoveError(null)
    // Equal priorities are told apart: the moved card goes just before (or after) its neighbour.
    const pa = a.priority === b.priority ? b.priority + dir : b.priority
    const pb = a.priority
    const next = [...list]
    next[index] = { ...b, priority: pb }
    next[index + dir] = { ...a, priority: pa }
    const before = board.data
    if (before) board.setData(reordered(before, col.state, next))
    try {
      await patch('/api/projects/{id}/backlog/order', {
        params: { path: { id: p.id } },
        body: {
          plan: [
            { item_id: a.id, priority: pa },
            { item_id: b.id, priority: pb },
          ],
        },
      })
    } catch (e) {
      if (before) board.setData(before)
      setMoveError(e)
    }
    await refresh()
  }
  const openCard = (id: string) => setParams(id ? { tab: 'backlog', item: id } : { tab: 'backlog' })

  const moves = board.data?.moves ?? {}
  const st = status.data
  return (
    <Stack data-testid="backlog">
      <Group justify="space-between" align="start">
        <Group gap="xs" data-testid="backlog-status" data-total={st?.total ?? 0}>
          <Text fw={600}>Backlog</Text>
          {st && <Badge variant="light">{count(st.total, 'card')}</Badge>}
          {st &&
            order.map((s) => (
              <Badge key={s} variant="outline" color={colors[s]} tt="none" data-testid={`backlog-count-${s}`} data-count={st.counts[s] ?? 0}>
                {labels[s]}: {st.counts[s] ?? 0}
              </Badge>
            ))}
        </Group>
        {(st?.scannable ?? true) && <ScanControls p={p} scannable onApplied={refresh} />}
      </Group>
      <ErrorNote error={status.error || board.error} />
      {moveError != null && (
        <Alert color="red" title="The card was not moved" role="alert" data-testid="backlog-move-error" withCloseButton onClose={() => setMoveError(null)}>
          {moveError instanceof Error ? moveError.message : String(moveError)}
        </Alert>
      )}
      {board.loading && !board.data ? (
        <Loading label="Loading the backlog…" />
      ) : (
        <SimpleGrid cols={{ base: 1, sm: 3, xl: 6 }} spacing="xs">
          {(board.data?.columns ?? []).map((c) => {
            const allowed = !dragging || dragging.state === c.state || (moves[dragging.state] ?? []).includes(c.state)
            return (
              <Paper
                key={c.state}
                withBorder
                p="xs"
                data-testid={`backlog-column-${c.state}`}
                data-total={c.total}
                data-drop={over === c.state ? 'over' : undefined}
                style={{
                  minHeight: 160,
                  opacity: allowed ? 1 : 0.55,
                  background: over === c.state ? 'var(--mantine-color-blue-light)' : undefined,
                }}
                onDragOver={(e) => {
                  // Every column takes the drop: the server says which moves it allows.
                  e.preventDefault()
                  e.dataTransfer.dropEffect = 'move'
                  if (over !== c.state) setOver(c.state)
                }}
                onDragLeave={(e) => {
                  if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setOver((o) => (o === c.state ? null : o))
                }}
                onDrop={(e) => {
                  e.preventDefault()
                  setOver(null)
                  const it = find(e.dataTransfer.getData(dragType)) ?? dragging
                  setDragging(null)
                  if (it) steer(it, c.state)
                }}
              >
                <Stack gap="xs">
                  <Group justify="space-between" wrap="nowrap">
                    <Text fw={600} size="sm">
                      {c.label}
                    </Text>
                    <Badge variant="light" color={colors[c.state]} data-testid={`backlog-total-${c.state}`}>
                      {c.total}
                    </Badge>
                  </Group>
                  {(c.items ?? []).map((it, i, list) => (
                    <BacklogCard
                      key={it.id}
                      it={it}
                      moves={(moves[it.state] ?? []) as CardState[]}
                      first={i === 0}
                      last={i === list.length - 1}
                      onOpen={() => openCard(it.id)}
                      onMove={(to) => steer(it, to)}
                      onUp={() => reorder(c, i, -1)}
                      onDown={() => reorder(c, i, 1)}
                      onDragStart={() => setDragging(it)}
                      onDragEnd={() => {
                        setDragging(null)
                        setOver(null)
                      }}
                    />
                  ))}
                  {c.total > (c.items ?? []).length && (
                    <Text size="xs" c="dimmed">
                      and {c.total - (c.items ?? []).length} more
                    </Text>
                  )}
                </Stack>
              </Paper>
            )
          })}
        </SimpleGrid>
      )}
      {board.data && items.length === 0 && (
        <Text size="sm" c="dimmed" data-testid="backlog-empty">
          {status.data?.scannable === false
            ? 'No cards yet: a workflow’s conversation trigger puts customers’ messages here.'
            : 'No cards yet: scan the repository’s open issues to fill the inbox.'}
        </Text>
      )}
      <BlockModal
        item={blocking}
        onCancel={() => setBlocking(null)}
        onConfirm={(it, reason) => {
          setBlocking(null)
          void move(it, 'blocked', reason)
        }}
      />
      <Drawer opened={!!itemId} onClose={() => openCard('')} position="right" size="lg" title="Card">
        {itemId && <ItemDetail p={p} id={itemId} tick={tick} />}
      </Drawer>
    </Stack>
  )
}

function BacklogCard(props: {
  it: Item
  moves: CardState[]
  first: boolean
  last: boolean
  onOpen: () => void
  onMove: (to: CardState) => void
  onUp: () => void
  onDown: () => void
  onDragStart: () => void
  onDragEnd: () => void
}) {
  const { it, moves } = props
  // A forge issue's number; a card that is not an issue (a customer's message) is named by its id.
  const n = it.issue_number ?? it.id
  return (
    <Card
      withBorder
      padding="xs"
      draggable
      onDragStart={(e) => {
        e.dataTransfer.setData(dragType, it.id)
        e.dataTransfer.setData('text/plain', `${label(it)}${it.title}`)
        e.dataTransfer.effectAllowed = 'move'
        props.onDragStart()
      }}
      onDragEnd={props.onDragEnd}
      style={{ cursor: 'grab' }}
      data-testid={`backlog-card-${n}`}
      data-item-id={it.id}
      data-state={it.state}
      data-priority={it.priority}
    >
      <Stack gap={4}>
        <Anchor component="button" type="button" size="sm" fw={500} ta="left" onClick={props.onOpen} data-testid={`backlog-card-open-${n}`}>
          {label(it)}
          {it.title}
        </Anchor>
        {(it.labels ?? []).length > 0 && (
          <Group gap={4}>
            {(it.labels ?? []).map((l) => (
              <Badge key={l} size="xs" variant="outline" tt="none">
                {l}
              </Badge>
            ))}
          </Group>
        )}
        {it.blocked_reason && (
          <Text size="xs" c="orange" data-testid={`backlog-card-reason-${n}`}>
            {it.blocked_reason}
          </Text>
        )}
        {(it.task_id || it.pr_url) && (
          <Group gap="xs">
            {it.task_id && (
              <Anchor component={Link} to={`/tasks/${it.task_id}`} size="xs">
                task
              </Anchor>
            )}
            {it.pr_url && (
              <Anchor href={it.pr_url} target="_blank" rel="noreferrer" size="xs">
                pull request #{it.pr_number}
              </Anchor>
            )}
          </Group>
        )}
        <Group gap={4} wrap="nowrap">
          <NativeSelect
            size="xs"
            aria-label={`Move #${n} to`}
            value=""
            disabled={moves.length === 0}
            onChange={(e) => {
              const to = e.currentTarget.value as CardState
              if (to) props.onMove(to)
            }}
            data={[{ value: '', label: moves.length ? 'Move to…' : 'No moves' }, ...moves.map((m) => ({ value: m, label: labels[m] }))]}
            style={{ flex: 1 }}
            data-testid={`backlog-card-move-${n}`}
          />
          {it.state !== 'done' && (
            <>
              <ActionIcon size="sm" variant="subtle" aria-label={`Move #${n} up`} disabled={props.first} onClick={props.onUp} data-testid={`backlog-card-up-${n}`}>
                ↑
              </ActionIcon>
              <ActionIcon size="sm" variant="subtle" aria-label={`Move #${n} down`} disabled={props.last} onClick={props.onDown} data-testid={`backlog-card-down-${n}`}>
                ↓
              </ActionIcon>
            </>
          )}
        </Group>
      </Stack>
    </Card>
  )
}

/** Why a card is blocked (optional), asked before the move. */
/** A card's prefix: its issue's number, or where it came from. */
function label(it: { issue_number?: number | null; source?: string }): string {
  return it.issue_number != null ? `#${it.issue_number} ` : it.source === 'conversation' ? 'Message · ' : ''
}

function BlockModal({ item, onCancel, onConfirm }: { item: Item | null; onCancel: () => void; onConfirm: (it: Item, reason: string) => void }) {
  const [reason, setReason] = useState('')
  useEffect(() => setReason(''), [item])
  return (
    <Modal opened={item !== null} onClose={onCancel} title={item ? `Block ${label(item)}${item.title}?` : ''}>
      {item && (
        <form
          onSubmit={(e) => {
            e.preventDefault()
            onConfirm(item, reason)
          }}
        >
          <Stack gap="xs">
            <TextInput label="Why" description="Optional; shown on the card" maxLength={500} value={reason} onChange={(e) => setReason(e.currentTarget.value)} data-autofocus data-testid="backlog-block-reason" />
            <Group justify="end">
              <Button variant="default" onClick={onCancel}>
                Cancel
              </Button>
              <Button type="submit" color="orange" data-testid="backlog-block-confirm">
                Move to Blocked
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  )
}

/** Scan: a dry run first, shown; then applied on request. */
function ScanControls({ p, scannable, onApplied }: { p: Project; scannable: boolean; onApplied: () => unknown }) {
  const [preview, setPreview] = useState<ScanResult | null>(null)
  const [applied, setApplied] = useState<ScanResult | null>(null)
  const action = useAction()
  const scan = (dry: boolean) => post('/api/projects/{id}/backlog/scan', { params: { path: { id: p.id }, query: { dry_run: dry } } })
  const runPreview = () =>
    action.run('preview', async () => {
      setApplied(null)
      setPreview(await scan(true))
    })
  const apply = () =>
    action.run('apply', async () => {
      const r = await scan(false)
      setPreview(null)
      setApplied(r)
      await onApplied()
    })
  const changes = (r: ScanResult) => (r.added ?? []).length + (r.updated ?? []).length + (r.removed ?? []).length
  const summary = (r: ScanResult) => `${(r.added ?? []).length} added, ${(r.updated ?? []).length} updated, ${(r.removed ?? []).length} removed`
  return (
    <Stack gap="xs" maw={480} style={{ flex: '0 1 480px' }}>
      <Group justify="end">
        <Button size="xs" variant="light" onClick={runPreview} loading={action.busy === 'preview'} disabled={!scannable} data-testid="backlog-scan">
          Scan the open issues…
        </Button>
      </Group>
      <ErrorNote error={action.error} />
      {preview && (
        <Card
          withBorder
          padding="xs"
          data-testid="backlog-scan-preview"
          data-added={(preview.added ?? []).length}
          data-updated={(preview.updated ?? []).length}
          data-removed={(preview.removed ?? []).length}
        >
          <Stack gap={4}>
            <Text size="sm" fw={600}>
              The scan would make: {summary(preview)}
            </Text>
            <Text size="xs" c="dimmed">
              A preview: nothing was written.
            </Text>
            {(
              [
                ['added', 'New in the inbox', preview.added],
                ['updated', 'Updated', preview.updated],
                ['removed', 'Off the board (no longer open)', preview.removed],
              ] as const
            ).map(([key, title, list]) =>
              (list ?? []).length === 0 ? null : (
                <Stack key={key} gap={0} data-testid={`backlog-scan-${key}`}>
                  <Text size="xs" fw={500}>
                    {title}
                  </Text>
                  {(list ?? []).map((c) => (
                    <Text key={c.issue_number} size="xs" data-testid={`backlog-scan-${key}-${c.issue_number}`}>
                      #{c.issue_number} {c.title}
                    </Text>
                  ))}
                </Stack>
              ),
            )}
            <Group justify="end" gap="xs">
              <Button size="xs" variant="default" onClick={() => setPreview(null)} data-testid="backlog-scan-discard">
                Discard
              </Button>
              <Button size="xs" onClick={apply} loading={action.busy === 'apply'} disabled={changes(preview) === 0} data-testid="backlog-scan-apply">
                Apply
              </Button>
            </Group>
          </Stack>
        </Card>
      )}
      {applied && (
        <Alert color="teal" withCloseButton onClose={() => setApplied(null)} data-testid="backlog-scan-applied">
          Scanned: {summary(applied)}.
        </Alert>
      )}
    </Stack>
  )
}

/** A card in full: its issue, body, gates, latest routing decision and dispatched runs. */
function ItemDetail({ p, id, tick }: { p: Project; id: string; tick: number }) {
  const item = useLoad(() => get('/api/projects/{id}/backlog/items/{item_id}', { params: { path: { id: p.id, item_id: id } } }), [p.id, id])
  const { reload } = item
  // A backlog hint after the card opened reads it again (its task may have moved it).
  const opened = useRef(tick)
  useEffect(() => {
    if (tick !== opened.current) void reload()
  }, [tick, reload])
  const d = item.data
  if (item.loading && !d) return <Loading label="Loading the card…" />
  if (!d) return <ErrorNote error={item.error ?? 'The card was not found.'} />
  const runs = d.runs ?? []
  return (
    <Stack gap="sm" data-testid="backlog-item" data-item-id={d.id} data-state={d.state}>
      <Text fw={600} data-testid="backlog-item-title">
        {label(d)}
        {d.title}
      </Text>
      <Group gap="xs">
        <Badge color={colors[d.state]} variant="light" data-testid="backlog-item-state" data-state={d.state}>
          {labels[d.state]}
        </Badge>
        <Text size="xs" c="dimmed" data-testid="backlog-item-priority">
          priority {d.priority}
        </Text>
        <Anchor href={d.url} target="_blank" rel="noreferrer" size="sm" data-testid="backlog-item-link">
          the issue on the forge
        </Anchor>
        {d.pr_url && (
          <Anchor href={d.pr_url} target="_blank" rel="noreferrer" size="sm">
            pull request #{d.pr_number}
          </Anchor>
        )}
      </Group>
      {(d.labels ?? []).length > 0 && (
        <Group gap={4} data-testid="backlog-item-labels">
          {(d.labels ?? []).map((l) => (
            <Badge key={l} size="sm" variant="outline" tt="none">
              {l}
            </Badge>
          ))}
        </Group>
      )}
      {d.blocked_reason && (
        <Alert color="orange" p="xs" data-testid="backlog-item-reason">
          Blocked: {d.blocked_reason}
        </Alert>
      )}
      <ErrorNote error={item.error} />
      <Paper withBorder p="xs">
        <Text size="sm" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }} data-testid="backlog-item-body">
          {d.body || 'The issue has no description.'}
        </Text>
        {d.body_truncated && (
          <Text size="xs" c="dimmed">
            Cut: the whole text is on the forge.
          </Text>
        )}
      </Paper>
      <Card withBorder padding="xs" data-testid="backlog-gates" data-green={String(d.gates.green)}>
        <Text size="sm" fw={600}>
          Gates: {d.gates.green ? 'green' : 'not green'}
        </Text>
        {!d.gates.green && (
          <Text size="sm" data-testid="backlog-gates-reason">
            {d.gates.reason}
          </Text>
        )}
        <Text size="xs" c="dimmed">
          task: {d.gates.task} · checks: {d.gates.checks}
        </Text>
      </Card>
      <Card withBorder padding="xs" data-testid="backlog-decision" data-decision={d.decision?.decision ?? 'none'}>
        <Text size="sm" fw={600}>
          Latest routing decision
        </Text>
        {d.decision ? (
          <Text size="sm">
            {d.decision.decision}: {d.decision.detail}{' '}
            <Text span size="xs" c="dimmed">
              ({when(d.decision.created_at)})
            </Text>
          </Text>
        ) : (
          <Text size="sm" c="dimmed">
            None yet: the dispatcher takes a card once it is ready.
          </Text>
        )}
      </Card>
      <Stack gap={4} data-testid="backlog-runs" data-count={runs.length}>
        <Text size="sm" fw={600}>
          Tasks dispatched {runs.length > 0 && `(${runs.length})`}
        </Text>
        {runs.length === 0 && (
          <Text size="sm" c="dimmed">
            None yet.
          </Text>
        )}
        {runs.map((r, i) => (
          <Group key={`${r.task_id ?? 'gone'}-${i}`} gap="xs" data-testid={r.task_id ? `backlog-run-${r.task_id}` : 'backlog-run-deleted'}>
            {r.task_id ? (
              <Anchor component={Link} to={`/tasks/${r.task_id}`} size="sm">
                task {r.task_id.slice(0, 8)}
              </Anchor>
            ) : (
              <Text size="sm" c="dimmed">
                a deleted task
              </Text>
            )}
            {r.task_status && <Status status={r.task_status} />}
            <Text size="xs" c="dimmed">
              {when(r.created_at)}
            </Text>
          </Group>
        ))}
      </Stack>
    </Stack>
  )
}
