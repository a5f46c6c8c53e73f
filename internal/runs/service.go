package runs

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"slipway/internal/agents/protocol"
	"strings"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/realtime"
	"slipway/internal/platform/redact"
)

// Service holds runs and event logs.
type Service struct {
	db     *db.DB
	clock  clock.Clock
	redact *redact.Redactor
	react  Reactions     // nil: no other domain reacts
	hub    *realtime.Hub // nil: nothing is live
}

// Reactions are what other domains do with what a worker reports (the
// composition root lists who reacts).
type Reactions interface {
	// AgentReported reads the events a task's agent reported, in the
	// transaction that stores them, once per batch (a repeated batch is not
	// told again). The payloads are redacted as stored.
	AgentReported(ctx context.Context, tx *db.Tx, r *Run, evs []NewEvent) error
}

// NewService returns the runs service. Every stored payload passes through
// secrets (the instance's own keys) on top of whatever the writer redacted.
// hub (nil: nothing is live) carries changes to watchers.
func NewService(d *db.DB, clk clock.Clock, secrets *redact.Redactor, hub *realtime.Hub, react Reactions) *Service {
	return &Service{db: d, clock: clk, redact: secrets, hub: hub, react: react}
}

// ErrRunOver refuses events for a run that has ended: its terminal status
// event is its last.
var ErrRunOver = errors.New("runs: the run has ended")

// CreateLog starts an empty event log, in tx.
func (s *Service) CreateLog(ctx context.Context, tx *db.Tx, workspaceID, id string) error {
	return insertLog(ctx, tx, workspaceID, id, s.clock.Now())
}

// EnsureLog creates an event log unless it exists (a log named after
// what it belongs to, such as a script's), in tx.
func (s *Service) EnsureLog(ctx context.Context, tx *db.Tx, workspaceID, id string) error {
	return ensureLog(ctx, tx, workspaceID, id, s.clock.Now())
}

// RecordResult keeps a run's result (an agent's result line, a script's
// output), in tx.
func (s *Service) RecordResult(ctx context.Context, tx *db.Tx, workspaceID, runID string, result json.RawMessage) error {
	return recordResult(ctx, tx, workspaceID, runID, s.redact.JSON(result))
}

// OnLog lists the top-level runs of a kind on a log, newest first.
func (s *Service) OnLog(ctx context.Context, workspaceID, logID, kind string, limit int) ([]Run, error) {
	return runsOnLog(ctx, s.db.R, workspaceID, logID, kind, limit)
}

// DeleteLog removes a log with its runs and events, in tx.
func (s *Service) DeleteLog(ctx context.Context, tx *db.Tx, workspaceID, id string) error {
	return deleteLog(ctx, tx, s.db.Dialect, workspaceID, id)
}

// Append stores events on a log in tx, in order; with a runID they are also
// that run's events (ErrRunOver when it has ended).
func (s *Service) Append(ctx context.Context, tx *db.Tx, workspaceID, logID, runID string, evs ...NewEvent) error {
	if len(evs) == 0 {
		return nil
	}
	var rs []row
	var last int64
	if runID != "" {
		res, err := reserve(ctx, tx, workspaceID, logID, runID, len(evs))
		if err != nil {
			return err
		}
		if !res.running {
			return ErrRunOver
		}
		if res.runLog != logID {
			return apperr.New(apperr.CodeInternal, "run %s does not write to log %s", runID, logID)
		}
		rs, last = s.rows(logID, &runID, res.runLast, evs), res.logLast
	} else {
		rs = s.rows(logID, nil, 0, evs)
		var err error
		if last, err = reserveLog(ctx, tx, workspaceID, logID, len(evs)); err != nil {
			return err
		}
	}
	for i := range rs {
		rs[i].logSeq = last - int64(len(rs)) + int64(i) + 1
	}
	// Live watchers get the payloads as stored, which the inserts return:
	// only a relay needs them before the commit.
	if err := insertEvents(ctx, tx, s.db.Dialect, rs, !s.hub.Relays()); err != nil {
		return err
	}
	streams := []string{StreamTask + ":" + logID}
	if runID != "" {
		streams = append(streams, StreamRun+":"+runID)
	}
	return s.hub.PublishTx(ctx, tx, workspaceID, streams, func() []realtime.Item { return liveItems(rs) })
}

