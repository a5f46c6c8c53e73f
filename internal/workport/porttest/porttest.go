// Package porttest is the conformance suite of the worker port: every
// implementation of workport.Port (the hub's dispatcher, called in
// process; the runner's HTTP client, through a real server) must pass it,
// so a worker cannot tell which one it talks to. Each implementation's
// test brings a Hub: a real hub with work to hand out, driven as a person
// and a worker would drive it.
package porttest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"slipway/internal/platform/telemetry"
	"slipway/internal/workport"
)

// Hub is a hub with work to hand out, as the suite drives it.
type Hub interface {
	// Port is the implementation under test as the worker named Worker
	// sees it.
	Port() workport.Port
	// Restart is the port a new process of the same worker uses (after a
	// crash of the old one).
	Restart(t *testing.T) workport.Port
	// Worker is the worker id claims are made as.
	Worker() string
	// Lease is how long a lease lasts without an extension.
	Lease() time.Duration
	// Queue queues a task this worker may claim and returns its id. It is
	// queued as a request made under ctx would queue it: in the trace of
	// ctx's span, when there is one.
	Queue(ctx context.Context, t *testing.T) string
	// Message sends a person's message to the task's agent.
	Message(t *testing.T, taskID, text string)
	// Cancel cancels the task.
	Cancel(t *testing.T, taskID string)
	// Log is the task's stored events, one per line.
	Log(t *testing.T, taskID string) string
	// Status is the task's status and error.
	Status(t *testing.T, taskID string) (string, string)
}

// Run runs the suite; newHub makes a fresh hub for each case.
func Run(t *testing.T, newHub func(t *testing.T) Hub) {
	cases := []struct {
		name string
		run  func(t *testing.T, h Hub)
	}{
		{"claim waits for work and hands it out once", claimAndLongPoll},
		{"extend carries the agent's inbox lines", extendWithInbox},
		{"a repeated batch is stored once", idempotentAppend},
		{"finish ends the work once", finishOnce},
		{"a rescued lease is lost", leaseLostAfterRescue},
		{"the control stream tells of messages and cancels", controlStream},
		{"held work survives a restart of its worker", heldAcrossRestart},
		{"work carries the trace that queued it", traceCarried},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newHub(t)) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func request(h Hub, wait time.Duration) workport.ClaimRequest {
	return workport.ClaimRequest{Worker: h.Worker(), Backend: "process", Max: 4, Wait: wait}
}

// claim queues a task and claims it.
func claim(t *testing.T, h Hub) (string, workport.Assignment) {
	t.Helper()
	task := h.Queue(ctx(t), t)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		as, err := h.Port().Claim(ctx(t), request(h, 5*time.Second))
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		for _, a := range as {
			if a.Agent != nil && a.Agent.TaskID == task {
				return task, a
			}
			t.Fatalf("claimed work that was not queued: %+v", a)
		}
	}
	t.Fatalf("task %s was never handed out", task)
	return "", workport.Assignment{}
}

func claimAndLongPoll(t *testing.T, h Hub) {
	if as, err := h.Port().Claim(ctx(t), request(h, 0)); err != nil || len(as) != 0 {
		t.Fatalf("claim with nothing queued: %+v, %v", as, err)
	}
	// A claim waits: work queued while it waits is what it answers with
	// (its bound, far away, would end it empty).
	type answer struct {
		as  []workport.Assignment
		err error
	}
	got := make(chan answer, 1)
	go func() {
		as, err := h.Port().Claim(ctx(t), request(h, 25*time.Second))
		got <- answer{as, err}
	}()
	time.Sleep(300 * time.Millisecond)
	task := h.Queue(ctx(t), t)
	a := <-got
	if a.err != nil {
		t.Fatalf("long poll: %v", a.err)
	}
	if len(a.as) != 1 || a.as[0].Agent == nil || a.as[0].Agent.TaskID != task {
		t.Fatalf("long poll handed out %+v, want the task %s", a.as, task)
	}
	l := a.as[0].Lease
	if l.JobID == "" || l.RunID == "" || l.WorkspaceID == "" || l.Attempt < 1 || l.Worker != h.Worker() {
		t.Fatalf("lease %+v (worker %s)", l, h.Worker())
	}
	if a.as[0].Work != workport.WorkAgent || a.as[0].TTL != h.Lease() {
		t.Fatalf("assignment %+v, want agent work leased for %s", a.as[0], h.Lease())
	}
	// Handed out once: nothing is left to claim.
	if as, err := h.Port().Claim(ctx(t), request(h, 0)); err != nil || len(as) != 0 {
		t.Fatalf("a second claim got %+v, %v", as, err)
	}
}

