package tasks

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/realtime"
	"slipway/internal/platform/text"
	"slipway/internal/projects"
	"slipway/internal/runs"
)

// Projects is what tasks need from projects.
type Projects interface {
	Get(ctx context.Context, ws *actor.Workspace, id string) (*projects.Project, error)
	List(ctx context.Context, ws *actor.Workspace) ([]projects.Project, error)
	Profiles(ctx context.Context, ws *actor.Workspace) ([]projects.AgentProfile, error)
	Repository(ctx context.Context, workspaceID, id string) (*projects.Repository, error)
	ProfileByName(ctx context.Context, workspaceID, name string) (*projects.ResolvedProfile, error)
	MaxConcurrentRuns(ctx context.Context, q db.Queryer, id string) (*int, error)
}

// Queue is what tasks need from the job queue: a queued task has one
// unfinished job, which a cancel stops.
type Queue interface {
	Enqueue(ctx context.Context, tx *db.Tx, j jobs.NewJob) (*jobs.Job, error)
	Cancel(ctx context.Context, tx *db.Tx, workspaceID, kind, ref string) (string, error)
	Unfinished(ctx context.Context, q db.Queryer, workspaceID, kind, ref string) (string, error)
}

// JobKind is the kind of a task's jobs.
const JobKind = "task"

// Router tells whether remote runners can take a task's work: how many
// are eligible now for work of the workspace requiring the labels (q reads
// in the caller's transaction).
type Router interface {
	Eligible(ctx context.Context, q db.Queryer, workspaceID string, labels []string) (int, error)
}

// Config is what running tasks needs from the instance's configuration.
type Config struct {
	// HubMode dispatches tasks to remote runners when one is eligible;
	// FleetOnly fails a launch no runner is eligible for instead of running
	// it on the server.
	HubMode   bool
	FleetOnly bool
	// WorkspaceCap is MAX_PARALLEL_TASKS_PER_WORKSPACE.
	WorkspaceCap   int
	DefaultImage   string // SERVICE_AGENT_IMAGE
	LLMKey         string // LLM_PROVIDER_API_KEY
	DefaultTimeout time.Duration
	// MaxAttempts is how many interrupted runs a task gets before it fails.
	MaxAttempts int
	// ApprovalTimeout is how long a tool approval waits for a decision
	// (SERVICE_TOOL_APPROVAL_TIMEOUT_SECS).
	ApprovalTimeout time.Duration
}

// Service implements tasks.
type Service struct {
	db       *db.DB
	clock    clock.Clock
	projects Projects
	runs     *runs.Service
	queue    Queue
	cfg      Config
	react    Reactions // nil: no other domain reacts
	router   Router

	approvals Approvals
	inbox     Inbox
	autonomy  Autonomy
	hub       *realtime.Hub // nil: nothing is live
}

// Deps are what tasks use of the rest. DB, Clock, Projects, Runs and Queue
// are required.
type Deps struct {
	DB       *db.DB
	Clock    clock.Clock
	Projects Projects
	Runs     *runs.Service
	Queue    Queue
	// Router routes tasks to remote runners (nil: every task runs on the
	// server).
	Router Router
	// Working with a running agent (nil: agents ask nothing and nothing
	// reaches them).
	Approvals Approvals
	Inbox     Inbox
	Autonomy  Autonomy
	// Hub makes task changes live (nil: nothing is live).
	Hub *realtime.Hub
	// Reactions are told when a task ends.
	Reactions Reactions
}

// NewService builds the tasks service.
func NewService(d Deps, cfg Config) *Service {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.WorkspaceCap <= 0 {
		cfg.WorkspaceCap = 3
	}
	return &Service{db: d.DB, clock: d.Clock, projects: d.Projects, runs: d.Runs, queue: d.Queue, cfg: cfg, router: d.Router,
		approvals: d.Approvals, inbox: d.Inbox, autonomy: d.Autonomy, hub: d.Hub, react: d.Reactions}
}

