// Package giteatest is a local Gitea (or Forgejo) for tests: an httptest
// server speaking the part of Gitea's /api/v1 that Slipway's provider
// uses, as Gitea does: its paths; a token as "Authorization: token <t>"
// or "Bearer <t>" (a wrong one answers 401); its error bodies
// ({"message","url"}) and statuses (404 for what is missing, a missing
// branch included; 409 for a second open pull request of one head and
// base; 422 for what it will not take; 412 to close a merged pull
// request); its pagination (page and limit, at most 50 a page as
// MAX_RESPONSE_ITEMS defaults to, a Link header and X-Total-Count; the
// label list sends X-Total-Count only, as Gitea's does); and its JSON
// shapes. Issues and pull requests share a repository's numbers, and the
// issue list holds pull requests unless asked type=issues.
//
// It implements forgetest.Server, and is safe for concurrent use.
package giteatest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// tokenUser is the user the server's token signs in as: an admin, who
// sees every repository.
const tokenUser = "slipway"

// maxPage is Gitea's default MAX_RESPONSE_ITEMS, defaultPage its
// DEFAULT_PAGING_NUM.
const (
	maxPage     = 50
	defaultPage = 30
)

// epoch starts the server's clock: every change moves it a second on, so
// times are distinct and ordered.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Server is a local Gitea. Its zero value is not usable: see New.
type Server struct {
	t     testing.TB
	kind  string
	token string
	srv   *httptest.Server
	mux   *http.ServeMux

	mu       sync.Mutex
	branchFn func(repo, branch string) (string, bool)
	repos    map[string]*repo // by lower-cased full name: Gitea's names ignore case
	users    map[string]int64 // ids by login
	seq      int64            // the last id given (repositories, issues, labels, statuses, comments, hooks)
	clock    time.Time
	fail     *failure
	log      []string
}

type repo struct {
	id            int64
	owner, name   string
	defaultBranch string
	private       bool
	description   string
	created       time.Time
	branches      map[string]string // head commits by branch
	issues        []*issue          // issues and pull requests, by number - 1
	labels        []*label
	statuses      []*status
	hooks         []*hook
}

type issue struct {
	id, number       int64
	title, body      string
	labels           []int64
	closed           bool
	created, updated time.Time
	closedAt         *time.Time
	comments         []*comment
	pull             *pull // nil for an issue
}

type pull struct {
	head, base string
	headSHA    string
	merged     bool
	mergedAt   time.Time
	mergeSHA   string
}

type label struct {
	id                 int64
	name, color        string // color with its #
	description        string
	exclusive, archive bool
}

type status struct {
	id                     int64
	sha, context, state    string
	targetURL, description string
	created                time.Time
}

type comment struct {
	id      int64
	body    string
	created time.Time
}

type hook struct {
	id               int64
	typ, url, secret string
	contentType      string
	events           []string
	branchFilter     string
	active           bool
	created          time.Time
}

type failure struct {
	status      int
	rateLimited bool
}

// Option changes a new server.
type Option func(*Server)

// Branches makes the server ask fn for a branch's head commit when a pull
// request names a branch that AddBranch did not make (an end-to-end test
// pushes to a real repository): fn answers the commit, or false for no
// such branch. See SetBranches.
func Branches(fn func(repo, branch string) (sha string, ok bool)) Option {
	return func(s *Server) { s.branchFn = fn }
}

// New starts a server that answers as kind (forge.Gitea or forge.Forgejo:
// Forgejo also takes webhooks of type "forgejo" and signs deliveries
// under X-Forgejo-* headers too), closed when the test ends.
func New(t testing.TB, kind string, opts ...Option) *Server {
	t.Helper()
	if kind != forge.Gitea && kind != forge.Forgejo {
		t.Fatalf("giteatest: the kind %q is not gitea or forgejo", kind)
	}
	s := &Server{t: t, kind: kind, token: "gt_" + rand.Text(), repos: map[string]*repo{},
		users: map[string]int64{tokenUser: 1}, seq: 1, clock: epoch}
	for _, o := range opts {
		o(s)
	}
	s.mux = http.NewServeMux()
	s.routes()
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Start() // after s.srv is set: the handlers read it
	t.Cleanup(s.srv.Close)
	return s
}

