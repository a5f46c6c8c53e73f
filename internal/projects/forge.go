package projects

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"slipway/internal/forge"
	"slipway/internal/forge/forges"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Forges opens a workspace's forge resources (resources.Service.Forge):
// a 400 naming resource_id for one that is not a forge of the workspace.
type Forges interface {
	Forge(ctx context.Context, workspaceID, resourceID string) (*forge.Access, error)
}

// ForgeEvents hears a project's forge events, after the delivery that
// brought each committed (the backlog and the tasks' pull requests react).
// An event is a prompt to look, not a fact: its body is only as
// trustworthy as the webhook's secret, so a reaction reads the state it
// needs from the forge's API.
type ForgeEvents interface {
	ForgeEvent(ctx context.Context, workspaceID, projectID string, ev *forge.Event)
}

// forgeErr says what went wrong on a forge as the API's error: the
// forge's refusals and absences are the caller's to fix (422), a
// missing repository a 404.
func forgeErr(err error, what string) error {
	var ae *apperr.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case errors.Is(err, forge.ErrNotFound):
		return apperr.New(apperr.CodeNotFound, "%s: not found on the forge", what)
	case errors.Is(err, forge.ErrRateLimited):
		return apperr.New(apperr.CodeRateLimited, "%s: the forge's rate limit was hit; try again later", what)
	case errors.Is(err, forge.ErrUnauthorized), errors.Is(err, forge.ErrForbidden):
		return apperr.New(apperr.CodeUnprocessable, "%s: the forge refused the resource's token: %v", what, err)
	}
	return apperr.New(apperr.CodeUnprocessable, "%s: %v", what, err)
}

// SyncListInput names the forge resource to list.
type SyncListInput struct {
	ResourceID string `json:"resource_id" format:"uuid" doc:"A forge resource of the workspace (github, gitlab, gitea, forgejo)"`
}

// SyncRepo is a repository the forge resource can see.
type SyncRepo struct {
	forge.Repo
	ProjectID *string `json:"project_id" nullable:"true" doc:"The project already made from it (null: none)"`
}

// SyncList is what a forge resource can see.
type SyncList struct {
	Provider     string     `json:"provider" enum:"github,gitlab,gitea,forgejo"`
	Repositories []SyncRepo `json:"repositories"`
}

// SyncList lists the repositories a forge resource can see (at most
// forge.MaxRepos), with the projects already made from them.
func (s *Service) SyncList(ctx context.Context, ws *actor.Workspace, in SyncListInput) (*SyncList, error) {
	a, err := s.forge(ctx, ws, in.ResourceID)
	if err != nil {
		return nil, err
	}
	repos, err := a.Provider.ListRepos(ctx)
	if err != nil {
		return nil, forgeErr(err, "listing the repositories")
	}
	have, err := forgeProjects(ctx, s.db.R, ws.ID, a.ResourceID)
	if err != nil {
		return nil, err
	}
	out := &SyncList{Provider: a.Kind, Repositories: make([]SyncRepo, 0, len(repos))}
	for _, r := range repos {
		sr := SyncRepo{Repo: r}
		if id, ok := have[r.FullName]; ok {
			sr.ProjectID = &id
		}
		out.Repositories = append(out.Repositories, sr)
	}
	return out, nil
}

// MaxImport bounds one import.
const MaxImport = 100

// SyncImportInput names the repositories to make projects of.
type SyncImportInput struct {
	ResourceID   string   `json:"resource_id" format:"uuid"`
	Repositories []string `json:"repositories" minItems:"1" maxItems:"100" doc:"Full names (owner/name; GitLab: the path with its groups)"`
	Autodev      bool     `json:"autodev,omitempty" doc:"Open pull requests automatically in the new projects"`
}

// SyncImport answers an import: every named repository's project, made
// now or before.
type SyncImport struct {
	Projects []Project `json:"projects"`
	Created  int       `json:"created" doc:"How many of them this import made"`
}

