package giteatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxRequest bounds a request's body.
const maxRequest = 10 << 20

// routes are the API operations the server speaks. A handler runs with
// s.mu held, but createPull, which takes it itself to ask Branches
// without it.
func (s *Server) routes() {
	route := func(pattern string, needsToken, lock bool, fn func(w http.ResponseWriter, r *http.Request, signed bool)) {
		s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			signed := s.signedIn(r)
			if needsToken && !signed {
				s.apiError(w, http.StatusUnauthorized, "token is required")
				return
			}
			if lock {
				s.mu.Lock()
				defer s.mu.Unlock()
			}
			fn(w, r, signed)
		})
	}
	handle := func(pattern string, needsToken bool, fn func(w http.ResponseWriter, r *http.Request, signed bool)) {
		route(pattern, needsToken, true, fn)
	}
	handle("GET /api/v1/user/repos", true, s.listMyRepos)
	handle("GET /api/v1/repos/{owner}/{repo}", false, s.getRepo)
	handle("GET /api/v1/repos/{owner}/{repo}/pulls", false, s.listPulls)
	route("POST /api/v1/repos/{owner}/{repo}/pulls", true, false, s.createPull)
	handle("GET /api/v1/repos/{owner}/{repo}/pulls/{index}", false, s.getPull)
	handle("PATCH /api/v1/repos/{owner}/{repo}/pulls/{index}", true, s.editPull)
	handle("GET /api/v1/repos/{owner}/{repo}/labels", false, s.listLabels)
	handle("POST /api/v1/repos/{owner}/{repo}/labels", true, s.createLabel)
	handle("GET /api/v1/repos/{owner}/{repo}/issues", false, s.listIssues)
	handle("POST /api/v1/repos/{owner}/{repo}/issues/{index}/labels", true, s.addIssueLabels)
	handle("POST /api/v1/repos/{owner}/{repo}/issues/{index}/comments", true, s.createComment)
	handle("GET /api/v1/repos/{owner}/{repo}/commits/{ref}/statuses", false, s.listStatuses)
	handle("POST /api/v1/repos/{owner}/{repo}/hooks", true, s.createHook)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.notFound(w) })
}

// serve logs the request, answers a failure FailNext set, refuses a wrong
// token, then routes.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	api := strings.HasPrefix(r.URL.Path, "/api/")
	s.mu.Lock()
	s.log = append(s.log, r.Method+" "+r.URL.RequestURI())
	f := s.fail
	if api {
		s.fail = nil
	}
	s.mu.Unlock()
	switch {
	case !api:
		http.NotFound(w, r) // Gitea's web pages are not spoken here
	case f != nil:
		s.failWith(w, f)
	case r.Header.Get("Authorization") != "" && !s.signedIn(r):
		s.apiError(w, http.StatusUnauthorized, "invalid username, password or token")
	default:
		s.mux.ServeHTTP(w, r)
	}
}

// signedIn reports whether the request carries the server's token, as
// "token <t>" or "Bearer <t>".
func (s *Server) signedIn(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && (strings.EqualFold(scheme, "token") || strings.EqualFold(scheme, "bearer")) && strings.TrimSpace(tok) == s.token
}

func (s *Server) failWith(w http.ResponseWriter, f *failure) {
	switch {
	case f.status == http.StatusNotFound:
		s.notFound(w)
	case f.rateLimited:
		w.Header().Set("Retry-After", "60")
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "0")
		s.apiError(w, f.status, "API rate limit exceeded")
	case f.status == http.StatusUnauthorized:
		s.apiError(w, f.status, "invalid username, password or token")
	case f.status == http.StatusForbidden:
		s.apiError(w, f.status, "token does not have at least one of required scope(s), required=[read:repository], token scope=read:user")
	case f.status >= 500:
		s.apiError(w, f.status, "") // Gitea hides an internal error's message
	default:
		s.apiError(w, f.status, http.StatusText(f.status))
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.t.Errorf("giteatest: %v", err)
	}
}

func (s *Server) apiError(w http.ResponseWriter, status int, msg string) {
	s.writeJSON(w, status, apiError{Message: msg, URL: s.srv.URL + "/api/swagger"})
}

func (s *Server) notFound(w http.ResponseWriter) {
	s.writeJSON(w, http.StatusNotFound, map[string]any{"errors": nil, "message": "not found", "url": s.srv.URL + "/api/swagger"})
}

