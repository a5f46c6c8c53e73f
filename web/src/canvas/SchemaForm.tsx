// A node's config as a form generated from its kind's JSON Schema: one
// field per property, typed by the schema; expression and template fields
// (the schema's descriptions say which) complete `input`, `trigger`, `run`,
// `env` and `nodes.<key>.output` as they are typed. Problems the schema can
// name (a required field left empty, a value too long) show on the field
// and on the node before anything is saved.
import { Checkbox, NativeSelect, NumberInput, Paper, Stack, TagsInput, Text, TextInput, Textarea, UnstyledButton } from '@mantine/core'
import { useRef, useState } from 'react'

export type Schema = {
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  enum?: unknown[]
  description?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  items?: Schema
  format?: string
}

type Config = Record<string, unknown>

const typeOf = (s: Schema): string => (Array.isArray(s.type) ? (s.type.find((t) => t !== 'null') ?? 'string') : (s.type ?? 'object'))

/** What an expression field's description says it holds. */
export function exprMode(s: Schema): 'expression' | 'template' | undefined {
  const d = s.description ?? ''
  if (/^Expressions?\b/.test(d)) return 'expression'
  if (/^Template\b/.test(d)) return 'template'
  return undefined
}

/** The problems the schema names in a config, by field. */
export function problems(schema: Schema | undefined, config: Config): Record<string, string> {
  const out: Record<string, string> = {}
  if (!schema?.properties) return out
  for (const [name, s] of Object.entries(schema.properties)) {
    const v = config[name]
    const empty = v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0)
    if (empty) {
      if (schema.required?.includes(name)) out[name] = 'Required.'
      continue
    }
    if (typeof v === 'string') {
      if (s.minLength && v.length < s.minLength) out[name] = `At least ${s.minLength} characters.`
      if (s.maxLength && v.length > s.maxLength) out[name] = `At most ${s.maxLength} characters.`
      if (s.enum && !s.enum.includes(v)) out[name] = `One of ${s.enum.join(', ')}.`
    }
    if (typeof v === 'number') {
      if (s.minimum !== undefined && v < s.minimum) out[name] = `At least ${s.minimum}.`
      if (s.maximum !== undefined && v > s.maximum) out[name] = `At most ${s.maximum}.`
    }
  }
  return out
}

/** The first problem, said for the node. */
export function problemText(p: Record<string, string>): string | undefined {
  const [field, why] = Object.entries(p)[0] ?? []
  return field ? `${field}: ${why}` : undefined
}

export function SchemaForm({ schema, value, onChange, suggestions }: { schema: Schema; value: Config; onChange: (c: Config) => void; suggestions: string[] }) {
  const errs = problems(schema, value)
  const set = (name: string, v: unknown) => {
    const next = { ...value }
    if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) delete next[name]
    else next[name] = v
    onChange(next)
  }
  const props = Object.entries(schema.properties ?? {})
  if (props.length === 0) return <Text size="xs" c="dimmed">This kind has nothing to configure.</Text>
  return (
    <Stack gap={6} data-testid="node-form">
      {props.map(([name, s]) => (
        <Field key={name} name={name} schema={s} required={!!schema.required?.includes(name)} value={value[name]} error={errs[name]} onChange={(v) => set(name, v)} suggestions={suggestions} />
      ))}
    </Stack>
  )
}

type FieldProps = { name: string; schema: Schema; required: boolean; value: unknown; error?: string; onChange: (v: unknown) => void; suggestions: string[] }

function Field({ name, schema: s, required, value, error, onChange, suggestions }: FieldProps) {
  const label = name.replace(/_/g, ' ')
  const common = { label, description: s.description, required, error, size: 'xs' as const, 'data-testid': `field-${name}` }
  const t = typeOf(s)
  if (s.enum) {
    const opts = [{ value: '', label: required ? 'Choose…' : 'Default' }, ...s.enum.map((e) => ({ value: String(e), label: String(e) }))]
    return <NativeSelect {...common} data={opts} value={value === undefined ? '' : String(value)} onChange={(e) => onChange(e.currentTarget.value || undefined)} />
  }
  if (t === 'boolean') {
    return (
      <Checkbox
        label={label}
        description={s.description}
        size="xs"
        checked={value === true}
        indeterminate={value === undefined}
        onChange={(e) => onChange(e.currentTarget.checked)}
        data-testid={`field-${name}`}
      />
    )
  }
  if (t === 'integer' || t === 'number') {
    return <NumberInput {...common} value={typeof value === 'number' ? value : ''} min={s.minimum} max={s.maximum} allowDecimal={t === 'number'} onChange={(v) => onChange(v === '' ? undefined : Number(v))} />
  }
  if (t === 'array' && (!s.items || typeOf(s.items) === 'string')) {
    return <TagsInput {...common} value={Array.isArray(value) ? value.map(String) : []} onChange={(v) => onChange(v)} />
  }
  if (t === 'string') {
    const mode = exprMode(s)
    const long = (s.maxLength ?? 0) > 4096 || name === 'source' || name === 'sql'
    if (mode) return <ExprInput {...common} mode={mode} long={long} value={typeof value === 'string' ? value : ''} onChange={onChange} suggestions={suggestions} />
    if (long)
      return (
        <Textarea
          {...common}
          value={typeof value === 'string' ? value : ''}
          onChange={(e) => onChange(e.currentTarget.value)}
          autosize
          minRows={3}
          maxRows={14}
          spellCheck={false}
          styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
        />
      )
    return <TextInput {...common} value={typeof value === 'string' ? value : ''} onChange={(e) => onChange(e.currentTarget.value)} />
  }
  // Objects, maps and anything else: JSON, parsed as it is typed.
  return <JSONField {...common} value={value} onChange={onChange} />
}

