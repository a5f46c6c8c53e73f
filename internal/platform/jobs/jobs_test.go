package jobs_test

// The queue's conformance suite: every test runs on SQLite and PostgreSQL
// (River's model: one suite, every driver).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
)

type harness struct {
	t     *testing.T
	db    *db.DB
	bus   *pubsub.Bus
	clock *clock.Fake
	q     *jobs.Queue
	ws    string
}

// caps is the test admission: "cap:<n>:<name>" is limited to n.
var caps = jobs.Limits{"cap": func(_ context.Context, _ db.Queryer, id string) (int, bool, error) {
	var n int
	var name string
	if _, err := fmt.Sscanf(id, "%d:%s", &n, &name); err != nil {
		return 0, false, err
	}
	return n, true, nil
}}

func newHarness(t *testing.T, e db.Engine) *harness {
	t.Helper()
	d := dbtest.New(t, e)
	bus := pubsub.New(d, slog.New(slog.DiscardHandler))
	t.Cleanup(bus.Close)
	if err := bus.Listening(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	h := &harness{t: t, db: d, bus: bus, clock: clk, q: jobs.New(d, bus, clk, caps), ws: ids.New()}
	now := clk.Now()
	if _, err := d.W.Exec("INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)", h.ws, now); err != nil {
		t.Fatal(err)
	}
	if _, err := d.W.Exec("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $1, 'w', $2)", h.ws, now); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) enqueue(n jobs.NewJob) *jobs.Job {
	h.t.Helper()
	if n.WorkspaceID == "" {
		n.WorkspaceID = h.ws
	}
	var j *jobs.Job
	err := h.db.Tx(context.Background(), func(tx *db.Tx) error {
		var err error
		j, err = h.q.Enqueue(context.Background(), tx, n)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

func (h *harness) claim(owner string, max int, kinds ...string) []*jobs.Job {
	h.t.Helper()
	if len(kinds) == 0 {
		kinds = []string{"k"}
	}
	js, err := h.q.Claim(context.Background(), jobs.ClaimRequest{Kinds: kinds, Owner: owner, Max: max, Lease: time.Minute}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return js
}

func (h *harness) tx(fn func(tx *db.Tx) error) error {
	return h.db.Tx(context.Background(), fn)
}

func (h *harness) state(id string) *jobs.Job {
	h.t.Helper()
	j, err := h.q.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

func jsonEqual(got []byte, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && reflect.DeepEqual(a, b)
}

func idsOf(js []*jobs.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

func TestEnqueueAndClaimInOrder(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		var want []string
		for i := 0; i < 5; i++ {
			want = append(want, h.enqueue(jobs.NewJob{Kind: "k", Payload: map[string]int{"n": i}}).ID)
			h.clock.Advance(time.Millisecond)
		}
		other := h.enqueue(jobs.NewJob{Kind: "other"})
		later := h.enqueue(jobs.NewJob{Kind: "k", RunAt: h.clock.Now().Add(time.Hour)})

		got := h.claim("w1", 3)
		if !slices.Equal(idsOf(got), want[:3]) {
			t.Fatalf("claimed %v, want the three oldest %v", idsOf(got), want[:3])
		}
		j := got[0]
		if j.State != jobs.Running || j.Attempt != 1 || j.LockedBy != "w1" || j.LockedUntil == nil ||
			!j.LockedUntil.Equal(h.clock.Now().Add(time.Minute)) || !jsonEqual(j.Payload, `{"n":0}`) || j.WorkspaceID != h.ws {
			t.Fatalf("claimed job = %+v", j)
		}
		if got := h.claim("w2", 10); !slices.Equal(idsOf(got), want[3:]) {
			t.Fatalf("second claim %v, want %v (not the other kind, not the scheduled one)", idsOf(got), want[3:])
		}
		if got := h.claim("w2", 10); len(got) != 0 {
			t.Fatalf("claimed %v from an empty queue", idsOf(got))
		}
		if got := h.claim("w2", 10, "k", "other"); !slices.Equal(idsOf(got), []string{other.ID}) {
			t.Fatalf("claim of two kinds = %v", idsOf(got))
		}
		h.clock.Advance(time.Hour)
		if got := h.claim("w2", 10); !slices.Equal(idsOf(got), []string{later.ID}) {
			t.Fatalf("the scheduled job was not claimable once due: %v", idsOf(got))
		}
		if got := h.claim("w2", 0); got != nil {
			t.Fatal("a claim of zero took jobs")
		}
	})
}

// TestClaimsAreExactlyOnce: many claimers race for many jobs; each job is
// claimed once.
func TestClaimsAreExactlyOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		const n = 400
		batch := make([]jobs.NewJob, n)
		for i := range batch {
			batch[i] = jobs.NewJob{Kind: "k", WorkspaceID: h.ws}
		}
		if err := h.q.EnqueueMany(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		// A second pool on PostgreSQL plays another replica.
		queues := []*jobs.Queue{h.q}
		if e == db.Postgres {
			d2, err := db.Open(context.Background(), h.db.Target)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d2.Close() })
			queues = append(queues, jobs.New(d2, h.bus, h.clock, caps))
		}
		var mu sync.Mutex
		seen := map[string]string{}
		var wg sync.WaitGroup
		var failed error
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				q := queues[w%len(queues)]
				owner := fmt.Sprintf("w%d", w)
				for {
					js, err := q.Claim(context.Background(), jobs.ClaimRequest{Kinds: []string{"k"}, Owner: owner, Max: 7, Lease: time.Minute}, nil)
					mu.Lock()
					if err != nil {
						failed = err
					}
					for _, j := range js {
						if prev, dup := seen[j.ID]; dup {
							failed = fmt.Errorf("job %s claimed by %s and %s", j.ID, prev, owner)
						}
						seen[j.ID] = owner
					}
					mu.Unlock()
					if len(js) == 0 || err != nil {
						return
					}
				}
			}(w)
		}
		wg.Wait()
		if failed != nil {
			t.Fatal(failed)
		}
		if len(seen) != n {
			t.Fatalf("%d of %d jobs claimed", len(seen), n)
		}
	})
}

