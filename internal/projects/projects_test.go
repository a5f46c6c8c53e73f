package projects_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/projects"
	"slipway/internal/tenancy"
)

// Secrets handed to the server in these tests; none may come back in a
// response or reach the log.
const (
	secretToken  = "ghp_TopSecretToken_9f8e7d6c5b4a"
	secretSSHKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAASECRETKEYMATERIAL\n-----END OPENSSH PRIVATE KEY-----"
	secretAPIKey = "sk-TopSecretProfileKey-0123456789"
	urlPassword  = "hunter2-in-the-url"
)

type fixture struct {
	app                    *apitest.App
	admin, owner, outsider *apitest.Client
	repo                   string // a bare repository's absolute path
}

func setup(t *testing.T, e db.Engine) *fixture {
	t.Helper()
	app := apitest.New(t, e)
	admin := app.Admin()
	bare := agenttest.BareRepo(t, nil)
	agenttest.Git(t, bare, "branch", "release/1.x", "main")
	return &fixture{app: app, admin: admin, owner: app.Approved(admin, "Olivia Owner"),
		outsider: app.Approved(admin, "Otto Outsider"), repo: bare}
}

func want(t *testing.T, r *apitest.Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
}

func createProject(t *testing.T, c *apitest.Client, body map[string]any) projects.Project {
	t.Helper()
	r := c.Do("POST", "/api/projects", body)
	want(t, r, http.StatusCreated)
	var p projects.Project
	r.JSON(t, &p)
	return p
}

func getProject(t *testing.T, c *apitest.Client, id string) projects.Project {
	t.Helper()
	r := c.Do("GET", "/api/projects/"+id, nil)
	want(t, r, http.StatusOK)
	var p projects.Project
	r.JSON(t, &p)
	return p
}

// noSecrets fails when a body carries any of the secrets.
func noSecrets(t *testing.T, what string, body []byte, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(string(body), s) {
			t.Errorf("%s carries a secret %q: %s", what, s, body)
		}
		// JSON escapes the newlines of a PEM key; look for its middle line too.
		if i := strings.Index(s, "\n"); i >= 0 {
			if mid := strings.Split(s, "\n")[1]; strings.Contains(string(body), mid) {
				t.Errorf("%s carries a secret's line %q: %s", what, mid, body)
			}
		}
	}
}

func projectCount(t *testing.T, app *apitest.App) int {
	return app.Count(t, "SELECT COUNT(*) FROM projects")
}

var projectFields = []string{"id", "workspace_id", "name", "repo_url", "default_branch", "provider", "forge_resource_id", "forge_repo", "has_credentials",
	"agent_image", "agent_profile", "autodev", "max_concurrent_runs", "archived_at", "created_at", "updated_at"}

