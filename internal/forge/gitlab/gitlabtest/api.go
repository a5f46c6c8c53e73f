package gitlabtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxRequestBody bounds a request's body (GitLab's own bound is larger;
// a test sends little).
const maxRequestBody = 4 << 20

// ServeHTTP answers the API, one request at a time.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
	if len(s.fails) > 0 {
		f := s.fails[0]
		s.fails = s.fails[1:]
		s.fail(w, f)
		return
	}
	// GitLab.com's rate limit headers, on every answer (a limit never hit
	// here but through FailNext).
	reset := time.Now().Add(time.Minute).Truncate(time.Minute)
	w.Header().Set("RateLimit-Limit", "2000")
	w.Header().Set("RateLimit-Observed", strconv.Itoa(len(s.requests)%2000))
	w.Header().Set("RateLimit-Remaining", strconv.Itoa(2000-len(s.requests)%2000))
	w.Header().Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	w.Header().Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))

	// Route on the escaped path: a project's path is one segment,
	// "acme%2Fsub%2Fapp" (the Go client escapes dots too).
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/v4/")
	if !ok {
		grapeError(w, http.StatusNotFound, "404 Not Found")
		return
	}
	var seg []string
	for _, e := range strings.Split(rest, "/") {
		u, err := url.PathUnescape(e)
		if err != nil {
			grapeError(w, http.StatusBadRequest, "400 Bad Request")
			return
		}
		seg = append(seg, u)
	}
	anon, ok := s.auth(r)
	if !ok {
		message(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	if anon && r.Method != http.MethodGet {
		message(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	prm, err := readParams(r)
	if err != nil {
		grapeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if seg[0] != "projects" {
		grapeError(w, http.StatusNotFound, "404 Not Found")
		return
	}
	if len(seg) == 1 {
		s.route(w, r, map[string]func(){http.MethodGet: func() { s.listProjects(w, r, prm, anon) }})
		return
	}
	p := s.lookup(seg[1], anon)
	if p == nil {
		message(w, http.StatusNotFound, "404 Project Not Found")
		return
	}
	switch {
	case len(seg) == 2:
		s.route(w, r, map[string]func(){http.MethodGet: func() { writeJSON(w, http.StatusOK, s.projectJSON(p)) }})
	case len(seg) == 3 && seg[2] == "merge_requests":
		s.route(w, r, map[string]func(){
			http.MethodGet:  func() { s.listMRs(w, r, p, prm) },
			http.MethodPost: func() { s.createMR(w, p, prm) },
		})
	case len(seg) >= 4 && seg[2] == "merge_requests":
		iid, err := strconv.Atoi(seg[3])
		if err != nil {
			grapeError(w, http.StatusBadRequest, "merge_request_iid is invalid")
			return
		}
		if iid < 1 || iid > len(p.mrs) {
			message(w, http.StatusNotFound, "404 Not found")
			return
		}
		m := p.mrs[iid-1]
		switch {
		case len(seg) == 4:
			s.route(w, r, map[string]func(){
				http.MethodGet: func() { s.refresh(p, m); writeJSON(w, http.StatusOK, s.mrJSON(p, m)) },
				http.MethodPut: func() { s.updateMR(w, p, m, prm) },
			})
		case len(seg) == 5 && seg[4] == "notes":
			s.route(w, r, map[string]func(){http.MethodPost: func() { s.createNote(w, p, m, prm) }})
		default:
			grapeError(w, http.StatusNotFound, "404 Not Found")
		}
	case len(seg) == 6 && seg[2] == "repository" && seg[3] == "commits" && seg[5] == "statuses":
		s.route(w, r, map[string]func(){http.MethodGet: func() { s.listStatuses(w, r, p, seg[4], prm) }})
	case len(seg) == 3 && seg[2] == "issues":
		s.route(w, r, map[string]func(){http.MethodGet: func() { s.listIssues(w, r, p, prm) }})
	case len(seg) == 3 && seg[2] == "hooks":
		s.route(w, r, map[string]func(){
			http.MethodPost: func() { s.addHook(w, p, prm) },
			http.MethodGet: func() {
				var out []obj
				for _, h := range p.hooks {
					out = append(out, s.hookJSON(p, h))
				}
				s.paginate(w, r, prm, out)
			},
		})
	default:
		grapeError(w, http.StatusNotFound, "404 Not Found")
	}
}

// route runs the handler of the request's method (405 without one).
func (s *Server) route(w http.ResponseWriter, r *http.Request, by map[string]func()) {
	if h := by[r.Method]; h != nil {
		h()
		return
	}
	grapeError(w, http.StatusMethodNotAllowed, "405 Not Allowed")
}

// auth reads the token: the PRIVATE-TOKEN header, Authorization: Bearer
// (an OAuth or personal token), or the private_token / access_token
// parameter. No token is an anonymous request (ok); a wrong one is not.
func (s *Server) auth(r *http.Request) (anon, ok bool) {
	token := r.Header.Get("PRIVATE-TOKEN")
	if a, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); token == "" && found {
		token = a
	}
	token = cmp.Or(token, r.URL.Query().Get("private_token"), r.URL.Query().Get("access_token"))
	if token == "" {
		return true, true
	}
	return false, token == Token
}

// lookup finds a project by id or path (GitLab matches a path in any
// case); an anonymous request sees public projects only.
func (s *Server) lookup(id string, anon bool) *project {
	var p *project
	if n, err := strconv.Atoi(id); err == nil {
		if n >= 1 && n <= len(s.projects) {
			p = s.projects[n-1]
		}
	} else {
		p = s.byPath[strings.ToLower(id)]
	}
	if p == nil || anon && p.private {
		return nil
	}
	return p
}

// fail answers a FailNext status.
func (s *Server) fail(w http.ResponseWriter, f failure) {
	if f.limited || f.status == http.StatusTooManyRequests {
		reset := time.Now().Add(time.Minute).Truncate(time.Minute)
		h := w.Header()
		h.Set("RateLimit-Name", "throttle_authenticated_api")
		h.Set("RateLimit-Limit", "2000")
		h.Set("RateLimit-Observed", "2001")
		h.Set("RateLimit-Remaining", "0")
		h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
		h.Set("Retry-After", "60")
	}
	if f.status == http.StatusTooManyRequests {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(f.status)
		io.WriteString(w, "Retry later\n")
		return
	}
	message(w, f.status, fmt.Sprintf("%d %s", f.status, http.StatusText(f.status)))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// message answers GitLab's error body {"message": m}: a text, a list, or
// field → list.
func message(w http.ResponseWriter, status int, m any) {
	writeJSON(w, status, obj{{"message", m}})
}

// grapeError answers the API framework's error body {"error": e} (a
// missing or invalid parameter, an unknown route).
func grapeError(w http.ResponseWriter, status int, e string) {
	writeJSON(w, status, obj{{"error", e}})
}

// params are a request's parameters: its query, and its body as JSON or
// a form (GitLab takes both).
type params map[string]any

func readParams(r *http.Request) (params, error) {
	p := params{}
	for k, v := range r.URL.Query() {
		p[k] = v[len(v)-1]
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return p, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := http.MaxBytesReader(nil, r.Body, maxRequestBody)
	switch ct {
	case "application/json":
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		if len(strings.TrimSpace(string(data))) == 0 {
			return p, nil
		}
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(string(data)))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			return nil, fmt.Errorf("the request body is invalid JSON")
		}
		for k, v := range m {
			p[k] = v
		}
	case "application/x-www-form-urlencoded", "multipart/form-data":
		r.Body = body
		if err := r.ParseMultipartForm(maxRequestBody); err != nil && err != http.ErrNotMultipart {
			return nil, err
		}
		for k, v := range r.PostForm {
			p[k] = v[len(v)-1]
		}
	}
	return p, nil
}

// str is a text parameter (a number or boolean as its text).
func (p params) str(k string) (string, bool) {
	switch v := p[k].(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// boolean is a Boolean parameter: true/false, or their text (1, 0, yes,
// no as Grape takes them); ok false when absent, err when not a boolean.
func (p params) boolean(k string) (v, ok bool, err error) {
	switch x := p[k].(type) {
	case nil:
		return false, false, nil
	case bool:
		return x, true, nil
	case string:
		switch strings.ToLower(x) {
		case "true", "1", "yes", "t", "y":
			return true, true, nil
		case "false", "0", "no", "f", "n":
			return false, true, nil
		}
	}
	return false, false, fmt.Errorf("%s is invalid", k)
}

// labels is a labels parameter: comma-separated text, or a list.
func (p params) labels(k string) ([]string, bool) {
	var raw []string
	switch v := p[k].(type) {
	case string:
		raw = strings.Split(v, ",")
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				raw = append(raw, strings.Split(s, ",")...)
			}
		}
	default:
		return nil, false
	}
	var out []string
	for _, l := range raw {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, true
}

// paginate answers one page of items with GitLab's offset pagination
// headers (X-Page, X-Per-Page, X-Next-Page, X-Prev-Page, X-Total,
// X-Total-Pages, Link): page from 1, per_page 20 unless given, at most
// 100.
func (s *Server) paginate(w http.ResponseWriter, r *http.Request, prm params, items []obj) {
	page, per := 1, 20
	if v, ok := prm.str("page"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			page = n
		}
	}
	if v, ok := prm.str("per_page"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			per = min(n, 100)
		}
	}
	total := len(items)
	pages := max(1, (total+per-1)/per)
	from, to := min((page-1)*per, total), min(page*per, total)
	h := w.Header()
	link := func(n int) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		q.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf("<%s%s?%s>", s.URL, r.URL.EscapedPath(), q.Encode())
	}
	var links []string
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(per))
	h.Set("X-Total", strconv.Itoa(total))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	h.Set("X-Next-Page", "")
	h.Set("X-Prev-Page", "")
	if page > 1 && page <= pages {
		h.Set("X-Prev-Page", strconv.Itoa(page-1))
		links = append(links, link(page-1)+`; rel="prev"`)
	}
	if page < pages {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		links = append(links, link(page+1)+`; rel="next"`)
	}
	links = append(links, link(1)+`; rel="first"`, link(pages)+`; rel="last"`)
	h.Set("Link", strings.Join(links, ", "))
	out := items[from:to]
	if out == nil {
		out = []obj{}
	}
	writeJSON(w, http.StatusOK, out)
}

