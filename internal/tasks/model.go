// Package tasks holds tasks: work handed to an agent on a project, their
// rules (the state machine, what a run of a task needs, what its outcome
// means for the task) and their HTTP API. Runs and event logs live in runs,
// the queue in platform/jobs, execution in worker; tasks tell them what a
// task is.
package tasks

import (
	"fmt"
	"slices"
	"time"

	"slipway/internal/platform/apperr"
)

// Task statuses (spec: queued, running, needs-input, done, done-PR, failed,
// cancelled).
const (
	StatusQueued     = "queued"
	StatusRunning    = "running"
	StatusNeedsInput = "needs_input"
	StatusDone       = "done"
	StatusDonePR     = "done_pr"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Statuses lists every task status.
var Statuses = []string{StatusQueued, StatusRunning, StatusNeedsInput, StatusDone, StatusDonePR, StatusFailed, StatusCancelled}

// transitions is the task state machine (docs/task-states.md). Anything not
// listed is refused with 409 and changes nothing.
var transitions = map[string][]string{
	StatusQueued:     {StatusRunning, StatusCancelled, StatusFailed},
	StatusRunning:    {StatusDone, StatusDonePR, StatusFailed, StatusCancelled, StatusNeedsInput},
	StatusNeedsInput: {StatusRunning, StatusDone, StatusDonePR, StatusFailed, StatusCancelled},
	StatusDone:       {StatusDonePR, StatusQueued},
	StatusDonePR:     {StatusQueued},
	StatusFailed:     {StatusQueued},
	StatusCancelled:  {StatusQueued},
}

// CanTransition reports whether from → to is allowed.
func CanTransition(from, to string) bool { return slices.Contains(transitions[from], to) }

// checkTransition is the error for a refused transition.
func checkTransition(from, to, action string) error {
	if CanTransition(from, to) {
		return nil
	}
	return apperr.New(apperr.CodeConflict, "cannot %s a task that is %s", action, from)
}

// Active reports statuses that hold an execution slot.
func Active(status string) bool { return status == StatusRunning || status == StatusNeedsInput }

// Terminal reports statuses where nothing runs any more.
func Terminal(status string) bool {
	return status == StatusDone || status == StatusDonePR || status == StatusFailed || status == StatusCancelled
}

// TaskConfig is a task's run configuration.
type TaskConfig struct {
	Model          string        `json:"model,omitempty" maxLength:"200" doc:"Overrides the profile's model"`
	Effort         string        `json:"effort,omitempty" enum:"low,medium,high"`
	TimeoutMinutes int           `json:"timeout_minutes,omitempty" minimum:"1" maximum:"10080" doc:"Hard timeout; default AGENT_TASK_TIMEOUT_MINUTES"`
	Runner         *RunnerConfig `json:"runner,omitempty"`
	TestDB         bool          `json:"test_db,omitempty" doc:"Ask for an ephemeral database sidecar (when the instance allows it)"`
}

// RunnerConfig routes a task to runners (remote runners come later).
type RunnerConfig struct {
	RequiredLabels []string `json:"required_labels,omitempty" maxItems:"20"`
}

// PullRequest is the record of a proposed change.
type PullRequest struct {
	Provider     string     `json:"provider" enum:"local,github,gitlab,gitea,forgejo"`
	State        string     `json:"state" enum:"proposed,opening,open,closed,merged" doc:"proposed: not opened; opening: being opened on the forge; then as the forge says"`
	Number       *int       `json:"number" nullable:"true" doc:"The forge's number (GitLab: the merge request's iid); null for the local provider"`
	Error        *string    `json:"error" nullable:"true" doc:"Why the forge refused the last attempt to open it"`
	Branch       string     `json:"branch"`
	Base         string     `json:"base"`
	Commit       string     `json:"commit"`
	FilesChanged int        `json:"files_changed"`
	Insertions   int        `json:"insertions"`
	Deletions    int        `json:"deletions"`
	URL          *string    `json:"url" nullable:"true" doc:"Forge URL; null for the local provider"`
	OpenedAt     *time.Time `json:"opened_at" nullable:"true" doc:"When the pull request was opened; null while only proposed"`
	ClosedAt     *time.Time `json:"closed_at,omitempty" nullable:"true" doc:"When the pull request was closed without merging (an undo)"`
}

// Task as the API shows it.
type Task struct {
	ID           string       `json:"id" format:"uuid"`
	WorkspaceID  string       `json:"workspace_id" format:"uuid"`
	ProjectID    string       `json:"project_id" format:"uuid"`
	Title        string       `json:"title"`
	Prompt       string       `json:"prompt"`
	AgentProfile string       `json:"agent_profile"`
	Config       TaskConfig   `json:"config"`
	Notes        string       `json:"notes"`
	Status       string       `json:"status" enum:"queued,running,needs_input,done,done_pr,failed,cancelled"`
	Held         bool         `json:"held" doc:"Queued but not released: launch starts it"`
	Branch       string       `json:"branch"`
	Error        string       `json:"error"`
	PR           *PullRequest `json:"pr" required:"false" doc:"The pull request record; null until the task proposes a change"`
	CreatedBy    *string      `json:"created_by" nullable:"true"`
	CreatedAt    time.Time    `json:"created_at"`
	UpdatedAt    time.Time    `json:"updated_at"`
	StartedAt    *time.Time   `json:"started_at" nullable:"true"`
	FinishedAt   *time.Time   `json:"finished_at" nullable:"true"`
	ParentTaskID *string      `json:"parent_task_id" nullable:"true" format:"uuid" doc:"The task that delegated this one (a subtask)"`
	GroupID      *string      `json:"group_id" nullable:"true" format:"uuid" doc:"The group it was created in"`
	CostUSD      float64      `json:"cost_usd" doc:"What its agent's model calls cost so far, as the endpoint reported"`
}

// Lifecycle event types written by the hub (the worker adds git and
// timeout events; agent output keeps the agent's own types: message,
// tool_call, tool_result, cost, result, log, ...).
const (
	EventStatus = "status" // {from, to, reason}
	EventPR     = "pr"     // the pull request record
	EventError  = "error"  // {message}
	EventRun    = "run"    // {run_id, attempt, backend, image, agent_profile, agent_type}
	EventUndo   = "undo"   // {undo_id, kind, status, result, error, by}
	// EventRouting: where the task's work was queued and why (Routing).
	EventRouting = "routing"
)

func statusPayload(from, to, reason string) map[string]any {
	p := map[string]any{"from": from, "to": to}
	if reason != "" {
		p["reason"] = reason
	}
	return p
}

func shortID(id string) string {
	// UUIDv7 ids share their leading timestamp digits; the tail is random.
	if len(id) >= 8 {
		return id[len(id)-8:]
	}
	return id
}

// BranchFor is the branch a task's agent works on.
func BranchFor(taskID string) string { return fmt.Sprintf("slipway/task-%s", shortID(taskID)) }
