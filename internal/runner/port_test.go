package runner_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/telemetry"
	"slipway/internal/runner"
	"slipway/internal/runnerapi"
	"slipway/internal/runners"
	"slipway/internal/tasks"
	"slipway/internal/workport"
	"slipway/internal/workport/porttest"
)

// TestPortConformance runs the worker port's suite against the runner's
// HTTP client, through a real server in hub mode whose tasks go only to
// runners (so the server's own worker takes none of them).
func TestPortConformance(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		porttest.Run(t, func(t *testing.T) porttest.Hub { return newRemoteHub(t, e) })
	})
}

// newRemoteHub is a hub whose tasks go only to runners, with one runner
// registered and online whose client the hub's Port is.
func newRemoteHub(t *testing.T, e db.Engine) *remoteHub {
	f := fixture.NewAPI(t, e, "SERVICE_HUB_MODE", "true", "SERVICE_AGENT_EXECUTION", "fleet_only", "SERVICE_WORKER_LEASE_SECS", "5")
	r := f.Owner.Do("POST", "/api/organization/runners", map[string]any{"name": "suite"})
	fixture.Want(t, r, http.StatusCreated)
	var created runners.CreatedRunner
	r.JSON(t, &created)
	f.App.Remember(created.Token)
	h := &remoteHub{f: f, token: created.Token, worker: runnerapi.Owner(created.Runner.ID),
		project: f.Project(t, f.Owner, "port suite")}
	h.client = h.newClient(t)
	// Online: a runner that has not sent a heartbeat is not eligible.
	if _, err := h.client.Heartbeat(context.Background(), runnerapi.Heartbeat{Version: "test", Backend: "process", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	return h
}

type remoteHub struct {
	f       *fixture.API
	token   string
	worker  string
	project string
	client  *runner.Client
}

func (h *remoteHub) newClient(t *testing.T) *runner.Client {
	t.Helper()
	c, err := runner.NewClient(h.f.App.URL, runner.TLSFiles{}, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c.SetToken(h.token)
	return c
}

func (h *remoteHub) Port() workport.Port { return h.client }

// Restart: a new runner process has a new client with the same token.
func (h *remoteHub) Restart(t *testing.T) workport.Port { return h.newClient(t) }
func (h *remoteHub) Worker() string                     { return h.worker }
func (h *remoteHub) Lease() time.Duration               { return 5 * time.Second }

// Queue sends the request with ctx's trace context, as a traced client
// would.
func (h *remoteHub) Queue(ctx context.Context, t *testing.T) string {
	t.Helper()
	var header []string
	if tp := telemetry.Inject(ctx); tp != "" {
		header = []string{"traceparent", tp}
	}
	r := h.f.Owner.Do("POST", "/api/tasks", map[string]any{"project_id": h.project, "prompt": "echo from the port suite", "hold": false}, header...)
	fixture.Want(t, r, http.StatusCreated)
	var task tasks.Task
	r.JSON(t, &task)
	return task.ID
}

func (h *remoteHub) Message(t *testing.T, taskID, text string) {
	fixture.Want(t, h.f.Owner.Do("POST", "/api/tasks/"+taskID+"/intervene", map[string]any{"text": text}), http.StatusCreated)
}

func (h *remoteHub) Cancel(t *testing.T, taskID string) {
	fixture.Want(t, h.f.Owner.Do("POST", "/api/tasks/"+taskID+"/cancel", nil), http.StatusOK)
}

func (h *remoteHub) Log(t *testing.T, taskID string) string {
	return fixture.DumpEvents(fixture.Events(t, h.f.Owner, taskID, ""))
}

func (h *remoteHub) Status(t *testing.T, taskID string) (string, string) {
	got := fixture.GetTask(t, h.f.Owner, taskID)
	return got.Status, got.Error
}
