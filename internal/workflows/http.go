package workflows

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

type idInput struct {
	ID string `path:"id" doc:"Workflow id"`
}

type projectQuery struct {
	ProjectID string `query:"project_id" doc:"Only this project's"`
}

type createInput struct{ Body Input }

type nodeTypeInput struct{ Body NodeTypeCreate }

type replaceInput struct {
	ID   string `path:"id"`
	Body Input
}

// WorkflowConcurrency sets or clears a workflow's cap.
type WorkflowConcurrency struct {
	MaxConcurrentRuns *int64 `json:"max_concurrent_runs" required:"true" nullable:"true" minimum:"1" maximum:"9007199254740991" doc:"null means unlimited"`
}

type concurrencyInput struct {
	ID   string `path:"id"`
	Body WorkflowConcurrency
}

type runInput struct {
	ID   string `path:"id"`
	Body *struct {
		Input json.RawMessage `json:"input,omitempty" doc:"Any JSON; the run's input (expressions: input)"`
	}
}

// RunStarted answers a run request.
type RunStarted struct {
	RunID string `json:"run_id" format:"uuid"`
}

type runIDInput struct {
	RunID string `path:"run_id" doc:"Workflow run id"`
}

type decisionInput struct {
	RunID string `path:"run_id"`
	Body  Decision
}

type nodeDecisionInput struct {
	RunID   string `path:"run_id"`
	NodeKey string `path:"node_key" maxLength:"64"`
	Body    Decision
}

type importInput struct {
	ProjectID string `query:"project_id" required:"true" doc:"The project the workflow joins"`
	RawBody   []byte `contentType:"application/yaml" maxLength:"1048576"`
}

