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
	"fmt"
	"slices"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/billing"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
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

// BenchmarkSeatSummary answers GET /organization/seat-summary over real
// HTTP for an organization of 1,000 members (50 suspended, 200 on the Pro
// seat, 100 on Reviewer) on the Team plan. Reports p50 and p99 per answer.
func BenchmarkSeatSummary(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			app := apitest.New(b, e)
			admin := app.Admin()
			c := app.Approved(admin, "Owner")
			org := c.Do("GET", "/organization", nil).Map(b)["id"].(string)
			if r := admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "team"}); r.Status != 200 {
				b.Fatalf("%d %s", r.Status, r.Body)
			}
			ctx := context.Background()
			now := time.Now().UTC()
			err := app.DB.Tx(ctx, func(tx *db.Tx) error {
				for i := range 999 {
					id := ids.New()
					if _, err := tx.ExecContext(ctx, `INSERT INTO users (id, email, display_name, approved, created_at, updated_at)
						VALUES ($1, $2, $3, TRUE, $4, $4)`, id, fmt.Sprintf("member%d@bench.test", i), fmt.Sprintf("Member %d", i), now); err != nil {
						return err
					}
					var suspended *time.Time
					if i < 50 {
						suspended = &now
					}
					if _, err := tx.ExecContext(ctx, `INSERT INTO organization_members (organization_id, user_id, role, created_at, suspended_at)
						VALUES ($1, $2, 'member', $3, $4)`, org, id, now, suspended); err != nil {
						return err
					}
					seat := map[bool]string{true: "pro", false: "reviewer"}[i%3 == 0]
					if i%3 != 2 && i < 450 {
						if _, err := tx.ExecContext(ctx, `INSERT INTO member_seats (organization_id, user_id, seat_type, updated_at) VALUES ($1, $2, $3, $4)`,
							org, id, seat, now); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				r := c.Do("GET", "/organization/seat-summary", nil)
				samples = append(samples, time.Since(t0))
				if r.Status != 200 {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
			b.StopTimer()
			var s billing.SeatSummary
			r := c.Do("GET", "/organization/seat-summary", nil)
			r.JSON(b, &s)
			if s.ActiveMembers != 950 || s.SuspendedMembers != 50 {
				b.Fatalf("summary: %+v", s)
			}
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
