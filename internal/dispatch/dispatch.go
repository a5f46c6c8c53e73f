// Package dispatch is the hub's side of the worker port: it turns queued
// jobs into work for workers and what workers report into runs, events and
// the state of whatever the job was for. Each job kind has a Handler (tasks
// register theirs); dispatch owns the choreography: claims with leases,
// appends, finishes, control messages, and the rescuer that takes back work
// whose worker died. (Not to be confused with package worker, which does
// the work a dispatcher hands out, in the hub or in a runner.)
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/internal/runs"
	"slipway/internal/workport"
)

// Handler gives one job kind its meaning.
type Handler interface {
	// Start turns a claimed job into work, inside the claim's transaction
	// (so the claim and the start commit together). A nil assignment drops
	// the job: its subject is gone or no longer wants running.
	Start(ctx context.Context, tx *db.Tx, j *jobs.Job, w WorkerInfo) (*workport.Assignment, error)
	// Resume rebuilds the assignment of a job a restarted worker still
	// holds, with what its run recorded.
	Resume(ctx context.Context, j *jobs.Job) (*workport.Assignment, error)
	// Finish records how the work ended, in the transaction that completes
	// the job.
	Finish(ctx context.Context, tx *db.Tx, j *jobs.Job, runID string, r workport.Result) error
	// Interrupted brings the job's subject in line after its worker died or
	// stopped: the job is back in the queue, or failed when final.
	Interrupted(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error
}

// WorkerInfo is what a handler knows of the worker that claimed its job.
type WorkerInfo struct {
	ID      string
	Backend string
}

// Config tunes the dispatcher.
type Config struct {
	// Lease is how long a worker holds work without extending it; a worker
	// that dies loses its work to the rescuer this long after its last
	// extension.
	Lease time.Duration
	// Poll is the fallback when no notification arrives (they are lost only
	// while a database connection drops).
	Poll time.Duration
	// Retention is how long finished jobs are kept.
	Retention time.Duration
	// Output bounds what a run stores of its output, whatever its worker
	// (a runner) kept (zero: no bound here).
	Output runs.OutputLimit
	// Env resolves the env vars handed to scripts and agents with their
	// work (nil: none).
	Env EnvSource
}

// EnvSource resolves the env vars of a workspace's project (projectID "":
// the workspace's global ones): values, and the secret ones among them.
type EnvSource interface {
	// Resolve reads through q (the claim's transaction).
	Resolve(ctx context.Context, q db.Queryer, workspaceID, projectID string) (map[string]string, []string, error)
}

// Dispatcher implements workport.Port for the hub.
type Dispatcher struct {
	queue *jobs.Queue
	runs  *runs.Service
	bus   *pubsub.Bus
	db    *db.DB
	cfg   Config
	log   *slog.Logger

	mu       sync.RWMutex
	handlers map[string]registered // by job kind
	local    map[string]InterruptFunc

	fleet fleet // runners waiting in long polls here
	inbox Inbox
}

// InterruptFunc brings a job's subject in line after its holder died: the
// job is back in the queue, or failed when final.
type InterruptFunc func(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error

type registered struct {
	work    string
	handler Handler
}

var _ workport.Port = (*Dispatcher)(nil)

// New returns a dispatcher; in (nil: none) hands Extend the agents' inbox
// lines.
func New(d *db.DB, q *jobs.Queue, r *runs.Service, in Inbox, bus *pubsub.Bus, cfg Config, log *slog.Logger) *Dispatcher {
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	return &Dispatcher{db: d, queue: q, runs: r, inbox: in, bus: bus, cfg: cfg, log: log, handlers: map[string]registered{}, local: map[string]InterruptFunc{}}
}

// Handle registers the handler of a job kind whose jobs are work of the
// given type (workport.WorkAgent).
func (d *Dispatcher) Handle(kind, work string, h Handler) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handlers[kind] = registered{work: work, handler: h}
}

// HandleLocal registers a job kind the hub works itself (not through the
// worker port; the workflow engine's): the rescuer only needs to know what
// an interruption means for it.
func (d *Dispatcher) HandleLocal(kind string, interrupted InterruptFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.local[kind] = interrupted
}

func (d *Dispatcher) handler(kind string) (Handler, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	r, ok := d.handlers[kind]
	if !ok {
		return nil, fmt.Errorf("dispatch: no handler for job kind %q", kind)
	}
	return r.handler, nil
}

func (d *Dispatcher) kinds(work []string) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []string
	for k, r := range d.handlers {
		for _, w := range work {
			if r.work == w {
				out = append(out, k)
			}
		}
	}
	return out
}

