// Package github is the GitHub provider of package forge: GitHub's REST
// API through go-github, GraphQL for the one change REST cannot make (a
// pull request's draft state), and GitHub's webhook deliveries. It works
// against github.com (https://api.github.com) and GitHub Enterprise Server
// (https://host/api/v3) alike.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	gh "github.com/google/go-github/v84/github"

	"slipway/internal/forge"
)

// DefaultBaseURL is github.com's API root.
const DefaultBaseURL = "https://api.github.com"

// hookEvents are the events InstallHook subscribes a webhook to: what
// ReadWebhook reads into pull request, issue and check events.
var hookEvents = []string{"pull_request", "issues", "check_run", "check_suite", "status"}

type provider struct {
	c       *gh.Client
	http    *http.Client // for GraphQL, which go-github does not speak
	graphQL string
	token   string
}

// New signs in to GitHub at cfg.BaseURL (the API root; empty:
// api.github.com) with cfg.Token. Nothing is asked of GitHub yet.
func New(cfg forge.Config) (forge.Provider, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: github: the API root %q is not an http(s) URL", forge.ErrInvalid, base)
	}
	u.RawQuery, u.Fragment = "", ""
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: forge.CallTimeout}
	}
	c := gh.NewClient(hc).WithAuthToken(cfg.Token)
	// The API root is taken as given: WithEnterpriseURLs would add /api/v3
	// to a root that has it elsewhere (a proxy, the test server).
	c.BaseURL, c.UploadURL = u, u
	c.UserAgent = "slipway"
	// go-github would refuse calls itself after a rate-limited answer; the
	// caller decides when to try again, from what GitHub said.
	c.DisableRateLimitCheck = true
	return &provider{c: c, http: hc, graphQL: graphQLURL(u), token: cfg.Token}, nil
}

// graphQLURL is GitHub's GraphQL endpoint beside the REST root u:
// api.github.com/graphql, or host/api/graphql on Enterprise Server.
func graphQLURL(u *url.URL) string {
	g := *u
	if p, ok := strings.CutSuffix(g.Path, "/api/v3/"); ok {
		g.Path = p + "/api/graphql"
	} else {
		g.Path += "graphql"
	}
	return g.String()
}

func (p *provider) Kind() string { return forge.GitHub }

func (p *provider) ListRepos(ctx context.Context) ([]forge.Repo, error) {
	var out []forge.Repo
	err := pages("list repositories", func(lo gh.ListOptions) (*gh.Response, error) {
		rs, resp, err := p.c.Repositories.ListByAuthenticatedUser(ctx, &gh.RepositoryListByAuthenticatedUserOptions{Sort: "full_name", ListOptions: lo})
		for _, r := range rs {
			if len(out) < forge.MaxRepos {
				out = append(out, repoOf(r))
			}
		}
		return resp, err
	}, func() bool { return len(out) < forge.MaxRepos })
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []forge.Repo{}
	}
	return out, nil
}

func (p *provider) GetRepo(ctx context.Context, repo string) (*forge.Repo, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	r, _, err := p.c.Repositories.Get(ctx, owner, name)
	if err != nil {
		return nil, fail("read repository "+repo, err)
	}
	out := repoOf(r)
	return &out, nil
}

// OpenPR opens the pull request, then adds its labels (GitHub takes
// labels on the issue side). When the labels fail the pull request is
// open all the same: it is answered with the error, so that a caller does
// not open it twice.
func (p *provider) OpenPR(ctx context.Context, repo string, in forge.PRInput) (*forge.PR, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	pr, _, err := p.c.PullRequests.Create(ctx, owner, name, &gh.NewPullRequest{
		Title: gh.Ptr(cut(in.Title, forge.MaxTitle)),
		Body:  gh.Ptr(cut(in.Body, forge.MaxBody)),
		Head:  gh.Ptr(in.Head),
		Base:  gh.Ptr(in.Base),
		Draft: gh.Ptr(in.Draft),
	})
	if err != nil {
		return nil, fail("open a pull request in "+repo, err)
	}
	out := prOf(pr)
	if err := p.addLabels(ctx, owner, name, pr.GetNumber(), in.Labels); err != nil {
		return out, err
	}
	return out, nil
}