func TestProjectCreate(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		app, owner := f.app, f.owner
		ws := owner.DefaultWorkspace()
		notGit := t.TempDir()

		var plain, withCreds projects.Project
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "minimal body takes the defaults", Client: owner, Method: "POST", Path: "/api/projects",
				Body: map[string]any{"name": "  Alpha  ", "repo_url": f.repo}, WantStatus: http.StatusCreated,
				Check: func(t *testing.T, r *apitest.Response) {
					r.JSON(t, &plain)
					if !ids.Valid(plain.ID) || plain.WorkspaceID != ws || plain.Name != "Alpha" || plain.RepoURL != f.repo ||
						plain.DefaultBranch != "main" || plain.Provider != "local" || plain.HasCredentials || plain.Autodev ||
						plain.AgentImage != "" || plain.MaxConcurrentRuns != nil || plain.ArchivedAt != nil ||
						plain.CreatedAt.IsZero() || !plain.UpdatedAt.Equal(plain.CreatedAt) {
						t.Fatalf("created = %+v", plain)
					}
					if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, projectFields) {
						t.Fatalf("fields = %v, want %v", got, projectFields)
					}
					if !strings.Contains(string(r.Body), `"archived_at":null`) || !strings.Contains(string(r.Body), `"max_concurrent_runs":null`) ||
						!strings.Contains(string(r.Body), `"forge_repo":null`) || !strings.Contains(string(r.Body), `"forge_resource_id":null`) {
						t.Fatalf("nullable fields are not null: %s", r.Body)
					}
					m := r.Map(t)
					if s, _ := m["created_at"].(string); !strings.HasSuffix(s, "Z") {
						t.Fatalf("created_at = %v, want RFC 3339 UTC with Z", m["created_at"])
					}
					// What POST answered is what GET reads back.
					if g := owner.Do("GET", "/api/projects/"+plain.ID, nil); g.Status != 200 || !bytes.Equal(g.Body, r.Body) {
						t.Fatalf("GET after create differs:\n%s\n%s", g.Body, r.Body)
					}
				}},
			{Name: "every field, with credentials", Client: owner, Method: "POST", Path: "/api/projects",
				Body: map[string]any{"name": "Bravo", "repo_url": "file://" + f.repo, "default_branch": "release/1.x", "provider": "local",
					"agent_image": " busybox:latest ", "autodev": true,
					"credentials": map[string]string{"username": "deploy-user", "token": secretToken, "ssh_private_key": secretSSHKey}},
				WantStatus: http.StatusCreated, WantNotContains: []string{"deploy-user", `"credentials":`},
				Check: func(t *testing.T, r *apitest.Response) {
					noSecrets(t, "create response", r.Body, secretToken, secretSSHKey)
					r.JSON(t, &withCreds)
					if withCreds.Name != "Bravo" || withCreds.RepoURL != "file://"+f.repo || withCreds.DefaultBranch != "release/1.x" ||
						!withCreds.HasCredentials || !withCreds.Autodev || withCreds.AgentImage != "busybox:latest" {
						t.Fatalf("created = %+v", withCreds)
					}
				}},
			// A remote this server cannot reach is taken with a branch named
			// outright: a runner elsewhere may reach it.
			{Name: "https URL", Client: owner, Method: "POST", Path: "/api/projects",
				Body:       map[string]any{"name": "Charlie", "repo_url": "https://git.example.test/team/charlie.git", "default_branch": "main"},
				WantStatus: http.StatusCreated},
			{Name: "https URL with a user name but no password", Client: owner, Method: "POST", Path: "/api/projects",
				Body:       map[string]any{"name": "Delta", "repo_url": "https://bot@git.example.test/team/delta.git", "default_branch": "trunk"},
				WantStatus: http.StatusCreated, WantContains: []string{`"default_branch":"trunk"`}},
			{Name: "ssh URL", Client: owner, Method: "POST", Path: "/api/projects",
				Body: map[string]any{"name": "Echo", "repo_url": "ssh://git@git.example.test/team/echo.git", "default_branch": "main",
					"credentials": map[string]string{}},
				WantStatus: http.StatusCreated, WantContains: []string{`"has_credentials":false`}},
		})
		before := projectCount(t, app)

		bad := func(name string, body any, fragments ...string) apitest.Scenario {
			return apitest.Scenario{Name: name, Client: owner, Method: "POST", Path: "/api/projects", Body: body,
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: fragments}
		}
		apitest.Run(t, app, []apitest.Scenario{
			bad("empty name", map[string]any{"name": "", "repo_url": f.repo}, "name"),
			bad("blank name", map[string]any{"name": "   ", "repo_url": f.repo}, "name"),
			bad("missing name", map[string]any{"repo_url": f.repo}, "name"),
			bad("name too long", map[string]any{"name": strings.Repeat("n", 101), "repo_url": f.repo}, "name"),
			bad("empty repo_url", map[string]any{"name": "X", "repo_url": ""}, "repo_url"),
			bad("relative path", map[string]any{"name": "X", "repo_url": "relative/repo"}, "repo_url"),
			bad("file URL with a relative path", map[string]any{"name": "X", "repo_url": "file://relative/repo"}, "repo_url"),
			bad("path that does not exist", map[string]any{"name": "X", "repo_url": filepath.Join(notGit, "missing")}, "repo_url"),
			bad("directory that is not a git repository", map[string]any{"name": "X", "repo_url": notGit}, "not a git repository"),
			bad("http URL", map[string]any{"name": "X", "repo_url": "http://git.example.test/team/x.git"}, "repo_url"),
			bad("scp-like git URL", map[string]any{"name": "X", "repo_url": "git@github.com:team/x.git"}, "ssh://"),
			bad("https URL without a path", map[string]any{"name": "X", "repo_url": "https://git.example.test"}, "repo_url"),
			{Name: "https URL with a password", Client: owner, Method: "POST", Path: "/api/projects",
				Body:       map[string]any{"name": "X", "repo_url": "https://bot:" + urlPassword + "@git.example.test/team/x.git"},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"password"},
				WantNotContains: []string{urlPassword}},
			{Name: "ssh URL with a password", Client: owner, Method: "POST", Path: "/api/projects",
				Body:       map[string]any{"name": "X", "repo_url": "ssh://git:" + urlPassword + "@git.example.test/team/x.git"},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantNotContains: []string{urlPassword}},
			bad("branch with ..", map[string]any{"name": "X", "repo_url": f.repo, "default_branch": "a..b"}, "default_branch"),
			bad("branch starting with -", map[string]any{"name": "X", "repo_url": f.repo, "default_branch": "-x"}, "default_branch"),
			bad("branch ending with /", map[string]any{"name": "X", "repo_url": f.repo, "default_branch": "feature/"}, "default_branch"),
			bad("branch ending with .lock", map[string]any{"name": "X", "repo_url": f.repo, "default_branch": "main.lock"}, "default_branch"),
			bad("branch with a space", map[string]any{"name": "X", "repo_url": f.repo, "default_branch": "my branch"}, "default_branch"),
			bad("branch the repository lacks", map[string]any{"name": "X", "repo_url": f.repo, "default_branch": "master"},
				`default_branch \"master\" does not exist`, `its default branch is \"main\"`),
			bad("unreachable remote and no branch", map[string]any{"name": "X", "repo_url": "https://git.example.test/team/x.git"},
				"default branch could not be read", "Could not resolve host", "give default_branch"),
			bad("a forge provider (forge projects are imported)", map[string]any{"name": "X", "repo_url": f.repo, "provider": "github"}, "provider"),
			bad("unknown field", `{"name":"X","repo_url":"`+f.repo+`","owner":"someone"}`, "owner"),
			bad("unknown credentials field", map[string]any{"name": "X", "repo_url": f.repo, "credentials": map[string]string{"password": "p"}}, "password"),
			bad("not JSON", `{"name":`),
			{Name: "name taken in the workspace", Client: owner, Method: "POST", Path: "/api/projects",
				Body: map[string]any{"name": "Alpha", "repo_url": f.repo}, WantStatus: http.StatusConflict, WantCode: "conflict"},
			{Name: "name taken, after trimming", Client: owner, Method: "POST", Path: "/api/projects",
				Body: map[string]any{"name": " Alpha\t", "repo_url": f.repo}, WantStatus: http.StatusConflict, WantCode: "conflict"},
		})
		if n := projectCount(t, app); n != before {
			t.Fatalf("refused creates made %d project(s)", n-before)
		}

		// The same name is free in another workspace of the same account and
		// in another account's workspace.
		second := owner.Do("POST", "/api/workspaces", map[string]string{"name": "Second"})
		want(t, second, http.StatusCreated)
		secondWS := second.Map(t)["id"].(string)
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "same name in another workspace of the account", Client: owner, Method: "POST", Path: "/api/projects",
				Header: []string{tenancy.WorkspaceHeader, secondWS}, Body: map[string]any{"name": "Alpha", "repo_url": f.repo},
				WantStatus: http.StatusCreated, WantContains: []string{`"workspace_id":"` + secondWS + `"`}},
			{Name: "same name in another account's workspace", Client: f.outsider, Method: "POST", Path: "/api/projects",
				Body: map[string]any{"name": "Alpha", "repo_url": f.repo}, WantStatus: http.StatusCreated,
				WantContains: []string{`"workspace_id":"` + f.outsider.DefaultWorkspace() + `"`}},
		})

		// GET one and the list: by name, without credentials.
		got := getProject(t, owner, withCreds.ID)
		if got != withCreds {
			t.Fatalf("GET = %+v, want %+v", got, withCreds)
		}
		r := owner.Do("GET", "/api/projects", nil)
		want(t, r, http.StatusOK)
		noSecrets(t, "list", r.Body, secretToken, secretSSHKey)
		var list []projects.Project
		r.JSON(t, &list)
		var names []string
		for _, p := range list {
			names = append(names, p.Name)
			if p.WorkspaceID != ws {
				t.Fatalf("list holds a project of workspace %s", p.WorkspaceID)
			}
		}
		if !slices.Equal(names, []string{"Alpha", "Bravo", "Charlie", "Delta", "Echo"}) {
			t.Fatalf("list names = %v", names)
		}
		if list[1] != withCreds {
			t.Fatalf("list row = %+v, want %+v", list[1], withCreds)
		}
		r = owner.Do("GET", "/api/projects/board", nil)
		want(t, r, http.StatusOK)
		noSecrets(t, "board", r.Body, secretToken, secretSSHKey)
		if strings.Contains(string(r.Body), "deploy-user") {
			t.Fatalf("board carries the credentials' user name: %s", r.Body)
		}
		// The other workspaces see only their own.
		if r := owner.Do("GET", "/api/projects", nil, tenancy.WorkspaceHeader, secondWS); r.Status != 200 ||
			strings.Count(string(r.Body), `"id"`) != 1 {
			t.Fatalf("second workspace's list = %d %s", r.Status, r.Body)
		}

		// Stored sealed: the database never holds the plain secrets.
		if n := app.Count(t, "SELECT COUNT(*) FROM projects WHERE credentials LIKE $1 OR credentials LIKE $2",
			"%"+secretToken+"%", "%deploy-user%"); n != 0 {
			t.Fatalf("%d project rows store credentials in the clear", n)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM projects WHERE id = $1 AND credentials IS NOT NULL", withCreds.ID); n != 1 {
			t.Fatal("credentials were not stored")
		}
		logs := app.Logs.String()
		for _, s := range []string{secretToken, "SECRETKEYMATERIAL", urlPassword} {
			if strings.Contains(logs, s) {
				t.Errorf("the server log holds the secret %q", s)
			}
		}
	})
}