func extendWithInbox(t *testing.T, h Hub) {
	task, a := claim(t, h)
	d, err := h.Port().Extend(ctx(t), a.Lease, 0)
	if err != nil || d.Cancel || len(d.Inbox) != 0 {
		t.Fatalf("extend before any message: %+v, %v", d, err)
	}
	h.Message(t, task, "Use the big GPU.")
	d, err = h.Port().Extend(ctx(t), a.Lease, 0)
	if err != nil || len(d.Inbox) != 1 || !strings.Contains(string(d.Inbox[0].Line), "Use the big GPU.") {
		t.Fatalf("extend after a message: %+v, %v", d, err)
	}
	var line struct{ Type, Text string }
	if err := json.Unmarshal(d.Inbox[0].Line, &line); err != nil || line.Type != "message" {
		t.Fatalf("inbox line %s: %v", d.Inbox[0].Line, err)
	}
	// Only lines after the one the worker says it delivered.
	d, err = h.Port().Extend(ctx(t), a.Lease, d.Inbox[0].Seq)
	if err != nil || len(d.Inbox) != 0 {
		t.Fatalf("extend after the delivered line: %+v, %v", d, err)
	}
	h.Message(t, task, "And hurry.")
	d, err = h.Port().Extend(ctx(t), a.Lease, 1)
	if err != nil || len(d.Inbox) != 1 || d.Inbox[0].Seq != 2 || !strings.Contains(string(d.Inbox[0].Line), "And hurry.") {
		t.Fatalf("extend after a second message: %+v, %v", d, err)
	}
}

func event(text string) workport.Event {
	p, _ := json.Marshal(map[string]string{"stream": "stdout", "text": text})
	return workport.Event{Type: workport.EventLog, Payload: p, At: time.Now().UTC()}
}

func idempotentAppend(t *testing.T, h Hub) {
	task, a := claim(t, h)
	one := workport.Batch{Seq: 1, Events: []workport.Event{event("first batch line")}}
	for i := 0; i < 3; i++ {
		if err := h.Port().Append(ctx(t), a.Lease, one); err != nil {
			t.Fatalf("append (try %d): %v", i+1, err)
		}
	}
	if err := h.Port().Append(ctx(t), a.Lease, workport.Batch{Seq: 2, Events: []workport.Event{event("second batch line")}}); err != nil {
		t.Fatalf("append 2: %v", err)
	}
	if err := h.Port().Append(ctx(t), a.Lease, one); err != nil {
		t.Fatalf("append 1 late: %v", err)
	}
	log := h.Log(t, task)
	if strings.Count(log, "first batch line") != 1 || strings.Count(log, "second batch line") != 1 ||
		strings.Index(log, "first batch line") > strings.Index(log, "second batch line") {
		t.Fatalf("each batch must be stored once, in order:\n%s", log)
	}
}

func finishOnce(t *testing.T, h Hub) {
	task, a := claim(t, h)
	if err := h.Port().Finish(ctx(t), a.Lease, workport.Result{Outcome: workport.Failed, Error: "it broke"}); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if status, msg := h.Status(t, task); status != "failed" || msg != "it broke" {
		t.Fatalf("task after finish: %s %q", status, msg)
	}
	if err := h.Port().Finish(ctx(t), a.Lease, workport.Result{Outcome: workport.Succeeded}); !errors.Is(err, workport.ErrLeaseLost) {
		t.Fatalf("a second finish: %v, want the lease lost", err)
	}
	if _, err := h.Port().Extend(ctx(t), a.Lease, 0); !errors.Is(err, workport.ErrLeaseLost) {
		t.Fatalf("extend after finish: %v, want the lease lost", err)
	}
	if status, msg := h.Status(t, task); status != "failed" || msg != "it broke" {
		t.Fatalf("the task changed after a refused finish: %s %q", status, msg)
	}
}

func leaseLostAfterRescue(t *testing.T, h Hub) {
	task, a := claim(t, h)
	// The worker goes silent: no extension for longer than the lease.
	deadline := time.Now().Add(h.Lease() + 30*time.Second)
	for {
		time.Sleep(500 * time.Millisecond)
		as, err := h.Port().Claim(ctx(t), request(h, 0))
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if len(as) == 1 && as[0].Agent != nil && as[0].Agent.TaskID == task {
			// A new run under a new lease (whether the lost claim cost an
			// attempt is the hub's policy: a runner's unacknowledged claim
			// does not).
			if as[0].Lease.Attempt < a.Lease.Attempt || as[0].Lease.RunID == a.Lease.RunID || as[0].Lease == a.Lease {
				t.Fatalf("the rescued task came back as %+v after %+v", as[0].Lease, a.Lease)
			}
			break
		}
		if len(as) != 0 {
			t.Fatalf("claimed %+v", as)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the silent worker's task was never rescued")
		}
	}
	if _, err := h.Port().Extend(ctx(t), a.Lease, 0); !errors.Is(err, workport.ErrLeaseLost) {
		t.Fatalf("extend of a rescued lease: %v, want the lease lost", err)
	}
	if err := h.Port().Append(ctx(t), a.Lease, workport.Batch{Seq: 1, Events: []workport.Event{event("too late")}}); !errors.Is(err, workport.ErrLeaseLost) {
		t.Fatalf("append on a rescued lease: %v, want the lease lost", err)
	}
	if err := h.Port().Finish(ctx(t), a.Lease, workport.Result{Outcome: workport.Succeeded}); !errors.Is(err, workport.ErrLeaseLost) {
		t.Fatalf("finish of a rescued lease: %v, want the lease lost", err)
	}
	if strings.Contains(h.Log(t, task), "too late") {
		t.Fatalf("a lost lease's batch was stored")
	}
}

