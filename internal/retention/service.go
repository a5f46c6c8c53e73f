// Package retention prunes finished runs older than
// SERVICE_RUN_RETENTION_DAYS with their events (DESIGN §4 and §10: SQLite
// must not grow without bound; retention of finished runs is a bound). The
// rules span runs, tasks, workflows and scripts, whose packages must not
// import each other, so they live here, as plain SQL over their tables;
// the sweep is global (every workspace), run hourly by every replica.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
)

// Service prunes finished runs.
type Service struct {
	db    *db.DB
	clock clock.Clock
	keep  time.Duration // 0: forever
	log   *slog.Logger
}

// New returns the pruner of runs that finished more than days ago; 0 days
// keeps everything.
func New(d *db.DB, clk clock.Clock, days int, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: d, clock: clk, keep: time.Duration(days) * 24 * time.Hour, log: log}
}

// Pruned is what one pass removed.
type Pruned struct {
	WorkflowRuns int   // workflow runs, with their log
	NodeRuns     int   // their node runs
	ChildRuns    int   // runs of a pruned workflow run (its code nodes' script runs)
	ScriptRuns   int   // standalone script runs
	TaskRuns     int   // runs of finished tasks (the tasks stay)
	Events       int64 // events of all of them
	FreedPages   int64 // SQLite pages given back to the file system
}

// Runs counts the runs removed, of every kind.
func (p Pruned) Runs() int { return p.WorkflowRuns + p.ChildRuns + p.ScriptRuns + p.TaskRuns }

// Prune is the hourly sweep (platform/sweep): one pass, logged, reporting
// how many runs it removed.
func (s *Service) Prune(ctx context.Context) (int, error) {
	p, err := s.Pass(ctx)
	if p.Runs() > 0 || p.Events > 0 || p.FreedPages > 0 {
		s.log.Info("retention: finished runs pruned", "older_than", s.keep.String(), "workflow_runs", p.WorkflowRuns,
			"node_runs", p.NodeRuns, "child_runs", p.ChildRuns, "script_runs", p.ScriptRuns, "task_runs", p.TaskRuns,
			"events", p.Events, "freed_pages", p.FreedPages)
	}
	return p.Runs(), err
}

// Pass removes what finished before now minus the retention, in batches:
// workflow runs first (their child runs go with them), then standalone
// script runs, then the runs of finished tasks; then, on SQLite, it gives
// the free pages back (those of other deletes too: pruned jobs, deleted
// tasks). Replicas sweeping at the same moment take turns: one passes, the
// others skip this pass.
func (s *Service) Pass(ctx context.Context) (Pruned, error) {
	var p Pruned
	if s.keep <= 0 {
		return p, nil
	}
	release, ok, err := s.db.Dialect.TryLock(ctx, s.db, "run-retention")
	if err != nil || !ok {
		return p, err
	}
	defer release()
	cutoff := s.clock.Now().Add(-s.keep)
	if err := s.workflows(ctx, cutoff, &p); err != nil {
		return p, err
	}
	if p.ScriptRuns, err = s.leaves(ctx, cutoff, scriptBatch, scriptEvents, scriptRuns, &p.Events); err != nil {
		return p, err
	}
	if p.TaskRuns, err = s.leaves(ctx, cutoff, taskBatch, taskEvents, taskRuns, &p.Events); err != nil {
		return p, err
	}
	if s.db.Engine() == db.SQLite {
		p.FreedPages, err = incrementalVacuum(ctx, s.db)
	}
	return p, err
}

// leaves prunes top-level runs without children (scripts, tasks) batch by
// batch until a batch comes back short: each batch's events in chunks,
// then its rows. It reports the runs removed and adds the events to
// *events.
func (s *Service) leaves(ctx context.Context, cutoff time.Time, batch, deleteEvents, deleteRuns string, events *int64) (int, error) {
	removed := 0
	for {
		ids, err := readIDs(ctx, s.db.R, batch, cutoff)
		if err != nil || len(ids) == 0 {
			return removed, err
		}
		if err := s.events(ctx, lockRunsSQL, ids, deleteEvents, cutoff, ids, events); err != nil {
			return removed, err
		}
		var n int64
		err = s.db.Tx(ctx, func(tx *db.Tx) (err error) {
			if err := lock(ctx, tx, s.db, lockRunsSQL, ids); err != nil {
				return err
			}
			n, err = deleteBatch(ctx, tx, deleteRuns, padded(ids, cutoff)...)
			return err
		})
		if err != nil {
			return removed, fmt.Errorf("retention: delete runs: %w", err)
		}
		removed += int(n)
		if len(ids) < batchRuns || n == 0 {
			return removed, nil
		}
	}
}

// workflows prunes workflow runs batch by batch: the events on their logs
// in chunks, then in one transaction per batch their rows.
func (s *Service) workflows(ctx context.Context, cutoff time.Time, p *Pruned) error {
	for {
		ids, logs, err := readPairs(ctx, s.db.R, workflowBatch, cutoff)
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := s.events(ctx, lockLogsSQL, logs, workflowEvents, cutoff, ids, &p.Events); err != nil {
			return err
		}
		var n [counts]int64
		err = s.db.Tx(ctx, func(tx *db.Tx) error {
			n = [counts]int64{}
			if err := lock(ctx, tx, s.db, lockLogsSQL, logs); err != nil {
				return err
			}
			still, stillLogs, err := readPairs(ctx, tx, workflowRecheck, padded(ids, cutoff)...)
			if err != nil || len(still) == 0 {
				return err
			}
			for _, del := range workflowDeletes {
				keys := still
				if del.byLog {
					keys = stillLogs
				}
				k, err := deleteBatch(ctx, tx, del.sql, padded(keys)...)
				if err != nil {
					return fmt.Errorf("retention: delete workflow runs: %w", err)
				}
				n[del.count] += k
			}
			return nil
		})
		if err != nil {
			return err
		}
		p.WorkflowRuns += int(n[countWorkflows])
		p.ChildRuns += int(n[countChildren])
		p.NodeRuns += int(n[countNodes])
		p.Events += n[countEvents]
		if len(ids) < batchRuns || n[countWorkflows] == 0 {
			return nil
		}
	}
}

// events deletes a batch's events chunk by chunk, each chunk in a
// transaction of its own that first locks the batch's runs (lockQuery over
// lockIDs) as a delete of their log would.
func (s *Service) events(ctx context.Context, lockQuery string, lockIDs []string, deleteEvents string, cutoff time.Time, ids []string,
	total *int64) error {
	for {
		var n int64
		err := s.db.Tx(ctx, func(tx *db.Tx) (err error) {
			if err := lock(ctx, tx, s.db, lockQuery, lockIDs); err != nil {
				return err
			}
			n, err = deleteBatch(ctx, tx, deleteEvents, padded(ids, cutoff)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("retention: delete events: %w", err)
		}
		*total += n
		if n < chunkEvents {
			return nil
		}
	}
}
