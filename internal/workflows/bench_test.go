package workflows_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

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

// BenchmarkEngineChain runs a 10-node transform chain again and again and
// reports the engine's time per node: from the first node's transition to
// the last one's, over the nine steps between them (the rows' own
// timestamps, so polling for the end does not count), as a median over the
// runs; and the whole run from the request to the end, seen by polling.
func BenchmarkEngineChain(b *testing.B) {
	benchEngines(b, func(b *testing.B, eng db.Engine) {
		g := newEngine(b, eng)
		nodes, edges := chain(10)
		w := g.workflow(b, nodes, edges)
		var perNode, whole []float64
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			id := g.run(b, w, `{"x": 0}`)
			for g.statusOf(b, id) != workflows.RunSucceeded {
				time.Sleep(200 * time.Microsecond)
			}
			whole = append(whole, float64(time.Since(start).Microseconds())/1000)
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
			perNode = append(perNode, float64(last.Sub(first).Microseconds())/1000/9)
		}
		b.StopTimer()
		b.ReportMetric(median(perNode), "ms/node")
		b.ReportMetric(median(whole), "ms/run")
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
