// Package gitlabtest is a local GitLab for tests: an httptest server that
// speaks GitLab's REST API v4 for the operations package gitlab uses
// (projects, merge requests and their notes, commit statuses, issues,
// project webhooks), with GitLab's paths (a project named by its
// URL-encoded path or its id), token headers, pagination headers, JSON
// shapes and error bodies, and that builds webhook deliveries as GitLab
// sends them. It implements forgetest.Server, and its records can be read
// (MergeRequests, Issues, Statuses, ProjectHooks, Requests) by other
// tests. It is safe for concurrent use.
package gitlabtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"slipway/internal/forge"
	"slipway/internal/forge/forgetest"
)

// Token is the personal access token the server accepts (PRIVATE-TOKEN
// header, Authorization: Bearer, or the private_token parameter).
const Token = "glpat-slipway-test-token"

// Server is a local GitLab instance.
type Server struct {
	// URL is the instance's root (the API is under URL + /api/v4).
	URL string

	t        testing.TB
	srv      *httptest.Server
	branches func(repo, branch string) (string, bool)

	mu         sync.Mutex
	clock      time.Time // advances a second at each change: an order
	seq        int       // ids of every record
	projects   []*project
	byPath     map[string]*project // by lower-case path
	namespaces map[string]int      // group ids by full path
	commits    map[string]bool     // every commit id the server has given out
	fails      []failure
	requests   []string
	delivered  map[[32]byte]bool // the bodies Delivery made
}

// Option configures a Server.
type Option func(*Server)

// WithBranches answers the head commit of a branch that was not added
// with AddBranch (ok false: the project has no such branch), so that a
// test can back the server with a real git repository. It is called with
// the server's lock held: it must not call the server.
func WithBranches(fn func(repo, branch string) (sha string, ok bool)) Option {
	return func(s *Server) { s.branches = fn }
}

type project struct {
	id            int
	path          string // path_with_namespace
	defaultBranch string
	private       bool
	createdAt     time.Time
	branches      map[string]string // name → head commit
	mrs           []*MergeRequest   // by iid - 1
	issues        []*Issue          // by iid - 1
	statuses      []*Status
	hooks         []*Hook
}

// MergeRequest is a merge request the server holds.
type MergeRequest struct {
	ID, IID        int
	Title          string // with its "Draft: " prefix, as GitLab keeps it
	Description    string
	SourceBranch   string
	TargetBranch   string
	SHA            string // the source branch's head
	MergeCommitSHA string
	State          string // opened, closed, merged, locked
	Labels         []string
	Notes          []string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	MergedAt       time.Time
	ClosedAt       time.Time
}

// Draft reports a draft, as GitLab does: from the title's prefix.
func (m MergeRequest) Draft() bool { return draftRE.MatchString(m.Title) }

// Issue is an issue the server holds.
type Issue struct {
	ID, IID     int
	Title       string
	Description string
	State       string // opened, closed
	Labels      []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ClosedAt    time.Time
}

// Status is a commit status the server holds.
type Status struct {
	ID        int
	SHA       string
	Ref       string
	Name      string
	Status    string // pending, running, success, failed, canceled, ...
	TargetURL string
	CreatedAt time.Time
}

// Hook is a project webhook the server holds.
type Hook struct {
	ID        int
	URL       string
	Token     string
	Events    map[string]bool // push_events, merge_requests_events, ...
	CreatedAt time.Time
}

// hookEvents are the events a project hook can send, in GitLab's order;
// GitLab turns push_events on unless told otherwise.
var hookEvents = []string{"push_events", "issues_events", "confidential_issues_events", "merge_requests_events",
	"tag_push_events", "note_events", "confidential_note_events", "job_events", "pipeline_events",
	"wiki_page_events", "deployment_events", "releases_events", "emoji_events", "resource_access_token_events"}

// draftRE is GitLab's draft prefix of a merge request's title.
var draftRE = regexp.MustCompile(`(?i)^(\[draft\]|\(draft\)|draft:)+\s*`)

type failure struct {
	status  int
	limited bool
}

// New starts a server, closed when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	s := &Server{
		t:          t,
		clock:      time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		byPath:     map[string]*project{},
		namespaces: map[string]int{},
		commits:    map[string]bool{},
		delivered:  map[[32]byte]bool{},
	}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// now is the server's clock: a second later at each call.
func (s *Server) now() time.Time {
	s.clock = s.clock.Add(time.Second)
	return s.clock
}

func (s *Server) nextID() int {
	s.seq++
	return s.seq
}

