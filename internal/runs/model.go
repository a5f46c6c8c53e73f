// Package runs holds runs and their event logs (DESIGN §5): a run is one
// execution of something (a task's attempt now; workflow runs, workflow
// nodes, scripts and app builds later) with a kind, a parent, a workspace, a
// status and timestamps. Events go to an event log with one sequence for the
// whole log (a task's log spans all its runs) and, when a run wrote them, a
// sequence of their own on that run. Every API that shows progress reads
// runs; no domain keeps an event table or a sequence counter of its own.
package runs

import (
	"encoding/json"
	"time"
)

// Run kinds. The API lists the kinds that exist so far.
const (
	KindTask     = "task"
	KindWorkflow = "workflow"
	KindScript   = "script" // a script run: a code node's (a child of its workflow run)
)

// Kinds are the run kinds in use (filters accept only these).
var Kinds = []string{KindTask, KindWorkflow, KindScript}

// Run statuses.
const (
	Running   = "running"
	Succeeded = "succeeded"
	Failed    = "failed"
	Cancelled = "cancelled"
)

// Statuses lists every run status.
var Statuses = []string{Running, Succeeded, Failed, Cancelled}

// Terminal reports a status a run never leaves.
func Terminal(status string) bool { return status != Running }

// Run as the API shows it.
type Run struct {
	ID          string     `json:"id" format:"uuid"`
	Kind        string     `json:"kind" enum:"task,workflow,script"`
	Status      string     `json:"status" enum:"running,succeeded,failed,cancelled"`
	WorkspaceID string     `json:"workspace_id" format:"uuid"`
	ProjectID   *string    `json:"project_id" nullable:"true"`
	TaskID      *string    `json:"task_id" nullable:"true"`
	ParentRunID *string    `json:"parent_run_id" nullable:"true"`
	Attempt     int        `json:"attempt"`
	Backend     string     `json:"backend"`
	ExitCode    *int       `json:"exit_code" nullable:"true"`
	Error       string     `json:"error"`
	CreatedAt   time.Time  `json:"created_at"`
	FinishedAt  *time.Time `json:"finished_at" nullable:"true"`

	// LogID is the event log the run writes to (a task's runs share the
	// task's log).
	LogID string `json:"-"`
	// JobID is the queue job that runs it, if any.
	JobID string `json:"-"`
	// Result is the agent's result line once one was recorded: a run with a
	// recorded result is finished work, never to be run again.
	Result json.RawMessage `json:"-"`
	// BatchSeq is the last worker batch of events stored.
	BatchSeq int64 `json:"-"`
	// packed says the run's events are packed in its row (see Record).
	packed bool
}

// RunTree is a run with its descendants.
type RunTree struct {
	Run
	Children []RunTree `json:"children"`
}

// TaskEvent is one entry of an event log, in the spec's Task event shape. Read
// through a log, sequence_num is the log's sequence; read through a run, it
// is the run's own. task_id names the task the events belong to.
type TaskEvent struct {
	EventID     string          `json:"event_id" format:"uuid"`
	EventType   string          `json:"event_type"`
	Payload     json.RawMessage `json:"payload"`
	SequenceNum int32           `json:"sequence_num"`
	TaskID      string          `json:"task_id" format:"uuid"`
	Timestamp   time.Time       `json:"timestamp"`
}

// NewEvent is an event to append. Payload must be a JSON object.
type NewEvent struct {
	Type    string
	Payload json.RawMessage
	At      time.Time
}

// Value is an event whose payload is v marshalled (an unmarshalable value
// becomes {}).
func Value(typ string, v any, at time.Time) NewEvent {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{}`)
	}
	return NewEvent{Type: typ, Payload: b, At: at}
}

// ResultType is the event type of an agent's result line; appending one
// records the run's result.
const ResultType = "result"
