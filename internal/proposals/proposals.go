// Package proposals holds changes an agent (or a workflow's agent node)
// asks for instead of making them: a workflow, an env var. A workspace
// admin approves one — the change is applied as that admin, in the
// approving transaction, with an audit event naming what it made — or
// rejects it with an optional note. What each kind of change is, and how
// it applies, belongs to its own domain (a Kind, registered at wiring);
// this package knows none of them.
//
// A proposal records the state of what it changes (its target's
// fingerprint) when it is made; an approval re-plans the change and
// applies it only while the target is still as it was, so nobody approves
// a change to something that has moved on since.
package proposals

import (
	"context"
	"encoding/json"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
)

// Statuses (spec: pending → approve → applied; pending → reject →
// rejected).
const (
	StatusPending  = "pending"
	StatusApplied  = "applied"
	StatusRejected = "rejected"
)

// Topic is the realtime topic of a workspace's proposals (a hint names
// the proposal that changed).
const Topic = "proposals"

// Bounds.
const (
	MaxPayload         = 256 << 10 // bytes of a proposal's payload
	MaxPendingPerSpace = 1000      // pending proposals of one workspace
	MaxPerTask         = 100       // proposals one task's agents may make, refused ones included
	MaxLimit           = 200       // GET /api/proposals clamps limit to this
	maxTitle           = 200
	maxSummary         = 4000
	maxNote            = 2000
)

// Proposal is a change waiting for (or given) a decision.
type Proposal struct {
	ID             string          `json:"id" format:"uuid"`
	WorkspaceID    string          `json:"workspace_id" format:"uuid"`
	Kind           string          `json:"kind" doc:"What the change is: workflow, env_var, resource, backlog_item or repo_change"`
	Title          string          `json:"title"`
	Summary        string          `json:"summary"`
	Payload        json.RawMessage `json:"payload" doc:"The change, as the kind's own API takes it"`
	Target         string          `json:"target" doc:"What it changes (e.g. workflow:<id>, env_var:global:KEY)"`
	TaskID         *string         `json:"task_id" nullable:"true" format:"uuid" doc:"The task whose agent proposed it"`
	ProposedBy     *string         `json:"proposed_by" nullable:"true" format:"uuid" doc:"Who started that task"`
	Status         string          `json:"status" enum:"pending,applied,rejected"`
	ReviewerID     *string         `json:"reviewer_id" nullable:"true" format:"uuid"`
	ReviewNote     *string         `json:"review_note" nullable:"true"`
	Result         json.RawMessage `json:"result" nullable:"true" doc:"What the approval applied (null until then)"`
	MaterializedID *string         `json:"materialized_id" nullable:"true" doc:"The object the approval made or changed"`
	CreatedAt      time.Time       `json:"created_at"`
	DecidedAt      *time.Time      `json:"decided_at" nullable:"true"`

	fingerprint string
	targetID    string // the existing object it replaces ("" for a new one)
}

// Kind is one kind of change (a domain's, registered at wiring).
type Kind interface {
	// Plan checks a proposed change (its payload, and targetID: an
	// existing object it replaces, "" for a new one) and says what it
	// targets and the target's state now, reading through q (the
	// approving transaction, at approval). An invalid change is an
	// apperr: bad request, or not found for a target that is gone.
	Plan(ctx context.Context, q db.Queryer, ws *actor.Workspace, targetID string, payload json.RawMessage) (*Plan, error)
	// Apply makes the change in tx as u, and answers what it made.
	Apply(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, targetID string, payload json.RawMessage) (*Applied, error)
}

// Plan is what a change targets, and that target's state.
type Plan struct {
	Target      string // e.g. "workflow:<id>", "env_var:global:KEY"
	Fingerprint string // the target's state; "" for nothing there yet
	// Describe says how the target changed, given the fingerprint the
	// proposal recorded (for the refusal of a stale one).
	Describe func(was string) string
}

// Applied is what an approval made.
type Applied struct {
	ID     string // the materialized object's id
	Result any    // what the kind's API would have answered
}

// ProposalBoard is GET /api/proposals/board: the pending proposals and the latest
// decided, with counts by status.
type ProposalBoard struct {
	Pending []Proposal     `json:"pending"`
	Decided []Proposal     `json:"decided"`
	Counts  map[string]int `json:"counts" doc:"Proposals of the active workspace by status"`
}
