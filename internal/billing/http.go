package billing

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
)

type planIDInput struct {
	PlanID string `path:"plan_id" maxLength:"100"`
}

type planUpdateInput struct {
	PlanID string `path:"plan_id" maxLength:"100"`
	Body   PlanUpdate
}

type overridesBoardInput struct {
	board.Query
	OverrideFilter
}

type overrideCreateInput struct {
	Body OverrideCreate
}

type overrideIDInput struct {
	OverrideID string `path:"override_id"`
}

type assignInput struct {
	OrganizationID string `path:"organization_id"`
	Body           struct {
		PlanID string `json:"plan_id" minLength:"1" maxLength:"100"`
	}
}

// OrgHeaders read the headers that choose the organization.
type OrgHeaders struct{ httpx.OrgSelector }

func (h OrgHeaders) selector() Selector { return Selector(h.OrgSelector) }

type checkoutInput struct {
	OrgHeaders
	Body struct {
		PlanID string `json:"plan_id" minLength:"1" maxLength:"100" doc:"The plan to subscribe to (see GET /organization/billing)"`
	}
}

type stripeWebhookInput struct {
	Signature string `header:"Stripe-Signature" doc:"t=<unix time>,v1=<hex HMAC-SHA256 of \"t.body\"> with the webhook secret"`
	RawBody   []byte `contentType:"application/json"`
}

// WebhookAck acknowledges a provider's delivery.
type WebhookAck struct {
	Received bool   `json:"received"`
	Outcome  string `json:"outcome" doc:"applied (\"applied: the subscription as the provider holds it\" when an event tied with the state held and the subscription was read from the provider), duplicate (a replay), stale (older than the state held), ignored (a type billing does not act on), or pending: why it waits"`
}

type customersInput struct {
	Q        string `query:"q" maxLength:"200" doc:"An organization's or a workspace's name"`
	Page     int    `query:"page" minimum:"1" default:"1"`
	PageSize int    `query:"page_size" minimum:"1" maximum:"200" default:"50"`
}

type seatTypeInput struct {
	OrgHeaders
	UserID string `path:"user_id"`
	Body   struct {
		SeatType *string `json:"seat_type" required:"true" nullable:"true" maxLength:"100" doc:"A seat type's id; null or empty: the standard seat"`
	}
}

// AssignedPlan answers a plan assignment.
type AssignedPlan struct {
	OrganizationID string `json:"organization_id"`
	PlanID         string `json:"plan_id"`
}

// admin is the instance admin making the request (403 otherwise).
func admin(ctx context.Context) (*actor.User, error) {
	return actor.RequireAdmin(ctx)
}

