package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"slipway/internal/billing"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/outbound"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/ttlcache"
	"slipway/internal/runs"
)

// Job kinds of the engine: a run's job advances it (one per run at a time,
// its holder alone runs the run's ready nodes); a timer's job fires a
// wait_event node's timeout.
const (
	RunJob   = "workflow_run"
	TimerJob = "workflow_timer"
)

// TopicRunEnded carries the id of each workflow run that ended, on every
// replica (a synchronous webhook waits on it).
const TopicRunEnded = "workflow_run_ended"

// Agents starts and stops the tasks of agent nodes (the tasks service, at
// wiring time), inside the engine's transactions.
type Agents interface {
	StartAgent(ctx context.Context, tx *db.Tx, a AgentRequest) (taskID string, err error)
	StopAgent(ctx context.Context, workspaceID, taskID string) error
}

// AgentRequest is the task an agent node asks for.
type AgentRequest struct {
	WorkspaceID, ProjectID string
	CreatedBy              *string
	Title, Prompt          string
	Config                 AgentConfig
}

// EngineConfig tunes the engine.
type EngineConfig struct {
	Owner string        // the lease holder name of this process's engine
	Lease time.Duration // how long a run job is held without extending
	Poll  time.Duration // fallback when no wake-up arrives
	Slots int           // runs advanced at once by this process
	HTTP  outbound.Policy
	Own   []string // the server's own addresses (refused unless HTTP.AllowPrivate)
	// ScriptImage runs code nodes that name no image (the agent image).
	ScriptImage string
	// InlineBatch bounds the inline nodes (transform, gate, end, …) one
	// transaction runs one after another; default 64, 1 commits each
	// node on its own.
	InlineBatch int
}

// inlineBatchTime bounds the time one transaction spends running inline
// nodes (the run's lock is held meanwhile).
const inlineBatchTime = 20 * time.Millisecond

// Engine runs workflow runs.
type Engine struct {
	db      *db.DB
	runs    *runs.Service
	queue   *jobs.Queue
	bus     *pubsub.Bus
	clock   clock.Clock
	log     *slog.Logger
	cfg     EngineConfig
	agents  Agents
	quota   Quota     // nil: no limit
	react   Reactions // nil: nobody hears
	scripts Scripts
	exprs   exprCache

	codeFiles CodeFiles // files mounted into code runs; nil: none
	resources Resources // nodes that use resources; nil: they fail
	apps      Apps      // app nodes; nil: they fail
	env       EnvSource // the env vars runs see; nil: none
	envs      *ttlcache.Cache[resolvedEnv]

	graphs graphCache  // graph versions by id (a version never changes)
	defs   definitions // workflows' stored graphs → their versions
}

// EngineDeps are what the engine uses of the rest. Agents, Scripts and
// CodeFiles are optional: without them agent nodes and saved scripts fail
// and code runs get empty file and library directories.
type EngineDeps struct {
	DB        *db.DB
	Runs      *runs.Service
	Queue     *jobs.Queue
	Bus       *pubsub.Bus
	Clock     clock.Clock
	Log       *slog.Logger
	Agents    Agents
	Scripts   Scripts
	CodeFiles CodeFiles
	Resources Resources
	// Apps calls apps' backend functions (app nodes; nil: they fail).
	Apps Apps
	Env  EnvSource
	// Quota holds new runs to the plan's runs.concurrent (nil: no limit).
	Quota Quota
	// Reactions hear of what needs a person (nil: nobody).
	Reactions Reactions
}

// Reactions are what other domains do when a workflow run needs a person;
// each is told inside the transition's transaction.
type Reactions interface {
	// GateWaiting: a human node started waiting on the run's starter (it
	// may be told again of the same node run).
	GateWaiting(ctx context.Context, tx *db.Tx, g GateWaiting) error
	// GateClosed: a human node that waited was decided, or stopped with
	// its run (it may be told of a node run that never waited).
	GateClosed(ctx context.Context, tx *db.Tx, g GateWaiting) error
	// RunFailed: a run ended failed.
	RunFailed(ctx context.Context, tx *db.Tx, r FailedRun) error
}

// GateWaiting is a human node that waits.
type GateWaiting struct {
	WorkspaceID, RunID, WorkflowID, NodeRunID, NodeKey, Message string
	StartedBy                                                   *string
}

// FailedRun is a run that failed.
type FailedRun struct {
	WorkspaceID, RunID, WorkflowID, Error string
	StartedBy                             *string
}

