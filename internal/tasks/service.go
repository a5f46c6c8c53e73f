package tasks

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"slipway/internal/agents/protocol"
	"slipway/internal/forge"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
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
	ProfileResource(ctx context.Context, q db.Queryer, workspaceID, name string) (string, error)
	MaxConcurrentRuns(ctx context.Context, q db.Queryer, id string) (*int, error)
	// ProjectForge opens a project's forge ("" and nil for a local one).
	ProjectForge(ctx context.Context, workspaceID, id string) (string, *forge.Access, error)
}

// Models opens the openai_compatible resource an llm profile names,
// through q: its base URL, the model (the one given, else its default) and
// its key.
type Models interface {
	Model(ctx context.Context, q db.Queryer, workspaceID, id, model string) (baseURL, useModel, key string, err error)
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
	LLMBase        string // LLM_PROVIDER_BASE_URL: the only endpoint LLMKey goes to
	DefaultTimeout time.Duration
	// MaxAttempts is how many interrupted runs a task gets before it fails.
	MaxAttempts int
	// ApprovalTimeout is how long a tool approval waits for a decision
	// (SERVICE_TOOL_APPROVAL_TIMEOUT_SECS).
	ApprovalTimeout time.Duration
}

// Service implements tasks, one concept a file: creating and ending them
// (here), routing to runners (routing.go), what people do to a task
// (actions.go), reading and listing (reads.go), running them (lifecycle.go),
// working with their agents (steering.go), groups and subtasks.
type Service struct {
	db       *db.DB
	clock    clock.Clock
	projects Projects
	runs     *runs.Service
	queue    Queue
	cfg      Config
	react    Reactions // nil: no other domain reacts
	models   Models    // nil: an llm profile naming a resource cannot run
	router   Router

	approvals Approvals
	inbox     Inbox
	autonomy  Autonomy
	hub       *realtime.Hub // nil: nothing is live
	log       *slog.Logger

	lists  *listCache    // pages of the task list
	prKick chan struct{} // RunPRs looks now
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
	// Models opens the resources llm profiles name.
	Models Models
	Log    *slog.Logger
}

// NewService builds the tasks service.
func NewService(d Deps, cfg Config) *Service {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.WorkspaceCap <= 0 {
		cfg.WorkspaceCap = 3
	}
	if cfg.LLMBase == "" {
		cfg.LLMBase = protocol.DefaultBaseURL
	}
	return &Service{db: d.DB, clock: d.Clock, projects: d.Projects, runs: d.Runs, queue: d.Queue, cfg: cfg, router: d.Router,
		approvals: d.Approvals, inbox: d.Inbox, autonomy: d.Autonomy, hub: d.Hub, react: d.Reactions, models: d.Models, lists: newListCache(),
		log: d.Log, prKick: make(chan struct{}, 1)}
}

// TaskCreate is a new task.
type TaskCreate struct {
	ProjectID    string     `json:"project_id" format:"uuid"`
	Prompt       string     `json:"prompt" maxLength:"100000"`
	Title        string     `json:"title,omitempty" maxLength:"200" doc:"Default: the prompt's first line"`
	AgentProfile string     `json:"agent_profile,omitempty" maxLength:"100" doc:"A profile name of the workspace; default: the project's agent_profile, else shell"`
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
		profile = p.AgentProfile
	}
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
	// PRChanged is told, in the transaction that records it, what the
	// forge said of a task's pull request (opened, merged, closed).
	PRChanged(ctx context.Context, tx *db.Tx, t *Task) error
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

// ErrNothingToPropose refuses a pull request for a task without changes.
var ErrNothingToPropose = apperr.New(apperr.CodeConflict, "the task changed nothing, so there is nothing to propose")

// Record appends an event to a task's log in tx (another domain's record
// of what it did to the task: an undo).
func (s *Service) Record(ctx context.Context, tx *db.Tx, workspaceID, taskID, typ string, v any) error {
	t, err := getTask(ctx, tx, workspaceID, taskID)
	if err != nil {
		return err
	}
	return s.event(ctx, tx, t, "", s.value(typ, v))
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

var taskSort = map[string]string{"created_at": "created_at", "updated_at": "updated_at", "title": "title", "status": "status"}

var statusLabels = map[string]string{
	StatusQueued: "Queued", StatusRunning: "Running", StatusNeedsInput: "Needs input", StatusDone: "Done",
	StatusDonePR: "Done (PR)", StatusFailed: "Failed", StatusCancelled: "Cancelled",
}
