package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"slipway/internal/forge"
	"slipway/internal/forge/forgetest"
	"slipway/internal/forge/github"
	"slipway/internal/forge/github/githubtest"
)

func TestConformance(t *testing.T) {
	forgetest.Run(t, func(t *testing.T) forgetest.Server { return githubtest.New(t) }, github.New, github.ReadWebhook)
}

func setup(t *testing.T) (*githubtest.Server, forge.Provider) {
	t.Helper()
	s := githubtest.New(t)
	s.AddRepo("acme/app", "main", false)
	p, err := github.New(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// GitHub's published example (docs: "Validating webhook deliveries").
func TestSignatureExample(t *testing.T) {
	const secret, sig = "It's a Secret to Everybody", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	body := []byte("Hello, World!")
	if got := githubtest.Sign(secret, body); got != sig {
		t.Fatalf("the fake signs %s", got)
	}
	h := http.Header{}
	h.Set("X-GitHub-Event", "ping")
	h.Set("X-Hub-Signature-256", sig)
	// Signed right, so the body is read: not JSON.
	if _, err := github.ReadWebhook(h, body, secret); !errors.Is(err, forge.ErrPayload) {
		t.Fatalf("the example: %v", err)
	}
	for name, c := range map[string]struct {
		sig, secret string
	}{
		"another secret":      {sig, "It's a Secret to Nobody"},
		"an empty secret":     {githubtest.Sign("", body), ""},
		"no prefix":           {strings.TrimPrefix(sig, "sha256="), secret},
		"the SHA-1 prefix":    {"sha1=" + strings.TrimPrefix(sig, "sha256="), secret},
		"not hex":             {"sha256=zz" + sig[9:], secret},
		"cut short":           {sig[:len(sig)-2], secret},
		"no signature at all": {"", secret},
	} {
		h.Set("X-Hub-Signature-256", c.sig)
		if _, err := github.ReadWebhook(h, body, c.secret); !errors.Is(err, forge.ErrSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// signed is a delivery of event with payload, signed with "s".
func signed(event string, payload any) (http.Header, []byte) {
	body, _ := json.Marshal(payload)
	h := http.Header{}
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	h.Set("Content-Type", "application/json")
	h.Set("X-Hub-Signature-256", githubtest.Sign("s", body))
	return h, body
}

func TestWebhookEvents(t *testing.T) {
	repo := map[string]any{"full_name": "acme/app"}
	const sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	for _, c := range []struct {
		event   string
		payload map[string]any
		typ     string
		check   func(*forge.Event) bool
	}{
		{"check_suite", map[string]any{"action": "completed", "check_suite": map[string]any{"head_sha": sha}, "repository": repo},
			forge.EventCheck, func(e *forge.Event) bool { return e.SHA == sha }},
		{"status", map[string]any{"sha": sha, "state": "success", "context": "ci", "repository": repo},
			forge.EventCheck, func(e *forge.Event) bool { return e.SHA == sha }},
		{"push", map[string]any{"ref": "refs/heads/main", "repository": repo}, forge.EventOther, func(e *forge.Event) bool { return true }},
		{"pull_request", map[string]any{"action": "reopened", "number": 5, "repository": repo, "pull_request": map[string]any{
			"number": 5, "state": "open", "draft": true, "merged": false, "title": "T", "html_url": "https://github.com/acme/app/pull/5",
			"head": map[string]any{"ref": "work", "sha": sha}, "base": map[string]any{"ref": "main"}}},
			forge.EventPullRequest, func(e *forge.Event) bool {
				return *e.PR == forge.PR{Number: 5, URL: "https://github.com/acme/app/pull/5", Title: "T", State: forge.PROpen, Draft: true, Head: "work", Base: "main", HeadSHA: sha}
			}},
		{"pull_request", map[string]any{"action": "closed", "number": 6, "repository": repo, "pull_request": map[string]any{
			"number": 6, "state": "closed", "merged": false, "merged_at": "2026-01-02T03:04:05Z"}},
			forge.EventPullRequest, func(e *forge.Event) bool { return e.PR.State == forge.PRMerged }},
		{"issues", map[string]any{"action": "labeled", "repository": repo, "issue": map[string]any{
			"number": 9, "state": "open", "title": "Bug", "body": "It breaks", "labels": []any{map[string]any{"name": "bug"}},
			"updated_at": "2026-01-02T03:04:05Z"}},
			forge.EventIssue, func(e *forge.Event) bool {
				return e.Issue.Number == 9 && e.Issue.Title == "Bug" && e.Issue.Body == "It breaks" && slices.Equal(e.Issue.Labels, []string{"bug"}) && e.Issue.UpdatedAt.Year() == 2026
			}},
	} {
		h, body := signed(c.event, c.payload)
		e, err := github.ReadWebhook(h, body, "s")
		if err != nil || e.Type != c.typ || e.Repo != "acme/app" || e.Delivery != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || !c.check(e) {
			t.Errorf("%s %v: %+v %v", c.event, c.payload["action"], e, err)
		}
	}

	// A hook made with content type form sends payload=<json>.
	payload, _ := json.Marshal(map[string]any{"zen": "Keep it logically awesome.", "repository": repo})
	form := []byte(url.Values{"payload": {string(payload)}}.Encode())
	h, _ := signed("ping", nil)
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	h.Set("X-Hub-Signature-256", githubtest.Sign("s", form))
	if e, err := github.ReadWebhook(h, form, "s"); err != nil || e.Type != forge.EventPing || e.Repo != "acme/app" {
		t.Errorf("a form delivery: %+v %v", e, err)
	}

	// Signed, yet not an event.
	for name, c := range map[string]struct {
		event string
		body  []byte
	}{
		"no event header":                  {"", []byte(`{}`)},
		"a pull request event without one": {"pull_request", []byte(`{"action":"opened"}`)},
		"a check run without a sha":        {"check_run", []byte(`{"action":"created","check_run":{}}`)},
		"a JSON string":                    {"issues", []byte(`"issues"`)},
		"over 25 MiB":                      {"ping", []byte(`{"zen":"` + strings.Repeat("a", github.MaxWebhookBody) + `"}`)},
	} {
		h := http.Header{}
		h.Set("X-GitHub-Event", c.event)
		h.Set("X-Hub-Signature-256", githubtest.Sign("s", c.body))
		if _, err := github.ReadWebhook(h, c.body, "s"); !errors.Is(err, forge.ErrPayload) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDraftThroughGraphQL(t *testing.T) {
	s, p := setup(t)
	ctx := context.Background()
	s.AddBranch("acme/app", "work")
	pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Work", Head: "work", Base: "main"})
	if err != nil || pr.Draft {
		t.Fatalf("opened: %+v %v", pr, err)
	}
	yes, no := true, false
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &yes, Labels: []string{"wip"}}); err != nil || !pr.Draft {
		t.Fatalf("to a draft: %+v %v", pr, err)
	}
	if held := s.PRs("acme/app"); len(held) != 1 || !held[0].Draft || !slices.Equal(held[0].Labels, []string{"wip"}) {
		t.Fatalf("the server holds %+v", held)
	}
	// Unchanged: no mutation.
	before := len(s.Requests())
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &yes}); err != nil || !pr.Draft {
		t.Fatalf("a draft again: %+v %v", pr, err)
	}
	if rs := s.Requests()[before:]; len(rs) != 1 || !strings.HasPrefix(rs[0], "GET /repos/acme/app/pulls/") {
		t.Fatalf("asked %v", rs)
	}
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &no}); err != nil || pr.Draft || s.PRs("acme/app")[0].Draft {
		t.Fatalf("ready: %+v %v", pr, err)
	}
	graphQL := 0
	for _, r := range s.Requests() {
		if r == "POST /graphql" {
			graphQL++
		}
	}
	if graphQL != 2 {
		t.Fatalf("%d GraphQL requests in %v", graphQL, s.Requests())
	}
	// A closed pull request cannot change: GraphQL's error, read.
	if _, err := p.ClosePR(ctx, "acme/app", pr.Number); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &yes}); !errors.Is(err, forge.ErrInvalid) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a closed one: %v", err)
	}
}