// A project takes its default branch from the remote's HEAD when none is
// given (a clone on master is not bound to main), over a forge's real
// smart HTTP with credentials, and a branch the remote lacks is refused.
func TestProjectBranchFromRemote(t *testing.T) {
	bare := agenttest.BareRepo(t, nil)
	agenttest.Git(t, bare, "branch", "-m", "main", "master")
	agenttest.Git(t, bare, "symbolic-ref", "HEAD", "refs/heads/master")
	agenttest.Git(t, bare, "branch", "dev", "master")
	forge := agenttest.HTTPSRemote(t, bare, "bot", secretToken)
	creds := map[string]string{"username": "bot", "token": secretToken}
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		before := projectCount(t, f.app)
		apitest.Run(t, f.app, []apitest.Scenario{
			{Name: "wrong token", Client: f.owner, Method: "POST", Path: "/api/projects",
				Body:       map[string]any{"name": "X", "repo_url": forge, "credentials": map[string]string{"username": "bot", "token": "not-the-token"}},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"Authentication failed", "check repo_url and credentials"},
				WantNotContains: []string{"not-the-token"}},
			{Name: "a branch the forge lacks", Client: f.owner, Method: "POST", Path: "/api/projects",
				Body:       map[string]any{"name": "X", "repo_url": forge, "credentials": creds, "default_branch": "main"},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{`its default branch is \"master\"`}},
		})
		if n := projectCount(t, f.app); n != before {
			t.Fatalf("refused creates made %d project(s)", n-before)
		}
		if p := createProject(t, f.owner, map[string]any{"name": "Forge", "repo_url": forge, "credentials": creds}); p.DefaultBranch != "master" {
			t.Fatalf("default branch = %q, want the remote's HEAD master", p.DefaultBranch)
		}
		if p := createProject(t, f.owner, map[string]any{"name": "Dev", "repo_url": forge, "credentials": creds, "default_branch": "dev"}); p.DefaultBranch != "dev" {
			t.Fatalf("default branch = %q, want dev", p.DefaultBranch)
		}
		if p := createProject(t, f.owner, map[string]any{"name": "Local", "repo_url": bare}); p.DefaultBranch != "master" {
			t.Fatalf("local default branch = %q, want master", p.DefaultBranch)
		}
		// HEAD naming a branch nothing was pushed to: main when it exists,
		// the only branch when there is one, else a 400 listing some.
		unborn := agenttest.BareRepo(t, nil)
		agenttest.Git(t, unborn, "symbolic-ref", "HEAD", "refs/heads/master")
		if p := createProject(t, f.owner, map[string]any{"name": "Unborn", "repo_url": unborn}); p.DefaultBranch != "main" {
			t.Fatalf("unborn HEAD: default branch %q, want main", p.DefaultBranch)
		}
		agenttest.Git(t, unborn, "branch", "-m", "main", "trunk")
		if p := createProject(t, f.owner, map[string]any{"name": "Unborn trunk", "repo_url": unborn}); p.DefaultBranch != "trunk" {
			t.Fatalf("unborn HEAD, one branch: default branch %q, want trunk", p.DefaultBranch)
		}
		agenttest.Git(t, unborn, "branch", "dev", "trunk")
		apitest.Run(t, f.app, []apitest.Scenario{
			{Name: "unborn HEAD and two branches", Client: f.owner, Method: "POST", Path: "/api/projects", Body: map[string]any{"name": "Y", "repo_url": unborn},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"names no branch it has (it has dev, trunk)"}},
			{Name: "unborn HEAD and a missing branch", Client: f.owner, Method: "POST", Path: "/api/projects",
				Body:       map[string]any{"name": "Y", "repo_url": unborn, "default_branch": "nope"},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{`\"nope\" does not exist in the repository (it has dev, trunk)`}},
		})

		// Nothing pushed yet: any valid branch, main when none is named.
		empty := filepath.Join(t.TempDir(), "empty.git")
		agenttest.Git(t, "", "init", "-q", "--bare", "-b", "trunk", empty)
		if p := createProject(t, f.owner, map[string]any{"name": "Empty", "repo_url": empty}); p.DefaultBranch != "main" {
			t.Fatalf("empty repository's default branch = %q, want main", p.DefaultBranch)
		}
		if p := createProject(t, f.owner, map[string]any{"name": "Empty trunk", "repo_url": empty, "default_branch": "trunk"}); p.DefaultBranch != "trunk" {
			t.Fatalf("empty repository's named branch = %q, want trunk", p.DefaultBranch)
		}
	})
}

