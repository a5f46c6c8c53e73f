// Package protocol is the stdio protocol between the hub (or a runner) and
// an agent process in its container: newline-delimited JSON, one object per
// line, each with a "type". It works the same locally and on a runner, with
// no network path from agent to hub. docs/agent-protocol.md describes it.
package protocol

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Agent types.
const (
	AgentShell   = "shell"
	AgentLLM     = "llm"
	AgentCommand = "command"
)

// DefaultBaseURL is the OpenAI API: the built-in llm profile's endpoint,
// and the provider LLM_PROVIDER_API_KEY goes to unless
// LLM_PROVIDER_BASE_URL says another.
const DefaultBaseURL = "https://api.openai.com/v1"

// Message types the hub sends to the agent (stdin).
const (
	InStart     = "start"     // first line: what to do
	InApproval  = "approval"  // verdict on an approval_request
	InMessage   = "message"   // a human intervenes
	InInterrupt = "interrupt" // stop what you are doing, finish with a result
)

// Message types the agent sends to the hub (stdout). Any other line, JSON
// or not, becomes a "log" event.
const (
	OutMessage         = "message"
	OutToolCall        = "tool_call"
	OutToolResult      = "tool_result"
	OutApprovalRequest = "approval_request"
	OutCost            = "cost"
	OutSubtask         = "subtask"
	OutProposal        = "proposal" // a change the agent asks a person to make
	OutWaiting         = "waiting"  // the agent stopped its step and waits for a human message
	OutSeen            = "seen"     // the model has read the human messages up to an inbox line
	OutResult          = "result"
	OutLog             = "log" // assigned by the hub to unstructured output
)

// Start is the first line on the agent's stdin.
type Start struct {
	Type            string  `json:"type"` // "start"
	AgentType       string  `json:"agent_type"`
	Prompt          string  `json:"prompt"`
	Instructions    string  `json:"instructions,omitempty"`
	Model           string  `json:"model,omitempty"`
	Effort          string  `json:"effort,omitempty"`
	BaseURL         string  `json:"base_url,omitempty"`
	APIKey          string  `json:"api_key,omitempty"`
	CommandTemplate string  `json:"command_template,omitempty"`
	WorkDir         string  `json:"workdir"`
	MaxIterations   int     `json:"max_iterations,omitempty"`
	MaxCostUSD      float64 `json:"max_cost_usd,omitempty"`
	MaxTokensTotal  int     `json:"max_tokens_total,omitempty"`
	// AskTools names the tools the agent must ask a human to approve
	// (approval_request) before each call: the workspace's autonomy policy.
	AskTools []string `json:"ask_tools,omitempty"`
	// Redact are values the agent keeps from the model (redacted from
	// every request): its secret env vars, which it has in its
	// environment anyway.
	Redact []string `json:"redact,omitempty"`
	// EnvKeys name the run's env vars (the workspace's, set in the
	// agent's environment): they reach scripts and tools even when their
	// names look like credentials.
	EnvKeys []string `json:"env_keys,omitempty"`
	Secrets []string `json:"-"` // never sent; the hub redacts these
}

// Event is one line from the agent: its type plus the whole object as
// payload (the payload keeps every field the agent sent).
type Event struct {
	Type    string
	Payload json.RawMessage
}

// Result is the payload of the final "result" line.
type Result struct {
	Type    string `json:"type"`   // "result"
	Status  string `json:"status"` // "success" or "failure"
	Summary string `json:"summary,omitempty"`
	Error   string `json:"error,omitempty"`
	// ExitCode is the code the agent exits with: a shell or command agent's
	// script's own code when the script failed.
	ExitCode *int `json:"exit_code,omitempty"`
}

// Message roles.
const (
	RoleAssistant = "assistant" // out: the model's text
	RoleStderr    = "stderr"    // out: one line a child process wrote to its stderr
	RoleUser      = "user"      // in: a human's intervention (the role may be omitted)
)

// Message is a "message" line. Out: the model's text (role assistant) or a
// child process's stderr line (role stderr). In: a human intervention.
type Message struct {
	Type string `json:"type"` // "message"
	Role string `json:"role,omitempty"`
	Text string `json:"text"`
	// Seq numbers a human message on the agent's stdin (its inbox line);
	// the agent says it in a "seen" line once the model has read it.
	Seq int64 `json:"seq,omitempty"`
}

// Seen is a "seen" line: the model has read every human message up to the
// inbox line Seq (it was in a model call that answered). Only then is a
// message delivered.
type Seen struct {
	Type string `json:"type"` // "seen"
	Seq  int64  `json:"seq"`
}

