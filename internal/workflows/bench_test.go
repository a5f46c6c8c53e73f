package workflows_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/workflows"
)

func benchEngines(b *testing.B, fn func(b *testing.B, e db.Engine)) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			fn(b, e)
		})
	}
}

// chain is a workflow of k transform nodes, each adding one to the last.
func chain(k int) ([]n, []e) {
	nodes := []n{node("n1", "transform", map[string]any{"expression": "input.x + 1"})}
	var edges []e
	for i := 2; i <= k; i++ {
		nodes = append(nodes, node(fmt.Sprintf("n%d", i), "transform", map[string]any{"expression": fmt.Sprintf("nodes.n%d.output + 1", i-1)}))
		edges = append(edges, edge(fmt.Sprintf("n%d", i-1), "", fmt.Sprintf("n%d", i)))
	}
	return nodes, edges
}

func (g *engine) statusOf(b testing.TB, runID string) string {
	var s string
	if err := g.DB.R.QueryRow("SELECT status FROM workflow_runs WHERE id = $1", runID).Scan(&s); err != nil {
		b.Fatal(err)
	}
	return s
}

// runChain starts a run and waits (polling) until it succeeded; it
// returns the time from the request to the end.
func (g *engine) runChain(b *testing.B, w *workflows.Workflow) (time.Duration, string) {
	start := time.Now()
	id := g.run(b, w, `{"x": 0}`)
	for g.statusOf(b, id) != workflows.RunSucceeded {
		time.Sleep(200 * time.Microsecond)
	}
	return time.Since(start), id
}

// BenchmarkEngineChain measures the engine's time per node on a chain of
// transform nodes, as the difference between a 10-node and a 1-node run
// (median of each, from the request to the end) over the 9 nodes between:
// batched (the default: consecutive inline nodes run in one transaction)
// and with every node committed on its own (inline_batch=1), where the
// node rows' own timestamps give the same figure a second way
// (ms/transition, first node's end to the last one's, so polling does not
// count).
func BenchmarkEngineChain(b *testing.B) {
	benchEngines(b, func(b *testing.B, eng db.Engine) {
		for _, batch := range []int{0, 1} {
			name := "batched"
			if batch == 1 {
				name = "inline_batch=1"
			}
			b.Run(name, func(b *testing.B) {
				g := newEngineWith(b, fixture.StackConfig{Engine: eng, Backend: "process", InlineBatch: batch})
				nodes, edges := chain(10)
				ten := g.workflow(b, nodes, edges)
				nodes, edges = chain(1)
				one := g.workflow(b, nodes, edges)
				var whole10, whole1, perTransition []float64
				b.ResetTimer()
				for range b.N {
					d1, _ := g.runChain(b, one)
					d10, id := g.runChain(b, ten)
					whole1 = append(whole1, float64(d1.Microseconds())/1000)
					whole10 = append(whole10, float64(d10.Microseconds())/1000)
					var first, last time.Time
					rows, err := g.DB.R.Query("SELECT node_key, "+g.DB.Dialect.TimeColumn("finished_at")+" FROM node_runs WHERE run_id = $1", id)
					if err != nil {
						b.Fatal(err)
					}
					for rows.Next() {
						var key string
						var at time.Time
						if err := rows.Scan(&key, db.UTC(&at)); err != nil {
							b.Fatal(err)
						}
						switch key {
						case "n1":
							first = at
						case "n10":
							last = at
						}
					}
					rows.Close()
					perTransition = append(perTransition, float64(last.Sub(first).Microseconds())/1000/9)
				}
				b.StopTimer()
				b.ReportMetric((median(whole10)-median(whole1))/9, "ms/node")
				if batch == 1 {
					b.ReportMetric(median(perTransition), "ms/transition")
				}
				b.ReportMetric(median(whole10), "ms/run")
			})
		}
	})
}

// BenchmarkEngineThroughput starts 200 runs of a 3-node flow at once and
// reports how many complete per second.
func BenchmarkEngineThroughput(b *testing.B) {
	benchEngines(b, func(b *testing.B, eng db.Engine) {
		g := newEngine(b, eng)
		nodes, edges := chain(3)
		w := g.workflow(b, nodes, edges)
		const runs = 200
		var rates []float64
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			ids := make([]string, runs)
			for i := range ids {
				ids[i] = g.run(b, w, `{"x": 1}`)
			}
			for {
				var done int
				if err := g.DB.R.QueryRow("SELECT COUNT(*) FROM workflow_runs WHERE id IN (SELECT id FROM workflow_runs WHERE created_at >= $1) AND status = 'succeeded'",
					start.UTC()).Scan(&done); err != nil {
					b.Fatal(err)
				}
				if done >= runs {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			rates = append(rates, runs/time.Since(start).Seconds())
		}
		b.StopTimer()
		b.ReportMetric(median(rates), "runs/s")
	})
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
