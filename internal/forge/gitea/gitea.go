// Package gitea is the Gitea and Forgejo provider of package forge:
// Gitea's /api/v1 REST API through Gitea's SDK, and Gitea's webhook
// deliveries. Forgejo keeps Gitea's API and payloads; it installs its
// webhooks as type "forgejo" and signs them under X-Forgejo-* headers as
// well as X-Gitea-*.
//
// Gitea has no draft flag in its API: a pull request is a draft while its
// title starts with a work-in-progress prefix ("WIP: "), so the provider
// writes and reads the prefix and answers titles without it.
package gitea

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "code.gitea.io/sdk/gitea"

	"slipway/internal/forge"
)

const (
	// draftPrefix is what the provider puts before a draft's title.
	draftPrefix = "WIP: "
	// maxTitle is Gitea's bound on a title (its column's), prefix
	// included.
	maxTitle = 255
	// labelColor is the color of a label the provider creates.
	labelColor = "#ededed"
	// maxLabels bounds the labels read of a repository to find a name's.
	maxLabels = 1000
	// maxStatuses bounds the statuses read of a commit: Gitea keeps every
	// status posted (a context's pending, then its success), newest first,
	// so a commit holds more statuses than checks.
	maxStatuses = 5 * forge.MaxChecks
	// maxResponse bounds the body of one answer of the forge's.
	maxResponse = 32 << 20
	// maxMessage bounds the forge's message kept in an error, in bytes.
	maxMessage = 300
	// maxFindPages bounds the pages of open pull requests FindPR reads
	// (Gitea sends at most MAX_RESPONSE_ITEMS, 50 by default, a page).
	maxFindPages = 5
)

// draftPrefixes are the title prefixes read as a draft, compared without
// case: Gitea's default WORK_IN_PROGRESS_PREFIXES, and "Draft:".
var draftPrefixes = []string{"WIP:", "[WIP]", "Draft:"}

// hookEvents are the events InstallHook subscribes a webhook to ("status"
// is Gitea's commit status event; a forge without it ignores the name).
var hookEvents = []string{"pull_request", "issues", "status"}

type provider struct {
	kind  string
	base  string // the instance's root, without a trailing slash
	token string
	http  *http.Client
}

// New signs in to the Gitea or Forgejo instance at cfg.BaseURL (its root:
// the API is under /api/v1; a root given with /api/v1 is taken too) with
// cfg.Token. Nothing is asked of the forge yet: the SDK's check of the
// server's version is skipped.
func New(cfg forge.Config) (forge.Provider, error) {
	if cfg.Kind != forge.Gitea && cfg.Kind != forge.Forgejo {
		return nil, fmt.Errorf("%w: gitea: the kind %q is not gitea or forgejo", forge.ErrInvalid, cfg.Kind)
	}
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	base = strings.TrimSuffix(base, "/api/v1")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %s: the address is not an http(s) URL", forge.ErrInvalid, cfg.Kind)
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: forge.CallTimeout}
	}
	// A copy of the client, its transport bounding what an answer's body
	// may hold (the SDK reads bodies whole).
	bounded := *hc
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	bounded.Transport = limitTransport{next: next}
	return &provider{kind: cfg.Kind, base: base, token: cfg.Token, http: &bounded}, nil
}

// client is an SDK client for one call: the SDK takes its context per
// client, not per request. Building one does no I/O.
func (p *provider) client(ctx context.Context) (*sdk.Client, error) {
	c, err := sdk.NewClient(p.base,
		sdk.SetGiteaVersion(""), // no GET /api/v1/version: assume a current server
		sdk.SetToken(p.token),   // Authorization: token <t>
		sdk.SetHTTPClient(p.http),
		sdk.SetContext(ctx),
		sdk.SetUserAgent("slipway"))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", forge.ErrInvalid, p.kind, err)
	}
	return c, nil
}

func (p *provider) Kind() string { return p.kind }

func (p *provider) ListRepos(ctx context.Context) ([]forge.Repo, error) {
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	rs, resp, err := pages(forge.MaxRepos, func(lo sdk.ListOptions) ([]*sdk.Repository, *sdk.Response, error) {
		return c.ListMyRepos(sdk.ListReposOptions{ListOptions: lo})
	})
	if err != nil {
		return nil, p.fail("list repositories", resp, err)
	}
	out := make([]forge.Repo, 0, len(rs))
	for _, r := range rs {
		out = append(out, repoOf(r))
	}
	return out, nil
}