func (p *provider) UpdatePR(ctx context.Context, repo string, number int, in forge.PRUpdate) (*forge.PR, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	if err := checkNumber(number); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("update pull request %s#%d", repo, number)
	var pr *gh.PullRequest
	if in.Title != nil || in.Body != nil {
		edit := &gh.PullRequest{}
		if in.Title != nil {
			edit.Title = gh.Ptr(cut(*in.Title, forge.MaxTitle))
		}
		if in.Body != nil {
			edit.Body = gh.Ptr(cut(*in.Body, forge.MaxBody))
		}
		pr, _, err = p.c.PullRequests.Edit(ctx, owner, name, number, edit)
	} else {
		// The draft change needs the pull request's node id.
		pr, _, err = p.c.PullRequests.Get(ctx, owner, name, number)
	}
	if err != nil {
		return nil, fail(op, err)
	}
	if in.Draft != nil && *in.Draft != pr.GetDraft() {
		draft, err := p.setDraft(ctx, op, pr.GetNodeID(), *in.Draft)
		if err != nil {
			return nil, err
		}
		pr.Draft = &draft
	}
	if err := p.addLabels(ctx, owner, name, number, in.Labels); err != nil {
		return nil, err
	}
	return prOf(pr), nil
}

func (p *provider) ClosePR(ctx context.Context, repo string, number int) (*forge.PR, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	if err := checkNumber(number); err != nil {
		return nil, err
	}
	pr, _, err := p.c.PullRequests.Edit(ctx, owner, name, number, &gh.PullRequest{State: gh.Ptr("closed")})
	if err != nil {
		return nil, fail(fmt.Sprintf("close pull request %s#%d", repo, number), err)
	}
	return prOf(pr), nil
}

func (p *provider) GetPR(ctx context.Context, repo string, number int) (*forge.PR, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	if err := checkNumber(number); err != nil {
		return nil, err
	}
	pr, _, err := p.c.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		return nil, fail(fmt.Sprintf("read pull request %s#%d", repo, number), err)
	}
	return prOf(pr), nil
}

// FindPR lists the open pull requests filtered by head, which GitHub
// takes as "user:ref-name" only (a bare branch name is ignored and every
// open pull request listed): the repository's owner, so pull requests
// from forks are not taken. The first page is enough (GitHub keeps at most
// one open pull request per head and base); the newest whose head is the
// branch of this very repository is answered.
func (p *provider) FindPR(ctx context.Context, repo, branch string) (*forge.PR, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	if err := checkBranch(branch); err != nil {
		return nil, err
	}
	prs, _, err := p.c.PullRequests.List(ctx, owner, name, &gh.PullRequestListOptions{
		State:       "open",
		Head:        owner + ":" + branch,
		ListOptions: gh.ListOptions{PerPage: forge.PageSize},
	})
	if err != nil {
		return nil, fail(fmt.Sprintf("find the pull request of %s in %s", branch, repo), err)
	}
	for _, pr := range prs {
		// Checked again: a forge that ignored the filter lists others.
		head := pr.GetHead()
		if pr.GetState() != "open" || head.GetRef() != branch || head.Repo != nil && !strings.EqualFold(head.Repo.GetFullName(), repo) {
			continue
		}
		return prOf(pr), nil
	}
	return nil, nil
}