// decode reads a JSON body into v, answering 422 as Gitea's binding does
// when it cannot.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequest)).Decode(v); err != nil {
		s.apiError(w, http.StatusUnprocessableEntity, "[]: DeserializationError: "+err.Error())
		return false
	}
	return true
}

// required answers Gitea's 422 for the first empty field of fields
// (name, value pairs).
func (s *Server) required(w http.ResponseWriter, fields ...string) bool {
	for i := 0; i+1 < len(fields); i += 2 {
		if strings.TrimSpace(fields[i+1]) == "" {
			s.apiError(w, http.StatusUnprocessableEntity, "["+fields[i]+"]: Required")
			return false
		}
	}
	return true
}

// repoFor is the request's repository, or Gitea's 404 (a private one
// without a token is not found either).
func (s *Server) repoFor(w http.ResponseWriter, r *http.Request, signed bool) *repo {
	rp := s.repos[strings.ToLower(r.PathValue("owner")+"/"+r.PathValue("repo"))]
	if rp == nil || rp.private && !signed {
		s.notFound(w)
		return nil
	}
	return rp
}

// issueFor is the request's issue or pull request ({index}), or a 404.
func (s *Server) issueFor(w http.ResponseWriter, r *http.Request, rp *repo, pullOnly bool) *issue {
	n, _ := strconv.ParseInt(r.PathValue("index"), 10, 64)
	i := rp.issue(n)
	if i == nil || pullOnly && i.pull == nil {
		s.notFound(w)
		return nil
	}
	return i
}

// paginate answers the bounds of the page of n items the request asks
// for (page from 1, limit at most maxPage), setting X-Total-Count and,
// with links, Gitea's Link header (next, last, first, prev).
func (s *Server) paginate(w http.ResponseWriter, r *http.Request, n int, links bool) (from, to int) {
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	limit, _ := strconv.Atoi(q.Get("limit"))
	switch {
	case limit <= 0:
		limit = defaultPage
	case limit > maxPage:
		limit = maxPage
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(n))
	expose := []string{"X-Total-Count"}
	if links {
		// As Gitea's paginator: the current page at most the last.
		pages := max((n+limit-1)/limit, 1)
		cur := min(page, pages)
		var ls []string
		link := func(p int, rel string) {
			u := *r.URL
			v := u.Query()
			v.Set("page", strconv.Itoa(p))
			u.RawQuery = v.Encode()
			ls = append(ls, fmt.Sprintf("<%s%s>; rel=\"%s\"", s.srv.URL, u.RequestURI(), rel))
		}
		if n > cur*limit {
			link(cur+1, "next")
		}
		if !(n == 0 || n > (cur-1)*limit && n <= cur*limit) {
			link(pages, "last")
		}
		if cur != 1 {
			link(1, "first")
		}
		if cur > 1 {
			link(cur-1, "prev")
		}
		if len(ls) > 0 {
			w.Header().Set("Link", strings.Join(ls, ","))
			expose = append([]string{"Link"}, expose...)
		}
	}
	w.Header().Set("Access-Control-Expose-Headers", strings.Join(expose, ", "))
	from = min((page-1)*limit, n)
	return from, min(from+limit, n)
}