// Lease is the lease duration workers are given.
func (d *Dispatcher) Lease() time.Duration { return d.cfg.Lease }

// Claim implements workport.Port: it claims and starts jobs, waiting for
// notifications (a job queued, a slot freed) until something is assigned or
// req.Wait has passed.
func (d *Dispatcher) Claim(ctx context.Context, req workport.ClaimRequest) ([]workport.Assignment, error) {
	return d.ClaimMatching(ctx, req, nil)
}

// MatchFunc tells what a remote runner may claim now (nil: nothing); it is
// asked again before every round of a long poll, so a runner drained or
// disabled meanwhile gets no more work.
type MatchFunc func(ctx context.Context) (*jobs.Match, error)

// ClaimMatching claims for a remote runner: only the fleet's jobs that its
// match admits (a nil match func: the hub's own jobs, as Claim). A runner
// with nothing to claim waits until this replica's matchmaker sees work
// for it (Run keeps it going), req.Wait passes or ctx ends.
func (d *Dispatcher) ClaimMatching(ctx context.Context, req workport.ClaimRequest, match MatchFunc) ([]workport.Assignment, error) {
	if match == nil {
		return d.claim(ctx, req)
	}
	if req.Max <= 0 {
		return nil, nil
	}
	kinds := d.kinds([]string{workport.WorkAgent, workport.WorkScript})
	if len(kinds) == 0 {
		return nil, errors.New("dispatch: no job kind is registered")
	}
	var deadline <-chan time.Time
	if req.Wait > 0 {
		t := time.NewTimer(req.Wait)
		defer t.Stop()
		deadline = t.C
	}
	woken := false
	for {
		m, err := match(ctx)
		if err != nil {
			return nil, err
		}
		// Waiting before looking: a job queued after the look below wakes
		// this waiter through matchmaking, and one queued before it is
		// seen by the look (waiting after the look lost the job queued in
		// between until the next poll tick).
		var w *waiter
		if req.Wait > 0 {
			w = d.fleet.add(m)
		}
		if m != nil {
			// Woken for a job: claim it. Otherwise a read that takes no
			// lock says first whether there is anything to claim.
			there := woken
			if !there {
				if there, err = d.queue.Matches(ctx, kinds, m); err != nil {
					d.fleet.remove(w)
					return nil, err
				}
			}
			if there {
				as, err := d.claimOnce(ctx, req, kinds, m)
				if err != nil || len(as) > 0 {
					d.fleet.remove(w)
					return as, err
				}
			}
		}
		if w == nil {
			return nil, nil
		}
		select {
		case <-w.wake:
			woken = true
		case <-deadline:
			d.fleet.remove(w)
			return nil, nil
		case <-ctx.Done():
			d.fleet.remove(w)
			return nil, ctx.Err()
		}
		d.fleet.remove(w)
	}
}