function JSONField({ value, onChange, ...common }: { label: string; description?: string; required: boolean; error?: string; size: 'xs'; value: unknown; onChange: (v: unknown) => void }) {
  const [text, setText] = useState(() => (value === undefined ? '' : JSON.stringify(value, null, 2)))
  const [bad, setBad] = useState('')
  return (
    <Textarea
      {...common}
      error={bad || common.error}
      value={text}
      autosize
      minRows={2}
      maxRows={10}
      spellCheck={false}
      styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
      onChange={(e) => {
        const v = e.currentTarget.value
        setText(v)
        if (!v.trim()) {
          setBad('')
          onChange(undefined)
          return
        }
        try {
          onChange(JSON.parse(v))
          setBad('')
        } catch {
          setBad('Not valid JSON yet.')
        }
      }}
    />
  )
}

/** The word being typed at the caret, when it may be completed: anywhere in an expression, inside {{ }} in a template. */
function wordAt(text: string, caret: number, mode: 'expression' | 'template'): { start: number; word: string } | null {
  const before = text.slice(0, caret)
  if (mode === 'template') {
    const open = before.lastIndexOf('{{')
    if (open < 0 || before.lastIndexOf('}}') > open) return null
  }
  const m = /[A-Za-z_][\w.]*$|\.$/.exec(before)
  const word = m ? m[0] : ''
  if (mode === 'template' && !word && !/\{\{\s*$/.test(before)) return null
  return { start: caret - word.length, word }
}

type ExprProps = { label: string; description?: string; required: boolean; error?: string; size: 'xs'; mode: 'expression' | 'template'; long: boolean; value: string; onChange: (v: string) => void; suggestions: string[] }

function ExprInput({ mode, long, value, onChange, suggestions, ...common }: ExprProps) {
  const ref = useRef<HTMLInputElement & HTMLTextAreaElement>(null)
  const [caret, setCaret] = useState<number | null>(null)
  const at = caret === null ? null : wordAt(value, caret, mode)
  const options = at ? suggestions.filter((s) => s.startsWith(at.word) && s !== at.word).slice(0, 8) : []
  const pick = (s: string) => {
    if (!at || caret === null) return
    let insert = s
    const rest = value.slice(caret)
    if (mode === 'template' && !/^\s*[\w.]*\s*\}\}/.test(rest)) insert += ' }}'
    const next = value.slice(0, at.start) + insert + rest
    onChange(next)
    const pos = at.start + insert.length
    setCaret(null)
    requestAnimationFrame(() => {
      ref.current?.focus()
      ref.current?.setSelectionRange(pos, pos)
    })
  }
  const track = (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement }) => setCaret(e.currentTarget.selectionStart)
  const field = {
    ...common,
    description: `${common.description ?? ''}${mode === 'template' ? ' — {{ }} holds an expression' : ''}`,
    value,
    onChange: (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) => {
      onChange(e.currentTarget.value)
      track(e)
    },
    onKeyUp: track,
    onClick: track,
    onBlur: () => setTimeout(() => setCaret(null), 150),
    spellCheck: false,
    styles: { input: { fontFamily: 'var(--mantine-font-family-monospace)' } },
  }
  return (
    <div style={{ position: 'relative' }}>
      {long ? <Textarea ref={ref} autosize minRows={2} maxRows={12} {...field} /> : <TextInput ref={ref} {...field} />}
      {options.length > 0 && (
        <Paper withBorder shadow="sm" p={4} style={{ position: 'absolute', zIndex: 10, left: 0, right: 0 }} data-testid="expr-suggestions">
          {options.map((o) => (
            <UnstyledButton
              key={o}
              display="block"
              w="100%"
              px={6}
              py={2}
              ff="monospace"
              fz="xs"
              onMouseDown={(e) => {
                e.preventDefault()
                pick(o)
              }}
              data-testid="expr-suggestion"
            >
              {o}
            </UnstyledButton>
          ))}
        </Paper>
      )}
    </div>
  )
}
