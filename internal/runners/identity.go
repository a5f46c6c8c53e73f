package runners

import (
	"context"
	"errors"
	"strings"
	"time"

	"slipway/internal/dispatch"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/text"
	tokens "slipway/internal/platform/token"
	"slipway/internal/runnerapi"
)

// Identity is an authenticated runner.
type Identity struct {
	RunnerID       string
	OrganizationID string
	Class          string
	JWT            bool // authenticated by a scrnj_ JWT (else a static token)
}

// Owner is the runner's worker id.
func (i *Identity) Owner() string { return runnerapi.Owner(i.RunnerID) }

// ErrBadToken refuses a runner credential: unknown, expired, revoked (a
// rotation or a deleted runner), or not a runner token.
var ErrBadToken = apperr.New(apperr.CodeUnauthorized, "unknown, expired or revoked runner token")

// Authenticate resolves a runner bearer token (scrn_ or scrnj_).
func (s *Service) Authenticate(ctx context.Context, token string) (*Identity, error) {
	var r *row
	var err error
	switch {
	case strings.HasPrefix(token, runnerapi.JWTPrefix):
		c, verr := s.signer.verify(token, s.clock.Now())
		if verr != nil {
			return nil, ErrBadToken
		}
		r, err = runnerByID(ctx, s.db.R, c.Subject)
		if err == nil && (r.Class != ClassEnrolled || r.TokenGen != c.Generation || r.OrganizationID != c.Organization) {
			return nil, ErrBadToken
		}
	case strings.HasPrefix(token, runnerapi.StaticPrefix):
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

func (s *Service) jwt(r *row, now time.Time) *runnerapi.Token {
	exp := now.Add(s.cfg.JWTLifetime).Truncate(time.Second)
	t := s.signer.sign(runnerapi.Claims{Subject: r.ID, Organization: r.OrganizationID, Generation: r.TokenGen, Scope: runnerapi.JWTScope,
		IssuedAt: now.Unix(), ExpiresAt: exp.Unix()})
	return &runnerapi.Token{RunnerID: r.ID, Token: t, ExpiresAt: exp.UTC()}
}

// ErrBadEnrollment refuses an enrollment token; one message for unknown,
// expired and already redeemed, so a token cannot be probed.
var ErrBadEnrollment = apperr.New(apperr.CodeUnauthorized, "unknown, expired or already redeemed enrollment token; mint a new one")

// Enroll redeems a single-use enrollment token for a runner JWT: a new
// enrolled runner (named by the token, else by the runner), or the runner
// the token re-enrols after a rotation.
func (s *Service) Enroll(ctx context.Context, token, name string) (*runnerapi.Token, error) {
	if !strings.HasPrefix(token, runnerapi.EnrollmentPrefix) {
		return nil, ErrBadEnrollment
	}
	if name != "" {
		var err error
		if name, err = cleanName(name); err != nil {
			return nil, err
		}
	}
	var out *runnerapi.Token
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
			if err := s.checkQuota(ctx, tx, e.OrganizationID, ""); err != nil {
				return err
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
func (s *Service) Refresh(ctx context.Context, id *Identity) (*runnerapi.Token, error) {
	if !id.JWT {
		return nil, apperr.BadRequest("a static runner token does not expire; there is nothing to refresh")
	}
	r, err := runnerByID(ctx, s.db.R, id.RunnerID)
	if err != nil {
		return nil, ErrBadToken
	}
	return s.jwt(r, s.clock.Now()), nil
}

// Heartbeat records that a runner is alive, with what it advertises.
func (s *Service) Heartbeat(ctx context.Context, id *Identity, in runnerapi.Heartbeat) (*runnerapi.HeartbeatReply, error) {
	labels, err := text.Labels("labels", in.Labels)
	if err != nil {
		return nil, err
	}
	for field, v := range map[string]string{"version": in.Version, "backend": in.Backend, "hostname": in.Hostname} {
		if err := text.CheckName(field, v); err != nil {
			return nil, err
		}
	}
	// A backend's error, in the runner's words: shown, never refused.
	unhealthy := strings.TrimSpace(text.StripControls(in.Unhealthy))
	now := s.clock.Now()
	r, err := scanRunner(s.db.W.QueryRowContext(ctx, `UPDATE runners SET online = TRUE, last_heartbeat_at = $2, labels = $3, version = $4, backend = $5,
		hostname = $6, slots = $7, running = $8, unhealthy = $9 WHERE id = $1 RETURNING `+runnerColumns,
		id.RunnerID, now, jobs.EncodeLabels(labels), in.Version, in.Backend, in.Hostname, in.Slots, in.Running, unhealthy))
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, ErrBadToken
	}
	if err != nil {
		return nil, err
	}
	v := s.view(r, now)
	return &runnerapi.HeartbeatReply{RunnerID: r.ID, Name: r.Name, Status: v.Status, Draining: r.Draining, Disabled: r.Disabled,
		StaleAfterSecs: int(s.cfg.Stale / time.Second), LeaseSecs: int(s.cfg.Lease / time.Second)}, nil
}

// Goodbye takes a runner that stops cleanly offline at once: work does not
// wait the stale window for it, what it still holds goes back to the queue
// (it gave its work back before saying goodbye), and, without fleet_only,
// unlabelled work no runner can take any more moves to the server.
func (s *Service) Goodbye(ctx context.Context, id *Identity) error {
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := exec(ctx, tx, `UPDATE runners SET online = FALSE, running = 0 WHERE id = $1`, id.RunnerID); err != nil {
			return err
		}
		return s.bus.PublishTx(ctx, tx, dispatch.TopicRematch, id.RunnerID)
	})
	if errors.Is(err, apperr.ErrNotFound) {
		return ErrBadToken
	}
	if err != nil {
		return err
	}
	n, err := s.queue.Expire(ctx, id.Owner())
	if err != nil {
		return err
	}
	s.log.Info("runner said goodbye: offline now", "runner_id", id.RunnerID, "work_taken_back", n)
	if s.cfg.HubMode && !s.cfg.FleetOnly {
		return s.fallBack(ctx)
	}
	return nil
}