// newSHA makes up a commit id (and remembers it).
func (s *Server) newSHA(parts ...any) string {
	sum := sha1.Sum(fmt.Appendln(nil, append(parts, s.nextID())...))
	sha := hex.EncodeToString(sum[:])
	s.commits[sha] = true
	return sha
}

// head answers a branch's head: an added branch, else the WithBranches
// function's.
func (s *Server) head(p *project, branch string) (string, bool) {
	if sha, ok := p.branches[branch]; ok {
		return sha, true
	}
	if s.branches != nil && branch != "" {
		if sha, ok := s.branches(p.path, branch); ok {
			s.commits[sha] = true
			return sha, true
		}
	}
	return "", false
}

// must finds a project for a test's call (the test fails without it).
func (s *Server) must(repo string) *project {
	s.t.Helper()
	p := s.byPath[strings.ToLower(repo)]
	if p == nil {
		s.t.Fatalf("gitlabtest: no project %q", repo)
	}
	return p
}

// Config signs in with the server's token.
func (s *Server) Config() forge.Config {
	return forge.Config{Kind: forge.GitLab, BaseURL: s.URL, Token: Token}
}

// AddRepo adds a project (its groups made as needed) with its default
// branch.
func (s *Server) AddRepo(fullName, defaultBranch string, private bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Helper()
	key := strings.ToLower(fullName)
	if s.byPath[key] != nil || !strings.Contains(fullName, "/") {
		s.t.Fatalf("gitlabtest: cannot add project %q", fullName)
	}
	groups := strings.Split(fullName, "/")
	for i := 1; i < len(groups); i++ {
		if g := strings.Join(groups[:i], "/"); s.namespaces[g] == 0 {
			s.namespaces[g] = s.nextID()
		}
	}
	p := &project{id: len(s.projects) + 1, path: fullName, defaultBranch: defaultBranch, private: private,
		createdAt: s.now(), branches: map[string]string{}}
	p.branches[defaultBranch] = s.newSHA(fullName, defaultBranch)
	s.projects = append(s.projects, p)
	s.byPath[key] = p
}

// AddIssue opens an issue and answers its iid.
func (s *Server) AddIssue(repo, title, body string, labels []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.must(repo)
	now := s.now()
	is := &Issue{ID: s.nextID(), IID: len(p.issues) + 1, Title: title, Description: body, State: "opened",
		Labels: slices.Clone(labels), CreatedAt: now, UpdatedAt: now}
	p.issues = append(p.issues, is)
	return is.IID
}

// CloseIssue closes an issue.
func (s *Server) CloseIssue(repo string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.must(repo)
	if number < 1 || number > len(p.issues) {
		s.t.Fatalf("gitlabtest: no issue #%d in %s", number, repo)
	}
	is := p.issues[number-1]
	is.State, is.UpdatedAt, is.ClosedAt = "closed", s.now(), s.clock
}

// AddBranch makes a branch (or moves it) to a new head commit, answered.
func (s *Server) AddBranch(repo, branch string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.must(repo)
	sha := s.newSHA(repo, branch)
	p.branches[branch] = sha
	return sha
}

// SetCheck posts a commit status named name (run is GitHub's and
// ignored): pending, success or failure (GitLab's failed). Each call adds
// a status, as a retried job does; the API lists the newest of each name
// unless asked for all.
func (s *Server) SetCheck(repo, sha, name, state string, run bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.must(repo)
	status := map[string]string{forge.CheckPending: "pending", forge.CheckSuccess: "success", forge.CheckFailure: "failed"}[state]
	if status == "" {
		status = state // a GitLab status given as is (running, canceled, skipped, ...)
	}
	ref := ""
	for b, head := range p.branches {
		if head == sha {
			ref = b
		}
	}
	s.commits[sha] = true
	p.statuses = append(p.statuses, &Status{ID: s.nextID(), SHA: sha, Ref: ref, Name: name, Status: status,
		TargetURL: fmt.Sprintf("%s/%s/-/jobs/%d", s.URL, p.path, s.seq), CreatedAt: s.now()})
}

// MergePR merges a merge request (its target branch moves to a merge
// commit).
func (s *Server) MergePR(repo string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.must(repo)
	m := s.mustMR(p, number)
	m.State, m.MergedAt, m.UpdatedAt = "merged", s.now(), s.clock
	m.MergeCommitSHA = s.newSHA(repo, "merge", number)
	if _, ok := p.branches[m.TargetBranch]; ok {
		p.branches[m.TargetBranch] = m.MergeCommitSHA
	}
}

func (s *Server) mustMR(p *project, number int) *MergeRequest {
	s.t.Helper()
	if number < 1 || number > len(p.mrs) {
		s.t.Fatalf("gitlabtest: no merge request !%d in %s", number, p.path)
	}
	return p.mrs[number-1]
}

