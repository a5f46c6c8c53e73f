package projects_test

import (
	"net/http"
	"strings"
	"testing"

	"slipway/internal/apitest"
	fx "slipway/internal/fixture"
	"slipway/internal/forge"
	"slipway/internal/forge/forgetest"
	"slipway/internal/forge/gitea/giteatest"
	"slipway/internal/forge/github/githubtest"
	"slipway/internal/forge/gitlab/gitlabtest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type obj = map[string]any

// forgeResource makes a resource of c's workspace pointing at a local
// forge.
func forgeResource(t *testing.T, c *apitest.Client, gh forgetest.Server, name string) string {
	t.Helper()
	cfg := gh.Config()
	r := c.Do("POST", "/api/resources", obj{"name": name, "kind": cfg.Kind, "config": obj{"base_url": cfg.BaseURL}, "secret": cfg.Token})
	fx.Want(t, r, http.StatusCreated)
	return r.Map(t)["id"].(string)
}

// TestForgeProjects: a GitHub resource lists what its token can see;
// importing makes a project per repository, once (again: the same
// projects); the board counts them by provider; the repository's issues
// are listed through the project; the webhook is installed once and its
// deliveries are verified (a tampered or unsigned one 401, a replay
// acknowledged as a duplicate, an unknown token 404); another workspace
// sees none of it.
func TestForgeProjects(t *testing.T) {
	forges := []struct {
		kind string
		new  func(t *testing.T) forgetest.Server
	}{
		{"github", func(t *testing.T) forgetest.Server { return githubtest.New(t) }},
		{"gitlab", func(t *testing.T) forgetest.Server { return gitlabtest.New(t) }},
		{"gitea", func(t *testing.T) forgetest.Server { return giteatest.New(t, "gitea") }},
		{"forgejo", func(t *testing.T) forgetest.Server { return giteatest.New(t, "forgejo") }},
	}
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		for _, fg := range forges {
			t.Run(fg.kind, func(t *testing.T) { forgeProjects(t, e, fg.kind, fg.new(t)) })
		}
	})
}