// The realtime streams of event logs: a task's log (any log, named by its
// id) and a run's events.
const (
	StreamTask = "task"
	StreamRun  = "run"
)

// liveItems are the rows as their streams' items: the log's, then the
// run's, each as the events endpoints return it (insertEvents left the
// stored payloads on the rows).
func liveItems(rs []row) []realtime.Item {
	out := make([]realtime.Item, 0, 2*len(rs))
	event := func(r row, seq int64) json.RawMessage {
		b, _ := json.Marshal(TaskEvent{EventID: r.id, EventType: r.ev.Type, Payload: r.ev.Payload, SequenceNum: int32(seq),
			TaskID: r.logID, Timestamp: clock.Normalize(r.ev.At)})
		return b
	}
	for _, r := range rs {
		out = append(out, realtime.Item{Stream: StreamTask + ":" + r.logID, Seq: r.logSeq, Data: event(r, r.logSeq)})
	}
	for _, r := range rs {
		if r.runID != nil {
			out = append(out, realtime.Item{Stream: StreamRun + ":" + *r.runID, Seq: *r.runSeq, Data: event(r, *r.runSeq)})
		}
	}
	return out
}

func (s *Service) rows(logID string, runID *string, lastRunSeq int64, evs []NewEvent) []row {
	out := make([]row, len(evs))
	for i, e := range evs {
		e.Payload = s.redact.JSON(e.Payload)
		if e.At.IsZero() {
			e.At = s.clock.Now()
		}
		out[i] = row{id: ids.New(), logID: logID, runID: runID, ev: e}
		if runID != nil {
			seq := lastRunSeq - int64(len(evs)) + int64(i) + 1
			out[i].runSeq = &seq
		}
	}
	return out
}

// OutputLimit bounds what a run stores of its output (protocol.IsOutput):
// bytes of payload and events; zero values: no bound.
type OutputLimit struct{ Bytes, Lines int64 }

// AppendBatch stores a worker's batch of a run's events in its own
// transaction. seq numbers the worker's batches from 1: a batch at or below
// the last one stored is a retry and is dropped, so an upload can be
// repeated safely. Events of a run that has ended are dropped too (stored
// false). A "result" event records the run's result.
func (s *Service) AppendBatch(ctx context.Context, workspaceID, runID string, seq int64, evs []NewEvent) (stored bool, err error) {
	return s.AppendBatchWithin(ctx, workspaceID, runID, seq, evs, OutputLimit{})
}

// AppendBatchWithin is AppendBatch bounding the run's output by limit: a
// batch whose output would pass it stores everything else, and the first
// such batch adds one output_truncated event. Workers keep the same limit
// themselves; this holds for a runner that does not.
func (s *Service) AppendBatchWithin(ctx context.Context, workspaceID, runID string, seq int64, evs []NewEvent, limit OutputLimit) (stored bool, err error) {
	if len(evs) == 0 {
		return true, nil
	}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		stored = false
		fresh, err := takeBatch(ctx, tx, workspaceID, runID, seq)
		if err != nil || !fresh {
			return err
		}
		r, err := getRun(ctx, tx, workspaceID, runID)
		if err != nil {
			return err
		}
		if evs, err = s.withinLimit(ctx, tx, workspaceID, runID, evs, limit); err != nil {
			return err
		}
		if len(evs) == 0 {
			stored = true
			return nil
		}
		err = s.Append(ctx, tx, workspaceID, r.LogID, runID, evs...)
		if errors.Is(err, ErrRunOver) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.Kind == KindTask && s.react != nil {
			red := make([]NewEvent, len(evs))
			for i, e := range evs {
				red[i] = NewEvent{Type: e.Type, Payload: s.redact.JSON(e.Payload), At: e.At}
			}
			if err := s.react.AgentReported(ctx, tx, r, red); err != nil {
				return err
			}
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Type == ResultType {
				if err := recordResult(ctx, tx, workspaceID, runID, s.redact.JSON(evs[i].Payload)); err != nil {
					return err
				}
				break
			}
		}
		stored = true
		return nil
	})
	return stored, err
}