func (p *provider) GetRepo(ctx context.Context, repo string) (*forge.Repo, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	r, resp, err := c.GetRepo(owner, name)
	if err != nil {
		return nil, p.fail("read repository "+repo, resp, err)
	}
	out := repoOf(r)
	return &out, nil
}

// OpenPR finds or creates the labels first (Gitea takes label ids with the
// pull request), then opens it: a draft with the WIP prefix.
func (p *provider) OpenPR(ctx context.Context, repo string, in forge.PRInput) (*forge.PR, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	ids, err := p.labelIDs(c, owner, name, in.Labels)
	if err != nil {
		return nil, err
	}
	pr, resp, err := c.CreatePullRequest(owner, name, sdk.CreatePullRequestOption{
		Head:   in.Head,
		Base:   in.Base,
		Title:  titleOf(in.Title, in.Draft),
		Body:   cut(in.Body, forge.MaxBody),
		Labels: ids,
	})
	if err != nil {
		return nil, p.fail("open a pull request in "+repo, resp, err)
	}
	return prOf(pr), nil
}

// UpdatePR reads the pull request (its title says whether it is a draft),
// edits its title and body, then adds the labels.
func (p *provider) UpdatePR(ctx context.Context, repo string, number int, in forge.PRUpdate) (*forge.PR, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	pr, resp, err := c.GetPullRequest(owner, name, int64(number))
	if err != nil {
		return nil, p.fail(fmt.Sprintf("read pull request %s#%d", repo, number), resp, err)
	}
	was, wasDraft := splitDraft(pr.Title)
	title, draft := was, wasDraft
	if in.Title != nil && strings.TrimSpace(*in.Title) != "" {
		title = cut(*in.Title, forge.MaxTitle)
	}
	if in.Draft != nil {
		draft = *in.Draft
	}
	var edit sdk.EditPullRequestOption
	if title != was || draft != wasDraft {
		edit.Title = titleOf(title, draft)
	}
	if in.Body != nil {
		b := cut(*in.Body, forge.MaxBody)
		edit.Body = &b
	}
	if edit.Title != "" || edit.Body != nil {
		if pr, resp, err = c.EditPullRequest(owner, name, int64(number), edit); err != nil {
			return nil, p.fail(fmt.Sprintf("edit pull request %s#%d", repo, number), resp, err)
		}
	}
	if len(in.Labels) > 0 {
		ids, err := p.labelIDs(c, owner, name, in.Labels)
		if err != nil {
			return nil, err
		}
		if _, resp, err := c.AddIssueLabels(owner, name, int64(number), sdk.IssueLabelsOption{Labels: ids}); err != nil {
			return nil, p.fail(fmt.Sprintf("label pull request %s#%d", repo, number), resp, err)
		}
	}
	return prOf(pr), nil
}

// ClosePR closes the pull request (Gitea answers 412, an ErrInvalid, for a
// merged one).
func (p *provider) ClosePR(ctx context.Context, repo string, number int) (*forge.PR, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	closed := sdk.StateClosed
	pr, resp, err := c.EditPullRequest(owner, name, int64(number), sdk.EditPullRequestOption{State: &closed})
	if err != nil {
		return nil, p.fail(fmt.Sprintf("close pull request %s#%d", repo, number), resp, err)
	}
	return prOf(pr), nil
}

func (p *provider) GetPR(ctx context.Context, repo string, number int) (*forge.PR, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	pr, resp, err := c.GetPullRequest(owner, name, int64(number))
	if err != nil {
		return nil, p.fail(fmt.Sprintf("read pull request %s#%d", repo, number), resp, err)
	}
	return prOf(pr), nil
}

