// Package gitlab is the GitLab provider of package forge, through GitLab's
// official Go client (gitlab.com/gitlab-org/api/client-go) against the REST
// API v4 of gitlab.com or a self-managed instance. A repository is a
// project named by its path with its groups ("group/sub/name"), sent
// URL-encoded as the project's id; a pull request is a merge request,
// numbered by its iid. The client's retries and rate limiter are off: a
// provider never retries and never sleeps, a rate limit is answered as
// forge.ErrRateLimited for the caller to decide.
package gitlab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	gl "gitlab.com/gitlab-org/api/client-go"

	"slipway/internal/forge"
)

// maxTitle is GitLab's limit on a merge request's title, in characters
// (the "Draft: " prefix counts).
const maxTitle = 255

// maxErrorBody bounds what is kept of an error answer's body (its message
// goes into the error).
const maxErrorBody = 64 << 10

// draftPrefix marks a draft merge request: GitLab derives `draft` from
// the title.
const draftPrefix = "Draft: "

// draftRE is GitLab's draft prefix (MergeRequest::DRAFT_REGEX): "Draft:",
// "[Draft]" or "(Draft)" in any case, then spaces.
var draftRE = regexp.MustCompile(`(?i)^(\[draft\]|\(draft\)|draft:)+\s*`)

type provider struct {
	c     *gl.Client
	token string // only to scrub it from a forge's message
}

// New opens a GitLab instance: cfg.BaseURL is its root (https://gitlab.com;
// the API is under /api/v4) and cfg.Token a personal, group or project
// access token, sent in the PRIVATE-TOKEN header.
func New(cfg forge.Config) (forge.Provider, error) {
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" || base.User != nil || base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("%w: gitlab: the base URL must be an http(s) address without credentials, like https://gitlab.com", forge.ErrInvalid)
	}
	if cfg.Token == "" {
		return nil, fmt.Errorf("%w: gitlab: no token", forge.ErrUnauthorized)
	}
	hc := &http.Client{Timeout: forge.CallTimeout}
	if cfg.HTTP != nil {
		c := *cfg.HTTP // a copy: the caller's client keeps its transport
		hc = &c
	}
	hc.Transport = keepErrors{next: hc.Transport}
	c, err := gl.NewClient(cfg.Token,
		gl.WithBaseURL(base.String()),
		gl.WithHTTPClient(hc),
		gl.WithoutRetries(),
		gl.WithCustomRetryMax(0),
		gl.WithCustomLimiter(noLimit{}),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: gitlab: %v", forge.ErrInvalid, err)
	}
	return &provider{c: c, token: cfg.Token}, nil
}

// noLimit is the client's rate limiter, off: the client would otherwise
// pace itself (sleep) from the RateLimit-Limit header of its first answer.
type noLimit struct{}

func (noLimit) Wait(context.Context) error { return nil }

// keepErrors keeps the body of an error answer (at most maxErrorBody)
// for the error's message, in the errorBody of the request's context: the
// client drops a 404's body, and closes every body before answering.
type keepErrors struct{ next http.RoundTripper }

// errorBody receives an error answer's body.
type errorBody struct{ data []byte }

type errorBodyKey struct{}

func (k keepErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	next := k.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	if b, ok := r.Context().Value(errorBodyKey{}).(*errorBody); ok {
		b.data = data
	}
	return resp, nil
}

// call is a call's context for the client, with where an error answer's
// body goes.
func call(ctx context.Context) (gl.RequestOptionFunc, *errorBody) {
	b := &errorBody{}
	return gl.WithContext(context.WithValue(ctx, errorBodyKey{}, b)), b
}

func (p *provider) Kind() string { return forge.GitLab }

