package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// GitHub's documentation addresses, as its error bodies carry them.
const (
	docs          = "https://docs.github.com/rest"
	docsRateLimit = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
	docsSecondary = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

// GitHub's limits on what it stores.
const (
	maxTitle = 256
	maxBody  = 65536 // characters
)

// hookEvents are the webhook events the server accepts a hook for.
var hookEvents = []string{"*", "push", "pull_request", "pull_request_review", "pull_request_review_comment", "issues", "issue_comment",
	"check_run", "check_suite", "status", "create", "delete", "release", "workflow_run", "workflow_job", "deployment", "deployment_status"}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /user/repos", s.listRepos)
	m.HandleFunc("GET /repos/{owner}/{repo}", s.withRepo(s.getRepo))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.withRepo(s.listPulls))
	m.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.withRepo(s.createPull))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}", s.withRepo(s.getPull))
	m.HandleFunc("PATCH /repos/{owner}/{repo}/pulls/{number}", s.withRepo(s.updatePull))
	m.HandleFunc("GET /repos/{owner}/{repo}/issues", s.withRepo(s.listIssues))
	m.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/labels", s.withRepo(s.addLabelsTo))
	m.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/comments", s.withRepo(s.createComment))
	m.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/statuses", s.withRepo(s.listStatuses))
	m.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/status", s.withRepo(s.combinedStatus))
	m.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", s.withRepo(s.listCheckRuns))
	m.HandleFunc("POST /repos/{owner}/{repo}/hooks", s.withRepo(s.createHook))
	m.HandleFunc("POST /graphql", s.graphQL)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { notFound(w) })
	s.mux = m
}

// serve answers a request under the server's lock: a failure asked for
// with FailNext, else 401 without the token, else the API.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, r.Method+" "+r.URL.RequestURI())
	s.used++
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("C0DE:%X:%X", s.nextID, s.used))
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Used", strconv.Itoa(s.used%5000))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(5000-s.used%5000))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	if f := s.fail; f != nil {
		s.fail = nil
		s.failWith(w, f)
		return
	}
	if !s.authorized(r) {
		msg := "Bad credentials"
		if r.Header.Get("Authorization") == "" {
			msg = "Requires authentication"
		}
		writeJSON(w, http.StatusUnauthorized, errorBody(msg, docs, http.StatusUnauthorized))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authorized: "Bearer <token>" or the older "token <token>".
func (s *Server) authorized(r *http.Request) bool {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return (strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "token")) && tok == s.token
}

func (s *Server) failWith(w http.ResponseWriter, f *failure) {
	h := w.Header()
	switch {
	case f.limited && f.status == http.StatusForbidden:
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Used", "5000")
		writeJSON(w, f.status, errorBody(fmt.Sprintf("API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID %s and timestamp %s.",
			h.Get("X-GitHub-Request-Id"), time.Now().UTC().Format("2006-01-02 15:04:05 MST")), docsRateLimit, f.status))
	case f.limited:
		h.Set("Retry-After", "60")
		writeJSON(w, f.status, errorBody("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID "+
			h.Get("X-GitHub-Request-Id")+".", docsSecondary, f.status))
	case f.status == http.StatusUnauthorized:
		writeJSON(w, f.status, errorBody("Bad credentials", docs, f.status))
	case f.status == http.StatusForbidden:
		writeJSON(w, f.status, errorBody("Resource not accessible by personal access token", docs, f.status))
	case f.status == http.StatusNotFound:
		notFound(w)
	case f.status == http.StatusUnprocessableEntity:
		validation(w, map[string]any{"resource": "Repository", "code": "invalid"})
	default:
		writeJSON(w, f.status, map[string]any{"message": http.StatusText(f.status), "status": strconv.Itoa(f.status)})
	}
}

// withRepo finds the repository of the path ({owner}/{repo}, any case) or
// answers 404.
func (s *Server) withRepo(h func(http.ResponseWriter, *http.Request, *repo)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rp := s.repo(r.PathValue("owner") + "/" + r.PathValue("repo"))
		if rp == nil {
			notFound(w)
			return
		}
		h(w, r, rp)
	}
}

