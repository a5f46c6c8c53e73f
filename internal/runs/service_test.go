package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/redact"
	"slipway/internal/runs"
)

type logRig struct {
	t   testing.TB
	db  *db.DB
	s   *runs.Service
	ws  *actor.Workspace
	log string
}

func newLogRig(t testing.TB, e db.Engine) *logRig {
	t.Helper()
	d := dbtest.New(t, e)
	r := &logRig{t: t, db: d, s: runs.NewService(d, clock.System{}, redact.New("instance-secret-42"), nil, nil), ws: fixture.Workspace(t, d), log: ids.New()}
	if err := d.Tx(context.Background(), func(tx *db.Tx) error { return r.s.CreateLog(context.Background(), tx, r.ws.ID, r.log) }); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *logRig) run() *runs.Run {
	r.t.Helper()
	var run *runs.Run
	err := r.db.Tx(context.Background(), func(tx *db.Tx) (err error) {
		run, err = r.s.Start(context.Background(), tx, runs.NewRun{Kind: runs.KindTask, WorkspaceID: r.ws.ID, LogID: r.log, Backend: "process"})
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return run
}

func (r *logRig) append(runID string, evs ...runs.NewEvent) error {
	return r.db.Tx(context.Background(), func(tx *db.Tx) error {
		return r.s.Append(context.Background(), tx, r.ws.ID, r.log, runID, evs...)
	})
}

func ev(typ string, v any) runs.NewEvent { return runs.Value(typ, v, time.Now().UTC()) }

// TestLogAndRunSequences: the log numbers every event 1..n across its runs;
// each run numbers its own events 1..m; concurrent appends interleave
// without gaps or repeats, on both engines.
func TestLogAndRunSequences(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		r := newLogRig(t, e)
		ctx := context.Background()
		if err := r.append("", ev("status", map[string]string{"to": "queued"})); err != nil {
			t.Fatal(err)
		}
		a, b := r.run(), r.run()
		if a.Attempt != 1 || b.Attempt != 2 {
			t.Fatalf("attempts %d, %d", a.Attempt, b.Attempt)
		}
		const perWriter = 300
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for _, run := range []*runs.Run{a, b} {
			for w := 0; w < 2; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < perWriter; i += 30 {
						batch := make([]runs.NewEvent, 30)
						for j := range batch {
							batch[j] = ev("log", map[string]any{"line": fmt.Sprintf("%s-%d", run.ID, i+j)})
						}
						if err := r.append(run.ID, batch...); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		all, err := r.s.LogEvents(ctx, r.log, 0, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1+4*perWriter {
			t.Fatalf("%d events in the log, want %d", len(all), 1+4*perWriter)
		}
		for i, e := range all {
			if e.SequenceNum != int32(i+1) || e.TaskID != r.log {
				t.Fatalf("log event %d = %+v", i, e)
			}
		}
		for _, run := range []*runs.Run{a, b} {
			evs, err := r.s.Events(ctx, r.ws, run.ID, 0, 5000)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 2*perWriter {
				t.Fatalf("run has %d events, want %d", len(evs), 2*perWriter)
			}
			for i, e := range evs {
				if e.SequenceNum != int32(i+1) || !strings.Contains(string(e.Payload), run.ID) {
					t.Fatalf("run event %d = %+v", i, e)
				}
			}
			page, err := r.s.Events(ctx, r.ws, run.ID, 100, 10)
			if err != nil || len(page) != 10 || page[0].SequenceNum != 101 {
				t.Fatalf("run page = %d events, %v", len(page), err)
			}
		}
		// Another workspace sees nothing of the run.
		if _, err := r.s.Events(ctx, &actor.Workspace{ID: ids.New()}, a.ID, 0, 10); err == nil {
			t.Fatal("another workspace read the run's events")
		}
	})
}

// TestBatchesAndTheEndOfARun: a worker's batch stored twice is stored once;
// a result line records the run's result; once the run ended, its events
// are dropped; secrets are redacted before anything is stored.
func TestBatchesAndTheEndOfARun(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		r := newLogRig(t, e)
		ctx := context.Background()
		run := r.run()
		batch := []runs.NewEvent{ev("log", map[string]string{"line": "the instance-secret-42 leaked"}),
			{Type: runs.ResultType, Payload: json.RawMessage(`{"type":"result","status":"success","summary":"ok instance-secret-42"}`)}}
		for i := 0; i < 3; i++ { // the upload retried twice
			stored, err := r.s.AppendBatch(ctx, r.ws.ID, run.ID, 1, batch)
			if err != nil || stored != (i == 0) {
				t.Fatalf("upload %d: stored=%v, %v", i, stored, err)
			}
		}
		evs, err := r.s.Events(ctx, r.ws, run.ID, 0, 100)
		if err != nil || len(evs) != 2 {
			t.Fatalf("%d events after a retried batch, %v", len(evs), err)
		}
		for _, e := range evs {
			if strings.Contains(string(e.Payload), "instance-secret-42") || !strings.Contains(string(e.Payload), redact.Redacted) {
				t.Fatalf("not redacted: %s", e.Payload)
			}
		}
		got, err := r.s.Get(ctx, nil, r.ws.ID, run.ID)
		var res struct{ Status, Summary string }
		if err != nil || json.Unmarshal(got.Result, &res) != nil || res.Status != "success" || res.Summary != "ok "+redact.Redacted || got.BatchSeq != 1 {
			t.Fatalf("run = %+v (result %s), %v", got, got.Result, err)
		}
		// The run ends: later events (the agent still printing while it is
		// stopped) are dropped, so the terminal event stays the last.
		if err := r.db.Tx(ctx, func(tx *db.Tx) error {
			if err := r.s.Append(ctx, tx, r.ws.ID, r.log, run.ID, ev("status", map[string]string{"to": "cancelled"})); err != nil {
				return err
			}
			_, err := r.s.Finish(ctx, tx, r.ws.ID, run.ID, runs.Cancelled, nil, "")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if stored, err := r.s.AppendBatch(ctx, r.ws.ID, run.ID, 2, []runs.NewEvent{ev("log", map[string]string{"line": "late"})}); err != nil || stored {
			t.Fatalf("a batch after the end: stored=%v, %v", stored, err)
		}
		if err := r.append(run.ID, ev("log", map[string]string{"line": "late"})); !errors.Is(err, runs.ErrRunOver) {
			t.Fatalf("append after the end: %v", err)
		}
		evs, _ = r.s.Events(ctx, r.ws, run.ID, 0, 100)
		if last := evs[len(evs)-1]; last.EventType != "status" || len(evs) != 3 {
			t.Fatalf("events after the end:\n%s", fixture.DumpEvents(evs))
		}
		// A finished run stays finished; the exit code can still arrive.
		if err := r.db.Tx(ctx, func(tx *db.Tx) error {
			if ok, err := r.s.Finish(ctx, tx, r.ws.ID, run.ID, runs.Failed, nil, "late"); err != nil || ok {
				return fmt.Errorf("finishing again: %v %v", ok, err)
			}
			return r.s.SetExitCode(ctx, tx, r.ws.ID, run.ID, 143)
		}); err != nil {
			t.Fatal(err)
		}
		got, _ = r.s.Get(ctx, nil, r.ws.ID, run.ID)
		if got.Status != runs.Cancelled || got.ExitCode == nil || *got.ExitCode != 143 || got.FinishedAt == nil {
			t.Fatalf("run = %+v", got)
		}
		// Deleting the log takes its runs and events.
		if err := r.db.Tx(ctx, func(tx *db.Tx) error { return r.s.DeleteLog(ctx, tx, r.ws.ID, r.log) }); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := r.db.R.QueryRow("SELECT (SELECT COUNT(*) FROM runs) + (SELECT COUNT(*) FROM run_events)").Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d rows left after deleting the log, %v", n, err)
		}
	})
}

// BenchmarkEventAppend measures batched appends as a worker sends them
// (bench/README.md): batches of 500, timed until committed.
func BenchmarkEventAppend(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			r := newLogRig(b, e)
			run := r.run()
			payload := json.RawMessage(`{"type":"log","line":"compiling package slipway/internal/tasks (step 12 of 40)"}`)
			batch := make([]runs.NewEvent, 500)
			for i := range batch {
				batch[i] = runs.NewEvent{Type: "log", Payload: payload, At: time.Now().UTC()}
			}
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			n := 0
			for seq := int64(1); n < b.N; seq++ {
				if _, err := r.s.AppendBatch(ctx, r.ws.ID, run.ID, seq, batch); err != nil {
					b.Fatal(err)
				}
				n += len(batch)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkEventPage measures reading one page of 500 events of a log.
func BenchmarkEventPage(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			r := newLogRig(b, e)
			run := r.run()
			batch := make([]runs.NewEvent, 500)
			for i := range batch {
				batch[i] = runs.NewEvent{Type: "log", Payload: json.RawMessage(`{"type":"log","line":"some output line of moderate length, as agents print"}`), At: time.Now().UTC()}
			}
			ctx := context.Background()
			for seq := int64(1); seq <= 10; seq++ {
				if _, err := r.s.AppendBatch(ctx, r.ws.ID, run.ID, seq, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				evs, err := r.s.LogEvents(ctx, r.log, int32(i%9)*500, 500)
				if err != nil || len(evs) != 500 {
					b.Fatalf("%d events, %v", len(evs), err)
				}
			}
		})
	}
}

// TestOutputLimitAtTheHub: a worker's batches are held to the run's output
// limit at the hub too (a runner that does not keep it): past it the
// batch's output is left out, everything else is stored, and one
// output_truncated event says so; on both databases.
func TestOutputLimitAtTheHub(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		r := newLogRig(t, e)
		ctx := context.Background()
		run := r.run()
		limit := runs.OutputLimit{Bytes: 1 << 20, Lines: 5}
		line := func(s string) runs.NewEvent { return ev("log", map[string]string{"line": s}) }
		for seq, batch := range [][]runs.NewEvent{
			{line("1"), line("2"), line("3")},
			{line("4"), line("5"), line("6"), ev("cost", map[string]any{"usd": 0.01})}, // past 5 lines: only the cost
			{line("7"), {Type: runs.ResultType, Payload: json.RawMessage(`{"type":"result","status":"success"}`)}},
		} {
			if _, err := r.s.AppendBatchWithin(ctx, r.ws.ID, run.ID, int64(seq+1), batch, limit); err != nil {
				t.Fatal(err)
			}
		}
		evs, err := r.s.Events(ctx, r.ws, run.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			got = append(got, e.EventType)
		}
		want := []string{"log", "log", "log", "cost", "output_truncated", runs.ResultType}
		if !slices.Equal(got, want) {
			t.Fatalf("stored %v, want %v", got, want)
		}
		if res, err := r.s.Get(ctx, nil, r.ws.ID, run.ID); err != nil || len(res.Result) == 0 {
			t.Fatalf("the result past the limit was not recorded: %+v %v", res, err)
		}
	})
}
