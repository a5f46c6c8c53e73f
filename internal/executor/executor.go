// Package executor starts agent processes in an execution backend and hands
// back their stdio. Backends: docker (Docker Engine API) and process (dev
// only, for machines without a container engine). Git, events and task state
// live elsewhere: a backend only runs a command in an isolated place.
package executor

import (
	"context"
	"errors"
	"io"
)

// Mount binds a host path into the agent's filesystem.
type Mount struct {
	Source   string // host path
	Target   string // path inside the container
	ReadOnly bool
}

// Limits are the resource caps applied to one agent (AGENT_* settings).
type Limits struct {
	MemoryBytes    int64
	NanoCPUs       int64
	PidsLimit      int64
	ReadOnlyRootFS bool
	TmpfsTmpMB     int64
	TmpfsRunMB     int64
	TmpfsHomeMB    int64
	Network        string
}

// Spec describes one agent process.
type Spec struct {
	Name  string // unique, for logs and container names
	Image string // container image (ignored by the process backend)
	// AgentType is what runs (shell, llm, command; "script" for scripts),
	// for backends that start agents by a command template (raw-ssh-exec,
	// microvm: the {agent_type} placeholder).
	AgentType string
	Command   []string
	Env       map[string]string
	Mounts    []Mount
	WorkDir   string
	Limits    Limits
	Labels    map[string]string
}

// Handle is a started agent.
type Handle interface {
	// ID identifies the process or container.
	ID() string
	// Stdout carries the agent's protocol lines; it ends when the agent exits.
	Stdout() io.Reader
	// Stderr carries free-form diagnostics.
	Stderr() io.Reader
	// Stdin feeds the agent; closing it signals end of input.
	Stdin() io.WriteCloser
	// Wait blocks until the agent exits and returns its exit code.
	Wait(ctx context.Context) (int, error)
	// Kill stops the agent now and releases what it holds.
	Kill(ctx context.Context) error
}

// Backend runs agents.
type Backend interface {
	Name() string
	Start(ctx context.Context, spec Spec) (Handle, error)
	// Leftovers lists the agents of this instance that this Backend did not
	// start: what an earlier process left behind when it died. Agents of
	// other instances are never listed.
	Leftovers(ctx context.Context) ([]Leftover, error)
}

// Leftover is an agent an earlier process of this instance left behind.
type Leftover interface {
	ID() string
	Labels() map[string]string
	// Exited reports the exit code of an agent that has ended.
	Exited() (code int, ok bool)
	// Output reads what the agent wrote to stdout, when the backend keeps it
	// (Docker keeps a container's log); ErrNoOutput otherwise.
	Output(ctx context.Context) (io.ReadCloser, error)
	// Remove stops the agent and removes what is left of it.
	Remove(ctx context.Context) error
}

// ErrNoOutput: the backend keeps no output of a leftover agent.
var ErrNoOutput = errors.New("executor: the backend keeps no output of this agent")

// ErrUnavailable reports a backend that cannot run anything here (no
// container engine, no image); its message says what is missing.
var ErrUnavailable = errors.New("execution backend unavailable")

// InstanceLabel is the label every agent container carries:
// service.instance=hub@<id> (runner@<id> on a runner).
const InstanceLabel = "service.instance"

// PathMapper is implemented by backends whose agents do not see the spec's
// container paths (the process backend runs on the host): it tells what a
// container path is called where the agent runs.
type PathMapper interface {
	AgentPath(spec Spec, containerPath string) string
}