// Checks reads the commit's statuses (the combined status: the newest of
// each context) and its check runs (the latest of each).
func (p *provider) Checks(ctx context.Context, repo, sha string) (*forge.Checks, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	if !isSHA(sha) {
		return nil, fmt.Errorf("%w: github: %q is not a commit sha", forge.ErrInvalid, sha)
	}
	// Statuses by context, keeping the newest (highest id) should a context
	// come twice.
	byContext := map[string]*gh.RepoStatus{}
	var contexts []string
	full := func() bool { return len(contexts) < forge.MaxChecks }
	err = pages("read the statuses of "+sha, func(lo gh.ListOptions) (*gh.Response, error) {
		cs, resp, err := p.c.Repositories.GetCombinedStatus(ctx, owner, name, sha, &lo)
		if err != nil || cs == nil {
			return resp, err
		}
		for _, s := range cs.Statuses {
			c := s.GetContext()
			if old, ok := byContext[c]; ok {
				if s.GetID() > old.GetID() {
					byContext[c] = s
				}
				continue
			}
			if full() {
				byContext[c] = s
				contexts = append(contexts, c)
			}
		}
		return resp, err
	}, full)
	if err != nil {
		return nil, err
	}
	items := make([]forge.Check, 0, len(contexts))
	for _, c := range contexts {
		s := byContext[c]
		items = append(items, forge.Check{Name: c, State: statusState(s.GetState()), URL: s.GetTargetURL()})
	}
	err = pages("read the check runs of "+sha, func(lo gh.ListOptions) (*gh.Response, error) {
		rs, resp, err := p.c.Checks.ListCheckRunsForRef(ctx, owner, name, sha, &gh.ListCheckRunsOptions{Filter: gh.Ptr("latest"), ListOptions: lo})
		if err != nil || rs == nil {
			return resp, err
		}
		for _, r := range rs.CheckRuns {
			if len(items) < forge.MaxChecks {
				items = append(items, forge.Check{Name: r.GetName(), State: runState(r.GetStatus(), r.GetConclusion()), URL: r.GetHTMLURL()})
			}
		}
		return resp, err
	}, func() bool { return len(items) < forge.MaxChecks })
	if err != nil {
		return nil, err
	}
	c := forge.Combine(items)
	return &c, nil
}

// ListIssues lists the open issues oldest first. GitHub lists pull
// requests among them (with a pull_request key): those are skipped, and
// reading stops after 2×MaxIssues items all told.
func (p *provider) ListIssues(ctx context.Context, repo string) ([]forge.Issue, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	out := []forge.Issue{}
	seen := 0
	err = pages("list the issues of "+repo, func(lo gh.ListOptions) (*gh.Response, error) {
		is, resp, err := p.c.Issues.ListByRepo(ctx, owner, name, &gh.IssueListByRepoOptions{State: "open", Sort: "created", Direction: "asc", ListOptions: lo})
		for _, i := range is {
			seen++
			if i != nil && !i.IsPullRequest() && len(out) < forge.MaxIssues {
				out = append(out, *issueOf(i))
			}
		}
		return resp, err
	}, func() bool { return len(out) < forge.MaxIssues && seen < 2*forge.MaxIssues })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p *provider) Comment(ctx context.Context, repo string, number int, body string) error {
	owner, name, err := split(repo)
	if err != nil {
		return err
	}
	if err := checkNumber(number); err != nil {
		return err
	}
	_, _, err = p.c.Issues.CreateComment(ctx, owner, name, number, &gh.IssueComment{Body: gh.Ptr(cut(body, forge.MaxBody))})
	if err != nil {
		return fail(fmt.Sprintf("comment on %s#%d", repo, number), err)
	}
	return nil
}