// Quota decides a plan's limit inside the transaction that adds to it
// (billing): quota_exceeded when adding would pass it.
type Quota interface {
	Check(ctx context.Context, tx *db.Tx, subj billing.Subject, feature string, adding int64) error
}

// NewEngine returns an engine; Run starts it.
func NewEngine(d EngineDeps, cfg EngineConfig) *Engine {
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 32
	}
	if cfg.Owner == "" {
		cfg.Owner = "engine"
	}
	if cfg.InlineBatch <= 0 {
		cfg.InlineBatch = 64
	}
	if cfg.HTTP.Timeout <= 0 {
		allow := cfg.HTTP.AllowPrivate
		cfg.HTTP = outbound.DefaultPolicy()
		cfg.HTTP.AllowPrivate = allow
	}
	return &Engine{db: d.DB, runs: d.Runs, queue: d.Queue, bus: d.Bus, clock: d.Clock, log: d.Log, cfg: cfg,
		agents: d.Agents, scripts: d.Scripts, codeFiles: d.CodeFiles, resources: d.Resources, apps: d.Apps, env: d.Env, envs: newEnvCache(), quota: d.Quota,
		react: d.Reactions}
}

// holder marks a transition made by the run job's holder (its job runs, so
// it needs no new one, and it completes its job itself when the run ends).
type holder struct{}

// transition is the one way a run changes: in one transaction it locks the
// run, reads its node runs, lets fn change the state, settles it, and
// writes nodes, run, events, timers, cancels and the run's job together.
func (e *Engine) transition(ctx context.Context, workspaceID, runID string, h *holder, fn func(tx *db.Tx, st *runState) error) (*runState, error) {
	var st *runState
	err := e.db.Tx(ctx, func(tx *db.Tx) (err error) {
		st, err = e.transitionTx(ctx, tx, workspaceID, runID, h, fn)
		return err
	})
	return st, err
}

// transitionTx is transition inside the caller's transaction.
func (e *Engine) transitionTx(ctx context.Context, tx *db.Tx, workspaceID, runID string, h *holder, fn func(tx *db.Tx, st *runState) error) (*runState, error) {
	// A transition that a database host crash loses is one the engine runs
	// again (the job and the rows are lost together), like SQLite's WAL at
	// synchronous NORMAL: no fsync wait per node.
	if err := e.db.Dialect.AsyncCommit(ctx, tx); err != nil {
		return nil, err
	}
	now := e.clock.Now()
	run, nodes, err := lockRunNodes(ctx, tx, workspaceID, runID, now)
	if err != nil {
		return nil, err
	}
	g, err := e.Graph(ctx, tx, run)
	if err != nil {
		return nil, err
	}
	st, err := e.state(ctx, tx, run, g, nodes, now)
	if err != nil {
		return nil, err
	}
	if err := fn(tx, st); err != nil {
		return nil, err
	}
	st.settle()
	return st, e.commit(ctx, tx, st, h)
}

