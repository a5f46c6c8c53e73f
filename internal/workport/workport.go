// Package workport is the worker port (DESIGN §5): everything a worker
// needs from the hub, as one interface and the wire types of the work that
// crosses it. The hub implements it (package dispatch); the in-process
// worker of `slipway serve` calls that directly, and a remote runner
// (package runner) calls it over HTTPS through the runner API (package
// runners serves it, package runnerapi holds its wire types). It imports
// no hub code and no executor: both sides import it.
//
// Repository credentials reach the worker (it pushes) but never an agent
// container.
package workport

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"slipway/internal/agents/protocol"
)

// Port is what a worker asks of the hub.
type Port interface {
	// Claim returns up to req.Max assignments for the worker, waiting up to
	// req.Wait for work to arrive (it returns as soon as some is assigned).
	Claim(ctx context.Context, req ClaimRequest) ([]Assignment, error)
	// Extend renews a lease; the directive says whether to stop and brings
	// the agent's inbox lines after seq inboxAfter (the last one the worker
	// delivered). ErrLeaseLost: the work is no longer this worker's (stop,
	// report nothing).
	Extend(ctx context.Context, l Lease, inboxAfter int64) (Directive, error)
	// Append stores a batch of the run's events. Batches are numbered from 1
	// per lease; repeating a batch stores it once.
	Append(ctx context.Context, l Lease, b Batch) error
	// Finish reports how the work ended and gives the lease back.
	Finish(ctx context.Context, l Lease, r Result) error
	// Control streams directives for the worker's leases (cancel; deliver:
	// the agent's inbox has lines, extend now to get them) until ctx ends.
	// Extend carries the same directives, so a message lost here is only
	// late, never lost.
	Control(ctx context.Context, workerID string) (<-chan Control, error)
	// Held returns the work a previous process of this worker held when it
	// stopped without giving it back (a crash), so the worker can finish
	// what was done and report the rest interrupted.
	Held(ctx context.Context, workerID string) ([]Assignment, error)
}

// Worker ids: the hub's in-process workers are "hub@<instance id>", remote
// runners "runner@<runner id>" (their agents' instance label too).
const (
	HubPrefix    = "hub@"
	RunnerPrefix = "runner@"
)

// IsRunner reports whether a worker id names a remote runner.
func IsRunner(workerID string) bool { return strings.HasPrefix(workerID, RunnerPrefix) }

// ErrLeaseLost tells a worker that its lease is gone: the work was
// cancelled and closed, or rescued and given to another worker.
var ErrLeaseLost = errors.New("worker: the lease on this work was lost")

// ClaimRequest asks for work.
type ClaimRequest struct {
	Worker  string        // lease owner: "hub@<instance id>" or "runner@<id>"
	Backend string        // where this worker runs agents (docker, process, …)
	Max     int           // free slots
	Wait    time.Duration // long-poll bound
}

// Lease identifies one claim of one piece of work.
type Lease struct {
	JobID       string `json:"job_id"`
	Worker      string `json:"worker"`
	Attempt     int    `json:"attempt"`
	WorkspaceID string `json:"workspace_id"`
	RunID       string `json:"run_id"`
}

// Directive is the hub's answer to Extend.
type Directive struct {
	Cancel bool // stop the agent; the work was cancelled
	// Inbox holds the lines for the agent's stdin after the seq the worker
	// gave, in order.
	Inbox []InboxLine
}

// InboxLine is one line for an agent's stdin (a protocol message: message,
// approval, interrupt), numbered per job.
type InboxLine struct {
	Seq  int64           `json:"seq"`
	Line json.RawMessage `json:"line"`
}

// Control is a directive pushed to a worker.
type Control struct {
	JobID  string
	Action string // ActionCancel or ActionDeliver
}

// Control actions.
const (
	ActionCancel  = "cancel"
	ActionDeliver = "deliver" // the agent's inbox has new lines: extend now
)

// Work types a worker can do.
const (
	WorkAgent  = "agent"  // an agent on a repository (AgentWork)
	WorkScript = "script" // a script with its files (ScriptWork)
)

// Assignment is one piece of work for a worker.
type Assignment struct {
	Lease Lease `json:"lease"`
	// TTL is how long the lease lasts without an Extend.
	TTL  time.Duration `json:"ttl_ns"`
	Work string        `json:"work"` // WorkAgent or WorkScript
	// Agent is the work when Work is WorkAgent.
	Agent *AgentWork `json:"agent,omitempty"`
	// Script is the work when Work is WorkScript.
	Script *ScriptWork `json:"script,omitempty"`
	// InboxAfter is the last inbox line an earlier attempt's agent was
	// handed: a new agent starts after it (an old interrupt or verdict is
	// not for it), and gets the lines nobody took.
	InboxAfter int64 `json:"inbox_after,omitempty"`
	// Resume is set by Held for work whose agent had already ended: its
	// recorded result stands, the agent is not run again.
	Resume *Resume `json:"resume,omitempty"`
	// TraceParent is the W3C trace context of whoever queued the work ("" when
	// it was queued untraced): the worker's span of the work continues that
	// trace.
	TraceParent string `json:"traceparent,omitempty" doc:"W3C traceparent of whoever queued the work (absent when untraced); the span of the work continues its trace"`
}

