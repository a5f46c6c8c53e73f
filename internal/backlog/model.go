// Package backlog is a project's backlog: the open issues of its forge
// repository as cards in columns, which members steer by hand within an
// allowlist of moves and which the dispatcher turns into agents' tasks.
// A card goes inbox → ready → in_progress (its task runs) → review (its
// pull request is open) → done (merged), or to blocked and back. Moving
// it to done by hand needs its gates green: its task succeeded and the
// pull request's checks on the forge passed.
package backlog

import (
	"time"

	"slipway/internal/platform/httpx"
)

// The columns, in board order.
const (
	Inbox      = "inbox"
	Ready      = "ready"
	InProgress = "in_progress"
	Review     = "review"
	Blocked    = "blocked"
	Done       = "done"
)

// States lists the columns in board order, with their labels.
var States = []struct{ State, Label string }{
	{Inbox, "Inbox"}, {Ready, "Ready"}, {InProgress, "In progress"}, {Review, "Review"}, {Blocked, "Blocked"}, {Done, "Done"},
}

// Moves is the manual-steering allowlist: the columns a member may move a
// card to from each column. in_progress belongs to the card's task (cancel
// the task to stop it) and done is final; review → done also needs the
// gates green.
var Moves = map[string][]string{
	Inbox:      {Ready, Blocked},
	Ready:      {Inbox, Blocked},
	Blocked:    {Inbox, Ready},
	Review:     {Ready, Blocked, Done},
	InProgress: {},
	Done:       {},
}

func allowed(from, to string) bool {
	for _, s := range Moves[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Item is a card as the board shows it.
type Item struct {
	ID            string     `json:"id" format:"uuid"`
	ProjectID     string     `json:"project_id" format:"uuid"`
	Source        string     `json:"source" enum:"forge,conversation,email,proposal" doc:"Where the card came from: a forge issue, a customer's message of a conversation trigger, an agent's approved proposal"`
	IssueNumber   *int64     `json:"issue_number" nullable:"true" doc:"The forge issue's number (null for a card that is not an issue)"`
	Title         string     `json:"title"`
	URL           string     `json:"url" doc:"The issue on the forge; \"\" for a card that is not an issue"`
	Labels        []string   `json:"labels"`
	State         string     `json:"state" enum:"inbox,ready,in_progress,review,blocked,done"`
	Priority      int64      `json:"priority" doc:"Lower first within a column"`
	TaskID        *string    `json:"task_id" nullable:"true" doc:"The task working on it (the latest dispatched)"`
	PRNumber      *int64     `json:"pr_number" nullable:"true"`
	PRURL         *string    `json:"pr_url" nullable:"true"`
	BlockedReason *string    `json:"blocked_reason" nullable:"true"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	DoneAt        *time.Time `json:"done_at" nullable:"true"`
}

// Sources of cards.
const (
	SourceForge        = "forge"
	SourceConversation = "conversation"
)

// Column is one column of the board: its first cards and how many it has.
type Column struct {
	State string `json:"state" enum:"inbox,ready,in_progress,review,blocked,done"`
	Label string `json:"label"`
	Total int    `json:"total"`
	Items []Item `json:"items"`
}

// Board is a project's backlog board.
type Board struct {
	ProjectID string              `json:"project_id" format:"uuid"`
	Columns   []Column            `json:"columns"`
	Moves     map[string][]string `json:"moves" doc:"The moves a member may make, by column"`
}

// Status is a project's backlog at a glance (read-only).
type Status struct {
	ProjectID string         `json:"project_id" format:"uuid"`
	Provider  string         `json:"provider"`
	Scannable bool           `json:"scannable" doc:"Whether the project has a forge to scan issues from"`
	Counts    map[string]int `json:"counts" doc:"Cards by column"`
	Total     int            `json:"total"`
}

// Gates are what a card needs to be done: its task succeeded and its
// pull request's checks passed (a forge that runs none counts as passed).
type Gates struct {
	Green  bool   `json:"green"`
	Task   string `json:"task" doc:"The task's status (none: no task)"`
	Checks string `json:"checks" enum:"none,pending,success,failure,unknown" doc:"The pull request's checks on the forge (unknown: no pull request, or the forge did not answer)"`
	Reason string `json:"reason" doc:"Why they are not green"`
}

// Dispatch is one decision the dispatcher made about a card.
type Dispatch struct {
	Decision   string    `json:"decision" enum:"dispatched,held"`
	Detail     string    `json:"detail"`
	TaskID     *string   `json:"task_id" nullable:"true"`
	TaskStatus *string   `json:"task_status" nullable:"true" doc:"The task's status now (null: deleted)"`
	CreatedAt  time.Time `json:"created_at"`
}

// ItemDetail is a card with its issue's body, its dispatched runs
// (newest first), its latest routing decision and its gates.
type ItemDetail struct {
	Item
	Body          string                `json:"body" doc:"The issue's body, cut at a paragraph or line near 4000 characters"`
	BodyTruncated bool                  `json:"body_truncated"`
	Runs          []Dispatch            `json:"runs" doc:"The tasks dispatched for it, newest first"`
	Decision      httpx.Maybe[Dispatch] `json:"decision" doc:"The latest routing decision (null: none yet)"`
	Gates         Gates                 `json:"gates"`
}

// ItemPatch steers a card: a move (within Moves) and/or a priority.
type ItemPatch struct {
	State         *string `json:"state,omitempty" enum:"inbox,ready,in_progress,review,blocked,done"`
	Priority      *int64  `json:"priority,omitempty"`
	BlockedReason *string `json:"blocked_reason,omitempty" maxLength:"500" doc:"Why, for a move to blocked"`
}

// PlanEntry is one card's new priority in a reorder plan.
type PlanEntry struct {
	ItemID   string `json:"item_id" format:"uuid"`
	Priority int64  `json:"priority"`
}

// OrderInput is a reorder plan, applied whole or not at all.
type OrderInput struct {
	Plan []PlanEntry `json:"plan" minItems:"1" maxItems:"1000"`
}

// OrderResult answers a reorder.
type OrderResult struct {
	Updated int `json:"updated"`
}

// ScanChange is one card a scan adds, updates or removes.
type ScanChange struct {
	IssueNumber int64  `json:"issue_number"`
	Title       string `json:"title"`
	ItemID      string `json:"item_id,omitempty"`
}

// ScanResult is what a scan found (dry run: would do).
type ScanResult struct {
	DryRun  bool         `json:"dry_run"`
	Added   []ScanChange `json:"added"`
	Updated []ScanChange `json:"updated"`
	Removed []ScanChange `json:"removed" doc:"Cards whose issue is no longer open, before their work began"`
}
