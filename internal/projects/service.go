package projects

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/platform/vault"
	"slipway/internal/repo"
)

// Service implements projects and agent profiles.
type Service struct {
	db        *db.DB
	clock     clock.Clock
	sealer    *vault.Sealer
	remotes   Remotes
	react     Reactions // nil: no other domain reacts
	models    Models
	forges    Forges
	publicURL string
	events    ForgeEvents
}

// Deps are what the projects service is built with.
type Deps struct {
	DB      *db.DB
	Clock   clock.Clock
	Sealer  *vault.Sealer
	Remotes Remotes
	React   Reactions // nil: no other domain reacts
	Models  Models
	// Forges opens the workspace's forge resources (nil: no forge).
	Forges Forges
	// PublicURL is where a forge sends its webhooks ("": nowhere).
	PublicURL string
	// Events hears what a forge's webhooks say, after each delivery
	// committed (nil: nobody).
	Events ForgeEvents
}

// Models checks the openai_compatible resource an llm profile names: it
// must be the workspace's (read through q), and gives its default model.
type Models interface {
	ModelDefault(ctx context.Context, q db.Queryer, workspaceID, id string) (string, error)
}

// Remotes looks at a repository, without fetching it, before a project is
// bound to it (repo.Git).
type Remotes interface {
	Probe(ctx context.Context, r repo.Remote, branch string) (repo.Heads, error)
}