// SyncImport makes a project of each named repository, one transaction
// each; a repository already imported (through the same resource) answers
// its project, so importing again changes nothing. A project is named
// after its repository (its full name with - for / when the short name is
// taken).
func (s *Service) SyncImport(ctx context.Context, ws *actor.Workspace, in SyncImportInput) (*SyncImport, error) {
	names := make([]string, 0, len(in.Repositories))
	seen := map[string]bool{}
	for i, raw := range in.Repositories {
		n, err := cleanRepoName(raw)
		if err != nil {
			return nil, apperr.BadRequest("repositories[%d]: %v", i, err)
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	a, err := s.forge(ctx, ws, in.ResourceID)
	if err != nil {
		return nil, err
	}
	// Read once: importRepo checks again in its transaction.
	have, err := forgeProjects(ctx, s.db.R, ws.ID, a.ResourceID)
	if err != nil {
		return nil, err
	}
	out := &SyncImport{Projects: []Project{}}
	for i, name := range names {
		if id, ok := have[name]; ok {
			p, err := s.Get(ctx, ws, id)
			if err != nil {
				return nil, err
			}
			out.Projects = append(out.Projects, *p)
			continue
		}
		r, err := a.Provider.GetRepo(ctx, name)
		if err != nil {
			return nil, forgeErr(err, fmt.Sprintf("repositories[%d] (%s)", i, name))
		}
		p, created, err := s.importRepo(ctx, ws, a, r, in.Autodev)
		if err != nil {
			return nil, err
		}
		out.Projects = append(out.Projects, *p)
		if created {
			out.Created++
		}
	}
	return out, nil
}

// importRepo makes the project of one repository in its own transaction
// (a concurrent import of the same one answers the project it made).
func (s *Service) importRepo(ctx context.Context, ws *actor.Workspace, a *forge.Access, r *forge.Repo, autodev bool) (*Project, bool, error) {
	// The forge's own clone URL: http is allowed (a Gitea on the local
	// network), credentials in it are not (git gets the resource's token).
	if u, err := url.Parse(r.CloneURL); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.User != nil || len(r.CloneURL) > 2048 {
		return nil, false, apperr.New(apperr.CodeUnprocessable, "%s: the forge gave no http(s) clone URL", r.FullName)
	}
	branch := r.DefaultBranch
	if branch == "" {
		branch = "main"
	}
	if err := validBranch(branch); err != nil {
		return nil, false, apperr.New(apperr.CodeUnprocessable, "%s: the forge's default branch: %v", r.FullName, err)
	}
	var out *Project
	created := false
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		have, err := forgeProjects(ctx, tx, ws.ID, a.ResourceID)
		if err != nil {
			return err
		}
		if id, ok := have[r.FullName]; ok {
			p, err := getProject(ctx, tx, ws.ID, id)
			if err != nil {
				return err
			}
			out = &p.Project
			return nil
		}
		name, err := s.freeName(ctx, tx, ws.ID, r.FullName)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		res, repo := a.ResourceID, r.FullName
		p := &projectRow{Project: Project{ID: ids.New(), WorkspaceID: ws.ID, Name: name, RepoURL: r.CloneURL, DefaultBranch: branch,
			Provider: a.Kind, ForgeResourceID: &res, ForgeRepo: &repo, HasCredentials: true, Autodev: autodev, CreatedAt: now, UpdatedAt: now}}
		if err := s.conflictOnName(insertProject(ctx, tx, p), name); err != nil {
			return err
		}
		out, created = &p.Project, true
		return nil
	})
	return out, created, err
}

// freeName is the short name of a repository, or its full name with -
// for / when a project has the short one.
func (s *Service) freeName(ctx context.Context, q db.Queryer, workspaceID, fullName string) (string, error) {
	for _, n := range []string{path.Base(fullName), strings.ReplaceAll(fullName, "/", "-")} {
		if len(n) > 100 {
			n = n[:100]
		}
		taken, err := nameTaken(ctx, q, workspaceID, n)
		if err != nil {
			return "", err
		}
		if !taken {
			return n, nil
		}
	}
	return "", apperr.New(apperr.CodeConflict, "projects named %q and %q exist in this workspace: rename one to import %s",
		path.Base(fullName), strings.ReplaceAll(fullName, "/", "-"), fullName)
}

// cleanRepoName checks a repository's full name: segments of letters,
// digits, ., - and _, joined by / (two or more; GitLab's groups nest).
func cleanRepoName(raw string) (string, error) {
	n := strings.TrimSpace(raw)
	if n == "" || len(n) > 400 {
		return "", fmt.Errorf("a repository is owner/name, at most 400 characters")
	}
	segs := strings.Split(n, "/")
	if len(segs) < 2 || len(segs) > 20 {
		return "", fmt.Errorf("%q is not owner/name", n)
	}
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("%q is not owner/name", n)
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
				return "", fmt.Errorf("%q holds a character a repository name cannot", n)
			}
		}
	}
	return n, nil
}