// fail turns the client's answer into a forge error: the kind from the
// status (errors.Is works), GitLab's message in the text.
func (p *provider) fail(op string, resp *gl.Response, err error, body *errorBody) error {
	if resp == nil || resp.Response == nil {
		// The forge did not answer (a transport error, the context's end).
		return fmt.Errorf("%w: gitlab: %s: %w", forge.ErrUnavailable, op, err)
	}
	status := resp.StatusCode
	var kind error
	switch {
	case status == http.StatusUnauthorized:
		kind = forge.ErrUnauthorized
	case status == http.StatusTooManyRequests,
		status == http.StatusForbidden && resp.Header.Get("RateLimit-Remaining") == "0":
		kind = forge.ErrRateLimited
	case status == http.StatusForbidden:
		kind = forge.ErrForbidden
	case status == http.StatusNotFound:
		kind = forge.ErrNotFound
	case status >= 400 && status < 500:
		kind = forge.ErrInvalid
	default:
		// 5xx, or an answer that could not be read (err is the decoding's).
		kind = forge.ErrUnavailable
	}
	msg := message(body.data)
	if status < 400 {
		msg = err.Error()
	}
	if p.token != "" {
		msg = strings.ReplaceAll(msg, p.token, "[token]")
	}
	return fmt.Errorf("%w: gitlab: %s: %d %s", kind, op, status, msg)
}

