package gitea_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"slipway/internal/forge"
	"slipway/internal/forge/forgetest"
	"slipway/internal/forge/gitea"
	"slipway/internal/forge/gitea/giteatest"
)

func TestConformance(t *testing.T) {
	for _, kind := range []string{forge.Gitea, forge.Forgejo} {
		t.Run(kind, func(t *testing.T) {
			forgetest.Run(t, func(t *testing.T) forgetest.Server { return giteatest.New(t, kind) }, gitea.New, gitea.ReadWebhook)
		})
	}
}

// setup is a server with acme/app and a provider signed in to it.
func setup(t *testing.T, kind string) (*giteatest.Server, forge.Provider) {
	t.Helper()
	s := giteatest.New(t, kind)
	s.AddRepo("acme/app", "main", false)
	p, err := gitea.New(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

func TestNew(t *testing.T) {
	s := giteatest.New(t, forge.Forgejo)
	p, err := gitea.New(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind() != forge.Forgejo {
		t.Fatalf("kind %q", p.Kind())
	}
	if r := s.Requests(); len(r) != 0 {
		t.Fatalf("New asked the forge %v", r)
	}
	// The API root is taken for the instance's root.
	cfg := s.Config()
	cfg.BaseURL += "/api/v1/"
	s.AddRepo("acme/app", "main", true)
	if p, err = gitea.New(cfg); err == nil {
		_, err = p.GetRepo(context.Background(), "acme/app")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []forge.Config{{Kind: forge.GitHub, BaseURL: s.URL()}, {Kind: forge.Gitea, BaseURL: "gitea.example.com"},
		{Kind: forge.Gitea, BaseURL: "ftp://gitea.example.com"}, {Kind: forge.Gitea, BaseURL: "https://gitea.example.com/?x=1"}} {
		if _, err := gitea.New(cfg); !errors.Is(err, forge.ErrInvalid) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// Labels are looked up across the pages of the label list (Gitea sends
// X-Total-Count for it, no Link), reused without case, created once.
func TestLabels(t *testing.T) {
	ctx := context.Background()
	s, p := setup(t, forge.Gitea)
	var many []string
	for i := range 120 {
		many = append(many, fmt.Sprintf("area-%03d", i))
	}
	s.AddIssue("acme/app", "Labelled", "", append(many, "Bug"))
	s.AddBranch("acme/app", "one")
	s.AddBranch("acme/app", "two")
	pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "One", Head: "one", Base: "main", Labels: []string{"slipway", "bug", "area-119", "slipway", " "}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Two", Head: "two", Base: "main", Labels: []string{"slipway"}}); err != nil {
		t.Fatal(err)
	}
	if ls := s.Labels("acme/app"); len(ls) != len(many)+2 || ls[len(ls)-1] != "slipway" {
		t.Fatalf("the repository's labels: %d, the last %q", len(ls), ls[len(ls)-1])
	}
	if _, labels, _ := s.PR("acme/app", pr.Number); strings.Join(labels, ",") != "slipway,Bug,area-119" {
		t.Fatalf("the pull request's labels: %v", labels)
	}
	// Labels on update are added, not put in place of the others.
	if _, err := p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Labels: []string{"agent", "slipway"}}); err != nil {
		t.Fatal(err)
	}
	if _, labels, _ := s.PR("acme/app", pr.Number); strings.Join(labels, ",") != "slipway,Bug,area-119,agent" {
		t.Fatalf("after the update: %v", labels)
	}
	if n := strings.Count(strings.Join(s.Labels("acme/app"), ","), "slipway"); n != 1 {
		t.Fatalf("slipway made %d times", n)
	}
}

// A draft is a title with the WIP prefix: written on open and update,
// read (WIP:, [WIP], Draft:, in any case) into Draft and a bare title.
func TestDraftPrefix(t *testing.T) {
	ctx := context.Background()
	s, p := setup(t, forge.Forgejo)
	s.AddBranch("acme/app", "work")
	pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Fix it", Head: "work", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	held := func() giteatest.Pull {
		t.Helper()
		h, ok := s.Pull("acme/app", pr.Number)
		if !ok {
			t.Fatal("no pull request")
		}
		return h
	}
	if h := held(); h.Title != "WIP: Fix it" || !h.Draft || !pr.Draft || pr.Title != "Fix it" {
		t.Fatalf("opened %+v, held %+v", pr, h)
	}
	// A new title keeps the draft a draft; ready drops the prefix.
	title := "Fix it well"
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Title: &title}); err != nil || !pr.Draft || pr.Title != title || held().Title != "WIP: Fix it well" {
		t.Fatalf("retitled %+v %v (held %q)", pr, err, held().Title)
	}
	ready, draft := false, true
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &ready}); err != nil || pr.Draft || held().Title != title {
		t.Fatalf("ready %+v %v (held %q)", pr, err, held().Title)
	}
	if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &draft}); err != nil || !pr.Draft || held().Title != "WIP: "+title {
		t.Fatalf("a draft again %+v %v (held %q)", pr, err, held().Title)
	}
	// Unchanged: no edit is sent.
	before := len(s.Requests())
	if _, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Draft: &draft}); err != nil || len(s.Requests()) != before+1 {
		t.Fatalf("a no-op update: %v, %v", err, s.Requests()[before:])
	}
	for i, title := range []string{"[WIP] Other", "draft: Other", "wip:Other"} {
		s.AddBranch("acme/app", fmt.Sprint("b", i))
		pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: title, Head: fmt.Sprint("b", i), Base: "main"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.GetPR(ctx, "acme/app", pr.Number); err != nil || !got.Draft || got.Title != "Other" {
			t.Fatalf("%q read %+v %v", title, got, err)
		}
		// Another edit leaves the prefix as it is.
		body := "b"
		if _, err := p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Body: &body, Draft: &draft}); err != nil {
			t.Fatal(err)
		}
		if h, _ := s.Pull("acme/app", pr.Number); h.Title != title || h.Body != "b" {
			t.Fatalf("%q became %+v", title, h)
		}
	}
}

