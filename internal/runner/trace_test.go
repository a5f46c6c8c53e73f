package runner_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"slipway/internal/agenttest"
	"slipway/internal/executor"
	"slipway/internal/executor/process"
	"slipway/internal/executor/sandbox"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/telemetry"
	"slipway/internal/repo"
	"slipway/internal/tasks"
	"slipway/internal/worker"
)

// TestRunnerWorkContinuesTheTrace: a runner's worker runs a task queued
// under a trace inside that trace (its span a child of the hub's enqueue,
// carried by the claim), and its reports reach the hub with the trace
// context, so the hub's spans of them nest under the runner's span. Its
// lease renewals stay out of the trace. (Hub and runner share this test's
// process, so one recorder sees both sides.)
func TestRunnerWorkContinuesTheTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	telemetry.Use(tp)
	t.Cleanup(func() { telemetry.Use(nil); tp.Shutdown(context.Background()) })

	h := newRemoteHub(t, db.SQLite)
	bin := agenttest.Binary(t)
	git, err := repo.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	backend := process.New(t.TempDir(), process.Sandbox{Helper: bin, Layers: sandbox.Detect(sandbox.ModeAuto)})
	w := worker.New(h.client, backend, git, worker.Config{ID: h.worker, Slots: 1, AgentBinary: bin,
		Labels: map[string]string{executor.InstanceLabel: h.worker}, ClaimWait: time.Second, ScratchDir: t.TempDir()},
		slog.New(slog.DiscardHandler))
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()
	t.Cleanup(func() { stop(); wg.Wait() })

	queuing, span := tp.Tracer("test").Start(context.Background(), "a person queues a task")
	task := h.Queue(queuing, t)
	span.End()
	trace := span.SpanContext().TraceID()

	deadline := time.Now().Add(60 * time.Second)
	for {
		var enqueued, worked, finished sdktrace.ReadOnlySpan
		var extends int
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() != trace {
				continue
			}
			switch name := s.Name(); {
			case name == "jobs.enqueue task":
				enqueued = s
			case name == "worker.run agent":
				worked = s
			case strings.HasPrefix(name, "POST /api/runner/v1/jobs/") && strings.HasSuffix(name, "/finish"):
				finished = s
			case strings.HasSuffix(name, "/extend"):
				extends++
			}
		}
		if worked != nil && finished != nil {
			if enqueued == nil || worked.Parent().SpanID() != enqueued.SpanContext().SpanID() {
				t.Fatalf("the runner's span of the work is not the child of the hub's enqueue (%v)", worked.Parent())
			}
			if !hasAttr(worked, "slipway.worker", h.worker) || !hasAttr(worked, "slipway.task.id", task) {
				t.Errorf("the runner's span lacks the worker or the task: %v", worked.Attributes())
			}
			if finished.Parent().SpanID() != worked.SpanContext().SpanID() {
				t.Fatalf("the hub's span of the runner's finish is not under the runner's span of the work")
			}
			if extends != 0 {
				t.Errorf("%d lease renewals are in the work's trace", extends)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span of the runner's work and its finish in the trace; task %+v", fixture.GetTask(t, h.f.Owner, task))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := fixture.GetTask(t, h.f.Owner, task); got.Status == tasks.StatusFailed {
		t.Fatalf("the task failed: %s", got.Error)
	}
}

func hasAttr(s sdktrace.ReadOnlySpan, key, value string) bool {
	for _, a := range s.Attributes() {
		if string(a.Key) == key && a.Value.Emit() == value {
			return true
		}
	}
	return false
}