// Reactions are what other domains do when a project changes, inside the
// transaction that changes it (the composition root lists who reacts).
type Reactions interface {
	// ProjectDeleting: the project goes away; what other domains keep for
	// it goes with it.
	ProjectDeleting(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error
	// CapChanged: max_concurrent_runs changed; work held back may start.
	CapChanged(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error
}

// NewService builds the projects service.
func NewService(d Deps) *Service {
	return &Service{db: d.DB, clock: d.Clock, sealer: d.Sealer, remotes: d.Remotes, react: d.React, models: d.Models, forges: d.Forges,
		publicURL: strings.TrimRight(d.PublicURL, "/"), events: d.Events}
}

// settleBranch decides a project's default branch by asking its remote:
// the remote's HEAD when none is given, and a given branch must exist
// there. A remote this server cannot read is accepted only with a branch
// named outright (a runner elsewhere may reach what the hub cannot); one
// that holds nothing yet takes any valid branch.
func (s *Service) settleBranch(ctx context.Context, url string, c Credentials, branch string) (string, error) {
	h, err := s.remotes.Probe(ctx, repo.Remote{URL: url, Username: c.Username, Token: c.Token, SSHPrivateKey: c.SSHPrivateKey}, branch)
	some := func() string {
		if len(h.Branches) == 0 {
			return ""
		}
		list := strings.Join(h.Branches[:min(len(h.Branches), 10)], ", ")
		if len(h.Branches) > 10 {
			list += ", …"
		}
		return " (it has " + list + ")"
	}
	switch {
	case err != nil && branch != "":
		return branch, nil
	case err != nil:
		var gitErr *repo.Error
		why := err.Error()
		if errors.As(err, &gitErr) {
			why = strings.Join(strings.Fields(strings.ReplaceAll(gitErr.Output, "\n", "; ")), " ")
		}
		return "", apperr.BadRequest("default_branch: the repository's default branch could not be read (%s); check repo_url and credentials, or give default_branch", why)
	case h.Empty && branch == "":
		return "main", nil
	case h.Empty:
		return branch, nil
	case branch != "" && !h.Has && h.Default != "":
		return "", apperr.BadRequest("default_branch %q does not exist in the repository (its default branch is %q)", branch, h.Default)
	case branch != "" && !h.Has:
		return "", apperr.BadRequest("default_branch %q does not exist in the repository%s", branch, some())
	case branch != "":
		return branch, nil
	case h.Default != "":
		return h.Default, nil
	case slices.Contains(h.Branches, "main"):
		return "main", nil // HEAD names a branch nothing was pushed to
	case len(h.Branches) == 1:
		return h.Branches[0], nil
	}
	return "", apperr.BadRequest("default_branch: the repository's HEAD names no branch it has%s; give default_branch", some())
}

func credentialsContext(projectID string) string { return "project:" + projectID + ":credentials" }
func apiKeyContext(profileID string) string      { return "agent_profile:" + profileID + ":api_key" }

// ProjectCreate is a new project.
type ProjectCreate struct {
	Name          string       `json:"name" maxLength:"100"`
	RepoURL       string       `json:"repo_url" maxLength:"2048" doc:"Absolute local path, file://, https:// or ssh://"`
	DefaultBranch string       `json:"default_branch,omitempty" maxLength:"200" doc:"Must exist in the repository; default: the branch the remote's HEAD names (main for an empty repository)"`
	Provider      string       `json:"provider,omitempty" enum:"local" doc:"Default: local"`
	Credentials   *Credentials `json:"credentials,omitempty" doc:"Write-only; stored sealed"`
	AgentImage    string       `json:"agent_image,omitempty" maxLength:"500"`
	Autodev       bool         `json:"autodev,omitempty"`
}

// ProjectUpdate changes a project; absent fields stay as they are.
type ProjectUpdate struct {
	Name          *string      `json:"name,omitempty" maxLength:"100"`
	RepoURL       *string      `json:"repo_url,omitempty" maxLength:"2048"`
	DefaultBranch *string      `json:"default_branch,omitempty" maxLength:"200"`
	Credentials   *Credentials `json:"credentials,omitempty" doc:"Replaces the stored credentials; {} clears them"`
	AgentImage    *string      `json:"agent_image,omitempty" maxLength:"500"`
	AgentProfile  *string      `json:"agent_profile,omitempty" maxLength:"100" doc:"A profile name of the workspace; empty: shell"`
	Autodev       *bool        `json:"autodev,omitempty"`
}

func (s *Service) sealCredentials(projectID string, c *Credentials) (*string, error) {
	if c == nil || c.Empty() {
		return nil, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	sealed := s.sealer.Seal(string(b), credentialsContext(projectID))
	return &sealed, nil
}

func (s *Service) conflictOnName(err error, name string) error {
	if err != nil && s.db.Dialect.IsUniqueViolation(err) {
		return apperr.New(apperr.CodeConflict, "a project named %q exists in this workspace", name)
	}
	return err
}

// Create adds a project to the active workspace.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, in ProjectCreate) (*Project, error) {
	name, err := cleanName(in.Name)
	if err != nil {
		return nil, err
	}
	repoURL := strings.TrimSpace(in.RepoURL)
	if err := validRepoURL(repoURL); err != nil {
		return nil, err
	}
	branch := in.DefaultBranch
	if branch != "" {
		if err := validBranch(branch); err != nil {
			return nil, err
		}
	}
	if in.Provider != "" && in.Provider != ProviderLocal {
		return nil, apperr.BadRequest("provider must be local: a forge's repositories are imported with POST /api/projects/sync_import")
	}
	var creds Credentials
	if in.Credentials != nil {
		creds = *in.Credentials
	}
	if branch, err = s.settleBranch(ctx, repoURL, creds, branch); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	p := &projectRow{Project: Project{ID: ids.New(), WorkspaceID: ws.ID, Name: name, RepoURL: repoURL, DefaultBranch: branch,
		Provider: ProviderLocal, AgentImage: strings.TrimSpace(in.AgentImage), Autodev: in.Autodev, CreatedAt: now, UpdatedAt: now}}
	if p.sealedCredentials, err = s.sealCredentials(p.ID, in.Credentials); err != nil {
		return nil, err
	}
	p.HasCredentials = p.sealedCredentials != nil
	if err := s.conflictOnName(insertProject(ctx, s.db.W, p), name); err != nil {
		return nil, err
	}
	return &p.Project, nil
}

// Get reads a project of the active workspace.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Project, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("project")
	}
	p, err := getProject(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	return &p.Project, nil
}

// List returns the active workspace's projects by name.
func (s *Service) List(ctx context.Context, ws *actor.Workspace) ([]Project, error) {
	return listProjects(ctx, s.db.R, ws.ID)
}

// mutate loads a project in a transaction, lets fn change it, and saves it.
func (s *Service) mutate(ctx context.Context, ws *actor.Workspace, id string, fn func(p *projectRow) error) (*Project, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("project")
	}
	var out *Project
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		p, err := getProject(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		capBefore := p.MaxConcurrentRuns
		if err := fn(p); err != nil {
			return err
		}
		p.UpdatedAt = s.clock.Now()
		if err := s.conflictOnName(updateProject(ctx, tx, p), p.Name); err != nil {
			return err
		}
		out = &p.Project
		if (capBefore == nil) != (p.MaxConcurrentRuns == nil) || (capBefore != nil && *capBefore != *p.MaxConcurrentRuns) {
			if s.react != nil {
				return s.react.CapChanged(ctx, tx, ws.ID, id)
			}
		}
		return nil
	})
	return out, err
}

