package tasks

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// agentEvent reports event types the agent produced (not the hub's own).
func agentEvent(typ string) bool {
	switch typ {
	case EventStatus, EventRun, EventGit, EventPR, EventTimeout, EventError:
		return false
	}
	return true
}

// BenchmarkTaskToFirstEvent measures the time from creating a task to its
// first agent event, one task at a time (bench/README.md):
//
//	go test -run XXX -bench TaskToFirstEvent -benchtime 30x ./internal/tasks
func BenchmarkTaskToFirstEvent(b *testing.B) {
	for _, backend := range []string{"process", "docker"} {
		b.Run(backend, func(b *testing.B) {
			r := newRig(b, db.SQLite, backend, func(c *DispatchConfig) { c.Poll = time.Second })
			p, _ := r.project(false, nil)
			ctx := context.Background()
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				t := r.task(p.ID, "echo ready", TaskConfig{})
				deadline := time.Now().Add(60 * time.Second)
				for {
					evs, _ := listEvents(ctx, r.db.R, "task_id", t.ID, 0, 100)
					if slices.ContainsFunc(evs, func(e TaskEvent) bool { return agentEvent(e.EventType) }) {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("no agent event within a minute:\n%s", dumpEvents(evs))
					}
					time.Sleep(time.Millisecond)
				}
				lat = append(lat, time.Since(start))
				b.StopTimer()
				r.wait(t.ID, StatusDone, StatusFailed)
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "ms-p90")
		})
	}
}

// BenchmarkDrain measures draining 200 queued tasks across 10 workspaces
// (two projects each, one capped at 1) with a workspace cap of 3, and checks
// that no cap was ever exceeded:
//
//	go test -run XXX -bench Drain -benchtime 1x ./internal/tasks
func BenchmarkDrain(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r := newRig(b, db.SQLite, "process", func(c *DispatchConfig) { c.WorkspaceCap = 3 })
		r.stop() // queue everything first, then start
		ctx := context.Background()
		var all []string
		capped := map[string]bool{}
		for w := 0; w < 10; w++ {
			ws := r.ws
			if w > 0 {
				ws = &actor.Workspace{ID: ids.New(), OrganizationID: r.ws.OrganizationID}
				if _, err := r.db.W.ExecContext(ctx, "INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, $3, $4)",
					ws.ID, ws.OrganizationID, fmt.Sprintf("w%d", w), time.Now().UTC()); err != nil {
					b.Fatal(err)
				}
				if err := r.proj.SeedProfiles(ctx, r.db.W, ws.ID, time.Now().UTC()); err != nil {
					b.Fatal(err)
				}
			}
			r.ws = ws
			pa, _ := r.project(true, nil)
			pb, _ := r.project(true, nil)
			one := 1
			if _, err := r.proj.SetConcurrency(ctx, ws, pb.ID, &one); err != nil {
				b.Fatal(err)
			}
			capped[pb.ID] = true
			for k := 0; k < 10; k++ {
				all = append(all, r.task(pa.ID, "true", TaskConfig{}).ID, r.task(pb.ID, "true", TaskConfig{}).ID)
			}
		}
		b.ResetTimer()
		start := time.Now()
		r.start()
		maxWS, maxCapped := 0, 0
		for {
			perWS, perProj := map[string]int{}, map[string]int{}
			finished := 0
			rows, err := r.db.R.QueryContext(ctx, "SELECT workspace_id, project_id, status FROM tasks")
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
				var w, p, st string
				rows.Scan(&w, &p, &st)
				if Active(st) {
					perWS[w]++
					perProj[p]++
				}
				if Terminal(st) {
					finished++
				}
			}
			rows.Close()
			for _, n := range perWS {
				maxWS = max(maxWS, n)
			}
			for p, n := range perProj {
				if capped[p] {
					maxCapped = max(maxCapped, n)
				}
			}
			if finished == len(all) {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		if maxWS > 3 || maxCapped > 1 {
			b.Fatalf("caps broken: %d running in one workspace (cap 3), %d in a capped project (cap 1)", maxWS, maxCapped)
		}
		var failed int
		r.db.R.QueryRow("SELECT COUNT(*) FROM tasks WHERE status = 'failed'").Scan(&failed)
		if failed > 0 {
			var msg string
			r.db.R.QueryRow("SELECT error FROM tasks WHERE status = 'failed' LIMIT 1").Scan(&msg)
			b.Fatalf("%d tasks failed, e.g.: %s", failed, msg)
		}
		b.ReportMetric(elapsed.Seconds(), "s-to-drain-200")
		b.ReportMetric(float64(len(all))/elapsed.Seconds(), "tasks/s")
		b.ReportMetric(float64(maxWS), "max-running-per-workspace")
		b.ReportMetric(float64(maxCapped), "max-running-capped-project")
	}
}