func TestProjectUpdate(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		app, owner := f.app, f.owner
		p := createProject(t, owner, map[string]any{"name": "Alpha", "repo_url": f.repo, "agent_image": "img:1",
			"credentials": map[string]string{"token": secretToken}})
		createProject(t, owner, map[string]any{"name": "Bravo", "repo_url": f.repo})

		var renamed projects.Project
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "rename only", Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID, Body: map[string]any{"name": " Alpha Two "},
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					noSecrets(t, "update response", r.Body, secretToken)
					r.JSON(t, &renamed)
					w := p
					w.Name, w.UpdatedAt = "Alpha Two", renamed.UpdatedAt
					if renamed != w {
						t.Fatalf("after rename = %+v, want %+v", renamed, w)
					}
					if renamed.UpdatedAt.Before(p.UpdatedAt) {
						t.Fatalf("updated_at went back: %v < %v", renamed.UpdatedAt, p.UpdatedAt)
					}
				}},
			{Name: "empty body changes nothing", Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID, Body: map[string]any{},
				WantStatus: http.StatusOK, WantContains: []string{`"name":"Alpha Two"`, `"has_credentials":true`, `"agent_image":"img:1"`}},
			{Name: "a branch the repository lacks", Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID,
				Body: map[string]any{"default_branch": "develop"}, WantStatus: http.StatusBadRequest, WantCode: "bad_request",
				WantContains: []string{`default_branch \"develop\" does not exist`}},
			{Name: "a branch the repository has", Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID,
				Body: map[string]any{"default_branch": "release/1.x"}, WantStatus: http.StatusOK, WantContains: []string{`"default_branch":"release/1.x"`}},
			{Name: "several fields", Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID,
				Body:       map[string]any{"default_branch": "develop", "autodev": true, "agent_image": "", "repo_url": "https://git.example.test/t/a.git"},
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var got projects.Project
					r.JSON(t, &got)
					if got.DefaultBranch != "develop" || !got.Autodev || got.AgentImage != "" || got.RepoURL != "https://git.example.test/t/a.git" ||
						got.Name != "Alpha Two" || !got.HasCredentials {
						t.Fatalf("after update = %+v", got)
					}
				}},
			{Name: "autodev false is applied, not ignored", Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID,
				Body: map[string]any{"autodev": false}, WantStatus: http.StatusOK, WantContains: []string{`"autodev":false`, `"default_branch":"develop"`}},
			{Name: "new credentials", Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID,
				Body:       map[string]any{"credentials": map[string]string{"ssh_private_key": secretSSHKey}},
				WantStatus: http.StatusOK, WantContains: []string{`"has_credentials":true`},
				Check: func(t *testing.T, r *apitest.Response) { noSecrets(t, "update response", r.Body, secretSSHKey) }},
			{Name: "{} clears the credentials", Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID,
				Body: map[string]any{"credentials": map[string]string{}}, WantStatus: http.StatusOK,
				WantContains: []string{`"has_credentials":false`, `"name":"Alpha Two"`},
				Check: func(t *testing.T, r *apitest.Response) {
					if n := app.Count(t, "SELECT COUNT(*) FROM projects WHERE id = $1 AND credentials IS NULL", p.ID); n != 1 {
						t.Fatal("the sealed credentials are still stored")
					}
				}},
		})

		current := getProject(t, owner, p.ID)
		bad := func(name string, body any, status int, code string) apitest.Scenario {
			return apitest.Scenario{Name: name, Client: owner, Method: "PUT", Path: "/api/projects/" + p.ID, Body: body,
				WantStatus: status, WantCode: code}
		}
		apitest.Run(t, app, []apitest.Scenario{
			bad("empty name", map[string]any{"name": ""}, 400, "bad_request"),
			bad("http repo_url", map[string]any{"repo_url": "http://git.example.test/t/a.git"}, 400, "bad_request"),
			bad("scp-like repo_url", map[string]any{"repo_url": "git@host:x"}, 400, "bad_request"),
			bad("password in repo_url", map[string]any{"repo_url": "https://u:" + urlPassword + "@git.example.test/t/a.git"}, 400, "bad_request"),
			bad("bad branch", map[string]any{"default_branch": "a..b"}, 400, "bad_request"),
			bad("empty branch", map[string]any{"default_branch": ""}, 400, "bad_request"),
			bad("provider is not writable", map[string]any{"provider": "local"}, 400, "bad_request"),
			bad("unknown field", `{"color":"red"}`, 400, "bad_request"),
			bad("name of another project", map[string]any{"name": "Bravo"}, 409, "conflict"),
			{Name: "unknown id", Client: owner, Method: "PUT", Path: "/api/projects/" + ids.New(), Body: map[string]any{"name": "Z"},
				WantStatus: 404, WantCode: "not_found"},
			{Name: "malformed id", Client: owner, Method: "PUT", Path: "/api/projects/not-a-uuid", Body: map[string]any{"name": "Z"},
				WantStatus: 404, WantCode: "not_found"},
		})
		if got := getProject(t, owner, p.ID); got != current {
			t.Fatalf("refused updates changed the project:\n%+v\n%+v", got, current)
		}
	})
}

func TestProjectArchiveConcurrencyDelete(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		app, owner := f.app, f.owner
		p := createProject(t, owner, map[string]any{"name": "Alpha", "repo_url": f.repo})

		var archivedAt string
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "archive", Client: owner, Method: "POST", Path: "/api/projects/" + p.ID + "/archive", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var got projects.Project
					r.JSON(t, &got)
					if got.ArchivedAt == nil || got.ArchivedAt.Before(p.CreatedAt) {
						t.Fatalf("archived_at = %v", got.ArchivedAt)
					}
					archivedAt = r.Map(t)["archived_at"].(string)
				}},
			{Name: "archive again keeps the first time", Client: owner, Method: "POST", Path: "/api/projects/" + p.ID + "/archive", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if got := r.Map(t)["archived_at"]; got != archivedAt {
						t.Fatalf("archived_at = %v, want %v", got, archivedAt)
					}
				}},
			{Name: "restore", Client: owner, Method: "POST", Path: "/api/projects/" + p.ID + "/restore", WantStatus: 200,
				WantContains: []string{`"archived_at":null`}},
			{Name: "restore again", Client: owner, Method: "POST", Path: "/api/projects/" + p.ID + "/restore", WantStatus: 200,
				WantContains: []string{`"archived_at":null`}},
			{Name: "archive unknown", Client: owner, Method: "POST", Path: "/api/projects/" + ids.New() + "/archive",
				WantStatus: 404, WantCode: "not_found"},

			{Name: "concurrency 3", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: map[string]any{"max_concurrent_runs": 3}, WantStatus: 200, WantContains: []string{`"max_concurrent_runs":3`}},
			{Name: "concurrency null is unlimited", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: `{"max_concurrent_runs":null}`, WantStatus: 200, WantContains: []string{`"max_concurrent_runs":null`}},
			{Name: "concurrency 1", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: map[string]any{"max_concurrent_runs": 1}, WantStatus: 200, WantContains: []string{`"max_concurrent_runs":1`}},
			{Name: "concurrency 0", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: map[string]any{"max_concurrent_runs": 0}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "concurrency negative", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: map[string]any{"max_concurrent_runs": -2}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "concurrency not an integer", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: `{"max_concurrent_runs":"2"}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "concurrency fraction", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: `{"max_concurrent_runs":1.5}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "concurrency missing", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: `{}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "concurrency unknown field", Client: owner, Method: "PATCH", Path: "/api/projects/" + p.ID + "/concurrency",
				Body: `{"max_concurrent_runs":2,"burst":3}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "concurrency unknown id", Client: owner, Method: "PATCH", Path: "/api/projects/" + ids.New() + "/concurrency",
				Body: map[string]any{"max_concurrent_runs": 2}, WantStatus: 404, WantCode: "not_found"},
		})
		if got := getProject(t, owner, p.ID); got.MaxConcurrentRuns == nil || *got.MaxConcurrentRuns != 1 || got.ArchivedAt != nil {
			t.Fatalf("after the refused concurrency changes: %+v", got)
		}

		// A project with a running task cannot be deleted. The dispatcher is
		// what normally moves a task to running; the test sets it directly
		// (the task stays held, so the dispatcher never claims it).
		busy := createProject(t, owner, map[string]any{"name": "Busy", "repo_url": f.repo})
		r := owner.Do("POST", "/api/tasks", map[string]any{"project_id": busy.ID, "prompt": "true", "hold": true})
		want(t, r, http.StatusCreated)
		taskID := r.Map(t)["id"].(string)
		if _, err := app.DB.W.ExecContext(context.Background(), "UPDATE tasks SET status = 'running' WHERE id = $1", taskID); err != nil {
			t.Fatal(err)
		}
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "delete while a task runs", Client: owner, Method: "DELETE", Path: "/api/projects/" + busy.ID,
				WantStatus: http.StatusConflict, WantCode: "conflict", WantContains: []string{"running"}},
		})
		if n := app.Count(t, "SELECT COUNT(*) FROM tasks WHERE project_id = $1", busy.ID); n != 1 {
			t.Fatalf("the refused delete removed tasks: %d left", n)
		}
		getProject(t, owner, busy.ID)
		// needs_input holds a slot too.
		if _, err := app.DB.W.ExecContext(context.Background(), "UPDATE tasks SET status = 'needs_input' WHERE id = $1", taskID); err != nil {
			t.Fatal(err)
		}
		want(t, owner.Do("DELETE", "/api/projects/"+busy.ID, nil), http.StatusConflict)
		// Once it is finished, the project goes with its tasks and events.
		if _, err := app.DB.W.ExecContext(context.Background(), "UPDATE tasks SET status = 'failed' WHERE id = $1", taskID); err != nil {
			t.Fatal(err)
		}

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "delete", Client: owner, Method: "DELETE", Path: "/api/projects/" + p.ID, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if string(bytes.TrimSpace(r.Body)) != `{"deleted":true}` {
						t.Fatalf("body = %s", r.Body)
					}
				}},
			{Name: "get after delete", Client: owner, Method: "GET", Path: "/api/projects/" + p.ID, WantStatus: 404, WantCode: "not_found"},
			{Name: "delete again", Client: owner, Method: "DELETE", Path: "/api/projects/" + p.ID, WantStatus: 404, WantCode: "not_found"},
			{Name: "delete a finished project with tasks", Client: owner, Method: "DELETE", Path: "/api/projects/" + busy.ID, WantStatus: 200,
				WantContains: []string{`"deleted":true`}},
			{Name: "delete malformed id", Client: owner, Method: "DELETE", Path: "/api/projects/nope", WantStatus: 404, WantCode: "not_found"},
		})
		if n := app.Count(t, "SELECT COUNT(*) FROM tasks WHERE id = $1", taskID) + app.Count(t, "SELECT COUNT(*) FROM run_events WHERE log_id = $1", taskID) +
			app.Count(t, "SELECT COUNT(*) FROM event_logs WHERE id = $1", taskID); n != 0 {
			t.Fatalf("the deleted project's task or events are left (%d rows)", n)
		}
	})
}