type yamlOutput struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// Register mounts the workflow operations. scoped resolves the active
// workspace; the approval operations span all the caller's workspaces.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Workflows"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	mine := httpx.Operations{Tags: []string{"Workflows"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	user := func(ctx context.Context) *actor.User {
		u, _ := actor.UserFrom(ctx)
		return u
	}

	huma.Register(api, ops.Op("get_api_workflow_node_types", http.MethodGet, "/api/workflow-node-types", "The node kinds with their handles and config schemas"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]NodeType], error) {
			return httpx.Reply(s.ListNodeTypes(ctx, ws(ctx)))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_workflow_node_types", http.MethodPost, "/api/workflow-node-types",
		"Add a node type: a saved script and the JSON Schema of its params")),
		func(ctx context.Context, in *nodeTypeInput) (*httpx.Out[*NodeType], error) {
			return httpx.Reply(s.CreateNodeType(ctx, ws(ctx), user(ctx), in.Body))
		})
	huma.Register(api, ops.Op("get_api_workflow_node_types_id", http.MethodGet, "/api/workflow-node-types/{id}", "One of the workspace's node types"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*NodeType], error) {
			return httpx.Reply(s.GetNodeType(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_workflows", http.MethodGet, "/api/workflows", "Workflows of a project (or the workspace), newest first"),
		func(ctx context.Context, in *projectQuery) (*httpx.Out[[]Workflow], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), in.ProjectID))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_workflows", http.MethodPost, "/api/workflows", "Create a workflow (the graph is validated)")),
		func(ctx context.Context, in *createInput) (*httpx.Out[*Workflow], error) {
			return httpx.Reply(s.Create(ctx, ws(ctx), in.Body))
		})
	huma.Register(api, ops.Op("get_api_workflows_all", http.MethodGet, "/api/workflows/all", "Every workflow of the workspace"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]Workflow], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), ""))
		})
	huma.Register(api, ops.Op("get_api_workflows_board", http.MethodGet, "/api/workflows/board", "A page of workflows with a project facet"),
		func(ctx context.Context, in *BoardInput) (*httpx.Out[*board.Board[Workflow]], error) {
			return httpx.Reply(s.Board(ctx, ws(ctx), *in))
		})
	huma.Register(api, ops.Op("get_api_workflows_stats", http.MethodGet, "/api/workflows/stats", "Active runs, workflows, success and failures in 24 h, average duration"),
		func(ctx context.Context, in *projectQuery) (*httpx.Out[*Stats], error) {
			return httpx.Reply(s.Stats(ctx, ws(ctx), in.ProjectID))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_workflows_import", http.MethodPost, "/api/workflows/import", "Create a workflow from its YAML document")),
		func(ctx context.Context, in *importInput) (*httpx.Out[*Workflow], error) {
			return httpx.Reply(s.Import(ctx, ws(ctx), in.ProjectID, in.RawBody))
		})
	huma.Register(api, ops.Op("get_api_workflows_runs_run_id", http.MethodGet, "/api/workflows/runs/{run_id}", "A run with its nodes' states"),
		func(ctx context.Context, in *runIDInput) (*httpx.Out[*RunView], error) {
			return httpx.Reply(s.GetRun(ctx, ws(ctx), in.RunID))
		})
	huma.Register(api, ops.Op("post_api_workflows_runs_run_id_cancel", http.MethodPost, "/api/workflows/runs/{run_id}/cancel", "Cancel a run and what it started (idempotent)"),
		func(ctx context.Context, in *runIDInput) (*httpx.Out[*RunView], error) {
			return httpx.Reply(s.CancelRun(ctx, ws(ctx), user(ctx), in.RunID))
		})
	huma.Register(api, mine.Op("get_api_workflows_pending_approvals", http.MethodGet, "/api/workflows/pending-approvals", "Human gates waiting on the caller, oldest first"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]Approval], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PendingApprovals(ctx, u))
		})
	huma.Register(api, mine.Op("post_api_workflows_pending_approvals_run_id_decision", http.MethodPost, "/api/workflows/pending-approvals/{run_id}/decision", "Approve or reject a run's waiting gate"),
		func(ctx context.Context, in *decisionInput) (*httpx.Out[*RunView], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Decide(ctx, u, in.RunID, "", in.Body))
		})
	huma.Register(api, mine.Op("post_api_workflows_runs_run_id_nodes_node_key_decision", http.MethodPost, "/api/workflows/runs/{run_id}/nodes/{node_key}/decision", "Approve or reject a human node"),
		func(ctx context.Context, in *nodeDecisionInput) (*httpx.Out[*RunView], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Decide(ctx, u, in.RunID, in.NodeKey, in.Body))
		})
	huma.Register(api, ops.Op("get_api_workflows_id", http.MethodGet, "/api/workflows/{id}", "A workflow"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Workflow], error) {
			return httpx.Reply(s.Get(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("put_api_workflows_id", http.MethodPut, "/api/workflows/{id}", "Replace a workflow's graph (and name); runs in flight keep theirs"),
		func(ctx context.Context, in *replaceInput) (*httpx.Out[*Workflow], error) {
			return httpx.Reply(s.Replace(ctx, ws(ctx), in.ID, in.Body))
		})
	huma.Register(api, ops.Op("delete_api_workflows_id", http.MethodDelete, "/api/workflows/{id}", "Delete a workflow with its runs"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			ok, err := s.Delete(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			out := httpx.Deleted()
			out.Body.Deleted = ok
			return out, nil
		})
	huma.Register(api, ops.Op("patch_api_workflows_id_concurrency", http.MethodPatch, "/api/workflows/{id}/concurrency", "Set or clear the workflow's cap on runs in flight"),
		func(ctx context.Context, in *concurrencyInput) (*httpx.Out[*Workflow], error) {
			return httpx.Reply(s.SetConcurrency(ctx, ws(ctx), in.ID, in.Body.MaxConcurrentRuns))
		})
	huma.Register(api, ops.Op("get_api_workflows_id_export", http.MethodGet, "/api/workflows/{id}/export", "The workflow as a YAML document"),
		func(ctx context.Context, in *idInput) (*yamlOutput, error) {
			b, err := s.Export(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			return &yamlOutput{ContentType: "application/yaml", Body: b}, nil
		})
	huma.Register(api, ops.Op("get_api_workflows_id_runs", http.MethodGet, "/api/workflows/{id}/runs", "The workflow's newest runs"),
		func(ctx context.Context, in *recentRunsInput) (*httpx.Out[[]RunSummary], error) {
			return httpx.Reply(s.RecentRuns(ctx, ws(ctx), in.ID, in.Limit))
		})
	testNode := ops.Op("post_api_workflows_id_test_node", http.MethodPost, "/api/workflows/{id}/test-node", "Test one node with sample data")
	testNode.Description = "Runs the node given (saved or not) alone, with sample input, trigger data and other nodes' outputs, " +
		"the way a run would run it: an http_request or notify_webhook node really sends its request. Nothing is stored. " +
		"Kinds that wait in a run (human, wait_event, loop, agent) say what they would wait on and start nothing. " +
		"A code node's test is queued as a job (status queued, with a test_id to poll at GET /api/workflows/{id}/node-tests/{test_id}): " +
		"its script runs sandboxed like a run's, at most 5 minutes, at most 4 tests queued or running per workspace (429 beyond). " +
		"A config the save would refuse is a 400 naming the field. Other kinds take at most one minute."
	huma.Register(api, testNode, func(ctx context.Context, in *nodeTestInput) (*httpx.Out[*NodeTestResult], error) {
		return httpx.Reply(s.TestNode(ctx, ws(ctx), in.ID, in.Body))
	})
	huma.Register(api, ops.Op("get_api_workflows_id_node_tests_test_id", http.MethodGet, "/api/workflows/{id}/node-tests/{test_id}",
		"A code node's test: queued, running, or how it ended"),
		func(ctx context.Context, in *nodeTestIDInput) (*httpx.Out[*NodeTestResult], error) {
			return httpx.Reply(s.NodeTest(ctx, ws(ctx), in.ID, in.TestID))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_workflows_id_runs", http.MethodPost, "/api/workflows/{id}/runs", "Start a run (it waits while a cap holds it back)")),
		func(ctx context.Context, in *runInput) (*httpx.Out[RunStarted], error) {
			var input json.RawMessage
			if in.Body != nil {
				input = in.Body.Input
			}
			id, err := s.StartRun(ctx, ws(ctx), user(ctx), in.ID, input, nil)
			return httpx.Reply(RunStarted{RunID: id}, err)
		})
}

type nodeTestInput struct {
	ID   string `path:"id" doc:"Workflow id"`
	Body NodeTest
}

type nodeTestIDInput struct {
	ID     string `path:"id" doc:"Workflow id"`
	TestID string `path:"test_id" doc:"The test_id its test answered"`
}

type recentRunsInput struct {
	ID    string `path:"id" doc:"Workflow id"`
	Limit int    `query:"limit" minimum:"1" maximum:"100" default:"20"`
}
