package gitlab_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/forge"
	"slipway/internal/forge/forgetest"
	"slipway/internal/forge/gitlab"
	"slipway/internal/forge/gitlab/gitlabtest"
)

var ctx = context.Background()

func TestConformance(t *testing.T) {
	forgetest.Run(t, func(t *testing.T) forgetest.Server { return gitlabtest.New(t) }, gitlab.New, gitlab.ReadWebhook)
}

func setup(t *testing.T, opts ...gitlabtest.Option) (*gitlabtest.Server, forge.Provider) {
	t.Helper()
	s := gitlabtest.New(t, opts...)
	p, err := gitlab.New(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

func TestSubgroups(t *testing.T) {
	s, p := setup(t)
	const repo = "acme/platform/tools.api" // a sub-group, and a dot the client escapes too
	s.AddRepo(repo, "main", true)
	repos, err := p.ListRepos(ctx)
	if err != nil || len(repos) != 1 || repos[0].FullName != repo || !repos[0].Private || !strings.HasSuffix(repos[0].CloneURL, "/acme/platform/tools.api.git") {
		t.Fatalf("listed %+v %v", repos, err)
	}
	if r, err := p.GetRepo(ctx, repo); err != nil || r.FullName != repo {
		t.Fatalf("get: %+v %v", r, err)
	}
	if _, err := p.GetRepo(ctx, "acme/platform"); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("a group is no project: %v", err)
	}
	sha := s.AddBranch(repo, "feature/x")
	pr, err := p.OpenPR(ctx, repo, forge.PRInput{Title: "T", Body: "B", Head: "feature/x", Base: "main"})
	if err != nil || pr.HeadSHA != sha || !strings.Contains(pr.URL, "/acme/platform/tools.api/-/merge_requests/1") {
		t.Fatalf("opened %+v %v", pr, err)
	}
	if err := p.Comment(ctx, repo, pr.Number, "hi"); err != nil {
		t.Fatal(err)
	}
	s.SetCheck(repo, sha, "build", forge.CheckSuccess, false)
	if c, err := p.Checks(ctx, repo, sha); err != nil || c.State != forge.CheckSuccess {
		t.Fatalf("checks %+v %v", c, err)
	}
	s.AddIssue(repo, "I", "b", nil)
	if is, err := p.ListIssues(ctx, repo); err != nil || len(is) != 1 || is[0].Labels == nil {
		t.Fatalf("issues %+v %v", is, err)
	}
	if _, err := p.InstallHook(ctx, repo, "https://slipway.example/h", "s"); err != nil {
		t.Fatal(err)
	}
	// Every call named the project by its escaped path, one segment.
	for _, r := range s.Requests() {
		if strings.Contains(r, "/projects/acme") && !strings.Contains(r, "/projects/acme%2Fplatform") {
			t.Fatalf("request %s", r)
		}
	}
	// A path that is not a project's is refused before any request.
	for _, bad := range []string{"", "acme//app", "/acme/app", "acme/app/"} {
		if _, err := p.GetRepo(ctx, bad); !errors.Is(err, forge.ErrInvalid) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestDraftPrefix(t *testing.T) {
	s, p := setup(t)
	s.AddRepo("acme/app", "main", false)
	s.AddBranch("acme/app", "work")
	title := func(n int) string {
		t.Helper()
		return s.MergeRequests("acme/app")[n-1].Title
	}
	pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Fix it", Head: "work", Base: "main", Draft: true})
	if err != nil || !pr.Draft || pr.Title != "Fix it" || title(pr.Number) != "Draft: Fix it" {
		t.Fatalf("opened as a draft: %+v %v (held %q)", pr, err, title(1))
	}
	// A title change keeps the draft.
	newTitle := "Fix it well"
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Title: &newTitle}); err != nil || !pr.Draft || pr.Title != newTitle || title(1) != "Draft: Fix it well" {
		t.Fatalf("retitled: %+v %v (held %q)", pr, err, title(1))
	}
	ready, draft := false, true
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &ready}); err != nil || pr.Draft || pr.Title != newTitle || title(1) != newTitle {
		t.Fatalf("ready: %+v %v (held %q)", pr, err, title(1))
	}
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &draft}); err != nil || !pr.Draft || title(1) != "Draft: Fix it well" {
		t.Fatalf("a draft again: %+v %v (held %q)", pr, err, title(1))
	}
	// Labels are added; nothing to change is a read.
	if _, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Labels: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Labels: []string{"b", "c"}}); err != nil {
		t.Fatal(err)
	}
	if _, labels, _ := s.PR("acme/app", pr.Number); strings.Join(labels, ",") != "a,b,c" {
		t.Fatalf("labels %v", labels)
	}
	if got, err := p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{}); err != nil || got.Number != pr.Number {
		t.Fatalf("no change: %+v %v", got, err)
	}
	// A title that carries a prefix of its own is not made a draft by it.
	s.AddBranch("acme/app", "other")
	pr2, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "[Draft] Not yet", Head: "other", Base: "main"})
	if err != nil || pr2.Draft || pr2.Title != "Not yet" || title(pr2.Number) != "Not yet" {
		t.Fatalf("a prefix in the title: %+v %v (held %q)", pr2, err, title(pr2.Number))
	}
	// GitLab's other prefixes (set on GitLab) read as drafts, without
	// the prefix.
	for _, held := range []string{"[Draft] Other", "(draft) Other", "DRAFT:Other"} {
		req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/api/v4/projects/acme%%2Fapp/merge_requests/%d", s.URL, pr2.Number), strings.NewReader(`{"title":`+jsonString(held)+`}`))
		req.Header.Set("PRIVATE-TOKEN", gitlabtest.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("retitle: %v %v", resp, err)
		}
		resp.Body.Close()
		if got, err := p.GetPR(ctx, "acme/app", pr2.Number); err != nil || !got.Draft || got.Title != "Other" {
			t.Fatalf("%q: %+v %v", held, got, err)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestErrorsNeverRetried(t *testing.T) {
	s, p := setup(t)
	s.AddRepo("acme/app", "main", false)
	for _, c := range []struct {
		status  int
		limited bool
		want    error
		text    string
	}{
		{http.StatusTooManyRequests, true, forge.ErrRateLimited, "Retry later"},
		{http.StatusBadGateway, false, forge.ErrUnavailable, "502 Bad Gateway"},
		{http.StatusServiceUnavailable, false, forge.ErrUnavailable, "503"},
		{http.StatusConflict, false, forge.ErrInvalid, "409"},
		{http.StatusUnprocessableEntity, false, forge.ErrInvalid, "422"},
	} {
		before := len(s.Requests())
		s.FailNext(c.status, c.limited)
		start := time.Now()
		_, err := p.GetRepo(ctx, "acme/app")
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Fatalf("%d: %v", c.status, err)
		}
		if n := len(s.Requests()) - before; n != 1 || time.Since(start) > time.Second {
			t.Fatalf("%d: %d requests in %s (a retry, or a wait)", c.status, n, time.Since(start))
		}
	}
	// The answers carry GitLab.com's RateLimit-Limit: the client's own
	// limiter would pace calls after the first; it is off.
	start := time.Now()
	for range 60 {
		if _, err := p.GetRepo(ctx, "acme/app"); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("60 calls took %s", d)
	}
}

func TestErrorMessages(t *testing.T) {
	s, p := setup(t)
	s.AddRepo("acme/app", "main", false)
	s.AddBranch("acme/app", "work")
	if _, err := p.GetRepo(ctx, "acme/nowhere"); !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), "404 Project Not Found") {
		t.Fatalf("an unknown project: %v", err)
	}
	if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "a", Head: "work", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	_, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "b", Head: "work", Base: "main"})
	if !errors.Is(err, forge.ErrInvalid) || !strings.Contains(err.Error(), "Another open merge request already exists for this source branch: !1") {
		t.Fatalf("a second merge request from a branch: %v", err)
	}
	_, err = p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "c", Head: "nowhere", Base: "main"})
	if !errors.Is(err, forge.ErrInvalid) || !strings.Contains(err.Error(), "source_branch does not exist") {
		t.Fatalf("a missing branch: %v", err)
	}
	if _, err := p.Checks(ctx, "acme/app", strings.Repeat("a", 40)); !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), "404 Commit Not Found") {
		t.Fatalf("an unknown commit: %v", err)
	}
	// The token is refused, never echoed.
	cfg := s.Config()
	cfg.Token = "glpat-wrong-but-secret"
	bad, err := gitlab.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.GetRepo(ctx, "acme/app")
	if !errors.Is(err, forge.ErrUnauthorized) || !strings.Contains(err.Error(), "401 Unauthorized") || strings.Contains(err.Error(), cfg.Token) {
		t.Fatalf("a wrong token: %v", err)
	}
	// A forge that does not answer.
	cfg = s.Config()
	cfg.BaseURL = "http://127.0.0.1:1"
	down, _ := gitlab.New(cfg)
	if _, err := down.GetRepo(ctx, "acme/app"); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("no forge: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.GetRepo(cancelled, "acme/app"); !errors.Is(err, forge.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v", err)
	}
}

