// The command palette: Ctrl+K (⌘K) opens it anywhere in the console. It
// walks Slipway's typed command protocol (docs/decisions.md, "Command
// protocol"): pick a command, then resolve its input step by step — a
// need_param asks for one parameter with its choices, an invalid value
// shows the API's hint — and once resolve says ready, Enter invokes it.
// Resolving changes nothing; only invoke runs the command.
import { Alert, Anchor, Badge, Button, Group, Kbd, Loader, Modal, ScrollArea, Stack, Text, TextInput, UnstyledButton } from '@mantine/core'
import { useDisclosure, useHotkeys } from '@mantine/hooks'
import { useEffect, useId, useRef, useState, type KeyboardEvent, type ReactNode } from 'react'
import { get, messageOf, post, type Schemas } from './api'
import { useSession } from './session'

type Descriptor = Schemas['Descriptor']
type Param = Schemas['Param']
type Choice = Schemas['Choice']
type Outcome = Schemas['Outcome']
type Invocation = Schemas['Invocation']
type Plan = Schemas['Plan']
type WordInputBody = Schemas['WordInputBody']

/** Arguments by parameter name; the palette always sends strings. */
type Args = Record<string, string>

/** A command being filled in: the values given so far and, for display, the labels of the choices picked. */
type Walk = { command: Descriptor; args: Args; labels: Args }

/** Where the palette stands. Each step forward is a new stage, so going back is popping the history. */
type Stage =
  | { kind: 'commands' }
  | { kind: 'ask'; walk: Walk; param: Param; choices: Choice[]; freeText: boolean; invalid?: { value: string; hint: string } }
  | { kind: 'ready'; walk: Walk; input: Invocation }
  | { kind: 'result'; walk: Walk; invocation: Invocation; plan: Plan }
  | { kind: 'failed'; word: string; message: string; walk?: Walk }

/** One row of the keyboard-navigable list. */
type Item = { key: string; testId: string; label: ReactNode; detail?: string; hint?: string; pick: () => void }

// The descriptors carry i18n keys; the console holds the texts.
const texts: Record<string, string> = {
  'cmd.new.description': 'Start a new task',
  'cmd.new.param.project': 'Project',
  'cmd.new.param.prompt': 'Prompt',
  'cmd.new.param.agent': 'Agent profile',
  'cmd.new.param.model': 'Model',
  'cmd.new.param.effort': 'Effort',
  'cmd.cancel.description': 'Cancel a task',
  'cmd.cancel.param.task': 'Task',
  'cmd.rerun.description': 'Run a task again',
  'cmd.rerun.param.task': 'Task',
  'cmd.approve.description': 'Approve a pending decision: a tool call, a proposal or a workflow gate',
  'cmd.approve.param.approval': 'Decision',
  'cmd.reject.description': 'Reject a pending decision: a tool call, a proposal or a workflow gate',
  'cmd.reject.param.approval': 'Decision',
  'cmd.run.description': 'Start a workflow run',
  'cmd.run.param.workflow': 'Workflow',
  'cmd.tasks.description': 'List the recent tasks',
  'cmd.tasks.param.limit': 'How many tasks',
  'cmd.autonomy.description': "Set the workspace's autonomy level",
  'cmd.autonomy.param.level': 'Autonomy level',
}

const describeCommand = (c: Descriptor) => texts[c.description_i18n] ?? c.word
const describeParam = (p: Param) => texts[p.description_i18n] ?? p.name

const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.userAgent)

/** Commands matching the query: word prefix first, then alias prefix, then any match in word, aliases or description. */
function matchCommands(list: Descriptor[], query: string): Descriptor[] {
  const q = query.trim().toLowerCase()
  if (!q) return list
  const rank = (c: Descriptor): number => {
    const aliases = c.aliases ?? []
    if (c.word.startsWith(q)) return 0
    if (aliases.some((a) => a.startsWith(q))) return 1
    if (c.word.includes(q) || aliases.some((a) => a.includes(q))) return 2
    if (describeCommand(c).toLowerCase().includes(q)) return 3
    return -1
  }
  return list
    .map((c) => ({ c, r: rank(c) }))
    .filter((x) => x.r >= 0)
    .sort((a, b) => a.r - b.r)
    .map((x) => x.c)
}

