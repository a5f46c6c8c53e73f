package dispatch_test

import (
	"context"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/tasks"
	"slipway/internal/workport"
	"slipway/internal/workport/porttest"
)

// TestPortConformance runs the worker port's suite against the hub's
// dispatcher, called in process as the server's own worker calls it.
func TestPortConformance(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		porttest.Run(t, func(t *testing.T) porttest.Hub {
			s := fixture.NewStack(t, fixture.StackConfig{Engine: e, Backend: "process", NoWorker: true, Lease: 3 * time.Second})
			p, _ := s.Project(false, nil)
			return &localHub{s: s, project: p.ID, user: fixture.Member(t, s.DB, s.WS), worker: workport.HubPrefix + "porttest-" + ids.RandomHex(4)}
		})
	})
}

type localHub struct {
	s       *fixture.Stack
	project string
	user    *actor.User
	worker  string
}

func (h *localHub) Port() workport.Port { return h.s.Dispatcher }

// Restart: a new process of the hub's worker talks to the dispatcher of
// the same database (here the same one; it keeps nothing in memory that
// Held needs).
func (h *localHub) Restart(t *testing.T) workport.Port { return h.s.Dispatcher }
func (h *localHub) Worker() string                     { return h.worker }
func (h *localHub) Lease() time.Duration               { return h.s.Cfg.Lease }

func (h *localHub) Queue(ctx context.Context, t *testing.T) string {
	t.Helper()
	task, err := h.s.Tasks.Create(ctx, h.s.WS, nil, tasks.TaskCreate{ProjectID: h.project, Prompt: "echo from the port suite"})
	if err != nil {
		t.Fatal(err)
	}
	return task.ID
}

func (h *localHub) Message(t *testing.T, taskID, text string) {
	t.Helper()
	if _, err := h.s.Conversations.Send(context.Background(), h.s.WS, h.user, taskID, text); err != nil {
		t.Fatal(err)
	}
}

func (h *localHub) Cancel(t *testing.T, taskID string) {
	t.Helper()
	if _, err := h.s.Tasks.Cancel(context.Background(), h.s.WS, taskID, nil); err != nil {
		t.Fatal(err)
	}
}

func (h *localHub) Log(t *testing.T, taskID string) string {
	return fixture.DumpEvents(h.s.Events(taskID))
}

func (h *localHub) Status(t *testing.T, taskID string) (string, string) {
	t.Helper()
	got, err := h.s.Tasks.Get(context.Background(), h.s.WS, taskID)
	if err != nil {
		t.Fatal(err)
	}
	return got.Status, got.Error
}