// commit writes what a transition changed, in its transaction.
func (e *Engine) commit(ctx context.Context, tx *db.Tx, st *runState, h *holder) error {
	// A run that started and ended in this transaction is written once, as
	// it ended, with its events.
	once := st.unsaved && st.ended
	if once && packable(st.nodes) {
		// Its node runs too, in its row: nothing will change them.
		if err := packNodes(st.run, st.nodes); err != nil {
			return err
		}
		for _, n := range st.nodes {
			n.fresh, n.dirty = false, false
		}
	}
	if st.unsaved {
		// Before its node runs, which reference it.
		if err := e.create(ctx, tx, st.run, st); err != nil {
			return err
		}
		st.unsaved, st.runDirty = false, false
	}
	changed := st.changed()
	saveNodeRuns(tx, changed)
	ws := st.run.WorkspaceID
	if err := e.tell(ctx, tx, st, changed); err != nil {
		return err
	}
	for _, t := range st.timers {
		if _, err := e.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: TimerJob, WorkspaceID: ws, Ref: t.node.ID, RunAt: t.at, MaxAttempts: 10,
			Payload: map[string]string{"run_id": st.run.ID}}); err != nil && !errors.Is(err, jobs.ErrDuplicate) {
			return err
		}
	}
	for _, nr := range st.stopped {
		if _, err := e.queue.Cancel(ctx, tx, ws, TimerJob, nr.ID); err != nil {
			return err
		}
		if nr.Kind == "code" {
			id := nr.ID
			tx.AfterCommit(func() { e.cancelCode(ws, id) })
		}
		if nr.TaskID != nil && e.agents != nil {
			// After the commit, in a transaction of its own: a task's end
			// locks the task and then its run, so a run's transition never
			// waits on a task row.
			taskID := *nr.TaskID
			tx.AfterCommit(func() { e.stopAgent(ws, taskID) })
		}
	}
	if st.runDirty {
		saveRunRow(tx, st.run)
	}
	if len(st.events) > 0 && !once {
		if err := e.runs.Append(ctx, tx, ws, st.run.LogID, st.run.ID, st.events...); err != nil && !errors.Is(err, runs.ErrRunOver) {
			return err
		}
	}
	if st.ended {
		if !once {
			if _, err := e.runs.Finish(ctx, tx, ws, st.run.ID, runStatus(st.run.Status), nil, st.run.Error); err != nil {
				return err
			}
		}
		if h == nil && !st.fresh {
			if _, err := e.queue.Cancel(ctx, tx, ws, RunJob, st.run.ID); err != nil {
				return err
			}
		}
		// Whoever waits for a run (WaitRun) learned its id from the
		// commit that created it: a run created and ended in this one is
		// seen ended by the waiter's first look, so nobody needs telling
		// (and PostgreSQL commits without its NOTIFY, whose queue every
		// notifying commit takes in turn).
		if !once {
			if err := e.bus.PublishTx(ctx, tx, TopicRunEnded, st.run.ID); err != nil {
				return err
			}
		}
		// The end frees a slot only under a cap: without one on its
		// workflow or its project, nothing waits on this run (and the
		// admission lock, which every start and end in the project would
		// queue on, is not taken).
		if st.uncapped {
			return nil // read uncapped in this same transaction
		}
		capped, err := capped(ctx, tx, ws, st.run.WorkflowID)
		if err != nil || !capped {
			return err
		}
		return e.Admit(ctx, tx, ws, st.run.ProjectID)
	}
	if h == nil && len(st.ready()) > 0 {
		if st.fresh {
			return e.enqueueRun(ctx, tx, st.run)
		}
		return e.ensureJob(ctx, tx, st.run)
	}
	return nil
}

// tell says what of a transition needs a person: a human node that waits,
// a run that failed.
func (e *Engine) tell(ctx context.Context, tx *db.Tx, st *runState, changed []*nodeRun) error {
	if e.react == nil {
		return nil
	}
	r := st.run
	for _, nr := range changed {
		waiting := nr.Status == NodeWaiting && r.Status == RunRunning
		closed := nr.Status == NodeSucceeded || nr.Status == NodeFailed || nr.Status == NodeCancelled
		if nr.Kind != "human" || !waiting && !closed {
			continue
		}
		var hs humanState
		_ = json.Unmarshal(nr.State, &hs)
		g := GateWaiting{WorkspaceID: r.WorkspaceID, RunID: r.ID, WorkflowID: r.WorkflowID, NodeRunID: nr.ID, NodeKey: nr.Key,
			Message: hs.Message, StartedBy: r.CreatedBy}
		var err error
		if waiting {
			err = e.react.GateWaiting(ctx, tx, g)
		} else {
			err = e.react.GateClosed(ctx, tx, g)
		}
		if err != nil {
			return err
		}
	}
	if st.ended && r.Status == RunFailed {
		return e.react.RunFailed(ctx, tx, FailedRun{WorkspaceID: r.WorkspaceID, RunID: r.ID, WorkflowID: r.WorkflowID, Error: r.Error,
			StartedBy: r.CreatedBy})
	}
	return nil
}

// runStatus is the runs row's status of a workflow run's terminal status.
func runStatus(status string) string {
	switch status {
	case RunSucceeded:
		return runs.Succeeded
	case RunFailed:
		return runs.Failed
	}
	return runs.Cancelled
}