type projectBoard = board.Board[projects.Project]

func boardNames(b projectBoard) []string {
	var out []string
	for _, p := range b.Rows {
		out = append(out, p.Name)
	}
	return out
}

func facet(b projectBoard, name string) map[string]int {
	out := map[string]int{}
	for _, f := range b.Facets[name] {
		out[f.Value] = f.Count
	}
	return out
}

func TestProjectBoard(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		app, owner := f.app, f.owner
		// Created in this order: created_at ascending follows it.
		for _, p := range []map[string]any{
			{"name": "Delta", "repo_url": f.repo, "autodev": true},
			{"name": "Alpha", "repo_url": "https://git.example.test/team/alpha.git", "default_branch": "main"},
			{"name": "Charlie", "repo_url": "https://git.example.test/other/needle-repo.git", "autodev": true, "default_branch": "main"},
			{"name": "Bravo 100%", "repo_url": f.repo},
			{"name": "Echo", "repo_url": f.repo},
		} {
			createProject(t, owner, p)
		}
		list := map[string]string{}
		for _, p := range func() []projects.Project {
			var ps []projects.Project
			owner.Do("GET", "/api/projects", nil).JSON(t, &ps)
			return ps
		}() {
			list[p.Name] = p.ID
		}
		want(t, owner.Do("POST", "/api/projects/"+list["Echo"]+"/archive", nil), 200)
		// Touch Alpha last so updated_at orders it last.
		want(t, owner.Do("PUT", "/api/projects/"+list["Alpha"], map[string]any{"agent_image": "x"}), 200)
		// Another account's projects never show.
		createProject(t, f.outsider, map[string]any{"name": "Alpha Outsider", "repo_url": f.repo})

		board := func(t *testing.T, r *apitest.Response) projectBoard {
			t.Helper()
			if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"rows", "total", "page", "page_size", "facets"}) {
				t.Fatalf("board fields = %v", got)
			}
			var b projectBoard
			r.JSON(t, &b)
			return b
		}
		check := func(wantNames []string, total, page, pageSize int, more func(t *testing.T, b projectBoard)) func(*testing.T, *apitest.Response) {
			return func(t *testing.T, r *apitest.Response) {
				b := board(t, r)
				if got := boardNames(b); !slices.Equal(got, wantNames) || b.Total != total || b.Page != page || b.PageSize != pageSize {
					t.Fatalf("board = %v total %d page %d size %d, want %v total %d page %d size %d",
						got, b.Total, b.Page, b.PageSize, wantNames, total, page, pageSize)
				}
				if more != nil {
					more(t, b)
				}
			}
		}
		get := func(name, query string, c func(*testing.T, *apitest.Response)) apitest.Scenario {
			return apitest.Scenario{Name: name, Client: owner, Method: "GET", Path: "/api/projects/board" + query, WantStatus: 200, Check: c}
		}
		badQuery := func(name, query string) apitest.Scenario {
			return apitest.Scenario{Name: name, Client: owner, Method: "GET", Path: "/api/projects/board" + query,
				WantStatus: 400, WantCode: "bad_request"}
		}
		apitest.Run(t, app, []apitest.Scenario{
			get("default: active tab by name", "", check([]string{"Alpha", "Bravo 100%", "Charlie", "Delta"}, 4, 1, 50, func(t *testing.T, b projectBoard) {
				if s := facet(b, "summary"); len(s) != 2 || s["active"] != 4 || s["archived"] != 1 {
					t.Fatalf("summary facet = %v", b.Facets["summary"])
				}
				if p := facet(b, "provider"); len(p) != 5 || p["local"] != 4 || p["github"] != 0 || p["forgejo"] != 0 {
					t.Fatalf("provider facet = %v", b.Facets["provider"])
				}
				if a := facet(b, "autodev"); len(a) != 2 || a["true"] != 2 || a["false"] != 2 {
					t.Fatalf("autodev facet = %v", b.Facets["autodev"])
				}
				if len(b.Facets) != 3 {
					t.Fatalf("facets = %v", b.Facets)
				}
				for _, chips := range b.Facets {
					for _, c := range chips {
						if c.Label == "" {
							t.Fatalf("facet chip without a label: %+v", c)
						}
					}
				}
			})),
			get("archived tab", "?tab=archived", check([]string{"Echo"}, 1, 1, 50, func(t *testing.T, b projectBoard) {
				if s := facet(b, "summary"); s["active"] != 4 || s["archived"] != 1 {
					t.Fatalf("summary facet = %v", b.Facets["summary"])
				}
				if a := facet(b, "autodev"); a["true"] != 0 || a["false"] != 1 {
					t.Fatalf("autodev facet in the archived tab = %v", b.Facets["autodev"])
				}
			})),
			get("provider filter", "?provider=local", check([]string{"Alpha", "Bravo 100%", "Charlie", "Delta"}, 4, 1, 50, nil)),
			get("autodev on", "?autodev=true", check([]string{"Charlie", "Delta"}, 2, 1, 50, func(t *testing.T, b projectBoard) {
				// A facet counts across its own filter's values.
				if a := facet(b, "autodev"); a["true"] != 2 || a["false"] != 2 {
					t.Fatalf("autodev facet = %v", b.Facets["autodev"])
				}
			})),
			get("autodev off", "?autodev=false", check([]string{"Alpha", "Bravo 100%"}, 2, 1, 50, nil)),
			get("search by name, any case", "?q=ALP", check([]string{"Alpha"}, 1, 1, 50, func(t *testing.T, b projectBoard) {
				if s := facet(b, "summary"); s["active"] != 1 || s["archived"] != 0 {
					t.Fatalf("summary facet under search = %v", b.Facets["summary"])
				}
			})),
			get("search by repo_url", "?q=needle-REPO", check([]string{"Charlie"}, 1, 1, 50, nil)),
			get("search matching the bare repositories' path", "?q=origin.git", check([]string{"Bravo 100%", "Delta"}, 2, 1, 50, nil)),
			get("a % in the search is literal", "?q=100%25", check([]string{"Bravo 100%"}, 1, 1, 50, nil)),
			get("an _ in the search is literal", "?q=_", check(nil, 0, 1, 50, nil)),
			get("search matching nothing", "?q=zzz", check(nil, 0, 1, 50, func(t *testing.T, b projectBoard) {
				if b.Rows == nil || !strings.Contains(string(mustJSON(t, b)), `"rows":[]`) {
					t.Fatalf("rows must be an empty array")
				}
			})),
			get("sort by name desc", "?sort=name&order=desc", check([]string{"Delta", "Charlie", "Bravo 100%", "Alpha"}, 4, 1, 50, nil)),
			get("sort by created_at", "?sort=created_at", check([]string{"Delta", "Alpha", "Charlie", "Bravo 100%"}, 4, 1, 50, nil)),
			get("sort by created_at desc", "?sort=created_at&order=desc", check([]string{"Bravo 100%", "Charlie", "Alpha", "Delta"}, 4, 1, 50, nil)),
			get("sort by updated_at desc", "?sort=updated_at&order=desc", check([]string{"Alpha", "Bravo 100%", "Charlie", "Delta"}, 4, 1, 50, nil)),
			get("page 2 of 2-row pages", "?page=2&page_size=2", check([]string{"Charlie", "Delta"}, 4, 2, 2, nil)),
			get("page 2 of 3-row pages", "?page=2&page_size=3", check([]string{"Delta"}, 4, 2, 3, nil)),
			get("page past the end", "?page=9&page_size=3", check(nil, 4, 9, 3, nil)),
			get("page_size 200", "?page_size=200", check([]string{"Alpha", "Bravo 100%", "Charlie", "Delta"}, 4, 1, 200, nil)),
			badQuery("page_size 201", "?page_size=201"),
			badQuery("page_size 0", "?page_size=0"),
			badQuery("page 0", "?page=0"),
			badQuery("page not a number", "?page=two"),
			badQuery("unknown sort key", "?sort=repo_url"),
			badQuery("unknown order", "?order=sideways"),
			badQuery("unknown tab", "?tab=deleted"),
			badQuery("unknown provider", "?provider=sourcehut"),
			badQuery("autodev not a boolean", "?autodev=maybe"),
		})
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func profilesOf(t *testing.T, c *apitest.Client, header ...string) []projects.AgentProfile {
	t.Helper()
	r := c.Do("GET", "/api/agent-profiles", nil, header...)
	want(t, r, http.StatusOK)
	var ps []projects.AgentProfile
	r.JSON(t, &ps)
	return ps
}

