// Package marketplace measures the catalog's search (issue 30,
// bench/README.md "Marketplace search"), on SQLite and PostgreSQL, through
// real HTTP: GET /api/marketplace/items?q=<word> over 10,000 items (half
// of them another workspace's, verified; a fifth of those unlisted or
// unverified) with a text query that matches four in a hundred (two of them visible),
// reporting p50 and p99 per request. Run from the repository root
// (PostgreSQL on 127.0.0.1:5432):
//
//	export SERVICE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
//	go test -run '^$' -bench . -benchtime 300x ./bench/marketplace/
package marketplace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

const items = 10000

var words = []string{"deploy", "slack", "invoice", "backup", "lint", "translate", "resize", "notify", "scrape", "summarise"}

func seed(b *testing.B, e db.Engine) *apitest.Client {
	b.Helper()
	if e == db.Postgres {
		dbtest.RequirePostgres(b)
	}
	app := apitest.New(b, e)
	admin := app.Admin()
	buyer := app.Approved(admin, "Buyer")
	seller := app.Approved(admin, "Seller")
	ws, other := buyer.DefaultWorkspace(), seller.DefaultWorkspace()
	ctx := context.Background()
	now := time.Now().UTC()
	tx, err := app.DB.W.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	sources := map[string]string{ws: ids.New(), other: ids.New()}
	for w, src := range sources {
		exec(`INSERT INTO marketplace_sources (id, workspace_id, kind, name, grants, status, created_at, updated_at)
			VALUES ($1, $2, 'workspace', 'Published here', '[]', 'enabled', $3, $3)`, src, w, now)
	}
	for i := 0; i < items; i++ {
		owner := ws
		if i%2 == 1 {
			owner = other
		}
		name := fmt.Sprintf("%s helper %d", words[i%len(words)], i)
		if k := i % 100; k == 7 || k == 8 || k == 15 || k == 25 {
			name = fmt.Sprintf("Quasar %d", i) // the rare word the query looks for
		}
		summary := "A script that " + words[(i+3)%len(words)] + "s what it is given and prints the result as JSON."
		slug := fmt.Sprintf("item-%d", i)
		search := strings.ToLower(slug + " " + name + " " + summary + " tools")
		exec(`INSERT INTO marketplace_items (id, source_id, workspace_id, kind, slug, name, summary, tags, paid, verified, listed, latest_version, search,
			created_at, updated_at) VALUES ($1, $2, $3, 'script', $4, $5, $6, '["tools"]', false, $7, $8, '1.0.0', $9, $10, $10)`,
			ids.New(), sources[owner], owner, slug, name, summary, i%5 != 0, i%10 != 5, search, now.Add(-time.Duration(i)*time.Second))
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return buyer
}

func BenchmarkMarketplaceSearch(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			c := seed(b, e)
			path := "/api/marketplace/items?q=quasar"
			r := c.Do("GET", path, nil)
			var first struct {
				Items []any
				Total int
			}
			r.JSON(b, &first)
			// 400 items say quasar: the buyer's 100 and the seller's 300,
			// of which 100 are verified and listed (the others it does not
			// see).
			if r.Status != 200 || first.Total != 200 || len(first.Items) != 50 {
				b.Fatalf("%d total %d, %d items", r.Status, first.Total, len(first.Items))
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
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