// sortBy orders records by one of their times (then by id), asc or desc
// (GitLab's default).
func sortBy[T any](items []T, key func(T) (time.Time, int), asc bool) {
	slices.SortStableFunc(items, func(a, b T) int {
		ta, ia := key(a)
		tb, ib := key(b)
		c := cmp.Or(ta.Compare(tb), cmp.Compare(ia, ib))
		if !asc {
			c = -c
		}
		return c
	})
}

// orderParams reads order_by (one of allowed, the first by default) and
// sort (desc by default).
func orderParams(prm params, allowed ...string) (order string, asc bool, err error) {
	order = allowed[0]
	if v, ok := prm.str("order_by"); ok {
		if !slices.Contains(allowed, v) {
			return "", false, fmt.Errorf("order_by does not have a valid value")
		}
		order = v
	}
	if v, ok := prm.str("sort"); ok {
		if v != "asc" && v != "desc" {
			return "", false, fmt.Errorf("sort does not have a valid value")
		}
		asc = v == "asc"
	}
	return order, asc, nil
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request, prm params, anon bool) {
	order, asc, err := orderParams(prm, "created_at", "id", "name", "path", "updated_at", "last_activity_at", "similarity", "star_count")
	if err != nil {
		grapeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var list []*project
	for _, p := range s.projects {
		// Every project here is the token's user's (membership=true or
		// not); an anonymous request sees the public ones.
		if !anon || !p.private {
			list = append(list, p)
		}
	}
	switch order {
	case "name", "path":
		slices.SortStableFunc(list, func(a, b *project) int {
			c := strings.Compare(a.path, b.path)
			if !asc {
				c = -c
			}
			return c
		})
	default:
		sortBy(list, func(p *project) (time.Time, int) { return p.createdAt, p.id }, asc)
	}
	out := make([]obj, 0, len(list))
	for _, p := range list {
		out = append(out, s.projectJSON(p))
	}
	s.paginate(w, r, prm, out)
}

// refresh moves an open merge request's sha to its source branch's head
// (GitLab updates it on a push).
func (s *Server) refresh(p *project, m *MergeRequest) {
	if m.State == "opened" || m.State == "locked" {
		if sha, ok := s.head(p, m.SourceBranch); ok {
			m.SHA = sha
		}
	}
}

// checkTitle refuses a title GitLab would: empty, or over 255
// characters.
func checkTitle(w http.ResponseWriter, title string) bool {
	if strings.TrimSpace(title) == "" {
		message(w, http.StatusBadRequest, obj{{"title", []string{"can't be blank"}}})
		return false
	}
	if utf8.RuneCountInString(title) > 255 {
		message(w, http.StatusBadRequest, obj{{"title", []string{"is too long (maximum is 255 characters)"}}})
		return false
	}
	return true
}

func (s *Server) createMR(w http.ResponseWriter, p *project, prm params) {
	title, hasTitle := prm.str("title")
	source, hasSource := prm.str("source_branch")
	target, hasTarget := prm.str("target_branch")
	var missing []string
	for _, m := range []struct {
		name string
		ok   bool
	}{{"title", hasTitle}, {"source_branch", hasSource}, {"target_branch", hasTarget}} {
		if !m.ok {
			missing = append(missing, m.name+" is missing")
		}
	}
	if len(missing) > 0 {
		grapeError(w, http.StatusBadRequest, strings.Join(missing, ", "))
		return
	}
	if !checkTitle(w, title) {
		return
	}
	if source == target {
		message(w, http.StatusUnprocessableEntity, []string{"You can't use same project/branch for source and target"})
		return
	}
	sha, okSource := s.head(p, source)
	_, okTarget := s.head(p, target)
	if !okSource || !okTarget {
		bad := obj{}
		if !okSource {
			bad = append(bad, field{"source_branch", []string{"does not exist"}})
		}
		if !okTarget {
			bad = append(bad, field{"target_branch", []string{"does not exist"}})
		}
		message(w, http.StatusBadRequest, bad)
		return
	}
	for _, m := range p.mrs {
		if m.State == "opened" && m.SourceBranch == source && m.TargetBranch == target {
			message(w, http.StatusConflict, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", m.IID)})
			return
		}
	}
	labels, _ := prm.labels("labels")
	desc, _ := prm.str("description")
	now := s.now()
	m := &MergeRequest{ID: s.nextID(), IID: len(p.mrs) + 1, Title: title, Description: desc, SourceBranch: source,
		TargetBranch: target, SHA: sha, State: "opened", Labels: labels, CreatedAt: now, UpdatedAt: now}
	p.mrs = append(p.mrs, m)
	writeJSON(w, http.StatusCreated, s.mrJSON(p, m))
}

// listMRs lists a project's merge requests as GET
// /projects/:id/merge_requests does: state (opened, closed, locked, merged
// or all, the default), source_branch, target_branch and labels (all of
// them) filter; order_by created_at (the default), updated_at, merged_at
// or title, sort desc unless asc; paginated, each as MergeRequestBasic.
func (s *Server) listMRs(w http.ResponseWriter, r *http.Request, p *project, prm params) {
	order, asc, err := orderParams(prm, "created_at", "updated_at", "merged_at", "title")
	if err != nil {
		grapeError(w, http.StatusBadRequest, err.Error())
		return
	}
	state, _ := prm.str("state")
	if state == "" {
		state = "all"
	}
	if !slices.Contains([]string{"opened", "closed", "locked", "merged", "all"}, state) {
		grapeError(w, http.StatusBadRequest, "state does not have a valid value")
		return
	}
	source, bySource := prm.str("source_branch")
	target, byTarget := prm.str("target_branch")
	labels, _ := prm.labels("labels")
	var list []*MergeRequest
	for _, m := range p.mrs {
		if state != "all" && m.State != state || bySource && m.SourceBranch != source || byTarget && m.TargetBranch != target ||
			slices.ContainsFunc(labels, func(l string) bool { return !slices.Contains(m.Labels, l) }) {
			continue
		}
		s.refresh(p, m)
		list = append(list, m)
	}
	if order == "title" {
		slices.SortStableFunc(list, func(a, b *MergeRequest) int {
			c := cmp.Or(strings.Compare(a.Title, b.Title), cmp.Compare(a.ID, b.ID))
			if !asc {
				c = -c
			}
			return c
		})
	} else {
		sortBy(list, func(m *MergeRequest) (time.Time, int) {
			switch order {
			case "updated_at":
				return m.UpdatedAt, m.ID
			case "merged_at":
				return m.MergedAt, m.ID
			}
			return m.CreatedAt, m.ID
		}, asc)
	}
	out := make([]obj, 0, len(list))
	for _, m := range list {
		out = append(out, s.mrBasicJSON(p, m))
	}
	s.paginate(w, r, prm, out)
}

// updatable are the parameters of PUT merge_requests/:iid, one at least
// of which must be given.
var updatable = []string{"add_labels", "allow_collaboration", "allow_maintainer_to_push", "assignee_id", "assignee_ids",
	"description", "discussion_locked", "labels", "milestone_id", "remove_labels", "remove_source_branch",
	"reviewer_ids", "squash", "state_event", "target_branch", "title"}

func (s *Server) updateMR(w http.ResponseWriter, p *project, m *MergeRequest, prm params) {
	if !slices.ContainsFunc(updatable, func(k string) bool { return prm[k] != nil }) {
		grapeError(w, http.StatusBadRequest, strings.Join(updatable, ", ")+" are missing, at least one parameter must be provided")
		return
	}
	next := *m
	next.Labels = slices.Clone(m.Labels)
	if v, ok := prm.str("title"); ok {
		if !checkTitle(w, v) {
			return
		}
		next.Title = v
	}
	if v, ok := prm.str("description"); ok {
		next.Description = v
	}
	if v, ok := prm.str("target_branch"); ok {
		if _, found := s.head(p, v); !found {
			message(w, http.StatusBadRequest, obj{{"target_branch", []string{"does not exist"}}})
			return
		}
		next.TargetBranch = v
	}
	if v, ok := prm.labels("labels"); ok {
		next.Labels = v
	}
	if v, ok := prm.labels("add_labels"); ok {
		for _, l := range v {
			if !slices.Contains(next.Labels, l) {
				next.Labels = append(next.Labels, l)
			}
		}
	}
	if v, ok := prm.labels("remove_labels"); ok {
		next.Labels = slices.DeleteFunc(next.Labels, func(l string) bool { return slices.Contains(v, l) })
	}
	if v, ok := prm.str("state_event"); ok {
		switch {
		case v != "close" && v != "reopen":
			grapeError(w, http.StatusBadRequest, "state_event does not have a valid value")
			return
		case v == "close" && m.State == "opened":
			next.State, next.ClosedAt = "closed", s.now()
		case v == "reopen" && m.State == "closed":
			next.State, next.ClosedAt = "opened", time.Time{}
		}
	}
	if next.State == "opened" {
		for _, o := range p.mrs {
			if o != m && o.State == "opened" && o.SourceBranch == next.SourceBranch && o.TargetBranch == next.TargetBranch {
				message(w, http.StatusConflict, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", o.IID)})
				return
			}
		}
	}
	next.UpdatedAt = s.now()
	*m = next
	s.refresh(p, m)
	writeJSON(w, http.StatusOK, s.mrJSON(p, m))
}

func (s *Server) createNote(w http.ResponseWriter, p *project, m *MergeRequest, prm params) {
	body, ok := prm.str("body")
	if !ok {
		grapeError(w, http.StatusBadRequest, "body is missing")
		return
	}
	if strings.TrimSpace(body) == "" {
		message(w, http.StatusBadRequest, obj{{"note", []string{"can't be blank"}}})
		return
	}
	if utf8.RuneCountInString(body) > 1_000_000 {
		message(w, http.StatusBadRequest, obj{{"note", []string{"is too long (maximum is 1000000 characters)"}}})
		return
	}
	m.Notes = append(m.Notes, body)
	writeJSON(w, http.StatusCreated, s.noteJSON(p, m, s.nextID(), body, s.now()))
}

func (s *Server) listStatuses(w http.ResponseWriter, r *http.Request, p *project, sha string, prm params) {
	if !s.commits[sha] {
		message(w, http.StatusNotFound, "404 Commit Not Found")
		return
	}
	all, _, err := prm.boolean("all")
	if err != nil {
		grapeError(w, http.StatusBadRequest, err.Error())
		return
	}
	_, asc, err := orderParams(prm, "id", "pipeline_id")
	if err != nil {
		grapeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := prm.str("sort"); !ok {
		asc = true // statuses are oldest first unless told
	}
	ref, hasRef := prm.str("ref")
	name, hasName := prm.str("name")
	var list []*Status
	for _, st := range p.statuses {
		if st.SHA == sha && (!hasRef || st.Ref == ref) && (!hasName || st.Name == name) {
			list = append(list, st)
		}
	}
	if !all {
		// The latest of each name only (a retried one is hidden).
		latest := map[string]*Status{}
		for _, st := range list {
			latest[st.Name] = st
		}
		list = slices.DeleteFunc(list, func(st *Status) bool { return latest[st.Name] != st })
	}
	sortBy(list, func(st *Status) (time.Time, int) { return time.Time{}, st.ID }, asc)
	out := make([]obj, 0, len(list))
	for _, st := range list {
		out = append(out, s.statusJSON(st))
	}
	s.paginate(w, r, prm, out)
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, p *project, prm params) {
	order, asc, err := orderParams(prm, "created_at", "updated_at", "due_date", "label_priority", "milestone_due",
		"popularity", "priority", "relative_position", "title", "weight")
	if err != nil {
		grapeError(w, http.StatusBadRequest, err.Error())
		return
	}
	state, _ := prm.str("state")
	if state == "" {
		state = "all"
	}
	if state != "opened" && state != "closed" && state != "all" {
		grapeError(w, http.StatusBadRequest, "state does not have a valid value")
		return
	}
	var list []*Issue
	for _, is := range p.issues {
		if state == "all" || is.State == state {
			list = append(list, is)
		}
	}
	sortBy(list, func(is *Issue) (time.Time, int) {
		if order == "updated_at" {
			return is.UpdatedAt, is.ID
		}
		return is.CreatedAt, is.ID
	}, asc)
	out := make([]obj, 0, len(list))
	for _, is := range list {
		out = append(out, s.issueJSON(p, is))
	}
	s.paginate(w, r, prm, out)
}

func (s *Server) addHook(w http.ResponseWriter, p *project, prm params) {
	hookURL, ok := prm.str("url")
	if !ok {
		grapeError(w, http.StatusBadRequest, "url is missing")
		return
	}
	if u, err := url.Parse(hookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		message(w, http.StatusUnprocessableEntity, "Invalid url given")
		return
	}
	token, _ := prm.str("token")
	h := &Hook{ID: s.nextID(), URL: hookURL, Token: token, Events: map[string]bool{"push_events": true}, CreatedAt: s.now()}
	for _, e := range hookEvents {
		v, ok, err := prm.boolean(e)
		if err != nil {
			grapeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if ok {
			h.Events[e] = v
		}
	}
	p.hooks = append(p.hooks, h)
	writeJSON(w, http.StatusCreated, s.hookJSON(p, h))
}