func (s *Server) listMyRepos(w http.ResponseWriter, r *http.Request, signed bool) {
	rs := make([]*repo, 0, len(s.repos))
	for _, rp := range s.repos {
		rs = append(rs, rp)
	}
	slices.SortFunc(rs, func(a, b *repo) int { return cmp.Compare(a.id, b.id) })
	from, to := s.paginate(w, r, len(rs), true)
	out := []*apiRepository{}
	for _, rp := range rs[from:to] {
		out = append(out, s.repoJSON(rp))
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request, signed bool) {
	if rp := s.repoFor(w, r, signed); rp != nil {
		s.writeJSON(w, http.StatusOK, s.repoJSON(rp))
	}
}

// resolve is a branch's head commit, asking Branches for one the server
// lacks (without s.mu: Branches may call back).
func (s *Server) resolve(fullName, branch string) (string, bool) {
	s.mu.Lock()
	rp := s.repos[strings.ToLower(fullName)]
	fn := s.branchFn
	var sha string
	ok := false
	if rp != nil {
		fullName = rp.owner + "/" + rp.name
		sha, ok = rp.branches[branch]
	}
	s.mu.Unlock()
	if rp == nil || ok || fn == nil {
		return sha, ok
	}
	if sha, ok = fn(fullName, branch); ok {
		s.mu.Lock()
		if _, had := rp.branches[branch]; !had {
			rp.branches[branch] = sha
		}
		s.mu.Unlock()
	}
	return sha, ok
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, signed bool) {
	var in struct {
		Head   string  `json:"head"`
		Base   string  `json:"base"`
		Title  string  `json:"title"`
		Body   string  `json:"body"`
		Labels []int64 `json:"labels"`
	}
	if !s.decode(w, r, &in) || !s.required(w, "Head", in.Head, "Base", in.Base, "Title", in.Title) {
		return
	}
	if in.Head == in.Base {
		s.apiError(w, http.StatusUnprocessableEntity, "Invalid PullRequest: There are no changes between the head and the base")
		return
	}
	// head may be owner:branch; another owner's fork is not spoken here.
	head := in.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, r.PathValue("owner")) {
			s.notFound(w)
			return
		}
		head = branch
	}
	full := r.PathValue("owner") + "/" + r.PathValue("repo")
	headSHA, headOK := s.resolve(full, head)
	_, baseOK := s.resolve(full, in.Base)

	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	if !headOK || !baseOK {
		s.notFound(w) // Gitea's parseCompareInfo: a ref it cannot find
		return
	}
	for _, i := range rp.issues {
		if p := i.pull; p != nil && !i.closed && p.head == head && p.base == in.Base {
			s.apiError(w, http.StatusConflict, fmt.Sprintf("pull request already exists for these targets [id: %d, issue_id: %d, head_repo_id: %d, base_repo_id: %d, head_branch: %s, base_branch: %s]",
				i.id, i.number, rp.id, rp.id, head, in.Base))
			return
		}
	}
	now := s.now()
	i := &issue{id: s.next(), number: int64(len(rp.issues) + 1), title: in.Title, body: in.Body, created: now, updated: now,
		labels: knownLabels(rp, nil, in.Labels), pull: &pull{head: head, base: in.Base, headSHA: headSHA}}
	rp.issues = append(rp.issues, i)
	s.writeJSON(w, http.StatusCreated, s.pullJSON(rp, i))
}

// knownLabels adds to have the ids of ids that are the repository's
// labels (Gitea ignores the others).
func knownLabels(rp *repo, have, ids []int64) []int64 {
	for _, id := range ids {
		if rp.label(id) != nil && !slices.Contains(have, id) {
			have = append(have, id)
		}
	}
	return have
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	if i := s.issueFor(w, r, rp, true); i != nil {
		s.writeJSON(w, http.StatusOK, s.pullJSON(rp, i))
	}
}

// listPulls lists pull requests as Gitea does: state open or closed
// filters, any other (none, all) lists every one (Gitea applies no
// default, whatever its documentation says); base_branch and labels (any
// of the ids) filter; sort oldest, recentupdate, leastupdate,
// recentclose, mostcomment or leastcomment, else newest first; paginated
// with a Link header.
func (s *Server) listPulls(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	q := r.URL.Query()
	st, base := q.Get("state"), q.Get("base_branch")
	var labels []int64
	for _, v := range q["labels"] {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			labels = append(labels, id)
		} else {
			s.apiError(w, http.StatusInternalServerError, "") // Gitea's StringsToInt64s failing
			return
		}
	}
	var ps []*issue
	for _, i := range rp.issues {
		if i.pull == nil || (st == "open" || st == "closed") && state(i.closed) != st || base != "" && i.pull.base != base ||
			len(labels) > 0 && !slices.ContainsFunc(labels, func(id int64) bool { return slices.Contains(i.labels, id) }) {
			continue
		}
		ps = append(ps, i)
	}
	closedAt := func(i *issue) int64 {
		if i.closedAt == nil {
			return 0
		}
		return i.closedAt.Unix()
	}
	slices.SortStableFunc(ps, func(a, b *issue) int {
		switch q.Get("sort") {
		case "oldest":
			return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.id, b.id))
		case "recentupdate":
			return cmp.Or(b.updated.Compare(a.updated), b.created.Compare(a.created), cmp.Compare(b.id, a.id))
		case "leastupdate":
			return cmp.Or(a.updated.Compare(b.updated), a.created.Compare(b.created), cmp.Compare(a.id, b.id))
		case "recentclose":
			return cmp.Or(cmp.Compare(closedAt(b), closedAt(a)), b.created.Compare(a.created), cmp.Compare(b.id, a.id))
		case "mostcomment":
			return cmp.Or(cmp.Compare(len(b.comments), len(a.comments)), b.created.Compare(a.created), cmp.Compare(b.id, a.id))
		case "leastcomment":
			return cmp.Or(cmp.Compare(len(a.comments), len(b.comments)), b.created.Compare(a.created), cmp.Compare(b.id, a.id))
		}
		return cmp.Or(b.created.Compare(a.created), cmp.Compare(b.id, a.id))
	})
	from, to := s.paginate(w, r, len(ps), true)
	out := []*apiPullRequest{}
	for _, i := range ps[from:to] {
		out = append(out, s.pullJSON(rp, i))
	}
	s.writeJSON(w, http.StatusOK, out)
}

