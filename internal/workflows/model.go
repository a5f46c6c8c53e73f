// Package workflows holds workflows (DAGs of typed nodes bound to a project),
// their validation, YAML form and runs, and the durable engine that runs
// them (DESIGN §6): node runs are rows, and every transition is one
// transaction that records a node's outcome and readies its successors.
package workflows

import (
	"encoding/json"
	"time"
)

// Workflow as the API shows it (spec: Workflow, no extra properties).
type Workflow struct {
	ID                string    `json:"id" format:"uuid"`
	ProjectID         string    `json:"project_id" format:"uuid"`
	Name              string    `json:"name"`
	CreatedAt         time.Time `json:"created_at"`
	MaxConcurrentRuns *int64    `json:"max_concurrent_runs" required:"false" nullable:"true" doc:"Per-workflow cap on runs in flight; null means unlimited"`
	Nodes             []Node    `json:"nodes"`
	Edges             []Edge    `json:"edges"`
	Steps             []Step    `json:"steps" doc:"The agent nodes in the older step shape"`

	workspaceID string
}

// Node is one typed node of the graph.
type Node struct {
	ID            string         `json:"id" format:"uuid"`
	Key           string         `json:"key" doc:"Referenced by edges, parent_node_key and expressions (nodes.<key>.output)"`
	Kind          string         `json:"kind" enum:"agent,gate,human,end,code,db_query,db_execute,http_request,transform,notify_telegram,notify_email,notify_webhook,notify_discord,loop,wait_event,llm_classify,imap_ack,app,connector"`
	Ordinal       int64          `json:"ordinal"`
	Config        map[string]any `json:"config"`
	Position      Position       `json:"position"`
	ParentNodeKey *string        `json:"parent_node_key" required:"false" nullable:"true" doc:"The loop frame this node lives in"`
}

// Position is a node's place on the canvas.
type Position struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Edge connects an output handle of one node to another node.
type Edge struct {
	ID           string `json:"id" format:"uuid"`
	Source       string `json:"source"`
	SourceHandle string `json:"source_handle"`
	Target       string `json:"target"`
}

// Step is an agent node in the older step shape.
type Step struct {
	ID             string   `json:"id" format:"uuid"`
	StepKey        string   `json:"step_key"`
	Kind           string   `json:"kind" enum:"agent,gate,human,end,code,db_query,db_execute,http_request,transform,notify_telegram,notify_email,notify_webhook,notify_discord,loop,wait_event,llm_classify,imap_ack,app,connector"`
	AgentType      string   `json:"agent_type"`
	PromptTemplate string   `json:"prompt_template"`
	OnFailure      string   `json:"on_failure"`
	Ordinal        int64    `json:"ordinal"`
	DependsOn      []string `json:"depends_on"`
}

// Input is the body of a create or a full replace. Nodes and edges are the
// graph; steps (the older shape) are accepted instead of nodes and become
// agent nodes chained by their depends_on.
type Input struct {
	ProjectID         string      `json:"project_id,omitempty" format:"uuid" doc:"Required on create; a replace keeps the project"`
	Name              string      `json:"name,omitempty" maxLength:"200" doc:"Required on create; a replace without it keeps the name"`
	MaxConcurrentRuns *int64      `json:"max_concurrent_runs,omitempty" minimum:"1" maximum:"9007199254740991" nullable:"true"`
	Nodes             []NodeInput `json:"nodes,omitempty" maxItems:"500"`
	Edges             []EdgeInput `json:"edges,omitempty" maxItems:"2000"`
	Steps             []StepInput `json:"steps,omitempty" maxItems:"500"`
}

// NodeInput is a node as a client sends it; ids are kept when given and
// otherwise kept from the node of the same key, or minted.
type NodeInput struct {
	ID            string         `json:"id,omitempty" format:"uuid"`
	Key           string         `json:"key" maxLength:"64"`
	Kind          string         `json:"kind" maxLength:"32"`
	Ordinal       *int64         `json:"ordinal,omitempty" minimum:"-9007199254740991" maximum:"9007199254740991" doc:"Default: the node's index"`
	Config        map[string]any `json:"config,omitempty"`
	Position      *Position      `json:"position,omitempty"`
	ParentNodeKey *string        `json:"parent_node_key,omitempty" nullable:"true" maxLength:"64"`
}

