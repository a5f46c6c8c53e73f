// Package forge is Slipway's side of a git forge: GitHub, GitLab and
// Gitea/Forgejo behind one Provider interface (one conformance suite,
// forgetest, runs against each). A provider speaks to the forge's API with
// a credential from the workspace's resources; git itself still runs on
// the host side (package repo). Webhooks from a forge are verified and
// read into one Event shape.
package forge

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Kinds of forge (a project's provider, besides "local").
const (
	GitHub  = "github"
	GitLab  = "gitlab"
	Gitea   = "gitea"
	Forgejo = "forgejo" // Gitea's API, Forgejo's webhook header names too
)

// Kinds lists the forge kinds.
var Kinds = []string{GitHub, GitLab, Gitea, Forgejo}

// Bounds on what a provider reads from a forge (a forge is outside
// Slipway's control: its lists are capped, not trusted to end).
const (
	MaxRepos    = 1000
	MaxIssues   = 5000
	MaxChecks   = 200
	MaxBody     = 65536 // bytes of a PR, issue or comment body sent or kept
	PageSize    = 100
	MaxTitle    = 256 // bytes
	CallTimeout = 30 * time.Second
)

// Errors a provider answers with (wrapped with the forge's message).
var (
	ErrNotFound     = errors.New("forge: not found")
	ErrUnauthorized = errors.New("forge: the credential was refused")
	ErrForbidden    = errors.New("forge: the credential may not do that")
	ErrRateLimited  = errors.New("forge: rate limited")
	ErrInvalid      = errors.New("forge: the forge refused the request")
	ErrUnavailable  = errors.New("forge: the forge did not answer")
)

// Config says where a forge is and how to sign in to it.
type Config struct {
	Kind string
	// BaseURL is the forge's API root: https://api.github.com (GitHub
	// Enterprise Server: https://host/api/v3, used as given),
	// https://gitlab.example.com (the provider adds /api/v4),
	// https://gitea.example.com (the provider adds /api/v1).
	BaseURL string
	Token   string
	// HTTP is the client (nil: a client with CallTimeout).
	HTTP *http.Client
}

// Repo is a repository the credential can see.
type Repo struct {
	// FullName is owner/name (GitLab: the project's path with its groups).
	FullName      string `json:"full_name"`
	CloneURL      string `json:"clone_url"` // https
	WebURL        string `json:"web_url"`
	DefaultBranch string `json:"default_branch"`
	Private       bool   `json:"private"`
	Description   string `json:"description"`
}

// PR states.
const (
	PROpen   = "open"
	PRClosed = "closed"
	PRMerged = "merged"
)

// PR is a pull request (GitLab: a merge request).
type PR struct {
	Number  int    `json:"number"` // GitLab: the iid
	URL     string `json:"url"`    // the web page
	Title   string `json:"title"`
	State   string `json:"state" enum:"open,closed,merged"`
	Draft   bool   `json:"draft"`
	Head    string `json:"head"` // branch
	Base    string `json:"base"`
	HeadSHA string `json:"head_sha"`
}

// PRInput opens a pull request.
type PRInput struct {
	Title  string
	Body   string
	Head   string // the branch with the work (pushed already)
	Base   string
	Draft  bool
	Labels []string
}

// PRUpdate changes an open pull request; nil fields stay.
type PRUpdate struct {
	Title  *string
	Body   *string
	Draft  *bool
	Labels []string // nil: unchanged; set: these labels (added)
}

// Check states, and a commit's combined state.
const (
	CheckPending = "pending"
	CheckSuccess = "success"
	CheckFailure = "failure"
	// ChecksNone: the commit has no checks at all.
	ChecksNone = "none"
)

// Check is one status or check run on a commit.
type Check struct {
	Name  string `json:"name"`
	State string `json:"state" enum:"pending,success,failure"`
	URL   string `json:"url"`
}

// Checks are a commit's statuses and check runs, with their combined
// state: failure when any failed, else pending when any is pending, else
// success; none without any.
type Checks struct {
	State string  `json:"state" enum:"none,pending,success,failure"`
	Items []Check `json:"items"`
}

// Combine computes the combined state of checks.
func Combine(items []Check) Checks {
	c := Checks{State: ChecksNone, Items: items}
	if c.Items == nil {
		c.Items = []Check{}
	}
	pending := false
	for _, i := range items {
		switch i.State {
		case CheckFailure:
			c.State = CheckFailure
			return c
		case CheckPending:
			pending = true
		}
	}
	switch {
	case pending:
		c.State = CheckPending
	case len(items) > 0:
		c.State = CheckSuccess
	}
	return c
}

// Issue is an open or closed issue of a repository (never a pull request:
// GitHub lists both, the provider keeps the issues).
type Issue struct {
	Number    int       `json:"number"` // GitLab: the iid
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	URL       string    `json:"url"`
	State     string    `json:"state" enum:"open,closed"`
	Labels    []string  `json:"labels"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Hook is a webhook installed on a repository.
type Hook struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

// Provider is one forge, signed in with one credential. A provider never
// retries or waits: a caller that gets ErrRateLimited backs off itself.
type Provider interface {
	Kind() string
	// ListRepos lists the repositories the credential can see (at most
	// MaxRepos), by full name.
	ListRepos(ctx context.Context) ([]Repo, error)
	GetRepo(ctx context.Context, repo string) (*Repo, error)
	// OpenPR opens a pull request; when it opened but its labels failed,
	// it is answered with the error (so a retry opens no second one).
	OpenPR(ctx context.Context, repo string, in PRInput) (*PR, error)
	UpdatePR(ctx context.Context, repo string, number int, in PRUpdate) (*PR, error)
	ClosePR(ctx context.Context, repo string, number int) (*PR, error)
	GetPR(ctx context.Context, repo string, number int) (*PR, error)
	// FindPR finds the open pull request whose head is branch (nil, nil
	// when none is open): a caller that may have opened one before a
	// crash looks before opening another.
	FindPR(ctx context.Context, repo, branch string) (*PR, error)
	// Checks reads the statuses and check runs of a commit.
	Checks(ctx context.Context, repo, sha string) (*Checks, error)
	// ListIssues lists the repository's open issues (at most MaxIssues;
	// past that, a forge that lists newest first keeps the newest), oldest
	// first.
	ListIssues(ctx context.Context, repo string) ([]Issue, error)
	Comment(ctx context.Context, repo string, number int, body string) error
	// InstallHook installs a webhook sending pull request, issue and
	// check events to url, signed with secret.
	InstallHook(ctx context.Context, repo, url, secret string) (*Hook, error)
}

// Event types read from a webhook.
const (
	EventPing        = "ping"
	EventPullRequest = "pull_request"
	EventIssue       = "issue"
	EventCheck       = "check"
	EventOther       = "other"
)

// Event is what a webhook delivery says, in one shape for every forge.
type Event struct {
	// Delivery is the forge's id of the delivery (replays carry the same).
	Delivery string
	Type     string
	Repo     string // full name
	// Pull request events: its number, state (merged when merged) and
	// head commit.
	PR *PR
	// Issue events.
	Issue *Issue
	// Check events: the commit whose checks changed.
	SHA string
}

// Webhook reading errors.
var (
	ErrSignature = errors.New("forge: the webhook's signature is missing or wrong")
	ErrPayload   = errors.New("forge: the webhook's body is not an event")
)

// ReadWebhook verifies a forge's webhook delivery with the secret the
// hook was installed with and reads it; ErrSignature when the signature
// (GitLab: the token) is missing or wrong, ErrPayload when the body is
// not an event. Each forge package implements one.
type ReadWebhook func(h http.Header, body []byte, secret string) (*Event, error)

// Access is a forge resource opened: its provider, and what git sends
// over https to reach its repositories. The token stays on the host side:
// git runs there, never in an agent's container.
type Access struct {
	ResourceID string
	Kind       string
	BaseURL    string
	Provider   Provider
	GitUser    string
	Token      string
}
