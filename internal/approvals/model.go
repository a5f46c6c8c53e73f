// Package approvals holds tool approvals: an agent asks a human before a
// tool call its workspace's autonomy policy does not let it make alone; the
// call waits until a member decides (compare-and-set: one decision wins),
// the request times out, or the run it belongs to ends (superseded). The
// verdict reaches the agent through its inbox.
package approvals

import (
	"encoding/json"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/platform/apperr"
)

// Statuses (spec: pending; decided: approved, rejected, timed_out,
// superseded).
const (
	StatusPending    = "pending"
	StatusApproved   = "approved"
	StatusRejected   = "rejected"
	StatusTimedOut   = "timed_out"
	StatusSuperseded = "superseded"
)

// ToolApproval is a tool call waiting for (or given) a human's decision.
type ToolApproval struct {
	ID          string          `json:"id" format:"uuid"`
	WorkspaceID string          `json:"workspace_id" format:"uuid"`
	TaskID      string          `json:"task_id" format:"uuid"`
	RunID       string          `json:"run_id" format:"uuid"`
	Tool        string          `json:"tool" doc:"The tool the agent wants to call"`
	Arguments   json.RawMessage `json:"arguments" doc:"The call's arguments, with known secrets redacted"`
	Reason      string          `json:"reason" doc:"Why the agent asks"`
	Status      string          `json:"status" enum:"pending,approved,rejected,timed_out,superseded"`
	DecidedBy   *string         `json:"decided_by" nullable:"true" format:"uuid"`
	CreatedAt   time.Time       `json:"created_at"`
	ExpiresAt   time.Time       `json:"expires_at" doc:"When a pending approval times out"`
	DecidedAt   *time.Time      `json:"decided_at" nullable:"true"`

	jobID     string
	requestID string
}

// Verdicts a human gives.
const (
	VerdictApprove = "approve"
	VerdictReject  = "reject"
)

// statusOf maps a verdict token to the status it decides.
func statusOf(verdict string) (string, error) {
	switch verdict {
	case VerdictApprove:
		return StatusApproved, nil
	case VerdictReject:
		return StatusRejected, nil
	}
	return "", apperr.BadRequest("verdict must be approve or reject")
}

// agentVerdict is what the agent is told for a decided status.
var agentVerdict = map[string]string{
	StatusApproved:   protocol.VerdictApproved,
	StatusRejected:   protocol.VerdictRejected,
	StatusTimedOut:   protocol.VerdictTimedOut,
	StatusSuperseded: protocol.VerdictSuperseded,
}

// Levels of the autonomy policy (a workspace's level, 0 to 100): at or
// below AskBashAt the built-in llm agent asks before bash; at or below
// AskEditsAt also before it writes or edits a file.
const (
	DefaultLevel = 50
	AskBashAt    = 30
	AskEditsAt   = 10
)

// AskTools is the autonomy policy: the tools an agent of a type must ask
// before calling at a workspace's level. Only the built-in llm agent makes
// tool calls the hub knows of.
func AskTools(agentType string, level int) []string {
	if agentType != protocol.AgentLLM {
		return nil
	}
	var ask []string
	if level <= AskBashAt {
		ask = append(ask, "bash")
	}
	if level <= AskEditsAt {
		ask = append(ask, "write_file", "edit_file")
	}
	return ask
}

// Board is the approvals page: the pending ones and the latest decided.
type ToolApprovalBoard struct {
	Pending []ToolApproval `json:"pending" doc:"Newest first"`
	Decided []ToolApproval `json:"decided" doc:"The latest decided, newest first"`
	Counts  map[string]int `json:"counts" doc:"By status"`
}