/** Choices whose value or label contains the query (the options endpoint's rule). */
function matchChoices(list: Choice[], query: string): Choice[] {
  const q = query.trim().toLowerCase()
  if (!q) return list
  return list.filter((c) => c.label.toLowerCase().includes(q) || c.value.toLowerCase().includes(q))
}

function findCommand(list: Descriptor[], word: string): Descriptor | undefined {
  const w = word.toLowerCase()
  return list.find((c) => c.word === w || (c.aliases ?? []).includes(w))
}

function without(args: Args, name: string): Args {
  const rest = { ...args }
  delete rest[name]
  return rest
}

/** A parameter's choices when resolve did not list them (an invalid value, an optional parameter). */
async function choicesOf(p: Param): Promise<Choice[]> {
  if (p.options.kind === 'static') return p.options.values ?? []
  if (p.options.kind === 'dynamic' && p.options.provider) {
    return (await get('/api/commands/options/{provider_id}', { params: { path: { provider_id: p.options.provider } } })) ?? []
  }
  return []
}

const isFreeText = (p: Param) => p.kind === 'free_text' || p.kind === 'int_range'

/** The stage an outcome of resolve or invoke leads to. */
async function stageFor(walk: Walk, outcome: Outcome): Promise<Stage> {
  const params = walk.command.params ?? []
  switch (outcome.status) {
    case 'executed':
      return { kind: 'result', walk, invocation: outcome.invocation ?? { word: walk.command.word, args: walk.args }, plan: outcome.plan ?? { text: '', html: false, media: [], affordances: [] } }
    case 'ready':
      return { kind: 'ready', walk, input: outcome.input ?? { word: walk.command.word, args: walk.args } }
    case 'need_param': {
      const name = outcome.param ?? ''
      const param: Param = params.find((p) => p.name === name) ?? {
        name,
        description_i18n: outcome.description_i18n ?? '',
        required: true,
        kind: outcome.free_text ? 'free_text' : 'enum',
        options: { kind: 'none' },
      }
      const next: Walk = { ...walk, args: without(walk.args, name), labels: without(walk.labels, name) }
      return { kind: 'ask', walk: next, param, choices: outcome.options ?? [], freeText: outcome.free_text ?? isFreeText(param) }
    }
    case 'invalid': {
      const param = params.find((p) => p.name === outcome.param)
      if (!param) return { kind: 'failed', word: walk.command.word, walk, message: outcome.hint ?? `${walk.command.word} cannot run with these arguments.` }
      const next: Walk = { ...walk, args: without(walk.args, param.name), labels: without(walk.labels, param.name) }
      return {
        kind: 'ask',
        walk: next,
        param,
        choices: await choicesOf(param),
        freeText: isFreeText(param),
        invalid: { value: outcome.value ?? '', hint: outcome.hint ?? `${param.name} is not valid.` },
      }
    }
  }
}

