// Package forgetest is the conformance suite every forge provider passes,
// against a local server that speaks that forge's API (paths, headers,
// pagination, error bodies) for the operations Slipway uses.
package forgetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"slipway/internal/forge"
)

// Server is a local forge: what the suite can arrange and observe.
type Server interface {
	// Config signs in with a token the server accepts (Kind, BaseURL,
	// Token set).
	Config() forge.Config
	AddRepo(fullName, defaultBranch string, private bool)
	// AddIssue opens an issue and answers its number.
	AddIssue(repo, title, body string, labels []string) int
	CloseIssue(repo string, number int)
	// AddBranch makes a branch with a head commit (answered), so a pull
	// request can be opened from it.
	AddBranch(repo, branch string) string
	// SetCheck sets a commit's status (run: a GitHub check run instead;
	// other forges have statuses only and ignore it) named name.
	SetCheck(repo, sha, name, state string, run bool)
	MergePR(repo string, number int)
	// PR is what the server holds of a pull request.
	PR(repo string, number int) (body string, labels []string, ok bool)
	Comments(repo string, number int) []string
	Hooks(repo string) []HookRecord
	// Delivery is a webhook delivery of ev as the forge sends it, signed
	// with secret.
	Delivery(repo string, ev DeliverySpec, secret string) (http.Header, []byte)
	// FailNext makes the next API request answer status (rateLimited: as
	// the forge says a rate limit was hit).
	FailNext(status int, rateLimited bool)
}

// HookRecord is a webhook the server holds.
type HookRecord struct {
	URL    string
	Secret string
	// Events are the forge's names of what it sends (at least pull
	// requests and issues).
	Events []string
}

// DeliverySpec says what a webhook delivery is about.
type DeliverySpec struct {
	Type     string // forge.EventPullRequest, EventIssue, EventCheck, EventPing
	Delivery string // the delivery id
	PR       int
	Merged   bool
	Closed   bool
	Issue    int
	SHA      string
}