// create writes a run that its transaction made: its log, its runs row and
// its workflow run row. With st (the state of a run that started and ended
// in this transaction) the runs row is written as the run ended, with its
// events; otherwise as it stands, queued or running.
func (e *Engine) create(ctx context.Context, tx *db.Tx, r *runRow, st *runState) error {
	n := runs.NewRun{ID: r.ID, Kind: runs.KindWorkflow, WorkspaceID: r.WorkspaceID, LogID: r.LogID, ProjectID: r.ProjectID, NewLog: true}
	if st != nil && st.ended {
		if err := e.runs.Record(ctx, tx, runs.Ended{NewRun: n, Status: runStatus(r.Status), Error: r.Error, Events: st.events}); err != nil {
			return err
		}
	} else {
		if err := e.runs.CreateLog(ctx, tx, r.WorkspaceID, r.LogID); err != nil {
			return err
		}
		if _, err := e.runs.Start(ctx, tx, n); err != nil {
			return err
		}
	}
	insertRunRow(tx, r, e.clock.Now())
	return nil
}

// ensureJob queues the run's job unless one is queued or held (the holder
// reads the run again before it lets go, under the same lock).
func (e *Engine) ensureJob(ctx context.Context, tx *db.Tx, r *runRow) error {
	pending, err := runJobPending(ctx, tx, r.WorkspaceID, r.ID)
	if err != nil || pending {
		return err
	}
	return e.enqueueRun(ctx, tx, r)
}

// enqueueRun queues the run's job (none is queued or held). The job counts
// against the max_concurrent_uses of every resource the run's nodes name:
// the queue's admission holds it while a resource's uses are full.
func (e *Engine) enqueueRun(ctx context.Context, tx *db.Tx, r *runRow) error {
	g, err := e.Graph(ctx, tx, r)
	if err != nil {
		return err
	}
	_, err = e.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: RunJob, WorkspaceID: r.WorkspaceID, Ref: r.ID, MaxAttempts: 5,
		Keys: ResourceKeys(r.WorkspaceID, g)})
	return err
}