// claim claims the hub's own jobs, waiting for notifications (a job
// queued, a slot freed) until something is assigned or req.Wait passed.
func (d *Dispatcher) claim(ctx context.Context, req workport.ClaimRequest) ([]workport.Assignment, error) {
	if req.Max <= 0 {
		return nil, nil
	}
	kinds := d.kinds([]string{workport.WorkAgent, workport.WorkScript})
	if len(kinds) == 0 {
		return nil, errors.New("dispatch: no job kind is registered")
	}
	sub := d.bus.Subscribe(jobs.TopicQueued)
	defer sub.Close()
	var deadline <-chan time.Time
	if req.Wait > 0 {
		t := time.NewTimer(req.Wait)
		defer t.Stop()
		deadline = t.C
	}
	poll := time.NewTicker(d.cfg.Poll)
	defer poll.Stop()
	for {
		as, err := d.claimOnce(ctx, req, kinds, nil)
		if err != nil || len(as) > 0 || req.Wait <= 0 {
			return as, err
		}
		select {
		case <-sub.C:
		case <-poll.C:
		case <-deadline:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (d *Dispatcher) claimOnce(ctx context.Context, req workport.ClaimRequest, kinds []string, m *jobs.Match) ([]workport.Assignment, error) {
	info := WorkerInfo{ID: req.Worker, Backend: req.Backend}
	var as []workport.Assignment
	_, err := d.queue.Claim(ctx, jobs.ClaimRequest{Kinds: kinds, Owner: req.Worker, Max: req.Max, Lease: d.cfg.Lease, Match: m},
		func(ctx context.Context, tx *db.Tx, j *jobs.Job) (bool, error) {
			h, err := d.handler(j.Kind)
			if err != nil {
				return false, err
			}
			sctx, span := jobs.StartClaim(ctx, j) // in the trace that queued the job
			a, err := h.Start(sctx, tx, j, info)
			span.End()
			if err != nil || a == nil {
				return false, err
			}
			a.TTL = d.cfg.Lease
			a.TraceParent = j.TraceParent // the worker's span continues the trace that queued the job
			if err := d.withEnv(sctx, tx, j.WorkspaceID, a); err != nil {
				return false, err
			}
			if a.Lease.RunID != "" {
				if err := d.queue.BindRun(ctx, tx, j.ID, a.Lease.RunID); err != nil {
					return false, err
				}
			}
			if d.inbox != nil && j.Attempt > 1 {
				if a.InboxAfter, err = d.inbox.Taken(ctx, tx, j.ID); err != nil {
					return false, err
				}
			}
			as = append(as, *a)
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	return as, nil
}

// holds reports whether a lease is the holder's: same job, owner and
// attempt, and the same run once the claim is bound to one (a claim made
// before runs were bound holds with any).
func holds(holder, l jobs.Lease) bool {
	return holder.JobID == l.JobID && holder.Owner == l.Owner && holder.Attempt == l.Attempt && (holder.RunID == "" || holder.RunID == l.RunID)
}

func jobLease(l workport.Lease) jobs.Lease {
	return jobs.Lease{JobID: l.JobID, Owner: l.Worker, Attempt: l.Attempt, RunID: l.RunID}
}

// Inbox hands a job's agent the lines waiting for it (package inbox).
type Inbox interface {
	Take(ctx context.Context, jobID string, after int64) ([]workport.InboxLine, error)
	// Waiting lists the jobs a worker holds with lines not taken for at
	// least settle, and how soon younger ones become that old.
	Waiting(ctx context.Context, owner string, settle time.Duration) ([]string, time.Duration, error)
	// Taken is the last line of a job a worker took (an earlier attempt).
	Taken(ctx context.Context, q db.Queryer, jobID string) (int64, error)
}

// Extend implements workport.Port: the lease is renewed and the answer
// carries the agent's inbox lines after inboxAfter.
func (d *Dispatcher) Extend(ctx context.Context, l workport.Lease, inboxAfter int64) (workport.Directive, error) {
	cancel, err := d.queue.Extend(ctx, jobLease(l), d.cfg.Lease)
	if errors.Is(err, jobs.ErrLeaseLost) {
		return workport.Directive{}, workport.ErrLeaseLost
	}
	if err != nil || cancel || d.inbox == nil {
		return workport.Directive{Cancel: cancel}, err
	}
	lines, err := d.inbox.Take(ctx, l.JobID, inboxAfter)
	return workport.Directive{Inbox: lines}, err
}

// Append implements workport.Port: the batch is stored unless the lease was
// lost (then the worker is told to stop).
func (d *Dispatcher) Append(ctx context.Context, l workport.Lease, b workport.Batch) error {
	// A lease past its expiry that nobody rescued yet is still the
	// worker's: it may be about to extend it.
	held, err := d.queue.Holder(ctx, l.JobID)
	if err != nil {
		return err
	}
	if held == nil || !holds(*held, jobLease(l)) {
		return workport.ErrLeaseLost
	}
	evs := make([]runs.NewEvent, len(b.Events))
	for i, e := range b.Events {
		evs[i] = runs.NewEvent{Type: e.Type, Payload: e.Payload, At: e.At}
	}
	_, err = d.runs.AppendBatchWithin(ctx, l.WorkspaceID, l.RunID, b.Seq, evs, d.cfg.Output)
	return err
}

// Finish implements workport.Port: one transaction gives the lease back and
// records the outcome, so a result is recorded once or not at all.
func (d *Dispatcher) Finish(ctx context.Context, l workport.Lease, r workport.Result) error {
	err := d.db.Tx(ctx, func(tx *db.Tx) error {
		jl := jobLease(l)
		switch r.Outcome {
		case workport.Interrupted, workport.ShutDown:
			reason := r.Error
			j, err := d.queue.Retry(ctx, tx, jl, reason, 0, r.Outcome == workport.Interrupted)
			if err != nil {
				return err
			}
			h, err := d.handler(j.Kind)
			if err != nil {
				return err
			}
			d.logInterrupted(tx, j, reason)
			return h.Interrupted(ctx, tx, j, j.State == jobs.Failed, reason)
		default:
			j, err := d.queue.Complete(ctx, tx, jl)
			if err != nil {
				return err
			}
			h, err := d.handler(j.Kind)
			if err != nil {
				return err
			}
			return h.Finish(ctx, tx, j, l.RunID, r)
		}
	})
	if errors.Is(err, jobs.ErrLeaseLost) {
		return workport.ErrLeaseLost
	}
	return err
}

// Control implements workport.Port for in-process workers: cancels published
// on the bus, by any replica, reach the worker here.
func (d *Dispatcher) Control(ctx context.Context, workerID string) (<-chan workport.Control, error) {
	sub := d.bus.Subscribe(jobs.TopicControl)
	out := make(chan workport.Control, 16)
	go func() {
		defer sub.Close()
		defer close(out)
		for {
			select {
			case m := <-sub.C:
				if m.Reset {
					continue // missed cancels arrive with the next Extend
				}
				action, job, ok := strings.Cut(m.Payload, " ")
				if !ok {
					continue
				}
				select {
				case out <- workport.Control{JobID: job, Action: action}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// VerifyRun checks that the run a remote worker's lease names is the
// job's, in the lease's workspace: a remote worker's word is never taken
// for where its events go. (That the job is held under the lease, Append
// checks itself; Extend and Finish match owner and attempt in their
// updates and find the run through the job.)
func (d *Dispatcher) VerifyRun(ctx context.Context, l workport.Lease) error {
	if l.RunID == "" {
		return workport.ErrLeaseLost
	}
	r, err := d.runs.Get(ctx, d.db.R, l.WorkspaceID, l.RunID)
	if err != nil || r.JobID != l.JobID {
		return workport.ErrLeaseLost
	}
	return nil
}

// Controls waits up to wait for directives to a worker's leases and
// returns them: cancels already requested and inbox lines already waiting
// come at once, new ones as they are published (by any replica).
func (d *Dispatcher) Controls(ctx context.Context, workerID string, wait time.Duration) ([]workport.Control, error) {
	sub := d.bus.Subscribe(jobs.TopicControl)
	defer sub.Close()
	out, recheck, err := d.pending(ctx, workerID)
	if err != nil || len(out) > 0 {
		return out, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var again <-chan time.Time
	for {
		if recheck > 0 {
			again = time.After(recheck)
			recheck = 0
		}
		select {
		case m := <-sub.C:
			if m.Reset {
				if out, recheck, err = d.pending(ctx, workerID); err != nil {
					return nil, err
				}
			} else if action, job, ok := strings.Cut(m.Payload, " "); ok {
				if h, err := d.queue.Holder(ctx, job); err == nil && h != nil && h.Owner == workerID {
					out = append(out, workport.Control{JobID: job, Action: action})
				}
			}
			if len(out) > 0 {
				return out, nil
			}
		case <-again:
			if out, recheck, err = d.pending(ctx, workerID); err != nil || len(out) > 0 {
				return out, err
			}
		case <-t.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// inboxSettle is how long a line may wait untaken before the control
// stream reports it at once: a younger one was just nudged and its worker
// is renewing to take it (reporting it again would only make the worker
// spin); one older than this missed its nudge.
const inboxSettle = 200 * time.Millisecond

// pending is what a worker must hear now: cancels requested and inbox
// lines waiting for its agents (a nudge published while it was between two
// long polls is not lost); recheck is how soon younger lines are due.
func (d *Dispatcher) pending(ctx context.Context, workerID string) ([]workport.Control, time.Duration, error) {
	ids, err := d.queue.Cancelling(ctx, workerID)
	if err != nil {
		return nil, 0, err
	}
	var out []workport.Control
	for _, id := range ids {
		out = append(out, workport.Control{JobID: id, Action: workport.ActionCancel})
	}
	var recheck time.Duration
	if d.inbox != nil {
		if ids, recheck, err = d.inbox.Waiting(ctx, workerID, inboxSettle); err != nil {
			return nil, 0, err
		}
		for _, id := range ids {
			out = append(out, workport.Control{JobID: id, Action: workport.ActionDeliver})
		}
	}
	return out, recheck, nil
}

// Held implements workport.Port.
func (d *Dispatcher) Held(ctx context.Context, workerID string) ([]workport.Assignment, error) {
	held, err := d.queue.Held(ctx, workerID, d.cfg.Lease)
	if err != nil {
		return nil, err
	}
	var out []workport.Assignment
	for _, j := range held {
		h, err := d.handler(j.Kind)
		if err != nil {
			return nil, err
		}
		a, err := h.Resume(ctx, j)
		if err != nil {
			return nil, fmt.Errorf("dispatch: resuming job %s: %w", j.ID, err)
		}
		a.TTL = d.cfg.Lease
		a.TraceParent = j.TraceParent
		out = append(out, *a)
	}
	return out, nil
}

// Reasons of rescued work.
const (
	// reasonDied: the hub process running the work stopped; the work runs
	// again.
	reasonDied = "the server running this task stopped"
	// reasonRunnerLost: a remote runner stopped renewing work it had
	// started. It may still be running it (cut off from the hub, not
	// dead), so running it again elsewhere could do it twice: it fails.
	reasonRunnerLost = "the runner running this task went offline (it stopped renewing its lease)"
	// reasonRunnerUnstarted: a runner claimed work and never acknowledged
	// it (it died, or never received the claim's answer): the work goes
	// back to the queue without costing an attempt.
	reasonRunnerUnstarted = "the runner that claimed this task went away before starting it"
)

// policy is the rescuer's verdict on expired work: the hub's own workers'
// work runs again (their agents died with them); a runner's started work
// fails and its unstarted work goes back to the queue uncharged.
func policy(j *jobs.Job) jobs.Verdict {
	if !workport.IsRunner(j.LockedBy) {
		return jobs.Verdict{Reason: reasonDied}
	}
	if j.StartedAt == nil {
		return jobs.Verdict{Refund: true, Reason: reasonRunnerUnstarted}
	}
	return jobs.Verdict{Fail: true, Reason: reasonRunnerLost}
}

// Rescue takes back the work of workers whose leases expired (they died)
// and reports how many jobs it rescued.
func (d *Dispatcher) Rescue(ctx context.Context) (int, error) {
	return d.queue.Rescue(ctx, policy, func(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error {
		d.mu.RLock()
		local, ok := d.local[j.Kind]
		d.mu.RUnlock()
		if ok {
			d.logInterrupted(tx, j, reason)
			return local(ctx, tx, j, final, reason)
		}
		h, err := d.handler(j.Kind)
		if err != nil {
			return err
		}
		d.logInterrupted(tx, j, reason)
		return h.Interrupted(ctx, tx, j, final, reason)
	})
}

// logInterrupted says, once the transaction commits, what became of work
// whose worker stopped: back in the queue, or given up.
func (d *Dispatcher) logInterrupted(tx *db.Tx, j *jobs.Job, reason string) {
	tx.AfterCommit(func() {
		if j.State == jobs.Failed {
			d.log.Warn("work interrupted too often is given up", "kind", j.Kind, "ref", j.Ref, "job_id", j.ID, "attempts", j.Attempt, "reason", reason)
			return
		}
		d.log.Info("interrupted work is back in the queue", "kind", j.Kind, "ref", j.Ref, "job_id", j.ID, "reason", reason)
	})
}

// Run keeps the rescuer and the pruning of old jobs going until ctx ends.
// Every replica runs it; each rescue moves a job once.
func (d *Dispatcher) Run(ctx context.Context) {
	go d.runFleet(ctx)
	rescue := time.NewTicker(max(d.cfg.Lease/4, 250*time.Millisecond))
	defer rescue.Stop()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-rescue.C:
			if n, err := d.Rescue(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("rescuing work of stopped workers failed", "err", err)
			} else if n > 0 {
				d.log.Info("took back work whose worker stopped extending its lease", "jobs", n)
			}
		case <-prune.C:
			if n, err := d.queue.Prune(ctx, d.cfg.Retention); err != nil && ctx.Err() == nil {
				d.log.Error("pruning finished jobs failed", "err", err)
			} else if n > 0 {
				d.log.Debug("pruned finished jobs", "jobs", n)
			}
		}
	}
}

// RunStatus is the status a run ends with for a worker's outcome (false for
// outcomes that do not end a run: interrupted, shut down).
func RunStatus(outcome string) (string, bool) {
	switch outcome {
	case workport.Succeeded:
		return runs.Succeeded, true
	case workport.Failed, workport.TimedOut:
		return runs.Failed, true
	case workport.Cancelled:
		return runs.Cancelled, true
	}
	return "", false
}

// withEnv hands a script or an agent the env vars of its project, resolved
// now against the job's workspace (a project of another workspace gets
// none of its vars), with their secret values added to what the worker
// redacts. Slipway's own SLIPWAY_ variables win over any env var.
func (d *Dispatcher) withEnv(ctx context.Context, q db.Queryer, workspaceID string, a *workport.Assignment) error {
	if d.cfg.Env == nil || a.Resume != nil {
		return nil
	}
	var project string
	var env *map[string]string
	var secrets *[]string
	switch {
	case a.Script != nil:
		project, env, secrets = a.Script.ProjectID, &a.Script.Env, &a.Script.Secrets
	case a.Agent != nil:
		project, env, secrets = a.Agent.ProjectID, &a.Agent.Env, &a.Agent.Secrets
	default:
		return nil
	}
	vars, hidden, err := d.cfg.Env.Resolve(ctx, q, workspaceID, project)
	if err != nil || len(vars) == 0 {
		return err
	}
	merged := make(map[string]string, len(vars)+len(*env))
	for k, v := range vars {
		merged[k] = v
	}
	for k, v := range *env {
		merged[k] = v
	}
	*env = merged
	*secrets = append(*secrets, hidden...)
	if a.Agent != nil {
		a.Agent.EnvSecrets = hidden
	}
	return nil
}