// FindPR lists the open pull requests (newest first, Gitea's default
// order) and answers the first whose head is branch of the repository
// itself (not a fork's branch of that name). Gitea's list has no head
// filter, nor has the SDK; GET pulls/{base}/{head} (the SDK's
// GetPullRequestByBaseHead, Gitea 1.22+ and Forgejo) needs the base, which
// a caller back from a crash may not know, and answers a closed pull
// request too. At most maxFindPages pages are read: a pull request opened
// just before a crash is among the newest. Past them none is answered (and
// a second OpenPR of one head and base meets Gitea's 409).
func (p *provider) FindPR(ctx context.Context, repo, branch string) (*forge.PR, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(branch) == "" {
		return nil, fmt.Errorf("%w: %s: no branch named", forge.ErrInvalid, p.kind)
	}
	read := 0
	for n := 1; n <= maxFindPages; {
		prs, resp, err := c.ListRepoPullRequests(owner, name, sdk.ListPullRequestsOptions{
			ListOptions: sdk.ListOptions{Page: n, PageSize: forge.PageSize},
			State:       sdk.StateOpen,
		})
		if err != nil {
			return nil, p.fail(fmt.Sprintf("find the pull request of %s in %s", branch, repo), resp, err)
		}
		for _, pr := range prs {
			if pr == nil || pr.State != sdk.StateOpen || pr.HasMerged || pr.Head == nil || pr.Head.Ref != branch ||
				pr.Base != nil && pr.Head.RepoID != 0 && pr.Base.RepoID != 0 && pr.Head.RepoID != pr.Base.RepoID {
				continue
			}
			return prOf(pr), nil
		}
		read += len(prs)
		next := nextPage(resp, n, read)
		if len(prs) == 0 || next <= n {
			break
		}
		n = next
	}
	return nil, nil
}

// Checks reads the commit's statuses and keeps each context's newest.
func (p *provider) Checks(ctx context.Context, repo, sha string) (*forge.Checks, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	if sha == "" {
		return nil, fmt.Errorf("%w: %s: no commit named", forge.ErrInvalid, p.kind)
	}
	ss, resp, err := pages(maxStatuses, func(lo sdk.ListOptions) ([]*sdk.Status, *sdk.Response, error) {
		return c.ListStatuses(owner, name, sha, sdk.ListStatusesOption{ListOptions: lo})
	})
	if err != nil {
		return nil, p.fail("read the checks of "+repo+"@"+sha, resp, err)
	}
	newest := map[string]*sdk.Status{}
	for _, s := range ss {
		if n, ok := newest[s.Context]; !ok || s.ID > n.ID {
			newest[s.Context] = s
		}
	}
	items := make([]forge.Check, 0, len(newest))
	for _, s := range newest {
		items = append(items, forge.Check{Name: s.Context, State: checkState(s.State), URL: s.TargetURL})
	}
	slices.SortFunc(items, func(a, b forge.Check) int { return cmp.Compare(a.Name, b.Name) })
	if len(items) > forge.MaxChecks {
		items = items[:forge.MaxChecks]
	}
	out := forge.Combine(items)
	return &out, nil
}

// checkState maps a Gitea commit status onto a check's state: an error
// fails, a warning (and a skip) passes, what is unknown is pending.
func checkState(s sdk.StatusState) string {
	switch s {
	case sdk.StatusSuccess, sdk.StatusWarning, "skipped":
		return forge.CheckSuccess
	case sdk.StatusError, sdk.StatusFailure:
		return forge.CheckFailure
	}
	return forge.CheckPending
}

// ListIssues lists the open issues (type=issues: Gitea's issue list holds
// pull requests otherwise). Gitea lists them newest first and cannot sort
// otherwise: past MaxIssues the newest are kept, and the list is sorted
// oldest first here.
func (p *provider) ListIssues(ctx context.Context, repo string) ([]forge.Issue, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	is, resp, err := pages(forge.MaxIssues, func(lo sdk.ListOptions) ([]*sdk.Issue, *sdk.Response, error) {
		return c.ListRepoIssues(owner, name, sdk.ListIssueOption{ListOptions: lo, State: sdk.StateOpen, Type: sdk.IssueTypeIssue})
	})
	if err != nil {
		return nil, p.fail("list the issues of "+repo, resp, err)
	}
	out := make([]forge.Issue, 0, len(is))
	for _, i := range is {
		if i.PullRequest != nil {
			continue // a forge that ignored type=issues
		}
		out = append(out, issueOf(i))
	}
	slices.SortFunc(out, func(a, b forge.Issue) int { return cmp.Compare(a.Number, b.Number) })
	return out, nil
}

func (p *provider) Comment(ctx context.Context, repo string, number int, body string) error {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return err
	}
	if strings.TrimSpace(body) == "" {
		return fmt.Errorf("%w: %s: a comment needs a body", forge.ErrInvalid, p.kind)
	}
	_, resp, err := c.CreateIssueComment(owner, name, int64(number), sdk.CreateIssueCommentOption{Body: cut(body, forge.MaxBody)})
	if err != nil {
		return p.fail(fmt.Sprintf("comment on %s#%d", repo, number), resp, err)
	}
	return nil
}