// Update changes the given fields. A change of repository, branch or
// credentials is checked against the remote first, outside the write.
func (s *Service) Update(ctx context.Context, ws *actor.Workspace, id string, in ProjectUpdate) (*Project, error) {
	if in.RepoURL != nil || in.DefaultBranch != nil || in.Credentials != nil {
		if !ids.Valid(id) {
			return nil, apperr.NotFound("project")
		}
		cur, err := s.Repository(ctx, ws.ID, id)
		if err != nil {
			return nil, err
		}
		url, branch, creds := cur.Project.RepoURL, cur.Project.DefaultBranch, cur.Credentials
		if in.RepoURL != nil {
			if url = strings.TrimSpace(*in.RepoURL); validRepoURL(url) != nil {
				return nil, validRepoURL(url)
			}
		}
		if in.DefaultBranch != nil {
			if branch = *in.DefaultBranch; validBranch(branch) != nil {
				return nil, validBranch(branch)
			}
		}
		if in.Credentials != nil {
			creds = *in.Credentials
		}
		if _, err := s.settleBranch(ctx, url, creds, branch); err != nil {
			return nil, err
		}
	}
	return s.mutate(ctx, ws, id, func(p *projectRow) error {
		if in.Name != nil {
			n, err := cleanName(*in.Name)
			if err != nil {
				return err
			}
			p.Name = n
		}
		if in.RepoURL != nil {
			r := strings.TrimSpace(*in.RepoURL)
			if err := validRepoURL(r); err != nil {
				return err
			}
			p.RepoURL = r
		}
		if in.DefaultBranch != nil {
			if err := validBranch(*in.DefaultBranch); err != nil {
				return err
			}
			p.DefaultBranch = *in.DefaultBranch
		}
		if in.Credentials != nil {
			sealed, err := s.sealCredentials(p.ID, in.Credentials)
			if err != nil {
				return err
			}
			p.sealedCredentials = sealed
			p.HasCredentials = sealed != nil
		}
		if in.AgentImage != nil {
			p.AgentImage = strings.TrimSpace(*in.AgentImage)
		}
		if in.AgentProfile != nil {
			name := strings.TrimSpace(*in.AgentProfile)
			if name != "" {
				if _, err := s.ProfileByName(ctx, ws.ID, name); err != nil {
					return apperr.BadRequest("agent_profile: the workspace has no profile named %q", name)
				}
			}
			p.AgentProfile = name
		}
		if in.Autodev != nil {
			p.Autodev = *in.Autodev
		}
		return nil
	})
}

