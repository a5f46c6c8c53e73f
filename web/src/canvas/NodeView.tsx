// The workflow canvas's node: one component for the editor and the run view.
import '@xyflow/react/dist/style.css'
import { Text } from '@mantine/core'
import { Handle, Position, type NodeProps, type NodeTypes } from '@xyflow/react'
import { stateColor, type WfNode } from './graph'

/** A node on the canvas: key, kind, run state or validation message, one target and its source handles. */
function WfNodeView({ data, selected }: NodeProps<WfNode>) {
  const color = data.error ? 'red' : data.status ? (stateColor[data.status] ?? 'gray') : ''
  const border = color ? `2px ${data.status === 'skipped' ? 'dashed' : 'solid'} var(--mantine-color-${color}-6)` : '1px solid var(--mantine-color-default-border)'
  const multi = data.handles.length > 1
  return (
    <div
      data-testid={`node-${data.key}`}
      data-kind={data.kind}
      data-status={data.status}
      data-invalid={data.error ? 'true' : undefined}
      style={{
        border,
        outline: selected ? '2px solid var(--mantine-color-indigo-4)' : undefined,
        outlineOffset: 2,
        borderRadius: 8,
        padding: multi ? '6px 64px 6px 10px' : '6px 10px',
        minWidth: 150,
        maxWidth: 280,
        minHeight: multi ? 22 * data.handles.length + 12 : undefined,
        background: data.status ? `var(--mantine-color-${color}-light)` : 'var(--mantine-color-body)',
        color: 'var(--mantine-color-text)',
      }}
    >
      <Handle type="target" position={Position.Left} />
      <Text fw={600} size="sm">
        {data.key}
      </Text>
      <Text size="xs" c="dimmed">
        {data.kind}
        {data.parent ? ` · in ${data.parent}` : ''}
      </Text>
      {data.status && (
        <Text size="xs" fw={500}>
          {data.status}
        </Text>
      )}
      {data.error && (
        <Text size="xs" c="red" data-testid={`node-error-${data.key}`} style={{ whiteSpace: 'normal' }}>
          {data.error}
        </Text>
      )}
      {data.handles.map((h, i) => {
        const top = `${((i + 1) * 100) / (data.handles.length + 1)}%`
        return (
          <div key={h}>
            <Handle id={h} type="source" position={Position.Right} style={{ top }} title={h} />
            {multi && (
              <span style={{ position: 'absolute', right: 8, top, transform: 'translateY(-50%)', fontSize: 10, opacity: 0.7 }}>{h}</span>
            )}
          </div>
        )
      })}
    </div>
  )
}

export const nodeTypes: NodeTypes = { wf: WfNodeView }
