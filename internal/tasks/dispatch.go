package tasks

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"slipway/internal/executor"
	"slipway/internal/platform/db"
	"slipway/internal/repo"
)

// DispatchConfig sets how the dispatcher runs tasks on this server.
type DispatchConfig struct {
	Owner          string // lease owner: "hub@<instance id>"
	WorkspaceCap   int    // MAX_PARALLEL_TASKS_PER_WORKSPACE
	DefaultTimeout time.Duration
	Lease          time.Duration
	Poll           time.Duration // pause between queue scans when nothing woke it
	MaxAttempts    int           // a task interrupted by restarts runs at most this often
	Exec           ExecConfig
}

// Dispatcher claims queued tasks within the caps and runs them here.
type Dispatcher struct {
	svc     *Service
	backend executor.Backend
	git     *repo.Git
	cfg     DispatchConfig
	log     *slog.Logger

	wakeCh  chan struct{}
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	wg      sync.WaitGroup
}

// NewDispatcher connects a dispatcher to the service (Create and Launch wake
// it; Cancel kills here).
func NewDispatcher(svc *Service, backend executor.Backend, git *repo.Git, cfg DispatchConfig, log *slog.Logger) *Dispatcher {
	if cfg.Lease == 0 {
		cfg.Lease = 60 * time.Second
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 3
	}
	d := &Dispatcher{svc: svc, backend: backend, git: git, cfg: cfg, log: log, wakeCh: make(chan struct{}, 1),
		running: map[string]context.CancelCauseFunc{}}
	svc.wake = d.Wake
	svc.kill = d.kill
	return d
}

// Wake makes the dispatcher look at the queue now.
func (d *Dispatcher) Wake() {
	select {
	case d.wakeCh <- struct{}{}:
	default:
	}
}

// errCancelled is the cause of a run stopped by a user's cancel.
type cancelCause string

func (c cancelCause) Error() string { return string(c) }

const (
	causeCancelled = cancelCause("cancelled")
	causeShutdown  = cancelCause("the server is shutting down")
)

func (d *Dispatcher) kill(taskID string) {
	d.mu.Lock()
	cancel := d.running[taskID]
	d.mu.Unlock()
	if cancel != nil {
		cancel(causeCancelled)
	}
}

// Run serves the queue until ctx ends; then it stops every agent it runs and
// puts their tasks back in the queue for the next start.
func (d *Dispatcher) Run(ctx context.Context) {
	d.rescue(ctx, true)
	if err := d.backend.Cleanup(ctx); err != nil {
		d.log.Warn("cleaning up leftover agents failed", "backend", d.backend.Name(), "err", err)
	}
	rescueTick := time.NewTicker(d.cfg.Lease / 2)
	defer rescueTick.Stop()
	for {
		d.drain(ctx)
		select {
		case <-ctx.Done():
			d.mu.Lock()
			for _, cancel := range d.running {
				cancel(causeShutdown)
			}
			d.mu.Unlock()
			d.wg.Wait()
			return
		case <-d.wakeCh:
		case <-time.After(d.cfg.Poll):
		case <-rescueTick.C:
			d.rescue(ctx, false)
		}
	}
}

// drain claims and starts tasks until none can start.
func (d *Dispatcher) drain(ctx context.Context) {
	for ctx.Err() == nil {
		t, err := claimNext(ctx, d.svc.db, d.cfg.WorkspaceCap, d.cfg.Owner, d.svc.clock.Now(), d.cfg.Lease)
		if err != nil {
			d.log.Error("claiming a task failed", "err", err)
			return
		}
		if t == nil {
			return
		}
		runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		d.mu.Lock()
		d.running[t.ID] = cancel
		d.mu.Unlock()
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer func() {
				d.mu.Lock()
				delete(d.running, t.ID)
				d.mu.Unlock()
				cancel(nil)
				d.Wake() // a slot is free
			}()
			d.execute(runCtx, t)
		}()
	}
}

// rescue handles tasks whose executor is gone: leases that expired (another
// replica died) and, at boot, everything this owner held before it
// restarted. Each goes back to the queue with an event saying why, until it
// has run MaxAttempts times; then it fails.
func (d *Dispatcher) rescue(ctx context.Context, boot bool) {
	ids, err := orphans(ctx, d.svc.db.R, d.cfg.Owner, d.svc.clock.Now(), boot)
	if err != nil {
		d.log.Error("finding orphaned tasks failed", "err", err)
		return
	}
	for _, id := range ids {
		d.mu.Lock()
		_, ours := d.running[id]
		d.mu.Unlock()
		if ours {
			continue
		}
		if err := d.requeueOrphan(ctx, id); err != nil {
			d.log.Error("rescuing a task failed", "task_id", id, "err", err)
		}
	}
	if len(ids) > 0 {
		d.Wake()
	}
}

func (d *Dispatcher) requeueOrphan(ctx context.Context, id string) error {
	s := d.svc
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTaskAnyWorkspace(ctx, tx, id)
		if err != nil {
			return err
		}
		if !Active(t.Status) {
			return nil
		}
		now := s.clock.Now()
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET status = 'failed', error = $2, finished_at = $3 WHERE task_id = $1 AND status = 'running'",
			id, "the server running this task stopped", now); err != nil {
			return err
		}
		attempts, err := countRuns(ctx, tx, id)
		if err != nil {
			return err
		}
		to, reason := StatusQueued, "the server running this task stopped; it runs again"
		if attempts >= d.cfg.MaxAttempts {
			to, reason = StatusFailed, "the server running this task stopped, and it has been interrupted this way too often"
		}
		ok, err := setStatus(ctx, tx, id, t.Status, to, map[bool]string{true: reason, false: ""}[to == StatusFailed], now)
		if err != nil || !ok {
			return err
		}
		return s.event(ctx, tx, id, nil, EventStatus, statusPayload(t.Status, to, reason))
	})
}
