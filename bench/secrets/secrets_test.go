// Package secrets measures what the vault costs the hot paths (issue 25,
// bench/README.md "Secrets at dispatch and db_query"):
//
//   - BenchmarkDispatchEnv: resolving a run's env vars when its work is
//     handed out (the dispatcher's withEnv): 10 env vars, 5 of them secrets
//     read from the env backend (AES-GCM, data keys cached), on SQLite and
//     PostgreSQL. Reports p50 and p99 per resolution.
//   - BenchmarkDBQueryOverhead: a db_query's path through the resources
//     service (the resource and its secret read, the pool reused, a
//     read-only transaction with its statement timeout) against the same
//     `SELECT 1` on a pool of its own. Reports p50 and p99 of both and the
//     difference.
//
// Run from the repository root (PostgreSQL on 127.0.0.1:5432):
//
//	export SERVICE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
//	go test -run '^$' -bench . -benchtime 2000x ./bench/secrets/
package secrets

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/resources"
)

type obj = map[string]any

// percentiles reports p50 and p99 of the samples under a prefix.
func percentiles(b *testing.B, prefix string, samples []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(samples)
	p50, p99 = samples[len(samples)/2], samples[len(samples)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), prefix+"p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), prefix+"p99-µs")
	return p50, p99
}

func BenchmarkDispatchEnv(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			app := apitest.New(b, e)
			c := app.Approved(app.Admin(), "Owner")
			for i := range 10 {
				body := obj{"key": fmt.Sprintf("VAR_%d", i), "value": strings.Repeat("v", 40) + fmt.Sprint(i), "is_secret": i%2 == 0}
				if r := c.Do("POST", "/api/settings/env-vars", body); r.Status != 200 {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
			env := app.Server.Services.EnvVars
			ws := c.DefaultWorkspace()
			ctx := context.Background()
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				vars, secrets, err := env.Resolve(ctx, nil, ws, "")
				samples = append(samples, time.Since(t0))
				if err != nil || len(vars) != 10 || len(secrets) != 5 {
					b.Fatalf("%d vars, %d secrets, %v", len(vars), len(secrets), err)
				}
			}
			b.StopTimer()
			percentiles(b, "resolve-", samples)
		})
	}
}

func BenchmarkDBQueryOverhead(b *testing.B) {
	admin := dbtest.RequirePostgres(b)
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			app := apitest.New(b, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
			c := app.Approved(app.Admin(), "Owner")
			u, _ := url.Parse(admin)
			port := u.Port()
			if port == "" {
				port = "5432"
			}
			r := c.Do("POST", "/api/resources", obj{"name": "Target " + ids.New(), "kind": "postgresql", "secret": "bench-password",
				"config": obj{"host": u.Hostname(), "port": 5432, "database": strings.TrimPrefix(u.Path, "/"), "user": u.User.Username(), "sslmode": "disable"}})
			if r.Status != 201 {
				b.Fatalf("%d %s", r.Status, r.Body)
			}
			id := r.Map(b)["id"].(string)
			svc := app.Server.Services.Resources
			ws := c.DefaultWorkspace()
			ctx := context.Background()
			direct, err := pgxpool.New(ctx, admin)
			if err != nil {
				b.Fatal(err)
			}
			defer direct.Close()
			st := resources.Statement{SQL: "SELECT 1 AS one"}
			// Warm both pools.
			if _, err := svc.Statement(ctx, ws, id, st); err != nil {
				b.Fatal(err)
			}
			node := make([]time.Duration, 0, b.N)
			raw := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := svc.Statement(ctx, ws, id, st); err != nil {
					b.Fatal(err)
				}
				node = append(node, time.Since(t0))
				t0 = time.Now()
				var one int
				if err := direct.QueryRow(ctx, "SELECT 1 AS one").Scan(&one); err != nil {
					b.Fatal(err)
				}
				raw = append(raw, time.Since(t0))
			}
			b.StopTimer()
			n50, n99 := percentiles(b, "node-", node)
			r50, r99 := percentiles(b, "query-", raw)
			b.ReportMetric(float64((n50 - r50).Microseconds()), "overhead-p50-µs")
			b.ReportMetric(float64((n99 - r99).Microseconds()), "overhead-p99-µs")
		})
	}
}