/** The header button and the palette itself (a modal). */
export function Palette() {
  const { workspace } = useSession()
  const workspaceID = workspace?.id ?? ''
  const [opened, { open, close }] = useDisclosure(false)
  const [commands, setCommands] = useState<{ workspace: string; list: Descriptor[] } | null>(null)
  const [loadError, setLoadError] = useState<string | null>(null)
  const [stage, setStage] = useState<Stage>({ kind: 'commands' })
  const [history, setHistory] = useState<Stage[]>([])
  const [query, setQuery] = useState('')
  const [active, setActive] = useState(0)
  const [busy, setBusy] = useState<string | null>(null)
  const [remote, setRemote] = useState<{ provider: string; q: string; choices: Choice[] } | null>(null)
  // Bumped on every move: an answer that arrives after the person moved on is dropped.
  const moves = useRef(0)
  const listID = useId()

  const reset = () => {
    moves.current++
    setStage({ kind: 'commands' })
    setHistory([])
    setQuery('')
    setActive(0)
    setBusy(null)
  }
  const show = () => {
    reset()
    open()
  }
  const hide = () => {
    moves.current++
    setBusy(null)
    close()
  }
  useHotkeys([['mod+K', () => (opened ? hide() : show())]], [])

  // The commands the role may run, fetched on every opening (roles change).
  useEffect(() => {
    if (!opened) return
    let live = true
    get('/api/commands').then(
      (list) => {
        if (!live) return
        setCommands({ workspace: workspaceID, list: list ?? [] })
        setLoadError(null)
      },
      (e: unknown) => live && setLoadError(messageOf(e)),
    )
    return () => {
      live = false
    }
  }, [opened, workspaceID])

  // A dynamic parameter's choices are capped: what is typed is also asked of the options endpoint.
  const provider = stage.kind === 'ask' && stage.param.options.kind === 'dynamic' ? stage.param.options.provider : undefined
  const q = query.trim()
  useEffect(() => {
    if (!provider || !q) return
    let live = true
    const timer = setTimeout(() => {
      get('/api/commands/options/{provider_id}', { params: { path: { provider_id: provider }, query: { q } } }).then(
        (choices) => live && setRemote({ provider, q, choices: choices ?? [] }),
        () => undefined, // the choices resolve gave stay
      )
    }, 150)
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [provider, q])

  const advance = (from: Stage, next: Stage) => {
    moves.current++
    // Asking again for the same parameter (its value was refused) replaces the step instead of stacking it.
    const again = from.kind === 'ask' && next.kind === 'ask' && from.param.name === next.param.name
    if (!again) setHistory((h) => [...h, from])
    setStage(next)
    setQuery('')
    // A result's follow-ups are not highlighted: an extra Enter must not start the next command.
    setActive(next.kind === 'result' ? -1 : 0)
    setBusy(null)
  }

  const back = () => {
    moves.current++
    setBusy(null)
    setQuery('')
    setActive(0)
    if (stage.kind === 'result') {
      reset()
      return
    }
    const prev = history.at(-1)
    setHistory((h) => h.slice(0, -1))
    setStage(prev ?? { kind: 'commands' })
  }

  /** Calls resolve or invoke with the walk's arguments and moves to the stage the outcome leads to. */
  const step = async (from: Stage, walk: Walk, op: 'resolve' | 'invoke') => {
    const mine = ++moves.current
    setBusy(op === 'invoke' ? `Running ${walk.command.word}…` : 'Checking…')
    let next: Stage
    try {
      const body: WordInputBody = { args: walk.args }
      const outcome = await post(`/api/commands/{word}/${op}`, { params: { path: { word: walk.command.word } }, body })
      next = await stageFor(walk, outcome)
    } catch (e) {
      next = { kind: 'failed', word: walk.command.word, walk, message: messageOf(e) }
    }
    if (mine === moves.current) advance(from, next)
  }

  /** Asks for an optional parameter resolve does not ask for by itself. */
  const askOptional = async (from: Stage, walk: Walk, param: Param) => {
    const mine = ++moves.current
    setBusy('Loading choices…')
    let next: Stage
    try {
      next = { kind: 'ask', walk, param, choices: await choicesOf(param), freeText: isFreeText(param) }
    } catch (e) {
      next = { kind: 'failed', word: walk.command.word, walk, message: messageOf(e) }
    }
    if (mine === moves.current) advance(from, next)
  }

  const give = (s: Extract<Stage, { kind: 'ask' }>, value: string, label?: string) => {
    const name = s.param.name
    const walk: Walk = {
      ...s.walk,
      args: { ...s.walk.args, [name]: value },
      labels: label === undefined ? without(s.walk.labels, name) : { ...s.walk.labels, [name]: label },
    }
    void step(s, walk, 'resolve')
  }

  const replay = (from: Stage, action: Invocation) => {
    const command = findCommand(commandList, action.word)
    if (!command) {
      advance(from, { kind: 'failed', word: action.word, message: `${action.word} is not among the commands you may run here.` })
      return
    }
    void step(from, { command, args: { ...action.args }, labels: {} }, 'resolve')
  }

  const commandsLoaded = commands?.workspace === workspaceID
  const commandList = commandsLoaded ? commands.list : []
  const items = itemsFor()

  function itemsFor(): Item[] {
    switch (stage.kind) {
      case 'commands':
        return matchCommands(commandList, query).map((c) => ({
          key: c.word,
          testId: `palette-item-${c.word}`,
          label: c.word,
          detail: describeCommand(c),
          hint: (c.aliases ?? []).join(', '),
          pick: () => void step(stage, { command: c, args: {}, labels: {} }, 'resolve'),
        }))
      case 'ask': {
        if (stage.freeText) return []
        const pool = provider && remote?.provider === provider && remote.q === q ? remote.choices : stage.choices
        return matchChoices(pool, query).map((c) => ({
          key: c.value,
          testId: `palette-choice-${c.value}`,
          label: c.glyph ? `${c.glyph} ${c.label}` : c.label,
          detail: c.label === c.value ? undefined : c.value,
          hint: c.hint,
          pick: () => give(stage, c.value, c.label),
        }))
      }
      case 'ready': {
        const given = stage.input.args
        const optional = (stage.walk.command.params ?? []).filter((p) => !p.required && !(p.name in given))
        const all: Item[] = [
          {
            key: 'run',
            testId: 'palette-run',
            label: `Run ${stage.walk.command.word}`,
            detail: describeCommand(stage.walk.command),
            pick: () => void step(stage, { ...stage.walk, args: given }, 'invoke'),
          },
          ...optional.map((p) => ({
            key: `set-${p.name}`,
            testId: `palette-set-${p.name}`,
            label: `Set ${describeParam(p).toLowerCase()}…`,
            detail: `Optional: ${p.name}`,
            pick: () => void askOptional(stage, { ...stage.walk, args: given }, p),
          })),
        ]
        return query ? all.filter((i) => String(i.label).toLowerCase().includes(query.trim().toLowerCase())) : all
      }
      case 'result':
        return (stage.plan.affordances ?? []).map((a, i) => ({
          key: `followup-${i}`,
          testId: `palette-followup-${i}`,
          label: a.label,
          detail: `${a.action.word} ${Object.values(a.action.args).join(' ')}`.trim(),
          pick: () => replay(stage, a.action),
        }))
      case 'failed':
        return []
    }
  }

  const current = Math.min(active, items.length - 1)

  // Keeps the highlighted row in view.
  useEffect(() => {
    if (current >= 0) document.getElementById(`${listID}-${current}`)?.scrollIntoView({ block: 'nearest' })
  }, [current, listID])

  /** Enter with no row to pick: the typed text is the value (free text, or a ref given by id or name). */
  const submitText = () => {
    if (stage.kind !== 'ask') return
    const value = query.trim()
    if (!value && stage.param.required) return
    if (!value) {
      void step(stage, stage.walk, 'resolve') // an optional parameter left out
      return
    }
    give(stage, value)
  }

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.nativeEvent.isComposing) return
    const n = items.length
    switch (e.key) {
      case 'ArrowDown':
        e.preventDefault()
        setActive(n ? (current + 1) % n : 0)
        break
      case 'ArrowUp':
        e.preventDefault()
        setActive(n ? (current <= 0 ? n - 1 : current - 1) : 0)
        break
      case 'Enter':
        e.preventDefault()
        if (busy) return
        if (current >= 0) items[current].pick()
        else submitText()
        break
      case 'Backspace':
        if (query === '' && stage.kind !== 'commands' && !busy) {
          e.preventDefault()
          back()
        }
        break
    }
  }

  return (
    <>
      <Button size="xs" variant="default" onClick={show} data-testid="palette-open" rightSection={<Kbd size="xs">{isMac ? '⌘K' : 'Ctrl K'}</Kbd>}>
        Commands
      </Button>
      <Modal opened={opened} onClose={hide} withCloseButton={false} size="lg" yOffset="10vh" padding="sm">
        <Stack gap="xs" data-testid="palette" data-stage={stage.kind} aria-busy={busy ? true : undefined}>
          {stage.kind === 'ready' ? <Trail walk={{ ...stage.walk, args: stage.input.args }} /> : stage.kind !== 'commands' && stage.walk && <Trail walk={stage.walk} />}
          {stage.kind === 'ask' && <Question param={stage.param} />}
          <TextInput
            data-autofocus
            data-testid="palette-input"
            aria-label={placeholderFor(stage)}
            role="combobox"
            aria-expanded={items.length > 0}
            aria-controls={listID}
            aria-activedescendant={current >= 0 ? `${listID}-${current}` : undefined}
            placeholder={placeholderFor(stage)}
            value={query}
            onChange={(e) => {
              setQuery(e.currentTarget.value)
              setActive(0)
            }}
            onKeyDown={onKeyDown}
            rightSection={busy ? <Loader size="xs" aria-label={busy} /> : null}
            autoComplete="off"
            spellCheck={false}
          />
          {busy && (
            <Text size="xs" c="dimmed" role="status">
              {busy}
            </Text>
          )}
          {stage.kind === 'ask' && stage.invalid && (
            <Alert color="orange" title={`“${stage.invalid.value}” was not accepted`} data-testid="palette-invalid" p="xs">
              {stage.invalid.hint}
            </Alert>
          )}
          {stage.kind === 'ready' && (
            <Text size="sm" data-testid="palette-ready">
              Ready: <Text span ff="monospace">{invocationText(stage.walk, stage.input)}</Text>. Enter runs it.
            </Text>
          )}
          {stage.kind === 'result' && <Result walk={stage.walk} plan={stage.plan} />}
          {stage.kind === 'failed' && (
            <Alert color="red" title={`${stage.word} did not run`} role="alert" data-testid="palette-result" data-status="error" p="xs">
              {stage.message}
            </Alert>
          )}
          {stage.kind === 'commands' && loadError && <Alert color="red" role="alert" p="xs">{loadError}</Alert>}
          {stage.kind === 'commands' && !commandsLoaded && !loadError ? (
            <Group justify="center" py="sm">
              <Loader size="sm" aria-label="Loading commands" />
            </Group>
          ) : (
            <ItemList id={listID} items={items} current={current} onHover={setActive} disabled={!!busy} empty={emptyText(stage, query)} />
          )}
          <Group gap="md" c="dimmed">
            <Hint keys="↑ ↓" text="move" />
            <Hint keys="Enter" text={stage.kind === 'ready' ? 'run' : 'pick'} />
            <Hint keys="⌫" text="back" />
            <Hint keys="Esc" text="close" />
          </Group>
        </Stack>
      </Modal>
    </>
  )
}

