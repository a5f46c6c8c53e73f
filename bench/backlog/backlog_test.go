// Package backlog measures the backlog's hot paths (issue 28,
// bench/README.md "The backlog board and reorder plans"), on SQLite and
// PostgreSQL, through real HTTP:
//
//   - board: GET /api/projects/{id}/backlog/board of a project with 5,000
//     cards over the six columns (each column's first 200 and its total);
//   - order: PATCH /api/projects/{id}/backlog/order with a plan of 500
//     cards, applied in one transaction.
//
// Reports p50 and p99 per request. Run from the repository root
// (PostgreSQL on 127.0.0.1:5432):
//
//	export SERVICE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
//	go test -run '^$' -bench . -benchtime 300x ./bench/backlog/
package backlog

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

type obj = map[string]any

const cards = 5000

var states = []string{"inbox", "ready", "in_progress", "review", "blocked", "done"}

// seed makes a project with cards spread over the columns.
func seed(b *testing.B, e db.Engine) (*apitest.Client, string, []string) {
	b.Helper()
	if e == db.Postgres {
		dbtest.RequirePostgres(b)
	}
	app := apitest.New(b, e)
	c := app.Approved(app.Admin(), "Owner")
	r := c.Do("POST", "/api/projects", obj{"name": "web", "repo_url": agenttest.BareRepo(b, nil)})
	if r.Status != 201 {
		b.Fatalf("%d %s", r.Status, r.Body)
	}
	project := r.Map(b)["id"].(string)
	ws := c.DefaultWorkspace()
	now := time.Now().UTC()
	ctx := context.Background()
	tx, err := app.DB.W.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	var movable []string
	for i := 0; i < cards; i++ {
		id := ids.New()
		state := states[i%len(states)]
		if _, err := tx.ExecContext(ctx, `INSERT INTO backlog_items (id, workspace_id, project_id, issue_number, title, body, url, labels, state, priority,
			created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
			id, ws, project, i+1, fmt.Sprintf("Issue %d: a title of ordinary length", i+1), "A body.", fmt.Sprintf("https://github.com/acme/web/issues/%d", i+1),
			`["bug","ui"]`, state, int64(i)*1024, now); err != nil {
			b.Fatal(err)
		}
		if state != "done" {
			movable = append(movable, id)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return c, project, movable
}

func report(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkBoard(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			c, project, _ := seed(b, e)
			path := "/api/projects/" + project + "/backlog/board"
			if r := c.Do("GET", path, nil); r.Status != 200 || len(r.Body) < 50000 {
				b.Fatalf("%d %d bytes", r.Status, len(r.Body))
			}
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				r := c.Do("GET", path, nil)
				samples = append(samples, time.Since(start))
				if r.Status != 200 {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
			report(b, samples)
		})
	}
}

func BenchmarkOrder(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			c, project, movable := seed(b, e)
			path := "/api/projects/" + project + "/backlog/order"
			plan := make([]obj, 500)
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range plan {
					plan[j] = obj{"item_id": movable[(i*500+j)%len(movable)], "priority": int64(i*1000 + j)}
				}
				start := time.Now()
				r := c.Do("PATCH", path, obj{"plan": plan})
				samples = append(samples, time.Since(start))
				if r.Status != 200 || r.Map(b)["updated"] != float64(500) {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
			report(b, samples)
		})
	}
}
