package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"slipway/internal/dispatch"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/redact"
	"slipway/internal/runs"
	"slipway/internal/workport"
)

// stamp is a handler whose jobs carry the time they were queued: Start
// reports how long the job waited.
type stamp struct{ waited chan time.Duration }

func (s stamp) Start(_ context.Context, _ *db.Tx, j *jobs.Job, _ dispatch.WorkerInfo) (*workport.Assignment, error) {
	var p struct{ At int64 }
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return nil, err
	}
	s.waited <- time.Since(time.Unix(0, p.At))
	return &workport.Assignment{Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt}, Work: workport.WorkAgent}, nil
}
func (stamp) Resume(context.Context, *jobs.Job) (*workport.Assignment, error) {
	return nil, errors.New("unused")
}
func (stamp) Finish(context.Context, *db.Tx, *jobs.Job, string, workport.Result) error {
	return nil
}
func (stamp) Interrupted(context.Context, *db.Tx, *jobs.Job, bool, string) error { return nil }

type replica struct {
	q *jobs.Queue
	d *dispatch.Dispatcher
}

func newReplica(t testing.TB, d *db.DB, h dispatch.Handler) replica {
	log := slog.New(slog.DiscardHandler)
	bus := pubsub.New(d, log)
	t.Cleanup(bus.Close)
	if err := bus.Listening(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := jobs.New(d, bus, clock.System{}, nil)
	disp := dispatch.New(d, q, runs.NewService(d, clock.System{}, redact.New(), nil, nil), nil, bus, dispatch.Config{Lease: time.Minute, Poll: time.Hour}, log) // only a notification can wake a claimer in time
	disp.Handle("stamp", workport.WorkAgent, h)
	return replica{q: q, d: disp}
}

// pickup enqueues jobs on one replica, one at a time, while the other waits
// in a claim, and returns how long each waited between its enqueue and its
// claim.
func pickup(t testing.TB, from, to replica, waited chan time.Duration, n int) []time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claimed := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			_, err := to.d.Claim(ctx, workport.ClaimRequest{Worker: "hub@b", Backend: "none", Max: 1, Wait: time.Minute})
			if err != nil && ctx.Err() == nil {
				claimed <- err
				return
			}
		}
	}()
	var out []time.Duration
	for i := 0; i < n; i++ {
		time.Sleep(time.Duration(3+i%7) * time.Millisecond) // not in step with anything
		if err := from.q.EnqueueMany(context.Background(), []jobs.NewJob{{Kind: "stamp", Payload: map[string]int64{"at": time.Now().UnixNano()}}}); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-waited:
			out = append(out, d)
		case err := <-claimed:
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatal("a job was not claimed within 10s")
		}
	}
	return out
}

// TestPickupAcrossReplicas: a job queued through one replica is claimed by
// a waiting claimer of another. The claimers poll once an hour, and a claim
// waits a minute before it looks again, so every one of these claims was
// woken by the notification.
func TestPickupAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	first := dbtest.New(t, db.Postgres)
	second := dbtest.Replica(t, first)
	waited := make(chan time.Duration, 1)
	a, b := newReplica(t, first, stamp{waited}), newReplica(t, second, stamp{waited})
	if lat := pickup(t, a, b, waited, 20); len(lat) != 20 {
		t.Fatalf("%d of 20 jobs claimed", len(lat))
	}
}

// BenchmarkPickup measures the time from a job's enqueue on one replica to
// its claim on another (PostgreSQL: two pools, two listening connections,
// as two processes have), and in one process on SQLite (bench/README.md):
//
//	go test -run XXX -bench Pickup -benchtime 200x ./internal/dispatch
func BenchmarkPickup(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			first := dbtest.New(b, e)
			second := first
			if e == db.Postgres {
				second = dbtest.Replica(b, first)
			}
			waited := make(chan time.Duration, 1)
			h := stamp{waited}
			from := newReplica(b, first, h)
			to := from
			if e == db.Postgres {
				to = newReplica(b, second, h)
			}
			b.ResetTimer()
			lat := pickup(b, from, to, waited, b.N)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "ms-p90")
		})
	}
}

// TestFleetWakesTheMatchingRunner: runners wait in long polls on a replica
// whose matchmaker runs (polling hourly: only notifications wake it); work
// enqueued (on another replica, on PostgreSQL) reaches the runner whose
// match admits it, and only that one.
func TestFleetWakesTheMatchingRunner(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		first := dbtest.New(t, e)
		second := first
		if e == db.Postgres {
			second = dbtest.Replica(t, first)
		}
		waited := make(chan time.Duration, 8)
		from := newReplica(t, first, stamp{waited})
		to := from // SQLite: one process
		if e == db.Postgres {
			to = newReplica(t, second, stamp{waited})
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go to.d.Run(ctx)
		org, ws := ids.New(), ids.New()
		now := time.Now().UTC()
		if _, err := first.W.Exec("INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)", org, now); err != nil {
			t.Fatal(err)
		}
		if _, err := first.W.Exec("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, 'w', $3)", ws, org, now); err != nil {
			t.Fatal(err)
		}
		type got struct {
			who string
			as  []workport.Assignment
		}
		results := make(chan got, 4)
		wait := func(who string, labels ...string) {
			m := &jobs.Match{OrganizationID: org, Labels: labels}
			as, err := to.d.ClaimMatching(ctx, workport.ClaimRequest{Worker: "runner@" + who, Backend: "none", Max: 1, Wait: time.Minute},
				func(context.Context) (*jobs.Match, error) { return m, nil })
			if err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			results <- got{who, as}
		}
		go wait("cpu", "linux")
		go wait("gpu", "linux", "gpu")
		time.Sleep(300 * time.Millisecond) // both wait at the replica
		if err := from.q.EnqueueMany(ctx, []jobs.NewJob{{Kind: "stamp", WorkspaceID: ws, Pool: jobs.PoolFleet, Labels: []string{"gpu"},
			Payload: map[string]int64{"at": time.Now().UnixNano()}}}); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-results:
			if r.who != "gpu" || len(r.as) != 1 {
				t.Fatalf("%s answered with %d assignments; want the gpu runner with the job", r.who, len(r.as))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the job reached no runner")
		}
		select {
		case r := <-results:
			t.Fatalf("the cpu runner answered too: %+v", r)
		case <-time.After(300 * time.Millisecond):
		}
		<-waited
	})
}