// forge opens a forge resource for a request (its id checked first).
func (s *Service) forge(ctx context.Context, ws *actor.Workspace, resourceID string) (*forge.Access, error) {
	if s.forges == nil {
		return nil, apperr.New(apperr.CodeUnprocessable, "this server reaches no forge")
	}
	if !ids.Valid(resourceID) {
		return nil, apperr.BadRequest("resource_id: no such resource in this workspace")
	}
	return s.forges.Forge(ctx, ws.ID, resourceID)
}

// projectForge opens a project's forge: the project, its forge access.
// A local project is a 409; one whose resource was deleted too.
func (s *Service) projectForge(ctx context.Context, ws *actor.Workspace, id string) (*projectRow, *forge.Access, error) {
	if !ids.Valid(id) {
		return nil, nil, apperr.NotFound("project")
	}
	p, err := getProject(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, nil, err
	}
	if p.Provider == ProviderLocal || p.ForgeRepo == nil {
		return nil, nil, apperr.New(apperr.CodeConflict, "the project is local: it has no forge")
	}
	if p.ForgeResourceID == nil {
		return nil, nil, apperr.New(apperr.CodeConflict, "the project's forge resource was deleted: import the repository again through another")
	}
	a, err := s.forge(ctx, ws, *p.ForgeResourceID)
	if err != nil {
		return nil, nil, err
	}
	return p, a, nil
}

// ProjectForge opens a project's forge for another domain (the tasks'
// pull requests, the backlog): nil for a local project.
func (s *Service) ProjectForge(ctx context.Context, workspaceID, id string) (repo string, a *forge.Access, err error) {
	p, err := getProject(ctx, s.db.R, workspaceID, id)
	if err != nil {
		return "", nil, err
	}
	if p.ForgeRepo == nil {
		return "", nil, nil
	}
	if p.ForgeResourceID == nil {
		return "", nil, apperr.New(apperr.CodeConflict, "the project's forge resource was deleted")
	}
	a, err = s.forges.Forge(ctx, workspaceID, *p.ForgeResourceID)
	return *p.ForgeRepo, a, err
}

// Issues lists the open issues of a project's repository on its forge
// (at most forge.MaxIssues, oldest first).
func (s *Service) Issues(ctx context.Context, ws *actor.Workspace, id string) ([]forge.Issue, error) {
	p, a, err := s.projectForge(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	out, err := a.Provider.ListIssues(ctx, *p.ForgeRepo)
	if err != nil {
		return nil, forgeErr(err, "listing the repository's issues")
	}
	if out == nil {
		out = []forge.Issue{}
	}
	return out, nil
}

// Automation is what Slipway installed on a project's forge.
type Automation struct {
	ID             string     `json:"id" format:"uuid"`
	Kind           string     `json:"kind" enum:"webhook"`
	Provider       string     `json:"provider"`
	ForgeHookID    string     `json:"forge_hook_id" doc:"The hook's id on the forge"`
	CreatedAt      time.Time  `json:"created_at"`
	LastDeliveryAt *time.Time `json:"last_delivery_at" nullable:"true"`
}

// AutomationSetup installs the project's webhook on its forge (pull
// requests, issues, checks, sent to /api/forge/hooks/<token> and signed
// with a secret of its own) and records it; a project that has one
// answers it (created false).
func (s *Service) AutomationSetup(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Automation, bool, error) {
	p, a, err := s.projectForge(ctx, ws, id)
	if err != nil {
		return nil, false, err
	}
	if have, err := automationsOf(ctx, s.db.R, ws.ID, p.ID); err != nil || len(have) > 0 {
		if err != nil {
			return nil, false, err
		}
		return &have[0], false, nil
	}
	if s.publicURL == "" {
		return nil, false, apperr.New(apperr.CodeConflict, "the forge cannot reach this server: set PUBLIC_URL")
	}
	token, secret := random(32), random(32)
	hook, err := a.Provider.InstallHook(ctx, *p.ForgeRepo, s.publicURL+"/api/forge/hooks/"+token, secret)
	if err != nil {
		return nil, false, forgeErr(err, "installing the webhook")
	}
	au := &Automation{ID: ids.New(), Kind: "webhook", Provider: a.Kind, ForgeHookID: hook.ID, CreatedAt: s.clock.Now()}
	sealed := s.sealer.Seal(secret, automationContext(au.ID))
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		if _, err := getProject(ctx, tx, ws.ID, p.ID); err != nil {
			return err
		}
		return insertAutomation(ctx, tx, ws.ID, p.ID, u.ID, au, hashToken(token), sealed)
	})
	if err != nil && s.db.Dialect.IsUniqueViolation(err) {
		return nil, false, apperr.New(apperr.CodeConflict, "the project's webhook was installed meanwhile")
	}
	if err != nil {
		return nil, false, err
	}
	return au, true, nil
}

