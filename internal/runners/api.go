package runners

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/dispatch"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/jobs"
	"slipway/internal/runnerapi"
	"slipway/internal/workport"
)

// Port is the hub's side of the worker port, as the runner API serves it.
type Port interface {
	ClaimMatching(ctx context.Context, req workport.ClaimRequest, match dispatch.MatchFunc) ([]workport.Assignment, error)
	Extend(ctx context.Context, l workport.Lease, inboxAfter int64) (workport.Directive, error)
	Append(ctx context.Context, l workport.Lease, b workport.Batch) error
	Finish(ctx context.Context, l workport.Lease, r workport.Result) error
	Held(ctx context.Context, workerID string) ([]workport.Assignment, error)
	VerifyRun(ctx context.Context, l workport.Lease) error
	Controls(ctx context.Context, workerID string, wait time.Duration) ([]workport.Control, error)
}

// Security is the runner API's OpenAPI security requirement.
var Security = []map[string][]string{{"runnerToken": {}}}

type identityKey struct{}

// IdentityFrom returns the runner a request is from.
func IdentityFrom(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(*Identity)
	return id, ok
}

// ErrClientCert refuses a runner without a client certificate when the hub
// requires mutual TLS.
var ErrClientCert = apperr.New(apperr.CodeUnauthorized, "this hub requires a client certificate (mutual TLS) on the runner API: set SERVICE_RUNNER_TLS_CLIENT_CERT_PATH and _KEY_PATH")

// authenticate is the runner API's middleware: a client certificate when
// the hub requires one (checked first, before anything else), then a
// runner bearer token.
func (s *Service) authenticate(api huma.API, requireCert, needToken bool) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		ctx := hctx.Context()
		fail := func(err error) {
			e := httpx.FromError(ctx, err)
			_ = huma.WriteErr(api, hctx, e.GetStatus(), e.Message, e)
		}
		if requireCert {
			if st := hctx.TLS(); st == nil || len(st.PeerCertificates) == 0 {
				fail(ErrClientCert)
				return
			}
		}
		if !needToken {
			next(hctx)
			return
		}
		token, ok := bearer(hctx.Header("Authorization"))
		if !ok {
			fail(apperr.New(apperr.CodeUnauthorized, "the runner API needs a runner token: Authorization: Bearer scrn_… or scrnj_…"))
			return
		}
		id, err := s.Authenticate(ctx, token)
		if err != nil {
			fail(err)
			return
		}
		next(huma.WithValue(hctx, identityKey{}, id))
	}
}

func bearer(h string) (string, bool) {
	const p = "Bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	return h[len(p):], true
}

// ErrLeaseLost answers a runner whose lease is gone (409): stop the work,
// report nothing.
var ErrLeaseLost = apperr.New(apperr.CodeConflict, "lease lost: this work is no longer this runner's")

func leaseErr(err error) error {
	if errors.Is(err, workport.ErrLeaseLost) {
		return ErrLeaseLost
	}
	return err
}

type enrollInput struct {
	Body struct {
		Token string `json:"token" maxLength:"200" doc:"The single-use enrollment token"`
		Name  string `json:"name,omitempty" maxLength:"100" doc:"SERVICE_RUNNER_NAME, used when the token names no runner"`
	}
}

type claimInput struct {
	Body struct {
		Max     int    `json:"max" minimum:"1" maximum:"1000" doc:"Free slots"`
		WaitMs  int    `json:"wait_ms,omitempty" minimum:"0" maximum:"60000" doc:"Long-poll bound (capped at 30 s); 0 answers at once"`
		Backend string `json:"backend" maxLength:"40"`
	}
}

type leaseInput struct {
	JobID string `path:"job_id"`
	Body  struct {
		Lease      workport.Lease `json:"lease"`
		InboxAfter int64          `json:"inbox_after,omitempty" minimum:"0" doc:"The last inbox line the runner handed to the agent"`
	}
}

type eventsInput struct {
	JobID string `path:"job_id"`
	Body  struct {
		Lease workport.Lease `json:"lease"`
		Batch workport.Batch `json:"batch"`
	}
}

type finishInput struct {
	JobID string `path:"job_id"`
	Body  struct {
		Lease  workport.Lease  `json:"lease"`
		Result workport.Result `json:"result"`
	}
}