// ResourceKeys are the concurrency keys of a run of the graph:
// "resource:<workspace>/<id>" for each resource its nodes name.
func ResourceKeys(workspaceID string, g *Graph) []string {
	var keys []string
	for _, n := range g.Nodes {
		if id, _ := n.Config["resource_id"].(string); id != "" && !strings.ContainsAny(id, " \t\n") {
			if k := "resource:" + workspaceID + "/" + id; !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// Admit starts the queued runs of a project that its caps and their
// workflows' caps let through, oldest first. Transactions that admit in one
// project take its lock, so the counts they read hold.
func (e *Engine) Admit(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error {
	return e.admitNow(ctx, tx, workspaceID, projectID, nil)
}

// Started is a run as its start left it: queued (its caps hold it), or
// running or already ended after its first inline nodes.
type Started struct {
	ID     string
	Status string
	Output json.RawMessage
	Error  string
}

// admitNow is Admit that, when it admits the run named inline, also runs
// that run's ready inline nodes in the same transaction (a run that needs
// nothing else ends before anything is queued for it).
func (e *Engine) admitNow(ctx context.Context, tx *db.Tx, workspaceID, projectID string, inline *Started) error {
	if err := e.db.Dialect.XactLock(ctx, tx, "workflow-admission:"+projectID); err != nil {
		return err
	}
	waiting, err := queuedRuns(ctx, tx, workspaceID, projectID)
	if err != nil || len(waiting) == 0 {
		return err
	}
	projectMax, err := projectCap(ctx, tx, workspaceID, projectID)
	if err != nil {
		return err
	}
	active, err := runningByWorkflow(ctx, tx, workspaceID, projectID)
	if err != nil {
		return err
	}
	var total int64
	for _, n := range active {
		total += n
	}
	for _, q := range waiting {
		if projectMax.Valid && total >= projectMax.Int64 {
			break
		}
		if q.max.Valid && active[q.workflow] >= q.max.Int64 {
			continue // this workflow is full; a later run of another may start
		}
		var started *Started
		if inline != nil && q.id == inline.ID {
			started = inline
		}
		if err := e.start(ctx, tx, workspaceID, q.id, started); err != nil {
			return err
		}
		active[q.workflow]++
		total++
	}
	return nil
}

// startNew starts a new run, not written yet, of graph g: at once when
// neither its workflow nor its project has a cap (no lock: nothing can wait
// ahead of it), its row written once as its first inline nodes leave it;
// otherwise queued, through admission, in order behind the runs already
// waiting.
// capped says whether its workflow or project has a cap, as read in tx.
func (e *Engine) startNew(ctx context.Context, tx *db.Tx, run *runRow, g *Graph, capped bool, started *Started) error {
	if capped {
		if err := e.create(ctx, tx, run, nil); err != nil {
			return err
		}
		return e.admitNow(ctx, tx, run.WorkspaceID, run.ProjectID, started)
	}
	// Nobody else sees the run before this transaction commits: it needs
	// no lock.
	st, err := e.state(ctx, tx, run, g, nil, e.clock.Now())
	if err != nil {
		return err
	}
	st.unsaved, st.uncapped = true, true
	return e.begin(ctx, tx, st, started)
}

// sweep admits what waits in projects with queued runs: a cap set while a
// run ended unlocked (see commit) may leave a run queued with room for it;
// this lets it in within a sweep.
func (e *Engine) sweep(ctx context.Context) error {
	ps, err := projectsWithQueuedRuns(ctx, e.db.R)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := e.db.Tx(ctx, func(tx *db.Tx) error { return e.Admit(ctx, tx, p.ws, p.id) }); err != nil {
			return err
		}
	}
	return nil
}

// start moves an admitted run to running with its entry nodes ready; with
// inline it also runs those of its nodes that run inline, and says how the
// run stands then.
func (e *Engine) start(ctx context.Context, tx *db.Tx, workspaceID, runID string, inline *Started) error {
	now := e.clock.Now()
	run, err := lockRun(ctx, tx, workspaceID, runID, now)
	if err != nil {
		return err
	}
	g, err := e.Graph(ctx, tx, run)
	if err != nil {
		return err
	}
	st, err := e.state(ctx, tx, run, g, nil, now)
	if err != nil {
		return err
	}
	return e.begin(ctx, tx, st, inline)
}

// begin is start with the run's state read.
func (e *Engine) begin(ctx context.Context, tx *db.Tx, st *runState, inline *Started) error {
	now, run := st.now, st.run
	st.fresh = true
	if inline != nil {
		st.events = append(st.events, queuedEvent(run.WorkflowID, run.CreatedAt))
	}
	st.run.Status, st.run.StartedAt, st.runDirty = RunRunning, &now, true
	st.event("run", map[string]any{"status": RunRunning})
	st.settle()
	if inline != nil {
		if _, err := e.runReady(ctx, tx, st, func(*nodeRun) bool { return false }, nil); err != nil {
			return err
		}
		inline.Status, inline.Output, inline.Error = st.run.Status, st.run.Output, st.run.Error
	}
	return e.commit(ctx, tx, st, nil)
}

// runReady runs a run's ready inline nodes one after another in tx (each
// one's successors settle before the next is picked), up to a batch of
// InlineBatch nodes or inlineBatchTime; it reports whether the batch
// stopped it with inline nodes still ready. Nodes skip names are passed
// over; ready I/O nodes go to io (nil: they stay ready for the run's job).
func (e *Engine) runReady(ctx context.Context, tx *db.Tx, st *runState, skip func(*nodeRun) bool, io func(*nodeRun)) (more bool, err error) {
	began := time.Now()
	for ran := 0; st.run.Status == RunRunning; ran++ {
		var next *nodeRun
		for _, nr := range st.ready() {
			switch {
			case skip(nr):
			case inline(nr.Kind):
				if next == nil {
					next = nr
				}
			case io != nil:
				io(nr)
			}
		}
		if next == nil {
			return false, nil
		}
		if ran == e.cfg.InlineBatch || (ran > 0 && time.Since(began) > inlineBatchTime) {
			return true, nil
		}
		st.now = e.clock.Now()
		if err := e.runInline(ctx, tx, st, e.stepOf(st, next)); err != nil {
			return false, err
		}
		st.settle()
	}
	return false, nil
}

// advance is the run job's holder: it runs the run's ready nodes until
// nothing is ready; then, in the transaction that finds nothing ready, it
// completes its job. Inline kinds run inside transitions, several in one
// (they only change rows, so a transaction that is lost loses them all and
// they run again); I/O kinds run beside them, each recording its outcome in
// a transition of its own.
func (e *Engine) advance(ctx context.Context, j *jobs.Job) {
	lease := j.Lease()
	h := &holder{}
	inflight := map[string]bool{}
	done := make(chan string, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		var spawn []step
		var finished, progressed bool
		_, err := e.transition(ctx, j.WorkspaceID, j.Ref, h, func(tx *db.Tx, st *runState) error {
			spawn, finished, progressed = nil, false, false
			spawned := map[string]bool{}
			more, err := e.runReady(ctx, tx, st, func(nr *nodeRun) bool { return inflight[nr.ID] || spawned[nr.ID] }, func(nr *nodeRun) {
				nr.Attempt++
				nr.StartedAt = &st.now
				st.set(nr, NodeRunning)
				spawn = append(spawn, e.stepOf(st, nr))
				spawned[nr.ID] = true
			})
			if err != nil {
				return err
			}
			progressed = more || len(st.changed()) > 0
			if more {
				return nil // the rest in the next transaction
			}
			if st.run.Status == RunRunning && (len(spawn) > 0 || len(inflight) > 0) {
				return nil
			}
			finished = true
			return e.complete(ctx, tx, lease)
		})
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, jobs.ErrLeaseLost) && !errors.Is(err, apperr.ErrNotFound) {
				e.log.Error("advancing a workflow run failed", "run_id", j.Ref, "err", err)
				e.retry(ctx, lease, err)
			}
			if errors.Is(err, apperr.ErrNotFound) {
				e.drop(ctx, lease)
			}
			return
		}
		if finished {
			return
		}
		for _, s := range spawn {
			inflight[s.nr.ID] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.runAsync(ctx, h, s)
				done <- s.nr.ID
			}()
		}
		if len(spawn) > 0 || progressed {
			continue
		}
		select {
		case id := <-done:
			delete(inflight, id)
		case <-ctx.Done():
		}
	}
}