// Run runs the suite against a fresh server for each test.
func Run(t *testing.T, newServer func(t *testing.T) Server, newProvider func(forge.Config) (forge.Provider, error), read forge.ReadWebhook) {
	ctx := context.Background()
	setup := func(t *testing.T) (Server, forge.Provider) {
		t.Helper()
		s := newServer(t)
		p, err := newProvider(s.Config())
		if err != nil {
			t.Fatal(err)
		}
		return s, p
	}

	t.Run("repositories, paginated", func(t *testing.T) {
		s, p := setup(t)
		const n = 2*forge.PageSize + 17
		for i := 0; i < n; i++ {
			s.AddRepo(fmt.Sprintf("acme/repo-%03d", i), "main", i%2 == 0)
		}
		s.AddRepo("acme/trunk", "trunk", false)
		repos, err := p.ListRepos(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(repos) != n+1 {
			t.Fatalf("listed %d repositories, want %d", len(repos), n+1)
		}
		byName := map[string]forge.Repo{}
		for _, r := range repos {
			byName[r.FullName] = r
		}
		if r, ok := byName["acme/trunk"]; !ok || r.DefaultBranch != "trunk" || r.Private || !strings.HasPrefix(r.CloneURL, "http") || r.WebURL == "" {
			t.Fatalf("acme/trunk: %+v", r)
		}
		if r := byName["acme/repo-000"]; !r.Private {
			t.Fatalf("a private repository: %+v", r)
		}
		r, err := p.GetRepo(ctx, "acme/trunk")
		if err != nil || r.FullName != "acme/trunk" || r.DefaultBranch != "trunk" {
			t.Fatalf("get: %+v %v", r, err)
		}
		if _, err := p.GetRepo(ctx, "acme/nowhere"); !errors.Is(err, forge.ErrNotFound) {
			t.Fatalf("an unknown repository: %v", err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		s, p := setup(t)
		s.AddRepo("acme/app", "main", false)
		cfg := s.Config()
		cfg.Token = "wrong-token"
		bad, err := newProvider(cfg)
		if err == nil {
			_, err = bad.ListRepos(ctx)
		}
		if !errors.Is(err, forge.ErrUnauthorized) {
			t.Fatalf("a wrong token: %v", err)
		}
		for _, c := range []struct {
			status  int
			limited bool
			want    error
		}{{http.StatusForbidden, false, forge.ErrForbidden}, {http.StatusTooManyRequests, true, forge.ErrRateLimited},
			{http.StatusForbidden, true, forge.ErrRateLimited}, {http.StatusInternalServerError, false, forge.ErrUnavailable},
			{http.StatusNotFound, false, forge.ErrNotFound}} {
			s.FailNext(c.status, c.limited)
			if _, err := p.GetRepo(ctx, "acme/app"); !errors.Is(err, c.want) {
				t.Fatalf("status %d (rate limited %v): %v, want %v", c.status, c.limited, err, c.want)
			}
		}
		if _, err := p.GetRepo(ctx, "acme/app"); err != nil {
			t.Fatalf("after the failures: %v", err)
		}
	})

	t.Run("pull requests", func(t *testing.T) {
		s, p := setup(t)
		s.AddRepo("acme/app", "main", false)
		sha := s.AddBranch("acme/app", "slipway/task-1")
		// None is open from the branch yet.
		if found, err := p.FindPR(ctx, "acme/app", "slipway/task-1"); found != nil || err != nil {
			t.Fatalf("found before opening: %+v %v", found, err)
		}
		pr, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Fix the login", Body: "Done by an agent.\n\nTask: 42", Head: "slipway/task-1",
			Base: "main", Draft: true, Labels: []string{"slipway", "agent"}})
		if err != nil {
			t.Fatal(err)
		}
		if pr.Number <= 0 || pr.URL == "" || pr.State != forge.PROpen || !pr.Draft || pr.Head != "slipway/task-1" || pr.Base != "main" || pr.HeadSHA != sha || pr.Title != "Fix the login" {
			t.Fatalf("opened: %+v (head %s)", pr, sha)
		}
		// Found by its branch, read as GetPR reads it.
		found, err := p.FindPR(ctx, "acme/app", "slipway/task-1")
		if err != nil || found == nil || found.Number != pr.Number || found.State != forge.PROpen || found.HeadSHA != sha {
			t.Fatalf("found after opening: %+v %v (opened %+v)", found, err, pr)
		}
		if got, err := p.GetPR(ctx, "acme/app", pr.Number); err != nil || *got != *found {
			t.Fatalf("found %+v, read %+v %v", found, got, err)
		}
		if _, err := p.FindPR(ctx, "acme/nowhere", "slipway/task-1"); !errors.Is(err, forge.ErrNotFound) {
			t.Fatalf("found in an unknown repository: %v", err)
		}
		body, labels, ok := s.PR("acme/app", pr.Number)
		sort.Strings(labels)
		if !ok || body != "Done by an agent.\n\nTask: 42" || strings.Join(labels, ",") != "agent,slipway" {
			t.Fatalf("the forge holds %q %v %v", body, labels, ok)
		}
		title, ready := "Fix the login page", false
		if pr, err = p.UpdatePR(ctx, "acme/app", pr.Number, forge.PRUpdate{Title: &title, Draft: &ready}); err != nil || pr.Title != title || pr.Draft {
			t.Fatalf("updated: %+v %v", pr, err)
		}
		if got, err := p.GetPR(ctx, "acme/app", pr.Number); err != nil || got.Title != title || got.State != forge.PROpen {
			t.Fatalf("read: %+v %v", got, err)
		}
		if err := p.Comment(ctx, "acme/app", pr.Number, "Checks are green."); err != nil {
			t.Fatal(err)
		}
		if cs := s.Comments("acme/app", pr.Number); len(cs) != 1 || cs[0] != "Checks are green." {
			t.Fatalf("comments: %v", cs)
		}
		if pr, err = p.ClosePR(ctx, "acme/app", pr.Number); err != nil || pr.State != forge.PRClosed {
			t.Fatalf("closed: %+v %v", pr, err)
		}
		if found, err := p.FindPR(ctx, "acme/app", "slipway/task-1"); found != nil || err != nil {
			t.Fatalf("found after closing: %+v %v", found, err)
		}
		if _, err := p.GetPR(ctx, "acme/app", 9999); !errors.Is(err, forge.ErrNotFound) {
			t.Fatalf("an unknown pull request: %v", err)
		}
		// Another, merged on the forge.
		s.AddBranch("acme/app", "slipway/task-2")
		pr2, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "Second", Body: "b", Head: "slipway/task-2", Base: "main"})
		if err != nil || pr2.Draft || pr2.Number == pr.Number {
			t.Fatalf("second: %+v %v", pr2, err)
		}
		// Found by its own branch only; gone once merged.
		if found, err := p.FindPR(ctx, "acme/app", "slipway/task-2"); err != nil || found == nil || found.Number != pr2.Number {
			t.Fatalf("found the second: %+v %v", found, err)
		}
		if found, err := p.FindPR(ctx, "acme/app", "slipway/task-1"); found != nil || err != nil {
			t.Fatalf("found another branch's: %+v %v", found, err)
		}
		s.MergePR("acme/app", pr2.Number)
		if found, err := p.FindPR(ctx, "acme/app", "slipway/task-2"); found != nil || err != nil {
			t.Fatalf("found after merging: %+v %v", found, err)
		}
		if got, err := p.GetPR(ctx, "acme/app", pr2.Number); err != nil || got.State != forge.PRMerged {
			t.Fatalf("merged: %+v %v", got, err)
		}
		// The forge refuses a pull request from a branch it does not have.
		if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "x", Head: "nowhere", Base: "main"}); !errors.Is(err, forge.ErrInvalid) && !errors.Is(err, forge.ErrNotFound) {
			t.Fatalf("a missing branch: %v", err)
		}
	})

	t.Run("checks", func(t *testing.T) {
		s, p := setup(t)
		s.AddRepo("acme/app", "main", false)
		sha := s.AddBranch("acme/app", "work")
		state := func() forge.Checks {
			t.Helper()
			c, err := p.Checks(ctx, "acme/app", sha)
			if err != nil {
				t.Fatal(err)
			}
			return *c
		}
		if c := state(); c.State != forge.ChecksNone || len(c.Items) != 0 {
			t.Fatalf("no checks: %+v", c)
		}
		s.SetCheck("acme/app", sha, "ci/build", forge.CheckPending, false)
		s.SetCheck("acme/app", sha, "lint", forge.CheckSuccess, true)
		if c := state(); c.State != forge.CheckPending || len(c.Items) != 2 {
			t.Fatalf("one pending: %+v", c)
		}
		s.SetCheck("acme/app", sha, "ci/build", forge.CheckFailure, false)
		if c := state(); c.State != forge.CheckFailure {
			t.Fatalf("one failed: %+v", c)
		}
		s.SetCheck("acme/app", sha, "ci/build", forge.CheckSuccess, false)
		c := state()
		names := []string{}
		for _, i := range c.Items {
			names = append(names, i.Name+"="+i.State)
		}
		sort.Strings(names)
		if c.State != forge.CheckSuccess || strings.Join(names, " ") != "ci/build=success lint=success" {
			t.Fatalf("all green: %+v", c)
		}
	})

	t.Run("issues, paginated, without pull requests", func(t *testing.T) {
		s, p := setup(t)
		s.AddRepo("acme/app", "main", false)
		const n = forge.PageSize + 31
		for i := 1; i <= n; i++ {
			s.AddIssue("acme/app", fmt.Sprintf("Issue %d", i), fmt.Sprintf("body %d", i), []string{"bug"})
		}
		s.CloseIssue("acme/app", 2)
		s.AddBranch("acme/app", "feature")
		if _, err := p.OpenPR(ctx, "acme/app", forge.PRInput{Title: "A PR, not an issue", Head: "feature", Base: "main"}); err != nil {
			t.Fatal(err)
		}
		issues, err := p.ListIssues(ctx, "acme/app")
		if err != nil {
			t.Fatal(err)
		}
		if len(issues) != n-1 {
			t.Fatalf("listed %d open issues, want %d", len(issues), n-1)
		}
		for i, is := range issues {
			if is.Title == "A PR, not an issue" || is.Number == 2 || is.State != "open" {
				t.Fatalf("issue %d: %+v", i, is)
			}
			if i > 0 && issues[i-1].Number >= is.Number {
				t.Fatalf("not oldest first: %d then %d", issues[i-1].Number, is.Number)
			}
		}
		if first := issues[0]; first.Title != "Issue 1" || first.Body != "body 1" || len(first.Labels) != 1 || first.Labels[0] != "bug" || first.URL == "" || first.UpdatedAt.IsZero() {
			t.Fatalf("the first issue: %+v", first)
		}
	})

	t.Run("webhooks", func(t *testing.T) {
		s, p := setup(t)
		s.AddRepo("acme/app", "main", false)
		hook, err := p.InstallHook(ctx, "acme/app", "https://slipway.example/hooks/forge/abc", "s3cret-hook")
		if err != nil || hook.ID == "" {
			t.Fatalf("installed: %+v %v", hook, err)
		}
		hs := s.Hooks("acme/app")
		if len(hs) != 1 || hs[0].URL != "https://slipway.example/hooks/forge/abc" || hs[0].Secret != "s3cret-hook" || len(hs[0].Events) < 2 {
			t.Fatalf("the forge holds %+v", hs)
		}
		sha := s.AddBranch("acme/app", "work")
		for _, c := range []struct {
			spec  DeliverySpec
			check func(e *forge.Event) bool
		}{
			{DeliverySpec{Type: forge.EventPullRequest, Delivery: "d-1", PR: 7, Merged: true, Closed: true, SHA: sha},
				func(e *forge.Event) bool { return e.PR != nil && e.PR.Number == 7 && e.PR.State == forge.PRMerged }},
			{DeliverySpec{Type: forge.EventPullRequest, Delivery: "d-2", PR: 8, Closed: true, SHA: sha},
				func(e *forge.Event) bool { return e.PR != nil && e.PR.Number == 8 && e.PR.State == forge.PRClosed }},
			{DeliverySpec{Type: forge.EventPullRequest, Delivery: "d-3", PR: 9, SHA: sha},
				func(e *forge.Event) bool {
					return e.PR != nil && e.PR.Number == 9 && e.PR.State == forge.PROpen && e.PR.HeadSHA == sha
				}},
			{DeliverySpec{Type: forge.EventIssue, Delivery: "d-4", Issue: 3},
				func(e *forge.Event) bool { return e.Issue != nil && e.Issue.Number == 3 && e.Issue.State == "open" }},
			{DeliverySpec{Type: forge.EventIssue, Delivery: "d-5", Issue: 4, Closed: true},
				func(e *forge.Event) bool { return e.Issue != nil && e.Issue.Number == 4 && e.Issue.State == "closed" }},
			{DeliverySpec{Type: forge.EventCheck, Delivery: "d-6", SHA: sha}, func(e *forge.Event) bool { return e.SHA == sha }},
		} {
			h, body := s.Delivery("acme/app", c.spec, "s3cret-hook")
			e, err := read(h, body, "s3cret-hook")
			if err != nil || e.Type != c.spec.Type || e.Delivery != c.spec.Delivery || e.Repo != "acme/app" || !c.check(e) {
				t.Fatalf("%+v: read %+v (pr %+v, issue %+v), %v", c.spec, e, prOf(e), issueOf(e), err)
			}
			// Tampered, signed with another secret, unsigned. A forge that
			// signs the body (an HMAC) refuses a tampered one; GitLab signs
			// nothing (its token proves the sender, not the body), so a
			// tampered body may still read there.
			tampered := append([]byte(nil), body...)
			tampered[len(tampered)/2] ^= 1
			_, err = read(h, tampered, "s3cret-hook")
			if signsBody := h.Get("X-Gitlab-Token") == ""; signsBody && !errors.Is(err, forge.ErrSignature) ||
				!signsBody && err != nil && !errors.Is(err, forge.ErrPayload) {
				t.Fatalf("a tampered body: %v", err)
			}
			if _, err := read(h, body, "another"); !errors.Is(err, forge.ErrSignature) {
				t.Fatalf("another secret: %v", err)
			}
			bare := h.Clone()
			for k := range bare {
				if lk := strings.ToLower(k); strings.Contains(lk, "signature") || lk == "x-gitlab-token" {
					bare.Del(k)
				}
			}
			if _, err := read(bare, body, "s3cret-hook"); !errors.Is(err, forge.ErrSignature) {
				t.Fatalf("unsigned: %v", err)
			}
		}
		h, body := s.Delivery("acme/app", DeliverySpec{Type: forge.EventPing, Delivery: "d-7"}, "s3cret-hook")
		// GitLab has no ping: its test delivery is another event.
		if e, err := read(h, body, "s3cret-hook"); err != nil || e.Type != forge.EventPing && e.Type != forge.EventOther {
			t.Fatalf("a ping: %+v %v", e, err)
		}
		if _, err := read(h, []byte("not json"), "s3cret-hook"); err == nil {
			t.Fatal("a body that is not JSON was read")
		}
	})
}

func prOf(e *forge.Event) *forge.PR {
	if e == nil {
		return nil
	}
	return e.PR
}

func issueOf(e *forge.Event) *forge.Issue {
	if e == nil {
		return nil
	}
	return e.Issue
}