func (p *provider) InstallHook(ctx context.Context, repo, hookURL, secret string) (*forge.Hook, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	h, _, err := p.c.Repositories.CreateHook(ctx, owner, name, &gh.Hook{
		Name:   gh.Ptr("web"),
		Active: gh.Ptr(true),
		Events: hookEvents,
		Config: &gh.HookConfig{URL: gh.Ptr(hookURL), ContentType: gh.Ptr("json"), Secret: gh.Ptr(secret), InsecureSSL: gh.Ptr("0")},
	})
	if err != nil {
		return nil, fail("install a webhook on "+repo, err)
	}
	out := &forge.Hook{ID: strconv.FormatInt(h.GetID(), 10), URL: hookURL}
	if u := h.GetConfig().GetURL(); u != "" {
		out.URL = u
	}
	return out, nil
}

// addLabels adds labels to an issue or pull request (none: nothing asked).
func (p *provider) addLabels(ctx context.Context, owner, name string, number int, labels []string) error {
	var ls []string
	for _, l := range labels {
		if l != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) == 0 {
		return nil
	}
	if _, _, err := p.c.Issues.AddLabelsToIssue(ctx, owner, name, number, ls); err != nil {
		return fail(fmt.Sprintf("label %s/%s#%d", owner, name, number), err)
	}
	return nil
}

// pages calls list for page 1, 2, … (PageSize each) while GitHub's Link
// header names a next page and more says to go on. A next page that does
// not move forward ends the list (a forge is not trusted to end it).
func pages(op string, list func(gh.ListOptions) (*gh.Response, error), more func() bool) error {
	page := 1
	for {
		resp, err := list(gh.ListOptions{Page: page, PerPage: forge.PageSize})
		if err != nil {
			return fail(op, err)
		}
		if resp == nil || resp.NextPage <= page || !more() {
			return nil
		}
		page = resp.NextPage
	}
}

// split reads "owner/name", refusing anything that would be another path
// in GitHub's API (go-github puts the parts into URLs as they are).
func split(repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !namePart(owner) || !namePart(name) {
		return "", "", fmt.Errorf("%w: github: %q is not a repository's owner/name", forge.ErrInvalid, repo)
	}
	return owner, name, nil
}

// namePart is an owner or repository name as GitHub allows them.
func namePart(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// checkBranch refuses what cannot be a branch's name, ":" included (the
// head filter's separator; git refuses it in a ref too).
func checkBranch(b string) error {
	if strings.TrimSpace(b) == "" || strings.ContainsAny(b, ": \t\r\n") {
		return fmt.Errorf("%w: github: %q is not a branch's name", forge.ErrInvalid, b)
	}
	return nil
}

func checkNumber(n int) error {
	if n <= 0 {
		return fmt.Errorf("%w: github: %d is not an issue or pull request number", forge.ErrInvalid, n)
	}
	return nil
}

// isSHA is a commit id in hex (SHA-1, or SHA-256 repositories').
func isSHA(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return true
}

// cut cuts s to at most n bytes, at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func repoOf(r *gh.Repository) forge.Repo {
	return forge.Repo{
		FullName:      r.GetFullName(),
		CloneURL:      r.GetCloneURL(),
		WebURL:        r.GetHTMLURL(),
		DefaultBranch: r.GetDefaultBranch(),
		Private:       r.GetPrivate(),
		Description:   r.GetDescription(),
	}
}

// prOf reads a pull request; merged (a closed one with merged or
// merged_at set) reads as PRMerged.
func prOf(pr *gh.PullRequest) *forge.PR {
	state := pr.GetState()
	if pr.GetMerged() || pr.MergedAt != nil {
		state = forge.PRMerged
	} else if state != forge.PRClosed {
		state = forge.PROpen
	}
	return &forge.PR{
		Number:  pr.GetNumber(),
		URL:     pr.GetHTMLURL(),
		Title:   pr.GetTitle(),
		State:   state,
		Draft:   pr.GetDraft(),
		Head:    pr.GetHead().GetRef(),
		Base:    pr.GetBase().GetRef(),
		HeadSHA: pr.GetHead().GetSHA(),
	}
}

