// Package jobs is Slipway's durable job queue (DESIGN §4): one table of jobs
// by kind with a payload; a claim takes jobs with a lease (locked_until) that
// the holder extends while it works and gives up by completing, retrying or
// failing the job; a rescuer returns jobs whose lease expired (their holder
// died); run_at schedules a job for later; concurrency keys with an
// admission check inside the claim transaction enforce caps (a workspace's,
// a project's) where the claim happens, across replicas.
//
// Wake-ups travel on the pubsub bus (LISTEN/NOTIFY on PostgreSQL): a job
// queued, or a slot freed, wakes every waiting claimer at once; polling is
// only the fallback. The queue knows nothing of tasks or workflows: what a
// job means is its kind's business.
package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/pubsub"
)

// Job states.
const (
	Available = "available" // waiting for run_at and a claim
	Running   = "running"   // claimed; the lease holder works on it
	Completed = "completed" // done
	Failed    = "failed"    // given up: out of attempts, or failed for good
	Cancelled = "cancelled" // cancelled before or while it ran
)

// Bus topics the queue publishes on.
const (
	// TopicQueued wakes claimers: a job became available or a slot was
	// freed. The payload is the job's kind.
	TopicQueued = "jobs"
	// TopicControl asks a job's holder to act: "cancel <job id>".
	TopicControl = "control"
)

// Job is one row of the queue.
type Job struct {
	ID              string
	Kind            string
	WorkspaceID     string // "" for instance-wide jobs
	Ref             string // what the job works on (a task id); at most one unfinished job per kind and ref
	Keys            []string
	Payload         json.RawMessage
	State           string
	Attempt         int // claims so far, this one included
	MaxAttempts     int
	RunAt           time.Time
	LockedBy        string
	LockedUntil     *time.Time
	CancelRequested bool
	LastError       string
	CreatedAt       time.Time
	FinishedAt      *time.Time
	// Pool is who may claim the job: PoolLocal (the hub's own workers) or
	// PoolFleet (remote runners that match its workspace and Labels).
	Pool   string
	Labels []string // labels a fleet job requires of its runner
	// StartedAt is when the holder first renewed its lease: it has the
	// work (nil while claimed but not yet acknowledged).
	StartedAt *time.Time
	// TraceParent is the trace context of whoever queued the job (W3C
	// traceparent; "" untraced): its work continues that trace (StartWork).
	TraceParent string
}

// Pools of workers.
const (
	PoolLocal = ""      // the hub's own (in-process) workers
	PoolFleet = "fleet" // remote runners
)

// Lease is the holder's proof of one claim: the job, who holds it and which
// attempt. It stops working once the job was rescued, even if the same
// holder claims the job again (the attempt differs).
func (j *Job) Lease() Lease { return Lease{JobID: j.ID, Owner: j.LockedBy, Attempt: j.Attempt} }

// Lease identifies one claim of a job.
type Lease struct {
	JobID   string `json:"job_id"`
	Owner   string `json:"owner"`
	Attempt int    `json:"attempt"`
	// RunID is the run the claim started ("" for a claim that started
	// none): once a claim is bound to its run (BindRun), only a lease
	// naming that run holds.
	RunID string `json:"run_id,omitempty"`
}

// ErrLeaseLost is returned to a holder whose lease was taken away (the job
// was rescued, cancelled and finished, or claimed again).
var ErrLeaseLost = errors.New("jobs: the lease on this job was lost")

// NewJob describes a job to enqueue.
type NewJob struct {
	Kind        string
	WorkspaceID string
	Ref         string
	// Keys name the caps the job counts against while it runs (e.g.
	// "workspace:<id>", "project:<id>"); the admission check gives each its
	// limit. No spaces.
	Keys        []string
	Payload     any // marshalled to JSON; nil is {}
	MaxAttempts int // default 3
	RunAt       time.Time
	// Pool is who may claim it (PoolLocal by default); Labels, for a fleet
	// job, what its runner must offer.
	Pool   string
	Labels []string
}

// EncodeLabels is how a label set is stored: sorted, unique, each label
// between single spaces (" a b "), "" for none. A claim then tests a
// subset by removing its own labels with REPLACE (see Match).
func EncodeLabels(labels []string) string {
	if len(labels) == 0 {
		return ""
	}
	ls := slices.Clone(labels)
	slices.Sort(ls)
	ls = slices.Compact(ls)
	return " " + strings.Join(ls, " ") + " "
}

// Admission gives the limit of a concurrency key, inside the claim
// transaction (q reads in it); capped=false means unlimited.
type Admission interface {
	Limit(ctx context.Context, q db.Queryer, key string) (limit int, capped bool, err error)
}

// Limits is an Admission by key prefix: "project:<id>" asks
// Limits["project"] for id. A key whose prefix has no entry is unlimited.
type Limits map[string]func(ctx context.Context, q db.Queryer, id string) (int, bool, error)

// Limit implements Admission.
func (l Limits) Limit(ctx context.Context, q db.Queryer, key string) (int, bool, error) {
	prefix, id, ok := strings.Cut(key, ":")
	if fn := l[prefix]; ok && fn != nil {
		return fn(ctx, q, id)
	}
	return 0, false, nil
}