func controlStream(t *testing.T, h Hub) {
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ch, err := h.Port().Control(c, h.Worker())
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	task, a := claim(t, h)
	wait := func(action string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case ctl, ok := <-ch:
				if !ok {
					t.Fatalf("the control stream ended")
				}
				if ctl.JobID == a.Lease.JobID && ctl.Action == action {
					return
				}
			case <-timeout:
				t.Fatalf("no %s for job %s on the control stream", action, a.Lease.JobID)
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // the stream listens
	h.Message(t, task, "Are you there?")
	wait(workport.ActionDeliver)
	h.Cancel(t, task)
	wait(workport.ActionCancel)
	// Extend says the same: a control lost on the way is only late.
	d, err := h.Port().Extend(ctx(t), a.Lease, 0)
	if err != nil && !errors.Is(err, workport.ErrLeaseLost) {
		t.Fatalf("extend after cancel: %v", err)
	}
	if err == nil && !d.Cancel {
		t.Fatalf("extend after cancel: %+v, want cancel", d)
	}
}

func heldAcrossRestart(t *testing.T, h Hub) {
	_, a := claim(t, h)
	if err := h.Port().Append(ctx(t), a.Lease, workport.Batch{Seq: 1, Events: []workport.Event{event("before the crash")}}); err != nil {
		t.Fatalf("append: %v", err)
	}
	// The worker's process dies and a new one starts with the same
	// identity: the work it held is still its own, with what was stored.
	p := h.Restart(t)
	held, err := p.Held(ctx(t), h.Worker())
	if err != nil {
		t.Fatalf("held: %v", err)
	}
	if len(held) != 1 || held[0].Lease != a.Lease {
		t.Fatalf("held %+v, want the lease %+v", held, a.Lease)
	}
	if held[0].Resume == nil || held[0].Resume.BatchSeq != 1 {
		t.Fatalf("held work resumes after batch 1: %+v", held[0].Resume)
	}
	if _, err := p.Extend(ctx(t), held[0].Lease, 0); err != nil {
		t.Fatalf("extend by the restarted worker: %v", err)
	}
	if err := p.Finish(ctx(t), held[0].Lease, workport.Result{Outcome: workport.Succeeded}); err != nil {
		t.Fatalf("finish by the restarted worker: %v", err)
	}
}

// traceCarried: the work a worker claims carries the W3C trace context of
// whoever queued it, so the worker's span of it continues that trace; work
// queued untraced carries none. A restarted worker's held work carries it
// too.
func traceCarried(t *testing.T, h Hub) {
	// Queued while nothing is traced (as a hub with tracing off).
	plain := h.Queue(ctx(t), t)

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	telemetry.Use(tp)
	t.Cleanup(func() { telemetry.Use(nil); tp.Shutdown(context.Background()) })
	queuing, span := tp.Tracer("porttest").Start(ctx(t), "a person queues a task")
	traced := h.Queue(queuing, t)
	span.End()
	want := span.SpanContext().TraceID()

	got := map[string]workport.Assignment{}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("claimed %d of the 2 queued tasks", len(got))
		}
		as, err := h.Port().Claim(ctx(t), request(h, 5*time.Second))
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		for _, a := range as {
			if a.Agent == nil || (a.Agent.TaskID != plain && a.Agent.TaskID != traced) {
				t.Fatalf("claimed work that was not queued: %+v", a)
			}
			got[a.Agent.TaskID] = a
		}
	}
	if carried := got[plain].TraceParent; carried != "" {
		t.Errorf("work queued untraced carries the trace context %q", carried)
	}
	sc := remote(got[traced].TraceParent)
	if !sc.IsValid() || sc.TraceID() != want {
		t.Fatalf("work queued under trace %s carries %q, want that trace", want, got[traced].TraceParent)
	}
	// Its parent is a span the hub recorded of queuing it (under the
	// person's span), not one made up.
	if !slices.ContainsFunc(rec.Ended(), func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanContext().SpanID() == sc.SpanID() && s.SpanContext().TraceID() == want
	}) {
		t.Errorf("the work's trace context %q names no span recorded in the trace", got[traced].TraceParent)
	}

	held, err := h.Restart(t).Held(ctx(t), h.Worker())
	if err != nil {
		t.Fatalf("held: %v", err)
	}
	if len(held) != 2 {
		t.Fatalf("held %d pieces of work, want the 2 claimed", len(held))
	}
	for _, a := range held {
		if a.TraceParent != got[a.Agent.TaskID].TraceParent {
			t.Errorf("held work of task %s carries %q, claimed with %q", a.Agent.TaskID, a.TraceParent, got[a.Agent.TaskID].TraceParent)
		}
	}
}

// remote is the span context a traceparent names (invalid when it names
// none or is malformed).
func remote(traceparent string) trace.SpanContext {
	c := telemetry.Propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(c)
}