type controlInput struct {
	WaitMs int `query:"wait_ms" minimum:"0" maximum:"60000" doc:"Long-poll bound (capped at 30 s)"`
}

func wait(ms int) time.Duration { return min(time.Duration(ms)*time.Millisecond, runnerapi.MaxWait) }

// RegisterAPI mounts the runner API: the worker port over HTTPS. With
// requireCert (a client CA is configured) every route needs a verified
// client certificate.
func RegisterAPI(api huma.API, s *Service, port Port, requireCert bool) {
	ops := httpx.Operations{Tags: []string{"Runner API"}, Security: Security,
		Middlewares: huma.Middlewares{s.authenticate(api, requireCert, true)}}
	open := httpx.Operations{Tags: []string{"Runner API"}, Middlewares: huma.Middlewares{s.authenticate(api, requireCert, false)}}

	// own checks that a lease is the caller's and names the path's job
	// (the port then holds the job to that owner and attempt).
	own := func(ctx context.Context, jobID string, l workport.Lease) error {
		id, _ := IdentityFrom(ctx)
		if id == nil || l.JobID != jobID || l.Worker != id.Owner() {
			return ErrLeaseLost
		}
		return nil
	}

	enroll := open.Op("post_api_runner_v1_enroll", http.MethodPost, runnerapi.APIPrefix+"/enroll", "Redeem an enrollment token for a runner JWT")
	enroll.Description = "Single-use: a second redeem is refused (401)."
	huma.Register(api, enroll, func(ctx context.Context, in *enrollInput) (*httpx.Out[*runnerapi.Token], error) {
		return httpx.Reply(s.Enroll(ctx, in.Body.Token, in.Body.Name))
	})

	huma.Register(api, ops.Op("post_api_runner_v1_token", http.MethodPost, runnerapi.APIPrefix+"/token", "Refresh the runner's JWT"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[*runnerapi.Token], error) {
			id, _ := IdentityFrom(ctx)
			return httpx.Reply(s.Refresh(ctx, id))
		})

	huma.Register(api, ops.Op("post_api_runner_v1_heartbeat", http.MethodPost, runnerapi.APIPrefix+"/heartbeat", "Report that the runner is alive"),
		func(ctx context.Context, in *struct{ Body runnerapi.Heartbeat }) (*httpx.Out[*runnerapi.HeartbeatReply], error) {
			id, _ := IdentityFrom(ctx)
			return httpx.Reply(s.Heartbeat(ctx, id, in.Body))
		})

	bye := ops.Op("post_api_runner_v1_goodbye", http.MethodPost, runnerapi.APIPrefix+"/goodbye", "Say the runner stops: offline at once")
	bye.Description = "A runner stopping cleanly says so after giving its work back: it goes offline at once instead of after the stale window, " +
		"and its next heartbeat brings it back."
	huma.Register(api, bye, func(ctx context.Context, _ *struct{}) (*httpx.Out[runnerapi.Ack], error) {
		id, _ := IdentityFrom(ctx)
		if err := s.Goodbye(ctx, id); err != nil {
			return nil, err
		}
		return httpx.Reply(runnerapi.Ack{OK: true}, nil)
	})

	claim := ops.Op("post_api_runner_v1_claim", http.MethodPost, runnerapi.APIPrefix+"/claim", "Claim work (long poll)")
	claim.Description = "Returns as soon as work the runner matches is assigned to it, or empty after wait_ms. A disabled, draining or offline runner gets none."
	huma.Register(api, claim, func(ctx context.Context, in *claimInput) (*httpx.Out[runnerapi.Assignments], error) {
		id, _ := IdentityFrom(ctx)
		as, err := port.ClaimMatching(ctx, workport.ClaimRequest{Worker: id.Owner(), Backend: in.Body.Backend, Max: in.Body.Max, Wait: wait(in.Body.WaitMs)},
			func(ctx context.Context) (*jobs.Match, error) { return s.Match(ctx, id.RunnerID) })
		if err != nil && ctx.Err() != nil {
			err = nil // the runner went away mid-poll
		}
		return httpx.Reply(runnerapi.Assignments{Assignments: nonNilAssignments(as)}, err)
	})

	huma.Register(api, ops.Op("get_api_runner_v1_held", http.MethodGet, runnerapi.APIPrefix+"/held", "Work a previous process of this runner held"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[runnerapi.Assignments], error) {
			id, _ := IdentityFrom(ctx)
			as, err := port.Held(ctx, id.Owner())
			return httpx.Reply(runnerapi.Assignments{Assignments: nonNilAssignments(as)}, err)
		})

	huma.Register(api, ops.Op("post_api_runner_v1_jobs_job_id_extend", http.MethodPost, runnerapi.APIPrefix+"/jobs/{job_id}/extend", "Renew a lease"),
		func(ctx context.Context, in *leaseInput) (*httpx.Out[runnerapi.ExtendReply], error) {
			if err := own(ctx, in.JobID, in.Body.Lease); err != nil {
				return nil, err
			}
			d, err := port.Extend(ctx, in.Body.Lease, in.Body.InboxAfter)
			inbox := d.Inbox
			if inbox == nil {
				inbox = []workport.InboxLine{}
			}
			return httpx.Reply(runnerapi.ExtendReply{Cancel: d.Cancel, Inbox: inbox}, leaseErr(err))
		})

	events := ops.Op("post_api_runner_v1_jobs_job_id_events", http.MethodPost, runnerapi.APIPrefix+"/jobs/{job_id}/events", "Upload a batch of events")
	events.Description = "Batches are numbered from 1 per lease; a repeated batch is stored once."
	events = httpx.BodyLimit(events, 16<<20)
	huma.Register(api, events, func(ctx context.Context, in *eventsInput) (*httpx.Out[runnerapi.Ack], error) {
		if err := own(ctx, in.JobID, in.Body.Lease); err != nil {
			return nil, err
		}
		if err := port.VerifyRun(ctx, in.Body.Lease); err != nil {
			return nil, leaseErr(err)
		}
		if err := port.Append(ctx, in.Body.Lease, in.Body.Batch); err != nil {
			return nil, leaseErr(err)
		}
		return httpx.Reply(runnerapi.Ack{OK: true}, nil)
	})

	// A finish carries a build's collected files (at most 20 MiB, base64
	// in JSON).
	finish := httpx.BodyLimit(ops.Op("post_api_runner_v1_jobs_job_id_finish", http.MethodPost, runnerapi.APIPrefix+"/jobs/{job_id}/finish", "Report how work ended"), 32<<20)
	huma.Register(api, finish,
		func(ctx context.Context, in *finishInput) (*httpx.Out[runnerapi.Ack], error) {
			if err := own(ctx, in.JobID, in.Body.Lease); err != nil {
				return nil, err
			}
			if !knownOutcome(in.Body.Result.Outcome) {
				return nil, apperr.BadRequest("result.outcome: unknown outcome %q", in.Body.Result.Outcome)
			}
			if err := port.Finish(ctx, in.Body.Lease, in.Body.Result); err != nil {
				return nil, leaseErr(err)
			}
			return httpx.Reply(runnerapi.Ack{OK: true}, nil)
		})

	control := ops.Op("get_api_runner_v1_control", http.MethodGet, runnerapi.APIPrefix+"/control", "Directives for the runner's work (long poll)")
	control.Description = "Cancels already requested come at once; new ones as they happen. Lease renewals carry the same directives."
	huma.Register(api, control, func(ctx context.Context, in *controlInput) (*httpx.Out[runnerapi.Controls], error) {
		id, _ := IdentityFrom(ctx)
		cs, err := port.Controls(ctx, id.Owner(), wait(in.WaitMs))
		if err != nil && ctx.Err() != nil {
			err = nil
		}
		out := runnerapi.Controls{Controls: []runnerapi.Control{}}
		for _, c := range cs {
			out.Controls = append(out.Controls, runnerapi.Control{JobID: c.JobID, Action: c.Action})
		}
		return httpx.Reply(out, err)
	})
}

func nonNilAssignments(as []workport.Assignment) []workport.Assignment {
	if as == nil {
		return []workport.Assignment{}
	}
	return as
}

func knownOutcome(o string) bool {
	switch o {
	case workport.Succeeded, workport.Failed, workport.Cancelled, workport.TimedOut, workport.Interrupted, workport.ShutDown:
		return true
	}
	return false
}