function placeholderFor(stage: Stage): string {
  switch (stage.kind) {
    case 'commands':
      return 'Type a command…'
    case 'ask': {
      const p = stage.param
      if (p.kind === 'int_range') return `A whole number from ${p.min ?? '…'} to ${p.max ?? '…'}`
      if (stage.freeText) return `${describeParam(p)}…`
      return `${describeParam(p)}: type to filter, or give an id or exact name`
    }
    case 'ready':
      return 'Enter runs it; ↓ for optional parameters'
    case 'result':
      return (stage.plan.affordances ?? []).length ? '↓ for a follow-up; Backspace for another command; Esc closes' : 'Backspace for another command; Esc closes'
    case 'failed':
      return 'Backspace goes back; Esc closes'
  }
}

function emptyText(stage: Stage, query: string): string | null {
  switch (stage.kind) {
    case 'commands':
      return query ? `No command matches “${query}”.` : 'No commands.'
    case 'ask':
      if (stage.freeText) return null
      return query ? 'No choice matches: Enter sends what you typed.' : 'Nothing to choose from.'
    default:
      return null
  }
}

/** The command as it will run, with picked choices by their labels. */
function invocationText(walk: Walk, input: Invocation): string {
  const parts = Object.entries(input.args).map(([k, v]) => {
    const shown = walk.labels[k] ?? v
    return `${k}=${/\s/.test(shown) ? JSON.stringify(shown) : shown}`
  })
  return [input.word, ...parts].join(' ')
}