// checkDefaultProfiles: a new workspace has the shell and coder profiles.
func checkDefaultProfiles(t *testing.T, ps []projects.AgentProfile, ws string) {
	t.Helper()
	if len(ps) != 2 {
		t.Fatalf("a new workspace has %d profiles: %+v", len(ps), ps)
	}
	coder, shell := ps[0], ps[1]
	if coder.Name != "coder" || coder.AgentType != "llm" || coder.Model == "" || !strings.HasPrefix(coder.BaseURL, "https://") ||
		coder.HasAPIKey || coder.WorkspaceID != ws || !ids.Valid(coder.ID) {
		t.Fatalf("coder profile = %+v", coder)
	}
	if shell.Name != "shell" || shell.AgentType != "shell" || shell.HasAPIKey || shell.WorkspaceID != ws || !ids.Valid(shell.ID) {
		t.Fatalf("shell profile = %+v", shell)
	}
}

var profileFields = []string{"id", "workspace_id", "name", "agent_type", "image", "model", "base_url", "has_api_key", "resource_id",
	"instructions", "command_template", "created_at", "updated_at"}

func TestAgentProfiles(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		app, owner := f.app, f.owner
		ws := owner.DefaultWorkspace()
		checkDefaultProfiles(t, profilesOf(t, owner), ws)
		r := owner.Do("POST", "/api/workspaces", map[string]string{"name": "Second"})
		want(t, r, http.StatusCreated)
		second := r.Map(t)["id"].(string)
		checkDefaultProfiles(t, profilesOf(t, owner, tenancy.WorkspaceHeader, second), second)

		var llm, cmd projects.AgentProfile
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "llm profile with a key", Client: owner, Method: "POST", Path: "/api/agent-profiles",
				Body: map[string]any{"name": " local-llm ", "agent_type": "llm", "base_url": "http://127.0.0.1:11434/v1", "model": "llama3",
					"api_key": secretAPIKey, "instructions": "Be brief.", "image": "agent:1"},
				WantStatus: http.StatusCreated,
				Check: func(t *testing.T, r *apitest.Response) {
					noSecrets(t, "create response", r.Body, secretAPIKey)
					if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, profileFields) {
						t.Fatalf("fields = %v", got)
					}
					r.JSON(t, &llm)
					if !ids.Valid(llm.ID) || llm.WorkspaceID != ws || llm.Name != "local-llm" || llm.AgentType != "llm" || !llm.HasAPIKey ||
						llm.Model != "llama3" || llm.BaseURL != "http://127.0.0.1:11434/v1" || llm.Instructions != "Be brief." || llm.Image != "agent:1" {
						t.Fatalf("created = %+v", llm)
					}
				}},
			{Name: "command profile", Client: owner, Method: "POST", Path: "/api/agent-profiles",
				Body:       map[string]any{"name": "cli", "agent_type": "command", "command_template": "vendor-agent --cwd {workdir} -p {prompt}"},
				WantStatus: http.StatusCreated, WantContains: []string{`"has_api_key":false`},
				Check: func(t *testing.T, r *apitest.Response) { r.JSON(t, &cmd) }},
			{Name: "shell profile", Client: owner, Method: "POST", Path: "/api/agent-profiles",
				Body: map[string]any{"name": "scripts", "agent_type": "shell"}, WantStatus: http.StatusCreated,
				WantContains: []string{`"agent_type":"shell"`}},
			{Name: "empty api_key stores no key", Client: owner, Method: "POST", Path: "/api/agent-profiles",
				Body:       map[string]any{"name": "keyless", "agent_type": "llm", "base_url": "https://llm.example.test/v1", "model": "m", "api_key": ""},
				WantStatus: http.StatusCreated, WantContains: []string{`"has_api_key":false`}},
		})
		before := app.Count(t, "SELECT COUNT(*) FROM agent_profiles")
		bad := func(name string, body any, fragment string) apitest.Scenario {
			return apitest.Scenario{Name: name, Client: owner, Method: "POST", Path: "/api/agent-profiles", Body: body,
				WantStatus: 400, WantCode: "bad_request", WantContains: []string{fragment}}
		}
		apitest.Run(t, app, []apitest.Scenario{
			bad("llm without base_url", map[string]any{"name": "x", "agent_type": "llm", "model": "m"}, "base_url"),
			bad("llm with an ftp base_url", map[string]any{"name": "x", "agent_type": "llm", "model": "m", "base_url": "ftp://llm.example.test"}, "base_url"),
			bad("llm with a base_url without host", map[string]any{"name": "x", "agent_type": "llm", "model": "m", "base_url": "https://"}, "base_url"),
			bad("llm with a relative base_url", map[string]any{"name": "x", "agent_type": "llm", "model": "m", "base_url": "llm.example.test/v1"}, "base_url"),
			bad("llm without model", map[string]any{"name": "x", "agent_type": "llm", "base_url": "https://llm.example.test/v1"}, "model"),
			bad("command without {prompt}", map[string]any{"name": "x", "agent_type": "command", "command_template": "vendor-agent --stdin"}, "{prompt}"),
			bad("command without a template", map[string]any{"name": "x", "agent_type": "command"}, "{prompt}"),
			bad("unknown agent_type", map[string]any{"name": "x", "agent_type": "robot"}, "agent_type"),
			bad("missing agent_type", map[string]any{"name": "x"}, "agent_type"),
			bad("missing name", map[string]any{"agent_type": "shell"}, "name"),
			bad("empty name", map[string]any{"name": " ", "agent_type": "shell"}, "name"),
			bad("unknown field", `{"name":"x","agent_type":"shell","temperature":0.2}`, "temperature"),
			{Name: "name taken", Client: owner, Method: "POST", Path: "/api/agent-profiles", Body: map[string]any{"name": "shell", "agent_type": "shell"},
				WantStatus: 409, WantCode: "conflict"},
			{Name: "name taken after trimming", Client: owner, Method: "POST", Path: "/api/agent-profiles",
				Body: map[string]any{"name": " coder ", "agent_type": "shell"}, WantStatus: 409, WantCode: "conflict"},
		})
		if n := app.Count(t, "SELECT COUNT(*) FROM agent_profiles"); n != before {
			t.Fatalf("refused creates made %d profile(s)", n-before)
		}
		// The same name is free in another workspace.
		want(t, owner.Do("POST", "/api/agent-profiles", map[string]any{"name": "scripts", "agent_type": "shell"},
			tenancy.WorkspaceHeader, second), http.StatusCreated)

		path := "/api/agent-profiles/" + llm.ID
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "get", Client: owner, Method: "GET", Path: path, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					noSecrets(t, "GET", r.Body, secretAPIKey)
					var got projects.AgentProfile
					r.JSON(t, &got)
					if got != llm {
						t.Fatalf("GET = %+v, want %+v", got, llm)
					}
				}},
			{Name: "list", Client: owner, Method: "GET", Path: "/api/agent-profiles", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					noSecrets(t, "list", r.Body, secretAPIKey)
					var ps []projects.AgentProfile
					r.JSON(t, &ps)
					var names []string
					for _, p := range ps {
						names = append(names, p.Name)
					}
					if !slices.Equal(names, []string{"cli", "coder", "keyless", "local-llm", "scripts", "shell"}) {
						t.Fatalf("names = %v", names)
					}
				}},
			{Name: "update the model only", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"model": "llama3.1"}, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var got projects.AgentProfile
					r.JSON(t, &got)
					w := llm
					w.Model, w.UpdatedAt = "llama3.1", got.UpdatedAt
					if got != w {
						t.Fatalf("after update = %+v, want %+v", got, w)
					}
				}},
			{Name: "an llm profile cannot lose its base_url", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"base_url": ""},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "switching to command needs a template", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"agent_type": "command"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "rename onto another profile", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"name": "coder"},
				WantStatus: 409, WantCode: "conflict"},
			{Name: "empty name", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"name": ""},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown field", Client: owner, Method: "PUT", Path: path, Body: `{"owner":"x"}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "the key stayed through the refused updates", Client: owner, Method: "GET", Path: path, WantStatus: 200,
				WantContains: []string{`"has_api_key":true`, `"model":"llama3.1"`, `"agent_type":"llm"`, `"name":"local-llm"`}},
			{Name: "a new key", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"api_key": "sk-another-secret-key"},
				WantStatus: 200, WantContains: []string{`"has_api_key":true`}, WantNotContains: []string{"sk-another-secret-key"}},
			{Name: "empty api_key clears it", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"api_key": ""},
				WantStatus: 200, WantContains: []string{`"has_api_key":false`, `"model":"llama3.1"`}},
			{Name: "command template update", Client: owner, Method: "PUT", Path: "/api/agent-profiles/" + cmd.ID,
				Body: map[string]any{"command_template": "other {prompt}"}, WantStatus: 200, WantContains: []string{`"command_template":"other {prompt}"`}},
			{Name: "update unknown", Client: owner, Method: "PUT", Path: "/api/agent-profiles/" + ids.New(), Body: map[string]any{"model": "x"},
				WantStatus: 404, WantCode: "not_found"},
			{Name: "delete", Client: owner, Method: "DELETE", Path: "/api/agent-profiles/" + cmd.ID, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if string(bytes.TrimSpace(r.Body)) != `{"deleted":true}` {
						t.Fatalf("body = %s", r.Body)
					}
				}},
			{Name: "get deleted", Client: owner, Method: "GET", Path: "/api/agent-profiles/" + cmd.ID, WantStatus: 404, WantCode: "not_found"},
			{Name: "delete again", Client: owner, Method: "DELETE", Path: "/api/agent-profiles/" + cmd.ID, WantStatus: 404, WantCode: "not_found"},
			{Name: "get malformed id", Client: owner, Method: "GET", Path: "/api/agent-profiles/x", WantStatus: 404, WantCode: "not_found"},
		})
		if n := app.Count(t, "SELECT COUNT(*) FROM agent_profiles WHERE api_key LIKE $1", "%sk-%"); n != 0 {
			t.Fatalf("%d profiles store the key in the clear", n)
		}
		for _, s := range []string{secretAPIKey, "sk-another-secret-key"} {
			if strings.Contains(app.Logs.String(), s) {
				t.Errorf("the server log holds the API key %q", s)
			}
		}
	})
}

func TestProjectsTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		n := 0
		project := func(t *testing.T, owner *apitest.Client) string {
			n++
			return createProject(t, owner, map[string]any{"name": "Tenancy " + string(rune('A'+n)), "repo_url": f.repo,
				"credentials": map[string]string{"token": secretToken}}).ID
		}
		profile := func(t *testing.T, owner *apitest.Client) string {
			n++
			r := owner.Do("POST", "/api/agent-profiles", map[string]any{"name": "tenancy-" + string(rune('a'+n)), "agent_type": "llm",
				"base_url": "https://llm.example.test/v1", "model": "m", "api_key": secretAPIKey})
			want(t, r, http.StatusCreated)
			return r.Map(t)["id"].(string)
		}
		apitest.CheckTenancy(t, f.owner, f.outsider, []apitest.TenancyCase{
			{Name: "GET project", Method: "GET", Path: "/api/projects/{id}", Create: project},
			{Name: "PUT project", Method: "PUT", Path: "/api/projects/{id}", Body: map[string]any{"autodev": true}, Create: project},
			{Name: "PUT project credentials", Method: "PUT", Path: "/api/projects/{id}", Body: map[string]any{"credentials": map[string]string{}}, Create: project},
			{Name: "archive project", Method: "POST", Path: "/api/projects/{id}/archive", Create: project},
			{Name: "restore project", Method: "POST", Path: "/api/projects/{id}/restore", Create: project},
			{Name: "project concurrency", Method: "PATCH", Path: "/api/projects/{id}/concurrency", Body: map[string]any{"max_concurrent_runs": 2}, Create: project},
			{Name: "DELETE project", Method: "DELETE", Path: "/api/projects/{id}", Create: project},
			{Name: "GET agent profile", Method: "GET", Path: "/api/agent-profiles/{id}", Create: profile},
			{Name: "PUT agent profile", Method: "PUT", Path: "/api/agent-profiles/{id}", Body: map[string]any{"instructions": "be brief"}, Create: profile},
			{Name: "PUT agent profile key", Method: "PUT", Path: "/api/agent-profiles/{id}", Body: map[string]any{"api_key": ""}, Create: profile},
			{Name: "DELETE agent profile", Method: "DELETE", Path: "/api/agent-profiles/{id}", Create: profile},
		})
		// Lists: the outsider sees none of the owner's rows.
		for _, path := range []string{"/api/projects", "/api/projects/board", "/api/agent-profiles"} {
			r := f.outsider.Do("GET", path, nil)
			want(t, r, 200)
			if strings.Contains(string(r.Body), "Tenancy") || strings.Contains(string(r.Body), "tenancy-") {
				t.Fatalf("%s shows the owner's rows to the outsider: %s", path, r.Body)
			}
		}
	})
}

