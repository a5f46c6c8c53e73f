package worker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"slipway/internal/executor"
	"slipway/internal/repo"
	"slipway/internal/workport"
)

// Config sets up a worker.
type Config struct {
	// ID is the lease owner: "hub@<instance id>" or "runner@<id>". It must
	// be unique per worker process and stable across its restarts (its
	// previous process's work is found by it).
	ID string
	// Slots bounds the agents this worker runs at once.
	Slots int
	// AgentBinary is a statically linked slipway binary, mounted read-only
	// into agent containers as AgentPath ("" when none is available: the
	// docker backend then cannot run built-in agents).
	AgentBinary string
	Limits      executor.Limits
	// Labels go on every agent (the instance label among them).
	Labels map[string]string
	// ClaimWait is how long one claim waits for work (a long poll).
	ClaimWait time.Duration
	// ScratchDir holds the directories of script runs (their source, input
	// and files), one per run, removed when it ends; the worker's recovery
	// empties it, so it is this worker's alone. It must be a path the
	// execution backend can mount (the hub's data dir; default a directory
	// named after the worker in the system's temporary directory).
	ScratchDir string
	// Output bounds what one run stores of its agent's or script's output
	// (zero values: the defaults).
	Output OutputLimits
	// Admit, when set, is asked before any work of a workspace runs here;
	// an error fails the work with its message (the hub sets it where its
	// backend cannot contain tenant code).
	Admit func(ctx context.Context, workspaceID string) error
}

// Worker claims work through a Port and runs it.
type Worker struct {
	port    workport.Port
	backend executor.Backend
	git     *repo.Git
	cfg     Config
	log     *slog.Logger

	mu      sync.Mutex
	running map[string]*execution // by job id
	freed   chan struct{}
	wg      sync.WaitGroup
	// recovered closes once the work a previous process held is taken back
	// (or found to be none).
	recovered     chan struct{}
	recoveredOnce sync.Once
}

// Recovered closes once the worker has taken back what a previous process
// of it held: a rescuer that starts after it never takes that work from
// under the worker that can still finish it (a result recorded before a
// crash is published, not lost).
func (w *Worker) Recovered() <-chan struct{} { return w.recovered }

// New returns a worker.
func New(port workport.Port, backend executor.Backend, git *repo.Git, cfg Config, log *slog.Logger) *Worker {
	if cfg.Slots <= 0 {
		cfg.Slots = 16
	}
	if cfg.ClaimWait <= 0 {
		cfg.ClaimWait = 30 * time.Second
	}
	if cfg.ScratchDir == "" {
		// Its own: a worker's recovery empties it.
		cfg.ScratchDir = filepath.Join(os.TempDir(), "slipway-scripts-"+strings.NewReplacer("/", "_", "\\", "_").Replace(cfg.ID))
	}
	// Mounted and run from other directories: it must not be relative.
	if abs, err := filepath.Abs(cfg.ScratchDir); err == nil {
		cfg.ScratchDir = abs
	}
	return &Worker{port: port, backend: backend, git: git, cfg: cfg, log: log.With("worker", cfg.ID),
		running: map[string]*execution{}, freed: make(chan struct{}, 1), recovered: make(chan struct{})}
}

// cancel causes.
type cause string

func (c cause) Error() string { return string(c) }

const (
	causeCancelled = cause("cancelled")
	causeShutdown  = cause("the worker is shutting down")
	causeLeaseLost = cause("the lease was lost")
)

// Run recovers what a previous process of this worker left, then claims and
// runs work until ctx ends; then it stops its agents, reports their work
// shut down (it runs again elsewhere or after the restart) and returns when
// all is reported.
func (w *Worker) Run(ctx context.Context) {
	w.log.Info("worker starting", "backend", w.backend.Name(), "slots", w.cfg.Slots)
	w.recover(ctx)
	w.recoveredOnce.Do(func() { close(w.recovered) })

	ctrlCtx, stopCtrl := context.WithCancel(context.Background())
	defer stopCtrl()
	if ctrl, err := w.port.Control(ctrlCtx, w.cfg.ID); err != nil {
		w.log.Warn("no control stream; cancels arrive with lease renewals", "err", err)
	} else {
		go w.control(ctrl)
	}

	backoff := time.Duration(0)
	for ctx.Err() == nil {
		free := w.free()
		if free == 0 {
			select {
			case <-w.freed:
			case <-ctx.Done():
			}
			continue
		}
		as, err := w.port.Claim(ctx, workport.ClaimRequest{Worker: w.cfg.ID, Backend: w.backend.Name(), Max: free, Wait: w.cfg.ClaimWait})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			w.log.Error("claiming work failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		backoff = 0
		for _, a := range as {
			w.start(a)
		}
	}

	w.mu.Lock()
	for _, e := range w.running {
		e.cancel(causeShutdown)
	}
	w.mu.Unlock()
	w.wg.Wait()
	w.log.Info("worker stopped")
}

func (w *Worker) free() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cfg.Slots - len(w.running)
}

// start runs an assignment in its own goroutine.
func (w *Worker) start(a workport.Assignment) {
	ctx, cancel := context.WithCancelCause(context.Background())
	e := newExecution(w, a, cancel)
	w.mu.Lock()
	w.running[a.Lease.JobID] = e
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() {
			w.mu.Lock()
			delete(w.running, a.Lease.JobID)
			w.mu.Unlock()
			cancel(nil)
			select {
			case w.freed <- struct{}{}:
			default:
			}
		}()
		e.run(ctx)
	}()
}

// control applies pushed directives to the work running here.
func (w *Worker) control(ctrl <-chan workport.Control) {
	for c := range ctrl {
		w.mu.Lock()
		e := w.running[c.JobID]
		w.mu.Unlock()
		switch {
		case e == nil:
		case c.Action == workport.ActionCancel:
			e.cancel(causeCancelled)
		case c.Action == workport.ActionDeliver:
			e.poke()
		}
	}
}

// Running reports how many assignments run now.
func (w *Worker) Running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// finish reports a result, retrying when the hub cannot be reached; it
// gives up when the lease is gone. ctx carries the work's span, not a
// deadline.
func (w *Worker) finish(base context.Context, l workport.Lease, r workport.Result) {
	delay := 200 * time.Millisecond
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(base, 30*time.Second)
		err := w.port.Finish(ctx, l, r)
		cancel()
		switch {
		case err == nil:
			return
		case errors.Is(err, workport.ErrLeaseLost):
			w.log.Warn("the work's lease was lost before its result could be reported; the result is dropped",
				"job_id", l.JobID, "run_id", l.RunID, "outcome", r.Outcome)
			return
		case i == 9:
			// The lease expires; the rescuer takes the work back.
			w.log.Error("reporting the result failed; giving up", "job_id", l.JobID, "run_id", l.RunID, "err", err)
			return
		}
		w.log.Warn("reporting the result failed; retrying", "job_id", l.JobID, "run_id", l.RunID, "err", err, "in", delay)
		time.Sleep(delay)
		delay = min(2*delay, 5*time.Second)
	}
}
