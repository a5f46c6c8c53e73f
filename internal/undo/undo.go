// Package undo reverses what a task published: revert its commit on its
// branch, close its pull request, or delete its branch. An undo action
// waits out a short grace period (the sweep then runs it) or is executed at
// once; either way the reversal runs exactly once: a compare-and-set moves
// the action from grace to executing before anything is touched.
package undo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/sweep"
	"slipway/internal/projects"
	"slipway/internal/repo"
	"slipway/internal/tasks"
	"slipway/internal/workport"
)

// Kinds of undo.
const (
	KindRevertCommit = "revert_commit"
	KindClosePR      = "close_pr"
	KindDeleteBranch = "delete_branch"
)

// Kinds lists the kinds.
var Kinds = []string{KindRevertCommit, KindClosePR, KindDeleteBranch}

// Statuses.
const (
	StatusGrace     = "grace"     // waiting out its grace period; executed by the sweep when it ends
	StatusExecuting = "executing" // claimed: the reversal is running
	StatusExecuted  = "executed"
	StatusFailed    = "failed"
)

// Action is an undo action of a task.
type Action struct {
	ID          string     `json:"id" format:"uuid"`
	WorkspaceID string     `json:"workspace_id" format:"uuid"`
	TaskID      string     `json:"task_id" format:"uuid"`
	Kind        string     `json:"kind" enum:"revert_commit,close_pr,delete_branch"`
	Status      string     `json:"status" enum:"grace,executing,executed,failed"`
	GraceUntil  time.Time  `json:"grace_until" doc:"When the sweep executes it (execute skips the wait)"`
	CreatedBy   *string    `json:"created_by" nullable:"true" format:"uuid"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at" nullable:"true"`
	FinishedAt  *time.Time `json:"finished_at" nullable:"true"`
	Result      string     `json:"result" doc:"What the reversal did (the revert commit, the branch deleted, …)"`
	Error       string     `json:"error"`
}

// Config tunes undo.
type Config struct {
	// Window is how long after a task finished an undo may be created
	// (SERVICE_UNDO_WINDOW_SECS).
	Window time.Duration
	// Grace is how long an action waits before the sweep runs it
	// (SERVICE_UNDO_GRACE_SECS).
	Grace time.Duration
}

// Service holds undo actions.
type Service struct {
	db       *db.DB
	clock    clock.Clock
	tasks    *tasks.Service
	projects *projects.Service
	git      *repo.Git
	cfg      Config
	log      *slog.Logger
}

// NewService returns the undo service.
func NewService(d *db.DB, clk clock.Clock, t *tasks.Service, p *projects.Service, g *repo.Git, cfg Config, log *slog.Logger) *Service {
	if cfg.Window <= 0 {
		cfg.Window = 24 * time.Hour
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	return &Service{db: d, clock: clk, tasks: t, projects: p, git: g, cfg: cfg, log: log}
}

// List lists a task's undo actions, newest first.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, taskID string) ([]Action, error) {
	if _, err := s.tasks.Get(ctx, ws, taskID); err != nil {
		return nil, err
	}
	return ofTask(ctx, s.db.R, ws.ID, taskID)
}

// Create schedules an undo of a task's published work, inside the task's
// undo window; the sweep executes it when its grace period ends.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, u *actor.User, taskID, kind string) (*Action, error) {
	if !slices.Contains(Kinds, kind) {
		return nil, apperr.BadRequest("kind must be one of %s", strings.Join(Kinds, ", "))
	}
	t, err := s.tasks.Get(ctx, ws, taskID)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	switch {
	case t.FinishedAt == nil || !tasks.Terminal(t.Status):
		return nil, apperr.New(apperr.CodeConflict, "the task is %s: only a finished task's work can be undone", t.Status)
	case now.After(t.FinishedAt.Add(s.cfg.Window)):
		return nil, apperr.New(apperr.CodeConflict, "the task's undo window closed %s after it finished", s.cfg.Window)
	case t.PR == nil || t.PR.Commit == "":
		return nil, apperr.New(apperr.CodeConflict, "the task published no change: there is nothing to undo")
	case kind == KindClosePR && (t.PR.OpenedAt == nil || t.PR.ClosedAt != nil):
		return nil, apperr.New(apperr.CodeConflict, "the task has no open pull request")
	}
	a := &Action{ID: ids.New(), WorkspaceID: ws.ID, TaskID: t.ID, Kind: kind, Status: StatusGrace, GraceUntil: now.Add(s.cfg.Grace),
		CreatedBy: &u.ID, CreatedAt: now}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		n, err := countLive(ctx, tx, ws.ID, t.ID, kind)
		if err != nil {
			return err
		}
		if n > 0 {
			return apperr.New(apperr.CodeConflict, "a %s undo of this task exists already", kind)
		}
		if err := insert(ctx, tx, a); err != nil {
			return err
		}
		return s.tasks.Record(ctx, tx, ws.ID, t.ID, tasks.EventUndo, map[string]any{"undo_id": a.ID, "kind": kind, "status": a.Status, "by": u.ID})
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Execute runs an undo action now, skipping what is left of its grace
// period. Only one caller (or the sweep) ever runs it: the others are told
// it is already executing or done.
func (s *Service) Execute(ctx context.Context, ws *actor.Workspace, id string) (*Action, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("undo action")
	}
	a, err := get(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	won, err := s.claim(ctx, a)
	if err != nil {
		return nil, err
	}
	if !won {
		return nil, apperr.New(apperr.CodeConflict, "this undo is %s already", a.Status)
	}
	return s.run(ctx, a), nil
}