// What the provider sends is bounded: a body to MaxBody bytes, on a
// character's boundary.
func TestBounds(t *testing.T) {
	ctx := context.Background()
	s, p := setup(t, forge.Gitea)
	s.AddBranch("acme/app", "work")
	long := strings.Repeat("é", forge.MaxBody) // 2 bytes each
	pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: strings.Repeat("t", 400), Body: long, Head: "work", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Pull("acme/app", pr.Number)
	if len(h.Body) > forge.MaxBody || !utf8.ValidString(h.Body) || len(h.Title) > 255 || !h.Draft {
		t.Fatalf("held a body of %d bytes, a title of %d", len(h.Body), len(h.Title))
	}
	if err := p.Comment(ctx, "acme/app", pr.Number, long); err != nil {
		t.Fatal(err)
	}
	if c := s.Comments("acme/app", pr.Number); len(c) != 1 || len(c[0]) > forge.MaxBody || !utf8.ValidString(c[0]) {
		t.Fatal("the comment is not bounded")
	}
	if err := p.Comment(ctx, "acme/app", pr.Number, " "); !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("an empty comment: %v", err)
	}
	if _, err := p.GetRepo(ctx, "acme/app/more"); !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("a bad name: %v", err)
	}
}

// Gitea's states map onto the checks': error fails, warning passes; each
// context's newest status counts.
func TestChecks(t *testing.T) {
	ctx := context.Background()
	s, p := setup(t, forge.Gitea)
	sha := s.AddBranch("acme/app", "work")
	s.SetStatus("acme/app", sha, "lint", "error")
	s.SetStatus("acme/app", sha, "lint", "warning")
	s.SetStatus("acme/app", sha, "build", "pending")
	c, err := p.Checks(ctx, "acme/app", sha)
	if err != nil || c.State != forge.CheckPending || len(c.Items) != 2 || c.Items[1] != (forge.Check{Name: "lint", State: forge.CheckSuccess, URL: s.URL() + "/ci/lint"}) {
		t.Fatalf("%+v %v", c, err)
	}
	s.SetStatus("acme/app", sha, "build", "error")
	if c, err = p.Checks(ctx, "acme/app", sha); err != nil || c.State != forge.CheckFailure {
		t.Fatalf("%+v %v", c, err)
	}
	// Statuses past a page (Gitea's are 50 at most) are read.
	for i := range 120 {
		s.SetStatus("acme/app", sha, fmt.Sprint("ctx-", i), "success")
	}
	if c, err = p.Checks(ctx, "acme/app", sha); err != nil || len(c.Items) != 122 {
		t.Fatalf("%d items, %v", len(c.Items), err)
	}
}