// SetArchived archives (now) or restores (nil) a project.
func (s *Service) SetArchived(ctx context.Context, ws *actor.Workspace, id string, archived bool) (*Project, error) {
	return s.mutate(ctx, ws, id, func(p *projectRow) error {
		switch {
		case archived && p.ArchivedAt == nil:
			now := s.clock.Now()
			p.ArchivedAt = &now
		case !archived:
			p.ArchivedAt = nil
		}
		return nil
	})
}

// SetConcurrency sets max_concurrent_runs (nil: unlimited).
func (s *Service) SetConcurrency(ctx context.Context, ws *actor.Workspace, id string, max *int) (*Project, error) {
	if max != nil && *max < 1 {
		return nil, apperr.BadRequest("max_concurrent_runs must be at least 1, or null for unlimited")
	}
	return s.mutate(ctx, ws, id, func(p *projectRow) error {
		p.MaxConcurrentRuns = max
		return nil
	})
}

// Delete removes a project with its tasks, runs and events; refused while
// any of its tasks runs.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) error {
	if !ids.Valid(id) {
		return apperr.NotFound("project")
	}
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		if _, err := getProject(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		n, err := activeTasks(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if n > 0 {
			return apperr.New(apperr.CodeConflict, "%d task(s) of this project are running; cancel them first", n)
		}
		if s.react != nil {
			if err := s.react.ProjectDeleting(ctx, tx, ws.ID, id); err != nil {
				return err
			}
		}
		return deleteProject(ctx, tx, ws.ID, id)
	})
}

// BoardInput filters the projects board.
type BoardInput struct {
	board.Query
	Tab      string `query:"tab" enum:"active,archived" default:"active"`
	Provider string `query:"provider" enum:"local,github,gitlab,gitea,forgejo"`
	Autodev  string `query:"autodev" enum:"true,false"`
}

var boardSort = map[string]string{"name": "name", "created_at": "created_at", "updated_at": "updated_at"}

// Board returns a page of projects with summary, provider and autodev facets.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, in BoardInput) (*board.Board[Project], error) {
	orderBy, err := in.OrderBy(boardSort, "name", "asc", "id")
	if err != nil {
		return nil, err
	}
	base := db.NewWhere("workspace_id = ?", ws.ID)
	if in.Q != "" {
		if err := text.CheckName("q", in.Q); err != nil {
			return nil, err
		}
		pat := "%" + db.EscapeLike(in.Q) + "%"
		base = base.And("("+s.db.Dialect.ILike("name", "?")+" OR "+s.db.Dialect.ILike("repo_url", "?")+")", pat, pat)
	}
	// Facets count within the search but across the other filters' values.
	summary, err := db.CountBy(ctx, s.db.R, "projects", "CASE WHEN archived_at IS NULL THEN 'active' ELSE 'archived' END", base)
	if err != nil {
		return nil, err
	}
	f := base.And("archived_at IS NULL")
	if in.Tab == "archived" {
		f = base.And("archived_at IS NOT NULL")
	}
	providers, err := db.CountBy(ctx, s.db.R, "projects", providerColumn, f)
	if err != nil {
		return nil, err
	}
	autodev, err := db.CountBy(ctx, s.db.R, "projects", "CASE WHEN autodev THEN 'true' ELSE 'false' END", f)
	if err != nil {
		return nil, err
	}
	if in.Provider != "" {
		f = f.And(providerColumn+" = ?", in.Provider)
	}
	if in.Autodev != "" {
		f = f.And("autodev = ?", in.Autodev == "true")
	}
	rows, total, err := boardRows(ctx, s.db.R, f, orderBy, in.PageSize, in.Offset())
	if err != nil {
		return nil, err
	}
	return board.New(in.Query, rows, total, map[string][]board.Facet{
		"summary": {{Value: "active", Label: "Active", Count: summary["active"]}, {Value: "archived", Label: "Archived", Count: summary["archived"]}},
		"provider": {{Value: ProviderLocal, Label: "Local", Count: providers[ProviderLocal]}, {Value: "github", Label: "GitHub", Count: providers["github"]},
			{Value: "gitlab", Label: "GitLab", Count: providers["gitlab"]}, {Value: "gitea", Label: "Gitea", Count: providers["gitea"]},
			{Value: "forgejo", Label: "Forgejo", Count: providers["forgejo"]}},
		"autodev": {{Value: "true", Label: "Autodev on", Count: autodev["true"]}, {Value: "false", Label: "Autodev off", Count: autodev["false"]}},
	}), nil
}