func issueOf(i *gh.Issue) *forge.Issue {
	labels := make([]string, 0, len(i.Labels))
	for _, l := range i.Labels {
		labels = append(labels, l.GetName())
	}
	state := "open"
	if i.GetState() == "closed" {
		state = "closed"
	}
	return &forge.Issue{
		Number:    i.GetNumber(),
		Title:     i.GetTitle(),
		Body:      cut(i.GetBody(), forge.MaxBody),
		URL:       i.GetHTMLURL(),
		State:     state,
		Labels:    labels,
		UpdatedAt: i.GetUpdatedAt().Time,
	}
}

// statusState reads a commit status's state (error is a failure too).
func statusState(s string) string {
	switch s {
	case "success":
		return forge.CheckSuccess
	case "pending":
		return forge.CheckPending
	}
	return forge.CheckFailure
}

// runState reads a check run: pending until completed, then a success
// when it succeeded, was neutral or was skipped.
func runState(status, conclusion string) string {
	if status != "completed" {
		return forge.CheckPending
	}
	switch conclusion {
	case "success", "neutral", "skipped":
		return forge.CheckSuccess
	}
	return forge.CheckFailure
}

// fail maps an error of a call to GitHub onto the forge's errors, with
// what GitHub said (never the request's headers, so never the token).
func fail(op string, err error) error {
	var (
		rl *gh.RateLimitError
		ab *gh.AbuseRateLimitError
		tf *gh.TwoFactorAuthError
		er *gh.ErrorResponse
		ae *gh.AcceptedError
	)
	switch {
	case errors.As(err, &rl):
		return fmt.Errorf("%w: github: %s: %s", forge.ErrRateLimited, op, clip(rl.Message))
	case errors.As(err, &ab):
		return fmt.Errorf("%w: github: %s: %s", forge.ErrRateLimited, op, clip(ab.Message))
	case errors.As(err, &tf):
		return fmt.Errorf("%w: github: %s: %s", forge.ErrUnauthorized, op, clip(tf.Message))
	case errors.As(err, &er) && er.Response != nil:
		return statusError(op, er.Response.StatusCode, er.Response.Header, message(er))
	case errors.As(err, &ae):
		return fmt.Errorf("%w: github: %s: GitHub is still computing the answer", forge.ErrUnavailable, op)
	}
	// Transport errors, timeouts, a body that is not the JSON expected.
	return fmt.Errorf("%w: github: %s: %w", forge.ErrUnavailable, op, err)
}

// statusError maps an HTTP status of GitHub's (REST or GraphQL) onto the
// forge's errors.
func statusError(op string, status int, h http.Header, msg string) error {
	var to error
	switch {
	case status == http.StatusUnauthorized:
		to = forge.ErrUnauthorized
	case status == http.StatusTooManyRequests,
		status == http.StatusForbidden && (h.Get("X-RateLimit-Remaining") == "0" || strings.Contains(strings.ToLower(msg), "rate limit")):
		to = forge.ErrRateLimited
	case status == http.StatusForbidden:
		to = forge.ErrForbidden
	case status == http.StatusNotFound, status == http.StatusGone:
		to = forge.ErrNotFound
	case status >= 500:
		to = forge.ErrUnavailable
	default:
		to = forge.ErrInvalid
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return fmt.Errorf("%w: github: %s: %d %s", to, op, status, clip(msg))
}

// message is GitHub's message with its validation errors
// ("Validation Failed: PullRequest head invalid").
func message(er *gh.ErrorResponse) string {
	parts := []string{}
	for _, e := range er.Errors {
		if e.Message != "" {
			parts = append(parts, e.Message)
		} else {
			parts = append(parts, strings.TrimSpace(strings.Join([]string{e.Resource, e.Field, e.Code}, " ")))
		}
	}
	if len(parts) == 0 {
		return er.Message
	}
	return er.Message + ": " + strings.Join(parts, "; ")
}

// clip bounds a message from GitHub kept in an error.
func clip(s string) string { return cut(s, 512) }