// withinLimit counts a batch's output against its run's limit and, past
// it, leaves the output out (and says so once).
func (s *Service) withinLimit(ctx context.Context, tx *db.Tx, workspaceID, runID string, evs []NewEvent, l OutputLimit) ([]NewEvent, error) {
	if l.Bytes <= 0 || l.Lines <= 0 {
		return evs, nil
	}
	var bytes, lines int64
	for _, e := range evs {
		if protocol.IsOutput(e.Type) {
			bytes, lines = bytes+int64(len(e.Payload)), lines+1
		}
	}
	if lines == 0 {
		return evs, nil
	}
	ok, err := countOutput(ctx, tx, workspaceID, runID, bytes, lines, l)
	if err != nil || ok {
		return evs, err
	}
	kept := slices.DeleteFunc(slices.Clone(evs), func(e NewEvent) bool { return protocol.IsOutput(e.Type) })
	first, err := capOutput(ctx, tx, workspaceID, runID)
	if err != nil {
		return nil, err
	}
	if first && !slices.ContainsFunc(kept, func(e NewEvent) bool { return e.Type == protocol.OutputTruncated }) {
		b, _ := json.Marshal(map[string]any{"by": "hub", "max_bytes": l.Bytes, "max_lines": l.Lines})
		kept = append(kept, NewEvent{Type: protocol.OutputTruncated, Payload: b, At: s.clock.Now()})
	}
	return kept, nil
}

// LogEvents pages through a log after a sequence number. The caller has
// checked that the log belongs to the caller's workspace.
func (s *Service) LogEvents(ctx context.Context, logID string, after int32, limit int) ([]TaskEvent, error) {
	return logEvents(ctx, s.db.R, logID, after, limit)
}