// InstallHook installs an active JSON webhook of the forge's own type
// ("gitea", or "forgejo" on Forgejo).
func (p *provider) InstallHook(ctx context.Context, repo, hookURL, secret string) (*forge.Hook, error) {
	c, owner, name, err := p.open(ctx, repo)
	if err != nil {
		return nil, err
	}
	typ := sdk.HookTypeGitea
	if p.kind == forge.Forgejo {
		typ = "forgejo"
	}
	h, resp, err := c.CreateRepoHook(owner, name, sdk.CreateHookOption{
		Type:   typ,
		Config: map[string]string{"url": hookURL, "content_type": "json", "secret": secret},
		Events: hookEvents,
		Active: true,
	})
	if err != nil {
		return nil, p.fail("install a webhook on "+repo, resp, err)
	}
	u := h.Config["url"]
	if u == "" {
		u = hookURL
	}
	return &forge.Hook{ID: strconv.FormatInt(h.ID, 10), URL: u}, nil
}

// open is a call's client and its repository's owner and name.
func (p *provider) open(ctx context.Context, repo string) (*sdk.Client, string, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !namePart(owner) || !namePart(name) {
		return nil, "", "", fmt.Errorf("%w: %s: %q is not a repository's owner/name", forge.ErrInvalid, p.kind, repo)
	}
	c, err := p.client(ctx)
	return c, owner, name, err
}

// namePart is an owner or repository name as Gitea allows them.
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