// TaskCreate is a new task.
type TaskCreate struct {
	ProjectID    string     `json:"project_id" format:"uuid"`
	Prompt       string     `json:"prompt" maxLength:"100000"`
	Title        string     `json:"title,omitempty" maxLength:"200" doc:"Default: the prompt's first line"`
	AgentProfile string     `json:"agent_profile,omitempty" maxLength:"100" doc:"A profile name of the workspace; default: shell"`
	Config       TaskConfig `json:"config,omitempty"`
	Hold         bool       `json:"hold,omitempty" doc:"Create it queued but held; POST …/launch releases it"`
}

// titleFrom is the first line of the prompt, without control characters,
// cut to 80 characters.
func titleFrom(prompt string) string {
	line := strings.TrimSpace(strings.SplitN(strings.TrimSpace(prompt), "\n", 2)[0])
	line = strings.TrimSpace(text.StripControls(line))
	if utf8.RuneCountInString(line) > 80 {
		line = string([]rune(line)[:79]) + "…"
	}
	if line == "" {
		line = "Untitled task"
	}
	return line
}

func cleanTitle(raw string) (string, error) { return text.Name("title", raw, 200) }

func validConfig(c TaskConfig) error {
	if c.Runner != nil {
		for _, l := range c.Runner.RequiredLabels {
			if l == "" || len(l) > 64 || strings.ContainsAny(l, " ,\t\n") {
				return apperr.BadRequest("config.runner.required_labels: %q is not a label", l)
			}
			if err := text.CheckName("config.runner.required_labels", l); err != nil {
				return err
			}
		}
	}
	return nil
}

// requiredLabels are the labels a task asks of its runner, folded.
func requiredLabels(t *Task) []string {
	if t.Config.Runner == nil {
		return nil
	}
	ls, err := text.Labels("config.runner.required_labels", t.Config.Runner.RequiredLabels)
	if err != nil {
		return t.Config.Runner.RequiredLabels // validated when stored; never here
	}
	return ls
}

// route places a task's work: the fleet of remote runners when hub mode is
// on and one is eligible, else the server; with fleet_only and no eligible
// runner, it says why the task cannot run (noRunner).
func (s *Service) route(ctx context.Context, q db.Queryer, t *Task) (pool string, labels []string, noRunner string, err error) {
	if !s.cfg.HubMode || s.router == nil {
		return jobs.PoolLocal, nil, "", nil
	}
	labels = requiredLabels(t)
	n, err := s.router.Eligible(ctx, q, t.WorkspaceID, labels)
	switch {
	case err != nil:
		return "", nil, "", err
	case n > 0:
		return jobs.PoolFleet, labels, "", nil
	case s.cfg.FleetOnly:
		why := "no eligible runner: SERVICE_AGENT_EXECUTION=fleet_only and no online, enabled, undrained runner is granted this workspace"
		if len(labels) > 0 {
			why += " and advertises the labels " + strings.Join(labels, ", ")
		}
		return "", nil, why, nil
	}
	return jobs.PoolLocal, nil, "", nil
}

// enqueue queues the task's job in tx, where its route says; a task no
// runner can take under fleet_only fails at once, saying why.
func (s *Service) enqueue(ctx context.Context, tx *db.Tx, t *Task) error {
	pool, labels, noRunner, err := s.route(ctx, tx, t)
	if err != nil {
		return err
	}
	if noRunner != "" {
		failed, err := s.setStatus(ctx, tx, t.WorkspaceID, t.ID, StatusQueued, StatusFailed, noRunner)
		if err != nil {
			return err
		}
		if err := s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(StatusQueued, StatusFailed, noRunner))); err != nil {
			return err
		}
		*t = *failed
		return nil
	}
	_, err = s.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: JobKind, WorkspaceID: t.WorkspaceID, Ref: t.ID, MaxAttempts: s.cfg.MaxAttempts,
		Keys: []string{"workspace:" + t.WorkspaceID, "project:" + t.ProjectID}, Pool: pool, Labels: labels})
	if errors.Is(err, jobs.ErrDuplicate) {
		return nil // already queued
	}
	return err
}

// event appends lifecycle events to the task's log in tx (runID "" for
// events that belong to no run).
// Each is a change the task board shows, so watchers of the workspace's
// tasks topic hear of it.
func (s *Service) event(ctx context.Context, tx *db.Tx, t *Task, runID string, evs ...runs.NewEvent) error {
	if err := s.runs.Append(ctx, tx, t.WorkspaceID, t.ID, runID, evs...); err != nil {
		return err
	}
	return s.hub.NotifyTx(ctx, tx, t.WorkspaceID, TopicTasks, t.ID)
}