// TestProjectsTenancyChangesNothing checks the state, not only the answer:
// an outsider's writes to the owner's project and profile are no-ops.
func TestProjectsTenancyChangesNothing(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		p := createProject(t, f.owner, map[string]any{"name": "Kept", "repo_url": f.repo, "credentials": map[string]string{"token": secretToken}})
		r := f.owner.Do("POST", "/api/agent-profiles", map[string]any{"name": "kept", "agent_type": "llm",
			"base_url": "https://llm.example.test/v1", "model": "m", "api_key": secretAPIKey})
		want(t, r, http.StatusCreated)
		var prof projects.AgentProfile
		r.JSON(t, &prof)
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{"PUT", "/api/projects/" + p.ID, map[string]any{"name": "Stolen", "credentials": map[string]string{}}},
			{"POST", "/api/projects/" + p.ID + "/archive", nil},
			{"PATCH", "/api/projects/" + p.ID + "/concurrency", map[string]any{"max_concurrent_runs": 1}},
			{"DELETE", "/api/projects/" + p.ID, nil},
			{"PUT", "/api/agent-profiles/" + prof.ID, map[string]any{"api_key": "", "model": "stolen"}},
			{"DELETE", "/api/agent-profiles/" + prof.ID, nil},
		} {
			if r := f.outsider.Do(req.method, req.path, req.body); r.Status != 404 {
				t.Fatalf("outsider %s %s = %d: %s", req.method, req.path, r.Status, r.Body)
			}
		}
		if got := getProject(t, f.owner, p.ID); got != p {
			t.Fatalf("the outsider changed the project:\n%+v\n%+v", got, p)
		}
		r = f.owner.Do("GET", "/api/agent-profiles/"+prof.ID, nil)
		want(t, r, 200)
		var got projects.AgentProfile
		r.JSON(t, &got)
		if got != prof {
			t.Fatalf("the outsider changed the profile:\n%+v\n%+v", got, prof)
		}
	})
}

func TestProjectsAccess(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := setup(t, e)
		app := f.app
		pending := app.Pending("Pat Pending")
		p := createProject(t, f.owner, map[string]any{"name": "Alpha", "repo_url": f.repo})
		outsiderWS := f.outsider.DefaultWorkspace()
		foreign := []string{tenancy.WorkspaceHeader, outsiderWS}

		var scenarios []apitest.Scenario
		for _, ep := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/projects", nil},
			{"POST", "/api/projects", map[string]any{"name": "Z", "repo_url": f.repo}},
			{"GET", "/api/projects/board", nil},
			{"GET", "/api/projects/" + p.ID, nil},
			{"PUT", "/api/projects/" + p.ID, map[string]any{"name": "Z"}},
			{"DELETE", "/api/projects/" + p.ID, nil},
			{"POST", "/api/projects/" + p.ID + "/archive", nil},
			{"PATCH", "/api/projects/" + p.ID + "/concurrency", map[string]any{"max_concurrent_runs": 1}},
			{"GET", "/api/agent-profiles", nil},
			{"POST", "/api/agent-profiles", map[string]any{"name": "z", "agent_type": "shell"}},
		} {
			scenarios = append(scenarios,
				apitest.Scenario{Name: "anonymous " + ep.method + " " + ep.path, Method: ep.method, Path: ep.path, Body: ep.body,
					WantStatus: 401, WantCode: "unauthorized"},
				apitest.Scenario{Name: "pending " + ep.method + " " + ep.path, Client: pending, Method: ep.method, Path: ep.path, Body: ep.body,
					WantStatus: 403, WantCode: "forbidden"},
				apitest.Scenario{Name: "foreign workspace " + ep.method + " " + ep.path, Client: f.owner, Method: ep.method, Path: ep.path,
					Body: ep.body, Header: foreign, WantStatus: 403, WantCode: "forbidden"},
			)
		}
		scenarios = append(scenarios,
			apitest.Scenario{Name: "unknown workspace", Client: f.owner, Method: "GET", Path: "/api/projects",
				Header: []string{tenancy.WorkspaceHeader, ids.New()}, WantStatus: 403, WantCode: "forbidden"},
			apitest.Scenario{Name: "malformed workspace id", Client: f.owner, Method: "GET", Path: "/api/projects",
				Header: []string{tenancy.WorkspaceHeader, "nope"}, WantStatus: 400, WantCode: "bad_request"},
			apitest.Scenario{Name: "without CSRF header", Client: f.owner, Method: "POST", Path: "/api/projects",
				Body: map[string]any{"name": "Z", "repo_url": f.repo}, Header: []string{"X-CSRF-Token", ""}, WantStatus: 403, WantCode: "forbidden"},
		)
		apitest.Run(t, app, scenarios)
		// A foreign workspace and an unknown one answer alike.
		a := f.owner.Do("GET", "/api/projects", nil, foreign...)
		b := f.owner.Do("GET", "/api/projects", nil, tenancy.WorkspaceHeader, ids.New())
		if !bytes.Equal(a.Body, b.Body) {
			t.Fatalf("foreign and unknown workspace differ:\n%s\n%s", a.Body, b.Body)
		}
		if got := getProject(t, f.owner, p.ID); got != p {
			t.Fatalf("refused requests changed the project: %+v", got)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM projects"); n != 1 {
			t.Fatalf("refused creates made projects: %d", n)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM agent_profiles WHERE name = 'z'"); n != 0 {
			t.Fatal("a refused create made a profile")
		}
	})
}