func (e *Engine) stepOf(st *runState, nr *nodeRun) step {
	n := st.graph.Node(nr.Key)
	return step{node: n, nr: nr, env: st.env(nr.Frame), run: st.run, red: st.red}
}

// runInline runs an inline node inside the transition.
func (e *Engine) runInline(ctx context.Context, tx *db.Tx, st *runState, s step) error {
	o := e.execute(ctx, s)
	if o.status == NodeWaiting {
		var err error
		switch s.node.Kind {
		case "agent":
			err = e.startAgent(ctx, tx, st, s, &o)
		case "code":
			err = e.startCode(ctx, tx, st, s, &o)
		}
		if err != nil {
			return err
		}
	}
	return st.apply(s.nr, o)
}

// runAsync runs an I/O node outside any transaction and records its
// outcome in a transition of its own, unless the run moved on meanwhile
// (cancelled, or the node was taken over).
func (e *Engine) runAsync(ctx context.Context, h *holder, s step) {
	o := e.execute(ctx, s)
	if ctx.Err() != nil {
		return // cancelled or the lease was lost: whoever holds the run now decides
	}
	_, err := e.transition(ctx, s.run.WorkspaceID, s.run.ID, h, func(tx *db.Tx, st *runState) error {
		nr := st.node(s.nr.Frame, s.nr.Key)
		if st.run.Status != RunRunning || nr == nil || nr.Status != NodeRunning || nr.Attempt != s.nr.Attempt {
			return nil
		}
		return st.apply(nr, o)
	})
	if err != nil && ctx.Err() == nil {
		e.log.Error("recording a workflow node failed", "run_id", s.run.ID, "node", s.nr.Key, "err", err)
	}
}

func (e *Engine) complete(ctx context.Context, tx *db.Tx, l jobs.Lease) error {
	_, err := e.queue.Complete(ctx, tx, l)
	return err
}

// retry gives the run's job back after an error, to be tried again later.
func (e *Engine) retry(ctx context.Context, l jobs.Lease, cause error) {
	err := e.db.Tx(ctx, func(tx *db.Tx) error {
		_, err := e.queue.Retry(ctx, tx, l, cause.Error(), jobs.Backoff(l.Attempt), true)
		return err
	})
	if err != nil && !errors.Is(err, jobs.ErrLeaseLost) {
		e.log.Error("giving a workflow run back failed", "job_id", l.JobID, "err", err)
	}
}

// drop completes a job whose run is gone (its workflow was deleted).
func (e *Engine) drop(ctx context.Context, l jobs.Lease) {
	err := e.db.Tx(ctx, func(tx *db.Tx) error { return e.complete(ctx, tx, l) })
	if err != nil && !errors.Is(err, jobs.ErrLeaseLost) {
		e.log.Error("dropping a job of a deleted run failed", "job_id", l.JobID, "err", err)
	}
}