func TestErrorsCarryGitHubsMessage(t *testing.T) {
	s, p := setup(t)
	ctx := context.Background()
	s.AddBranch("acme/app", "work")
	if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "One", Head: "work", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	_, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Two", Head: "work", Base: "main"})
	if !errors.Is(err, forge.ErrInvalid) || !strings.Contains(err.Error(), "A pull request already exists for acme:work.") {
		t.Fatalf("a second pull request: %v", err)
	}
	cfg := s.Config()
	cfg.Token = "ghp_wrongwrongwrong"
	bad, _ := github.New(cfg)
	_, err = bad.GetRepo(ctx, "acme/app")
	if !errors.Is(err, forge.ErrUnauthorized) || !strings.Contains(err.Error(), "Bad credentials") || strings.Contains(err.Error(), cfg.Token) {
		t.Fatalf("a wrong token: %v", err)
	}
	s.FailNext(http.StatusForbidden, true)
	if _, err := p.GetRepo(ctx, "acme/app"); !errors.Is(err, forge.ErrRateLimited) || !strings.Contains(err.Error(), "API rate limit exceeded") {
		t.Fatalf("rate limited: %v", err)
	}
	// No retry: one request per call, even when GitHub fails.
	before := len(s.Requests())
	s.FailNext(http.StatusBadGateway, false)
	if _, err := p.GetRepo(ctx, "acme/app"); !errors.Is(err, forge.ErrUnavailable) || len(s.Requests()) != before+1 {
		t.Fatalf("a 502: %v after %d requests", err, len(s.Requests())-before)
	}
	// A 422 that GitHub might answer anywhere.
	s.FailNext(http.StatusUnprocessableEntity, false)
	if _, err := p.GetRepo(ctx, "acme/app"); !errors.Is(err, forge.ErrInvalid) || !strings.Contains(err.Error(), "Validation Failed") {
		t.Fatalf("a 422: %v", err)
	}
	// A transport error.
	cfg = s.Config()
	cfg.BaseURL = "http://127.0.0.1:1"
	down, _ := github.New(cfg)
	if _, err := down.ListRepos(ctx); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("nothing listening: %v", err)
	}
}