func TestLeases(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		j := h.enqueue(jobs.NewJob{Kind: "k", MaxAttempts: 2})
		c := h.claim("w1", 1)[0]
		l := c.Lease()
		if l != (jobs.Lease{JobID: j.ID, Owner: "w1", Attempt: 1}) {
			t.Fatalf("lease = %+v", l)
		}
		h.clock.Advance(50 * time.Second)
		if cancel, err := h.q.Extend(ctx, l, time.Minute); err != nil || cancel {
			t.Fatalf("extend = %v, %v", cancel, err)
		}
		if got := h.state(j.ID); !got.LockedUntil.Equal(h.clock.Now().Add(time.Minute)) {
			t.Fatalf("locked until %v", got.LockedUntil)
		}
		wrong := l
		wrong.Owner = "w2"
		if _, err := h.q.Extend(ctx, wrong, time.Minute); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("another owner extended: %v", err)
		}

		// Expired: the rescuer puts it back and tells the caller.
		h.clock.Advance(2 * time.Minute)
		var interrupted []string
		n, err := h.q.Rescue(ctx, jobs.Requeue("holder gone"), func(_ context.Context, _ *db.Tx, j *jobs.Job, final bool, _ string) error {
			interrupted = append(interrupted, fmt.Sprintf("%s final=%v state=%s", j.ID, final, j.State))
			return nil
		})
		if err != nil || n != 1 || !slices.Equal(interrupted, []string{j.ID + " final=false state=available"}) {
			t.Fatalf("rescue = %d %v %v", n, interrupted, err)
		}
		if got := h.state(j.ID); got.State != jobs.Available || got.LastError != "holder gone" || got.LockedBy != "" {
			t.Fatalf("rescued job = %+v", got)
		}
		// The old holder's lease no longer works, not even to complete.
		if _, err := h.q.Extend(ctx, l, time.Minute); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("extend after rescue: %v", err)
		}
		// Claimed again by the same owner: the old lease (attempt 1) still
		// cannot touch the new claim (attempt 2).
		again := h.claim("w1", 1)[0]
		if again.Attempt != 2 {
			t.Fatalf("attempt = %d", again.Attempt)
		}
		if err := h.tx(func(tx *db.Tx) error { _, err := h.q.Complete(ctx, tx, l); return err }); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("a stale lease completed the job: %v", err)
		}
		// Out of attempts: the rescuer fails it for good.
		h.clock.Advance(2 * time.Minute)
		n, err = h.q.Rescue(ctx, jobs.Requeue("gone again"), func(_ context.Context, _ *db.Tx, j *jobs.Job, final bool, _ string) error {
			if !final || j.State != jobs.Failed {
				t.Errorf("second rescue: final=%v state=%s", final, j.State)
			}
			return nil
		})
		if err != nil || n != 1 {
			t.Fatalf("rescue = %d, %v", n, err)
		}
		if got := h.state(j.ID); got.State != jobs.Failed || got.FinishedAt == nil {
			t.Fatalf("job out of attempts = %+v", got)
		}

		// A live lease is never rescued.
		live := h.enqueue(jobs.NewJob{Kind: "k"})
		h.claim("w3", 1)
		h.clock.Advance(30 * time.Second)
		if n, err := h.q.Rescue(ctx, jobs.Requeue("x"), nil); err != nil || n != 0 {
			t.Fatalf("rescued a live lease: %d %v", n, err)
		}
		if got := h.state(live.ID); got.State != jobs.Running {
			t.Fatalf("live job = %s", got.State)
		}

		// A restarted holder takes back what it held, expired or not, and
		// the rescuer then leaves it alone; another owner's jobs stay put.
		h.clock.Advance(5 * time.Minute) // w3's lease on live expired
		other := h.enqueue(jobs.NewJob{Kind: "k"})
		h.claim("w4", 1)
		held, err := h.q.Held(ctx, "w3", time.Minute)
		if err != nil || len(held) != 1 || held[0].ID != live.ID || !held[0].LockedUntil.Equal(h.clock.Now().Add(time.Minute)) {
			t.Fatalf("held = %+v, %v", held, err)
		}
		h.clock.Advance(30 * time.Second)
		if n, err := h.q.Rescue(ctx, jobs.Requeue("x"), nil); err != nil || n != 0 {
			t.Fatalf("rescued work its restarted holder took back: %d %v", n, err)
		}
		if got := h.state(other.ID); got.LockedBy != "w4" {
			t.Fatalf("another owner's job = %+v", got)
		}
	})
}