// TopicTasks hints that a task was created, changed status or was deleted.
const TopicTasks = "tasks"

func (s *Service) value(typ string, v any) runs.NewEvent { return runs.Value(typ, v, s.clock.Now()) }

// Create queues a task on a project of the active workspace.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, u *actor.User, in TaskCreate) (*Task, error) {
	var createdBy *string
	if u != nil {
		createdBy = &u.ID
	}
	t, err := s.newTask(ctx, ws, createdBy, in)
	if err != nil {
		return nil, err
	}
	if err := s.db.Tx(ctx, func(tx *db.Tx) error { return s.insert(ctx, tx, t) }); err != nil {
		return nil, err
	}
	return t, nil
}

// CreateTx queues a task in the caller's transaction (a workflow's agent
// node starts its task with the node's transition).
func (s *Service) CreateTx(ctx context.Context, tx *db.Tx, workspaceID string, createdBy *string, in TaskCreate) (*Task, error) {
	t, err := s.newTask(ctx, &actor.Workspace{ID: workspaceID}, createdBy, in)
	if err != nil {
		return nil, err
	}
	return t, s.insert(ctx, tx, t)
}

// newTask validates a new task.
func (s *Service) newTask(ctx context.Context, ws *actor.Workspace, createdBy *string, in TaskCreate) (*Task, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, apperr.BadRequest("prompt must not be empty")
	}
	if strings.ContainsRune(in.Prompt, 0) {
		return nil, apperr.BadRequest("prompt must not contain NUL characters")
	}
	if !ids.Valid(in.ProjectID) {
		return nil, apperr.BadRequest("project_id must be a project id")
	}
	p, err := s.projects.Get(ctx, ws, in.ProjectID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.BadRequest("project_id: no such project in this workspace")
	} else if err != nil {
		return nil, err
	}
	if p.ArchivedAt != nil {
		return nil, apperr.New(apperr.CodeConflict, "the project is archived; restore it to add tasks")
	}
	title := titleFrom(in.Prompt)
	if in.Title != "" {
		if title, err = cleanTitle(in.Title); err != nil {
			return nil, err
		}
	}
	profile := strings.TrimSpace(in.AgentProfile)
	if profile == "" {
		profile = "shell"
	}
	if _, err := s.projects.ProfileByName(ctx, ws.ID, profile); err != nil {
		return nil, err
	}
	if err := validConfig(in.Config); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	id := ids.New()
	return &Task{ID: id, WorkspaceID: ws.ID, ProjectID: p.ID, Title: title, Prompt: in.Prompt, AgentProfile: profile,
		Config: in.Config, Status: StatusQueued, Held: in.Hold, Branch: BranchFor(id), CreatedBy: createdBy,
		CreatedAt: now, UpdatedAt: now}, nil
}

// insert stores a new task with its log and, unless held, its job.
func (s *Service) insert(ctx context.Context, tx *db.Tx, t *Task) error {
	if err := insertTask(ctx, tx, t); err != nil {
		return err
	}
	if err := s.runs.CreateLog(ctx, tx, t.WorkspaceID, t.ID); err != nil {
		return err
	}
	if err := s.event(ctx, tx, t, "", s.value(EventStatus, map[string]any{"to": StatusQueued, "reason": "created", "held": t.Held})); err != nil {
		return err
	}
	if t.Held {
		return nil
	}
	return s.enqueue(ctx, tx, t)
}

// Reactions are what other domains do when a task ends (the composition
// root lists who reacts).
type Reactions interface {
	// TaskEnded is told, in the transaction where a task reaches a final
	// status, that it ended (a workflow's agent node waits for its task).
	TaskEnded(ctx context.Context, tx *db.Tx, t *Task) error
}