// Repository is what the executor needs to reach a project's repository.
type Repository struct {
	Project     Project
	Credentials Credentials
}

// Repository reads a project with its credentials opened (host side only).
func (s *Service) Repository(ctx context.Context, workspaceID, id string) (*Repository, error) {
	p, err := getProject(ctx, s.db.R, workspaceID, id)
	if err != nil {
		return nil, err
	}
	r := &Repository{Project: p.Project}
	if p.ForgeResourceID != nil && s.forges != nil {
		// A forge's project reaches git with the resource's token.
		a, err := s.forges.Forge(ctx, workspaceID, *p.ForgeResourceID)
		if err != nil {
			return nil, err
		}
		r.Credentials = Credentials{Username: a.GitUser, Token: a.Token}
		return r, nil
	}
	if p.sealedCredentials != nil {
		plain, err := s.sealer.Open(*p.sealedCredentials, credentialsContext(p.ID))
		if err != nil {
			return nil, apperr.Wrap(apperr.CodeVault, err, "the project's credentials cannot be opened")
		}
		if err := json.Unmarshal([]byte(plain), &r.Credentials); err != nil {
			return nil, apperr.Wrap(apperr.CodeVault, err, "the project's credentials are corrupt")
		}
	}
	return r, nil
}

// Profiles.

// WorkspaceCreated gives a new workspace the default profiles, inside the
// transaction that creates it (tenancy.WorkspaceHook).
func (s *Service) WorkspaceCreated(ctx context.Context, q db.Queryer, workspaceID string, now time.Time) error {
	for _, d := range DefaultProfiles {
		p := &profileRow{AgentProfile: d}
		p.ID, p.WorkspaceID, p.CreatedAt, p.UpdatedAt = ids.New(), workspaceID, now, now
		if err := insertProfile(ctx, q, p); err != nil {
			return err
		}
	}
	return nil
}

// Profiles lists the active workspace's agent profiles.
func (s *Service) Profiles(ctx context.Context, ws *actor.Workspace) ([]AgentProfile, error) {
	return listProfiles(ctx, s.db.R, ws.ID)
}

// GetProfile reads one profile.
func (s *Service) GetProfile(ctx context.Context, ws *actor.Workspace, id string) (*AgentProfile, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("agent profile")
	}
	p, err := getProfile(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	return &p.AgentProfile, nil
}

func (s *Service) profileConflict(err error, name string) error {
	if err != nil && s.db.Dialect.IsUniqueViolation(err) {
		return apperr.New(apperr.CodeConflict, "an agent profile named %q exists in this workspace", name)
	}
	return err
}

func (s *Service) applyAPIKey(p *profileRow, key *string) {
	if key == nil {
		return
	}
	if *key == "" {
		p.sealedAPIKey = nil
	} else {
		sealed := s.sealer.Seal(*key, apiKeyContext(p.ID))
		p.sealedAPIKey = &sealed
	}
	p.HasAPIKey = p.sealedAPIKey != nil
}

// checkModel checks the resource an llm profile names, through q: the
// workspace's openai_compatible one, and a model from the profile or it.
func (s *Service) checkModel(ctx context.Context, q db.Queryer, p *profileRow) error {
	if p.ResourceID == "" {
		return nil
	}
	def, err := s.models.ModelDefault(ctx, q, p.WorkspaceID, p.ResourceID)
	if err != nil {
		return err
	}
	if p.Model == "" && def == "" {
		return apperr.BadRequest("an llm profile needs a model: its resource names no default model")
	}
	return nil
}

