package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Every statement on a run or a log names its workspace: another
// workspace's run reads, and is changed, exactly like a missing one.

const runColumns = `id, kind, status, workspace_id, project_id, task_id, parent_run_id, attempt, backend, exit_code, error, created_at,
	finished_at, log_id, job_id, result, batch_seq, events IS NOT NULL`

func scanRun(row interface{ Scan(...any) error }) (*Run, error) {
	var r Run
	var exit sql.NullInt64
	var job, result sql.NullString
	err := row.Scan(&r.ID, &r.Kind, &r.Status, &r.WorkspaceID, &r.ProjectID, &r.TaskID, &r.ParentRunID, &r.Attempt, &r.Backend,
		&exit, &r.Error, db.UTC(&r.CreatedAt), db.NullUTC(&r.FinishedAt), &r.LogID, &job, &result, &r.BatchSeq, &r.packed)
	if err != nil {
		return nil, err
	}
	if exit.Valid {
		n := int(exit.Int64)
		r.ExitCode = &n
	}
	r.JobID = job.String
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	return &r, nil
}

func insertLog(ctx context.Context, q db.Queryer, workspaceID, id string, now time.Time) error {
	if _, err := q.ExecContext(ctx, "INSERT INTO event_logs (id, workspace_id, created_at) VALUES ($1, $2, $3)", id, workspaceID, now); err != nil {
		return fmt.Errorf("runs: create log: %w", err)
	}
	return nil
}

// ensureLog creates an event log unless it exists.
func ensureLog(ctx context.Context, q db.Queryer, workspaceID, id string, now time.Time) error {
	if _, err := q.ExecContext(ctx, "INSERT INTO event_logs (id, workspace_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
		id, workspaceID, now); err != nil {
		return fmt.Errorf("runs: ensure log: %w", err)
	}
	return nil
}

// lastResult is the result of the newest run on a log that recorded one
// (nil when none did).
func lastResult(ctx context.Context, q db.Queryer, workspaceID, logID string) (json.RawMessage, error) {
	var res []byte
	err := q.QueryRowContext(ctx, `SELECT result FROM runs WHERE workspace_id = $1 AND log_id = $2 AND result IS NOT NULL
		ORDER BY created_at DESC, id DESC LIMIT 1`, workspaceID, logID).Scan(&res)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runs: last result: %w", err)
	}
	return res, nil
}

func deleteLog(ctx context.Context, q db.Queryer, d db.Dialect, workspaceID, id string) error {
	// Lock the log's runs before the log, in the order an append takes them
	// (its run, then the log): deleting the log first deadlocked with a run
	// still appending (the cascade then waited for the run's row).
	rows, err := q.QueryContext(ctx, "SELECT id FROM runs WHERE workspace_id = $1 AND log_id = $2 ORDER BY id"+d.ForUpdate(), workspaceID, id)
	if err != nil {
		return fmt.Errorf("runs: delete log: %w", err)
	}
	for rows.Next() { // locked as they are read
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("runs: delete log: %w", err)
	}
	rows.Close()
	if _, err := q.ExecContext(ctx, "DELETE FROM event_logs WHERE workspace_id = $1 AND id = $2", workspaceID, id); err != nil {
		return fmt.Errorf("runs: delete log: %w", err)
	}
	return nil
}