// EdgeInput is an edge as a client sends it.
type EdgeInput struct {
	ID           string `json:"id,omitempty" format:"uuid"`
	Source       string `json:"source" maxLength:"64"`
	SourceHandle string `json:"source_handle,omitempty" maxLength:"64" doc:"Default: the source kind's default handle (out)"`
	Target       string `json:"target" maxLength:"64"`
}

// StepInput is an agent step in the older shape.
type StepInput struct {
	ID             string   `json:"id,omitempty" format:"uuid"`
	StepKey        string   `json:"step_key" maxLength:"64"`
	Kind           string   `json:"kind,omitempty" enum:"agent" doc:"Only agent steps exist in this shape"`
	AgentType      string   `json:"agent_type,omitempty" maxLength:"32"`
	PromptTemplate string   `json:"prompt_template" maxLength:"65536"`
	OnFailure      string   `json:"on_failure,omitempty" enum:"fail,continue"`
	Ordinal        *int64   `json:"ordinal,omitempty" minimum:"-9007199254740991" maximum:"9007199254740991"`
	DependsOn      []string `json:"depends_on,omitempty" maxItems:"500"`
}

// Run statuses of a workflow run. A run waits in queued while a cap holds
// it back; running covers nodes that wait (on a person, an event, an
// agent).
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// Node run statuses.
const (
	NodeReady     = "ready"     // inputs settled; the engine will run it
	NodeRunning   = "running"   // the engine runs it now
	NodeWaiting   = "waiting"   // parked until a person, an event, a task or its frames resume it
	NodeSucceeded = "succeeded" // done; handle names the branch it fired
	NodeFailed    = "failed"    // failed; its error branch, if wired, fired
	NodeSkipped   = "skipped"   // no live input reached it
	NodeCancelled = "cancelled" // the run ended before it did
)

// RunView is a workflow run as the API shows it.
type RunView struct {
	ID          string          `json:"id" format:"uuid"`
	RunID       string          `json:"run_id" format:"uuid" doc:"Same as id"`
	WorkflowID  string          `json:"workflow_id" format:"uuid"`
	ProjectID   string          `json:"project_id" format:"uuid"`
	Status      string          `json:"status" enum:"queued,running,succeeded,failed,cancelled"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output" nullable:"true"`
	Error       string          `json:"error"`
	CreatedAt   time.Time       `json:"created_at"`
	StartedAt   *time.Time      `json:"started_at" nullable:"true"`
	FinishedAt  *time.Time      `json:"finished_at" nullable:"true"`
	Nodes       []NodeRunView   `json:"nodes" doc:"Per-node state, in graph order; loop bodies once per iteration (frame)"`
	WaitingOn   []string        `json:"waiting_on" doc:"Keys of the nodes waiting for a person or an event"`
	CreatedBy   *string         `json:"created_by" nullable:"true" format:"uuid"`
	WorkspaceID string          `json:"-"`
}

// NodeRunView is one node's state in a run.
type NodeRunView struct {
	Key        string          `json:"key"`
	Kind       string          `json:"kind"`
	Frame      string          `json:"frame" doc:"Empty at the top level; loop[i] (nested: outer[i]/inner[j]) inside a loop body"`
	Status     string          `json:"status" enum:"pending,ready,running,waiting,succeeded,failed,skipped,cancelled"`
	Handle     string          `json:"handle" doc:"The output handle the node fired"`
	Output     json.RawMessage `json:"output" nullable:"true"`
	Error      string          `json:"error"`
	Attempt    int             `json:"attempt"`
	TaskID     *string         `json:"task_id" nullable:"true" format:"uuid"`
	StartedAt  *time.Time      `json:"started_at" nullable:"true"`
	FinishedAt *time.Time      `json:"finished_at" nullable:"true"`
}
