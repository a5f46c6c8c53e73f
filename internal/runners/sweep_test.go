package runners_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/internal/runnerapi"
	"slipway/internal/runners"
)

// TestStaleSweep: a runner whose heartbeat is older than the stale window
// stops being eligible, the sweep takes it offline and ends its leases, and
// unlabelled fleet work nobody can take any more falls back to the hub (not
// under fleet_only; labelled work waits for a runner). A fresh heartbeat
// brings it back.
func TestStaleSweep(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		for _, fleetOnly := range []bool{false, true} {
			d := dbtest.New(t, e)
			ctx := context.Background()
			log := slog.New(slog.DiscardHandler)
			bus := pubsub.New(d, log)
			t.Cleanup(bus.Close)
			clk := clock.NewFake(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
			q := jobs.New(d, bus, clk, nil)
			svc := runners.NewService(d, clk, runners.Config{Secret: []byte("0123456789abcdef0123456789abcdef"), Stale: 45 * time.Second,
				HubMode: true, FleetOnly: fleetOnly, Lease: 5 * time.Second}, nil, q, bus, log, nil)
			ws := fixture.Workspace(t, d)
			id := ids.New()
			if _, err := d.W.Exec(`INSERT INTO runners (id, organization_id, name, class, created_at, updated_at) VALUES ($1, $2, 'r', 'static', $3, $3)`,
				id, ws.OrganizationID, clk.Now()); err != nil {
				t.Fatal(err)
			}
			who := &runners.Identity{RunnerID: id, OrganizationID: ws.OrganizationID, Class: runners.ClassStatic}
			if _, err := svc.Heartbeat(ctx, who, runnerapi.Heartbeat{Labels: []string{"gpu"}, Version: "t", Backend: "process", Slots: 1}); err != nil {
				t.Fatal(err)
			}
			eligible := func() int {
				n, err := svc.Eligible(ctx, d.R, ws.ID, []string{"gpu"})
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			if eligible() != 1 {
				t.Fatal("a fresh runner is not eligible")
			}
			enqueue := func(labels ...string) *jobs.Job {
				var j *jobs.Job
				if err := d.Tx(ctx, func(tx *db.Tx) error {
					var err error
					j, err = q.Enqueue(ctx, tx, jobs.NewJob{Kind: "k", WorkspaceID: ws.ID, Pool: jobs.PoolFleet, Labels: labels})
					return err
				}); err != nil {
					t.Fatal(err)
				}
				return j
			}
			held := enqueue("gpu")
			m, err := svc.Match(ctx, id)
			if err != nil || m == nil {
				t.Fatalf("match = %v, %v", m, err)
			}
			got, err := q.Claim(ctx, jobs.ClaimRequest{Kinds: []string{"k"}, Owner: runnerapi.Owner(id), Max: 5, Lease: 5 * time.Second, Match: m}, nil)
			if err != nil || len(got) != 1 || got[0].ID != held.ID {
				t.Fatalf("claim = %v, %v", got, err)
			}
			waiting, labelled := enqueue(), enqueue("gpu")

			// 44 s: still fresh. 46 s: stale, though nobody swept yet.
			clk.Advance(44 * time.Second)
			if _, err := q.Extend(ctx, got[0].Lease(), time.Hour); err != nil {
				t.Fatal(err)
			}
			if eligible() != 1 {
				t.Fatal("a runner within its stale window is not eligible")
			}
			clk.Advance(2 * time.Second)
			if eligible() != 0 {
				t.Fatal("a stale runner is still eligible")
			}
			if m, err := svc.Match(ctx, id); err != nil || m != nil {
				t.Fatalf("a stale runner may still claim: %+v, %v", m, err)
			}
			n, err := svc.Sweep(ctx)
			if err != nil || n != 1 {
				t.Fatalf("sweep = %d, %v", n, err)
			}
			if j, _ := q.Get(ctx, held.ID); j.State != jobs.Running || j.LockedUntil == nil || j.LockedUntil.After(clk.Now()) {
				t.Fatalf("the offline runner's lease was not ended: %+v", j)
			}
			j, _ := q.Get(ctx, waiting.ID)
			if want := map[bool]string{false: jobs.PoolLocal, true: jobs.PoolFleet}[fleetOnly]; j.Pool != want {
				t.Fatalf("fleet_only=%v: waiting work is in pool %q, want %q", fleetOnly, j.Pool, want)
			}
			// Labelled work never falls back: the hub advertises no labels.
			if j, _ := q.Get(ctx, labelled.ID); j.Pool != jobs.PoolFleet {
				t.Fatalf("fleet_only=%v: labelled waiting work moved to pool %q", fleetOnly, j.Pool)
			}
			if n, err := svc.Sweep(ctx); err != nil || n != 0 {
				t.Fatalf("a second sweep = %d, %v", n, err)
			}
			if _, err := svc.Heartbeat(ctx, who, runnerapi.Heartbeat{Labels: []string{"gpu"}, Version: "t", Backend: "process", Slots: 1}); err != nil {
				t.Fatal(err)
			}
			if eligible() != 1 {
				t.Fatal("a heartbeat did not bring the runner back")
			}
		}
	})
}
