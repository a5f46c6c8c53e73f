package runners

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

// SelectorHeaders read the headers that choose the organization.
type SelectorHeaders struct{ httpx.OrgSelector }

func (in SelectorHeaders) selector() Selector { return Selector(in.OrgSelector) }

type runnerIDInput struct {
	SelectorHeaders
	ID string `path:"id" doc:"Runner id"`
}

type createInput struct {
	SelectorHeaders
	Body RunnerCreate
}

type enrollmentInput struct {
	SelectorHeaders
	Body *EnrollmentCreate // optional: every field has a default
}

type patchInput struct {
	SelectorHeaders
	ID   string `path:"id" doc:"Runner id"`
	Body RunnerPatch
}

type statusInput struct {
	SelectorHeaders
	ID   string `path:"id" doc:"Runner id"`
	Body struct {
		Status string `json:"status" enum:"disabled,enabled"`
	}
}

// Register mounts the organization's runner endpoints.
func Register(api huma.API, s *Service) {
	ops := httpx.Operations{Tags: []string{"Runners"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
	const base = "/api/organization/runners"

	list := ops.Op("get_api_organization_runners", http.MethodGet, base, "The organization's runners with live dispatch signals")
	list.Description = "Any active member of the organization. Status, eligibility, slots and running work come from heartbeats."
	huma.Register(api, list, func(ctx context.Context, in *SelectorHeaders) (*httpx.Out[[]*Runner], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.List(ctx, u, in.selector()))
	})

	huma.Register(api, ops.Op("get_api_organization_runners_onboarding_status", http.MethodGet, base+"/onboarding-status",
		"How far the organization is with runners, and the next step"),
		func(ctx context.Context, in *SelectorHeaders) (*httpx.Out[*Onboarding], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Onboarding(ctx, u, in.selector()))
		})

	create := httpx.Created(ops.Op("post_api_organization_runners", http.MethodPost, base, "Create a runner with a static token (owner or admin)"))
	create.Description = "Returns the runner and its scrn_ token, shown once; only the token's hash is kept. Give it to the runner as SERVICE_RUNNER_TOKEN."
	huma.Register(api, create, func(ctx context.Context, in *createInput) (*httpx.Out[*CreatedRunner], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.Create(ctx, u, in.selector(), in.Body))
	})

	enroll := httpx.Created(ops.Op("post_api_organization_runners_enrollment_tokens", http.MethodPost, base+"/enrollment-tokens",
		"Mint a single-use enrollment token (owner or admin)"))
	enroll.Description = "The runner redeems it at boot (SERVICE_RUNNER_ENROLLMENT_TOKEN) for short-lived scrnj_ JWTs. Shown once; expires unused."
	huma.Register(api, enroll, func(ctx context.Context, in *enrollmentInput) (*httpx.Out[*Enrollment], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		body := EnrollmentCreate{}
		if in.Body != nil {
			body = *in.Body
		}
		return httpx.Reply(s.MintEnrollment(ctx, u, in.selector(), body))
	})

	patch := ops.Op("patch_api_organization_runners_id", http.MethodPatch, base+"/{id}", "Rename or re-scope a runner (owner or admin)")
	patch.Description = "Changes name, allowed_workspace_ids and allowed_labels; a class change is refused (400). Returns the refreshed runner."
	huma.Register(api, patch, func(ctx context.Context, in *patchInput) (*httpx.Out[*Runner], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.Patch(ctx, u, in.selector(), in.ID, in.Body))
	})

	del := ops.Op("delete_api_organization_runners_id", http.MethodDelete, base+"/{id}", "Delete a runner (owner or admin)")
	del.Description = "Its token stops working at once; work it had started fails, work it had not started runs elsewhere."
	huma.Register(api, del, func(ctx context.Context, in *runnerIDInput) (*httpx.DeletedOutput, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.Delete(ctx, u, in.selector(), in.ID); err != nil {
			return nil, err
		}
		return httpx.Deleted(), nil
	})

	huma.Register(api, ops.Op("post_api_organization_runners_id_drain", http.MethodPost, base+"/{id}/drain",
		"Drain a runner: its running work finishes, it gets no new work (owner or admin)"),
		func(ctx context.Context, in *runnerIDInput) (*httpx.Out[*Runner], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Drain(ctx, u, in.selector(), in.ID))
		})

	status := ops.Op("post_api_organization_runners_id_status", http.MethodPost, base+"/{id}/status", "Disable or enable a runner (owner or admin)")
	status.Description = "disabled: no new work, running work finishes. enabled: takes work again (also ends a drain)."
	huma.Register(api, status, func(ctx context.Context, in *statusInput) (*httpx.Out[*Runner], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.SetStatus(ctx, u, in.selector(), in.ID, in.Body.Status))
	})

	rotate := ops.Op("post_api_organization_runners_id_rotate_token", http.MethodPost, base+"/{id}/rotate-token", "Rotate a runner's token (owner or admin)")
	rotate.Description = "The old credential is refused at once. A static runner gets a new scrn_ token; an enrolled runner's JWTs are revoked and it gets an enrollment token that re-enrols it. Shown once."
	huma.Register(api, rotate, func(ctx context.Context, in *runnerIDInput) (*httpx.Out[*RotatedToken], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.RotateToken(ctx, u, in.selector(), in.ID))
	})
}