func TestFinishing(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		a := h.enqueue(jobs.NewJob{Kind: "k", Ref: "same"})
		// One unfinished job per kind and ref.
		err := h.tx(func(tx *db.Tx) error {
			_, err := h.q.Enqueue(ctx, tx, jobs.NewJob{Kind: "k", Ref: "same", WorkspaceID: h.ws})
			return err
		})
		if !errors.Is(err, jobs.ErrDuplicate) {
			t.Fatalf("a second unfinished job for one ref: %v", err)
		}
		b := h.enqueue(jobs.NewJob{Kind: "k", MaxAttempts: 2})
		c := h.enqueue(jobs.NewJob{Kind: "k"})
		claimed := h.claim("w", 3)
		byID := map[string]jobs.Lease{}
		for _, j := range claimed {
			byID[j.ID] = j.Lease()
		}
		if err := h.tx(func(tx *db.Tx) error { _, err := h.q.Complete(ctx, tx, byID[a.ID]); return err }); err != nil {
			t.Fatal(err)
		}
		if got := h.state(a.ID); got.State != jobs.Completed || got.FinishedAt == nil || got.LockedUntil != nil {
			t.Fatalf("completed = %+v", got)
		}
		// Finished: the ref may have a new job.
		h.enqueue(jobs.NewJob{Kind: "k", Ref: "same"})

		// Retry without charge gives the attempt back; with charge it
		// counts, and out of attempts it fails.
		var final bool
		retry := func(l jobs.Lease, reason string, delay time.Duration, charge bool) error {
			return h.tx(func(tx *db.Tx) error {
				j, err := h.q.Retry(ctx, tx, l, reason, delay, charge)
				final = err == nil && j.State == jobs.Failed
				return err
			})
		}
		if err := retry(byID[b.ID], "shutdown", 0, false); err != nil || final {
			t.Fatalf("retry = %v, %v", final, err)
		}
		if got := h.state(b.ID); got.State != jobs.Available || got.Attempt != 0 || got.LastError != "shutdown" {
			t.Fatalf("retried without charge = %+v", got)
		}
		for i := 1; i <= 2; i++ {
			var j *jobs.Job
			for _, x := range h.claim("w", 5) {
				if x.ID == b.ID {
					j = x
				}
			}
			if j == nil {
				t.Fatalf("round %d: the retried job was not claimable", i)
			}
			if err := retry(j.Lease(), "crashed", time.Second, true); err != nil || final != (i == 2) {
				t.Fatalf("round %d: final=%v err=%v", i, final, err)
			}
			h.clock.Advance(time.Second)
		}
		if got := h.state(b.ID); got.State != jobs.Failed {
			t.Fatalf("out of attempts = %+v", got)
		}
		// Retry with a delay: not claimable before it.
		d := h.enqueue(jobs.NewJob{Kind: "later"})
		dl := h.claim("w", 1, "later")[0].Lease()
		if err := retry(dl, "busy", jobs.Backoff(1), true); err != nil {
			t.Fatal(err)
		}
		if got := h.claim("w", 1, "later"); len(got) != 0 {
			t.Fatal("claimed before its backoff")
		}
		h.clock.Advance(2 * time.Second)
		if got := h.claim("w", 1, "later"); len(got) != 1 || got[0].ID != d.ID {
			t.Fatal("not claimable after its backoff")
		}
		if err := h.tx(func(tx *db.Tx) error { _, err := h.q.Fail(ctx, tx, byID[c.ID], "broken"); return err }); err != nil {
			t.Fatal(err)
		}
		if got := h.state(c.ID); got.State != jobs.Failed || got.LastError != "broken" {
			t.Fatalf("failed = %+v", got)
		}
		// Finished jobs are pruned after their age.
		h.clock.Advance(48 * time.Hour)
		if n, err := h.q.Prune(ctx, 24*time.Hour); err != nil || n != 3 {
			t.Fatalf("pruned %d, %v", n, err)
		}
	})
}