// NewRun describes a run to start.
type NewRun struct {
	Kind        string
	WorkspaceID string
	LogID       string
	ProjectID   string
	TaskID      string
	ParentRunID string
	JobID       string
	Backend     string
	// NewLog says the log was created in this transaction: the run is its
	// first (no count needed for its attempt).
	NewLog bool
	// ID is the run's id when the caller chose it (it told someone first);
	// otherwise a new one.
	ID string
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Start records a running run in tx; its attempt is one more than the
// top-level runs of its kind on the log so far.
func (s *Service) Start(ctx context.Context, tx *db.Tx, n NewRun) (*Run, error) {
	attempt := 1
	if n.ParentRunID == "" && !n.NewLog {
		done, err := countRuns(ctx, tx, n.WorkspaceID, n.LogID, n.Kind)
		if err != nil {
			return nil, err
		}
		attempt = done + 1
	}
	id := n.ID
	if id == "" {
		id = ids.New()
	}
	r := &Run{ID: id, Kind: n.Kind, Status: Running, WorkspaceID: n.WorkspaceID, ProjectID: optional(n.ProjectID), TaskID: optional(n.TaskID),
		ParentRunID: optional(n.ParentRunID), Attempt: attempt, Backend: n.Backend, CreatedAt: s.clock.Now(), LogID: n.LogID, JobID: n.JobID}
	if err := insertRun(ctx, tx, r); err != nil {
		return nil, err
	}
	return r, s.hub.NotifyTx(ctx, tx, r.WorkspaceID, TopicRuns, r.ID)
}

// Ended is a run that started and ended in the transaction that writes it
// (a workflow run of inline nodes only), with its new log.
type Ended struct {
	NewRun
	Status string // terminal
	Error  string
	Events []NewEvent
}

// Record writes an ended run at once, its log and its row queued on tx (see
// db.Tx.Later), with its events packed in the row: nobody saw it running,
// so it is written as it ended instead of started, numbered, appended to
// and finished statement by statement. Its events are read through the run
// (Events), like every workflow run's. Nobody can watch the streams of a
// log and run that did not exist before tx, so nothing goes out live but
// the runs topic's hint.
func (s *Service) Record(ctx context.Context, tx *db.Tx, e Ended) error {
	if !Terminal(e.Status) {
		return apperr.New(apperr.CodeInternal, "runs: %q is not a terminal status", e.Status)
	}
	if e.ID == "" || !e.NewLog {
		return apperr.New(apperr.CodeInternal, "runs: an ended run is recorded with its id and a new log")
	}
	now := clock.Normalize(s.clock.Now())
	r := &Run{ID: e.ID, Kind: e.Kind, Status: e.Status, WorkspaceID: e.WorkspaceID, ProjectID: optional(e.ProjectID), TaskID: optional(e.TaskID),
		ParentRunID: optional(e.ParentRunID), Attempt: 1, Backend: e.Backend, CreatedAt: now, LogID: e.LogID, JobID: e.JobID,
		Error: s.redact.Text(e.Error), FinishedAt: &now}
	packed := make([]packedEvent, len(e.Events))
	for i, ev := range e.Events {
		if ev.At.IsZero() {
			ev.At = now
		}
		packed[i] = pack(ev.Type, s.redact.JSON(ev.Payload), ev.At, now)
	}
	rows := func() []row { return s.rows(e.LogID, &r.ID, int64(len(e.Events)), e.Events) }
	if err := recordEnded(tx, r, packed, rows); err != nil {
		return err
	}
	return s.hub.NotifyTx(ctx, tx, r.WorkspaceID, TopicRuns, r.ID)
}

// TopicRuns hints that a run started or ended.
const TopicRuns = "runs"

// Finish ends a running run in tx; false when it had ended already.
func (s *Service) Finish(ctx context.Context, tx *db.Tx, workspaceID, id, status string, exit *int, errText string) (bool, error) {
	if !Terminal(status) {
		return false, apperr.New(apperr.CodeInternal, "runs: %q is not a terminal status", status)
	}
	ended, err := finishRun(ctx, tx, workspaceID, id, status, exit, s.redact.Text(errText), s.clock.Now())
	if err != nil || !ended {
		return ended, err
	}
	return true, s.hub.NotifyTx(ctx, tx, workspaceID, TopicRuns, id)
}

// SetExitCode records the exit code of a run that ended before its process
// did (a cancel), unless it has one.
func (s *Service) SetExitCode(ctx context.Context, tx *db.Tx, workspaceID, id string, code int) error {
	return setExitCode(ctx, tx, workspaceID, id, code)
}

// Get reads a run (q: a pool or a transaction).
func (s *Service) Get(ctx context.Context, q db.Queryer, workspaceID, id string) (*Run, error) {
	if q == nil {
		q = s.db.R
	}
	return getRun(ctx, q, workspaceID, id)
}

// Running lists the running runs on a log.
func (s *Service) Running(ctx context.Context, q db.Queryer, workspaceID, logID string) ([]Run, error) {
	return runningRuns(ctx, q, workspaceID, logID)
}

// RunningOfJob is the running run of a job on a log, or nil (a worker
// that resumes, or a job interrupted, finds its run so).
func (s *Service) RunningOfJob(ctx context.Context, q db.Queryer, workspaceID, logID, jobID string) (*Run, error) {
	rs, err := runningRuns(ctx, q, workspaceID, logID)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		if rs[i].JobID == jobID {
			return &rs[i], nil
		}
	}
	return nil, nil
}

