package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/approvals"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/tasks"
)

var approvalFields = []string{"id", "workspace_id", "task_id", "run_id", "tool", "arguments", "reason", "status", "decided_by",
	"created_at", "expires_at", "decided_at"}

// inboxLines are the lines waiting for the job's agent.
func inboxLines(t *testing.T, f *fixture.API, job string) []string {
	t.Helper()
	rows, err := f.App.DB.R.Query(`SELECT line FROM agent_inbox WHERE job_id = $1 ORDER BY seq`, job)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func list(t *testing.T, c *apitest.Client, path string) []approvals.ToolApproval {
	t.Helper()
	r := c.Do("GET", path, nil)
	fixture.Want(t, r, http.StatusOK)
	var out []approvals.ToolApproval
	r.JSON(t, &out)
	return out
}

func count(t *testing.T, c *apitest.Client) int {
	t.Helper()
	r := c.Do("GET", "/api/tool-approvals/count", nil)
	fixture.Want(t, r, http.StatusOK)
	var n int
	if err := json.Unmarshal(r.Body, &n); err != nil {
		t.Fatalf("count is not a bare number: %s", r.Body)
	}
	return n
}

func TestToolApprovalsAPI(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		w := f.Working(t, owner, "Steered")
		first := f.Ask(t, w, "call_1", "rm -rf build")
		time.Sleep(5 * time.Millisecond) // distinct creation times for the order
		second := f.Ask(t, w, "call_2", "make release")
		// The outsider's own workspace has one too: never in the owner's lists.
		ow := f.Working(t, outsider, "Elsewhere")
		foreign := f.Ask(t, ow, "call_1", "echo theirs")

		if n := count(t, owner); n != 2 {
			t.Fatalf("count = %d, want 2", n)
		}
		pending := list(t, owner, "/api/tool-approvals/pending")
		if len(pending) != 2 || pending[0].ID != second || pending[1].ID != first {
			t.Fatalf("pending, newest first: %+v", pending)
		}
		r := owner.Do("GET", "/api/tool-approvals/pending", nil)
		if keys := fixture.ElementKeys(t, r.Body); fmt.Sprint(keys[0]) != fmt.Sprint(approvalFields) {
			t.Errorf("fields %v, want %v", keys[0], approvalFields)
		}
		if strings.Contains(string(r.Body), foreign) || strings.Contains(string(r.Body), "theirs") {
			t.Fatal("another workspace's approval is listed")
		}

		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "anonymous count", Method: "GET", Path: "/api/tool-approvals/count", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous board", Method: "GET", Path: "/api/tool-approvals/board", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous pending", Method: "GET", Path: "/api/tool-approvals/pending", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous decided", Method: "GET", Path: "/api/tool-approvals/decided", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous decide with a bad body is 401, not 400", Method: "POST", Path: "/api/tool-approvals/" + first + "/decide",
				Body: map[string]any{"verdict": 7}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "bad verdict", Client: owner, Method: "POST", Path: "/api/tool-approvals/" + first + "/decide",
				Body: map[string]any{"verdict": "maybe"}, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"approve or reject"}},
			{Name: "verdict with control characters", Client: owner, Method: "POST", Path: "/api/tool-approvals/" + first + "/decide",
				Body: map[string]any{"verdict": "approve\x00"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "a non-member of the approval's workspace", Client: outsider, Method: "POST", Path: "/api/tool-approvals/" + first + "/decide",
				Body: map[string]any{"verdict": "approve"}, WantStatus: 403, WantCode: "forbidden", WantContains: []string{"not accessible"}},
			{Name: "unknown id", Client: owner, Method: "POST", Path: "/api/tool-approvals/" + ids.New() + "/decide",
				Body: map[string]any{"verdict": "approve"}, WantStatus: 404, WantCode: "not_found"},
			{Name: "malformed id", Client: owner, Method: "POST", Path: "/api/tool-approvals/nope/decide",
				Body: map[string]any{"verdict": "approve"}, WantStatus: 404, WantCode: "not_found"},
			{Name: "limit above the ceiling", Client: owner, Method: "GET", Path: "/api/tool-approvals/pending?limit=1000", WantStatus: 400, WantCode: "bad_request"},
		})
		// Nothing refused changed anything.
		if n := count(t, owner); n != 2 || len(inboxLines(t, f, w.Job)) != 0 {
			t.Fatalf("a refused decide changed something: count %d, inbox %v", n, inboxLines(t, f, w.Job))
		}

		// Approve the first: the agent is told, the task still waits for
		// the second.
		r = owner.Do("POST", "/api/tool-approvals/"+first+"/decide", map[string]any{"verdict": "approve"})
		fixture.Want(t, r, http.StatusOK)
		var decided approvals.ToolApproval
		r.JSON(t, &decided)
		if decided.Status != approvals.StatusApproved || decided.DecidedBy == nil || decided.DecidedAt == nil {
			t.Fatalf("decided %+v", decided)
		}
		if lines := inboxLines(t, f, w.Job); len(lines) != 1 || lines[0] != `{"type":"approval","id":"call_1","verdict":"approved"}` {
			t.Fatalf("inbox %v", lines)
		}
		if got := fixture.GetTask(t, owner, w.Task); got.Status != tasks.StatusNeedsInput {
			t.Fatalf("task %s while an approval is still pending", got.Status)
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "deciding again", Client: owner, Method: "POST", Path: "/api/tool-approvals/" + first + "/decide",
				Body: map[string]any{"verdict": "reject"}, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"already decided (approved)"}},
		})
		// Reject the second: nothing pending, the task runs on.
		fixture.Want(t, owner.Do("POST", "/api/tool-approvals/"+second+"/decide", map[string]any{"verdict": "reject"}), http.StatusOK)
		if got := fixture.GetTask(t, owner, w.Task); got.Status != tasks.StatusRunning {
			t.Fatalf("task %s after the last decision, want running", got.Status)
		}
		if lines := inboxLines(t, f, w.Job); len(lines) != 2 || !strings.Contains(lines[1], `"verdict":"rejected"`) {
			t.Fatalf("inbox %v", lines)
		}
		decidedList := list(t, owner, "/api/tool-approvals/decided")
		if len(decidedList) != 2 || decidedList[0].ID != second || decidedList[1].ID != first {
			t.Fatalf("decided, newest first: %+v", decidedList)
		}
		if n := count(t, owner); n != 0 {
			t.Fatalf("count %d after deciding both", n)
		}
		evs := fixture.Events(t, owner, w.Task, "")
		var kinds []string
		for _, e := range evs {
			if e.EventType == tasks.EventApproval {
				kinds = append(kinds, fixture.Payload(t, e)["status"].(string))
			}
		}
		if fmt.Sprint(kinds) != "[approved rejected]" {
			t.Errorf("approval events %v", kinds)
		}

		// The board: counts by status, the outsider's own.
		r = owner.Do("GET", "/api/tool-approvals/board", nil)
		fixture.Want(t, r, http.StatusOK)
		var board approvals.ToolApprovalBoard
		r.JSON(t, &board)
		if len(board.Pending) != 0 || len(board.Decided) != 2 || board.Counts["approved"] != 1 || board.Counts["rejected"] != 1 || board.Counts["pending"] != 0 {
			t.Fatalf("board %+v", board)
		}
		if n := count(t, outsider); n != 1 {
			t.Fatalf("outsider count %d", n)
		}
	})
}

