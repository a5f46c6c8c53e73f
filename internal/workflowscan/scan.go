// Package workflowscan applies the workflows a project keeps in its own
// repository: the YAML documents under .slipway/workflows/ on a branch are
// validated and each brings the project's workflow of its name in line
// (created, updated or unchanged), with a report per file.
package workflowscan

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/ids"
	"slipway/internal/projects"
	"slipway/internal/repo"
	"slipway/internal/workflows"
)

// Dir is where a repository keeps its workflows.
const Dir = ".slipway/workflows"

// Limits of a scan.
const (
	maxFiles     = 200
	maxFileBytes = 1 << 20
)

// ScanInput asks for a scan.
type ScanInput struct {
	Branch string `json:"branch,omitempty" maxLength:"200" doc:"Default: the project's default branch"`
	Apply  *bool  `json:"apply,omitempty" doc:"Default true; false only reports what would change"`
}

// ScanReport is a scan's outcome.
type ScanReport struct {
	Branch  string     `json:"branch"`
	Commit  string     `json:"commit"`
	Applied bool       `json:"applied"`
	Files   []ScanFile `json:"files"`
}

// ScanFile is one file's outcome.
type ScanFile struct {
	Path       string  `json:"path"`
	Status     string  `json:"status" enum:"created,updated,unchanged,invalid" doc:"With apply false: what would be done"`
	WorkflowID *string `json:"workflow_id" nullable:"true" format:"uuid"`
	Name       string  `json:"name,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// Service scans project repositories.
type Service struct {
	projects  *projects.Service
	workflows *workflows.Service
	git       *repo.Git
}

// NewService returns the scanner.
func NewService(p *projects.Service, w *workflows.Service, g *repo.Git) *Service {
	return &Service{projects: p, workflows: w, git: g}
}

var branchName = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._/-]{0,199}$`)

// Scan fetches the project's repository and applies (or, with apply
// false, reports) its workflow documents, one by one: a file that fails
// validation is reported and leaves the others alone.
func (s *Service) Scan(ctx context.Context, ws *actor.Workspace, projectID string, in ScanInput) (*ScanReport, error) {
	if !ids.Valid(projectID) {
		return nil, apperr.NotFound("project")
	}
	r, err := s.projects.Repository(ctx, ws.ID, projectID)
	if err != nil {
		return nil, err
	}
	branch := in.Branch
	if branch == "" {
		branch = r.Project.DefaultBranch
	}
	if !branchName.MatchString(branch) || strings.Contains(branch, "..") {
		return nil, apperr.BadRequest("branch %q is not a branch name", branch)
	}
	apply := in.Apply == nil || *in.Apply
	remote := repo.Remote{URL: strings.TrimPrefix(r.Project.RepoURL, "file://"), Username: r.Credentials.Username, Token: r.Credentials.Token,
		SSHPrivateKey: r.Credentials.SSHPrivateKey}
	if err := s.git.Sync(ctx, projectID, remote); err != nil {
		return nil, gitError("fetching the repository", err)
	}
	files, commit, err := s.git.Files(ctx, projectID, branch, Dir, []string{".yaml", ".yml"}, maxFiles, maxFileBytes)
	switch {
	case errors.Is(err, repo.ErrNoBranch):
		return nil, apperr.BadRequest("the repository has no branch %q", branch)
	case errors.Is(err, repo.ErrTooMany):
		return nil, apperr.BadRequest("%s holds more than %d workflow files", Dir, maxFiles)
	case err != nil:
		return nil, gitError("reading the repository", err)
	}
	rep := &ScanReport{Branch: branch, Commit: commit, Applied: apply, Files: []ScanFile{}}
	for _, f := range files {
		fr := ScanFile{Path: f.Path}
		switch {
		case f.Content == nil:
			fr.Status, fr.Error = "invalid", "larger than 1 MiB"
		default:
			status, w, err := s.workflows.ApplyYAML(ctx, ws, projectID, f.Content, !apply)
			var ae *apperr.Error
			switch {
			case errors.As(err, &ae) && ae.Code == apperr.CodeBadRequest:
				fr.Status, fr.Error = "invalid", ae.Message
			case err != nil:
				return nil, err
			default:
				fr.Status = status
				if w != nil {
					fr.Name = w.Name
					if w.ID != "" && (apply || status != workflows.Created) {
						id := w.ID
						fr.WorkflowID = &id
					}
				}
			}
		}
		rep.Files = append(rep.Files, fr)
	}
	return rep, nil
}

func gitError(doing string, err error) error {
	var ge *repo.Error
	if errors.As(err, &ge) {
		return apperr.BadRequest("%s failed: %s", doing, ge.Output)
	}
	return err
}

type scanInput struct {
	ID   string `path:"id" doc:"Project id"`
	Body *ScanInput
}

// Register mounts the scan operation.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Workflows"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	huma.Register(api, ops.Op("post_api_projects_id_workflows_scan", http.MethodPost, "/api/projects/{id}/workflows/scan",
		"Apply the workflows the project's repository keeps under .slipway/workflows/ (a report per file)"),
		func(ctx context.Context, in *scanInput) (*httpx.Out[*ScanReport], error) {
			ws, _ := actor.WorkspaceFrom(ctx)
			var body ScanInput
			if in.Body != nil {
				body = *in.Body
			}
			return httpx.Reply(s.Scan(ctx, ws, in.ID, body))
		})
}