// setStatus moves a task from one status to another in tx and tells the end
// hooks when the move ends it.
func (s *Service) setStatus(ctx context.Context, tx *db.Tx, workspaceID, id, from, to, errText string) (*Task, error) {
	t, err := setStatus(ctx, tx, workspaceID, id, from, to, errText, s.clock.Now())
	if err == nil && Active(from) && !Active(to) && s.approvals != nil {
		// The run ended (or went back to the queue): its agent is gone.
		err = s.approvals.Supersede(ctx, tx, workspaceID, id)
	}
	if err != nil || !Terminal(to) {
		return t, err
	}
	if err := s.subtaskEnded(ctx, tx, t); err != nil {
		return nil, err
	}
	if s.react != nil {
		if err := s.react.TaskEnded(ctx, tx, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Get reads a task of the active workspace.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("task")
	}
	return getTask(ctx, s.db.R, ws.ID, id)
}

// transition moves a task in a transaction after checking the state
// machine, and records the status event; before (optional) runs in the same
// transaction first.
func (s *Service) transition(ctx context.Context, ws *actor.Workspace, id, to, action, reason string, before func(tx *db.Tx, t *Task) error) (*Task, error) {
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if err := checkTransition(t.Status, to, action); err != nil {
			return nil, err
		}
		if before != nil {
			if err := before(tx, t); err != nil {
				return nil, err
			}
		}
		out, err := s.setStatus(ctx, tx, ws.ID, t.ID, t.Status, to, "")
		if err != nil {
			return nil, err
		}
		return out, s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(t.Status, to, reason)))
	})
}

// Cancel stops a task: a queued one never starts, a running one's agent is
// stopped wherever it runs. Its run ends at once with the cancel as its last
// event (what the agent still prints is dropped). Cancelling a finished task
// is refused.
func (s *Service) Cancel(ctx context.Context, ws *actor.Workspace, id string, u *actor.User) (*Task, error) {
	reason := "cancelled"
	if u != nil {
		reason = "cancelled by user " + u.ID // an id, not an email: every member reads the log
	}
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) { return s.cancelIn(ctx, tx, ws, t, reason) })
}

// cancelIn cancels t in tx.
func (s *Service) cancelIn(ctx context.Context, tx *db.Tx, ws *actor.Workspace, t *Task, reason string) (*Task, error) {
	if err := checkTransition(t.Status, StatusCancelled, "cancel"); err != nil {
		return nil, err
	}
	out, err := s.setStatus(ctx, tx, ws.ID, t.ID, t.Status, StatusCancelled, "")
	if err != nil {
		return nil, err
	}
	running, err := s.runs.Running(ctx, tx, ws.ID, t.ID)
	if err != nil {
		return nil, err
	}
	runID := ""
	if len(running) > 0 {
		runID = running[0].ID
	}
	if err := s.event(ctx, tx, t, runID, s.value(EventStatus, statusPayload(t.Status, StatusCancelled, reason))); err != nil {
		return nil, err
	}
	for _, r := range running {
		if _, err := s.runs.Finish(ctx, tx, ws.ID, r.ID, runs.Cancelled, nil, ""); err != nil {
			return nil, err
		}
	}
	_, err = s.queue.Cancel(ctx, tx, ws.ID, JobKind, t.ID)
	return out, err
}

// Launch releases a held task into the queue.
func (s *Service) Launch(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) { return s.launchIn(ctx, tx, ws, t) })
}

// launchIn releases the held task t in tx.
func (s *Service) launchIn(ctx context.Context, tx *db.Tx, ws *actor.Workspace, t *Task) (*Task, error) {
	if t.Status != StatusQueued || !t.Held {
		held := ""
		if t.Held {
			held = ", held"
		}
		return nil, apperr.New(apperr.CodeConflict, "only a held, queued task can be launched (this one is %s%s)", t.Status, held)
	}
	out, err := setHeld(ctx, tx, ws.ID, t.ID, false, s.clock.Now())
	if err != nil {
		return nil, err
	}
	if err := s.event(ctx, tx, t, "", s.value(EventStatus, map[string]any{"from": StatusQueued, "to": StatusQueued, "reason": "launched"})); err != nil {
		return nil, err
	}
	return out, s.enqueue(ctx, tx, out)
}

