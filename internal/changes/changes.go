// Package changes shows what a task published: the files and the unified
// patch of its commit against its base branch, read from the project's
// mirror on the hub (fetched first when a runner pushed the commit).
package changes

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
	"slipway/internal/projects"
	"slipway/internal/repo"
	"slipway/internal/tasks"
)

// MaxPatch bounds the patch one answer carries; a longer one is cut and
// says so.
const MaxPatch = 512 << 10

// maxConcurrent bounds the diffs this server reads at once: each runs git.
const maxConcurrent = 4

// Service reads tasks' changes.
type Service struct {
	tasks    *tasks.Service
	projects *projects.Service
	git      *repo.Git
	slots    chan struct{}
}

// NewService returns the service.
func NewService(t *tasks.Service, p *projects.Service, g *repo.Git) *Service {
	return &Service{tasks: t, projects: p, git: g, slots: make(chan struct{}, maxConcurrent)}
}

// TaskChange is what a task's published commit changes.
type TaskChange struct {
	TaskID string `json:"task_id" format:"uuid"`
	Base   string `json:"base" doc:"The branch it is compared with (from their merge base)"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	repo.Change
}

// ErrNoChange answers a task that published nothing.
var ErrNoChange = apperr.New(apperr.CodeNotFound, "the task published no change")

// OfTask reads the change a task of the active workspace published.
func (s *Service) OfTask(ctx context.Context, ws *actor.Workspace, taskID string) (*TaskChange, error) {
	t, err := s.tasks.Get(ctx, ws, taskID)
	if err != nil {
		return nil, err
	}
	if t.PR == nil || t.PR.Commit == "" {
		return nil, ErrNoChange
	}
	r, err := s.projects.Repository(ctx, ws.ID, t.ProjectID)
	if err != nil {
		return nil, err
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c, err := s.git.Diff(ctx, t.ProjectID, repo.Remote{URL: r.Project.RepoURL, Username: r.Credentials.Username, Token: r.Credentials.Token,
		SSHPrivateKey: r.Credentials.SSHPrivateKey}, t.PR.Base, t.PR.Commit, MaxPatch)
	var gitErr *repo.Error
	switch {
	case errors.Is(err, repo.ErrNoBranch):
		return nil, apperr.New(apperr.CodeNotFound, "the repository no longer has the task's commit %s", t.PR.Commit)
	case errors.As(err, &gitErr):
		return nil, apperr.New(apperr.CodeConflict, "the change cannot be read: %s", gitErr.Error())
	case err != nil:
		return nil, err
	}
	return &TaskChange{TaskID: t.ID, Base: t.PR.Base, Branch: t.PR.Branch, Commit: t.PR.Commit, Change: *c}, nil
}

type idInput struct {
	ID string `path:"id" doc:"Task id"`
}

// Register mounts GET /api/tasks/{id}/diff (active workspace).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Tasks"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	op := ops.Op("get_api_tasks_id_diff", http.MethodGet, "/api/tasks/{id}/diff", "What the task's published commit changes")
	op.Description = "The files (with insertions and deletions) and the unified patch of the task's commit against its base branch, " +
		"from their merge base. The patch stops at 512 KiB (truncated says so). 404 for a task that published no change."
	huma.Register(api, op, func(ctx context.Context, in *idInput) (*httpx.Out[*TaskChange], error) {
		w, _ := actor.WorkspaceFrom(ctx)
		return httpx.Reply(s.OfTask(ctx, w, in.ID))
	})
}
