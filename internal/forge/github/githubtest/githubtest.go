// Package githubtest is a local GitHub for tests: an httptest server that
// speaks GitHub's REST API v3 at its root (as api.github.com does) for the
// operations Slipway uses — with GitHub's paths, methods, JSON shapes,
// Link pagination, error bodies and rate-limit answers — plus the two
// GraphQL mutations that change a pull request's draft state, and webhook
// deliveries signed as GitHub signs them. It implements forgetest.Server.
package githubtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/forge"
	"slipway/internal/forge/forgetest"
)

// Login is the user the server's token signs in as.
const Login = "slipway-bot"

// Server is a local GitHub. It is safe for concurrent use.
type Server struct {
	// Branches, when set, answers the head commit of a branch that was not
	// made with AddBranch (so a test can back branches with a real git
	// repository); the default branch has a commit of its own otherwise.
	// It is called with the server's lock held: it must not call the
	// Server. Set it before the first request.
	Branches func(repo, branch string) (sha string, ok bool)

	srv   *httptest.Server
	mux   *http.ServeMux
	token string

	mu     sync.Mutex
	repos  map[string]*repo // by lower-case full name
	order  []*repo          // as added
	nodes  map[string]*item // pull requests by GraphQL node id
	nextID int64
	fail   *failure
	used   int      // requests answered: X-RateLimit-Used
	log    []string // "METHOD /path?query" of each request
}

type failure struct {
	status  int
	limited bool
}

type repo struct {
	id                         int64
	fullName, owner, name      string
	defaultBranch, description string
	private                    bool
	created, updated, pushed   time.Time
	branches                   map[string]string // made with AddBranch: head sha
	rootSHA                    string            // the default branch's commit otherwise
	items                      []*item           // issues and pull requests: number i+1
	labels                     map[string]*label // by lower-case name
	statuses                   []*status         // oldest first
	runs                       []*checkRun       // oldest first
	hooks                      []*hook
}

// item is an issue or a pull request: they share numbers, as on GitHub.
type item struct {
	id                 int64
	number             int
	nodeID             string
	title, body, state string
	stateReason        string
	labels             []string
	created, updated   time.Time
	closed             *time.Time
	comments           []*comment
	pr                 *pull // nil: an issue
}

type pull struct {
	head, headSHA, base, baseSHA string
	draft, merged                bool
	mergedAt                     *time.Time
	mergeSHA                     string
}

type label struct {
	id          int64
	name, color string
}

type comment struct {
	id               int64
	body             string
	created, updated time.Time
}

type status struct {
	id                     int64
	context, state         string
	description, targetURL string
	sha                    string
	created, updated       time.Time
}

type checkRun struct {
	id                 int64
	name, sha          string
	status, conclusion string
	started            time.Time
	completed          *time.Time
}

type hook struct {
	id                   int64
	url, secret, content string
	events               []string
	active               bool
	created, updated     time.Time
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		token:  "ghp_" + randomHex(18),
		repos:  map[string]*repo{},
		nodes:  map[string]*item{},
		nextID: 1000,
	}
	s.routes()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API root.
func (s *Server) URL() string { return s.srv.URL }

// Token is the token the server accepts.
func (s *Server) Token() string { return s.token }

// Config signs in to the server.
func (s *Server) Config() forge.Config {
	return forge.Config{Kind: forge.GitHub, BaseURL: s.srv.URL, Token: s.token}
}