// Restart queues a finished task again; the new run continues on its branch.
func (s *Service) Restart(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if err := checkTransition(t.Status, StatusQueued, "restart"); err != nil {
			return nil, err
		}
		now := s.clock.Now()
		if _, err := setHeld(ctx, tx, ws.ID, t.ID, false, now); err != nil {
			return nil, err
		}
		if _, err := setPR(ctx, tx, ws.ID, t.ID, nil, now); err != nil {
			return nil, err
		}
		out, err := s.setStatus(ctx, tx, ws.ID, t.ID, t.Status, StatusQueued, "")
		if err != nil {
			return nil, err
		}
		if err := s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(t.Status, StatusQueued, "restarted"))); err != nil {
			return nil, err
		}
		// Routed once queued: under fleet_only with no eligible runner it
		// fails again at once, saying why.
		return out, s.enqueue(ctx, tx, out)
	})
}

// Rerun creates a new task with the same project, prompt, profile and
// configuration, and queues it.
func (s *Service) Rerun(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Task, error) {
	t, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	return s.Create(ctx, ws, u, TaskCreate{ProjectID: t.ProjectID, Prompt: t.Prompt, Title: t.Title, AgentProfile: t.AgentProfile, Config: t.Config})
}

// ErrNothingToPropose refuses a pull request for a task without changes.
var ErrNothingToPropose = apperr.New(apperr.CodeConflict, "the task changed nothing, so there is nothing to propose")

// OpenPR opens the pull request of a task that finished with changes but
// without an automatic pull request (the project's autodev is off).
func (s *Service) OpenPR(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	return s.transition(ctx, ws, id, StatusDonePR, "open a pull request for", "pull request opened", func(tx *db.Tx, t *Task) error {
		if t.PR == nil || t.PR.Commit == "" {
			return ErrNothingToPropose
		}
		now := s.clock.Now()
		pr := *t.PR
		pr.OpenedAt = &now
		if _, err := setPR(ctx, tx, ws.ID, t.ID, &pr, now); err != nil {
			return err
		}
		return s.event(ctx, tx, t, "", s.value(EventPR, pr))
	})
}

// ClosePR closes the task's open pull request (an undo; the local provider
// has nothing else to close).
func (s *Service) ClosePR(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if t.PR == nil || t.PR.OpenedAt == nil || t.PR.ClosedAt != nil {
			return nil, apperr.New(apperr.CodeConflict, "the task has no open pull request")
		}
		now := s.clock.Now()
		pr := *t.PR
		pr.ClosedAt = &now
		out, err := setPR(ctx, tx, ws.ID, t.ID, &pr, now)
		if err != nil {
			return nil, err
		}
		return out, s.event(ctx, tx, t, "", s.value(EventPR, pr))
	})
}

// Record appends an event to a task's log in tx (another domain's record
// of what it did to the task: an undo).
func (s *Service) Record(ctx context.Context, tx *db.Tx, workspaceID, taskID, typ string, v any) error {
	t, err := getTask(ctx, tx, workspaceID, taskID)
	if err != nil {
		return err
	}
	return s.event(ctx, tx, t, "", s.value(typ, v))
}

// Delete removes a task that is not running, with its runs and events.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) error {
	_, err := s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if Active(t.Status) {
			return nil, apperr.New(apperr.CodeConflict, "the task is %s; cancel it first", t.Status)
		}
		if _, err := s.queue.Cancel(ctx, tx, ws.ID, JobKind, t.ID); err != nil {
			return nil, err
		}
		if err := s.runs.DeleteLog(ctx, tx, ws.ID, t.ID); err != nil {
			return nil, err
		}
		if err := deleteTask(ctx, tx, ws.ID, id); err != nil {
			return nil, err
		}
		return nil, s.hub.NotifyTx(ctx, tx, ws.ID, TopicTasks, id)
	})
	return err
}

// ProjectDeleting reacts to a project being deleted (projects.Reactions): the project's tasks go
// with it (the database cascades the rows), and so do their event logs and
// unfinished jobs.
func (s *Service) ProjectDeleting(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error {
	ids, err := taskIDs(ctx, tx, workspaceID, projectID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := s.queue.Cancel(ctx, tx, workspaceID, JobKind, id); err != nil {
			return err
		}
		if err := s.runs.DeleteLog(ctx, tx, workspaceID, id); err != nil {
			return err
		}
	}
	return nil
}

// SetConfig replaces the configuration of a task that has not started.
func (s *Service) SetConfig(ctx context.Context, ws *actor.Workspace, id string, c TaskConfig) (*Task, error) {
	if err := validConfig(c); err != nil {
		return nil, err
	}
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if t.Status != StatusQueued {
			return nil, apperr.New(apperr.CodeConflict, "the configuration can only change while the task is queued (it is %s)", t.Status)
		}
		return setConfig(ctx, tx, ws.ID, id, c, s.clock.Now())
	})
}