func (s *Server) listRepos(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var rs []*repo
	for _, rp := range s.order {
		if v := q.Get("visibility"); v == "public" && rp.private || v == "private" && !rp.private {
			continue
		}
		rs = append(rs, rp)
	}
	sortBy, dir := q.Get("sort"), q.Get("direction")
	if sortBy == "" {
		sortBy = "full_name"
	}
	if dir == "" {
		dir = "desc"
		if sortBy == "full_name" {
			dir = "asc"
		}
	}
	slices.SortStableFunc(rs, func(a, b *repo) int {
		c := int(a.id - b.id) // created, updated, pushed: all as added here
		if sortBy == "full_name" {
			c = strings.Compare(strings.ToLower(a.fullName), strings.ToLower(b.fullName))
		}
		if dir == "desc" {
			c = -c
		}
		return c
	})
	lo, hi := s.page(w, r, len(rs))
	out := []any{}
	for _, rp := range rs[lo:hi] {
		out = append(out, s.repoJSON(rp))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request, rp *repo) {
	writeJSON(w, http.StatusOK, s.repoJSON(rp))
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, rp *repo) {
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		Head  string  `json:"head"`
		Base  string  `json:"base"`
		Draft bool    `json:"draft"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	title, body := deref(in.Title), deref(in.Body)
	switch {
	case title == "":
		validation(w, map[string]any{"resource": "PullRequest", "code": "missing_field", "field": "title"})
		return
	case in.Head == "":
		validation(w, map[string]any{"resource": "PullRequest", "code": "missing_field", "field": "head"})
		return
	case in.Base == "":
		validation(w, map[string]any{"resource": "PullRequest", "code": "missing_field", "field": "base"})
		return
	case utf8.RuneCountInString(title) > maxTitle:
		validation(w, map[string]any{"resource": "PullRequest", "code": "custom", "field": "title", "message": "title is too long (maximum is 256 characters)"})
		return
	case utf8.RuneCountInString(body) > maxBody:
		validation(w, map[string]any{"resource": "PullRequest", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"})
		return
	}
	// head may be "owner:branch"; there are no forks here.
	head := in.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, rp.owner) {
			validation(w, map[string]any{"resource": "PullRequest", "code": "invalid", "field": "head"})
			return
		}
		head = branch
	}
	headSHA, ok := s.branch(rp, head)
	if !ok {
		validation(w, map[string]any{"resource": "PullRequest", "code": "invalid", "field": "head"})
		return
	}
	baseSHA, ok := s.branch(rp, in.Base)
	if !ok {
		validation(w, map[string]any{"resource": "PullRequest", "code": "invalid", "field": "base"})
		return
	}
	for _, i := range rp.items {
		if i.pr != nil && i.state == "open" && i.pr.head == head && i.pr.base == in.Base {
			validation(w, map[string]any{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + rp.owner + ":" + head + "."})
			return
		}
	}
	if headSHA == baseSHA {
		validation(w, map[string]any{"resource": "PullRequest", "code": "custom", "message": "No commits between " + in.Base + " and " + head})
		return
	}
	i := s.newItem(rp, title, body)
	i.nodeID = "PR_kwDO" + strings.TrimPrefix(i.nodeID, "I_kwDO")
	i.pr = &pull{head: head, headSHA: headSHA, base: in.Base, baseSHA: baseSHA, draft: in.Draft}
	s.nodes[i.nodeID] = i
	w.Header().Set("Location", s.apiURL(rp, "pulls/"+strconv.Itoa(i.number)))
	writeJSON(w, http.StatusCreated, s.pullJSON(rp, i))
}

// listPulls lists pull requests as GitHub does: state open unless asked
// (open, closed or all); head as "user:ref-name" (a head without the user
// is ignored, as GitHub ignores it: every pull request is listed); base;
// sort created (the default), updated, popularity (comments) or
// long-running (by age here), desc by default when sorting by created and
// asc otherwise; paginated, each pull request as pull-request-simple.
func (s *Server) listPulls(w http.ResponseWriter, r *http.Request, rp *repo) {
	q := r.URL.Query()
	state, sortBy, dir := q.Get("state"), q.Get("sort"), q.Get("direction")
	if state == "" {
		state = "open"
	}
	if sortBy == "" {
		sortBy = "created"
	}
	if dir == "" {
		dir = "asc"
		if sortBy == "created" {
			dir = "desc"
		}
	}
	for _, c := range []struct {
		field, value string
		allowed      []string
	}{{"state", state, []string{"open", "closed", "all"}}, {"sort", sortBy, []string{"created", "updated", "popularity", "long-running"}},
		{"direction", dir, []string{"asc", "desc"}}} {
		if !slices.Contains(c.allowed, c.value) {
			validation(w, map[string]any{"resource": "PullRequest", "code": "invalid", "field": c.field, "value": c.value})
			return
		}
	}
	headOwner, headRef, byHead := strings.Cut(q.Get("head"), ":")
	base := q.Get("base")
	var ps []*item
	for _, i := range rp.items {
		if i.pr == nil || state != "all" && i.state != state || base != "" && i.pr.base != base ||
			byHead && (!strings.EqualFold(headOwner, rp.owner) || i.pr.head != headRef) {
			continue
		}
		ps = append(ps, i)
	}
	slices.SortStableFunc(ps, func(a, b *item) int {
		var c int
		switch sortBy {
		case "updated":
			c = a.updated.Compare(b.updated)
		case "popularity":
			c = len(a.comments) - len(b.comments)
		default:
			c = a.created.Compare(b.created)
		}
		if c == 0 {
			c = a.number - b.number
		}
		if dir == "desc" {
			c = -c
		}
		return c
	})
	lo, hi := s.page(w, r, len(ps))
	out := []any{}
	for _, i := range ps[lo:hi] {
		out = append(out, s.pullSimpleJSON(rp, i))
	}
	writeJSON(w, http.StatusOK, out)
}

// pullNumber finds the pull request of the path, or answers 404 (an issue
// is not a pull request).
func (s *Server) pullNumber(w http.ResponseWriter, r *http.Request, rp *repo) *item {
	i := s.itemOf(r, rp)
	if i == nil || i.pr == nil {
		notFound(w)
		return nil
	}
	return i
}

func (s *Server) itemOf(r *http.Request, rp *repo) *item {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || n < 1 || n > len(rp.items) {
		return nil
	}
	return rp.items[n-1]
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request, rp *repo) {
	if i := s.pullNumber(w, r, rp); i != nil {
		writeJSON(w, http.StatusOK, s.pullJSON(rp, i))
	}
}

func (s *Server) updatePull(w http.ResponseWriter, r *http.Request, rp *repo) {
	i := s.pullNumber(w, r, rp)
	if i == nil {
		return
	}
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if in.Title != nil && (*in.Title == "" || utf8.RuneCountInString(*in.Title) > maxTitle) {
		validation(w, map[string]any{"resource": "PullRequest", "code": "invalid", "field": "title"})
		return
	}
	if in.Body != nil && utf8.RuneCountInString(*in.Body) > maxBody {
		validation(w, map[string]any{"resource": "PullRequest", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"})
		return
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		validation(w, map[string]any{"resource": "PullRequest", "code": "invalid", "field": "state"})
		return
	}
	if in.State != nil && *in.State == "open" && i.pr.merged {
		validation(w, map[string]any{"resource": "PullRequest", "code": "custom", "field": "state", "message": "state cannot be changed. The pull request has been merged."})
		return
	}
	if in.Base != nil {
		sha, ok := s.branch(rp, *in.Base)
		if !ok || i.state != "open" {
			validation(w, map[string]any{"resource": "PullRequest", "code": "invalid", "field": "base"})
			return
		}
		i.pr.base, i.pr.baseSHA = *in.Base, sha
	}
	t := now()
	if in.Title != nil {
		i.title = *in.Title
	}
	if in.Body != nil {
		i.body = *in.Body
	}
	if in.State != nil && *in.State != i.state {
		i.state = *in.State
		if i.state == "closed" {
			i.closed = &t
		} else {
			i.closed = nil
		}
	}
	i.updated = t
	writeJSON(w, http.StatusOK, s.pullJSON(rp, i))
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, rp *repo) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			validation(w, map[string]any{"resource": "Issue", "code": "invalid", "field": "since"})
			return
		}
		since = t
	}
	var is []*item
	for _, i := range rp.items {
		if state != "all" && i.state != state || i.updated.Before(since) {
			continue
		}
		if !slices.ContainsFunc(want, func(l string) bool {
			return !slices.ContainsFunc(i.labels, func(h string) bool { return strings.EqualFold(h, strings.TrimSpace(l)) })
		}) {
			is = append(is, i)
		}
	}
	sortBy, dir := q.Get("sort"), q.Get("direction")
	slices.SortStableFunc(is, func(a, b *item) int {
		var c int
		switch sortBy {
		case "updated":
			c = a.updated.Compare(b.updated)
		case "comments":
			c = len(a.comments) - len(b.comments)
		default:
			c = a.created.Compare(b.created)
		}
		if c == 0 {
			c = a.number - b.number
		}
		if dir != "asc" {
			c = -c
		}
		return c
	})
	lo, hi := s.page(w, r, len(is))
	out := []any{}
	for _, i := range is[lo:hi] {
		out = append(out, s.issueJSON(rp, i))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) addLabelsTo(w http.ResponseWriter, r *http.Request, rp *repo) {
	i := s.itemOf(r, rp)
	if i == nil {
		notFound(w)
		return
	}
	// {"labels": ["a", "b"]}, or the bare list GitHub also takes.
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var in struct {
		Labels []string `json:"labels"`
	}
	if err == nil {
		if err = json.Unmarshal(data, &in); err != nil {
			err = json.Unmarshal(data, &in.Labels)
		}
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("Problems parsing JSON", docs, http.StatusBadRequest))
		return
	}
	if len(in.Labels) == 0 {
		validation(w, map[string]any{"resource": "Label", "code": "missing_field", "field": "labels"})
		return
	}
	s.addLabels(rp, i, in.Labels)
	out := []any{}
	for _, n := range i.labels {
		out = append(out, s.labelJSON(rp, rp.labels[strings.ToLower(n)]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request, rp *repo) {
	i := s.itemOf(r, rp)
	if i == nil {
		notFound(w)
		return
	}
	var in struct {
		Body *string `json:"body"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	switch {
	case deref(in.Body) == "":
		validation(w, map[string]any{"resource": "IssueComment", "code": "missing_field", "field": "body"})
		return
	case utf8.RuneCountInString(*in.Body) > maxBody:
		validation(w, map[string]any{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"})
		return
	}
	t := now()
	c := &comment{id: s.id(), body: *in.Body, created: t, updated: t}
	i.comments = append(i.comments, c)
	i.updated = t
	w.Header().Set("Location", s.apiURL(rp, "issues/comments/"+strconv.FormatInt(c.id, 10)))
	writeJSON(w, http.StatusCreated, s.commentJSON(rp, i, c))
}

// sha reads the {ref} of a path: a commit, or a branch's head.
func (s *Server) sha(r *http.Request, rp *repo) string {
	ref := r.PathValue("ref")
	if sha, ok := s.branch(rp, ref); ok {
		return sha
	}
	return ref
}

// listStatuses lists a commit's statuses, newest first.
func (s *Server) listStatuses(w http.ResponseWriter, r *http.Request, rp *repo) {
	sha := s.sha(r, rp)
	var sts []*status
	for _, st := range slices.Backward(rp.statuses) {
		if st.sha == sha {
			sts = append(sts, st)
		}
	}
	lo, hi := s.page(w, r, len(sts))
	out := []any{}
	for _, st := range sts[lo:hi] {
		out = append(out, s.statusJSON(rp, st))
	}
	writeJSON(w, http.StatusOK, out)
}

// combinedStatus answers the newest status of each context and their
// combined state (pending without any, as GitHub says).
func (s *Server) combinedStatus(w http.ResponseWriter, r *http.Request, rp *repo) {
	sha := s.sha(r, rp)
	var latest []*status
	seen := map[string]bool{}
	for _, st := range slices.Backward(rp.statuses) {
		if st.sha == sha && !seen[st.context] {
			seen[st.context] = true
			latest = append(latest, st)
		}
	}
	state := "success"
	if len(latest) == 0 {
		state = "pending"
	}
	for _, st := range latest {
		if st.state == "failure" || st.state == "error" {
			state = "failure"
			break
		}
		if st.state == "pending" {
			state = "pending"
		}
	}
	lo, hi := s.page(w, r, len(latest))
	out := []any{}
	for _, st := range latest[lo:hi] {
		out = append(out, s.statusJSON(rp, st))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"state":       state,
		"statuses":    out,
		"sha":         sha,
		"total_count": len(latest),
		"repository":  s.repoJSON(rp),
		"commit_url":  s.apiURL(rp, "commits/"+sha),
		"url":         s.apiURL(rp, "commits/"+sha+"/status"),
	})
}

// listCheckRuns lists a commit's check runs: by default (filter=latest)
// the newest of each name.
func (s *Server) listCheckRuns(w http.ResponseWriter, r *http.Request, rp *repo) {
	sha := s.sha(r, rp)
	q := r.URL.Query()
	all := q.Get("filter") == "all"
	var runs []*checkRun
	seen := map[string]bool{}
	for _, c := range slices.Backward(rp.runs) {
		if c.sha != sha || !all && seen[c.name] || q.Has("check_name") && c.name != q.Get("check_name") || q.Has("status") && c.status != q.Get("status") {
			continue
		}
		seen[c.name] = true
		runs = append(runs, c)
	}
	lo, hi := s.page(w, r, len(runs))
	out := []any{}
	for _, c := range runs[lo:hi] {
		out = append(out, s.checkRunJSON(rp, c))
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": out})
}

func (s *Server) createHook(w http.ResponseWriter, r *http.Request, rp *repo) {
	var in struct {
		Name   *string  `json:"name"`
		Active *bool    `json:"active"`
		Events []string `json:"events"`
		Config struct {
			URL         string `json:"url"`
			ContentType string `json:"content_type"`
			Secret      string `json:"secret"`
		} `json:"config"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if in.Name != nil && *in.Name != "web" {
		validation(w, map[string]any{"resource": "Hook", "code": "custom", "field": "name", "message": "Name must be \"web\""})
		return
	}
	if in.Config.URL == "" {
		validation(w, map[string]any{"resource": "Hook", "code": "custom", "message": "Config must contain URL for webhooks"})
		return
	}
	for _, h := range rp.hooks {
		if h.url == in.Config.URL {
			validation(w, map[string]any{"resource": "Hook", "code": "custom", "message": "Hook already exists on this repository"})
			return
		}
	}
	if len(in.Events) == 0 {
		in.Events = []string{"push"}
	}
	for _, e := range in.Events {
		if !slices.Contains(hookEvents, e) {
			validation(w, map[string]any{"resource": "Hook", "code": "invalid", "field": "events", "message": e + " is not a valid event name"})
			return
		}
	}
	if in.Config.ContentType == "" {
		in.Config.ContentType = "form"
	}
	t := now()
	h := &hook{id: s.id(), url: in.Config.URL, secret: in.Config.Secret, content: in.Config.ContentType, events: in.Events,
		active: in.Active == nil || *in.Active, created: t, updated: t}
	rp.hooks = append(rp.hooks, h)
	w.Header().Set("Location", s.apiURL(rp, "hooks/"+strconv.FormatInt(h.id, 10)))
	writeJSON(w, http.StatusCreated, s.hookJSON(rp, h))
}

// pullRequestID reads a pullRequestId written into a GraphQL query.
var pullRequestID = regexp.MustCompile(`pullRequestId:\s*"([^"]+)"`)

// graphQL answers the two mutations that change a pull request's draft
// state, as GitHub's GraphQL API does (errors: 200 and an errors list).
func (s *Server) graphQL(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	field, draft := "", false
	switch {
	case strings.Contains(in.Query, "markPullRequestReadyForReview"):
		field = "markPullRequestReadyForReview"
	case strings.Contains(in.Query, "convertPullRequestToDraft"):
		field, draft = "convertPullRequestToDraft", true
	default:
		writeJSON(w, http.StatusOK, map[string]any{"errors": []any{map[string]any{
			"message": "githubtest answers only markPullRequestReadyForReview and convertPullRequestToDraft"}}})
		return
	}
	// The id: variables {"input": {"pullRequestId": …}}, or in the query.
	id := ""
	if input, ok := in.Variables["input"].(map[string]any); ok {
		id, _ = input["pullRequestId"].(string)
	}
	if m := pullRequestID.FindStringSubmatch(in.Query); id == "" && m != nil {
		id = m[1]
	}
	gqlError := func(typ, msg string) {
		writeJSON(w, http.StatusOK, map[string]any{
			"data":   map[string]any{field: nil},
			"errors": []any{map[string]any{"type": typ, "path": []string{field}, "locations": []any{map[string]int{"line": 1, "column": 1}}, "message": msg}},
		})
	}
	i := s.nodes[id]
	if i == nil {
		gqlError("NOT_FOUND", fmt.Sprintf("Could not resolve to a node with the global id of '%s'.", id))
		return
	}
	if i.state != "open" {
		gqlError("UNPROCESSABLE", "Pull request is closed")
		return
	}
	i.pr.draft, i.updated = draft, now()
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{field: map[string]any{
		"pullRequest": map[string]any{"id": i.nodeID, "number": i.number, "isDraft": i.pr.draft}}}})
}

// page cuts a list of n to the page asked (per_page: 30 by default, at
// most 100; page from 1) and sets GitHub's Link header: prev, next, last,
// first, each the request's own query with another page.
func (s *Server) page(w http.ResponseWriter, r *http.Request, n int) (lo, hi int) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per < 1 {
		per = 30
	}
	per = min(per, 100)
	pg, err := strconv.Atoi(q.Get("page"))
	if err != nil || pg < 1 {
		pg = 1
	}
	last := max(1, (n+per-1)/per)
	var links []string
	link := func(p int, rel string) {
		q.Set("page", strconv.Itoa(p))
		links = append(links, fmt.Sprintf(`<%s%s?%s>; rel="%s"`, s.srv.URL, r.URL.Path, q.Encode(), rel))
	}
	if pg > 1 {
		link(pg-1, "prev")
	}
	if pg < last {
		link(pg+1, "next")
		link(last, "last")
	}
	if pg > 1 {
		link(1, "first")
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo = min((pg-1)*per, n)
	return lo, min(lo+per, n)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("Problems parsing JSON", docs, http.StatusBadRequest))
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// errorBody is GitHub's error shape.
func errorBody(msg, doc string, status int) map[string]any {
	return map[string]any{"message": msg, "documentation_url": doc, "status": strconv.Itoa(status)}
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, errorBody("Not Found", docs, http.StatusNotFound))
}

// validation answers 422 Validation Failed with GitHub's errors list.
func validation(w http.ResponseWriter, errs ...map[string]any) {
	b := errorBody("Validation Failed", docs, http.StatusUnprocessableEntity)
	b["errors"] = errs
	writeJSON(w, http.StatusUnprocessableEntity, b)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
