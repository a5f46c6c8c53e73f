package jobs_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
)

func (h *harness) claimMatching(owner string, m *jobs.Match) []*jobs.Job {
	h.t.Helper()
	js, err := h.q.Claim(context.Background(), jobs.ClaimRequest{Kinds: []string{"k"}, Owner: owner, Max: 100, Lease: time.Minute, Match: m}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return js
}

// workspace adds a workspace to an organization (a new one when org is "").
func (h *harness) workspace(org string) (ws, orgID string) {
	h.t.Helper()
	now := h.clock.Now()
	if org == "" {
		org = ids.New()
		if _, err := h.db.W.Exec("INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)", org, now); err != nil {
			h.t.Fatal(err)
		}
	}
	ws = ids.New()
	if _, err := h.db.W.Exec("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, 'w', $3)", ws, org, now); err != nil {
		h.t.Fatal(err)
	}
	return ws, org
}

func sortedIDs(js []*jobs.Job) []string {
	out := idsOf(js)
	sort.Strings(out)
	return out
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	sort.Strings(out)
	return out
}

func TestEncodeLabels(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""}, {[]string{}, ""}, {[]string{"b", "a", "b"}, " a b "}, {[]string{"gpu"}, " gpu "},
	} {
		if got := jobs.EncodeLabels(c.in); got != c.want {
			t.Errorf("EncodeLabels(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPoolsAndMatches: the hub's workers claim only local jobs; a runner
// claims only fleet jobs of its organization's workspaces (only the
// allowed ones when any are named) whose labels it all has.
func TestPoolsAndMatches(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		wsA, org := h.workspace("")
		wsB, _ := h.workspace(org)
		wsOther, otherOrg := h.workspace("")

		local := h.enqueue(jobs.NewJob{Kind: "k", WorkspaceID: wsA})
		plain := h.enqueue(jobs.NewJob{Kind: "k", WorkspaceID: wsA, Pool: jobs.PoolFleet})
		gpu := h.enqueue(jobs.NewJob{Kind: "k", WorkspaceID: wsA, Pool: jobs.PoolFleet, Labels: []string{"gpu"}})
		gpuLinux := h.enqueue(jobs.NewJob{Kind: "k", WorkspaceID: wsB, Pool: jobs.PoolFleet, Labels: []string{"linux", "gpu"}})
		arm := h.enqueue(jobs.NewJob{Kind: "k", WorkspaceID: wsB, Pool: jobs.PoolFleet, Labels: []string{"arm"}})
		foreign := h.enqueue(jobs.NewJob{Kind: "k", WorkspaceID: wsOther, Pool: jobs.PoolFleet})
		if got := h.state(gpuLinux.ID); !slices.Equal(got.Labels, []string{"gpu", "linux"}) || got.Pool != jobs.PoolFleet {
			t.Fatalf("stored job = %+v", got)
		}

		cases := []struct {
			name string
			m    *jobs.Match
			want []string
		}{
			{"no labels: only unlabelled work", &jobs.Match{OrganizationID: org}, []string{plain.ID}},
			{"gpu", &jobs.Match{OrganizationID: org, Labels: []string{"gpu"}}, []string{plain.ID, gpu.ID}},
			{"gpu and linux", &jobs.Match{OrganizationID: org, Labels: []string{"linux", "gpu"}}, []string{plain.ID, gpu.ID, gpuLinux.ID}},
			{"a superset of labels", &jobs.Match{OrganizationID: org, Labels: []string{"x", "gpu", "arm", "linux"}},
				[]string{plain.ID, gpu.ID, gpuLinux.ID, arm.ID}},
			{"workspace B only", &jobs.Match{OrganizationID: org, WorkspaceIDs: []string{wsB}, Labels: []string{"gpu", "linux", "arm"}},
				[]string{gpuLinux.ID, arm.ID}},
			{"a workspace of another organization named in the grant", &jobs.Match{OrganizationID: org, WorkspaceIDs: []string{wsOther}}, nil},
			{"the other organization", &jobs.Match{OrganizationID: otherOrg}, []string{foreign.ID}},
			{"a label that is a prefix of another's", &jobs.Match{OrganizationID: org, Labels: []string{"gp", "linu"}}, []string{plain.ID}},
		}
		for _, c := range cases {
			h.claimCheck(t, c.name, c.m, c.want)
			if got, err := h.q.Matches(context.Background(), []string{"k"}, c.m); err != nil || got != (len(c.want) > 0) {
				t.Errorf("%s: Matches = %v, %v; the claim took %d", c.name, got, err, len(c.want))
			}
		}
		if got := h.claim("hub@1", 100); !slices.Equal(idsOf(got), []string{local.ID}) {
			t.Fatalf("the hub's claim took %v, want only the local job", idsOf(got))
		}
	})
}

// claimCheck claims with m, compares, and puts what it took back.
func (h *harness) claimCheck(t *testing.T, name string, m *jobs.Match, want []string) {
	t.Helper()
	got := h.claimMatching("runner@probe", m)
	if !slices.Equal(sortedIDs(got), sorted(want...)) {
		t.Errorf("%s: claimed %v, want %v", name, sortedIDs(got), sorted(want...))
	}
	for _, j := range got {
		if err := h.tx(func(tx *db.Tx) error {
			_, err := h.q.Retry(context.Background(), tx, j.Lease(), "", 0, false)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRescueVerdicts: the first renewal marks a job started; a policy
// decides per job whether expired work fails, or goes back to the queue
// with or without costing an attempt.
func TestRescueVerdicts(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHarness(t, e)
		ctx := context.Background()
		unstarted := h.enqueue(jobs.NewJob{Kind: "k", Ref: "unstarted"})
		started := h.enqueue(jobs.NewJob{Kind: "k", Ref: "started"})
		hub := h.enqueue(jobs.NewJob{Kind: "k", Ref: "hub"})
		rs := h.claim("runner@r", 2)
		hs := h.claim("hub@h", 1)
		if len(rs) != 2 || len(hs) != 1 || rs[0].StartedAt != nil {
			t.Fatalf("claims %v %v", idsOf(rs), idsOf(hs))
		}
		if _, err := h.q.Extend(ctx, h.state(started.ID).Lease(), time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := h.q.Extend(ctx, h.state(hub.ID).Lease(), time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := h.state(started.ID); got.StartedAt == nil || !got.StartedAt.Equal(h.clock.Now()) {
			t.Fatalf("started_at after the first renewal = %v", got.StartedAt)
		}
		first := *h.state(started.ID).StartedAt
		h.clock.Advance(time.Second)
		if _, err := h.q.Extend(ctx, h.state(started.ID).Lease(), time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := h.state(started.ID); !got.StartedAt.Equal(first) {
			t.Fatalf("a later renewal moved started_at to %v", got.StartedAt)
		}

		// The runner is known gone: its leases end now, the hub's stays.
		if n, err := h.q.Expire(ctx, "runner@r"); err != nil || n != 2 {
			t.Fatalf("expire = %d, %v", n, err)
		}
		h.clock.Advance(time.Millisecond)
		policy := func(j *jobs.Job) jobs.Verdict {
			switch {
			case j.LockedBy != "runner@r":
				return jobs.Verdict{Reason: "hub died"}
			case j.StartedAt == nil:
				return jobs.Verdict{Refund: true, Reason: "never started"}
			}
			return jobs.Verdict{Fail: true, Reason: "runner lost"}
		}
		seen := map[string]string{}
		n, err := h.q.Rescue(ctx, policy, func(_ context.Context, _ *db.Tx, j *jobs.Job, final bool, reason string) error {
			seen[j.Ref] = map[bool]string{true: "final ", false: ""}[final] + reason
			return nil
		})
		if err != nil || n != 2 {
			t.Fatalf("rescue = %d, %v", n, err)
		}
		if seen["unstarted"] != "never started" || seen["started"] != "final runner lost" || seen["hub"] != "" {
			t.Fatalf("verdicts = %v", seen)
		}
		if got := h.state(unstarted.ID); got.State != jobs.Available || got.Attempt != 0 || got.StartedAt != nil {
			t.Fatalf("unstarted job after rescue = %+v (want available, attempt refunded)", got)
		}
		if got := h.state(started.ID); got.State != jobs.Failed || got.LastError != "runner lost" || got.FinishedAt == nil {
			t.Fatalf("started job after rescue = %+v (want failed at once)", got)
		}
		if got := h.state(hub.ID); got.State != jobs.Running {
			t.Fatalf("the hub's live job = %s", got.State)
		}
		// Fleet work nobody can take moves to the hub's pool; running work
		// never moves.
		fleet := h.enqueue(jobs.NewJob{Kind: "k", Pool: jobs.PoolFleet, Labels: []string{"gpu"}})
		waiting, err := h.q.Waiting(ctx, jobs.PoolFleet, 10)
		if err != nil || !slices.Equal(idsOf(waiting), []string{fleet.ID}) {
			t.Fatalf("waiting fleet work = %v, %v", idsOf(waiting), err)
		}
		if n, err := h.q.Repool(ctx, []string{fleet.ID, hub.ID}, jobs.PoolLocal); err != nil || n != 1 {
			t.Fatalf("repool = %d, %v", n, err)
		}
		if got := h.claim("hub@h", 10); !slices.Contains(idsOf(got), fleet.ID) {
			t.Fatalf("the hub did not claim the repooled job: %v", idsOf(got))
		}
	})
}