func insertRun(ctx context.Context, q db.Queryer, r *Run) error {
	_, err := q.ExecContext(ctx, `INSERT INTO runs (id, workspace_id, log_id, kind, status, project_id, task_id, parent_run_id, job_id, attempt,
		backend, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		r.ID, r.WorkspaceID, r.LogID, r.Kind, r.Status, r.ProjectID, r.TaskID, r.ParentRunID, db.Null(r.JobID), r.Attempt, r.Backend, r.CreatedAt)
	if err != nil {
		return fmt.Errorf("runs: insert: %w", err)
	}
	countStarted(q, r.Kind)
	return nil
}

// packedEvent is one event of a run recorded at once, as its row's events
// column keeps it: a JSON array in sequence order, each event an array
// [type, micros, payload] (it is stored for every such run: no keys). Its
// time is kept in microseconds from the run's created_at; its id is not
// kept: it is derived from the run's id and its sequence number (eventID).
// Runs packed before 00023 keep each event as {"t", "p", "us"}; both read.
type packedEvent struct {
	Type    string          `json:"t"`
	Payload json.RawMessage `json:"p"`
	Micros  int64           `json:"us"`
}

// MarshalJSON writes the event as [type, micros, payload].
func (e packedEvent) MarshalJSON() ([]byte, error) {
	t, err := json.Marshal(e.Type)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(t)+len(e.Payload)+24)
	b = append(append(append(b, '['), t...), ',')
	b = append(strconv.AppendInt(b, e.Micros, 10), ',')
	if len(e.Payload) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Payload...)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads either form of a packed event.
func (e *packedEvent) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '[' {
		type keyed packedEvent // without the methods
		return json.Unmarshal(b, (*keyed)(e))
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	if len(parts) != 3 {
		return fmt.Errorf("runs: a packed event has %d parts, not 3", len(parts))
	}
	if err := json.Unmarshal(parts[0], &e.Type); err != nil {
		return err
	}
	if err := json.Unmarshal(parts[1], &e.Micros); err != nil {
		return err
	}
	e.Payload = parts[2]
	return nil
}

// pack is an event as packed on a run created at base.
func pack(typ string, payload json.RawMessage, at, base time.Time) packedEvent {
	return packedEvent{Type: typ, Payload: payload, Micros: clock.Normalize(at).Sub(clock.Normalize(base)).Microseconds()}
}

// at is the event's time on a run created at base.
func (e packedEvent) at(base time.Time) time.Time {
	return clock.Normalize(base).Add(time.Duration(e.Micros) * time.Microsecond)
}

// maxPacked bounds the events a run keeps packed (eventID numbers them in
// three bytes); a run with more keeps them as rows.
const maxPacked = 1 << 16

// eventID is the id of a packed run's event seq (from 1).
func eventID(runID string, seq int64) string { return ids.Derive(runID, seq) }

// recordEnded queues (tx.Later) the inserts of a run that ended in the
// transaction that started it: its log and its row with their final
// sequence numbers and, up to maxPacked, its events packed in the row;
// beyond that its events as rows numbered from 1 on both.
func recordEnded(tx *db.Tx, r *Run, evs []packedEvent, rows func() []row) error {
	n := int64(len(evs))
	tx.Later("INSERT INTO event_logs (id, workspace_id, created_at, event_seq) VALUES ($1, $2, $3, $4)", r.LogID, r.WorkspaceID, r.CreatedAt, n)
	var packed any
	if len(evs) <= maxPacked {
		b, err := json.Marshal(evs)
		if err != nil {
			return fmt.Errorf("runs: pack events: %w", err)
		}
		packed = string(b)
	}
	tx.Later(`INSERT INTO runs (id, workspace_id, log_id, kind, status, project_id, task_id, parent_run_id, job_id, attempt,
		backend, created_at, error, finished_at, event_seq, events) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		r.ID, r.WorkspaceID, r.LogID, r.Kind, r.Status, r.ProjectID, r.TaskID, r.ParentRunID, db.Null(r.JobID), r.Attempt, r.Backend, r.CreatedAt,
		r.Error, r.FinishedAt, n, packed)
	if packed == nil {
		rs := rows()
		for start := 0; start < len(rs); start += eventChunk {
			chunk := rs[start:min(start+eventChunk, len(rs))]
			args := make([]any, 0, len(chunk)*8)
			for i := range chunk {
				chunk[i].logSeq = *chunk[i].runSeq
				c := chunk[i]
				args = append(args, c.id, c.logID, c.logSeq, c.runID, c.runSeq, c.ev.Type, string(c.ev.Payload), c.ev.At)
			}
			tx.Later(insertEventsPlain(len(chunk)), args...)
		}
	}
	countStarted(tx, r.Kind)
	countFinished(tx, r.Kind, r.Status)
	return nil
}

