// Package runnerapi holds the runner API's paths, limits and wire types:
// what a remote runner (package runner) sends to the hub and what the hub
// (package runners, which serves the API) answers, with the runner tokens'
// prefixes and claims. Both sides import it; it imports no hub code, so a
// runner binary carries none.
package runnerapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"slipway/internal/workport"
)

// APIVersion is the runner API version this hub speaks (its path segment).
const APIVersion = "v1"

// APIPrefix is where the runner API lives.
const APIPrefix = "/api/runner/" + APIVersion

// MaxWait bounds a long poll (claims and control), well under the
// timeouts of proxies between runners and the hub.
const MaxWait = 30 * time.Second

// Owner is the worker id (lease owner and agents' instance label) of a
// runner.
func Owner(runnerID string) string { return workport.RunnerPrefix + runnerID }

// Assignments is the answer of claim and held.
type Assignments struct {
	Assignments []workport.Assignment `json:"assignments"`
}

// Ack acknowledges a request ({ok}).
type Ack struct {
	OK bool `json:"ok"`
}

// ExtendReply is the answer of extend.
type ExtendReply struct {
	Cancel bool                 `json:"cancel" doc:"Stop the work: it was cancelled"`
	Inbox  []workport.InboxLine `json:"inbox" doc:"Lines for the agent's stdin after inbox_after, in order"`
}

// Control is one directive for a runner's work.
type Control struct {
	JobID  string `json:"job_id"`
	Action string `json:"action" enum:"cancel,deliver" doc:"cancel: stop the work; deliver: the agent's inbox has lines, extend now"`
}

// Controls is the answer of control.
type Controls struct {
	Controls []Control `json:"controls"`
}

// Token is a runner JWT with its expiry.
type Token struct {
	RunnerID  string    `json:"runner_id" format:"uuid"`
	Token     string    `json:"token" doc:"A scrnj_ JWT for the runner API"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Heartbeat is what a runner reports of itself.
type Heartbeat struct {
	Labels   []string `json:"labels,omitempty" maxItems:"50" doc:"SERVICE_RUNNER_LABELS"`
	Version  string   `json:"version" maxLength:"100"`
	Backend  string   `json:"backend" maxLength:"40"`
	Hostname string   `json:"hostname,omitempty" maxLength:"255"`
	Slots    int      `json:"slots" minimum:"0" maximum:"100000"`
	Running  int      `json:"running,omitempty" minimum:"0" maximum:"100000" doc:"Work it runs now (default 0)"`
	// Unhealthy says why the execution backend cannot run work now (its
	// check failed); the hub gives such a runner no work.
	Unhealthy string `json:"unhealthy,omitempty" maxLength:"500" doc:"Why the execution backend cannot run work now; absent while it can"`
}

// HeartbeatReply tells a runner who it is and what the hub expects.
type HeartbeatReply struct {
	RunnerID       string `json:"runner_id" format:"uuid"`
	Name           string `json:"name"`
	Status         string `json:"status" enum:"online,offline,draining,disabled"`
	Draining       bool   `json:"draining"`
	Disabled       bool   `json:"disabled"`
	StaleAfterSecs int    `json:"stale_after_secs" doc:"A runner without a heartbeat this long goes offline"`
	LeaseSecs      int    `json:"lease_secs" doc:"How long a lease lasts without renewal"`
}

// Token prefixes: static runner tokens and runner JWTs are the spec's;
// enrollment tokens are ours (they never travel as bearer tokens).
const (
	StaticPrefix     = "scrn_"
	JWTPrefix        = "scrnj_"
	EnrollmentPrefix = "scrne_"
)

// Claims of a runner JWT: the runner, its organization, the token
// generation (a rotation bumps the runner's and refuses older tokens) and
// the lifetime.
type Claims struct {
	Subject      string `json:"sub"`
	Organization string `json:"org"`
	Generation   int    `json:"gen"`
	Scope        string `json:"scope"`
	IssuedAt     int64  `json:"iat"`
	ExpiresAt    int64  `json:"exp"`
}

// JWTScope is the only scope runner JWTs carry: the runner API.
const JWTScope = "runner"

var (
	// JWTHeader is every runner JWT's header, encoded.
	JWTHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	// ErrBadJWT: not a runner JWT of this hub, or expired.
	ErrBadJWT = errors.New("runners: invalid or expired runner token")
)

// ParseClaims reads a runner JWT's claims without verifying it (a runner
// reads its own token's expiry this way; only the hub can verify it).
func ParseClaims(token string) (*Claims, error) {
	rest, ok := strings.CutPrefix(token, JWTPrefix)
	if !ok {
		return nil, ErrBadJWT
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[0] != JWTHeader {
		return nil, ErrBadJWT
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, ErrBadJWT
	}
	var c Claims
	if err := json.Unmarshal(raw, &c); err != nil || c.ExpiresAt == 0 {
		return nil, ErrBadJWT
	}
	return &c, nil
}