// Register mounts the owner console's plans and overrides operations, and
// the workspace's own view of its entitlements.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context)), orgs Orgs) {
	wsOps := httpx.Operations{Tags: []string{"Organization"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	huma.Register(api, wsOps.Op("get_api_entitlements", http.MethodGet, "/api/entitlements",
		"What the active workspace's organization may use: each feature's value from its plan and overrides, the chain, and the usage"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]EntitlementDecision], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			ws, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
			return httpx.Reply(s.Entitlements(ctx, ws, u))
		})
	ops := httpx.Operations{Tags: []string{"Admin"}, Security: httpx.SessionSecurity}
	// Authenticated before the body is read (an anonymous caller is 401,
	// never a validation error).
	orgOps := httpx.Operations{Tags: []string{"Organization"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
	huma.Register(api, orgOps.Op("get_organization_seat_summary", http.MethodGet, "/organization/seat-summary",
		"Included against active seats, the seats beyond them, the add-on lines and the monthly total, computed on the server"),
		func(ctx context.Context, in *OrgHeaders) (*httpx.Out[*SeatSummary], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			orgID, _, err := orgs(ctx, u, in.selector())
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SeatSummary(ctx, orgID))
		})
	huma.Register(api, orgOps.Op("get_organization_seat_types", http.MethodGet, "/organization/seat-types",
		"The seat types a member can be given, with their monthly price"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]SeatType], error) {
			if _, err := actor.RequireApproved(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.SeatTypes(ctx))
		})
	huma.Register(api, orgOps.Op("put_organization_members_user_id_seat_type", http.MethodPut, "/organization/members/{user_id}/seat-type",
		"Give a member a seat type, or the standard seat with null (owner or admin; audited)"),
		func(ctx context.Context, in *seatTypeInput) (*httpx.Out[*MemberSeat], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			orgID, role, err := orgs(ctx, u, in.selector())
			if err != nil {
				return nil, err
			}
			seat := ""
			if in.Body.SeatType != nil {
				seat = *in.Body.SeatType
			}
			return httpx.Reply(s.SetSeatType(ctx, u, orgID, role, in.UserID, seat))
		})
	huma.Register(api, orgOps.Op("get_organization_billing", http.MethodGet, "/organization/billing",
		"The organization's plan and subscription, whether the instance takes payments, and the plans its owner can check out"),
		func(ctx context.Context, in *OrgHeaders) (*httpx.Out[*Account], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			orgID, role, err := orgs(ctx, u, in.selector())
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Account(ctx, orgID, role))
		})
	huma.Register(api, orgOps.Op("post_organization_billing_checkout", http.MethodPost, "/organization/billing/checkout",
		"Open the payment provider's checkout of a plan (owner only); the subscription's events move the organization onto it"),
		func(ctx context.Context, in *checkoutInput) (*httpx.Out[*BillingLink], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			orgID, role, err := orgs(ctx, u, in.selector())
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Checkout(ctx, u, orgID, role, in.Body.PlanID))
		})
	huma.Register(api, orgOps.Op("post_organization_billing_portal", http.MethodPost, "/organization/billing/portal",
		"Open the payment provider's billing portal: payment methods, invoices, plan changes, cancellation (owner only)"),
		func(ctx context.Context, in *OrgHeaders) (*httpx.Out[*BillingLink], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			orgID, role, err := orgs(ctx, u, in.selector())
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Portal(ctx, orgID, role))
		})
	hook := httpx.BodyLimit(httpx.Operations{Tags: []string{"Billing"}}.Op("post_api_billing_webhooks_stripe", http.MethodPost, "/api/billing/webhooks/stripe",
		"Stripe's events: verified by Stripe-Signature, stored once by id, applied in the order Stripe made them"), MaxEventBytes)
	hook.Description = "404 without STRIPE_WEBHOOK_SECRET; 400 for a signature that does not verify."
	hook.SkipValidateBody = true // the raw body is Stripe's, checked by its signature
	huma.Register(api, hook, func(ctx context.Context, in *stripeWebhookInput) (*httpx.Out[*WebhookAck], error) {
		outcome, err := s.Receive(ctx, in.RawBody, in.Signature)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(&WebhookAck{Received: true, Outcome: outcome}, nil)
	})
	huma.Register(api, ops.Op("get_api_admin_queues", http.MethodGet, "/api/admin/queues",
		"The payment provider's events: total received, pending, and how reconciliation stands (read-only)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[*Queue], error) {
			if _, err := admin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.Queues(ctx))
		})
	huma.Register(api, ops.Op("get_api_admin_customers", http.MethodGet, "/api/admin/customers",
		"Every workspace grouped by its organization, with the organization's plan and subscription (organizations paged by name)"),
		func(ctx context.Context, in *customersInput) (*httpx.Out[*Customers], error) {
			if _, err := admin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.CustomerList(ctx, in.Q, in.Page, in.PageSize))
		})
	huma.Register(api, ops.Op("get_api_admin_plans", http.MethodGet, "/api/admin/plans", "Every billing plan, inactive and non-public included"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]BillingPlan], error) {
			if _, err := admin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.Plans(ctx))
		})
	huma.Register(api, ops.Op("put_api_admin_plans_plan_id_", http.MethodPut, "/api/admin/plans/{plan_id}",
		"Change a plan for every organization on it at once (audited with before and after)"),
		func(ctx context.Context, in *planUpdateInput) (*httpx.Out[*BillingPlan], error) {
			u, err := admin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.UpdatePlan(ctx, u, in.PlanID, in.Body))
		})
	huma.Register(api, ops.Op("post_api_admin_plans_plan_id_stripe_sync", http.MethodPost, "/api/admin/plans/{plan_id}/stripe-sync",
		"Preview reconciling a plan with its Stripe prices: whether one sells it as it stands and what a rotation would do; moves no money"),
		func(ctx context.Context, in *planIDInput) (*httpx.Out[*StripeSync], error) {
			if _, err := admin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.StripeSyncPreview(ctx, in.PlanID))
		})
	huma.Register(api, ops.Op("get_api_admin_entitlement_features", http.MethodGet, "/api/admin/entitlement-features",
		"The entitlement keys Slipway enforces, with what each takes and its Community default"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]EntitlementFeature], error) {
			if _, err := admin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(Features, nil)
		})
	huma.Register(api, ops.Op("get_api_admin_overrides_board", http.MethodGet, "/api/admin/overrides/board",
		"A page of entitlement overrides with feature, scope and status facets; q searches feature and reason"),
		func(ctx context.Context, in *overridesBoardInput) (*httpx.Out[*board.Board[Override]], error) {
			if _, err := admin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.OverridesBoard(ctx, in.Query, in.OverrideFilter))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_admin_overrides", http.MethodPost, "/api/admin/overrides",
		"Grant an override: global without a scope, or for a workspace, a user, or both (audited)")),
		func(ctx context.Context, in *overrideCreateInput) (*httpx.Out[*Override], error) {
			u, err := admin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Grant(ctx, u, in.Body))
		})
	huma.Register(api, ops.Op("post_api_admin_overrides_override_id_revoke", http.MethodPost, "/api/admin/overrides/{override_id}/revoke",
		"Revoke an override: the row stays, stamped revoked (audited)"),
		func(ctx context.Context, in *overrideIDInput) (*httpx.Out[*Override], error) {
			u, err := admin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Revoke(ctx, u, in.OverrideID))
		})
	huma.Register(api, ops.Op("put_api_admin_organizations_organization_id_plan", http.MethodPut, "/api/admin/organizations/{organization_id}/plan",
		"Put an organization on a plan without a payment provider (audited)"),
		func(ctx context.Context, in *assignInput) (*httpx.Out[*AssignedPlan], error) {
			u, err := admin(ctx)
			if err != nil {
				return nil, err
			}
			if err := s.AssignPlan(ctx, u, in.OrganizationID, in.Body.PlanID); err != nil {
				return nil, err
			}
			return httpx.Reply(&AssignedPlan{OrganizationID: in.OrganizationID, PlanID: in.Body.PlanID}, nil)
		})
}