// Queue is the job queue over one database.
type Queue struct {
	db    *db.DB
	bus   *pubsub.Bus
	clock clock.Clock
	admit Admission
}

// New returns a queue. admit may be nil when no job carries keys.
func New(d *db.DB, bus *pubsub.Bus, clk clock.Clock, admit Admission) *Queue {
	if admit == nil {
		admit = Limits{}
	}
	return &Queue{db: d, bus: bus, clock: clk, admit: admit}
}

const columns = `id, kind, workspace_id, ref_id, concurrency_keys, payload, state, attempt, max_attempts, run_at, locked_by, locked_until,
	cancel_requested, last_error, created_at, finished_at, pool, labels, started_at, trace_parent`

func scan(row interface{ Scan(...any) error }) (*Job, error) {
	var j Job
	var ws, ref sql.NullString
	var keys, payload, labels string
	err := row.Scan(&j.ID, &j.Kind, &ws, &ref, &keys, &payload, &j.State, &j.Attempt, &j.MaxAttempts, db.UTC(&j.RunAt), &j.LockedBy,
		db.NullUTC(&j.LockedUntil), &j.CancelRequested, &j.LastError, db.UTC(&j.CreatedAt), db.NullUTC(&j.FinishedAt),
		&j.Pool, &labels, db.NullUTC(&j.StartedAt), &j.TraceParent)
	if err != nil {
		return nil, err
	}
	j.WorkspaceID, j.Ref, j.Keys, j.Payload, j.Labels = ws.String, ref.String, strings.Fields(keys), json.RawMessage(payload), strings.Fields(labels)
	return &j, nil
}

func (n NewJob) check() (keys, payload string, err error) {
	if n.Kind == "" {
		return "", "", errors.New("jobs: a job needs a kind")
	}
	for _, k := range n.Keys {
		if k == "" || strings.ContainsAny(k, " \t\n") {
			return "", "", fmt.Errorf("jobs: bad concurrency key %q", k)
		}
	}
	for _, l := range n.Labels {
		if l == "" || strings.ContainsAny(l, " \t\n") {
			return "", "", fmt.Errorf("jobs: bad label %q", l)
		}
	}
	if n.Pool != PoolLocal && n.Pool != PoolFleet {
		return "", "", fmt.Errorf("jobs: unknown pool %q", n.Pool)
	}
	p := []byte("{}")
	if n.Payload != nil {
		if p, err = json.Marshal(n.Payload); err != nil {
			return "", "", fmt.Errorf("jobs: payload of %s: %w", n.Kind, err)
		}
	}
	return strings.Join(n.Keys, " "), string(p), nil
}

// Enqueue adds a job in tx; claimers everywhere wake when tx commits.
func (q *Queue) Enqueue(ctx context.Context, tx *db.Tx, n NewJob) (*Job, error) {
	keys, payload, err := n.check()
	if err != nil {
		return nil, err
	}
	now := q.clock.Now()
	if n.RunAt.IsZero() {
		n.RunAt = now
	}
	if n.MaxAttempts <= 0 {
		n.MaxAttempts = 3
	}
	ctx, span, parent := enqueueSpan(ctx, tx, n.Kind)
	defer span.End()
	j, err := scan(tx.QueryRowContext(ctx, `INSERT INTO jobs (id, kind, workspace_id, ref_id, concurrency_keys, payload, state, max_attempts, run_at, created_at,
		pool, labels, trace_parent) VALUES ($1, $2, $3, $4, $5, $6, 'available', $7, $8, $9, $10, $11, $12) RETURNING `+columns,
		ids.New(), n.Kind, db.Null(n.WorkspaceID), db.Null(n.Ref), keys, payload, n.MaxAttempts, n.RunAt.UTC(), now, n.Pool, EncodeLabels(n.Labels), parent))
	if err != nil {
		if q.db.Dialect.IsUniqueViolation(err) {
			return nil, fmt.Errorf("jobs: %s %s already has an unfinished job: %w", n.Kind, n.Ref, ErrDuplicate)
		}
		return nil, fmt.Errorf("jobs: enqueue %s: %w", n.Kind, err)
	}
	return j, q.bus.PublishTx(ctx, tx, TopicQueued, n.Kind)
}

// ErrDuplicate refuses a second unfinished job for the same kind and ref.
var ErrDuplicate = errors.New("duplicate job")