// CreateProfile adds a profile.
func (s *Service) CreateProfile(ctx context.Context, ws *actor.Workspace, in ProfileInput) (*AgentProfile, error) {
	now := s.clock.Now()
	p := &profileRow{AgentProfile: AgentProfile{ID: ids.New(), WorkspaceID: ws.ID, CreatedAt: now, UpdatedAt: now}}
	if in.Name == nil || in.AgentType == nil {
		return nil, apperr.BadRequest("name and agent_type are required")
	}
	if err := in.apply(&p.AgentProfile); err != nil {
		return nil, err
	}
	if err := s.checkModel(ctx, s.db.R, p); err != nil {
		return nil, err
	}
	s.applyAPIKey(p, in.APIKey)
	if err := s.profileConflict(insertProfile(ctx, s.db.W, p), p.Name); err != nil {
		return nil, err
	}
	return &p.AgentProfile, nil
}

// UpdateProfile changes the given fields of a profile.
func (s *Service) UpdateProfile(ctx context.Context, ws *actor.Workspace, id string, in ProfileInput) (*AgentProfile, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("agent profile")
	}
	var out *AgentProfile
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		p, err := getProfile(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if err := in.apply(&p.AgentProfile); err != nil {
			return err
		}
		if err := s.checkModel(ctx, tx, p); err != nil {
			return err
		}
		s.applyAPIKey(p, in.APIKey)
		p.UpdatedAt = s.clock.Now()
		if err := s.profileConflict(updateProfile(ctx, tx, p), p.Name); err != nil {
			return err
		}
		out = &p.AgentProfile
		return nil
	})
	return out, err
}

// DeleteProfile removes a profile. Tasks keep the name they were given;
// launching one whose profile is gone fails with a message saying so.
func (s *Service) DeleteProfile(ctx context.Context, ws *actor.Workspace, id string) error {
	if !ids.Valid(id) {
		return apperr.NotFound("agent profile")
	}
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		if _, err := getProfile(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		return deleteProfile(ctx, tx, ws.ID, id)
	})
}

// ResolvedProfile is a profile with its key opened, for the executor.
type ResolvedProfile struct {
	AgentProfile
	APIKey string
}

// ProfileByName resolves a task's profile name in its workspace.
func (s *Service) ProfileByName(ctx context.Context, workspaceID, name string) (*ResolvedProfile, error) {
	p, err := profileByName(ctx, s.db.R, workspaceID, name)
	if err != nil {
		if errors.Is(err, apperr.ErrNotFound) {
			return nil, apperr.BadRequest("agent profile %q does not exist in this workspace", name)
		}
		return nil, err
	}
	r := &ResolvedProfile{AgentProfile: p.AgentProfile}
	if p.sealedAPIKey != nil {
		key, err := s.sealer.Open(*p.sealedAPIKey, apiKeyContext(p.ID))
		if err != nil {
			return nil, apperr.Wrap(apperr.CodeVault, err, "the agent profile's API key cannot be opened")
		}
		r.APIKey = key
	}
	return r, nil
}

// ProfileResource is the model resource the named profile of the
// workspace uses, read through q ("" for none): a task's job carries it as
// a concurrency key, so the resource's max_concurrent_uses holds.
func (s *Service) ProfileResource(ctx context.Context, q db.Queryer, workspaceID, name string) (string, error) {
	return profileResource(ctx, q, workspaceID, name)
}

// Exists reports whether the workspace has the project (q: a pool or a
// transaction).
func (s *Service) Exists(ctx context.Context, q db.Queryer, workspaceID, id string) (bool, error) {
	if q == nil {
		q = s.db.R
	}
	return projectExists(ctx, q, workspaceID, id)
}