// SetNotes replaces the task's notes.
func (s *Service) SetNotes(ctx context.Context, ws *actor.Workspace, id, notes string) (*Task, error) {
	if strings.ContainsRune(notes, 0) {
		return nil, apperr.BadRequest("notes must not contain NUL characters")
	}
	return s.update(ctx, ws, id, func(tx *db.Tx, _ *Task) (*Task, error) {
		return setNotes(ctx, tx, ws.ID, id, notes, s.clock.Now())
	})
}

// Rename sets the title and returns the stored one.
func (s *Service) Rename(ctx context.Context, ws *actor.Workspace, id, title string) (string, error) {
	clean, err := cleanTitle(title)
	if err != nil {
		return "", err
	}
	t, err := s.update(ctx, ws, id, func(tx *db.Tx, _ *Task) (*Task, error) {
		return setTitle(ctx, tx, ws.ID, id, clean, s.clock.Now())
	})
	if err != nil {
		return "", err
	}
	return t.Title, nil
}

// update runs fn on the workspace's task in one transaction and returns
// what fn returns; an invalid id, or another workspace's task, is not found.
func (s *Service) update(ctx context.Context, ws *actor.Workspace, id string, fn func(tx *db.Tx, t *Task) (*Task, error)) (*Task, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("task")
	}
	var out *Task
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTask(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		out, err = fn(tx, t)
		return err
	})
	return out, err
}

// searchable narrows w to tasks whose title or prompt contains q.
func (s *Service) searchable(w db.Where, q string) (db.Where, error) {
	if q == "" {
		return w, nil
	}
	if err := text.CheckName("q", q); err != nil {
		return w, err
	}
	pat := "%" + db.EscapeLike(q) + "%"
	return w.And("("+s.db.Dialect.ILike("title", "?")+" OR "+s.db.Dialect.ILike("prompt", "?")+")", pat, pat), nil
}

// List returns tasks of the active workspace, newest first.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, f ListFilter) ([]Task, int, error) {
	w := db.NewWhere("workspace_id = ?", ws.ID)
	if f.Status != "" {
		w = w.And("status = ?", f.Status)
	}
	if f.ProjectID != "" {
		w = w.And("project_id = ?", f.ProjectID)
	}
	w, err := s.searchable(w, f.Q)
	if err != nil {
		return nil, 0, err
	}
	return listTasks(ctx, s.db, w, "created_at DESC, id DESC", f.Limit, f.Offset)
}