// EnqueueMany adds many jobs in one transaction of multi-row inserts (for
// bulk work and benchmarks); refs must be unique among unfinished jobs.
func (q *Queue) EnqueueMany(ctx context.Context, jobs []NewJob) error {
	const cols = 12
	const chunk = 80 // rows per INSERT: 960 parameters, under SQLite's default limit
	now := q.clock.Now()
	return q.db.Tx(ctx, func(tx *db.Tx) error {
		kinds := map[string]bool{}
		for start := 0; start < len(jobs); start += chunk {
			part := jobs[start:min(start+chunk, len(jobs))]
			var sb strings.Builder
			sb.WriteString(`INSERT INTO jobs (id, kind, workspace_id, ref_id, concurrency_keys, payload, state, max_attempts, run_at, created_at, pool, labels) VALUES `)
			args := make([]any, 0, len(part)*cols)
			for i, n := range part {
				keys, payload, err := n.check()
				if err != nil {
					return err
				}
				if n.RunAt.IsZero() {
					n.RunAt = now
				}
				if n.MaxAttempts <= 0 {
					n.MaxAttempts = 3
				}
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteByte('(')
				for c := 0; c < cols; c++ {
					if c > 0 {
						sb.WriteString(", ")
					}
					sb.WriteString(q.db.Dialect.Placeholder(len(args) + c + 1))
				}
				sb.WriteByte(')')
				args = append(args, ids.New(), n.Kind, db.Null(n.WorkspaceID), db.Null(n.Ref), keys, payload, Available, n.MaxAttempts, n.RunAt.UTC(), now,
					n.Pool, EncodeLabels(n.Labels))
				kinds[n.Kind] = true
			}
			if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
				return fmt.Errorf("jobs: enqueue: %w", err)
			}
		}
		for k := range kinds {
			if err := q.bus.PublishTx(ctx, tx, TopicQueued, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Get reads one job (for tests, operators and recovery).
func (q *Queue) Get(ctx context.Context, id string) (*Job, error) {
	j, err := scan(q.db.R.QueryRowContext(ctx, "SELECT "+columns+" FROM jobs WHERE id = $1", id))
	if err != nil {
		return nil, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	return j, nil
}

// ClaimRequest asks for work.
type ClaimRequest struct {
	Kinds []string
	Owner string        // who will hold the leases
	Max   int           // at most this many jobs
	Lease time.Duration // how long a lease lasts unless extended
	// Match, when set, claims fleet jobs for a remote runner (only those it
	// matches); nil claims the hub's own (PoolLocal) jobs.
	Match *Match
}

// Match is what a remote runner may take: fleet jobs of its organization's
// workspaces (only WorkspaceIDs when any are given) whose required labels
// are all among Labels.
type Match struct {
	OrganizationID string
	WorkspaceIDs   []string
	Labels         []string
	// Still, when set, is asked inside the claim's transaction whether the
	// claimer may still claim (a runner disabled or drained since the match
	// was read claims nothing).
	Still func(ctx context.Context, q db.Queryer) (bool, error)
}

// where is the SQL condition of the match, its parameters numbered from
// len(args)+1; it returns the grown args.
func (m *Match) where(args []any) (string, []any) {
	if m == nil {
		return "pool = ''", args
	}
	args = append(args, PoolFleet, m.OrganizationID)
	cond := fmt.Sprintf("pool = $%d AND workspace_id IN (SELECT id FROM workspaces WHERE organization_id = $%d)", len(args)-1, len(args))
	if len(m.WorkspaceIDs) > 0 {
		var in []string
		for _, id := range m.WorkspaceIDs {
			args = append(args, id)
			in = append(in, "$"+strconv.Itoa(len(args)))
		}
		cond += " AND workspace_id IN (" + strings.Join(in, ", ") + ")"
	}
	// A job's labels (" a b ") are a subset of ours when removing each of
	// ours leaves a single space.
	rest := "labels"
	for _, l := range m.Labels {
		args = append(args, " "+l+" ")
		rest = fmt.Sprintf("REPLACE(%s, $%d, ' ')", rest, len(args))
	}
	if len(m.Labels) == 0 {
		return cond + " AND labels = ''", args
	}
	return cond + " AND (labels = '' OR " + rest + " = ' ')", args
}

// StartFunc runs inside the claim transaction for each claimed job, oldest
// first; returning false drops the job (it is cancelled in the same
// transaction: its subject went away). An error rolls the whole claim back.
type StartFunc func(ctx context.Context, tx *db.Tx, j *Job) (keep bool, err error)

// admissionLock serialises the claims that check caps, across replicas.
const admissionLock = "jobs-admission"

// scanWindow is how many candidates one claim looks at per round when caps
// refuse some; it keeps looking (up to maxScan) so that a capped workspace
// with many queued jobs cannot starve the others behind it.
const (
	scanWindow = 256
	maxScan    = 20_000
)

// Claim takes up to req.Max available jobs of the kinds, oldest first, within
// their caps, and leases them to req.Owner; start (optional) runs for each
// inside the same transaction.
func (q *Queue) Claim(ctx context.Context, req ClaimRequest, start StartFunc) ([]*Job, error) {
	if req.Max <= 0 || len(req.Kinds) == 0 {
		return nil, nil
	}
	if req.Owner == "" || req.Lease <= 0 {
		return nil, errors.New("jobs: a claim needs an owner and a lease")
	}
	var out []*Job
	err := q.db.Tx(ctx, func(tx *db.Tx) error {
		out = nil
		now := q.clock.Now()
		if m := req.Match; m != nil && m.Still != nil {
			if ok, err := m.Still(ctx, tx); err != nil || !ok {
				return err
			}
		}
		ids, err := q.pick(ctx, tx, req, now)
		if err != nil || len(ids) == 0 {
			return err
		}
		claimed, err := q.lock(ctx, tx, ids, req, now)
		if err != nil {
			return err
		}
		var dropped []string
		for _, j := range claimed {
			keep := true
			if start != nil {
				if keep, err = start(ctx, tx, j); err != nil {
					return err
				}
			}
			if keep {
				out = append(out, j)
			} else {
				dropped = append(dropped, j.ID)
			}
		}
		for _, id := range dropped {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'cancelled', finished_at = $2, locked_until = NULL
				WHERE id = $1 AND state = 'running'`, id, now); err != nil {
				return fmt.Errorf("jobs: drop %s: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	claimed(out, q.clock.Now())
	return out, nil
}

// Matches reports, from a read that takes no lock, whether an available job
// of the kinds is due that m admits: a runner woken with a thousand others
// by one enqueue runs its claim transaction only when there is something
// for it.
func (q *Queue) Matches(ctx context.Context, kinds []string, m *Match) (bool, error) {
	args := []any{q.clock.Now()}
	var cond string
	cond, args = m.where(args)
	var in []string
	for _, k := range kinds {
		args = append(args, k)
		in = append(in, "$"+strconv.Itoa(len(args)))
	}
	var one int
	err := q.db.R.QueryRowContext(ctx, "SELECT 1 FROM jobs WHERE state = 'available' AND "+cond+" AND run_at <= $1 AND kind IN ("+
		strings.Join(in, ", ")+") LIMIT 1", args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("jobs: matches: %w", err)
	}
	return true, nil
}

// Admits reports whether m admits a job of the workspace (in the
// organization) requiring the labels: Claim's SQL condition, in memory.
func (m *Match) Admits(organizationID, workspaceID string, labels []string) bool {
	if m == nil || m.OrganizationID != organizationID {
		return false
	}
	if len(m.WorkspaceIDs) > 0 && !slices.Contains(m.WorkspaceIDs, workspaceID) {
		return false
	}
	for _, l := range labels {
		if !slices.Contains(m.Labels, l) {
			return false
		}
	}
	return true
}

// FleetJob is an available fleet job as a matchmaker sees it.
type FleetJob struct {
	ID             string
	WorkspaceID    string
	OrganizationID string
	Labels         []string
}

// FleetWaiting lists due available fleet jobs of the kinds with their
// organizations, oldest first (at most limit), from a read that takes no
// lock.
func (q *Queue) FleetWaiting(ctx context.Context, kinds []string, limit int) ([]FleetJob, error) {
	args := []any{q.clock.Now(), PoolFleet}
	var in []string
	for _, k := range kinds {
		args = append(args, k)
		in = append(in, "$"+strconv.Itoa(len(args)))
	}
	args = append(args, limit)
	rows, err := q.db.R.QueryContext(ctx, `SELECT j.id, j.workspace_id, w.organization_id, j.labels FROM jobs j JOIN workspaces w ON w.id = j.workspace_id
		WHERE j.state = 'available' AND j.pool = $2 AND j.run_at <= $1 AND j.kind IN (`+strings.Join(in, ", ")+`)
		ORDER BY j.run_at, j.id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("jobs: fleet waiting: %w", err)
	}
	defer rows.Close()
	var out []FleetJob
	for rows.Next() {
		var j FleetJob
		var labels string
		if err := rows.Scan(&j.ID, &j.WorkspaceID, &j.OrganizationID, &labels); err != nil {
			return nil, fmt.Errorf("jobs: fleet waiting: %w", err)
		}
		j.Labels = strings.Fields(labels)
		out = append(out, j)
	}
	return out, rows.Err()
}

// candidate is an available job seen by a claim.
type candidate struct {
	id    string
	runAt time.Time
	keys  []string
}

func (q *Queue) candidates(ctx context.Context, tx *db.Tx, kinds []string, m *Match, now time.Time, after *candidate, limit int) ([]candidate, error) {
	args := []any{now}
	var match string
	match, args = m.where(args)
	var in []string
	for _, k := range kinds {
		args = append(args, k)
		in = append(in, "$"+strconv.Itoa(len(args)))
	}
	// One kind (the usual claim) reads the available index in its order
	// (kind, run_at, id); several are merged by a sort.
	kindCond := "kind = " + in[0]
	if len(in) > 1 {
		kindCond = "kind IN (" + strings.Join(in, ", ") + ")"
	}
	cond := ""
	if after != nil {
		args = append(args, after.runAt, after.id)
		n := len(args)
		cond = fmt.Sprintf(" AND (run_at > $%d OR (run_at = $%d AND id > $%d))", n-1, n-1, n)
	}
	args = append(args, limit)
	rows, err := tx.QueryContext(ctx, "SELECT id, run_at, concurrency_keys FROM jobs WHERE state = 'available' AND "+match+" AND run_at <= $1 AND "+kindCond+
		cond+" ORDER BY run_at, id LIMIT $"+strconv.Itoa(len(args))+q.db.Dialect.SkipLocked(), args...)
	if err != nil {
		return nil, fmt.Errorf("jobs: claim: %w", err)
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		var keys string
		if err := rows.Scan(&c.id, db.UTC(&c.runAt), &keys); err != nil {
			return nil, fmt.Errorf("jobs: claim: %w", err)
		}
		c.keys = strings.Fields(keys)
		out = append(out, c)
	}
	return out, rows.Err()
}

// pick chooses the jobs to claim. Jobs without keys are taken as they come;
// as soon as one candidate has keys, the claim serialises with every other
// capped claim and admits candidates while their keys are under the limits.
func (q *Queue) pick(ctx context.Context, tx *db.Tx, req ClaimRequest, now time.Time) ([]string, error) {
	cands, err := q.candidates(ctx, tx, req.Kinds, req.Match, now, nil, req.Max)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	if !slices.ContainsFunc(cands, func(c candidate) bool { return len(c.keys) > 0 }) {
		out := make([]string, len(cands))
		for i, c := range cands {
			out[i] = c.id
		}
		return out, nil
	}
	if err := q.db.Dialect.XactLock(ctx, tx, admissionLock); err != nil {
		return nil, err
	}
	running, err := q.runningByKey(ctx, tx)
	if err != nil {
		return nil, err
	}
	type capOf struct {
		n      int
		capped bool
	}
	limits := map[string]capOf{}
	admit := func(c candidate) (bool, error) {
		for _, k := range c.keys {
			l, ok := limits[k]
			if !ok {
				n, capped, err := q.admit.Limit(ctx, tx, k)
				if err != nil {
					return false, fmt.Errorf("jobs: limit of %s: %w", k, err)
				}
				l = capOf{n, capped}
				limits[k] = l
			}
			if l.capped && running[k] >= l.n {
				return false, nil
			}
		}
		return true, nil
	}
	var out []string
	scanned, limit := 0, req.Max
	for {
		for _, c := range cands {
			ok, err := admit(c)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			out = append(out, c.id)
			for _, k := range c.keys {
				running[k]++
			}
			if len(out) == req.Max {
				return out, nil
			}
		}
		scanned += len(cands)
		if len(cands) < limit || scanned >= maxScan {
			return out, nil // no more candidates (or enough looked at)
		}
		last := cands[len(cands)-1]
		limit = scanWindow
		if cands, err = q.candidates(ctx, tx, req.Kinds, req.Match, now, &last, limit); err != nil {
			return nil, err
		}
	}
}

// runningByKey counts the running jobs of each concurrency key.
func (q *Queue) runningByKey(ctx context.Context, tx *db.Tx) (map[string]int, error) {
	rows, err := tx.QueryContext(ctx, "SELECT concurrency_keys FROM jobs WHERE state = 'running' AND concurrency_keys <> ''")
	if err != nil {
		return nil, fmt.Errorf("jobs: running: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var keys string
		if err := rows.Scan(&keys); err != nil {
			return nil, fmt.Errorf("jobs: running: %w", err)
		}
		for _, k := range strings.Fields(keys) {
			out[k]++
		}
	}
	return out, rows.Err()
}

// lock marks the picked jobs running under the owner's lease.
func (q *Queue) lock(ctx context.Context, tx *db.Tx, picked []string, req ClaimRequest, now time.Time) ([]*Job, error) {
	args := []any{req.Owner, now.Add(req.Lease)}
	in := make([]string, len(picked))
	for i, id := range picked {
		args = append(args, id)
		in[i] = q.db.Dialect.Placeholder(len(args))
	}
	// Dialect placeholders, because the id list can be long (SQLite looks
	// $n names up in a list); they appear in the order of args.
	// The picked rows are this transaction's (locked by the pick on
	// PostgreSQL, SQLite's one writer otherwise): no need to check their
	// state again, and a plain primary-key match keeps the planner on the
	// primary key whatever its statistics say.
	sqlText := "UPDATE jobs SET state = 'running', attempt = attempt + 1, locked_by = " + q.db.Dialect.Placeholder(1) + ", locked_until = " +
		q.db.Dialect.Placeholder(2) + ", cancel_requested = FALSE, started_at = NULL, run_id = NULL WHERE id IN (" + strings.Join(in, ", ") + ") RETURNING " + columns
	rows, err := tx.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return nil, fmt.Errorf("jobs: claim: %w", err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("jobs: claim: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("jobs: claim: %w", err)
	}
	slices.SortFunc(out, func(a, b *Job) int {
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// BindRun binds a claim to the run it started, in the claim's transaction:
// from then on only a lease naming that run holds (Lease.RunID), so a
// lease of an earlier claim never holds again, whatever its owner and
// attempt.
func (q *Queue) BindRun(ctx context.Context, tx *db.Tx, jobID, runID string) error {
	if _, err := tx.ExecContext(ctx, "UPDATE jobs SET run_id = $2 WHERE id = $1", jobID, runID); err != nil {
		return fmt.Errorf("jobs: bind run: %w", err)
	}
	return nil
}

// Extend renews a lease for d from now and reports whether a cancel was
// requested; the first renewal marks the job started (its holder has it).
// ErrLeaseLost: the job is no longer this holder's.
func (q *Queue) Extend(ctx context.Context, l Lease, d time.Duration) (cancelRequested bool, err error) {
	now := q.clock.Now()
	err = q.db.W.QueryRowContext(ctx, `UPDATE jobs SET locked_until = $4, started_at = COALESCE(started_at, $5)
		WHERE id = $1 AND locked_by = $2 AND attempt = $3 AND state = 'running' AND (run_id IS NULL OR run_id = $6)
		RETURNING cancel_requested`, l.JobID, l.Owner, l.Attempt, now.Add(d), now, l.RunID).Scan(&cancelRequested)
	if errors.Is(err, sql.ErrNoRows) {
		return false, ErrLeaseLost
	}
	if err != nil {
		return false, fmt.Errorf("jobs: extend %s: %w", l.JobID, err)
	}
	return cancelRequested, nil
}

// finish moves a leased job out of running, in tx; it wakes claimers when
// the job held a slot or becomes available again. set's parameters start at
// $5 (every parameter must be used: PostgreSQL cannot type an unused one).
func (q *Queue) finish(ctx context.Context, tx *db.Tx, l Lease, set string, args ...any) (*Job, error) {
	all := append([]any{l.JobID, l.Owner, l.Attempt, l.RunID}, args...)
	j, err := scan(tx.QueryRowContext(ctx, "UPDATE jobs SET "+set+", locked_until = NULL WHERE id = $1 AND locked_by = $2 AND attempt = $3 AND state = 'running'"+
		" AND (run_id IS NULL OR run_id = $4) RETURNING "+columns, all...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrLeaseLost
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: finish %s: %w", l.JobID, err)
	}
	if len(j.Keys) > 0 || j.State == Available {
		if err := q.bus.PublishTx(ctx, tx, TopicQueued, j.Kind); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// Complete marks a leased job done, in the caller's transaction (so the
// result it delivered and its completion commit together).
func (q *Queue) Complete(ctx context.Context, tx *db.Tx, l Lease) (*Job, error) {
	return q.finish(ctx, tx, l, "state = 'completed', finished_at = $5", q.clock.Now())
}

// CompleteMany marks many leased jobs done in one transaction and returns
// how many were still held (the others' leases were lost).
func (q *Queue) CompleteMany(ctx context.Context, ls []Lease) (int, error) {
	const chunk = 300
	done := 0
	err := q.db.Tx(ctx, func(tx *db.Tx) error {
		done = 0
		now := q.clock.Now()
		kinds := map[string]bool{}
		for start := 0; start < len(ls); start += chunk {
			part := ls[start:min(start+chunk, len(ls))]
			args := []any{now}
			var vals []string
			for _, l := range part {
				args = append(args, l.JobID, l.Owner, l.Attempt)
				n := len(args) - 1 // the time moves to the end below
				vals = append(vals, fmt.Sprintf("(%s, %s, CAST(%s AS INTEGER))", q.db.Dialect.Placeholder(n-2), q.db.Dialect.Placeholder(n-1),
					q.db.Dialect.Placeholder(n)))
			}
			// The time goes last: SQLite binds its "?" in order of appearance.
			args = append(args[1:], now)
			rows, err := tx.QueryContext(ctx, "WITH v (id, owner, attempt) AS (VALUES "+strings.Join(vals, ", ")+
				") UPDATE jobs SET state = 'completed', finished_at = "+q.db.Dialect.Placeholder(len(args))+
				", locked_until = NULL FROM v WHERE jobs.id = v.id AND jobs.locked_by = v.owner AND jobs.attempt = v.attempt AND jobs.state = 'running'"+
				" RETURNING jobs.kind, jobs.concurrency_keys", args...)
			if err != nil {
				return fmt.Errorf("jobs: complete: %w", err)
			}
			for rows.Next() {
				var kind, keys string
				if err := rows.Scan(&kind, &keys); err != nil {
					rows.Close()
					return fmt.Errorf("jobs: complete: %w", err)
				}
				done++
				if keys != "" {
					kinds[kind] = true
				}
			}
			if err := rows.Close(); err != nil {
				return fmt.Errorf("jobs: complete: %w", err)
			}
		}
		for k := range kinds {
			if err := q.bus.PublishTx(ctx, tx, TopicQueued, k); err != nil {
				return err
			}
		}
		return nil
	})
	return done, err
}

// Fail gives a leased job up for good, in tx.
func (q *Queue) Fail(ctx context.Context, tx *db.Tx, l Lease, reason string) (*Job, error) {
	return q.finish(ctx, tx, l, "state = 'failed', finished_at = $5, last_error = $6", q.clock.Now(), reason)
}

// Retry puts a leased job back in the queue after delay, in tx. charge=false
// gives the attempt back (a graceful shutdown interrupted it, not the job's
// fault). A job out of attempts fails instead (its state says so).
func (q *Queue) Retry(ctx context.Context, tx *db.Tx, l Lease, reason string, delay time.Duration, charge bool) (*Job, error) {
	refund := 0
	if !charge {
		refund = 1
	}
	j, err := q.finish(ctx, tx, l, `state = CASE WHEN attempt - $6 >= max_attempts THEN 'failed' ELSE 'available' END,
		attempt = attempt - $6, run_at = $7, last_error = $5, locked_by = '', started_at = NULL, run_id = NULL`, reason, refund, q.clock.Now().Add(delay))
	if err != nil {
		return nil, err
	}
	if err := q.stampFailed(ctx, tx, j); err != nil {
		return nil, err
	}
	return j, nil
}

// stampFailed records when a job that just failed for good finished (a
// separate statement: a CASE over a time parameter has no type on
// PostgreSQL).
func (q *Queue) stampFailed(ctx context.Context, tx *db.Tx, j *Job) error {
	if j.State != Failed {
		return nil
	}
	now := q.clock.Now()
	if _, err := tx.ExecContext(ctx, "UPDATE jobs SET finished_at = $2 WHERE id = $1", j.ID, now); err != nil {
		return fmt.Errorf("jobs: finish %s: %w", j.ID, err)
	}
	j.FinishedAt = &now
	return nil
}

// Backoff is the delay before retry n (1-based): 1 s doubling to at most 5
// minutes, with ±20 % jitter so that failed jobs do not come back in step.
func Backoff(n int) time.Duration {
	d := time.Second << min(max(n-1, 0), 9)
	d = min(d, 5*time.Minute)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Cancel cancels the unfinished job of kind for ref in the workspace, in tx:
// an available job never runs; a running one is asked to stop (its holder
// hears it on TopicControl and at its next Extend) and finishes as its
// holder reports. It returns the job's state before the cancel ("" when
// there was no unfinished job).
func (q *Queue) Cancel(ctx context.Context, tx *db.Tx, workspaceID, kind, ref string) (string, error) {
	// One statement decides on the state it finds under the row's lock: a
	// job claimed while this waited for the lock is asked to stop, where a
	// read-then-update would find it "available", update nothing and lose
	// the cancel. An available job comes back 'cancelled', a running one
	// 'running'.
	var id, state string
	err := tx.QueryRowContext(ctx, `UPDATE jobs SET
		state = CASE WHEN state = 'available' THEN 'cancelled' ELSE state END,
		finished_at = CASE WHEN state = 'available' THEN $4 ELSE finished_at END,
		cancel_requested = CASE WHEN state = 'running' THEN TRUE ELSE cancel_requested END
		WHERE workspace_id = $1 AND kind = $2 AND ref_id = $3 AND state IN ('available', 'running')
		RETURNING id, state`, workspaceID, kind, ref, q.clock.Now()).Scan(&id, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("jobs: cancel: %w", err)
	}
	if state == Cancelled {
		return Available, nil
	}
	if err := q.bus.PublishTx(ctx, tx, TopicControl, "cancel "+id); err != nil {
		return "", fmt.Errorf("jobs: cancel %s: %w", id, err)
	}
	return Running, nil
}

// Held takes back the running jobs an owner holds, for a restarted worker
// resuming what its previous process left: their leases are renewed for d
// from now, so that the rescuer does not take them from under the worker
// while it finishes them (their old leases may well have expired).
func (q *Queue) Held(ctx context.Context, owner string, d time.Duration) ([]*Job, error) {
	rows, err := q.db.W.QueryContext(ctx, "UPDATE jobs SET locked_until = $2 WHERE state = 'running' AND locked_by = $1 RETURNING "+columns,
		owner, q.clock.Now().Add(d))
	if err != nil {
		return nil, fmt.Errorf("jobs: held by %s: %w", owner, err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("jobs: held by %s: %w", owner, err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("jobs: held by %s: %w", owner, err)
	}
	slices.SortFunc(out, func(a, b *Job) int {
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Cancelling lists the running jobs an owner holds whose cancel was
// requested.
func (q *Queue) Cancelling(ctx context.Context, owner string) ([]string, error) {
	rows, err := q.db.R.QueryContext(ctx, "SELECT id FROM jobs WHERE state = 'running' AND locked_by = $1 AND cancel_requested", owner)
	if err != nil {
		return nil, fmt.Errorf("jobs: cancelling: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("jobs: cancelling: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Unfinished returns the id of the unfinished (available or running) job
// of kind for ref in the workspace, read in q; "" when there is none.
func (q *Queue) Unfinished(ctx context.Context, rq db.Queryer, workspaceID, kind, ref string) (string, error) {
	var id string
	err := rq.QueryRowContext(ctx, `SELECT id FROM jobs WHERE workspace_id = $1 AND kind = $2 AND ref_id = $3
		AND state IN ('available', 'running')`, workspaceID, kind, ref).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("jobs: unfinished %s %s: %w", kind, ref, err)
	}
	return id, nil
}

// CountUnfinished counts the unfinished (available or running) jobs of kind
// in the workspace, read in rq: for bounds on what a tenant may queue.
func (q *Queue) CountUnfinished(ctx context.Context, rq db.Queryer, workspaceID, kind string) (int, error) {
	var n int
	if err := rq.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE workspace_id = $1 AND kind = $2 AND state IN ('available', 'running')`,
		workspaceID, kind).Scan(&n); err != nil {
		return 0, fmt.Errorf("jobs: count %s: %w", kind, err)
	}
	return n, nil
}

// Holder returns the lease a running job is held under, or nil when the
// job is not running.
func (q *Queue) Holder(ctx context.Context, id string) (*Lease, error) {
	var l Lease
	err := q.db.R.QueryRowContext(ctx, "SELECT id, locked_by, attempt, COALESCE(run_id, '') FROM jobs WHERE id = $1 AND state = 'running'", id).
		Scan(&l.JobID, &l.Owner, &l.Attempt, &l.RunID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: holder of %s: %w", id, err)
	}
	return &l, nil
}

func (q *Queue) list(ctx context.Context, query string, args ...any) ([]*Job, error) {
	rows, err := q.db.R.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("jobs: list: %w", err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("jobs: list: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// InterruptFunc runs in the rescuer's transaction for a job whose holder
// died: the job is already back in the queue (or failed, when final); it
// brings the job's subject in line. reason is the verdict's.
type InterruptFunc func(ctx context.Context, tx *db.Tx, j *Job, final bool, reason string) error

// Verdict is what becomes of a job whose lease expired.
type Verdict struct {
	// Fail gives the job up at once instead of queueing it again.
	Fail bool
	// Refund gives the attempt back (the holder never started the work).
	Refund bool
	Reason string
}

// Policy decides the verdict of an expired job, seen as its holder left it.
type Policy func(j *Job) Verdict

// Requeue is the plain policy: every expired job goes back to the queue,
// charged with its attempt.
func Requeue(reason string) Policy { return func(*Job) Verdict { return Verdict{Reason: reason} } }

// Rescue returns every running job whose lease expired to the queue, or
// fails it when it is out of attempts or the policy says so, one
// transaction each with fn, and reports how many it rescued. Concurrent
// rescuers on several replicas are safe: each job is moved once.
func (q *Queue) Rescue(ctx context.Context, policy Policy, fn InterruptFunc) (int, error) {
	now := q.clock.Now()
	expired, err := q.list(ctx, "SELECT "+columns+" FROM jobs WHERE state = 'running' AND locked_until < $1 ORDER BY locked_until", now)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, j := range expired {
		v := policy(j)
		refund := 0
		if v.Refund {
			refund = 1
		}
		err := q.db.Tx(ctx, func(tx *db.Tx) error {
			// The expiry is checked again here: the holder may have extended
			// its lease since the list was read.
			r, err := scan(tx.QueryRowContext(ctx, `UPDATE jobs SET
				state = CASE WHEN $5 OR attempt - $6 >= max_attempts THEN 'failed' ELSE 'available' END,
				attempt = attempt - $6, run_at = $3, last_error = $4, locked_by = '', locked_until = NULL, started_at = NULL, run_id = NULL
				WHERE id = $1 AND attempt = $2 AND state = 'running' AND locked_until < $3 RETURNING `+columns,
				j.ID, j.Attempt, now, v.Reason, v.Fail, refund))
			if errors.Is(err, sql.ErrNoRows) {
				return nil // finished, extended or rescued meanwhile
			}
			if err != nil {
				return err
			}
			if err := q.stampFailed(ctx, tx, r); err != nil {
				return err
			}
			if r.State == Available || len(r.Keys) > 0 {
				if err := q.bus.PublishTx(ctx, tx, TopicQueued, r.Kind); err != nil {
					return err
				}
			}
			if fn != nil {
				if err := fn(ctx, tx, r, r.State == Failed, v.Reason); err != nil {
					return err
				}
			}
			n++
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("jobs: rescue %s: %w", j.ID, err))
		}
	}
	return n, errors.Join(errs...)
}

// Expire ends the leases of every job owner holds now (its holder is known
// to be gone), so that the next rescue takes them; it reports how many.
func (q *Queue) Expire(ctx context.Context, owner string) (int64, error) {
	now := q.clock.Now()
	res, err := q.db.W.ExecContext(ctx, "UPDATE jobs SET locked_until = $2 WHERE state = 'running' AND locked_by = $1 AND locked_until >= $2",
		owner, now.Add(-time.Millisecond))
	if err != nil {
		return 0, fmt.Errorf("jobs: expire leases of %s: %w", owner, err)
	}
	return res.RowsAffected()
}

// Repool moves available jobs to another pool (fleet work no runner can
// take any more falls back to the hub's workers); it reports how many moved.
func (q *Queue) Repool(ctx context.Context, ids []string, pool string) (int, error) {
	n := 0
	for _, id := range ids {
		res, err := q.db.W.ExecContext(ctx, "UPDATE jobs SET pool = $2 WHERE id = $1 AND state = 'available'", id, pool)
		if err != nil {
			return n, fmt.Errorf("jobs: repool %s: %w", id, err)
		}
		if k, _ := res.RowsAffected(); k > 0 {
			n++
		}
	}
	if n > 0 {
		return n, q.bus.Publish(ctx, TopicQueued, "repool")
	}
	return n, nil
}

// Waiting lists the available jobs of a pool, oldest first (at most limit).
func (q *Queue) Waiting(ctx context.Context, pool string, limit int) ([]*Job, error) {
	return q.list(ctx, "SELECT "+columns+" FROM jobs WHERE state = 'available' AND pool = $1 ORDER BY run_at, id LIMIT $2", pool, limit)
}

// Prune deletes finished jobs older than age and reports how many.
func (q *Queue) Prune(ctx context.Context, age time.Duration) (int64, error) {
	res, err := q.db.W.ExecContext(ctx, "DELETE FROM jobs WHERE state IN ('completed', 'failed', 'cancelled') AND finished_at < $1", q.clock.Now().Add(-age))
	if err != nil {
		return 0, fmt.Errorf("jobs: prune: %w", err)
	}
	return res.RowsAffected()
}