// ToolCall is a "tool_call" line: the model asked to run a tool. Arguments
// is the JSON object the model sent.
type ToolCall struct {
	Type      string          `json:"type"` // "tool_call"
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult is a "tool_result" line: what the tool call with the same ID
// returned. Output is cut to a bound (Truncated says so).
type ToolResult struct {
	Type      string `json:"type"` // "tool_result"
	ID        string `json:"id"`
	Name      string `json:"name"`
	OK        bool   `json:"ok"`
	Output    string `json:"output"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Cost is a "cost" line: the usage one model completion reported. CostUSD is
// set only when the endpoint reports a price.
type Cost struct {
	Type             string  `json:"type"` // "cost"
	Model            string  `json:"model"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TotalTokens      int     `json:"total_tokens"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

// Interrupt is the "interrupt" line: stop the current step. The llm agent
// then waits for a message (and says so with a "waiting" line); an agent
// with one step (shell, command) ends with a failure result.
type Interrupt struct {
	Type string `json:"type"` // "interrupt"
}

// ApprovalRequest is an "approval_request" line: the agent asks a human
// whether it may make a tool call, and waits for the approval line with
// the same ID.
type ApprovalRequest struct {
	Type      string          `json:"type"` // "approval_request"
	ID        string          `json:"id"`   // the tool call's id
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Reason    string          `json:"reason,omitempty"`
}

// Verdicts of an approval line.
const (
	VerdictApproved   = "approved"
	VerdictRejected   = "rejected"
	VerdictTimedOut   = "timed_out"
	VerdictSuperseded = "superseded"
)

// Approval is the "approval" line: the decision on an approval_request.
// Only VerdictApproved lets the call run.
type Approval struct {
	Type    string `json:"type"` // "approval"
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
}

// Subtask is a "subtask" line: the agent delegates work to a subtask of its
// task, run by a named agent profile (default: its own). The hub tells it
// in a message when the subtask ends.
type Subtask struct {
	Type         string `json:"type"` // "subtask"
	Prompt       string `json:"prompt"`
	AgentProfile string `json:"agent_profile,omitempty"`
	Title        string `json:"title,omitempty"`
}

// Proposal is a "proposal" line: instead of making a change (a workflow,
// an env var), the agent proposes it; a workspace admin approves or
// rejects it. ID names it within the run (a repeated line is one
// proposal); Kind says what Payload is (the body the change's own API
// takes); TargetID names an existing object it replaces.
type Proposal struct {
	Type     string          `json:"type"` // "proposal"
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Title    string          `json:"title"`
	Summary  string          `json:"summary,omitempty"`
	TargetID string          `json:"target_id,omitempty"`
	Payload  json.RawMessage `json:"payload"`
}

// Waiting is a "waiting" line: the agent stopped (interrupted) and waits
// for a human message before it goes on.
type Waiting struct {
	Type   string `json:"type"` // "waiting"
	Reason string `json:"reason"`
}

// Result statuses.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

// MaxLine bounds one protocol line; longer output is cut into log events.
const MaxLine = 1 << 20

// ParseLine turns one output line into an event: a JSON object with a known
// out type keeps its type; anything else is a log line.
func ParseLine(line []byte) Event {
	var head struct {
		Type string `json:"type"`
	}
	if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &head) == nil && knownOut[head.Type] {
		return Event{Type: head.Type, Payload: append(json.RawMessage(nil), line...)}
	}
	b, _ := json.Marshal(map[string]string{"line": string(line)}) // strings only: cannot fail (invalid UTF-8 becomes U+FFFD)
	return Event{Type: OutLog, Payload: b}
}

// OutputTruncated is the event that says a run's output reached its
// limit (the worker's, or the hub's for a runner that did not keep it).
const OutputTruncated = "output_truncated"

// IsOutput reports whether events of a type are output an agent or script
// printed, which counts toward a run's output limits: log lines, messages,
// tool calls, tool results and proposals (which an agent may print as
// often and as large as it likes). Results, approval requests, costs,
// subtasks and the worker's own events always pass.
func IsOutput(eventType string) bool {
	switch eventType {
	case OutLog, OutMessage, OutToolCall, OutToolResult, OutProposal:
		return true
	}
	return false
}

var knownOut = map[string]bool{
	OutMessage: true, OutToolCall: true, OutToolResult: true, OutApprovalRequest: true,
	OutCost: true, OutSubtask: true, OutWaiting: true, OutSeen: true, OutResult: true, OutProposal: true,
}

// Writer writes protocol lines; safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter wraps w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Send writes v as one JSON line.
func (w *Writer) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.w.Write(append(b, '\n'))
	return err
}

// Lines reads newline-delimited lines up to MaxLine bytes each; a longer
// line is delivered in MaxLine pieces.
func Lines(r io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 || (err == nil && !isPrefix) {
			buf = append(buf, chunk...)
			if (!isPrefix || len(buf) >= MaxLine) && len(buf) > 0 {
				if ferr := fn(buf); ferr != nil {
					return ferr
				}
				buf = buf[:0]
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(buf) > 0 {
					return fn(buf)
				}
				return nil
			}
			return fmt.Errorf("protocol: reading: %w", err)
		}
	}
}