// SetBranches sets (nil: unsets) what Branches sets.
func (s *Server) SetBranches(fn func(repo, branch string) (sha string, ok bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.branchFn = fn
}

// URL is the instance's root (the API is under /api/v1).
func (s *Server) URL() string { return s.srv.URL }

// Token is the token the server takes.
func (s *Server) Token() string { return s.token }

// Config signs in to the server with its token.
func (s *Server) Config() forge.Config {
	return forge.Config{Kind: s.kind, BaseURL: s.srv.URL, Token: s.token}
}

// next gives an id; now moves the clock on. Both with s.mu held.
func (s *Server) next() int64 { s.seq++; return s.seq }

func (s *Server) now() time.Time { s.clock = s.clock.Add(time.Second); return s.clock }

// sha makes up a commit id.
func (s *Server) sha(parts ...string) string {
	sum := sha1.Sum([]byte(fmt.Sprint(s.next(), parts)))
	return hex.EncodeToString(sum[:])
}

// must is the repository named, failing the test without it (s.mu held).
func (s *Server) must(name string) *repo {
	s.t.Helper()
	r := s.repos[strings.ToLower(name)]
	if r == nil {
		s.t.Fatalf("giteatest: no repository %s", name)
	}
	return r
}

func (r *repo) issue(number int64) *issue {
	if number < 1 || number > int64(len(r.issues)) {
		return nil
	}
	return r.issues[number-1]
}

func (r *repo) label(id int64) *label {
	for _, l := range r.labels {
		if l.id == id {
			return l
		}
	}
	return nil
}

// labelNamed is the first label of that name, made when there is none.
func (s *Server) labelNamed(r *repo, name string) *label {
	for _, l := range r.labels {
		if l.name == name {
			return l
		}
	}
	l := &label{id: s.next(), name: name, color: "#e11d21"}
	r.labels = append(r.labels, l)
	return l
}

// The forgetest.Server side: what a test arranges.

// AddRepo adds a repository (its owner a user), with its default branch.
func (s *Server) AddRepo(fullName, defaultBranch string, private bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok {
		s.t.Fatalf("giteatest: %q is not owner/name", fullName)
	}
	if _, ok := s.users[owner]; !ok {
		s.users[owner] = s.next()
	}
	key := strings.ToLower(fullName)
	if r := s.repos[key]; r != nil {
		r.defaultBranch, r.private = defaultBranch, private
		if _, ok := r.branches[defaultBranch]; !ok {
			r.branches[defaultBranch] = s.sha(fullName, defaultBranch)
		}
		return
	}
	s.repos[key] = &repo{id: s.next(), owner: owner, name: name, defaultBranch: defaultBranch, private: private,
		created: s.now(), branches: map[string]string{defaultBranch: s.sha(fullName, defaultBranch)}}
}

// AddIssue opens an issue, its labels made where the repository lacks
// them.
func (s *Server) AddIssue(repoName, title, body string, labels []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.must(repoName)
	now := s.now()
	i := &issue{id: s.next(), number: int64(len(r.issues) + 1), title: title, body: body, created: now, updated: now}
	for _, n := range labels {
		i.labels = append(i.labels, s.labelNamed(r, n).id)
	}
	r.issues = append(r.issues, i)
	return int(i.number)
}

// CloseIssue closes an issue (or a pull request).
func (s *Server) CloseIssue(repoName string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.must(repoName).issue(int64(number))
	if i == nil {
		s.t.Fatalf("giteatest: no issue %s#%d", repoName, number)
	}
	s.close(i)
}

func (s *Server) close(i *issue) {
	if !i.closed {
		now := s.now()
		i.closed, i.closedAt, i.updated = true, &now, now
	}
}

// AddBranch pushes a new commit to a branch (made if new) and answers it.
func (s *Server) AddBranch(repoName, branch string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.must(repoName)
	sha := s.sha(repoName, branch)
	r.branches[branch] = sha
	return sha
}

// Branch is a branch's head commit, as the server holds it.
func (s *Server) Branch(repoName, branch string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(repoName)]
	if r == nil {
		return "", false
	}
	sha, ok := r.branches[branch]
	return sha, ok
}

// SetCheck posts a commit status named name (Gitea has statuses only: run
// is ignored), its state one of forge's check states.
func (s *Server) SetCheck(repoName, sha, name, state string, run bool) {
	s.SetStatus(repoName, sha, name, state)
}

// SetStatus posts a commit status in Gitea's own states (pending, success,
// error, failure, warning).
func (s *Server) SetStatus(repoName, sha, context, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.must(repoName)
	r.statuses = append(r.statuses, &status{id: s.next(), sha: sha, context: context, state: state,
		targetURL: s.srv.URL + "/ci/" + context, description: context + " is " + state, created: s.now()})
}