func TestNew(t *testing.T) {
	for _, base := range []string{"", "gitlab.com", "ftp://gitlab.com", "https://user:pw@gitlab.com", "https://gitlab.com?x=1"} {
		if _, err := gitlab.New(forge.Config{Kind: forge.GitLab, BaseURL: base, Token: "t"}); !errors.Is(err, forge.ErrInvalid) {
			t.Fatalf("%q: %v", base, err)
		}
	}
	if _, err := gitlab.New(forge.Config{Kind: forge.GitLab, BaseURL: "https://gitlab.com"}); !errors.Is(err, forge.ErrUnauthorized) {
		t.Fatalf("no token: %v", err)
	}
	// The caller's client is used, not changed; a base URL with /api/v4
	// (or a trailing slash) is the same instance.
	s := gitlabtest.New(t)
	s.AddRepo("acme/app", "main", false)
	hc := &http.Client{Timeout: time.Minute}
	for _, base := range []string{s.URL + "/", s.URL + "/api/v4"} {
		p, err := gitlab.New(forge.Config{Kind: forge.GitLab, BaseURL: base, Token: gitlabtest.Token, HTTP: hc})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.GetRepo(ctx, "acme/app"); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
	}
	if hc.Transport != nil {
		t.Fatal("the caller's client was changed")
	}
}