// packedEvents pages through the events packed in a run's row (seq from
// 1); task is what they name as their task.
func packedEvents(ctx context.Context, q db.Queryer, r *Run, task string, after int32, limit int) ([]TaskEvent, error) {
	var raw []byte
	if err := q.QueryRowContext(ctx, "SELECT events FROM runs WHERE workspace_id = $1 AND id = $2", r.WorkspaceID, r.ID).Scan(&raw); err != nil {
		return nil, fmt.Errorf("runs: packed events: %w", err)
	}
	var evs []packedEvent
	if err := json.Unmarshal(raw, &evs); err != nil {
		return nil, fmt.Errorf("runs: packed events: %w", err)
	}
	out := make([]TaskEvent, 0, min(limit, len(evs)))
	for i := max(int(after), 0); i < len(evs) && len(out) < limit; i++ {
		seq := int64(i + 1)
		out = append(out, TaskEvent{EventID: eventID(r.ID, seq), EventType: evs[i].Type, Payload: evs[i].Payload, SequenceNum: int32(seq),
			TaskID: task, Timestamp: evs[i].at(r.CreatedAt)})
	}
	return out, nil
}

// countRuns counts the top-level runs of a kind on a log (a new run's
// attempt number is one more).
func countRuns(ctx context.Context, q db.Queryer, workspaceID, logID, kind string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE workspace_id = $1 AND log_id = $2 AND kind = $3 AND parent_run_id IS NULL",
		workspaceID, logID, kind).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("runs: count: %w", err)
	}
	return n, nil
}

// finishRun moves a running run to a terminal status; it reports false when
// the run was not running (it keeps the status it had).
func finishRun(ctx context.Context, q db.Queryer, workspaceID, id, status string, exit *int, errText string, now time.Time) (bool, error) {
	var kind string
	err := q.QueryRowContext(ctx, `UPDATE runs SET status = $3, exit_code = $4, error = $5, finished_at = $6
		WHERE workspace_id = $1 AND id = $2 AND status = 'running' RETURNING kind`, workspaceID, id, status, exit, errText, now).Scan(&kind)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("runs: finish: %w", err)
	}
	countFinished(q, kind, status)
	return true, nil
}

// setExitCode records the exit code of a run that was finished before its
// process ended (a cancel), unless one is known.
func setExitCode(ctx context.Context, q db.Queryer, workspaceID, id string, exit int) error {
	_, err := q.ExecContext(ctx, "UPDATE runs SET exit_code = $3 WHERE workspace_id = $1 AND id = $2 AND exit_code IS NULL", workspaceID, id, exit)
	if err != nil {
		return fmt.Errorf("runs: exit code: %w", err)
	}
	return nil
}

func getRun(ctx context.Context, q db.Queryer, workspaceID, id string) (*Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE workspace_id = $1 AND id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("run")
	}
	if err != nil {
		return nil, fmt.Errorf("runs: get: %w", err)
	}
	return r, nil
}