// PR is a merge request's description and labels.
func (s *Server) PR(repo string, number int) (body string, labels []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byPath[strings.ToLower(repo)]
	if p == nil || number < 1 || number > len(p.mrs) {
		return "", nil, false
	}
	m := p.mrs[number-1]
	return m.Description, slices.Clone(m.Labels), true
}

// Comments are the notes on a merge request.
func (s *Server) Comments(repo string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byPath[strings.ToLower(repo)]
	if p == nil || number < 1 || number > len(p.mrs) {
		return nil
	}
	return slices.Clone(p.mrs[number-1].Notes)
}

// Hooks are the project's webhooks: their token as the secret, the
// events that are on by GitLab's names (merge_requests_events, ...).
func (s *Server) Hooks(repo string) []forgetest.HookRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []forgetest.HookRecord
	for _, h := range s.must(repo).hooks {
		r := forgetest.HookRecord{URL: h.URL, Secret: h.Token}
		for _, e := range hookEvents {
			if h.Events[e] {
				r.Events = append(r.Events, e)
			}
		}
		out = append(out, r)
	}
	return out
}

// FailNext makes the next API request answer status with GitLab's body
// for it; rateLimited adds the RateLimit-* headers of an exhausted limit
// (a 429 has them always, its body is Rack::Attack's "Retry later").
func (s *Server) FailNext(status int, rateLimited bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, failure{status, rateLimited})
}

// Delivery is a webhook delivery as GitLab sends it: the event's JSON
// body, X-Gitlab-Event, the token in X-Gitlab-Token (none without a
// secret), the delivery's id in Idempotency-Key (GitLab 17.4 and later;
// the same on a retry), an X-Gitlab-Event-UUID and X-Gitlab-Webhook-UUID
// of its own. GitLab has no ping: forge.EventPing is a hook's test
// delivery, a push event.
func (s *Server) Delivery(repo string, ev forgetest.DeliverySpec, secret string) (http.Header, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.must(repo)
	var event string
	var body obj
	switch ev.Type {
	case forge.EventPullRequest:
		event, body = "Merge Request Hook", s.mrHook(p, ev)
	case forge.EventIssue:
		event, body = "Issue Hook", s.issueHook(p, ev)
	case forge.EventCheck:
		event, body = "Pipeline Hook", s.pipelineHook(p, ev)
	default:
		event, body = "Push Hook", s.pushHook(p)
	}
	data, err := json.Marshal(body)
	if err != nil {
		s.t.Fatal(err)
	}
	s.delivered[sha256.Sum256(data)] = true
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitLab/18.2.0")
	h.Set("X-Gitlab-Event", event)
	h.Set("X-Gitlab-Instance", s.URL)
	h.Set("X-Gitlab-Webhook-UUID", uuid.NewString())
	h.Set("X-Gitlab-Event-UUID", uuid.NewString())
	h.Set("Idempotency-Key", ev.Delivery)
	if secret != "" {
		h.Set("X-Gitlab-Token", secret)
	}
	return h, data
}

// Delivered reports whether body is, byte for byte, one Delivery made
// (GitLab's token does not cover the body: a test can tell a tampered one
// only this way).
func (s *Server) Delivered(body []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered[sha256.Sum256(body)]
}

// MergeRequests are a project's merge requests, by iid.
func (s *Server) MergeRequests(repo string) []MergeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MergeRequest
	for _, m := range s.must(repo).mrs {
		c := *m
		c.Labels, c.Notes = slices.Clone(m.Labels), slices.Clone(m.Notes)
		out = append(out, c)
	}
	return out
}

// Issues are a project's issues, by iid.
func (s *Server) Issues(repo string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	for _, is := range s.must(repo).issues {
		c := *is
		c.Labels = slices.Clone(is.Labels)
		out = append(out, c)
	}
	return out
}

// Statuses are the statuses posted on a commit, oldest first.
func (s *Server) Statuses(repo, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	for _, st := range s.must(repo).statuses {
		if st.SHA == sha {
			out = append(out, *st)
		}
	}
	return out
}

// ProjectHooks are a project's webhooks.
func (s *Server) ProjectHooks(repo string) []Hook {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Hook
	for _, h := range s.must(repo).hooks {
		c := *h
		c.Events = map[string]bool{}
		for k, v := range h.Events {
			c.Events[k] = v
		}
		out = append(out, c)
	}
	return out
}

// Branch is a branch's head commit.
func (s *Server) Branch(repo, branch string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head(s.must(repo), branch)
}

// Requests are the API requests served, as "METHOD /api/v4/... ?query".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}