function Trail({ walk }: { walk: Walk }) {
  return (
    <Group gap={6} data-testid="palette-trail">
      <Badge variant="filled" tt="none">
        {walk.command.word}
      </Badge>
      {Object.entries(walk.args).map(([k, v]) => (
        <Badge key={k} variant="light" tt="none" maw={280} title={`${k}: ${walk.labels[k] ?? v}`}>
          {k}: {walk.labels[k] ?? v}
        </Badge>
      ))}
    </Group>
  )
}

function Question({ param }: { param: Param }) {
  return (
    <Text size="sm" fw={500}>
      {describeParam(param)}
      {!param.required && (
        <Text span size="xs" c="dimmed">
          {' '}
          (optional: Enter with nothing typed leaves it out)
        </Text>
      )}
    </Text>
  )
}

function Result({ walk, plan }: { walk: Walk; plan: Plan }) {
  const media = (plan.media ?? []).filter((m) => m.url)
  return (
    <Alert color="teal" title={`${walk.command.word} ran`} data-testid="palette-result" data-status="executed" p="xs">
      {/* Shown as text even when plan.html is set: the palette renders no markup it was sent. */}
      <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
        {plan.text}
      </Text>
      {media.map((m, i) => (
        <Anchor key={i} href={m.url} target="_blank" rel="noreferrer" size="sm" display="block">
          {m.name || m.url}
        </Anchor>
      ))}
      {(plan.affordances ?? []).length > 0 && (
        <Text size="xs" c="dimmed" mt={4}>
          Follow-ups below: pick one to go on.
        </Text>
      )}
    </Alert>
  )
}

