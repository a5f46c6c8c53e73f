package worker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/runs"
	"slipway/internal/tasks"
	"slipway/internal/workport"
)

// agentEvent reports event types the agent produced (not the hub's or the
// worker's own).
func agentEvent(typ string) bool {
	switch typ {
	case tasks.EventStatus, tasks.EventRun, tasks.EventPR, tasks.EventError, workport.EventGit, workport.EventTimeout:
		return false
	}
	return true
}

// BenchmarkTaskToFirstEvent measures the time from creating a task to its
// first agent event, one task at a time (bench/README.md):
//
//	go test -run XXX -bench TaskToFirstEvent -benchtime 20x ./internal/worker
func BenchmarkTaskToFirstEvent(b *testing.B) {
	for _, backend := range []string{"process", "docker"} {
		for _, e := range []db.Engine{db.SQLite, db.Postgres} {
			b.Run(backend+"/"+string(e), func(b *testing.B) {
				if e == db.Postgres {
					dbtest.RequirePostgres(b)
				}
				s := fixture.NewStack(b, fixture.StackConfig{Engine: e, Backend: backend})
				p, _ := s.Project(false, nil)
				ctx := context.Background()
				var lat []time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					start := time.Now()
					t := s.Task(p.ID, "echo ready", tasks.TaskConfig{})
					deadline := time.Now().Add(60 * time.Second)
					for {
						evs, _ := s.Runs.LogEvents(ctx, t.ID, 0, 100)
						if slices.ContainsFunc(evs, func(e runs.TaskEvent) bool { return agentEvent(e.EventType) }) {
							break
						}
						if time.Now().After(deadline) {
							b.Fatalf("no agent event within a minute:\n%s", fixture.DumpEvents(evs))
						}
						time.Sleep(time.Millisecond)
					}
					lat = append(lat, time.Since(start))
					b.StopTimer()
					s.Wait(t.ID, tasks.StatusDone, tasks.StatusFailed)
					b.StartTimer()
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
				b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "ms-p90")
			})
		}
	}
}

// BenchmarkDrain measures draining 200 queued tasks across 10 workspaces
// (two projects each, one capped at 1) with a workspace cap of 3, and checks
// that no cap was ever exceeded:
//
//	go test -run XXX -bench Drain -benchtime 1x ./internal/worker
func BenchmarkDrain(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			for i := 0; i < b.N; i++ {
				drain(b, e)
			}
		})
	}
}

func drain(b *testing.B, e db.Engine) {
	s := fixture.NewStack(b, fixture.StackConfig{Engine: e, Backend: "process", Tasks: tasks.Config{WorkspaceCap: 3}})
	s.Stop() // queue everything first, then start
	ctx := context.Background()
	var all []string
	capped := map[string]bool{}
	home := s.WS
	for w := 0; w < 10; w++ {
		ws := home
		if w > 0 {
			ws = &actor.Workspace{ID: ids.New(), OrganizationID: home.OrganizationID, Role: "admin"}
			if _, err := s.DB.W.ExecContext(ctx, "INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, $3, $4)",
				ws.ID, ws.OrganizationID, fmt.Sprintf("w%d", w), time.Now().UTC()); err != nil {
				b.Fatal(err)
			}
			if err := s.Projects.WorkspaceCreated(ctx, s.DB.W, ws.ID, time.Now().UTC()); err != nil {
				b.Fatal(err)
			}
		}
		s.WS = ws
		pa, _ := s.Project(true, nil)
		pb, _ := s.Project(true, nil)
		one := 1
		if _, err := s.Projects.SetConcurrency(ctx, ws, pb.ID, &one); err != nil {
			b.Fatal(err)
		}
		capped[pb.ID] = true
		for k := 0; k < 10; k++ {
			all = append(all, s.Task(pa.ID, "true", tasks.TaskConfig{}).ID, s.Task(pb.ID, "true", tasks.TaskConfig{}).ID)
		}
	}
	s.WS = home
	b.ResetTimer()
	start := time.Now()
	s.Start()
	maxWS, maxCapped := 0, 0
	for {
		perWS, perProj := map[string]int{}, map[string]int{}
		finished := 0
		rows, err := s.DB.R.QueryContext(ctx, "SELECT workspace_id, project_id, status FROM tasks")
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var w, p, st string
			if err := rows.Scan(&w, &p, &st); err != nil {
				b.Fatal(err)
			}
			if tasks.Active(st) {
				perWS[w]++
				perProj[p]++
			}
			if tasks.Terminal(st) {
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
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("%d of %d finished after 5 minutes", finished, len(all))
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if maxWS > 3 || maxCapped > 1 {
		b.Fatalf("caps broken: %d running in one workspace (cap 3), %d in a capped project (cap 1)", maxWS, maxCapped)
	}
	var failed int
	if err := s.DB.R.QueryRow("SELECT COUNT(*) FROM tasks WHERE status = 'failed'").Scan(&failed); err != nil {
		b.Fatal(err)
	}
	if failed > 0 {
		var msg string
		_ = s.DB.R.QueryRow("SELECT error FROM tasks WHERE status = 'failed' LIMIT 1").Scan(&msg)
		b.Fatalf("%d tasks failed, e.g.: %s", failed, msg)
	}
	b.ReportMetric(elapsed.Seconds(), "s-to-drain-200")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(maxWS), "max-running-per-workspace")
	b.ReportMetric(float64(maxCapped), "max-running-capped-project")
}