func TestRefusedBeforeAsking(t *testing.T) {
	s, p := setup(t)
	ctx := context.Background()
	for _, name := range []string{"app", "acme/app/pulls", "../acme", "acme/..", "acme/", "/app", "acme/a b", "acme/app?x=1", "acme/app#1"} {
		if _, err := p.GetRepo(ctx, name); !errors.Is(err, forge.ErrInvalid) {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, err := p.Checks(ctx, "acme/app", "main/../../x"); !errors.Is(err, forge.ErrInvalid) {
		t.Errorf("a sha: %v", err)
	}
	if _, err := p.GetPR(ctx, "acme/app", 0); !errors.Is(err, forge.ErrInvalid) {
		t.Errorf("number 0: %v", err)
	}
	if rs := s.Requests(); len(rs) != 0 {
		t.Fatalf("asked %v", rs)
	}
	if _, err := github.New(forge.Config{BaseURL: "ftp://example.com"}); !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("an ftp root: %v", err)
	}
}

func TestBodiesCut(t *testing.T) {
	s, p := setup(t)
	ctx := context.Background()
	long := strings.Repeat("é", forge.MaxBody) // 2 bytes each
	s.AddIssue("acme/app", "Long", long, nil)
	is, err := p.ListIssues(ctx, "acme/app")
	if err != nil || len(is) != 1 {
		t.Fatalf("%d issues, %v", len(is), err)
	}
	if b := is[0].Body; len(b) != forge.MaxBody || !utf8.ValidString(b) {
		t.Fatalf("a body of %d bytes, valid %v", len(b), utf8.ValidString(b))
	}
	if err := p.Comment(ctx, "acme/app", 1, "x"+long); err != nil {
		t.Fatal(err)
	}
	if cs := s.Comments("acme/app", 1); len(cs) != 1 || len(cs[0]) != forge.MaxBody-1 || !utf8.ValidString(cs[0]) {
		t.Fatalf("a comment of %d bytes", len(cs[0]))
	}
}

func TestListsCapped(t *testing.T) {
	s, p := setup(t)
	for i := 0; i < forge.MaxRepos+5; i++ {
		s.AddRepo(fmt.Sprintf("acme/r%04d", i), "main", false)
	}
	repos, err := p.ListRepos(context.Background())
	if err != nil || len(repos) != forge.MaxRepos {
		t.Fatalf("%d repositories, %v", len(repos), err)
	}
	if rs := s.Requests(); len(rs) != forge.MaxRepos/forge.PageSize || rs[0] != "GET /user/repos?page=1&per_page=100&sort=full_name" && rs[0] != "GET /user/repos?per_page=100&sort=full_name" {
		t.Fatalf("%d requests: %v", len(rs), rs[:2])
	}
}

func TestChecksKeepLatest(t *testing.T) {
	s, p := setup(t)
	sha := s.AddBranch("acme/app", "work")
	s.SetCheck("acme/app", sha, "build", forge.CheckFailure, true)
	s.SetCheck("acme/app", sha, "build", forge.CheckSuccess, true) // re-run
	s.SetCheck("acme/app", sha, "ci/lint", forge.CheckPending, false)
	s.SetCheck("acme/app", sha, "ci/lint", forge.CheckSuccess, false)
	s.SetCheck("acme/app", "0000000000000000000000000000000000000000", "other", forge.CheckFailure, false)
	c, err := p.Checks(context.Background(), "acme/app", sha)
	if err != nil || c.State != forge.CheckSuccess || len(c.Items) != 2 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, i := range c.Items {
		if i.URL == "" {
			t.Fatalf("no address: %+v", i)
		}
	}
}

func TestBranchesFromOutside(t *testing.T) {
	s, p := setup(t)
	s.Branches = func(repo, branch string) (string, bool) {
		if repo == "acme/app" && branch == "from-git" {
			return "1111111111111111111111111111111111111111", true
		}
		return "", false
	}
	pr, err := p.OpenPR(context.Background(), "acme/app", forge.PRInput{Title: "From git", Head: "acme:from-git", Base: "main"})
	if err != nil || pr.HeadSHA != "1111111111111111111111111111111111111111" || pr.Head != "from-git" {
		t.Fatalf("%+v %v", pr, err)
	}
}

func TestCustomHTTPClient(t *testing.T) {
	s, _ := setup(t)
	var n atomic.Int32
	cfg := s.Config()
	cfg.HTTP = &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		n.Add(1)
		if got := r.Header.Get("Authorization"); got != "Bearer "+s.Token() {
			return nil, fmt.Errorf("authorization %q", got)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	p, _ := github.New(cfg)
	if _, err := p.GetRepo(context.Background(), "acme/app"); err != nil || n.Load() != 1 {
		t.Fatalf("%v, %d requests", err, n.Load())
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The fake's own GitHub shapes: pagination links and error bodies.
func TestFakeSpeaksGitHub(t *testing.T) {
	s := githubtest.New(t)
	for i := 0; i < 5; i++ {
		s.AddRepo(fmt.Sprintf("acme/r%d", i), "main", false)
	}
	get := func(path, token string) (*http.Response, map[string]any, []any) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "token "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var obj map[string]any
		var list []any
		if json.Unmarshal(data, &obj) != nil {
			json.Unmarshal(data, &list)
		}
		return resp, obj, list
	}
	resp, _, list := get("/user/repos?per_page=2&page=2", s.Token())
	link := resp.Header.Get("Link")
	for _, want := range []string{`page=1&per_page=2>; rel="prev"`, `page=3&per_page=2>; rel="next"`, `page=3&per_page=2>; rel="last"`, `page=1&per_page=2>; rel="first"`} {
		if !strings.Contains(link, want) {
			t.Errorf("Link %s lacks %s", link, want)
		}
	}
	if len(list) != 2 || list[0].(map[string]any)["full_name"] != "acme/r2" {
		t.Fatalf("page 2: %v", list)
	}
	if resp, obj, _ := get("/user/repos", "nope"); resp.StatusCode != 401 || obj["message"] != "Bad credentials" || obj["documentation_url"] == nil {
		t.Fatalf("401: %v", obj)
	}
	if resp, obj, _ := get("/repos/acme/none", s.Token()); resp.StatusCode != 404 || obj["message"] != "Not Found" {
		t.Fatalf("404: %v", obj)
	}
	req, _ := http.NewRequest("DELETE", s.URL()+"/repos/acme/r1", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("an operation the fake does not have: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s.FailNext(http.StatusTooManyRequests, true)
	if resp, obj, _ := get("/repos/acme/r1", s.Token()); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(obj["message"].(string), "secondary rate limit") {
		t.Fatalf("429: %v", obj)
	}
	s.AddIssue("acme/r1", "An issue", "", nil)
	if _, _, list := get("/repos/acme/r1/issues", s.Token()); len(list) != 1 || list[0].(map[string]any)["body"] != nil || list[0].(map[string]any)["pull_request"] != nil {
		t.Fatalf("issues: %v", list)
	}
}

// The fake holds up to parallel providers (run with -race).
func TestFakeConcurrent(t *testing.T) {
	s, p := setup(t)
	ctx := context.Background()
	done := make(chan error)
	for i := 0; i < 8; i++ {
		go func() {
			branch := fmt.Sprintf("work-%d", i)
			s.AddBranch("acme/app", branch)
			pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: branch, Head: branch, Base: "main", Labels: []string{"agent"}})
			if err == nil {
				err = p.Comment(ctx, "acme/app", pr.Number, "hello")
			}
			if err == nil {
				_, err = p.ListIssues(ctx, "acme/app")
			}
			done <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if prs := s.PRs("acme/app"); len(prs) != 8 {
		t.Fatalf("%d pull requests", len(prs))
	}
}

// FindPR asks GitHub's list by head as "owner:branch" (a bare branch is
// ignored by GitHub), and refuses what is not a branch before asking.
func TestFindPRAsksByHead(t *testing.T) {
	s, p := setup(t)
	ctx := context.Background()
	s.AddBranch("acme/app", "work")
	s.AddBranch("acme/app", "other")
	pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Work", Head: "work", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Other", Head: "other", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	before := len(s.Requests())
	found, err := p.FindPR(ctx, "acme/app", "work")
	if err != nil || found == nil || found.Number != pr.Number || found.Head != "work" || found.Title != "Work" {
		t.Fatalf("found %+v %v", found, err)
	}
	if rs := s.Requests()[before:]; len(rs) != 1 || rs[0] != "GET /repos/acme/app/pulls?head=acme%3Awork&per_page=100&state=open" {
		t.Fatalf("requests: %v", rs)
	}
	for _, b := range []string{"", " ", "acme:work", "a b"} {
		if _, err := p.FindPR(ctx, "acme/app", b); !errors.Is(err, forge.ErrInvalid) {
			t.Errorf("branch %q: %v", b, err)
		}
	}
	if rs := s.Requests()[before:]; len(rs) != 1 {
		t.Fatalf("asked GitHub for what is not a branch: %v", rs)
	}
}

// The fake lists pull requests as GitHub does: a head filter without its
// owner is ignored, another owner's matches none, and each is
// pull-request-simple.
func TestFakeListsPulls(t *testing.T) {
	s, p := setup(t)
	ctx := context.Background()
	for _, b := range []string{"a", "b"} {
		s.AddBranch("acme/app", b)
		if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: b, Head: b, Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.ClosePR(ctx, "acme/app", 1); err != nil {
		t.Fatal(err)
	}
	list := func(query string, want int) []any {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL()+"/repos/acme/app/pulls"+query, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []any
		if err := json.NewDecoder(resp.Body).Decode(&out); resp.StatusCode != want || want == 200 && err != nil {
			t.Fatalf("%s: %d %v", query, resp.StatusCode, err)
		}
		return out
	}
	numbers := func(l []any) []float64 {
		var ns []float64
		for _, v := range l {
			ns = append(ns, v.(map[string]any)["number"].(float64))
		}
		return ns
	}
	for query, want := range map[string][]float64{
		"":                          {2},
		"?state=all":                {2, 1},
		"?state=all&direction=asc":  {1, 2},
		"?state=closed":             {1},
		"?head=b":                   {2}, // ignored
		"?state=all&head=acme:a":    {1},
		"?state=all&head=ACME:b":    {2},
		"?state=all&head=other:b":   nil,
		"?state=all&base=elsewhere": nil,
	} {
		if got := numbers(list(query, 200)); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", query, got, want)
		}
	}
	pr := list("", 200)[0].(map[string]any)
	if _, ok := pr["merged"]; ok || pr["draft"] != false || pr["merged_at"] != nil || pr["head"].(map[string]any)["ref"] != "b" {
		t.Fatalf("not pull-request-simple: %v", pr)
	}
	list("?state=merged", 422)
}