// The errors carry the forge's message, never the token; a second pull
// request of one head and base is refused (409).
func TestErrors(t *testing.T) {
	ctx := context.Background()
	s, p := setup(t, forge.Gitea)
	s.FailNext(http.StatusForbidden, false)
	_, err := p.GetRepo(ctx, "acme/app")
	if !errors.Is(err, forge.ErrForbidden) || !strings.Contains(err.Error(), "required scope") || strings.Contains(err.Error(), s.Token()) {
		t.Fatalf("%v", err)
	}
	s.FailNext(http.StatusBadGateway, false)
	if _, err := p.ListRepos(ctx); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("%v", err)
	}
	s.AddBranch("acme/app", "work")
	in := forge.PRInput{Title: "x", Head: "work", Base: "main"}
	if _, err := p.OpenPR(ctx, "acme/app", in); err != nil {
		t.Fatal(err)
	}
	if _, err := p.OpenPR(ctx, "acme/app", in); !errors.Is(err, forge.ErrInvalid) || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a second pull request: %v", err)
	}
	s.MergePR("acme/app", 1)
	if _, err := p.ClosePR(ctx, "acme/app", 1); !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("closing a merged pull request: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.GetPR(ctx, "acme/app", 1); !errors.Is(err, forge.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v", err)
	}
}

func TestInstallHook(t *testing.T) {
	for _, kind := range []string{forge.Gitea, forge.Forgejo} {
		s, p := setup(t, kind)
		h, err := p.InstallHook(context.Background(), "acme/app", "https://slipway.example/hooks/x", "s3cret")
		if err != nil || h.URL != "https://slipway.example/hooks/x" {
			t.Fatalf("%s: %+v %v", kind, h, err)
		}
		if ts := s.HookTypes("acme/app"); len(ts) != 1 || ts[0] != kind {
			t.Fatalf("%s: installed %v", kind, ts)
		}
		if hs := s.Hooks("acme/app"); !slices.Equal(hs[0].Events, []string{"pull_request", "issues", "status"}) {
			t.Fatalf("%s: events %v", kind, hs[0].Events)
		}
	}
}

// A head branch the server was not given is asked of Branches.
func TestBranchesHook(t *testing.T) {
	s := giteatest.New(t, forge.Gitea, giteatest.Branches(func(repo, branch string) (string, bool) {
		return strings.Repeat("a", 40), repo == "acme/app" && branch == "pushed"
	}))
	s.AddRepo("acme/app", "main", false)
	p, _ := gitea.New(s.Config())
	pr, err := p.OpenPR(context.Background(), "acme/app", forge.PRInput{Title: "x", Head: "pushed", Base: "main"})
	if err != nil || pr.HeadSHA != strings.Repeat("a", 40) {
		t.Fatalf("%+v %v", pr, err)
	}
	if _, err := p.OpenPR(context.Background(), "acme/app", forge.PRInput{Title: "x", Head: "nowhere", Base: "main"}); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("%v", err)
	}
}