// fireTimer resumes a wait_event node whose timeout came first.
func (e *Engine) fireTimer(ctx context.Context, j *jobs.Job) {
	var p struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(j.Payload, &p) // written by commit; a bad one finds no run
	lease := j.Lease()
	_, err := e.transition(ctx, j.WorkspaceID, p.RunID, nil, func(tx *db.Tx, st *runState) error {
		if err := e.complete(ctx, tx, lease); err != nil {
			return err
		}
		for _, nr := range st.nodes {
			if nr.ID == j.Ref && nr.Status == NodeWaiting && st.run.Status == RunRunning {
				return st.apply(nr, succeed(HandleTimeout, map[string]any{"timed_out": true}))
			}
		}
		return nil
	})
	if errors.Is(err, apperr.ErrNotFound) {
		e.drop(ctx, lease)
		return
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, jobs.ErrLeaseLost) {
		e.log.Error("firing a workflow timer failed", "node_run_id", j.Ref, "err", err)
		e.retry(ctx, lease, err)
	}
}

// Run claims and works the engine's jobs until ctx ends: first the ones
// this process held before a restart, then whatever is queued, woken by
// the queue's notifications.
func (e *Engine) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, e.cfg.Slots)
	work := func(j *jobs.Job) {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			e.work(ctx, j)
		}()
	}
	if held, err := e.queue.Held(ctx, e.cfg.Owner, e.cfg.Lease); err != nil {
		if ctx.Err() == nil {
			e.log.Error("taking back held workflow jobs failed", "err", err)
		}
	} else {
		for _, j := range held {
			work(j)
		}
	}
	sub := e.bus.Subscribe(jobs.TopicQueued)
	defer sub.Close()
	poll := time.NewTicker(e.cfg.Poll)
	defer poll.Stop()
	sweep := time.NewTicker(sweepEvery)
	defer sweep.Stop()
	for ctx.Err() == nil {
		free := e.cfg.Slots - len(slots)
		if free > 0 {
			claimed, err := e.queue.Claim(ctx, jobs.ClaimRequest{Kinds: []string{RunJob, TimerJob}, Owner: e.cfg.Owner, Max: free, Lease: e.cfg.Lease}, nil)
			if err != nil && ctx.Err() == nil {
				e.log.Error("claiming workflow jobs failed", "err", err)
			}
			for _, j := range claimed {
				work(j)
			}
			if len(claimed) == free {
				continue
			}
		}
		select {
		case <-sub.C:
		case <-poll.C:
		case <-sweep.C:
			if err := e.sweep(ctx); err != nil && ctx.Err() == nil {
				e.log.Error("admitting waiting workflow runs failed", "err", err)
			}
		case <-ctx.Done():
		}
	}
}

// sweepEvery is how often the engine admits runs that still wait.
const sweepEvery = 5 * time.Second

// work runs one job while keeping its lease; a cancel of the job (the run
// was cancelled) or a lost lease stops it.
func (e *Engine) work(ctx context.Context, j *jobs.Job) {
	ctx, span := jobs.StartWork(ctx, j) // in the trace of whoever queued it
	defer span.End()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	control := e.bus.Subscribe(jobs.TopicControl)
	defer control.Close()
	go func() {
		t := time.NewTicker(e.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-control.C:
				if m.Payload == "cancel "+j.ID {
					cancel()
					return
				}
			case <-t.C:
				stop, err := e.queue.Extend(ctx, j.Lease(), e.cfg.Lease)
				if errors.Is(err, jobs.ErrLeaseLost) || stop {
					cancel()
					return
				}
			}
		}
	}()
	if j.Kind == TimerJob {
		e.fireTimer(ctx, j)
		return
	}
	e.advance(ctx, j)
}

func (e *Engine) stopAgent(workspaceID, taskID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.agents.StopAgent(ctx, workspaceID, taskID); err != nil {
		e.log.Error("cancelling the task of a stopped agent node failed", "task_id", taskID, "err", err)
	}
}

// Interrupted is told by the rescuer that a holder of an engine job died:
// the job is back in the queue (another holder resumes the run where its
// rows say it is), or, out of attempts, the run fails.
func (e *Engine) Interrupted(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error {
	if !final || j.Kind != RunJob {
		return nil
	}
	_, err := e.transitionTx(ctx, tx, j.WorkspaceID, j.Ref, nil, func(_ *db.Tx, st *runState) error {
		st.finish(RunFailed, nil, "the servers advancing this run stopped too often: "+reason)
		return nil
	})
	if errors.Is(err, apperr.ErrNotFound) {
		return nil
	}
	return err
}