// MergePR merges a pull request: it closes, and its base moves to the
// merge commit.
func (s *Server) MergePR(repoName string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.must(repoName)
	i := r.issue(int64(number))
	if i == nil || i.pull == nil {
		s.t.Fatalf("giteatest: no pull request %s#%d", repoName, number)
	}
	if i.pull.merged {
		return
	}
	s.close(i)
	i.pull.merged, i.pull.mergedAt, i.pull.mergeSHA = true, *i.closedAt, s.sha(repoName, "merge")
	r.branches[i.pull.base] = i.pull.mergeSHA
}

// PR is a pull request's body and labels.
func (s *Server) PR(repoName string, number int) (string, []string, bool) {
	p, ok := s.Pull(repoName, number)
	return p.Body, p.Labels, ok
}

// Comments are the bodies of an issue's or a pull request's comments.
func (s *Server) Comments(repoName string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if r := s.repos[strings.ToLower(repoName)]; r != nil {
		if i := r.issue(int64(number)); i != nil {
			for _, c := range i.comments {
				out = append(out, c.body)
			}
		}
	}
	return out
}

// Hooks are the repository's webhooks.
func (s *Server) Hooks(repoName string) []forgetest.HookRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []forgetest.HookRecord
	if r := s.repos[strings.ToLower(repoName)]; r != nil {
		for _, h := range r.hooks {
			out = append(out, forgetest.HookRecord{URL: h.url, Secret: h.secret, Events: slices.Clone(h.events)})
		}
	}
	return out
}

// FailNext makes the next API request answer status with Gitea's error
// body. Gitea does not limit its API's rate itself; rateLimited answers
// as a proxy before it would (Retry-After, X-RateLimit-Remaining: 0).
func (s *Server) FailNext(status int, rateLimited bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = &failure{status: status, rateLimited: rateLimited}
}

// What the server holds, for tests to read.

// Pull is a pull request as the server holds it.
type Pull struct {
	Title   string // with its WIP prefix, if any
	Body    string
	State   string // open, closed
	Merged  bool
	Draft   bool // its title has a WIP prefix
	Head    string
	Base    string
	HeadSHA string
	Labels  []string
}

// Pull reads a pull request.
func (s *Server) Pull(repoName string, number int) (Pull, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(repoName)]
	if r == nil {
		return Pull{}, false
	}
	i := r.issue(int64(number))
	if i == nil || i.pull == nil {
		return Pull{}, false
	}
	p := Pull{Title: i.title, Body: i.body, State: state(i.closed), Merged: i.pull.merged, Draft: wip(i.title),
		Head: i.pull.head, Base: i.pull.base, HeadSHA: i.pull.headSHA}
	for _, id := range i.labels {
		if l := r.label(id); l != nil {
			p.Labels = append(p.Labels, l.name)
		}
	}
	return p, true
}

// Labels are the names of the repository's labels, in the order they were
// made (a name twice if it was made twice).
func (s *Server) Labels(repoName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if r := s.repos[strings.ToLower(repoName)]; r != nil {
		for _, l := range r.labels {
			out = append(out, l.name)
		}
	}
	return out
}

// HookTypes are the types of the repository's webhooks ("gitea",
// "forgejo", ...).
func (s *Server) HookTypes(repoName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if r := s.repos[strings.ToLower(repoName)]; r != nil {
		for _, h := range r.hooks {
			out = append(out, h.typ)
		}
	}
	return out
}

// Requests are the API requests the server was sent, as "METHOD
// /path?query".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// wip reports whether a title makes a draft: Gitea's default
// WORK_IN_PROGRESS_PREFIXES, without case.
func wip(title string) bool {
	t := strings.ToUpper(title)
	return strings.HasPrefix(t, "WIP:") || strings.HasPrefix(t, "[WIP]")
}