func forgeProjects(t *testing.T, e db.Engine, kind string, gh forgetest.Server) {
	{
		f := fx.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true", "PUBLIC_URL", "https://slipway.example")
		owner := f.Owner
		gh.AddRepo("acme/web", "main", false)
		gh.AddRepo("acme/api", "trunk", true)
		gh.AddRepo("other/web", "main", false)
		res := forgeResource(t, owner, gh, "Forge")
		f.App.Remember(gh.Config().Token)

		r := owner.Do("POST", "/api/projects/sync_list", obj{"resource_id": res})
		fx.Want(t, r, http.StatusOK)
		var list struct {
			Provider     string
			Repositories []struct {
				FullName      string  `json:"full_name"`
				DefaultBranch string  `json:"default_branch"`
				ProjectID     *string `json:"project_id"`
			}
		}
		r.JSON(t, &list)
		if list.Provider != kind || len(list.Repositories) != 3 {
			t.Fatalf("listed %s", r.Body)
		}
		for _, repo := range list.Repositories {
			if repo.ProjectID != nil {
				t.Fatalf("a project before the import: %s", r.Body)
			}
		}

		imp := func(want int, names ...string) []map[string]any {
			t.Helper()
			r := owner.Do("POST", "/api/projects/sync_import", obj{"resource_id": res, "repositories": names})
			fx.Want(t, r, http.StatusOK)
			var out struct {
				Projects []map[string]any
				Created  int
			}
			r.JSON(t, &out)
			if out.Created != want || len(out.Projects) != len(names) {
				t.Fatalf("import %v: %s", names, r.Body)
			}
			return out.Projects
		}
		ps := imp(3, "acme/web", "acme/api", "other/web")
		if ps[0]["name"] != "web" || ps[0]["provider"] != kind || ps[0]["forge_repo"] != "acme/web" || ps[0]["forge_resource_id"] != res ||
			!strings.HasPrefix(ps[0]["repo_url"].(string), "http") || ps[0]["default_branch"] != "main" || ps[0]["has_credentials"] != true {
			t.Fatalf("the first project: %v", ps[0])
		}
		if ps[1]["default_branch"] != "trunk" || ps[2]["name"] != "other-web" {
			t.Fatalf("the second and third: %v %v", ps[1], ps[2])
		}
		again := imp(0, "acme/web")
		if again[0]["id"] != ps[0]["id"] {
			t.Fatalf("imported twice: %v %v", again[0], ps[0])
		}
		if got := f.App.Count(t, "SELECT COUNT(*) FROM projects WHERE forge_repo IS NOT NULL"); got != 3 {
			t.Fatalf("%d forge projects", got)
		}
		r = owner.Do("POST", "/api/projects/sync_list", obj{"resource_id": res})
		if !strings.Contains(string(r.Body), `"project_id":"`+ps[0]["id"].(string)+`"`) {
			t.Fatalf("the list after the import: %s", r.Body)
		}
		fx.WantError(t, owner.Do("POST", "/api/projects/sync_import", obj{"resource_id": res, "repositories": []string{"acme/nowhere"}}),
			http.StatusNotFound, "not_found", "acme/nowhere")
		for _, bad := range []string{"no-owner", "../etc/passwd", "acme/we b", "acme//web"} {
			fx.WantError(t, owner.Do("POST", "/api/projects/sync_import", obj{"resource_id": res, "repositories": []string{bad}}),
				http.StatusBadRequest, "bad_request", "repositories[0]")
		}
		// The board: provider facet and filter.
		local := f.Project(t, owner, "Local one")
		r = owner.Do("GET", "/api/projects/board?provider="+kind, nil)
		fx.Want(t, r, http.StatusOK)
		if b := string(r.Body); !strings.Contains(b, `"total":3`) || strings.Contains(b, local) ||
			!strings.Contains(b, `{"value":"`+kind+`","label":`) || !strings.Contains(b, `"count":3}`) || !strings.Contains(b, `{"value":"local","label":"Local","count":1}`) {
			t.Fatalf("the board: %s", b)
		}

		// Issues of the repository, through the project.
		gh.AddIssue("acme/web", "Login breaks", "Steps: …", []string{"bug"})
		gh.AddIssue("acme/web", "Dark mode", "", nil)
		web := ps[0]["id"].(string)
		r = owner.Do("GET", "/api/projects/"+web+"/issues", nil)
		fx.Want(t, r, http.StatusOK)
		var issues []forge.Issue
		r.JSON(t, &issues)
		if len(issues) != 2 || issues[0].Title != "Login breaks" || issues[1].Title != "Dark mode" {
			t.Fatalf("issues: %s", r.Body)
		}
		fx.WantError(t, owner.Do("GET", "/api/projects/"+local+"/issues", nil), http.StatusConflict, "conflict", "local")

		// The webhook: installed once, then its deliveries.
		r = owner.Do("POST", "/api/projects/"+web+"/automation_setup", nil)
		fx.Want(t, r, http.StatusCreated)
		au := r.Map(t)
		fx.Want(t, owner.Do("POST", "/api/projects/"+web+"/automation_setup", nil), http.StatusOK)
		hooks := gh.Hooks("acme/web")
		if len(hooks) != 1 || !strings.HasPrefix(hooks[0].URL, "https://slipway.example/api/forge/hooks/") || len(hooks[0].Secret) < 32 {
			t.Fatalf("hooks on the forge: %+v", hooks)
		}
		f.App.Remember(hooks[0].Secret, strings.TrimPrefix(hooks[0].URL, "https://slipway.example/api/forge/hooks/"))
		r = owner.Do("GET", "/api/projects/"+web+"/automations", nil)
		if !strings.Contains(string(r.Body), au["id"].(string)) || strings.Contains(string(r.Body), hooks[0].Secret) {
			t.Fatalf("automations: %s", r.Body)
		}
		path := strings.TrimPrefix(hooks[0].URL, "https://slipway.example")
		anon := f.App.Anonymous()
		deliver := func(h http.Header, body []byte) *apitest.Response {
			header := []string{"X-CSRF-Token", ""}
			for k, v := range h {
				header = append(header, k, v[0])
			}
			return anon.Do("POST", path, string(body), header...)
		}
		h, body := gh.Delivery("acme/web", forgetest.DeliverySpec{Type: forge.EventIssue, Delivery: "one", Issue: 1}, hooks[0].Secret)
		if r := deliver(h, body); r.Status != http.StatusOK || r.Map(t)["status"] != "accepted" {
			t.Fatalf("a delivery: %d %s", r.Status, r.Body)
		}
		if r := deliver(h, body); r.Status != http.StatusOK || r.Map(t)["status"] != "duplicate" {
			t.Fatalf("a replay: %d %s", r.Status, r.Body)
		}
		if kind != "gitlab" { // GitLab signs no body: its token proves the sender only
			tampered := append([]byte(nil), body...)
			tampered[len(tampered)/2] ^= 1
			fx.WantError(t, deliver(h, tampered), http.StatusUnauthorized, "unauthorized", "signature")
		}
		unsigned := h.Clone()
		for k := range unsigned {
			if lk := strings.ToLower(k); strings.Contains(lk, "signature") || lk == "x-gitlab-token" {
				unsigned.Del(k)
			}
		}
		fx.WantError(t, deliver(unsigned, body), http.StatusUnauthorized, "unauthorized", "signature")
		other, obody := gh.Delivery("acme/web", forgetest.DeliverySpec{Type: forge.EventIssue, Delivery: "two", Issue: 1}, "not-the-secret")
		fx.WantError(t, deliver(other, obody), http.StatusUnauthorized, "unauthorized")
		if r := anon.Do("POST", "/api/forge/hooks/unknown-token", string(body), "X-CSRF-Token", ""); r.Status != http.StatusNotFound {
			t.Fatalf("an unknown token: %d %s", r.Status, r.Body)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM forge_deliveries"); n != 1 {
			t.Fatalf("%d deliveries recorded", n)
		}

		// Another workspace: its own resource cannot be named by us, ours
		// not by it, and our projects read as unknown.
		stranger := f.Outsider
		fx.WantError(t, stranger.Do("POST", "/api/projects/sync_list", obj{"resource_id": res}), http.StatusBadRequest, "bad_request", "resource_id")
		fx.WantError(t, stranger.Do("GET", "/api/projects/"+web+"/issues", nil), http.StatusNotFound, "not_found")
		fx.WantError(t, stranger.Do("POST", "/api/projects/"+web+"/automation_setup", nil), http.StatusNotFound, "not_found")
		fx.WantError(t, stranger.Do("GET", "/api/projects/"+web+"/automations", nil), http.StatusNotFound, "not_found")
		// A resource that is not a forge.
		r = owner.Do("POST", "/api/resources", obj{"name": "Hook", "kind": "http", "config": obj{"base_url": "https://example.com"}})
		fx.Want(t, r, http.StatusCreated)
		fx.WantError(t, owner.Do("POST", "/api/projects/sync_list", obj{"resource_id": r.Map(t)["id"]}), http.StatusBadRequest, "bad_request", "not a forge")
	}
}