func TestCompleteMany(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		batch := make([]jobs.NewJob, 700)
		for i := range batch {
			batch[i] = jobs.NewJob{Kind: "k"}
		}
		if err := h.q.EnqueueMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		claimed := h.claim("w", 700)
		var ls []jobs.Lease
		for _, j := range claimed {
			ls = append(ls, j.Lease())
		}
		stale := ls[0]
		stale.Attempt = 7
		ls[0] = stale
		n, err := h.q.CompleteMany(ctx, ls)
		if err != nil || n != 699 {
			t.Fatalf("completed %d of 700 (one stale lease), %v", n, err)
		}
		if got := h.state(claimed[0].ID); got.State != jobs.Running {
			t.Fatalf("the job with the stale lease is %s", got.State)
		}
		if got := h.state(claimed[1].ID); got.State != jobs.Completed {
			t.Fatalf("a completed job is %s", got.State)
		}
	})
}

func TestCancel(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		control := h.bus.Subscribe(jobs.TopicControl)
		queued := h.enqueue(jobs.NewJob{Kind: "k", Ref: "q"})
		running := h.enqueue(jobs.NewJob{Kind: "k", Ref: "r"})
		h.claim("w", 1) // the older one: queued
		_ = queued
		// Make "r" the running one and "q" the waiting one.
		if err := h.tx(func(tx *db.Tx) error { _, err := h.q.Complete(ctx, tx, h.state(queued.ID).Lease()); return err }); err != nil {
			t.Fatal(err)
		}
		run := h.claim("w", 1)[0]
		if run.ID != running.ID {
			t.Fatal("setup")
		}
		waiting := h.enqueue(jobs.NewJob{Kind: "k", Ref: "w"})

		cancel := func(ref string, ws string) string {
			var st string
			if err := h.tx(func(tx *db.Tx) (err error) {
				st, err = h.q.Cancel(ctx, tx, ws, "k", ref)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return st
		}
		if st := cancel("w", ids.New()); st != "" {
			t.Fatalf("another workspace's cancel found the job: %q", st)
		}
		if st := cancel("w", h.ws); st != jobs.Available {
			t.Fatalf("cancel of the waiting job: %q", st)
		}
		if got := h.state(waiting.ID); got.State != jobs.Cancelled {
			t.Fatalf("waiting job = %s", got.State)
		}
		if got := h.claim("w", 5); len(got) != 0 {
			t.Fatal("a cancelled job was claimed")
		}
		if st := cancel("r", h.ws); st != jobs.Running {
			t.Fatalf("cancel of the running job: %q", st)
		}
		select {
		case m := <-control.C:
			if m.Payload != "cancel "+run.ID {
				t.Fatalf("control message %+v", m)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no control message for the running job")
		}
		if c, err := h.q.Extend(ctx, run.Lease(), time.Minute); err != nil || !c {
			t.Fatalf("extend after cancel = %v, %v (want cancel requested)", c, err)
		}
		if st := cancel("nope", h.ws); st != "" {
			t.Fatalf("cancel of nothing: %q", st)
		}
	})
}

// TestCapsHoldUnderConcurrency: jobs with keys never run beyond their
// limits, even with many claimers at once, and a capped key with a long
// queue does not starve the jobs behind it.
func TestCapsHoldUnderConcurrency(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		var batch []jobs.NewJob
		// 300 jobs of a key capped at 2 first, then 20 of another capped at 3,
		// then 10 uncapped.
		for i := 0; i < 300; i++ {
			batch = append(batch, jobs.NewJob{Kind: "k", Keys: []string{"cap:2:a", "ws:x"}})
		}
		for i := 0; i < 20; i++ {
			batch = append(batch, jobs.NewJob{Kind: "k", Keys: []string{"cap:3:b"}})
		}
		for i := 0; i < 10; i++ {
			batch = append(batch, jobs.NewJob{Kind: "k"})
		}
		if err := h.q.EnqueueMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var all []*jobs.Job
		var wg sync.WaitGroup
		for w := 0; w < 6; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				js, err := h.q.Claim(ctx, jobs.ClaimRequest{Kinds: []string{"k"}, Owner: fmt.Sprint(w), Max: 50, Lease: time.Minute}, nil)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				all = append(all, js...)
				mu.Unlock()
			}(w)
		}
		wg.Wait()
		count := map[string]int{}
		for _, j := range all {
			for _, k := range j.Keys {
				count[k]++
			}
			if len(j.Keys) == 0 {
				count["none"]++
			}
		}
		if count["cap:2:a"] != 2 || count["cap:3:b"] != 3 || count["none"] != 10 {
			t.Fatalf("running per key %v, want a:2 b:3 and all 10 uncapped", count)
		}
		// Completing one frees exactly one slot of its key.
		var freed *jobs.Job
		for _, j := range all {
			if slices.Contains(j.Keys, "cap:3:b") {
				freed = j
				break
			}
		}
		if err := h.tx(func(tx *db.Tx) error { _, err := h.q.Complete(ctx, tx, freed.Lease()); return err }); err != nil {
			t.Fatal(err)
		}
		got := h.claim("w", 50)
		if len(got) != 1 || !slices.Contains(got[0].Keys, "cap:3:b") {
			t.Fatalf("after one completion claimed %d jobs (%v)", len(got), got)
		}
	})
}