// labelIDs answers the ids of the repository's labels named names,
// creating those it lacks (Gitea allows two labels of one name: an
// existing one is reused, matched exactly, else without case).
func (p *provider) labelIDs(c *sdk.Client, owner, name string, names []string) ([]int64, error) {
	var want []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(want, n) {
			want = append(want, n)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	ls, resp, err := pages(maxLabels, func(lo sdk.ListOptions) ([]*sdk.Label, *sdk.Response, error) {
		return c.ListRepoLabels(owner, name, sdk.ListLabelsOptions{ListOptions: lo})
	})
	if err != nil {
		return nil, p.fail("list the labels of "+owner+"/"+name, resp, err)
	}
	exact, folded := map[string]int64{}, map[string]int64{}
	for _, l := range ls {
		if _, ok := exact[l.Name]; !ok {
			exact[l.Name] = l.ID
		}
		if _, ok := folded[strings.ToLower(l.Name)]; !ok {
			folded[strings.ToLower(l.Name)] = l.ID
		}
	}
	ids := make([]int64, 0, len(want))
	for _, n := range want {
		id, ok := exact[n]
		if !ok {
			id, ok = folded[strings.ToLower(n)]
		}
		if !ok {
			l, resp, err := c.CreateLabel(owner, name, sdk.CreateLabelOption{Name: n, Color: labelColor})
			if err != nil {
				return nil, p.fail("create the label "+strconv.Quote(n)+" in "+owner+"/"+name, resp, err)
			}
			id = l.ID
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// pages reads a paginated list, PageSize a page (Gitea may send fewer:
// MAX_RESPONSE_ITEMS, 50 by default, bounds a page), up to max items.
func pages[T any](max int, page func(sdk.ListOptions) ([]T, *sdk.Response, error)) ([]T, *sdk.Response, error) {
	var all []T
	for n := 1; ; {
		items, resp, err := page(sdk.ListOptions{Page: n, PageSize: forge.PageSize})
		if err != nil {
			return nil, resp, err
		}
		all = append(all, items...)
		if len(all) >= max {
			return all[:max], resp, nil
		}
		next := nextPage(resp, n, len(all))
		if len(items) == 0 || next <= n {
			return all, resp, nil
		}
		n = next
	}
}

// nextPage is the page after page n, or 0 after the last: the Link
// header's rel="next" where Gitea sends one, else (its label list sends
// X-Total-Count only) while fewer than the total were read.
func nextPage(resp *sdk.Response, n, read int) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	if resp.NextPage > 0 {
		return resp.NextPage
	}
	if resp.Header.Get("Link") != "" {
		return 0 // links, none of them next: the last page
	}
	if total, err := strconv.Atoi(resp.Header.Get("X-Total-Count")); err == nil && read < total {
		return n + 1
	}
	return 0
}

// fail maps what the SDK answered onto the forge's errors: its status
// (the SDK's error is the forge's message), or no answer at all.
func (p *provider) fail(op string, resp *sdk.Response, err error) error {
	status := 0
	var h http.Header
	if resp != nil && resp.Response != nil {
		status, h = resp.StatusCode, resp.Header
	}
	if status == 0 || status < 300 {
		// Transport errors, timeouts, a body too large or not the JSON
		// expected (the error is the transport's or the decoder's).
		return fmt.Errorf("%w: %s: %s: %w", forge.ErrUnavailable, p.kind, op, err)
	}
	msg := p.clean(err.Error())
	var to error
	switch {
	case status == http.StatusUnauthorized:
		to = forge.ErrUnauthorized
	case status == http.StatusTooManyRequests, status == http.StatusForbidden && rateLimited(h, msg):
		to = forge.ErrRateLimited
	case status == http.StatusForbidden:
		to = forge.ErrForbidden
	case status == http.StatusNotFound:
		to = forge.ErrNotFound
	case status >= 500, status < 400:
		to = forge.ErrUnavailable
	default: // 409, 412, 422 and the other refusals
		to = forge.ErrInvalid
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return fmt.Errorf("%w: %s: %s: %d %s", to, p.kind, op, status, msg)
}

// rateLimited reports whether a 403 says a rate limit was hit. Gitea
// itself does not limit its API; a proxy before it may, saying so as
// GitHub does.
func rateLimited(h http.Header, msg string) bool {
	return h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0" ||
		strings.Contains(strings.ToLower(msg), "rate limit")
}

// clean makes the forge's message fit an error: on one line, short, and
// never holding the token.
func (p *provider) clean(msg string) string {
	if p.token != "" {
		msg = strings.ReplaceAll(msg, p.token, "[token]")
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxMessage {
		msg = cut(msg, maxMessage) + "…"
	}
	return msg
}

// titleOf is the title Gitea holds: the draft prefix before a draft's.
func titleOf(title string, draft bool) string {
	title = cut(title, forge.MaxTitle)
	if draft {
		title = draftPrefix + title
	}
	return cut(title, maxTitle)
}

// splitDraft reads a title Gitea holds: without its draft prefix, and
// whether it had one.
func splitDraft(title string) (string, bool) {
	for _, pre := range draftPrefixes {
		if len(title) >= len(pre) && strings.EqualFold(title[:len(pre)], pre) {
			return strings.TrimLeft(title[len(pre):], " "), true
		}
	}
	return title, false
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

func repoOf(r *sdk.Repository) forge.Repo {
	return forge.Repo{
		FullName:      r.FullName,
		CloneURL:      r.CloneURL,
		WebURL:        r.HTMLURL,
		DefaultBranch: r.DefaultBranch,
		Private:       r.Private,
		Description:   r.Description,
	}
}

func prOf(pr *sdk.PullRequest) *forge.PR {
	out := &forge.PR{Number: int(pr.Index), URL: pr.HTMLURL, State: forge.PROpen}
	out.Title, out.Draft = splitDraft(pr.Title)
	out.Draft = out.Draft || pr.Draft // Gitea 1.22+ reads its own prefixes too
	switch {
	case pr.HasMerged:
		out.State = forge.PRMerged
	case pr.State == sdk.StateClosed:
		out.State = forge.PRClosed
	}
	if pr.Head != nil {
		out.Head, out.HeadSHA = pr.Head.Ref, pr.Head.Sha
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	return out
}

func issueOf(i *sdk.Issue) forge.Issue {
	labels := make([]string, 0, len(i.Labels))
	for _, l := range i.Labels {
		labels = append(labels, l.Name)
	}
	state := "open"
	if i.State == sdk.StateClosed {
		state = "closed"
	}
	return forge.Issue{
		Number:    int(i.Index),
		Title:     i.Title,
		Body:      cut(i.Body, forge.MaxBody),
		URL:       i.HTMLURL,
		State:     state,
		Labels:    labels,
		UpdatedAt: i.Updated,
	}
}

// limitTransport bounds the body of every answer to maxResponse bytes.
type limitTransport struct{ next http.RoundTripper }

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxResponse}
	}
	return resp, err
}

var errTooLarge = errors.New("the answer is larger than the bound on it")

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