func TestWebhook(t *testing.T) {
	s := giteatest.New(t, forge.Forgejo)
	s.AddRepo("acme/app", "main", false)
	h, body := s.Delivery("acme/app", forgetest.DeliverySpec{Type: forge.EventPullRequest, Delivery: "d-1", PR: 3, SHA: strings.Repeat("b", 40)}, "s3cret")

	// Forgejo's own headers alone are enough.
	only := h.Clone()
	for _, k := range []string{"X-Gitea-Signature", "X-Gitea-Event", "X-Gitea-Delivery"} {
		only.Del(k)
	}
	e, err := gitea.ReadWebhook(only, body, "s3cret")
	if err != nil || e.Type != forge.EventPullRequest || e.Delivery != "d-1" || e.PR.Number != 3 || e.PR.Base != "main" || e.PR.Title != "Pull request 3" {
		t.Fatalf("%+v %v", e, err)
	}
	// A wrong X-Gitea-Signature besides a right X-Forgejo-Signature: either
	// verifies.
	wrong := h.Clone()
	wrong.Set("X-Gitea-Signature", strings.Repeat("0", 64))
	if _, err := gitea.ReadWebhook(wrong, body, "s3cret"); err != nil {
		t.Fatal(err)
	}
	only.Del("X-Forgejo-Signature")
	only.Set("X-Hub-Signature-256", h.Get("X-Hub-Signature-256"))
	if _, err := gitea.ReadWebhook(only, body, "s3cret"); !errors.Is(err, forge.ErrSignature) {
		t.Fatalf("GitHub's header alone: %v", err)
	}
	// An empty secret verifies nothing: not Gitea's empty signature, not
	// a body signed with it.
	h, body = s.Delivery("acme/app", forgetest.DeliverySpec{Type: forge.EventIssue, Issue: 1}, "")
	if _, err := gitea.ReadWebhook(h, body, ""); !errors.Is(err, forge.ErrSignature) || h.Get("X-Gitea-Signature") != "" {
		t.Fatalf("an empty secret: %v", err)
	}
	if _, err := gitea.ReadWebhook(sign(body, ""), body, ""); !errors.Is(err, forge.ErrSignature) {
		t.Fatalf("signed with an empty secret: %v", err)
	}
	// A push is another event.
	h, body = s.Delivery("acme/app", forgetest.DeliverySpec{Type: forge.EventPing, Delivery: "d-2"}, "s3cret")
	if e, err := gitea.ReadWebhook(h, body, "s3cret"); err != nil || e.Type != forge.EventOther || e.Repo != "acme/app" || h.Get("X-Gitea-Event") != "push" {
		t.Fatalf("%+v %v", e, err)
	}
	// Signed, but not an object, or too large.
	for _, b := range [][]byte{[]byte(`[1]`), []byte(`null`), []byte(strings.Repeat(" ", 25<<20+1))} {
		if _, err := gitea.ReadWebhook(sign(b, "s3cret"), b, "s3cret"); !errors.Is(err, forge.ErrPayload) {
			t.Fatalf("%.10q: %v", b, err)
		}
	}
	// A pull request event without its pull request.
	b := []byte(`{"number":1,"repository":{"full_name":"acme/app"}}`)
	hh := sign(b, "s3cret")
	hh.Set("X-Gitea-Event", "pull_request")
	if _, err := gitea.ReadWebhook(hh, b, "s3cret"); !errors.Is(err, forge.ErrPayload) {
		t.Fatalf("%v", err)
	}
}

func sign(body []byte, secret string) http.Header {
	s := giteatest.Sign(body, secret)
	h := http.Header{}
	h.Set("X-Gitea-Signature", s)
	return h
}

// The provider and the server are used from many goroutines at once.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	s, p := setup(t, forge.Gitea)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 10 {
		branch := fmt.Sprint("work-", i)
		s.AddBranch("acme/app", branch)
		wg.Go(func() {
			pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: branch, Head: branch, Base: "main", Labels: []string{"slipway"}})
			if err == nil {
				_, err = p.GetPR(ctx, "acme/app", pr.Number)
			}
			if err == nil {
				err = p.Comment(ctx, "acme/app", pr.Number, "hello")
			}
			errs <- err
		})
		wg.Go(func() {
			_, err := p.ListIssues(ctx, "acme/app")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// FindPR reads the open pull requests newest first, page by page (Gitea
// sends 50 a page), five pages at most.
func TestFindPRPages(t *testing.T) {
	ctx := context.Background()
	s, p := setup(t, forge.Gitea)
	open := func(branch string) *forge.PR {
		t.Helper()
		s.AddBranch("acme/app", branch)
		pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: branch, Head: branch, Base: "main"})
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	find := func(branch string, want *forge.PR, requests int) {
		t.Helper()
		before := len(s.Requests())
		found, err := p.FindPR(ctx, "acme/app", branch)
		if err != nil || (want == nil) != (found == nil) || want != nil && found.Number != want.Number {
			t.Fatalf("%s: found %+v %v, want %+v", branch, found, err, want)
		}
		rs := s.Requests()[before:]
		if len(rs) != requests || rs[0] != "GET /api/v1/repos/acme/app/pulls?limit=100&page=1&state=open" {
			t.Fatalf("%s: %d requests: %v", branch, len(rs), rs)
		}
	}
	old := open("slipway/old")
	for i := range 120 {
		open(fmt.Sprintf("other-%03d", i))
	}
	find("slipway/old", old, 3) // the 121st: page 3
	newest := open("slipway/new")
	find("slipway/new", newest, 1)
	for i := 120; i < 250; i++ {
		open(fmt.Sprintf("other-%03d", i))
	}
	find("slipway/old", nil, 5) // the 252nd: past five pages
	find("slipway/none", nil, 5)
	if _, err := p.FindPR(ctx, "acme/app", ""); !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("no branch: %v", err)
	}
}