func TestChecks(t *testing.T) {
	s, p := setup(t)
	s.AddRepo("acme/app", "main", false)
	sha := s.AddBranch("acme/app", "work")
	for _, c := range []struct{ status, want string }{
		{"created", forge.CheckPending}, {"running", forge.CheckPending}, {"manual", forge.CheckPending},
		{"scheduled", forge.CheckPending}, {"waiting_for_resource", forge.CheckPending}, {"preparing", forge.CheckPending},
		{"skipped", forge.CheckSuccess}, {"success", forge.CheckSuccess}, {"failed", forge.CheckFailure}, {"canceled", forge.CheckFailure},
	} {
		s.SetCheck("acme/app", sha, "job", c.status, false)
		got, err := p.Checks(ctx, "acme/app", sha)
		if err != nil || len(got.Items) != 1 || got.Items[0].State != c.want || got.Items[0].URL == "" {
			t.Fatalf("%s: %+v %v", c.status, got, err)
		}
	}
	// At most forge.MaxChecks names are read.
	for i := range forge.MaxChecks + 50 {
		s.SetCheck("acme/app", sha, fmt.Sprintf("n%03d", i), forge.CheckSuccess, false)
	}
	if got, err := p.Checks(ctx, "acme/app", sha); err != nil || len(got.Items) > forge.MaxChecks {
		t.Fatalf("%d checks, %v", len(got.Items), err)
	}
}

