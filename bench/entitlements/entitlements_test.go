// Package entitlements measures what the plan's limits cost the hot path
// (issue 26, bench/README.md "Entitlement checks"): the check a new
// workflow run makes (runs.concurrent) inside the transaction that creates
// it, on SQLite and PostgreSQL.
//
//   - unlimited: the organization's plan leaves the count unlimited (the
//     Community default): the decision comes from memory, no query.
//   - limited: a plan with a limit: the decision from memory, then the
//     workspace's row lock and its unfinished runs counted (an index).
//
// Reports p50 and p99 per check. Run from the repository root (PostgreSQL
// on 127.0.0.1:5432):
//
//	export SERVICE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
//	go test -run '^$' -bench . -benchtime 5000x ./bench/entitlements/
package entitlements

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/billing"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type obj = map[string]any

var errRollback = errors.New("rollback")

func BenchmarkRunCheck(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		for _, plan := range []string{"unlimited", "limited"} {
			b.Run(string(e)+"/"+plan, func(b *testing.B) {
				if e == db.Postgres {
					dbtest.RequirePostgres(b)
				}
				app := apitest.New(b, e)
				admin := app.Admin()
				c := app.Approved(admin, "Owner")
				if plan == "limited" {
					org := c.Do("GET", "/organization", nil).Map(b)["id"].(string)
					if r := admin.Do("PUT", "/api/admin/plans/team", obj{"entitlements": obj{"runs.concurrent": 1000}}); r.Status != 200 {
						b.Fatalf("%d %s", r.Status, r.Body)
					}
					if r := admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "team"}); r.Status != 200 {
						b.Fatalf("%d %s", r.Status, r.Body)
					}
				}
				bill, d := app.Server.Services.Billing, app.DB
				subj := billing.Subject{WorkspaceID: c.DefaultWorkspace()}
				ctx := context.Background()
				samples := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					err := d.Tx(ctx, func(tx *db.Tx) error {
						t0 := time.Now()
						err := bill.Check(ctx, tx, subj, "runs.concurrent", 1)
						samples = append(samples, time.Since(t0))
						if err != nil {
							return err
						}
						return errRollback
					})
					if !errors.Is(err, errRollback) {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				slices.Sort(samples)
				b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1000, "check-p50-µs")
				b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds())/1000, "check-p99-µs")
			})
		}
	}
}