function ItemList(props: { id: string; items: Item[]; current: number; onHover: (i: number) => void; disabled: boolean; empty: string | null }) {
  const { id, items, current, onHover, disabled, empty } = props
  if (items.length === 0) {
    return empty ? (
      <Text size="sm" c="dimmed" px="xs">
        {empty}
      </Text>
    ) : null
  }
  return (
    <ScrollArea.Autosize mah={340} type="auto">
      <Stack gap={2} id={id} role="listbox">
        {items.map((item, i) => (
          <UnstyledButton
            key={item.key}
            id={`${id}-${i}`}
            role="option"
            aria-selected={i === current}
            data-testid={item.testId}
            data-active={i === current || undefined}
            tabIndex={-1}
            // The input keeps the focus: the keyboard goes on working after a click.
            onMouseDown={(e) => e.preventDefault()}
            onMouseMove={() => i !== current && onHover(i)}
            onClick={() => !disabled && item.pick()}
            px="xs"
            py={6}
            style={{ borderRadius: 'var(--mantine-radius-sm)', background: i === current ? 'var(--mantine-primary-color-light)' : undefined }}
          >
            <Group justify="space-between" wrap="nowrap" gap="sm">
              <div style={{ minWidth: 0 }}>
                <Text size="sm" fw={500} truncate>
                  {item.label}
                </Text>
                {item.detail && (
                  <Text size="xs" c="dimmed" truncate>
                    {item.detail}
                  </Text>
                )}
              </div>
              {item.hint && (
                <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
                  {item.hint}
                </Text>
              )}
            </Group>
          </UnstyledButton>
        ))}
      </Stack>
    </ScrollArea.Autosize>
  )
}

function Hint({ keys, text }: { keys: string; text: string }) {
  return (
    <Text size="xs" c="dimmed">
      <Kbd size="xs">{keys}</Kbd> {text}
    </Text>
  )
}