// claim is the compare-and-set from grace to executing.
func (s *Service) claim(ctx context.Context, a *Action) (bool, error) {
	now := s.clock.Now()
	won, err := claim(ctx, s.db.W, a.WorkspaceID, a.ID, now)
	if err != nil {
		return false, err
	}
	if !won {
		if cur, err := get(ctx, s.db.R, a.WorkspaceID, a.ID); err == nil {
			a.Status = cur.Status
		}
		return false, nil
	}
	a.Status, a.StartedAt = StatusExecuting, &now
	return true, nil
}

// run performs a claimed action's reversal and records how it went, on
// the action and on its task.
func (s *Service) run(ctx context.Context, a *Action) *Action {
	result, err := s.reverse(ctx, a)
	now := s.clock.Now()
	a.FinishedAt, a.Result = &now, result
	a.Status = StatusExecuted
	if err != nil {
		a.Status, a.Error = StatusFailed, err.Error()
	}
	ctx = context.WithoutCancel(ctx) // the reversal happened: record it
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := finish(ctx, tx, a, now); err != nil {
			return err
		}
		return s.tasks.Record(ctx, tx, a.WorkspaceID, a.TaskID, tasks.EventUndo, map[string]any{"undo_id": a.ID, "kind": a.Kind,
			"status": a.Status, "result": a.Result, "error": a.Error})
	})
	if err != nil {
		s.log.Error("recording an undo failed", "undo_id", a.ID, "err", err)
	}
	return a
}

// reverse does the reversal.
func (s *Service) reverse(ctx context.Context, a *Action) (string, error) {
	ws := &actor.Workspace{ID: a.WorkspaceID}
	t, err := s.tasks.Get(ctx, ws, a.TaskID)
	if err != nil {
		return "", err
	}
	if t.PR == nil {
		return "", errors.New("the task has no published change")
	}
	if a.Kind == KindClosePR {
		if _, err := s.tasks.ClosePR(ctx, ws, t.ID); err != nil {
			return "", err
		}
		return "pull request closed", nil
	}
	r, err := s.projects.Repository(ctx, a.WorkspaceID, t.ProjectID)
	if err != nil {
		return "", err
	}
	remote := repo.Remote{URL: strings.TrimPrefix(r.Project.RepoURL, "file://"), Username: r.Credentials.Username,
		Token: r.Credentials.Token, SSHPrivateKey: r.Credentials.SSHPrivateKey}
	switch a.Kind {
	case KindRevertCommit:
		sha, err := s.git.Revert(ctx, t.ProjectID, remote, t.Branch, t.PR.Commit, workport.AuthorName, workport.AuthorEmail)
		if err != nil {
			return "", err
		}
		return "reverted " + t.PR.Commit + " on " + t.Branch + " with " + sha, nil
	case KindDeleteBranch:
		if err := s.git.DeleteBranch(ctx, t.ProjectID, remote, t.Branch); err != nil {
			return "", err
		}
		return "deleted branch " + t.Branch, nil
	}
	return "", fmt.Errorf("unknown undo kind %q", a.Kind)
}

// Sweep executes the actions whose grace ended and fails the ones left
// executing by a process that stopped (they may have run: never again).
// It returns how many it executed.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	now := s.clock.Now()
	if err := failStale(ctx, s.db.W, now, now.Add(-10*time.Minute)); err != nil {
		return 0, err
	}
	due, err := dueActions(ctx, s.db.R, now)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range due {
		won, err := s.claim(ctx, &due[i])
		if err != nil {
			return n, err
		}
		if won {
			s.run(ctx, &due[i])
			n++
		}
	}
	return n, nil
}

// Run sweeps every interval until ctx ends; every replica may run it.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	sweep.Every(ctx, every, s.log, "undo actions executed", s.Sweep)
}