// Automations lists what is installed on a project's forge.
func (s *Service) Automations(ctx context.Context, ws *actor.Workspace, id string) ([]Automation, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("project")
	}
	if _, err := getProject(ctx, s.db.R, ws.ID, id); err != nil {
		return nil, err
	}
	return automationsOf(ctx, s.db.R, ws.ID, id)
}

// DeliveryAck answers a forge's webhook delivery.
type DeliveryAck struct {
	Status string `json:"status" enum:"accepted,duplicate,ignored" doc:"duplicate: this delivery id was taken before; ignored: not about the project's repository"`
	Event  string `json:"event"`
}

// MaxDeliveryBytes bounds a delivery's body (GitHub's cap is 25 MB).
const MaxDeliveryBytes = 25 << 20

// Deliver takes a webhook delivery from a project's forge: the token finds
// the automation (unknown: 404), the forge's signature is checked with its
// secret (401), a delivery id seen before is acknowledged and does
// nothing, and the event goes to whoever listens once it is recorded.
func (s *Service) Deliver(ctx context.Context, token string, h http.Header, body []byte) (*DeliveryAck, error) {
	au, err := automationByToken(ctx, s.db.R, hashToken(token))
	if err != nil {
		return nil, err
	}
	secret, err := s.sealer.Open(au.sealedSecret, automationContext(au.ID))
	if err != nil {
		return nil, apperr.Wrap(apperr.CodeVault, err, "the webhook's secret cannot be opened")
	}
	read := forges.Reader(au.Provider)
	if read == nil {
		return nil, apperr.NotFound("webhook")
	}
	ev, err := read(h, body, secret)
	switch {
	case errors.Is(err, forge.ErrSignature):
		return nil, apperr.New(apperr.CodeUnauthorized, "the delivery's signature is missing or wrong")
	case err != nil:
		return nil, apperr.BadRequest("the delivery is not an event: %v", err)
	}
	ack := &DeliveryAck{Status: "accepted", Event: ev.Type}
	if ev.Repo != "" && !strings.EqualFold(ev.Repo, au.repo) {
		ack.Status = "ignored"
		return ack, nil
	}
	delivery := ev.Delivery
	if delivery == "" || len(delivery) > 200 {
		sum := sha256.Sum256(body)
		delivery = "sha256:" + hex.EncodeToString(sum[:])
	}
	fresh := false
	err = s.db.Tx(ctx, func(tx *db.Tx) (err error) {
		fresh, err = recordDelivery(ctx, tx, au.workspaceID, au.ID, delivery, ev.Type, s.clock.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	if !fresh {
		ack.Status = "duplicate"
		return ack, nil
	}
	if s.events != nil && ev.Type != forge.EventPing && ev.Type != forge.EventOther {
		s.events.ForgeEvent(ctx, au.workspaceID, au.projectID, ev)
	}
	return ack, nil
}

// DeliveryMemory is how long a delivery id is remembered: a replay within
// it does nothing (a forge redelivers on request, usually within days).
const DeliveryMemory = 14 * 24 * time.Hour

// PruneDeliveries forgets delivery ids older than DeliveryMemory (every
// replica, hourly).
func (s *Service) PruneDeliveries(ctx context.Context) (int, error) {
	return pruneDeliveries(ctx, s.db.W, s.clock.Now().UTC().Add(-DeliveryMemory))
}

func automationContext(id string) string { return "project_automation:" + id + ":secret" }

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