func queryRuns(ctx context.Context, q db.Queryer, query string, args ...any) ([]Run, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("runs: list: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("runs: list: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

func listRuns(ctx context.Context, q db.Queryer, w db.Where, orderBy string, limit, offset int) ([]Run, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE "+w.SQL, w.Args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("runs: count: %w", err)
	}
	args := append(append([]any{}, w.Args...), limit, offset)
	out, err := queryRuns(ctx, q, "SELECT "+runColumns+" FROM runs WHERE "+w.SQL+" ORDER BY "+orderBy+" LIMIT "+w.Next(1)+" OFFSET "+w.Next(2), args...)
	return out, total, err
}

// runsOnLog lists the top-level runs of a kind on a log, newest first.
func runsOnLog(ctx context.Context, q db.Queryer, workspaceID, logID, kind string, limit int) ([]Run, error) {
	return queryRuns(ctx, q, "SELECT "+runColumns+` FROM runs WHERE workspace_id = $1 AND log_id = $2 AND kind = $3 AND parent_run_id IS NULL
		ORDER BY created_at DESC, id DESC LIMIT $4`, workspaceID, logID, kind, limit)
}

func childRuns(ctx context.Context, q db.Queryer, workspaceID, parentID string) ([]Run, error) {
	return queryRuns(ctx, q, "SELECT "+runColumns+" FROM runs WHERE workspace_id = $1 AND parent_run_id = $2 ORDER BY created_at, id",
		workspaceID, parentID)
}

func runningRuns(ctx context.Context, q db.Queryer, workspaceID, logID string) ([]Run, error) {
	return queryRuns(ctx, q, "SELECT "+runColumns+" FROM runs WHERE workspace_id = $1 AND log_id = $2 AND status = 'running' ORDER BY created_at, id",
		workspaceID, logID)
}

// reserveLog takes n sequence numbers on a log and returns the last one.
func reserveLog(ctx context.Context, tx *db.Tx, workspaceID, logID string, n int) (int64, error) {
	var last int64
	err := tx.QueryRowContext(ctx, "UPDATE event_logs SET event_seq = event_seq + $3 WHERE workspace_id = $1 AND id = $2 RETURNING event_seq",
		workspaceID, logID, n).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, apperr.NotFound("event log")
	}
	if err != nil {
		return 0, fmt.Errorf("runs: reserve log sequence: %w", err)
	}
	return last, nil
}

// reserved is what reserve took: the run's last sequence number and its
// log, and the log's last (running false: the run has ended, and the log
// took nothing).
type reserved struct {
	running bool
	runLast int64
	runLog  string
	logLast int64
}

// reserve takes n sequence numbers on a running run and on its log, in one
// round trip on PostgreSQL (the log's only when the run is running and
// writes to it).
func reserve(ctx context.Context, tx *db.Tx, workspaceID, logID, runID string, n int) (reserved, error) {
	var res reserved
	var logFound bool
	err := tx.Pipe(ctx,
		db.Query{SQL: `UPDATE runs SET event_seq = event_seq + $3 WHERE workspace_id = $1 AND id = $2 AND status = 'running'
		RETURNING event_seq, log_id`, Args: []any{workspaceID, runID, n}, Scan: db.ScanOne(&res.running, &res.runLast, &res.runLog)},
		db.Query{SQL: `UPDATE event_logs SET event_seq = event_seq + $3 WHERE workspace_id = $1 AND id = $2
		AND EXISTS (SELECT 1 FROM runs WHERE workspace_id = $1 AND id = $4 AND status = 'running' AND log_id = $2) RETURNING event_seq`,
			Args: []any{workspaceID, logID, n, runID}, Scan: db.ScanOne(&logFound, &res.logLast)})
	if err != nil {
		return res, fmt.Errorf("runs: reserve sequence: %w", err)
	}
	if res.running && res.runLog == logID && !logFound {
		return res, apperr.NotFound("event log")
	}
	return res, nil
}

// row is an event ready to insert.
type row struct {
	id     string
	logID  string
	logSeq int64
	runID  *string
	runSeq *int64
	ev     NewEvent
}

// eventChunk rows go in one INSERT (8 parameters each).
const eventChunk = 64

// insertEvents inserts rows with multi-row statements (the transaction
// keeps each size prepared: a batch of 500 events is eight executions of
// one statement). Each row's payload becomes the text stored (see
// Dialect.StoredJSON): what goes out live must be what the events endpoints
// read back. With later the inserts are queued (db.Tx.Queue) and the
// stored payloads are on the rows once the transaction's next statement or
// its commit ran; otherwise now.
func insertEvents(ctx context.Context, tx *db.Tx, dialect db.Dialect, rows []row, later bool) error {
	var qs []db.Query
	for start := 0; start < len(rows); {
		n := min(eventChunk, len(rows)-start)
		if n < eventChunk && len(rows) > eventChunk {
			n = 1 // the tail of a big batch goes row by row: one more statement, not one per size
		}
		chunk := rows[start : start+n]
		args := make([]any, 0, n*8)
		for _, r := range chunk {
			args = append(args, r.id, r.logID, r.logSeq, r.runID, r.runSeq, r.ev.Type, string(r.ev.Payload), r.ev.At)
		}
		q := db.Query{SQL: insertEventsQuery(dialect, n), Args: args}
		if dialect.StoredJSON("payload") != "" {
			q.Scan = storedPayloads(chunk)
		}
		qs = append(qs, q)
		start += n
	}
	if later {
		tx.Queue(qs...)
		return nil
	}
	if err := tx.Pipe(ctx, qs...); err != nil {
		return fmt.Errorf("runs: append: %w", err)
	}
	return nil
}