func TestStartInsideTheClaim(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		keep := h.enqueue(jobs.NewJob{Kind: "k"})
		drop := h.enqueue(jobs.NewJob{Kind: "k"})
		req := jobs.ClaimRequest{Kinds: []string{"k"}, Owner: "w", Max: 5, Lease: time.Minute}
		// An error rolls the whole claim back.
		boom := errors.New("boom")
		_, err := h.q.Claim(ctx, req, func(context.Context, *db.Tx, *jobs.Job) (bool, error) { return false, boom })
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if got := h.state(keep.ID); got.State != jobs.Available || got.Attempt != 0 {
			t.Fatalf("after a failed start: %+v", got)
		}
		got, err := h.q.Claim(ctx, req, func(_ context.Context, tx *db.Tx, j *jobs.Job) (bool, error) {
			// The start sees the claim in its transaction.
			var st string
			if err := tx.QueryRowContext(ctx, "SELECT state FROM jobs WHERE id = $1", j.ID).Scan(&st); err != nil || st != jobs.Running {
				return false, fmt.Errorf("state in the claim: %q %v", st, err)
			}
			return j.ID == keep.ID, nil
		})
		if err != nil || !slices.Equal(idsOf(got), []string{keep.ID}) {
			t.Fatalf("claimed %v, %v", idsOf(got), err)
		}
		if got := h.state(drop.ID); got.State != jobs.Cancelled {
			t.Fatalf("dropped job = %s", got.State)
		}
	})
}

