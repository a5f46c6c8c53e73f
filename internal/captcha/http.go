package captcha

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/httpx"
)

type challengeOutput struct {
	CacheControl string `header:"Cache-Control"`
	Body         Challenge
}

type verifyInput struct {
	Body Envelope
}

type verifyOutput struct {
	Body struct {
		OK bool `json:"ok" doc:"True for a good, unspent solution of a live challenge"`
	}
}

// Register mounts the two public captcha operations.
func Register(api huma.API, s *Service) {
	public := httpx.Operations{Tags: []string{"Auth"}}
	challenge := public.Op("get_api_auth_captcha_challenge", http.MethodGet, "/api/auth/captcha/challenge", "Mint a captcha challenge")
	challenge.Description = "A proof-of-work challenge signed by the server: find a decimal `solution` so that " +
		"SHA-256(challenge + \":\" + solution) starts with `difficulty` zero bits, then send {challenge, solution} as `captcha` " +
		"with the request that asks for it. 400 when captcha is not enabled (no SERVICE_CAPTCHA_SECRET)."
	huma.Register(api, challenge, func(ctx context.Context, _ *struct{}) (*challengeOutput, error) {
		c, err := s.Mint()
		if err != nil {
			return nil, err
		}
		return &challengeOutput{CacheControl: "no-store", Body: c}, nil
	})
	verify := public.Op("post_api_auth_captcha_verify", http.MethodPost, "/api/auth/captcha/verify", "Check a solved captcha without spending it")
	verify.Description = "200 {ok} for a well-formed envelope: false for a wrong solution, a forged or expired challenge, or one already " +
		"spent. 400 only when captcha is not enabled or the envelope is malformed."
	huma.Register(api, verify, func(ctx context.Context, in *verifyInput) (*verifyOutput, error) {
		ok, err := s.Check(ctx, in.Body)
		if err != nil {
			return nil, err
		}
		out := &verifyOutput{}
		out.Body.OK = ok
		return out, nil
	})
}