// AgentWork is an agent run on a repository: prepare the worktree, run the
// agent, commit and push what it changed.
type AgentWork struct {
	TaskID       string         `json:"task_id"`
	ProjectID    string         `json:"project_id"`
	Repo         Repo           `json:"repo"`
	Image        string         `json:"image"` // "" lets a backend without images run it (process)
	Start        protocol.Start `json:"start"`
	AgentProfile string         `json:"agent_profile"`
	Timeout      time.Duration  `json:"timeout_ns"`
	// CommitMessage is used for the agent's work.
	CommitMessage string `json:"commit_message"`
	// Secrets must never reach events or errors (credentials, keys).
	Secrets []string `json:"secrets,omitempty"`
	// Env is the agent's environment: the project's env vars, resolved
	// when the work was handed out. EnvSecrets are the secret ones' values
	// (also in Secrets): the agent keeps them from its model.
	Env        map[string]string `json:"env,omitempty"`
	EnvSecrets []string          `json:"env_secrets,omitempty"`
}

// ScriptWork is a script run: no repository, its source, files and
// library mounted read-only, its input as a JSON file, its output the last
// line it prints.
type ScriptWork struct {
	Language string            `json:"language"` // sh, bash, python or javascript (node)
	Source   string            `json:"source"`
	Files    []ScriptFile      `json:"files,omitempty"`   // mounted read-only under FilesPath
	Library  []ScriptFile      `json:"library,omitempty"` // the workspace's code library, mounted read-only under LibPath
	Input    json.RawMessage   `json:"input,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	// ProjectID is the project whose env vars the script gets ("": the
	// workspace's global ones only).
	ProjectID string        `json:"project_id,omitempty"`
	Image     string        `json:"image"` // "" lets a backend without images run it (process)
	Timeout   time.Duration `json:"timeout_ns"`
	// Secrets must never reach events or errors.
	Secrets []string `json:"secrets,omitempty"`
	// Collect, when set, brings the files of a directory under the working
	// directory back with a succeeded result (an app's build output).
	Collect *Collect `json:"collect,omitempty"`
}

// Collect names the directory whose files come back with a script's
// result, and bounds them: a build that leaves more fails.
type Collect struct {
	Dir           string `json:"dir"` // relative to the working directory, slash-separated
	MaxFiles      int    `json:"max_files"`
	MaxFileBytes  int64  `json:"max_file_bytes"`
	MaxTotalBytes int64  `json:"max_total_bytes"`
}

// ScriptFile is one file of a script's files.
type ScriptFile struct {
	Path    string `json:"path"` // relative, slash-separated, normalised by the hub
	Content []byte `json:"content"`
}

// Repo is where the agent works and what it may push.
type Repo struct {
	URL           string `json:"url"`
	Username      string `json:"username"`
	Token         string `json:"token"`
	SSHPrivateKey string `json:"ssh_private_key"`
	DefaultBranch string `json:"default_branch"`
	Branch        string `json:"branch"` // the work's branch, created from DefaultBranch when missing
}

// Resume carries what a previous process recorded of the work.
type Resume struct {
	// Result is the agent's result line (protocol.Result), if it was
	// recorded before the worker stopped.
	Result json.RawMessage `json:"result,omitempty"`
	// BatchSeq is the last event batch stored for the run; the next one is
	// numbered after it.
	BatchSeq int64 `json:"batch_seq"`
	// ExitCode is the agent's exit code when the worker found it (a
	// container that ended while its worker was down).
	ExitCode *int `json:"exit_code,omitempty"`
	// Logged are the publishing steps ("commit", "push") the run's log
	// shows already: a resumed run does them again (a no-op when done) but
	// logs each once.
	Logged []string `json:"logged,omitempty"`
	// Recovered marks a result the worker read back from the backend (not
	// stored yet); the worker sets it, it never travels.
	Recovered bool `json:"-"`
}

// Batch is a numbered batch of a run's events.
type Batch struct {
	Seq    int64   `json:"seq"`
	Events []Event `json:"events"`
}

// Event is one event a worker reports.
type Event struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
	At      time.Time       `json:"at"`
}

// Commit identity of agent work (the worker commits with it; an undo
// reverts with it).
const (
	AuthorName  = "Slipway Agent"
	AuthorEmail = "agent@slipway.invalid"
)

// Event types the worker writes (agent lines keep the agent's own types).
const (
	EventGit     = "git"     // {action, …}
	EventTimeout = "timeout" // {timeout_seconds}
	EventLog     = protocol.OutLog
)

// Outcomes of work.
const (
	Succeeded   = "succeeded"   // the agent succeeded and its change (if any) is published
	Failed      = "failed"      // the agent failed, or preparing or publishing failed
	Cancelled   = "cancelled"   // stopped because the work was cancelled
	TimedOut    = "timed_out"   // stopped at its time limit
	Interrupted = "interrupted" // the worker died under it; it may run again
	ShutDown    = "shut_down"   // the worker stopped gracefully; it runs again without counting as an attempt
)

// Result is how work ended.
type Result struct {
	Outcome        string  `json:"outcome"`
	ExitCode       *int    `json:"exit_code,omitempty"`
	Error          string  `json:"error,omitempty"`
	TimeoutSeconds int     `json:"timeout_seconds,omitempty"`
	Change         *Change `json:"change,omitempty"`
	// Output is a script's output: the last line it printed, as JSON when
	// it is JSON and as a JSON string otherwise (absent when it printed
	// nothing).
	Output json.RawMessage `json:"output,omitempty"`
	// Files are the collected files of a succeeded script whose work asked
	// for them (ScriptWork.Collect); regular files only, paths relative to
	// the collected directory.
	Files []ScriptFile `json:"files,omitempty"`
}

// Change is a published change.
type Change struct {
	Commit       string `json:"commit"`
	FilesChanged int    `json:"files_changed"`
	Insertions   int    `json:"insertions"`
	Deletions    int    `json:"deletions"`
}
