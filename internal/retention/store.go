package retention

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"slipway/internal/platform/db"
)

// Batch sizes: the runs one batch takes, and the events one statement
// deletes. Each statement is its own short transaction, so neither the
// SQLite writer nor PostgreSQL's row locks are held for long, however
// large the backlog.
const (
	batchRuns   = 500
	chunkEvents = 2000
)

// What a finished run older than the cutoff ($1) is, per pass. Every
// statement that deletes repeats its pass's rule, so a run that stopped
// qualifying since its batch was read (a task restarted meanwhile) is
// left alone.
const (
	// leafRun: a run without children, finished before the cutoff. Only
	// top-level runs are read (leafBatch): a run with a parent goes only
	// with that parent (a workflow run's code nodes), and one with
	// children is never deleted from under them.
	leafRun = `r.status <> 'running' AND r.finished_at < $1 AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = r.id)`

	// taskRule: besides leafRun, the run's task is itself finished before
	// the cutoff, its parent task (if any) is too, and no workflow node is
	// still waiting on it. The task row and its own events (not a run's)
	// stay.
	taskRule = leafRun + `
		AND EXISTS (SELECT 1 FROM tasks t WHERE t.id = r.task_id
			AND t.status IN ('done', 'done_pr', 'failed', 'cancelled') AND t.finished_at < $1
			AND NOT EXISTS (SELECT 1 FROM tasks p WHERE p.id = t.parent_task_id
				AND (p.status NOT IN ('done', 'done_pr', 'failed', 'cancelled') OR p.finished_at IS NULL OR p.finished_at >= $1))
			AND NOT EXISTS (SELECT 1 FROM node_runs n WHERE n.task_id = t.id AND n.status IN ('ready', 'running', 'waiting')))`

	// workflowRule: a workflow run finished before the cutoff whose
	// every run (itself and its children, on its log or naming it as
	// parent) has too, with no node still to settle, no agent node's
	// task still live and no unfinished job for it.
	workflowRule = `wr.status IN ('succeeded', 'failed', 'cancelled') AND wr.finished_at < $1
		AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.log_id = wr.log_id
			AND (o.status = 'running' OR o.finished_at IS NULL OR o.finished_at >= $1))
		AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = wr.id
			AND (c.status = 'running' OR c.finished_at IS NULL OR c.finished_at >= $1))
		AND NOT EXISTS (SELECT 1 FROM node_runs n WHERE n.run_id = wr.id AND n.status IN ('ready', 'running', 'waiting'))
		AND NOT EXISTS (SELECT 1 FROM node_runs n JOIN tasks t ON t.id = n.task_id
			WHERE n.run_id = wr.id AND t.status IN ('queued', 'running', 'needs_input'))
		AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'workflow_run' AND j.ref_id = wr.id AND j.state IN ('available', 'running'))`
)

// list is "$from, …" with batchRuns placeholders: a batch's ids, padded to
// a full batch so every batch runs the same statement text (SQLite keeps
// each text prepared; a text per batch size would crowd the cache).
func list(from int) string {
	var sb strings.Builder
	for i := range batchRuns {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("$" + strconv.Itoa(from+i))
	}
	return sb.String()
}

// padded is lead followed by ids, the first id repeated up to a full batch.
func padded(ids []string, lead ...any) []any {
	out := append(make([]any, 0, len(lead)+batchRuns), lead...)
	for i := range batchRuns {
		if i < len(ids) {
			out = append(out, ids[i])
		} else {
			out = append(out, ids[0])
		}
	}
	return out
}

var (
	limitRuns   = " LIMIT " + strconv.Itoa(batchRuns)
	limitEvents = " LIMIT " + strconv.Itoa(chunkEvents)
	cutoffList  = list(2) // after the cutoff ($1)
	idList      = list(1)

	// Leaf runs: standalone script runs (POST /api/scripts/{id}/run) and
	// task runs; the batch, its events, its rows.
	scriptBatch, scriptEvents, scriptRuns = leafBatch("script", leafRun), leafEvents(leafRun), leafRuns(leafRun)
	taskBatch, taskEvents, taskRuns       = leafBatch("task", taskRule), leafEvents(taskRule), leafRuns(taskRule)

	// Workflow runs: the batch, the events on their logs, which of them
	// still qualify once locked.
	workflowBatch  = "SELECT wr.id, wr.log_id FROM workflow_runs wr WHERE " + workflowRule + " ORDER BY wr.finished_at, wr.id" + limitRuns
	workflowEvents = "DELETE FROM run_events WHERE id IN (SELECT e.id FROM workflow_runs wr JOIN run_events e ON e.log_id = wr.log_id " +
		"WHERE wr.id IN (" + cutoffList + ") AND " + workflowRule + limitEvents + ")"
	workflowRecheck = "SELECT wr.id, wr.log_id FROM workflow_runs wr WHERE wr.id IN (" + cutoffList + ") AND " + workflowRule
)

// leafBatch reads a batch of a kind's top-level runs through
// runs_finished (whose predicate leaves workflow runs out: SQLite uses a
// partial index only for a query that repeats each of its terms). The
// statements on a batch leave out what never changes (kind, parent): with
// those terms SQLite would walk every top-level run, or every old one of
// the kind, instead of looking the batch's ids up.
func leafBatch(kind, rule string) string {
	return "SELECT r.id FROM runs r WHERE r.kind = '" + kind + "' AND r.kind <> 'workflow' AND r.parent_run_id IS NULL AND " + rule +
		" ORDER BY r.finished_at, r.id" + limitRuns
}