// storedPayloads takes the stored payloads back onto the chunk's rows,
// matched by id (RETURNING promises no order).
func storedPayloads(chunk []row) func(db.Rows) error {
	return func(rs db.Rows) error {
		for rs.Next() {
			var id, payload string
			if err := rs.Scan(&id, &payload); err != nil {
				return err
			}
			for i := range chunk {
				if chunk[i].id == id {
					chunk[i].ev.Payload = json.RawMessage(payload)
					break
				}
			}
		}
		return rs.Err()
	}
}

// insertEventsQueries memoises insertEventsSQL by dialect and size.
var insertEventsQueries sync.Map

func insertEventsQuery(dialect db.Dialect, rows int) string {
	key := fmt.Sprintf("%T/%d", dialect, rows)
	if q, ok := insertEventsQueries.Load(key); ok {
		return q.(string)
	}
	q := insertEventsSQL(rows, dialect.Placeholder, dialect.StoredJSON("payload"))
	insertEventsQueries.Store(key, q)
	return q
}

// insertEventsPlain is the insert of rows events without taking anything
// back ($N placeholders, which both engines read).
func insertEventsPlain(rows int) string {
	key := fmt.Sprintf("plain/%d", rows)
	if q, ok := insertEventsQueries.Load(key); ok {
		return q.(string)
	}
	q := insertEventsSQL(rows, func(n int) string { return "$" + strconv.Itoa(n) }, "")
	insertEventsQueries.Store(key, q)
	return q
}

// insertEventsSQL is the insert of rows events, placeholders numbered by
// placeholder, tail appended (what it takes back).
func insertEventsSQL(rows int, placeholder func(int) string, tail string) string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO run_events (id, log_id, log_seq, run_id, run_seq, event_type, payload, created_at) VALUES ")
	p := 0
	for r := 0; r < rows; r++ {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := 0; c < 8; c++ {
			if c > 0 {
				sb.WriteString(", ")
			}
			p++
			sb.WriteString(placeholder(p))
		}
		sb.WriteByte(')')
	}
	sb.WriteString(tail)
	return sb.String()
}

// recordResult keeps the agent's result line on its run.
func recordResult(ctx context.Context, tx *db.Tx, workspaceID, runID string, payload json.RawMessage) error {
	_, err := tx.ExecContext(ctx, "UPDATE runs SET result = $3 WHERE workspace_id = $1 AND id = $2", workspaceID, runID, string(payload))
	if err != nil {
		return fmt.Errorf("runs: record result: %w", err)
	}
	return nil
}

// takeBatch moves a run's last stored worker batch to seq; it reports false
// for a batch stored before (a retried upload).
func takeBatch(ctx context.Context, tx *db.Tx, workspaceID, runID string, seq int64) (bool, error) {
	var got int64
	err := tx.QueryRowContext(ctx, "UPDATE runs SET batch_seq = $3 WHERE workspace_id = $1 AND id = $2 AND batch_seq < $3 RETURNING batch_seq",
		workspaceID, runID, seq).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("runs: batch: %w", err)
	}
	return true, nil
}

const eventColumns = "id, event_type, payload, created_at"

func scanEvents(rows *sql.Rows, limit int, taskID string) ([]TaskEvent, error) {
	defer rows.Close()
	out := make([]TaskEvent, 0, min(limit, 512))
	for rows.Next() {
		e := TaskEvent{TaskID: taskID}
		var payload string
		if err := rows.Scan(&e.EventID, &e.EventType, &payload, db.UTC(&e.Timestamp), &e.SequenceNum); err != nil {
			return nil, fmt.Errorf("runs: events: %w", err)
		}
		e.Payload = json.RawMessage(payload)
		out = append(out, e)
	}
	return out, rows.Err()
}