func TestWakeUps(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		sub := h.bus.Subscribe(jobs.TopicQueued)
		next := func(what string) {
			t.Helper()
			select {
			case m := <-sub.C:
				if m.Payload != "k" {
					t.Fatalf("%s: woke with %+v", what, m)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: no wake-up", what)
			}
		}
		h.enqueue(jobs.NewJob{Kind: "k", Keys: []string{"cap:1:a"}})
		next("enqueue")
		j := h.claim("w", 1)[0]
		// A capped job finishing frees a slot: claimers wake.
		if err := h.tx(func(tx *db.Tx) error { _, err := h.q.Complete(ctx, tx, j.Lease()); return err }); err != nil {
			t.Fatal(err)
		}
		next("a slot freed")
		held, err := h.q.Held(ctx, "w", time.Minute)
		if err != nil || len(held) != 0 {
			t.Fatalf("held = %v, %v", held, err)
		}
	})
}

// BenchmarkClaimComplete measures the bare queue: workers claim jobs in
// batches and complete them in batches (bench/README.md). Jobs are queued
// beforehand; the figure is claimed-and-completed jobs per second.
//
//	go test -run XXX -bench ClaimComplete -benchtime 50000x ./internal/platform/jobs
func BenchmarkClaimComplete(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			d := dbtest.New(b, e)
			bus := pubsub.New(d, slog.New(slog.DiscardHandler))
			b.Cleanup(bus.Close)
			q := jobs.New(d, bus, clock.System{}, nil)
			ctx := context.Background()
			batch := make([]jobs.NewJob, 0, 1000)
			for i := 0; i < b.N; i++ {
				batch = append(batch, jobs.NewJob{Kind: "bench", Payload: map[string]int{"n": i}})
				if len(batch) == cap(batch) || i == b.N-1 {
					if err := q.EnqueueMany(ctx, batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			workers := 2
			if e == db.SQLite {
				workers = 1 // one writer
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			var mu sync.Mutex
			done := 0
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					owner := fmt.Sprintf("bench-%d", w)
					for {
						js, err := q.Claim(ctx, jobs.ClaimRequest{Kinds: []string{"bench"}, Owner: owner, Max: 200, Lease: time.Minute}, nil)
						if err != nil {
							b.Error(err)
							return
						}
						if len(js) == 0 {
							return
						}
						ls := make([]jobs.Lease, len(js))
						for i, j := range js {
							ls[i] = j.Lease()
						}
						n, err := q.CompleteMany(ctx, ls)
						if err != nil || n != len(ls) {
							b.Errorf("completed %d of %d: %v", n, len(ls), err)
							return
						}
						mu.Lock()
						done += n
						mu.Unlock()
					}
				}(w)
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if done != b.N {
				b.Fatalf("%d of %d jobs done", done, b.N)
			}
			b.ReportMetric(float64(done)/elapsed.Seconds(), "jobs/s")
		})
	}
}

// A cancel that waits on a claim in progress (the claim's transaction
// holds the job's row) asks the now running job to stop: it is not lost
// to the job having been available when the cancel began.
func TestCancelDuringClaim(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		j := h.enqueue(jobs.NewJob{Kind: "k", Ref: "r"})
		inClaim, release := make(chan struct{}), make(chan struct{})
		claimed := make(chan error, 1)
		go func() {
			_, err := h.q.Claim(ctx, jobs.ClaimRequest{Kinds: []string{"k"}, Owner: "w", Max: 1, Lease: time.Minute},
				func(context.Context, *db.Tx, *jobs.Job) (bool, error) {
					close(inClaim)
					<-release
					return true, nil
				})
			claimed <- err
		}()
		<-inClaim
		cancelled := make(chan string, 1)
		go func() {
			var st string
			err := h.tx(func(tx *db.Tx) (err error) {
				st, err = h.q.Cancel(ctx, tx, h.ws, "k", "r")
				return err
			})
			if err != nil {
				t.Error(err)
			}
			cancelled <- st
		}()
		time.Sleep(100 * time.Millisecond) // the cancel is waiting on the claim (or, on SQLite, on the write lock)
		close(release)
		if err := <-claimed; err != nil {
			t.Fatal(err)
		}
		if st := <-cancelled; st != jobs.Running {
			t.Fatalf("cancel during a claim saw %q", st)
		}
		stop, err := h.q.Extend(ctx, h.state(j.ID).Lease(), time.Minute)
		if err != nil || !stop {
			t.Fatalf("the claimed job was not asked to stop: %v %v", stop, err)
		}
	})
}