// message reads GitLab's error body: {"message": text, list or field →
// list} and/or {"error": text}; a body that is not JSON is kept as text
// (a 429 says "Retry later").
func message(body []byte) string {
	var v struct {
		Message json.RawMessage `json:"message"`
		Error   string          `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return cut(strings.TrimSpace(string(body)), 300)
	}
	var parts []string
	var s string
	var list []string
	var fields map[string]json.RawMessage
	switch {
	case json.Unmarshal(v.Message, &s) == nil && s != "":
		parts = append(parts, s)
	case json.Unmarshal(v.Message, &list) == nil:
		parts = append(parts, list...)
	case json.Unmarshal(v.Message, &fields) == nil:
		// {"source_branch": ["does not exist"]}: "source_branch does not exist".
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			var errs []string
			if json.Unmarshal(fields[k], &errs) != nil {
				errs = []string{string(fields[k])}
			}
			parts = append(parts, k+" "+strings.Join(errs, ", "))
		}
	}
	if v.Error != "" {
		parts = append(parts, v.Error)
	}
	return cut(strings.Join(parts, "; "), 1000)
}

// cut cuts s to at most n bytes on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// project checks a project's path ("group/sub/name"): the client escapes
// it whole (slashes too) as the project's id.
func project(repo string) error {
	if repo == "" || slices.Contains(strings.Split(repo, "/"), "") {
		return fmt.Errorf("%w: gitlab: %q is not a project's path (group/name)", forge.ErrInvalid, repo)
	}
	return nil
}

// pages reads a list page by page (forge.PageSize a page) through the
// X-Next-Page header, up to max items; a forge that sends no end (or goes
// back) is cut there.
func pages[T any](max int, get func(page int64) ([]T, *gl.Response, error)) ([]T, *gl.Response, error) {
	var out []T
	page := int64(1)
	for {
		items, resp, err := get(page)
		if err != nil {
			return nil, resp, err
		}
		out = append(out, items...)
		if len(out) >= max {
			return out[:max], resp, nil
		}
		next := resp.NextPage
		if next == 0 && resp.TotalPages > page {
			next = page + 1
		}
		if next <= page || len(items) == 0 {
			return out, resp, nil
		}
		page = next
	}
}

func toRepo(p *gl.Project) forge.Repo {
	return forge.Repo{
		FullName:      p.PathWithNamespace,
		CloneURL:      p.HTTPURLToRepo,
		WebURL:        p.WebURL,
		DefaultBranch: p.DefaultBranch,
		Private:       p.Visibility != gl.PublicVisibility,
		Description:   p.Description,
	}
}

func (p *provider) ListRepos(ctx context.Context) ([]forge.Repo, error) {
	withCtx, kept := call(ctx)
	member := true
	projects, resp, err := pages(forge.MaxRepos, func(page int64) ([]*gl.Project, *gl.Response, error) {
		return p.c.Projects.ListProjects(&gl.ListProjectsOptions{
			ListOptions: gl.ListOptions{PerPage: forge.PageSize, Page: page},
			Membership:  &member,
		}, withCtx)
	})
	if err != nil {
		return nil, p.fail("list projects", resp, err, kept)
	}
	out := make([]forge.Repo, 0, len(projects))
	for _, pr := range projects {
		out = append(out, toRepo(pr))
	}
	return out, nil
}

func (p *provider) GetRepo(ctx context.Context, repo string) (*forge.Repo, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	withCtx, kept := call(ctx)
	pr, resp, err := p.c.Projects.GetProject(repo, nil, withCtx)
	if err != nil {
		return nil, p.fail("get project "+repo, resp, err, kept)
	}
	r := toRepo(pr)
	return &r, nil
}

// draftless is a title without its draft prefix.
func draftless(title string) string {
	return draftRE.ReplaceAllString(title, "")
}

// fullTitle is the title GitLab keeps: the prefix marks a draft; cut to
// GitLab's limit.
func fullTitle(title string, draft bool) string {
	title = draftless(cut(title, forge.MaxTitle))
	if draft {
		title = draftPrefix + title
	}
	if utf8.RuneCountInString(title) > maxTitle {
		title = string([]rune(title)[:maxTitle])
	}
	return title
}

func toPR(mr *gl.BasicMergeRequest) *forge.PR {
	state := forge.PROpen // opened, locked (being merged)
	switch mr.State {
	case "closed":
		state = forge.PRClosed
	case "merged":
		state = forge.PRMerged
	}
	title := mr.Title
	if mr.Draft {
		title = draftless(title)
	}
	return &forge.PR{
		Number:  int(mr.IID),
		URL:     mr.WebURL,
		Title:   title,
		State:   state,
		Draft:   mr.Draft,
		Head:    mr.SourceBranch,
		Base:    mr.TargetBranch,
		HeadSHA: mr.SHA,
	}
}

func (p *provider) OpenPR(ctx context.Context, repo string, in forge.PRInput) (*forge.PR, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	withCtx, kept := call(ctx)
	title, body := fullTitle(in.Title, in.Draft), cut(in.Body, forge.MaxBody)
	opt := &gl.CreateMergeRequestOptions{
		Title:        &title,
		Description:  &body,
		SourceBranch: &in.Head,
		TargetBranch: &in.Base,
	}
	if len(in.Labels) > 0 {
		labels := gl.LabelOptions(in.Labels)
		opt.Labels = &labels
	}
	mr, resp, err := p.c.MergeRequests.CreateMergeRequest(repo, opt, withCtx)
	if err != nil {
		return nil, p.fail("open a merge request in "+repo, resp, err, kept)
	}
	return toPR(&mr.BasicMergeRequest), nil
}

func (p *provider) UpdatePR(ctx context.Context, repo string, number int, in forge.PRUpdate) (*forge.PR, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	withCtx, kept := call(ctx)
	opt := &gl.UpdateMergeRequestOptions{}
	changed := false
	if in.Title != nil || in.Draft != nil {
		// Draft is the title's prefix: the new title needs the current
		// one's draft state, and a draft change the current title.
		cur, resp, err := p.c.MergeRequests.GetMergeRequest(repo, int64(number), nil, withCtx)
		if err != nil {
			return nil, p.fail(fmt.Sprintf("get merge request !%d of %s", number, repo), resp, err, kept)
		}
		title, draft := draftless(cur.Title), cur.Draft
		if in.Title != nil {
			title = *in.Title
		}
		if in.Draft != nil {
			draft = *in.Draft
		}
		if t := fullTitle(title, draft); t != cur.Title {
			opt.Title, changed = &t, true
		}
	}
	if in.Body != nil {
		b := cut(*in.Body, forge.MaxBody)
		opt.Description, changed = &b, true
	}
	if len(in.Labels) > 0 {
		labels := gl.LabelOptions(in.Labels)
		opt.AddLabels, changed = &labels, true
	}
	if !changed {
		// GitLab refuses an update without a parameter.
		return p.GetPR(ctx, repo, number)
	}
	mr, resp, err := p.c.MergeRequests.UpdateMergeRequest(repo, int64(number), opt, withCtx)
	if err != nil {
		return nil, p.fail(fmt.Sprintf("update merge request !%d of %s", number, repo), resp, err, kept)
	}
	return toPR(&mr.BasicMergeRequest), nil
}

func (p *provider) ClosePR(ctx context.Context, repo string, number int) (*forge.PR, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	withCtx, kept := call(ctx)
	closeEvent := "close"
	mr, resp, err := p.c.MergeRequests.UpdateMergeRequest(repo, int64(number), &gl.UpdateMergeRequestOptions{StateEvent: &closeEvent}, withCtx)
	if err != nil {
		return nil, p.fail(fmt.Sprintf("close merge request !%d of %s", number, repo), resp, err, kept)
	}
	return toPR(&mr.BasicMergeRequest), nil
}

func (p *provider) GetPR(ctx context.Context, repo string, number int) (*forge.PR, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	withCtx, kept := call(ctx)
	mr, resp, err := p.c.MergeRequests.GetMergeRequest(repo, int64(number), nil, withCtx)
	if err != nil {
		return nil, p.fail(fmt.Sprintf("get merge request !%d of %s", number, repo), resp, err, kept)
	}
	return toPR(&mr.BasicMergeRequest), nil
}

// FindPR lists the project's open merge requests from branch
// (source_branch filters by the name alone, so a fork's merge request
// into the project from a branch of that name is listed too and skipped
// here: only the project's own branch counts). GitLab lists newest first;
// the first page is enough (one open merge request per source and target
// branch). A merge request being merged (locked) is not listed as opened.
func (p *provider) FindPR(ctx context.Context, repo, branch string) (*forge.PR, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	if strings.TrimSpace(branch) == "" {
		return nil, fmt.Errorf("%w: gitlab: no branch named", forge.ErrInvalid)
	}
	withCtx, kept := call(ctx)
	state := "opened"
	mrs, resp, err := p.c.MergeRequests.ListProjectMergeRequests(repo, &gl.ListProjectMergeRequestsOptions{
		ListOptions:  gl.ListOptions{PerPage: forge.PageSize, Page: 1},
		State:        &state,
		SourceBranch: &branch,
	}, withCtx)
	if err != nil {
		return nil, p.fail(fmt.Sprintf("find the merge request of %s in %s", branch, repo), resp, err, kept)
	}
	for _, mr := range mrs {
		// Checked again: a forge that ignored a filter lists others.
		if mr == nil || mr.State != "opened" || mr.SourceBranch != branch || mr.SourceProjectID != mr.TargetProjectID {
			continue
		}
		return toPR(mr), nil
	}
	return nil, nil
}

// checkState maps a GitLab commit status (a job's or an external one's)
// to a check's state. A skipped job does not hold a merge back; a state
// GitLab adds later reads as pending.
func checkState(status string) string {
	switch status {
	case "success", "skipped":
		return forge.CheckSuccess
	case "failed", "canceled":
		return forge.CheckFailure
	}
	// pending, created, running, manual, scheduled, waiting_for_resource,
	// preparing, waiting_for_callback, canceling.
	return forge.CheckPending
}

func (p *provider) Checks(ctx context.Context, repo, sha string) (*forge.Checks, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	withCtx, kept := call(ctx)
	all := true
	statuses, resp, err := pages(forge.MaxChecks, func(page int64) ([]*gl.CommitStatus, *gl.Response, error) {
		return p.c.Commits.GetCommitStatuses(repo, sha, &gl.GetCommitStatusesOptions{
			ListOptions: gl.ListOptions{PerPage: forge.PageSize, Page: page},
			All:         &all,
		}, withCtx)
	})
	if err != nil {
		return nil, p.fail(fmt.Sprintf("read the statuses of %s in %s", sha, repo), resp, err, kept)
	}
	// A name listed several times (a retried job, a status posted again)
	// counts once, as its newest.
	newest := map[string]*gl.CommitStatus{}
	for _, s := range statuses {
		if cur, ok := newest[s.Name]; !ok || s.ID > cur.ID {
			newest[s.Name] = s
		}
	}
	items := make([]forge.Check, 0, len(newest))
	for name, s := range newest {
		items = append(items, forge.Check{Name: name, State: checkState(s.Status), URL: s.TargetURL})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	c := forge.Combine(items)
	return &c, nil
}

func (p *provider) ListIssues(ctx context.Context, repo string) ([]forge.Issue, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	withCtx, kept := call(ctx)
	state, order, sortAsc := "opened", "created_at", "asc"
	issues, resp, err := pages(forge.MaxIssues, func(page int64) ([]*gl.Issue, *gl.Response, error) {
		return p.c.Issues.ListProjectIssues(repo, &gl.ListProjectIssuesOptions{
			ListOptions: gl.ListOptions{PerPage: forge.PageSize, Page: page},
			State:       &state,
			OrderBy:     &order,
			Sort:        &sortAsc,
		}, withCtx)
	})
	if err != nil {
		return nil, p.fail("list the issues of "+repo, resp, err, kept)
	}
	out := make([]forge.Issue, 0, len(issues))
	for _, is := range issues {
		i := forge.Issue{
			Number: int(is.IID),
			Title:  is.Title,
			Body:   cut(is.Description, forge.MaxBody),
			URL:    is.WebURL,
			State:  "open",
			Labels: []string(is.Labels),
		}
		if is.State == "closed" {
			i.State = "closed"
		}
		if i.Labels == nil {
			i.Labels = []string{}
		}
		if is.UpdatedAt != nil {
			i.UpdatedAt = *is.UpdatedAt
		}
		out = append(out, i)
	}
	return out, nil
}

func (p *provider) Comment(ctx context.Context, repo string, number int, body string) error {
	if err := project(repo); err != nil {
		return err
	}
	withCtx, kept := call(ctx)
	body = cut(body, forge.MaxBody)
	_, resp, err := p.c.Notes.CreateMergeRequestNote(repo, int64(number), &gl.CreateMergeRequestNoteOptions{Body: &body}, withCtx)
	if err != nil {
		return p.fail(fmt.Sprintf("comment on merge request !%d of %s", number, repo), resp, err, kept)
	}
	return nil
}

// InstallHook installs a project webhook for merge request, issue and
// pipeline events; GitLab sends secret itself in X-Gitlab-Token.
func (p *provider) InstallHook(ctx context.Context, repo, hookURL, secret string) (*forge.Hook, error) {
	if err := project(repo); err != nil {
		return nil, err
	}
	withCtx, kept := call(ctx)
	if secret == "" {
		return nil, fmt.Errorf("%w: gitlab: a webhook needs a secret", forge.ErrInvalid)
	}
	yes, no := true, false
	h, resp, err := p.c.Projects.AddProjectHook(repo, &gl.AddProjectHookOptions{
		URL:                 &hookURL,
		Token:               &secret,
		MergeRequestsEvents: &yes,
		IssuesEvents:        &yes,
		PipelineEvents:      &yes,
		PushEvents:          &no,
	}, withCtx)
	if err != nil {
		return nil, p.fail("install a webhook on "+repo, resp, err, kept)
	}
	return &forge.Hook{ID: fmt.Sprint(h.ID), URL: h.URL}, nil
}