// logEvents pages through a log in its sequence; task_id is the log's id.
// (A log written by Record keeps its events in its run's row: they are
// read through the run, see runEvents.)
func logEvents(ctx context.Context, q db.Queryer, logID string, after int32, limit int) ([]TaskEvent, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+eventColumns+", log_seq FROM run_events WHERE log_id = $1 AND log_seq > $2 ORDER BY log_seq LIMIT $3",
		logID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("runs: events: %w", err)
	}
	return scanEvents(rows, limit, logID)
}

// runEvents pages through one run's events in the run's sequence; task_id
// is the run's task (or its log when it has none).
func runEvents(ctx context.Context, q db.Queryer, r *Run, after int32, limit int) ([]TaskEvent, error) {
	task := r.LogID
	if r.TaskID != nil {
		task = *r.TaskID
	}
	if r.packed {
		return packedEvents(ctx, q, r, task, after, limit)
	}
	rows, err := q.QueryContext(ctx, "SELECT "+eventColumns+", run_seq FROM run_events WHERE run_id = $1 AND run_seq > $2 ORDER BY run_seq LIMIT $3",
		r.ID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("runs: events: %w", err)
	}
	return scanEvents(rows, limit, task)
}

// payloadsOf are the payloads of a run's events of one type, in order.
func payloadsOf(ctx context.Context, q db.Queryer, workspaceID, runID, eventType string) ([]json.RawMessage, error) {
	rows, err := q.QueryContext(ctx, `SELECT e.payload FROM run_events e JOIN runs r ON r.id = e.run_id
		WHERE r.workspace_id = $1 AND e.run_id = $2 AND e.event_type = $3 ORDER BY e.run_seq`, workspaceID, runID, eventType)
	if err != nil {
		return nil, fmt.Errorf("runs: events of a type: %w", err)
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var p []byte
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("runs: events of a type: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("runs: events of a type: %w", err)
	}
	if len(out) > 0 {
		return out, nil
	}
	// None as rows: the run may keep its events packed.
	var raw []byte
	err = q.QueryRowContext(ctx, "SELECT events FROM runs WHERE workspace_id = $1 AND id = $2 AND events IS NOT NULL", workspaceID, runID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runs: events of a type: %w", err)
	}
	var evs []packedEvent
	if err := json.Unmarshal(raw, &evs); err != nil {
		return nil, fmt.Errorf("runs: events of a type: %w", err)
	}
	for _, e := range evs {
		if e.Type == eventType {
			out = append(out, e.Payload)
		}
	}
	return out, nil
}

// countOutput adds a batch's output to its run's count unless that would
// pass the limit (false: the batch's output is not stored).
func countOutput(ctx context.Context, tx *db.Tx, workspaceID, runID string, bytes, lines int64, l OutputLimit) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE runs SET output_bytes = output_bytes + $3, output_lines = output_lines + $4
		WHERE workspace_id = $1 AND id = $2 AND NOT output_capped AND output_bytes + $3 <= $5 AND output_lines + $4 <= $6`,
		workspaceID, runID, bytes, lines, l.Bytes, l.Lines)
	if err != nil {
		return false, fmt.Errorf("runs: count output: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("runs: count output: %w", err)
	}
	return n == 1, nil
}

// capOutput marks a run's output as cut; true the first time.
func capOutput(ctx context.Context, tx *db.Tx, workspaceID, runID string) (bool, error) {
	res, err := tx.ExecContext(ctx, "UPDATE runs SET output_capped = TRUE WHERE workspace_id = $1 AND id = $2 AND NOT output_capped", workspaceID, runID)
	if err != nil {
		return false, fmt.Errorf("runs: cap output: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("runs: cap output: %w", err)
	}
	return n == 1, nil
}