// Requests lists the requests answered so far, as "METHOD /path?query".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// AddRepo adds a repository (owned by an organization unless the owner is
// Login) with its default branch.
func (s *Server) AddRepo(fullName, defaultBranch string, private bool) {
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok {
		panic("githubtest: a repository is owner/name, not " + fullName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := now()
	r := &repo{id: s.id(), fullName: fullName, owner: owner, name: name, defaultBranch: defaultBranch, private: private,
		created: now, updated: now, pushed: now, branches: map[string]string{}, rootSHA: randomHex(20), labels: map[string]*label{}}
	s.repos[strings.ToLower(fullName)] = r
	s.order = append(s.order, r)
}

// AddIssue opens an issue and answers its number.
func (s *Server) AddIssue(repo, title, body string, labels []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(repo)
	i := s.newItem(r, title, body)
	s.addLabels(r, i, labels)
	return i.number
}

// CloseIssue closes an issue (or pull request) as completed.
func (s *Server) CloseIssue(repo string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.mustItem(repo, number)
	t := now()
	i.state, i.stateReason, i.closed, i.updated = "closed", "completed", &t, t
}

// AddBranch makes a branch with a new head commit (pushed again: a new
// head), and answers the commit. Open pull requests from it follow it.
func (s *Server) AddBranch(repo, branch string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(repo)
	sha := randomHex(20)
	r.branches[branch] = sha
	r.pushed = now()
	for _, i := range r.items {
		if i.pr != nil && i.state == "open" && i.pr.head == branch {
			i.pr.headSHA, i.updated = sha, r.pushed
		}
	}
	return sha
}

// SetCheck sets a commit's status named name (run: a check run instead)
// to a forge check state. A status is appended, as GitHub keeps each; a
// check run is a new run, the latest of its name counting.
func (s *Server) SetCheck(repo, sha, name, state string, run bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(repo)
	t := now()
	if !run {
		r.statuses = append(r.statuses, &status{id: s.id(), context: name, state: state, sha: sha, created: t, updated: t,
			description: "Set by githubtest", targetURL: s.srv.URL + "/ci/" + name})
		return
	}
	c := &checkRun{id: s.id(), name: name, sha: sha, status: "in_progress", started: t}
	if state != forge.CheckPending {
		c.status, c.conclusion, c.completed = "completed", state, &t
	}
	r.runs = append(r.runs, c)
}

// MergePR merges an open pull request, as someone on GitHub would.
func (s *Server) MergePR(repo string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.mustItem(repo, number)
	if i.pr == nil {
		panic(fmt.Sprintf("githubtest: %s#%d is an issue", repo, number))
	}
	t := now()
	i.state, i.closed, i.updated = "closed", &t, t
	i.pr.merged, i.pr.mergedAt, i.pr.mergeSHA, i.pr.draft = true, &t, randomHex(20), false
	// The base moves to the merge, unless Branches answers for it.
	if r := s.repo(repo); r.branches[i.pr.base] != "" {
		r.branches[i.pr.base] = i.pr.mergeSHA
	} else if i.pr.base == r.defaultBranch {
		r.rootSHA = i.pr.mergeSHA
	}
}

// PR is the body and labels of a pull request.
func (s *Server) PR(repo string, number int) (body string, labels []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.item(repo, number)
	if i == nil || i.pr == nil {
		return "", nil, false
	}
	return i.body, slices.Clone(i.labels), true
}

// PullRequest is what the server holds of a pull request.
type PullRequest struct {
	Number              int
	Title, Body, State  string // open or closed
	Draft, Merged       bool
	Head, HeadSHA, Base string
	Labels              []string
	NodeID              string
}

// PRs lists a repository's pull requests, by number.
func (s *Server) PRs(repo string) []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PullRequest
	if r := s.repo(repo); r != nil {
		for _, i := range r.items {
			if i.pr != nil {
				out = append(out, PullRequest{Number: i.number, Title: i.title, Body: i.body, State: i.state, Draft: i.pr.draft,
					Merged: i.pr.merged, Head: i.pr.head, HeadSHA: i.pr.headSHA, Base: i.pr.base, Labels: slices.Clone(i.labels), NodeID: i.nodeID})
			}
		}
	}
	return out
}

// Labels are the labels of an issue or pull request.
func (s *Server) Labels(repo string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.item(repo, number); i != nil {
		return slices.Clone(i.labels)
	}
	return nil
}

// Comments are the bodies of an issue's or pull request's comments.
func (s *Server) Comments(repo string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if i := s.item(repo, number); i != nil {
		for _, c := range i.comments {
			out = append(out, c.body)
		}
	}
	return out
}

// Hooks are a repository's webhooks.
func (s *Server) Hooks(repo string) []forgetest.HookRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []forgetest.HookRecord
	if r := s.repo(repo); r != nil {
		for _, h := range r.hooks {
			out = append(out, forgetest.HookRecord{URL: h.url, Secret: h.secret, Events: slices.Clone(h.events)})
		}
	}
	return out
}

// FailNext makes the next request (REST or GraphQL) answer status as
// GitHub does: rateLimited with 403, the primary rate limit
// (X-RateLimit-Remaining: 0); rateLimited with another status (429), the
// secondary one (Retry-After).
func (s *Server) FailNext(status int, rateLimited bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = &failure{status: status, limited: rateLimited}
}

// The helpers below run with s.mu held.

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) repo(fullName string) *repo { return s.repos[strings.ToLower(fullName)] }

func (s *Server) mustRepo(fullName string) *repo {
	r := s.repo(fullName)
	if r == nil {
		panic("githubtest: no repository " + fullName + " (AddRepo first)")
	}
	return r
}

func (s *Server) item(repo string, number int) *item {
	r := s.repo(repo)
	if r == nil || number < 1 || number > len(r.items) {
		return nil
	}
	return r.items[number-1]
}

func (s *Server) mustItem(repo string, number int) *item {
	i := s.item(repo, number)
	if i == nil {
		panic(fmt.Sprintf("githubtest: no issue or pull request %s#%d", repo, number))
	}
	return i
}

// newItem opens the repository's next issue (the caller makes it a pull
// request).
func (s *Server) newItem(r *repo, title, body string) *item {
	t := now()
	i := &item{id: s.id(), number: len(r.items) + 1, title: title, body: body, state: "open", created: t, updated: t}
	i.nodeID = "I_kwDO" + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d:%d", r.id, i.number))
	r.items = append(r.items, i)
	return i
}

// addLabels adds labels to an item, making the repository's missing ones
// (as GitHub does).
func (s *Server) addLabels(r *repo, i *item, names []string) {
	for _, n := range names {
		if n == "" {
			continue
		}
		if _, ok := r.labels[strings.ToLower(n)]; !ok {
			r.labels[strings.ToLower(n)] = &label{id: s.id(), name: n, color: "ededed"}
		}
		n = r.labels[strings.ToLower(n)].name
		if !slices.Contains(i.labels, n) {
			i.labels = append(i.labels, n)
			i.updated = now()
		}
	}
}

// branch is a branch's head commit: made with AddBranch, else from
// Branches, else the default branch's own commit.
func (s *Server) branch(r *repo, name string) (string, bool) {
	if sha, ok := r.branches[name]; ok {
		return sha, true
	}
	if s.Branches != nil {
		if sha, ok := s.Branches(r.fullName, name); ok {
			return sha, true
		}
	}
	if name == r.defaultBranch {
		return r.rootSHA, true
	}
	return "", false
}

// now is GitHub's time: UTC, in seconds.
func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