// editPull edits as Gitea does, in its order: title, body, labels (which
// replace the pull request's), then state; and answers 201.
func (s *Server) editPull(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	i := s.issueFor(w, r, rp, true)
	if i == nil {
		return
	}
	var in struct {
		Title  string   `json:"title"`
		Body   *string  `json:"body"`
		Labels *[]int64 `json:"labels"`
		State  *string  `json:"state"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	if in.Title != "" {
		i.title = in.Title
	}
	if in.Body != nil {
		i.body = *in.Body
	}
	if in.Labels != nil {
		i.labels = knownLabels(rp, []int64{}, *in.Labels)
	}
	i.updated = s.now()
	if in.State != nil {
		if i.pull.merged {
			s.apiError(w, http.StatusPreconditionFailed, "cannot change state of this pull request, it was already merged")
			return
		}
		switch *in.State {
		case "closed":
			s.close(i)
		case "open":
			i.closed, i.closedAt = false, nil
		}
	}
	s.writeJSON(w, http.StatusCreated, s.pullJSON(rp, i))
}

func (s *Server) listLabels(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	ls := slices.Clone(rp.labels)
	slices.SortStableFunc(ls, func(a, b *label) int { return cmp.Compare(a.name, b.name) })
	from, to := s.paginate(w, r, len(ls), false) // Gitea's label list sends no Link
	out := []*apiLabel{}
	for _, l := range ls[from:to] {
		out = append(out, s.labelJSON(rp, l))
	}
	s.writeJSON(w, http.StatusOK, out)
}

var colorPattern = regexp.MustCompile(`^#([0-9a-f]{6}|[0-9a-f]{3})$`)

// createLabel makes a label; Gitea does not refuse a second label of a
// name.
func (s *Server) createLabel(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	var in struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
		Exclusive   bool   `json:"exclusive"`
		IsArchived  bool   `json:"is_archived"`
	}
	if !s.decode(w, r, &in) || !s.required(w, "Name", in.Name, "Color", in.Color) {
		return
	}
	color := strings.ToLower(strings.TrimSpace(in.Color))
	if len(color) == 6 || len(color) == 3 {
		color = "#" + color
	}
	if !colorPattern.MatchString(color) {
		s.apiError(w, http.StatusUnprocessableEntity, "invalid color format: "+in.Color)
		return
	}
	if len(color) == 4 {
		color = "#" + strings.Repeat(color[1:2], 2) + strings.Repeat(color[2:3], 2) + strings.Repeat(color[3:4], 2)
	}
	l := &label{id: s.next(), name: strings.TrimSpace(in.Name), color: color, description: in.Description, exclusive: in.Exclusive, archive: in.IsArchived}
	rp.labels = append(rp.labels, l)
	s.writeJSON(w, http.StatusCreated, s.labelJSON(rp, l))
}

// addIssueLabels adds labels, by id or (as Gitea 1.21+ takes too) by
// name, and answers all the issue's.
func (s *Server) addIssueLabels(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	i := s.issueFor(w, r, rp, false)
	if i == nil {
		return
	}
	var in struct {
		Labels []any `json:"labels"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	var ids []int64
	for _, v := range in.Labels {
		switch v := v.(type) {
		case float64:
			ids = append(ids, int64(v))
		case string:
			for _, l := range rp.labels {
				if l.name == v {
					ids = append(ids, l.id)
					break
				}
			}
		}
	}
	i.labels = knownLabels(rp, i.labels, ids)
	i.updated = s.now()
	s.writeJSON(w, http.StatusOK, s.labelsJSON(rp, i.labels))
}

// listIssues lists newest first, as Gitea does; state=open unless asked,
// pull requests too unless type=issues.
func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	q := r.URL.Query()
	st, typ := q.Get("state"), q.Get("type")
	if st == "" {
		st = "open"
	}
	var is []*issue
	for _, i := range slices.Backward(rp.issues) {
		if st != "all" && state(i.closed) != st || typ == "issues" && i.pull != nil || typ == "pulls" && i.pull == nil {
			continue
		}
		is = append(is, i)
	}
	from, to := s.paginate(w, r, len(is), true)
	out := []*apiIssue{}
	for _, i := range is[from:to] {
		out = append(out, s.issueJSON(rp, i))
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	i := s.issueFor(w, r, rp, false)
	if i == nil {
		return
	}
	var in struct {
		Body string `json:"body"`
	}
	if !s.decode(w, r, &in) || !s.required(w, "Body", in.Body) {
		return
	}
	c := &comment{id: s.next(), body: in.Body, created: s.now()}
	i.comments = append(i.comments, c)
	i.updated = c.created
	s.writeJSON(w, http.StatusCreated, s.commentJSON(rp, i, c))
}

// listStatuses lists a commit's statuses (ref: a commit, or a branch's
// head), every one posted, newest first.
func (s *Server) listStatuses(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	sha := r.PathValue("ref")
	if head, ok := rp.branches[sha]; ok {
		sha = head
	}
	var ss []*status
	for _, st := range slices.Backward(rp.statuses) {
		if st.sha == sha {
			ss = append(ss, st)
		}
	}
	from, to := s.paginate(w, r, len(ss), true)
	out := []*apiCommitStatus{}
	for _, st := range ss[from:to] {
		out = append(out, s.statusJSON(rp, st))
	}
	s.writeJSON(w, http.StatusOK, out)
}

// hookTypes are the webhook types Gitea takes; Forgejo takes its own too.
var hookTypes = []string{"dingtalk", "discord", "gitea", "gogs", "msteams", "slack", "telegram", "feishu", "matrix", "wechatwork", "packagist"}

func (s *Server) createHook(w http.ResponseWriter, r *http.Request, signed bool) {
	rp := s.repoFor(w, r, signed)
	if rp == nil {
		return
	}
	var in struct {
		Type                string            `json:"type"`
		Config              map[string]string `json:"config"`
		Events              []string          `json:"events"`
		BranchFilter        string            `json:"branch_filter"`
		AuthorizationHeader string            `json:"authorization_header"`
		Active              bool              `json:"active"`
	}
	if !s.decode(w, r, &in) || !s.required(w, "Type", in.Type) {
		return
	}
	if in.Config == nil {
		s.apiError(w, http.StatusUnprocessableEntity, "[Config]: Required")
		return
	}
	if !slices.Contains(hookTypes, in.Type) && !(s.kind == "forgejo" && in.Type == "forgejo") {
		s.apiError(w, http.StatusUnprocessableEntity, "Invalid hook type: "+in.Type)
		return
	}
	for _, name := range []string{"url", "content_type"} {
		if _, ok := in.Config[name]; !ok {
			s.apiError(w, http.StatusUnprocessableEntity, "Missing config option: "+name)
			return
		}
	}
	if ct := in.Config["content_type"]; ct != "json" && ct != "form" {
		s.apiError(w, http.StatusUnprocessableEntity, "Invalid content type")
		return
	}
	if len(in.Events) == 0 {
		in.Events = []string{"push"}
	}
	h := &hook{id: s.next(), typ: in.Type, url: in.Config["url"], secret: in.Config["secret"], contentType: in.Config["content_type"],
		events: in.Events, branchFilter: in.BranchFilter, active: in.Active, created: s.now()}
	rp.hooks = append(rp.hooks, h)
	s.writeJSON(w, http.StatusCreated, s.hookJSON(h))
}