func TestListsAreBounded(t *testing.T) {
	s, p := setup(t)
	for i := range forge.MaxRepos + 5 {
		s.AddRepo(fmt.Sprintf("acme/r%04d", i), "main", false)
	}
	before := len(s.Requests())
	repos, err := p.ListRepos(ctx)
	if err != nil || len(repos) != forge.MaxRepos || len(s.Requests())-before != forge.MaxRepos/forge.PageSize {
		t.Fatalf("%d repositories in %d requests, %v", len(repos), len(s.Requests())-before, err)
	}
	// Bodies are cut to forge.MaxBody on a character boundary.
	long := strings.Repeat("é", forge.MaxBody) // 2 bytes each
	s.AddIssue("acme/r0000", "Long", "x"+long, nil)
	is, err := p.ListIssues(ctx, "acme/r0000")
	if err != nil || len(is) != 1 || len(is[0].Body) != forge.MaxBody-1 || !strings.HasSuffix(is[0].Body, "é") {
		t.Fatalf("issue body of %d bytes, %v", len(is[0].Body), err)
	}
	s.AddBranch("acme/r0000", "work")
	pr, err := p.OpenPR(ctx, "acme/r0000", forge.PRInput{Title: strings.Repeat("t", 400), Body: long, Head: "work", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Comment(ctx, "acme/r0000", pr.Number, long); err != nil {
		t.Fatal(err)
	}
	mr := s.MergeRequests("acme/r0000")[0]
	if len(mr.Description) != forge.MaxBody || len(mr.Notes[0]) != forge.MaxBody || len([]rune(mr.Title)) != 255 || !mr.Draft() {
		t.Fatalf("held a body of %d bytes, a note of %d, a title of %d characters", len(mr.Description), len(mr.Notes[0]), len([]rune(mr.Title)))
	}
}

func TestWebhookInstalled(t *testing.T) {
	s, p := setup(t)
	s.AddRepo("acme/app", "main", false)
	h, err := p.InstallHook(ctx, "acme/app", "https://slipway.example/hooks/1", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	hooks := s.ProjectHooks("acme/app")
	if len(hooks) != 1 || fmt.Sprint(hooks[0].ID) != h.ID || hooks[0].Token != "s3cret" {
		t.Fatalf("%+v", hooks)
	}
	var on []string
	for e, v := range hooks[0].Events {
		if v {
			on = append(on, e)
		}
	}
	if len(on) != 3 || !hooks[0].Events["merge_requests_events"] || !hooks[0].Events["issues_events"] || !hooks[0].Events["pipeline_events"] {
		t.Fatalf("events on: %v", on)
	}
	if _, err := p.InstallHook(ctx, "acme/app", "https://slipway.example/hooks/1", ""); !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("no secret: %v", err)
	}
	if _, err := p.InstallHook(ctx, "acme/app", "not a url", "s"); !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("a bad url: %v", err)
	}
}

func TestWebhookTokenCoversNoBody(t *testing.T) {
	s := gitlabtest.New(t)
	s.AddRepo("acme/app", "main", false)
	sha := s.AddBranch("acme/app", "work")
	h, body := s.Delivery("acme/app", forgetest.DeliverySpec{Type: forge.EventPullRequest, Delivery: "d", PR: 3, SHA: sha}, "tok")
	// Another merge request's number, under the same token: GitLab signs
	// nothing, the token only says who sent it.
	other := strings.Replace(string(body), `"iid":3,`, `"iid":4,`, 1)
	if e, err := gitlab.ReadWebhook(h, []byte(other), "tok"); err != nil || e.PR.Number != 4 {
		t.Fatalf("%+v %v", e, err)
	}
	// A body that is no longer the event its header names is refused.
	for _, bad := range []string{
		strings.Replace(string(body), `"object_kind":"merge_request"`, `"object_kind":"issue"`, 1),
		strings.Replace(string(body), `"state":"opened"`, `"state":"openeb"`, 1),
		strings.Replace(string(body), sha, sha[:39]+"g", -1),
		string(body[:len(body)-1]),
		"null", "[]", "",
	} {
		if _, err := gitlab.ReadWebhook(h, []byte(bad), "tok"); !errors.Is(err, forge.ErrPayload) {
			t.Fatalf("%.60q: %v", bad, err)
		}
	}
}

func TestWebhookRead(t *testing.T) {
	s, p := setup(t)
	s.AddRepo("acme/sub/app", "main", false)
	s.AddBranch("acme/sub/app", "work")
	pr, err := p.OpenPR(ctx, "acme/sub/app", forge.PRInput{Title: "Fix", Head: "work", Base: "main", Draft: true, Labels: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	h, body := s.Delivery("acme/sub/app", forgetest.DeliverySpec{Type: forge.EventPullRequest, Delivery: "k-1", PR: pr.Number}, "tok")
	e, err := gitlab.ReadWebhook(h, body, "tok")
	if err != nil || e.Repo != "acme/sub/app" || e.Delivery != "k-1" || e.PR.Title != "Fix" || !e.PR.Draft || e.PR.Head != "work" || e.PR.Base != "main" || e.PR.HeadSHA != pr.HeadSHA || e.PR.URL != pr.URL {
		t.Fatalf("%+v (pr %+v) %v", e, prOf(e), err)
	}
	// Before Idempotency-Key (GitLab 17.4), X-Gitlab-Event-UUID.
	old := h.Clone()
	old.Del("Idempotency-Key")
	if e, err := gitlab.ReadWebhook(old, body, "tok"); err != nil || e.Delivery != h.Get("X-Gitlab-Event-UUID") {
		t.Fatalf("%+v %v", e, err)
	}
	// An empty secret never verifies, not even an empty token.
	bare := h.Clone()
	bare.Set("X-Gitlab-Token", "")
	if _, err := gitlab.ReadWebhook(bare, body, ""); !errors.Is(err, forge.ErrSignature) {
		t.Fatalf("an empty secret: %v", err)
	}
	if _, err := gitlab.ReadWebhook(h, body, "tok2"); !errors.Is(err, forge.ErrSignature) {
		t.Fatalf("a longer secret: %v", err)
	}
	// An issue, confidential, with GitLab's older time format.
	s.AddIssue("acme/sub/app", "Bug", "it breaks", []string{"bug"})
	h, body = s.Delivery("acme/sub/app", forgetest.DeliverySpec{Type: forge.EventIssue, Delivery: "k-2", Issue: 1}, "tok")
	h.Set("X-Gitlab-Event", "Confidential Issue Hook")
	e, err = gitlab.ReadWebhook(h, body, "tok")
	if err != nil || e.Type != forge.EventIssue || e.Issue.Title != "Bug" || e.Issue.Body != "it breaks" || strings.Join(e.Issue.Labels, ",") != "bug" || e.Issue.UpdatedAt.IsZero() || e.Issue.URL == "" {
		t.Fatalf("%+v (issue %+v) %v", e, e.Issue, err)
	}
	// Other events, a header that does not match the body, no event.
	for _, c := range []struct {
		event string
		want  error
	}{{"Note Hook", nil}, {"Push Hook", nil}, {"Pipeline Hook", forge.ErrPayload}, {"", forge.ErrPayload}} {
		h.Set("X-Gitlab-Event", c.event)
		e, err := gitlab.ReadWebhook(h, body, "tok")
		if c.want == nil && (err != nil || e.Type != forge.EventOther || e.Repo != "acme/sub/app") || c.want != nil && !errors.Is(err, c.want) {
			t.Fatalf("%q: %+v %v", c.event, e, err)
		}
	}
	// A body over 25 MiB is not read.
	big := make([]byte, 25<<20+1)
	big[0] = '{'
	if _, err := gitlab.ReadWebhook(h, big, "tok"); !errors.Is(err, forge.ErrPayload) {
		t.Fatalf("a big body: %v", err)
	}
}

func prOf(e *forge.Event) *forge.PR {
	if e == nil {
		return nil
	}
	return e.PR
}

func TestBranchesOption(t *testing.T) {
	heads := map[string]string{"from-git": strings.Repeat("1", 40)}
	var mu sync.Mutex
	s, p := setup(t, gitlabtest.WithBranches(func(repo, branch string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		sha, ok := heads[branch]
		return sha, ok && repo == "acme/app"
	}))
	s.AddRepo("acme/app", "main", false)
	pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "x", Head: "from-git", Base: "main"})
	if err != nil || pr.HeadSHA != heads["from-git"] {
		t.Fatalf("%+v %v", pr, err)
	}
	mu.Lock()
	heads["from-git"] = strings.Repeat("2", 40) // a push
	mu.Unlock()
	if got, err := p.GetPR(ctx, "acme/app", pr.Number); err != nil || got.HeadSHA != strings.Repeat("2", 40) {
		t.Fatalf("after a push: %+v %v", got, err)
	}
	if c, err := p.Checks(ctx, "acme/app", strings.Repeat("2", 40)); err != nil || c.State != forge.ChecksNone {
		t.Fatalf("checks: %+v %v", c, err)
	}
}

func TestFakeSpeaksGitLab(t *testing.T) {
	s := gitlabtest.New(t)
	for i := range 5 {
		s.AddRepo(fmt.Sprintf("acme/r%d", i), "main", i == 0)
	}
	get := func(path string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	// Bearer auth, and the pagination headers.
	resp := get("/api/v4/projects?membership=true&per_page=2&page=2", "Authorization", "Bearer "+gitlabtest.Token)
	h := resp.Header
	if resp.StatusCode != 200 || h.Get("X-Page") != "2" || h.Get("X-Per-Page") != "2" || h.Get("X-Next-Page") != "3" || h.Get("X-Prev-Page") != "1" ||
		h.Get("X-Total") != "5" || h.Get("X-Total-Pages") != "3" || !strings.Contains(h.Get("Link"), `page=3&per_page=2>; rel="next"`) || h.Get("RateLimit-Limit") == "" {
		t.Fatalf("%d %v", resp.StatusCode, h)
	}
	var page []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || len(page) != 2 {
		t.Fatalf("%v %v", page, err)
	}
	// Anonymous: public projects only; a wrong token: GitLab's 401.
	resp = get("/api/v4/projects")
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || len(page) != 4 {
		t.Fatalf("anonymous: %d projects, %v", len(page), err)
	}
	if resp := get("/api/v4/projects/acme%2Fr0"); resp.StatusCode != 404 {
		t.Fatalf("anonymous, a private project: %d", resp.StatusCode)
	}
	resp = get("/api/v4/projects", "PRIVATE-TOKEN", "nope")
	var msg map[string]any
	if json.NewDecoder(resp.Body).Decode(&msg); resp.StatusCode != 401 || msg["message"] != "401 Unauthorized" {
		t.Fatalf("%d %v", resp.StatusCode, msg)
	}
	// An unescaped path is another route; a project's id works too.
	if resp := get("/api/v4/projects/acme/r1", "PRIVATE-TOKEN", gitlabtest.Token); resp.StatusCode != 404 {
		t.Fatalf("unescaped: %d", resp.StatusCode)
	}
	resp = get("/api/v4/projects/2", "PRIVATE-TOKEN", gitlabtest.Token)
	var pr map[string]any
	if json.NewDecoder(resp.Body).Decode(&pr); pr["path_with_namespace"] != "acme/r1" {
		t.Fatalf("by id: %v", pr)
	}
	// A 429 as GitLab answers it.
	s.FailNext(http.StatusTooManyRequests, true)
	resp = get("/api/v4/projects/2", "PRIVATE-TOKEN", gitlabtest.Token)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
}

// FindPR asks for the project's opened merge requests from the branch.
func TestFindPRAsksBySourceBranch(t *testing.T) {
	s, p := setup(t)
	s.AddRepo("acme/app", "main", false)
	s.AddBranch("acme/app", "work")
	s.AddBranch("acme/app", "other")
	mr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Work", Head: "work", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Other", Head: "other", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	sha := s.AddBranch("acme/app", "work") // a push: the list answers the new head
	before := len(s.Requests())
	found, err := p.FindPR(ctx, "acme/app", "work")
	if err != nil || found == nil || found.Number != mr.Number || !found.Draft || found.Title != "Work" || found.HeadSHA != sha {
		t.Fatalf("found %+v %v", found, err)
	}
	if rs := s.Requests()[before:]; len(rs) != 1 || rs[0] != "GET /api/v4/projects/acme%2Fapp/merge_requests?page=1&per_page=100&source_branch=work&state=opened" {
		t.Fatalf("requests: %v", rs)
	}
	if _, err := p.FindPR(ctx, "acme/app", " "); !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("no branch: %v", err)
	}
}

// The fake lists merge requests as GitLab does: every state unless asked,
// newest first, each without what only a single one's answer holds.
func TestFakeListsMergeRequests(t *testing.T) {
	s, p := setup(t)
	s.AddRepo("acme/app", "main", false)
	for _, b := range []string{"a", "b"} {
		s.AddBranch("acme/app", b)
		if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: b, Head: b, Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.ClosePR(ctx, "acme/app", 1); err != nil {
		t.Fatal(err)
	}
	list := func(query string, want int) []map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v4/projects/acme%2Fapp/merge_requests"+query, nil)
		req.Header.Set("PRIVATE-TOKEN", gitlabtest.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); resp.StatusCode != want || want == 200 && err != nil {
			t.Fatalf("%s: %d %v", query, resp.StatusCode, err)
		}
		return out
	}
	for query, want := range map[string]string{
		"":                                   "2 1",
		"?sort=asc":                          "1 2",
		"?state=opened":                      "2",
		"?state=closed":                      "1",
		"?source_branch=a":                   "1",
		"?state=opened&source_branch=a":      "",
		"?target_branch=main&order_by=title": "2 1",
	} {
		var got []string
		for _, mr := range list(query, 200) {
			got = append(got, fmt.Sprint(mr["iid"]))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%q: %v, want %s", query, got, want)
		}
	}
	mr := list("?state=opened", 200)[0]
	if _, ok := mr["diff_refs"]; ok || mr["sha"] == nil || mr["source_project_id"] != mr["target_project_id"] || mr["web_url"] == nil {
		t.Fatalf("not MergeRequestBasic: %v", mr)
	}
	list("?state=open", 400)
}
