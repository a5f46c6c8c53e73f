package billing

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/httpx"
)

// RegisterPublic mounts what anyone may read without signing in: the
// public plans page's plans.
func RegisterPublic(api huma.API, s *Service) {
	ops := httpx.Operations{Tags: []string{"Plans"}}
	huma.Register(api, ops.Op("get_api_plans", http.MethodGet, "/api/plans",
		"The active, public plans, cheapest first (no sign-in needed: the public plans page)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]PublicPlan], error) {
			return httpx.Reply(s.PublicPlans(ctx))
		})
}
