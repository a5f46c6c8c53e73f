package triggers_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/vault"
	"slipway/internal/triggers"
	"slipway/internal/workflows"
)

type scheduleEnv struct {
	*fixture.Stack
	workflow string
	sealer   *vault.Sealer
}

func newScheduleEnv(t *testing.T, e db.Engine) *scheduleEnv {
	s := fixture.NewStack(t, fixture.StackConfig{Engine: e, Backend: "process"})
	p, _ := s.Project(false, nil)
	w, err := s.Workflows.Create(context.Background(), s.WS, workflows.Input{ProjectID: p.ID, Name: "scheduled",
		Nodes: []workflows.NodeInput{{Key: "echo", Kind: "transform", Config: map[string]any{"expression": "[input, trigger.kind]"}}}})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := vault.NewSealer([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	return &scheduleEnv{Stack: s, workflow: w.ID, sealer: sealer}
}

// service is one server's view: its own clock (a restart is a new one).
func (e *scheduleEnv) service(clk clock.Clock) *triggers.Service {
	return triggers.NewService(e.DB, clk, e.sealer, e.Workflows, nil, nil, slog.New(slog.DiscardHandler), "")
}

func (e *scheduleEnv) fire(t *testing.T, s *triggers.Service) int {
	t.Helper()
	n, err := s.Fire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// runs lists the workflow's runs' triggers, oldest first, once they ended.
func (e *scheduleEnv) runs(t *testing.T) []map[string]any {
	t.Helper()
	rows, err := e.DB.R.Query("SELECT id FROM workflow_runs WHERE workflow_id = $1 ORDER BY created_at, id", e.workflow)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	var out []map[string]any
	for _, id := range ids {
		v, err := e.Workflows.WaitRun(context.Background(), e.WS.ID, id, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("run %s: %s %s", id, v.Status, v.Error)
		}
		var out2 []any
		if err := json.Unmarshal(v.Output, &out2); err != nil || len(out2) != 2 || out2[1] != "schedule" {
			t.Fatalf("run output %s", v.Output)
		}
		trig, err := e.DB.R.Query("SELECT trigger_data FROM workflow_runs WHERE id = $1", id)
		if err != nil {
			t.Fatal(err)
		}
		trig.Next()
		var raw []byte
		if err := trig.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		trig.Close()
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// A cron schedule fires once per tick, as of an injected clock: nothing
// before its tick, one run at it, none again for the same tick; after a
// restart that missed four ticks, one catch-up run, never a burst; two
// replicas firing at once start one run.
func TestScheduleTicks(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		e := newScheduleEnv(t, eng)
		ctx := context.Background()
		clk := clock.NewFake(at("2026-11-23T10:00:30Z"))
		s := e.service(clk)
		tr, err := s.Create(ctx, e.WS, nil, e.workflow, triggers.CreateInput{Kind: triggers.KindSchedule,
			Config: triggers.Config{Cron: "*/5 * * * *", Input: json.RawMessage(`{"from":"cron"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		if tr.NextFireAt == nil || !tr.NextFireAt.Equal(at("2026-11-23T10:05:00Z")) || tr.Config.Timezone != "UTC" {
			t.Fatalf("created: next %v, timezone %q", tr.NextFireAt, tr.Config.Timezone)
		}
		if n := e.fire(t, s); n != 0 {
			t.Fatalf("fired %d before the first tick", n)
		}
		clk.Advance(4*time.Minute + 30*time.Second) // 10:05:00
		if n := e.fire(t, s); n != 1 {
			t.Fatalf("fired %d at the tick", n)
		}
		if n := e.fire(t, s); n != 0 {
			t.Fatalf("fired %d again for the same tick", n)
		}

		// The server stops, misses 10:10 … 10:25, and starts again.
		e.Stop()
		e.Start()
		clk2 := clock.NewFake(at("2026-11-23T10:27:10Z"))
		s2 := e.service(clk2)
		if n := e.fire(t, s2); n != 1 {
			t.Fatalf("fired %d after the restart, want one catch-up", n)
		}
		if n := e.fire(t, s2); n != 0 {
			t.Fatalf("fired %d again after the catch-up", n)
		}
		got, err := s2.Get(ctx, e.WS, tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.NextFireAt.Equal(at("2026-11-23T10:30:00Z")) || !got.LastFiredAt.Equal(at("2026-11-23T10:27:10Z")) {
			t.Fatalf("after the catch-up: next %v, last %v", got.NextFireAt, got.LastFiredAt)
		}

		// Two replicas at the next tick: one run between them.
		clk.Advance(25 * time.Minute) // 10:30:00
		clk2.Advance(2*time.Minute + 50*time.Second)
		var wg sync.WaitGroup
		counts := make([]int, 2)
		for i, svc := range []*triggers.Service{s, s2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := svc.Fire(ctx)
				if err != nil {
					t.Error(err)
				}
				counts[i] = n
			}()
		}
		wg.Wait()
		if counts[0]+counts[1] != 1 {
			t.Fatalf("two replicas fired %v", counts)
		}

		// The catch-up run is for the first tick it missed.
		runs := e.runs(t)
		if len(runs) != 3 {
			t.Fatalf("%d runs, want 3", len(runs))
		}
		for i, want := range []string{"2026-11-23T10:05:00Z", "2026-11-23T10:10:00Z", "2026-11-23T10:30:00Z"} {
			if runs[i]["scheduled_for"] != want || runs[i]["trigger_id"] != tr.ID || runs[i]["kind"] != "schedule" {
				t.Fatalf("run %d's trigger %v, want scheduled_for %s", i, runs[i], want)
			}
		}
	})
}

// An interval keeps its grid across missed ticks; a disabled schedule does
// not fire, and enabled again starts from its next tick after now; a cron
// in a time zone ticks in that zone.
func TestScheduleIntervalsAndZones(t *testing.T) {
	e := newScheduleEnv(t, db.SQLite)
	ctx := context.Background()
	clk := clock.NewFake(at("2026-11-23T10:00:30Z"))
	s := e.service(clk)
	tr, err := s.Create(ctx, e.WS, nil, e.workflow, triggers.CreateInput{Kind: triggers.KindSchedule, Config: triggers.Config{IntervalSeconds: 60}})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.NextFireAt.Equal(at("2026-11-23T10:01:30Z")) {
		t.Fatalf("first tick %v", tr.NextFireAt)
	}
	clk.Advance(3*time.Minute + 30*time.Second) // 10:04:00: ticks 10:01:30 … 10:03:30 missed
	if n := e.fire(t, s); n != 1 {
		t.Fatalf("fired %d", n)
	}
	got, _ := s.Get(ctx, e.WS, tr.ID)
	if !got.NextFireAt.Equal(at("2026-11-23T10:04:30Z")) {
		t.Fatalf("next tick on the grid: %v", got.NextFireAt)
	}

	off := false
	if _, err := s.Update(ctx, e.WS, tr.ID, triggers.UpdateInput{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Minute) // 10:14:00
	if n := e.fire(t, s); n != 0 {
		t.Fatalf("a disabled schedule fired %d", n)
	}
	on := true
	got, err = s.Update(ctx, e.WS, tr.ID, triggers.UpdateInput{Enabled: &on})
	if err != nil {
		t.Fatal(err)
	}
	if !got.NextFireAt.Equal(at("2026-11-23T10:15:00Z")) {
		t.Fatalf("enabled again: next %v", got.NextFireAt)
	}
	if n := e.fire(t, s); n != 0 {
		t.Fatalf("enabling fired %d at once", n)
	}

	berlin, err := s.Create(ctx, e.WS, nil, e.workflow, triggers.CreateInput{Kind: triggers.KindSchedule,
		Config: triggers.Config{Cron: "0 9 * * *", Timezone: "Europe/Berlin"}})
	if err != nil {
		t.Fatal(err)
	}
	if !berlin.NextFireAt.Equal(at("2026-11-24T08:00:00Z")) {
		t.Fatalf("09:00 in Berlin in November is 08:00 UTC: %v", berlin.NextFireAt)
	}
	for _, bad := range []triggers.Config{
		{Cron: "61 * * * *"}, {Cron: "* * *"}, {Cron: "CRON_TZ=UTC * * * * *"}, {Cron: "0 9 * * *", Timezone: "Mars/Olympus"},
		{Cron: "0 9 * * *", Timezone: "Local"}, {Cron: "0 9 * * *", IntervalSeconds: 60}, {}, {IntervalSeconds: 60, Timezone: "UTC"},
		{Cron: "0 9 * * *\x1b"}, {Cron: "0 9 * * *", ResponseMode: "sync"}, {Cron: "@daily", Input: json.RawMessage(`{`)},
	} {
		if _, err := s.Create(ctx, e.WS, nil, e.workflow, triggers.CreateInput{Kind: triggers.KindSchedule, Config: bad}); err == nil ||
			!strings.Contains(err.Error(), "bad_request") {
			t.Errorf("config %+v: %v", bad, err)
		}
	}
}