// A task's pending approvals are counted, and read back after a decision,
// in the task's workspace only: named with another workspace, the task has
// none.
func TestToolApprovalsOfATaskStayInItsWorkspace(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		ctx := context.Background()
		w := f.Working(t, f.Owner, "Steered")
		f.Ask(t, w, "call_1", "rm -rf build")
		ow := f.Working(t, f.Outsider, "Elsewhere")
		svc := f.App.Server.Services.Approvals
		if n, err := svc.PendingOfTask(ctx, f.App.DB.R, w.WS, w.Task); err != nil || n != 1 {
			t.Fatalf("pending in the task's workspace: %d, %v", n, err)
		}
		if n, err := svc.PendingOfTask(ctx, f.App.DB.R, ow.WS, w.Task); err != nil || n != 0 {
			t.Fatalf("pending named with another workspace: %d, %v (want 0)", n, err)
		}
	})
}

// A pending approval whose time is up is timed out by the sweep (the agent
// is told); one whose run ends is superseded.
func TestToolApprovalsTimeOutAndSupersede(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		w := f.Working(t, owner, "Steered")
		late := f.Ask(t, w, "call_late", "sleep 1")
		keep := f.Ask(t, w, "call_keep", "true")
		f.Exec(t, `UPDATE tool_approvals SET expires_at = $2 WHERE id = $1`, late, time.Now().UTC().Add(-time.Second))
		n, err := f.App.Server.Services.Approvals.Expire(context.Background())
		if err != nil || n != 1 {
			t.Fatalf("expired %d, %v", n, err)
		}
		if lines := inboxLines(t, f, w.Job); len(lines) != 1 || !strings.Contains(lines[0], `"verdict":"timed_out"`) {
			t.Fatalf("inbox %v", lines)
		}
		if n, _ := f.App.Server.Services.Approvals.Expire(context.Background()); n != 0 {
			t.Fatalf("a second sweep timed out %d again", n)
		}
		// The cancel ends the task's run: what it still asked is superseded.
		fixture.Want(t, owner.Do("POST", "/api/tasks/"+w.Task+"/cancel", nil), http.StatusOK)
		byID := map[string]string{}
		for _, a := range list(t, owner, "/api/tool-approvals/decided") {
			byID[a.ID] = a.Status
		}
		if byID[late] != approvals.StatusTimedOut || byID[keep] != approvals.StatusSuperseded {
			t.Fatalf("statuses %v", byID)
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "deciding a superseded approval", Client: owner, Method: "POST", Path: "/api/tool-approvals/" + keep + "/decide",
				Body: map[string]any{"verdict": "approve"}, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"superseded"}},
		})
	})
}

// Twenty members decide one approval at once: exactly one decision wins,
// the agent hears exactly one verdict and the task records one.
func TestToolApprovalDecideRace(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		w := f.Working(t, owner, "Raced")
		id := f.Ask(t, w, "call_1", "deploy")
		i := 0
		var mu sync.Mutex
		won := apitest.Race(t, 20, http.StatusOK, http.StatusBadRequest, func() int {
			mu.Lock()
			verdict := []string{"approve", "reject"}[i%2]
			i++
			mu.Unlock()
			return owner.Do("POST", "/api/tool-approvals/"+id+"/decide", map[string]any{"verdict": verdict}).Status
		})
		if won != 1 {
			t.Fatalf("%d decisions won, want 1", won)
		}
		if lines := inboxLines(t, f, w.Job); len(lines) != 1 {
			t.Fatalf("the agent was told %d verdicts: %v", len(lines), lines)
		}
		n := 0
		for _, e := range fixture.Events(t, owner, w.Task, "") {
			if e.EventType == tasks.EventApproval {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d approval events, want 1", n)
		}
	})
}