// TaskName is a task in a picker.
type TaskName struct {
	ID     string `json:"id" format:"uuid"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// Names returns the newest tasks' titles, for pickers.
func (s *Service) Names(ctx context.Context, ws *actor.Workspace, limit int) ([]TaskName, error) {
	rows, _, err := listTasks(ctx, s.db, db.NewWhere("workspace_id = ?", ws.ID), "created_at DESC, id DESC", limit, 0)
	if err != nil {
		return nil, err
	}
	out := make([]TaskName, 0, len(rows))
	for _, t := range rows {
		out = append(out, TaskName{ID: t.ID, Title: t.Title, Status: t.Status})
	}
	return out, nil
}

// BoardInput filters the tasks board.
type BoardInput struct {
	board.Query
	Status    string `query:"status" enum:"queued,running,needs_input,done,done_pr,failed,cancelled"`
	ProjectID string `query:"project_id" format:"uuid"`
}

var taskSort = map[string]string{"created_at": "created_at", "updated_at": "updated_at", "title": "title", "status": "status"}

var statusLabels = map[string]string{
	StatusQueued: "Queued", StatusRunning: "Running", StatusNeedsInput: "Needs input", StatusDone: "Done",
	StatusDonePR: "Done (PR)", StatusFailed: "Failed", StatusCancelled: "Cancelled",
}

// Board returns a page of tasks with status and project facets.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, in BoardInput) (*board.Board[Task], error) {
	defOrder := "desc" // newest first
	if in.Sort == "title" || in.Sort == "status" {
		defOrder = "asc" // text reads A to Z
	}
	orderBy, err := in.OrderBy(taskSort, "created_at", defOrder, "id")
	if err != nil {
		return nil, err
	}
	w, err := s.searchable(db.NewWhere("workspace_id = ?", ws.ID), in.Q)
	if err != nil {
		return nil, err
	}
	byProject := w
	if in.Status != "" {
		byProject = byProject.And("status = ?", in.Status)
	}
	byStatus := w
	if in.ProjectID != "" {
		byStatus = byStatus.And("project_id = ?", in.ProjectID)
	}
	statusCounts, err := db.CountBy(ctx, s.db.R, "tasks", "status", byStatus)
	if err != nil {
		return nil, err
	}
	projectCounts, err := db.CountBy(ctx, s.db.R, "tasks", "project_id", byProject)
	if err != nil {
		return nil, err
	}
	rowsW := byStatus
	if in.Status != "" {
		rowsW = rowsW.And("status = ?", in.Status)
	}
	// One unit per group: its oldest task among those the filters keep
	// stands for it (the subquery reuses the clause's own parameters).
	rowsW = rowsW.And("(group_id IS NULL OR id IN (SELECT MIN(id) FROM tasks WHERE " + rowsW.SQL + " AND group_id IS NOT NULL GROUP BY group_id))")
	rows, total, err := listTasks(ctx, s.db, rowsW, orderBy, in.PageSize, in.Offset())
	if err != nil {
		return nil, err
	}
	facets := map[string][]board.Facet{"status": {}, "project": {}}
	for _, st := range Statuses {
		facets["status"] = append(facets["status"], board.Facet{Value: st, Label: statusLabels[st], Count: statusCounts[st]})
	}
	if len(projectCounts) > 0 {
		names := map[string]string{}
		ps, err := s.projects.List(ctx, ws)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			names[p.ID] = p.Name
		}
		for pid, n := range projectCounts {
			facets["project"] = append(facets["project"], board.Facet{Value: pid, Label: names[pid], Count: n})
		}
		slices.SortFunc(facets["project"], func(a, b board.Facet) int {
			return cmp.Or(strings.Compare(a.Label, b.Label), strings.Compare(a.Value, b.Value))
		})
	}
	return board.New(in.Query, rows, total, facets), nil
}

// RunnerLine is the spec's runner match line.
type RunnerLine struct {
	InGroup    bool   `json:"in_group" doc:"A worker-group required-label set applies"`
	MatchCount int    `json:"match_count" doc:"Eligible runners; 0 in the local and waiting states"`
	State      string `json:"state" enum:"matched,local,waiting"`
}

// RunnerLine says where a task's work goes, now: matched (runners are
// eligible; how many), local (the server runs it: hub mode is off, or no
// runner is eligible and the server is the fallback) or waiting (fleet_only
// and no runner is eligible). It names no runner.
func (s *Service) RunnerLine(ctx context.Context, ws *actor.Workspace, id string) (*RunnerLine, error) {
	t, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	line := &RunnerLine{State: "local"}
	line.InGroup = t.Config.Runner != nil && len(t.Config.Runner.RequiredLabels) > 0
	if !s.cfg.HubMode || s.router == nil {
		return line, nil
	}
	n, err := s.router.Eligible(ctx, s.db.R, t.WorkspaceID, requiredLabels(t))
	switch {
	case err != nil:
		return nil, err
	case n > 0:
		line.State, line.MatchCount = "matched", n
	case s.cfg.FleetOnly:
		line.State = "waiting"
	}
	return line, nil
}

// Events pages through a task's event log after a sequence number.
func (s *Service) Events(ctx context.Context, ws *actor.Workspace, id string, after int32, limit int) ([]runs.TaskEvent, error) {
	if _, err := s.Get(ctx, ws, id); err != nil {
		return nil, err
	}
	return s.runs.LogEvents(ctx, id, after, limit)
}