// Delivery is a webhook delivery as Gitea sends it: its headers (Forgejo
// sends X-Forgejo-* besides) and its payload, signed with secret. A ping
// is Gitea's test delivery, a push.
func (s *Server) Delivery(repoName string, ev forgetest.DeliverySpec, secret string) (http.Header, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.must(repoName)
	sender := s.userJSON(tokenUser)
	var (
		event, eventType string
		p                any
	)
	switch ev.Type {
	case forge.EventPullRequest:
		event, eventType = "pull_request", "pull_request"
		i := s.deliveredPull(r, ev)
		action := "opened"
		if ev.Closed || ev.Merged {
			action = "closed"
		}
		p = &pullRequestPayload{Action: action, Number: i.number, PullRequest: s.pullJSON(r, i), Repository: s.repoJSON(r), Sender: sender}
	case forge.EventIssue:
		event, eventType = "issues", "issues"
		i := r.issue(int64(ev.Issue))
		if i == nil || i.pull != nil {
			now := s.now()
			i = &issue{id: s.next(), number: int64(ev.Issue), title: fmt.Sprintf("Issue %d", ev.Issue), created: now, updated: now}
		}
		c := *i
		c.closed, c.closedAt = ev.Closed, nil
		if ev.Closed {
			at := s.now()
			c.closedAt = &at
		}
		action := "opened"
		if ev.Closed {
			action = "closed"
		}
		p = &issuePayload{Action: action, Number: c.number, Issue: s.issueJSON(r, &c), Repository: s.repoJSON(r), Sender: sender}
	case forge.EventCheck:
		event, eventType = "status", "status"
		now := s.now()
		p = &commitStatusPayload{Commit: s.commitJSON(r, ev.SHA, "A commit"), Context: "ci/build", CreatedAt: now,
			Description: "ci/build is success", ID: s.next(), Repository: s.repoJSON(r), Sender: sender, SHA: ev.SHA,
			State: "success", TargetURL: s.srv.URL + "/ci/build", UpdatedAt: &now}
	default: // a ping: Gitea's "Test Delivery" sends a push of the default branch
		event, eventType = "push", "push"
		head := r.branches[r.defaultBranch]
		c := s.commitJSON(r, head, "This is a fake commit")
		p = &pushPayload{Ref: "refs/heads/" + r.defaultBranch, Before: head, After: head,
			Commits: []*payloadCommit{c}, TotalCommits: 1, HeadCommit: c, Repository: s.repoJSON(r), Pusher: sender, Sender: sender}
	}
	body, err := json.MarshalIndent(p, "", "  ") // as Gitea's JSONPayload
	if err != nil {
		s.t.Fatalf("giteatest: %v", err)
	}
	id := ev.Delivery
	if id == "" {
		id = rand.Text()
	}
	// Gitea signs only with a secret: without, the headers are empty.
	signature, sig1 := "", ""
	if secret != "" {
		signature = Sign(body, secret)
		mac := hmac.New(sha1.New, []byte(secret))
		mac.Write(body)
		sig1 = hex.EncodeToString(mac.Sum(nil))
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if s.kind == forge.Forgejo {
		h.Set("X-Forgejo-Delivery", id)
		h.Set("X-Forgejo-Event", event)
		h.Set("X-Forgejo-Event-Type", eventType)
		h.Set("X-Forgejo-Signature", signature)
	}
	h.Set("X-Gitea-Delivery", id)
	h.Set("X-Gitea-Event", event)
	h.Set("X-Gitea-Event-Type", eventType)
	h.Set("X-Gitea-Signature", signature)
	h.Set("X-Gogs-Delivery", id)
	h.Set("X-Gogs-Event", event)
	h.Set("X-Gogs-Event-Type", eventType)
	h.Set("X-Gogs-Signature", signature)
	h.Set("X-Hub-Signature", "sha1="+sig1)
	h.Set("X-Hub-Signature-256", "sha256="+signature)
	h["X-GitHub-Delivery"] = []string{id}
	h["X-GitHub-Event"] = []string{event}
	h["X-GitHub-Event-Type"] = []string{eventType}
	return h, body
}

// Sign is Gitea's signature of a webhook's body: the hex HMAC-SHA256 of
// it under the hook's secret.
func Sign(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// deliveredPull is the pull request a delivery is about, as the spec says
// it is: the server's own where it has it, else one made up.
func (s *Server) deliveredPull(r *repo, ev forgetest.DeliverySpec) *issue {
	var c issue
	if i := r.issue(int64(ev.PR)); i != nil && i.pull != nil {
		c = *i
		p := *i.pull
		c.pull = &p
	} else {
		now := s.now()
		c = issue{id: s.next(), number: int64(ev.PR), title: fmt.Sprintf("Pull request %d", ev.PR), created: now, updated: now,
			pull: &pull{head: fmt.Sprintf("feature-%d", ev.PR), base: r.defaultBranch}}
	}
	if ev.SHA != "" {
		c.pull.headSHA = ev.SHA
	}
	c.closed, c.closedAt = ev.Closed || ev.Merged, nil
	c.pull.merged = ev.Merged
	if c.closed {
		at := s.now()
		c.closedAt = &at
		if ev.Merged {
			c.pull.mergedAt, c.pull.mergeSHA = at, s.sha("merge")
		}
	}
	return &c
}
