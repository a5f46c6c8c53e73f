package runners

import (
	"context"
	"errors"
	"strings"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/text"
	tokens "slipway/internal/platform/token"
)

// Identity is an authenticated runner.
type Identity struct {
	RunnerID       string
	OrganizationID string
	Class          string
	JWT            bool // authenticated by a scrnj_ JWT (else a static token)
}

// Owner is the runner's worker id.
func (i *Identity) Owner() string { return Owner(i.RunnerID) }

// ErrBadToken refuses a runner credential: unknown, expired, revoked (a
// rotation or a deleted runner), or not a runner token.
var ErrBadToken = apperr.New(apperr.CodeUnauthorized, "unknown, expired or revoked runner token")

// Authenticate resolves a runner bearer token (scrn_ or scrnj_).
func (s *Service) Authenticate(ctx context.Context, token string) (*Identity, error) {
	var r *row
	var err error
	switch {
	case strings.HasPrefix(token, JWTPrefix):
		c, verr := s.signer.verify(token, s.clock.Now())
		if verr != nil {
			return nil, ErrBadToken
		}
		r, err = runnerByID(ctx, s.db.R, c.Subject)
		if err == nil && (r.Class != ClassEnrolled || r.TokenGen != c.Generation || r.OrganizationID != c.Organization) {
			return nil, ErrBadToken
		}
	case strings.HasPrefix(token, StaticPrefix):
		r, err = runnerByTokenHash(ctx, s.db.R, tokens.Hash(token))
	default:
		return nil, ErrBadToken
	}
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, ErrBadToken
	}
	if err != nil {
		return nil, err
	}
	return &Identity{RunnerID: r.ID, OrganizationID: r.OrganizationID, Class: r.Class, JWT: r.Class == ClassEnrolled}, nil
}

// Token is a runner JWT with its expiry.
type Token struct {
	RunnerID  string    `json:"runner_id" format:"uuid"`
	Token     string    `json:"token" doc:"A scrnj_ JWT for the runner API"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *Service) jwt(r *row, now time.Time) *Token {
	exp := now.Add(s.cfg.JWTLifetime).Truncate(time.Second)
	t := s.signer.sign(Claims{Subject: r.ID, Organization: r.OrganizationID, Generation: r.TokenGen, Scope: jwtScope,
		IssuedAt: now.Unix(), ExpiresAt: exp.Unix()})
	return &Token{RunnerID: r.ID, Token: t, ExpiresAt: exp.UTC()}
}

// ErrBadEnrollment refuses an enrollment token; one message for unknown,
// expired and already redeemed, so a token cannot be probed.
var ErrBadEnrollment = apperr.New(apperr.CodeUnauthorized, "unknown, expired or already redeemed enrollment token; mint a new one")

// Enroll redeems a single-use enrollment token for a runner JWT: a new
// enrolled runner (named by the token, else by the runner), or the runner
// the token re-enrols after a rotation.
func (s *Service) Enroll(ctx context.Context, token, name string) (*Token, error) {
	if !strings.HasPrefix(token, EnrollmentPrefix) {
		return nil, ErrBadEnrollment
	}
	if name != "" {
		var err error
		if name, err = cleanName(name); err != nil {
			return nil, err
		}
	}
	var out *Token
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		now := s.clock.Now()
		e, err := redeem(ctx, tx, tokens.Hash(token), now)
		if errors.Is(err, apperr.ErrNotFound) {
			return ErrBadEnrollment
		}
		if err != nil {
			return err
		}
		var r *row
		if e.RunnerID != nil {
			if r, err = getRunner(ctx, tx, e.OrganizationID, *e.RunnerID); err != nil {
				return ErrBadEnrollment // the runner was deleted since
			}
		} else {
			n := e.Name
			if n == "" {
				n = name
			}
			if n == "" {
				n = "service-runner"
			}
			r = &row{ID: ids.New(), OrganizationID: e.OrganizationID, Name: n, Class: ClassEnrolled, TokenGen: 1, AllowedWS: e.AllowedWS,
				AllowedLabels: e.AllowedLabels, CreatedAt: now}
			if err := insertRunner(ctx, tx, r, nil, nil); err != nil {
				return err
			}
		}
		out = s.jwt(r, now)
		return nil
	})
	return out, err
}

// Refresh issues a new JWT for an enrolled runner (static tokens never
// expire).
func (s *Service) Refresh(ctx context.Context, id *Identity) (*Token, error) {
	if !id.JWT {
		return nil, apperr.BadRequest("a static runner token does not expire; there is nothing to refresh")
	}
	r, err := runnerByID(ctx, s.db.R, id.RunnerID)
	if err != nil {
		return nil, ErrBadToken
	}
	return s.jwt(r, s.clock.Now()), nil
}

// Heartbeat is what a runner reports of itself.
type Heartbeat struct {
	Labels   []string `json:"labels,omitempty" maxItems:"50" doc:"SERVICE_RUNNER_LABELS"`
	Version  string   `json:"version" maxLength:"100"`
	Backend  string   `json:"backend" maxLength:"40"`
	Hostname string   `json:"hostname,omitempty" maxLength:"255"`
	Slots    int      `json:"slots" minimum:"0" maximum:"100000"`
	Running  int      `json:"running,omitempty" minimum:"0" maximum:"100000" doc:"Work it runs now (default 0)"`
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

// Heartbeat records that a runner is alive, with what it advertises.
func (s *Service) Heartbeat(ctx context.Context, id *Identity, in Heartbeat) (*HeartbeatReply, error) {
	labels, err := text.Labels("labels", in.Labels)
	if err != nil {
		return nil, err
	}
	for field, v := range map[string]string{"version": in.Version, "backend": in.Backend, "hostname": in.Hostname} {
		if err := text.CheckName(field, v); err != nil {
			return nil, err
		}
	}
	now := s.clock.Now()
	r, err := scanRunner(s.db.W.QueryRowContext(ctx, `UPDATE runners SET online = TRUE, last_heartbeat_at = $2, labels = $3, version = $4, backend = $5,
		hostname = $6, slots = $7, running = $8 WHERE id = $1 RETURNING `+runnerColumns,
		id.RunnerID, now, jobs.EncodeLabels(labels), in.Version, in.Backend, in.Hostname, in.Slots, in.Running))
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, ErrBadToken
	}
	if err != nil {
		return nil, err
	}
	v := s.view(r, now)
	return &HeartbeatReply{RunnerID: r.ID, Name: r.Name, Status: v.Status, Draining: r.Draining, Disabled: r.Disabled,
		StaleAfterSecs: int(s.cfg.Stale / time.Second), LeaseSecs: int(s.cfg.Lease / time.Second)}, nil
}