// Filter narrows GET /api/runs.
type Filter struct {
	Status          string `query:"status" enum:"running,succeeded,failed,cancelled"`
	Kind            string `query:"kind" enum:"task,workflow,script"`
	ProjectID       string `query:"project_id" format:"uuid"`
	TaskID          string `query:"task_id" format:"uuid"`
	IncludeChildren bool   `query:"include_children"`
	Limit           int    `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset          int    `query:"offset" minimum:"0" default:"0"`
}

func where(ws *actor.Workspace, f Filter) db.Where {
	w := db.NewWhere("workspace_id = ?", ws.ID)
	if f.Status != "" {
		w = w.And("status = ?", f.Status)
	}
	if f.Kind != "" {
		w = w.And("kind = ?", f.Kind)
	}
	if f.ProjectID != "" {
		w = w.And("project_id = ?", f.ProjectID)
	}
	if f.TaskID != "" {
		w = w.And("task_id = ?", f.TaskID)
	}
	if !f.IncludeChildren {
		w = w.And("parent_run_id IS NULL")
	}
	return w
}

// List returns runs newest first; top-level only unless asked for children.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, f Filter) ([]Run, int, error) {
	return listRuns(ctx, s.db.R, where(ws, f), "created_at DESC, id DESC", f.Limit, f.Offset)
}

// BoardInput filters the runs board.
type BoardInput struct {
	board.Query
	Status    string `query:"status" enum:"running,succeeded,failed,cancelled"`
	Kind      string `query:"kind" enum:"task,workflow,script"`
	ProjectID string `query:"project_id" format:"uuid"`
}

var kindLabels = map[string]string{KindTask: "Task", KindWorkflow: "Workflow", KindScript: "Script"}

// Board returns a page of top-level runs with status and kind facets.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, in BoardInput) (*board.Board[Run], error) {
	orderBy, err := in.OrderBy(map[string]string{"created_at": "created_at"}, "created_at", "desc", "id")
	if err != nil {
		return nil, err
	}
	if in.Q != "" {
		return nil, apperr.BadRequest("q: the runs board has no text to search; filter by status, kind or project_id")
	}
	base := where(ws, Filter{ProjectID: in.ProjectID})
	statusW, kindW := base, base
	if in.Kind != "" {
		statusW = statusW.And("kind = ?", in.Kind)
	}
	if in.Status != "" {
		kindW = kindW.And("status = ?", in.Status)
	}
	statuses, err := db.CountBy(ctx, s.db.R, "runs", "status", statusW)
	if err != nil {
		return nil, err
	}
	kinds, err := db.CountBy(ctx, s.db.R, "runs", "kind", kindW)
	if err != nil {
		return nil, err
	}
	rows, total, err := listRuns(ctx, s.db.R, where(ws, Filter{Status: in.Status, Kind: in.Kind, ProjectID: in.ProjectID}), orderBy, in.PageSize, in.Offset())
	if err != nil {
		return nil, err
	}
	facets := map[string][]board.Facet{"status": {}, "kind": {}}
	for _, k := range Kinds {
		facets["kind"] = append(facets["kind"], board.Facet{Value: k, Label: kindLabels[k], Count: kinds[k]})
	}
	for _, st := range Statuses {
		facets["status"] = append(facets["status"], board.Facet{Value: st, Label: strings.ToUpper(st[:1]) + st[1:], Count: statuses[st]})
	}
	return board.New(in.Query, rows, total, facets), nil
}

// maxDepth bounds the descendant tree (a cycle cannot exist, but a bug
// must not loop forever).
const maxDepth = 20

// Tree returns a run of the active workspace with its descendants.
func (s *Service) Tree(ctx context.Context, ws *actor.Workspace, id string) (*RunTree, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("run")
	}
	r, err := getRun(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	return s.tree(ctx, ws.ID, *r, 0)
}

func (s *Service) tree(ctx context.Context, workspaceID string, r Run, depth int) (*RunTree, error) {
	t := &RunTree{Run: r, Children: []RunTree{}}
	if depth >= maxDepth {
		return t, nil
	}
	kids, err := childRuns(ctx, s.db.R, workspaceID, r.ID)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		sub, err := s.tree(ctx, workspaceID, k, depth+1)
		if err != nil {
			return nil, err
		}
		t.Children = append(t.Children, *sub)
	}
	return t, nil
}

// Events pages through one run's events of the active workspace, in the
// run's own sequence.
func (s *Service) Events(ctx context.Context, ws *actor.Workspace, id string, after int32, limit int) ([]TaskEvent, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("run")
	}
	r, err := getRun(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	return runEvents(ctx, s.db.R, r, after, limit)
}

// Payloads are the payloads of one type of a run's events, in order.
func (s *Service) Payloads(ctx context.Context, q db.Queryer, workspaceID, runID, eventType string) ([]json.RawMessage, error) {
	return payloadsOf(ctx, q, workspaceID, runID, eventType)
}

// LastResult is the result line of the newest run on a log that recorded
// one (nil when none did).
func (s *Service) LastResult(ctx context.Context, q db.Queryer, workspaceID, logID string) (json.RawMessage, error) {
	return lastResult(ctx, q, workspaceID, logID)
}