func leafEvents(rule string) string {
	return "DELETE FROM run_events WHERE id IN (SELECT e.id FROM runs r JOIN run_events e ON e.run_id = r.id " +
		"WHERE r.id IN (" + cutoffList + ") AND " + rule + limitEvents + ")"
}

func leafRuns(rule string) string {
	return "DELETE FROM runs WHERE id IN (SELECT r.id FROM runs r WHERE r.id IN (" + cutoffList + ") AND " + rule + ")"
}

// Locks, taken in the order runs.DeleteLog takes them (a log's runs by
// id, before anything that cascades from them), so a sweep and a user
// deleting the same task, script or workflow wait for each other instead
// of deadlocking. SQLite's one writer needs none (Dialect.ForUpdate is
// empty there).
var (
	lockRunsSQL = "SELECT id FROM runs WHERE id IN (" + idList + ") ORDER BY id"
	lockLogsSQL = "SELECT id FROM runs WHERE log_id IN (" + idList + ") ORDER BY id"
)

// lockWait bounds how long a sweep's transaction waits for a row lock on
// PostgreSQL; the pass then ends with the error and its rows wait for the
// next one. Being below PostgreSQL's deadlock_timeout (1 s by default),
// when a user's transaction locks the same rows in another order (a
// project's deletion cascading into its runs) the sweep usually gives up
// before the deadlock check picks the user's transaction as its victim.
const lockWait = "500ms"

// lock begins a sweep transaction: on PostgreSQL it bounds its lock waits,
// then it locks the rows of query (on PostgreSQL, FOR UPDATE locks them as
// they are read).
func lock(ctx context.Context, tx *db.Tx, d *db.DB, query string, ids []string) error {
	if d.Engine() == db.Postgres {
		if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '"+lockWait+"'"); err != nil {
			return fmt.Errorf("retention: lock timeout: %w", err)
		}
	}
	rows, err := tx.QueryContext(ctx, query+d.Dialect.ForUpdate(), padded(ids)...)
	if err != nil {
		return fmt.Errorf("retention: lock: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("retention: lock: %w", err)
	}
	return nil
}

// What a statement of workflowDeletes removes, for the pass's counts.
const (
	countNothing = iota
	countEvents
	countChildren
	countNodes
	countWorkflows
	counts
)

// The rows of a batch of workflow runs, in foreign-key order: what is left
// of their logs' events, their children, their node runs, the workflow
// runs, their runs rows, their logs. (The last statement's cascades would
// take all of them; deleting each in turn keeps every statement's work in
// sight and counted.) byLog: the statement takes the logs' ids.
var workflowDeletes = []struct {
	sql   string
	byLog bool
	count int
}{
	{"DELETE FROM run_events WHERE log_id IN (" + idList + ")", true, countEvents},
	{"DELETE FROM runs WHERE parent_run_id IN (" + idList + ")", false, countChildren},
	{"DELETE FROM node_runs WHERE run_id IN (" + idList + ")", false, countNodes},
	{"DELETE FROM workflow_runs WHERE id IN (" + idList + ")", false, countWorkflows},
	{"DELETE FROM runs WHERE id IN (" + idList + ")", false, countNothing},
	{"DELETE FROM event_logs WHERE id IN (" + idList + ")", true, countNothing},
}

// readIDs reads a batch of run ids.
func readIDs(ctx context.Context, q db.Queryer, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("retention: batch: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("retention: batch: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// readPairs reads a batch of workflow runs' ids and their logs' ids.
func readPairs(ctx context.Context, q db.Queryer, query string, args ...any) (ids, logs []string, err error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("retention: batch: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, log string
		if err := rows.Scan(&id, &log); err != nil {
			return nil, nil, fmt.Errorf("retention: batch: %w", err)
		}
		ids, logs = append(ids, id), append(logs, log)
	}
	return ids, logs, rows.Err()
}

// deleteBatch runs one of the pass's deleting statements and reports the
// rows it removed.
func deleteBatch(ctx context.Context, tx *db.Tx, query string, args ...any) (int64, error) {
	return affected(tx.ExecContext(ctx, query, args...))
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// SQLite gives freed pages back to the file system in steps of this many
// pages (8 MiB at the default page size), each a short write transaction.
const vacuumStep = 2048

// incrementalVacuum returns free pages to the file system on a database
// created with auto_vacuum=INCREMENTAL (db.Open creates them so); a file
// made before that setting keeps its free pages for reuse. It reports the
// pages given back.
func incrementalVacuum(ctx context.Context, d *db.DB) (int64, error) {
	var mode int
	if err := d.W.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return 0, fmt.Errorf("retention: auto_vacuum: %w", err)
	}
	if mode != 2 { // 2: incremental
		return 0, nil
	}
	var freed int64
	for ctx.Err() == nil {
		var before, after int64
		if err := d.W.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&before); err != nil {
			return freed, fmt.Errorf("retention: freelist: %w", err)
		}
		if before == 0 {
			break
		}
		if _, err := d.W.ExecContext(ctx, "PRAGMA incremental_vacuum("+strconv.Itoa(vacuumStep)+")"); err != nil {
			return freed, fmt.Errorf("retention: incremental vacuum: %w", err)
		}
		if err := d.W.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&after); err != nil {
			return freed, fmt.Errorf("retention: freelist: %w", err)
		}
		if after >= before {
			break // nothing more to give back
		}
		freed += before - after
	}
	return freed, ctx.Err()
}
