package auth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/captcha"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
)

// OK is the request-style acknowledgement {ok}.
type OK struct {
	Body struct {
		OK bool `json:"ok"`
	}
}

func ok() *OK { return answer(true) }

func answer(b bool) *OK {
	o := &OK{}
	o.Body.OK = b
	return o
}

type registerInput struct {
	Body struct {
		Email       string `json:"email" maxLength:"254" doc:"Login email"`
		Password    string `json:"password" maxLength:"1024" doc:"At least 10 characters; not the email; not a common password"`
		DisplayName string `json:"display_name" maxLength:"100"`
	}
}

type loginInput struct {
	Body struct {
		Email    string            `json:"email" maxLength:"254"`
		Password string            `json:"password" maxLength:"1024"`
		Captcha  *captcha.Envelope `json:"captcha,omitempty" doc:"A solved captcha: lifts this account's sign-in throttle for this client, for this attempt"`
	}
}

// LoginBody is the answer to a sign-in. With 2FA armed it is
// {totp_required: true, totp_token} without a user and without cookies.
type LoginBody struct {
	TOTPRequired bool     `json:"totp_required"`
	TOTPToken    string   `json:"totp_token,omitempty" doc:"With totp_required: send it with a code to POST /api/auth/2fa/verify (valid 5 minutes)"`
	User         *Profile `json:"user,omitempty"`
}

type verify2FAInput struct {
	Body struct {
		Token   string            `json:"token" maxLength:"400" doc:"The login's totp_token"`
		Code    string            `json:"code" maxLength:"40" doc:"A code from the authenticator, or a recovery code"`
		Captcha *captcha.Envelope `json:"captcha,omitempty" doc:"A solved captcha: lifts this account's sign-in throttle for this client, for this attempt"`
	}
}

type codeInput struct {
	Body struct {
		Code string `json:"code" maxLength:"40"`
	}
}

type loginOutput struct {
	SetCookie []http.Cookie `header:"Set-Cookie"`
	Body      LoginBody
}

type logoutOutput struct {
	SetCookie []http.Cookie `header:"Set-Cookie"`
	Body      struct {
		OK bool `json:"ok"`
	}
}

type updateMeInput struct {
	Body struct {
		DisplayName string `json:"display_name" maxLength:"100"`
	}
}

type passwordInput struct {
	Body struct {
		CurrentPassword string `json:"current_password" maxLength:"1024"`
		NewPassword     string `json:"new_password" maxLength:"1024"`
	}
}

type verbosityInput struct {
	Body struct {
		Verbosity *string `json:"verbosity" required:"true" nullable:"true" enum:"quiet,normal,verbose" doc:"null clears the setting"`
	}
}

// sessionCookies are the cookies a login sets.
func (s *Service) sessionCookies(sess Session) []http.Cookie {
	return []http.Cookie{
		{Name: SessionCookie, Value: sess.Token, Path: "/", Expires: sess.ExpiresAt, HttpOnly: true,
			Secure: s.cfg.CookieSecure, SameSite: http.SameSiteLaxMode},
		// Readable by the console's script, which echoes it in X-CSRF-Token.
		{Name: CSRFCookie, Value: sess.CSRF, Path: "/", Expires: sess.ExpiresAt, HttpOnly: false,
			Secure: s.cfg.CookieSecure, SameSite: http.SameSiteLaxMode},
	}
}

func (s *Service) clearedCookies() []http.Cookie {
	return []http.Cookie{
		{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.cfg.CookieSecure, SameSite: http.SameSiteLaxMode},
		{Name: CSRFCookie, Value: "", Path: "/", MaxAge: -1, Secure: s.cfg.CookieSecure, SameSite: http.SameSiteLaxMode},
	}
}

// RealmCookie remembers which organization's identity provider a browser
// signs in with (set by per-organization OIDC; cleared by sso/forget).
const RealmCookie = "service_realm"

type resetRequestInput struct {
	Body struct {
		Email   string            `json:"email" maxLength:"320"`
		Captcha *captcha.Envelope `json:"captcha,omitempty" doc:"A solved captcha (required when a captcha is configured)"`
	}
}

type resetConsumeInput struct {
	Body struct {
		Token    string `json:"token" maxLength:"200"`
		Password string `json:"password" maxLength:"1024"`
	}
}

type magicRequestInput struct {
	Body struct {
		Email   string            `json:"email" maxLength:"320"`
		Captcha *captcha.Envelope `json:"captcha,omitempty" doc:"A solved captcha (required when a captcha is configured)"`
	}
}

type magicRequestOutput struct {
	Status    int
	SetCookie []http.Cookie `header:"Set-Cookie"`
	Body      struct {
		OK bool `json:"ok"`
	}
}

type magicPendingInput struct {
	Pending string `cookie:"service_magic"`
}

type magicCodeInput struct {
	Pending string `cookie:"service_magic"`
	Body    struct {
		Code string `json:"code" maxLength:"20"`
	}
}

type magicConsumeGetInput struct {
	Token string `query:"token" doc:"The mailed token (not consumed here)"`
}

type magicConsumeInput struct {
	Body struct {
		Token string `json:"token" maxLength:"200"`
	}
}

type verifyRequestInput struct {
	Body struct {
		Email   string            `json:"email" maxLength:"320"`
		Captcha *captcha.Envelope `json:"captcha,omitempty" doc:"A solved captcha (required when a captcha is configured)"`
	}
}

type verifyConsumeInput struct {
	Token string `query:"token" doc:"The mailed token (any value redirects)"`
}

type redirectOutput struct {
	Status   int
	Location string `header:"Location"`
}

type discoverInput struct {
	Body struct {
		Email string `json:"email" maxLength:"320" doc:"The address about to sign in"`
	}
}

// Discovery answers where an address signs in.
type Discovery struct {
	StartURL *string `json:"start_url" nullable:"true" doc:"The organization's identity provider sign-in when the address's verified domain has one; null otherwise (always null until per-organization OIDC exists)"`
}

type forgetOutput struct {
	Status    int
	Location  string        `header:"Location"`
	SetCookie []http.Cookie `header:"Set-Cookie"`
}

// Setup says what a sign-in page needs to know about the instance.
type Setup struct {
	HasAdmin bool `json:"has_admin" doc:"False until an approved instance admin exists: the page then says how to make one (SERVICE_INITIAL_ADMIN_EMAILS, or slipway users create --admin); no web control grants admin"`
	Captcha  bool `json:"captcha" doc:"A solved captcha is asked for on reset, verification and magic-link requests"`
	// InitialAdmins says whether the server names first admins, never who.
	InitialAdmins bool `json:"initial_admins" doc:"SERVICE_INITIAL_ADMIN_EMAILS lists addresses (not which): while has_admin is false, registering one of them makes the first admin"`
}

type setupOutput struct{ Body Setup }

type sessionPath struct {
	ID string `path:"id" doc:"Session id"`
}

// captchaNote describes the captcha gate of the anonymous mail requests.
const captchaNote = "With a captcha configured (SERVICE_CAPTCHA_SECRET), `captcha` must carry a solved challenge " +
	"(GET /api/auth/captcha/challenge), which is spent: without one, or with a wrong, expired or spent one, the answer is 202 {ok: false} " +
	"and nothing is sent; a malformed envelope is 400."

// Register mounts the account and session operations.
func Register(api huma.API, s *Service) {
	public := httpx.Operations{Tags: []string{"Auth"}}

	huma.Register(api, public.Op("get_api_auth_setup", http.MethodGet, "/api/auth/setup", "What the sign-in page needs to know about this instance"),
		func(ctx context.Context, _ *struct{}) (*setupOutput, error) {
			has, err := s.HasAdmin(ctx)
			if err != nil {
				return nil, err
			}
			return &setupOutput{Body: Setup{HasAdmin: has, Captcha: s.captcha.Enabled(), InitialAdmins: len(s.cfg.InitialAdminEmails) > 0}}, nil
		})

	resetReq := public.Op("post_api_auth_reset_request", http.MethodPost, "/api/auth/reset/request", "Mail a password reset link")
	resetReq.DefaultStatus = http.StatusAccepted
	resetReq.Description = "Always 202 {ok: true}, whether or not the address has an account (an account with a password gets the mail). " +
		captchaNote
	huma.Register(api, resetReq, func(ctx context.Context, in *resetRequestInput) (*OK, error) {
		passed, err := s.RequestReset(ctx, in.Body.Email, httpx.ClientIP(ctx), in.Body.Captcha)
		if err != nil {
			return nil, retryAfter(ctx, err)
		}
		return answer(passed), nil
	})
	resetConsume := public.Op("post_api_auth_reset_consume", http.MethodPost, "/api/auth/reset/consume", "Set a new password with a reset token")
	resetConsume.Description = "400 for a weak password or an unknown, used or expired token (both checked before any hashing). Signs the account out everywhere."
	huma.Register(api, resetConsume, func(ctx context.Context, in *resetConsumeInput) (*OK, error) {
		if err := s.ConsumeReset(ctx, in.Body.Token, in.Body.Password); err != nil {
			return nil, err
		}
		return ok(), nil
	})

	verifyReq := public.Op("post_api_auth_verify_request", http.MethodPost, "/api/auth/verify/request", "Mail an address check")
	verifyReq.DefaultStatus = http.StatusAccepted
	verifyReq.Description = "Always 202 {ok: true}, whether or not the address has an account (an unverified account gets the mail). " + captchaNote
	huma.Register(api, verifyReq, func(ctx context.Context, in *verifyRequestInput) (*OK, error) {
		passed, err := s.RequestVerify(ctx, in.Body.Email, httpx.ClientIP(ctx), in.Body.Captcha)
		if err != nil {
			return nil, retryAfter(ctx, err)
		}
		return answer(passed), nil
	})
	verifyConsume := public.Op("get_api_auth_verify_consume", http.MethodGet, "/api/auth/verify/consume", "Confirm an address (the mailed link)")
	verifyConsume.DefaultStatus = http.StatusFound
	verifyConsume.Description = "Always redirects to /login with ?verified=1, or ?verified=0 for an unknown, used or expired token."
	huma.Register(api, verifyConsume, func(ctx context.Context, in *verifyConsumeInput) (*redirectOutput, error) {
		ok, err := s.ConsumeVerify(ctx, in.Token)
		if err != nil {
			return nil, err
		}
		flag := "0"
		if ok {
			flag = "1"
		}
		return &redirectOutput{Status: http.StatusFound, Location: "/login?verified=" + flag}, nil
	})

	magicReq := public.Op("post_api_auth_magic_request", http.MethodPost, "/api/auth/magic/request", "Mail a one-time sign-in link")
	magicReq.DefaultStatus = http.StatusAccepted
	magicReq.Description = "Always 202 {ok: true} with a pending cookie for this browser, whether or not the address has an account. " + captchaNote
	huma.Register(api, magicReq, func(ctx context.Context, in *magicRequestInput) (*magicRequestOutput, error) {
		pending, err := s.RequestMagic(ctx, in.Body.Email, httpx.ClientIP(ctx), in.Body.Captcha)
		if err != nil {
			return nil, retryAfter(ctx, err)
		}
		if pending == "" { // the captcha did not pass
			return &magicRequestOutput{Status: http.StatusAccepted}, nil
		}
		out := &magicRequestOutput{Status: http.StatusAccepted, SetCookie: []http.Cookie{{Name: PendingCookie, Value: pending, Path: "/api/auth/magic",
			MaxAge: int(MagicTTL / time.Second), HttpOnly: true, Secure: s.cfg.CookieSecure, SameSite: http.SameSiteLaxMode}}}
		out.Body.OK = true
		return out, nil
	})
	huma.Register(api, public.Op("get_api_auth_magic_pending", http.MethodGet, "/api/auth/magic/pending", "This browser's sign-in request, as it waits"),
		func(ctx context.Context, in *magicPendingInput) (*httpx.Out[*MagicPending], error) {
			return httpx.Reply(s.MagicPendingOf(ctx, in.Pending))
		})
	magicCode := public.Op("post_api_auth_magic_code", http.MethodPost, "/api/auth/magic/code", "Sign this waiting browser in with the mailed code")
	magicCode.Description = "Answers like a login; a wrong, used or expired code is 400."
	huma.Register(api, magicCode, func(ctx context.Context, in *magicCodeInput) (*loginOutput, error) {
		res, err := s.MagicCode(ctx, in.Pending, in.Body.Code, httpx.ClientIP(ctx), httpx.UserAgent(ctx))
		return s.loginAnswer(res, err)
	})
	magicGet := public.Op("get_api_auth_magic_consume", http.MethodGet, "/api/auth/magic/consume", "The mailed link: on to the confirm page")
	magicGet.DefaultStatus = http.StatusFound
	magicGet.Description = "Never consumes the token (mail scanners follow links): redirects to /magic/confirm, which consumes it by POST."
	huma.Register(api, magicGet, func(ctx context.Context, in *magicConsumeGetInput) (*redirectOutput, error) {
		return &redirectOutput{Status: http.StatusFound, Location: "/magic/confirm?token=" + url.QueryEscape(in.Token)}, nil
	})
	magicPost := public.Op("post_api_auth_magic_consume", http.MethodPost, "/api/auth/magic/consume", "Sign in with the mailed token, once")
	magicPost.Description = "Answers like a login (with 2FA armed: {totp_required, totp_token}); an unknown, used or expired token is 400."
	huma.Register(api, magicPost, func(ctx context.Context, in *magicConsumeInput) (*loginOutput, error) {
		res, err := s.ConsumeMagic(ctx, in.Body.Token, httpx.ClientIP(ctx), httpx.UserAgent(ctx))
		return s.loginAnswer(res, err)
	})

	discover := public.Op("post_api_auth_discover", http.MethodPost, "/api/auth/discover", "Where an address signs in")
	discover.Description = "Always 200, the same answer for addresses with and without an account. Null until per-organization identity providers exist."
	huma.Register(api, discover, func(ctx context.Context, _ *discoverInput) (*httpx.Out[Discovery], error) {
		return httpx.Reply(Discovery{}, nil)
	})
	forget := public.Op("get_api_auth_sso_forget", http.MethodGet, "/api/auth/sso/forget", "Forget the remembered sign-in realm and go back to the login form")
	forget.DefaultStatus = http.StatusFound
	forget.Description = "No authentication; idempotent. Clears the realm hint cookie and redirects to /login."
	huma.Register(api, forget, func(ctx context.Context, _ *struct{}) (*forgetOutput, error) {
		return &forgetOutput{Status: http.StatusFound, Location: "/login",
			SetCookie: []http.Cookie{{Name: RealmCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.cfg.CookieSecure, SameSite: http.SameSiteLaxMode}}}, nil
	})
	session := httpx.Operations{Tags: []string{"Auth"}, Security: httpx.SessionSecurity}
	account := httpx.Operations{Tags: []string{"Account"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.SignedIn(api)}}

	register := public.Op("post_api_auth_register", http.MethodPost, "/api/auth/register", "Create an account")
	register.DefaultStatus = http.StatusAccepted
	register.Description = "Always answers 202 {ok: true} after the same work, whether or not the email already has an " +
		"account, so registration does not reveal which emails exist; an existing account is left unchanged. " +
		"A new account waits for approval unless its email is in SERVICE_INITIAL_ADMIN_EMAILS. Weak passwords are 400."
	huma.Register(api, register, func(ctx context.Context, in *registerInput) (*OK, error) {
		if err := s.Register(ctx, RegisterInput{Email: in.Body.Email, Password: in.Body.Password, DisplayName: in.Body.DisplayName}); err != nil {
			return nil, err
		}
		return ok(), nil
	})

	login := public.Op("post_api_auth_login", http.MethodPost, "/api/auth/login", "Sign in with email and password")
	login.Description = "Sets the service_session cookie (HttpOnly) and the service_csrf cookie, whose value must be sent " +
		"as X-CSRF-Token on unsafe requests. Wrong email and wrong password are the same 401; repeated failures " +
		"for an account or an address answer 429 with Retry-After for a while. The account's throttle (per client) " +
		"yields to a solved captcha sent as `captcha` when a captcha is configured; the client's throttle across accounts does not."
	login.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusTooManyRequests}
	huma.Register(api, login, func(ctx context.Context, in *loginInput) (*loginOutput, error) {
		res, until, err := s.Login(ctx, LoginInput{Email: in.Body.Email, Password: in.Body.Password,
			IP: httpx.ClientIP(ctx), UserAgent: httpx.UserAgent(ctx), Captcha: in.Body.Captcha})
		if err == ErrLocked || err == ErrLockedCaptcha {
			return nil, s.locked(ctx, err, until)
		}
		return s.loginAnswer(res, err)
	})

	verify2FA := public.Op("post_api_auth_2fa_verify", http.MethodPost, "/api/auth/2fa/verify", "Finish a sign-in with a two-factor code")
	verify2FA.Description = "Exchanges the login's totp_token and a current code (or an unused recovery code) for the session, " +
		"answering like a login. A code is accepted once; failures count toward the sign-in throttle (429)."
	huma.Register(api, verify2FA, func(ctx context.Context, in *verify2FAInput) (*loginOutput, error) {
		res, until, err := s.VerifySecondFactor(ctx, in.Body.Token, in.Body.Code, httpx.ClientIP(ctx), httpx.UserAgent(ctx), in.Body.Captcha)
		if err == ErrLocked || err == ErrLockedCaptcha {
			return nil, s.locked(ctx, err, until)
		}
		return s.loginAnswer(res, err)
	})

	huma.Register(api, session.Op("post_api_auth_logout", http.MethodPost, "/api/auth/logout", "Sign out: revoke this session and clear its cookies"),
		func(ctx context.Context, _ *struct{}) (*logoutOutput, error) {
			u, err := actor.RequireUser(ctx)
			if err != nil {
				return nil, err
			}
			if err := s.Logout(ctx, u); err != nil {
				return nil, err
			}
			out := &logoutOutput{SetCookie: s.clearedCookies()}
			out.Body.OK = true
			return out, nil
		})

	huma.Register(api, account.Op("post_api_me_2fa_enroll", http.MethodPost, "/api/me/2fa/enroll", "Start two-factor sign-in: a new TOTP secret (pending until confirmed)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[*TOTPEnrollment], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.Enroll(ctx, u))
		})
	huma.Register(api, account.Op("post_api_me_2fa_confirm", http.MethodPost, "/api/me/2fa/confirm", "Arm two-factor sign-in with a live code; the recovery codes are shown once"),
		func(ctx context.Context, in *codeInput) (*httpx.Out[*RecoveryCodesOut], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.Confirm(ctx, u, in.Body.Code))
		})
	huma.Register(api, account.Op("post_api_me_2fa_disable", http.MethodPost, "/api/me/2fa/disable", "Turn two-factor sign-in off (needs a valid code or recovery code)"),
		func(ctx context.Context, in *codeInput) (*OK, error) {
			u, _ := actor.UserFrom(ctx)
			if err := s.Disable(ctx, u, in.Body.Code); err != nil {
				return nil, err
			}
			return ok(), nil
		})

	me := account.Op("get_api_me", http.MethodGet, "/api/me", "My profile")
	me.Description = "Also answers for an account waiting for approval (approved: false)."
	huma.Register(api, me, func(ctx context.Context, _ *struct{}) (*httpx.Out[Profile], error) {
		u, err := actor.RequireUser(ctx)
		if err != nil {
			return nil, err
		}
		return &httpx.Out[Profile]{Body: ProfileOf(u)}, nil
	})

	huma.Register(api, account.Op("put_api_me", http.MethodPut, "/api/me", "Update my profile"),
		func(ctx context.Context, in *updateMeInput) (*httpx.Out[Profile], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.UpdateProfile(ctx, u, in.Body.DisplayName))
		})

	password := account.Op("put_api_me_password", http.MethodPut, "/api/me/password", "Change my password")
	password.Description = "Needs the current password. Every other session of the account is revoked; this one stays."
	huma.Register(api, password, func(ctx context.Context, in *passwordInput) (*OK, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		if u.Method != actor.Cookie {
			return nil, apperr.New(apperr.CodeForbidden, "a password can only be changed from a signed-in session")
		}
		if err := s.ChangePassword(ctx, u, in.Body.CurrentPassword, in.Body.NewPassword, httpx.ClientIP(ctx)); err != nil {
			return nil, err
		}
		return ok(), nil
	})

	sessions := account.Op("get_api_me_sessions", http.MethodGet, "/api/me/sessions", "Where my account is signed in")
	sessions.Description = "The account's live browser sessions, newest first (at most 200), with the one making the request marked current. " +
		"Tokens are never shown."
	huma.Register(api, sessions, func(ctx context.Context, _ *struct{}) (*httpx.Out[[]SignedIn], error) {
		u, err := actor.RequireUser(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.Sessions(ctx, u))
	})
	signOut := account.Op("delete_api_me_sessions_id", http.MethodDelete, "/api/me/sessions/{id}", "Sign one of my sessions out")
	signOut.Description = "Revokes it at once on every replica. The current session may be signed out this way too " +
		"(POST /api/auth/logout also clears its cookies). Another account's session is 404, like an unknown id."
	huma.Register(api, signOut, func(ctx context.Context, in *sessionPath) (*httpx.DeletedOutput, error) {
		u, err := actor.RequireUser(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.SignOut(ctx, u, in.ID); err != nil {
			return nil, err
		}
		return httpx.Deleted(), nil
	})

	huma.Register(api, account.Op("patch_api_me_verbosity", http.MethodPatch, "/api/me/verbosity", "Set or clear my default live-feed verbosity"),
		func(ctx context.Context, in *verbosityInput) (*httpx.Out[Profile], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SetVerbosity(ctx, u, in.Body.Verbosity))
		})
}

// loginAnswer is the answer of a sign-in: session cookies and the profile,
// or the second-factor step.
func (s *Service) loginAnswer(res *LoginResult, err error) (*loginOutput, error) {
	if err != nil {
		return nil, err
	}
	out := &loginOutput{}
	if res.TOTPRequired {
		out.Body.TOTPRequired, out.Body.TOTPToken = true, res.Interim
		return out, nil
	}
	out.SetCookie = s.sessionCookies(res.Session)
	out.Body.User = &res.Profile
	return out, nil
}

// locked answers a sign-in refused by the throttle (ErrLocked or
// ErrLockedCaptcha) with 429, Retry-After, and a message that says for how
// long (it said "try again later").
func (s *Service) locked(ctx context.Context, err error, until time.Time) error {
	secs := int(until.Sub(s.clock.Now()).Seconds()) + 1
	msg := "too many failed sign-in attempts; try again in " + waitText(secs)
	if err == ErrLockedCaptcha {
		msg += ", or now with a solved captcha"
	}
	return huma.ErrorWithHeaders(httpx.FromError(ctx, apperr.New(apperr.CodeRateLimited, "%s", msg)), http.Header{"Retry-After": {strconv.Itoa(secs)}})
}

// waitText says a wait of secs seconds in the largest unit that fits,
// rounded up: "40 seconds", "5 minutes", "1 hour".
func waitText(secs int) string {
	unit := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.Itoa(n) + " " + one + "s"
	}
	switch {
	case secs < 60:
		return unit(max(secs, 1), "second")
	case secs < 3600:
		return unit((secs+59)/60, "minute")
	}
	return unit((secs+3599)/3600, "hour")
}

// retryAfter answers a throttled mail request with 429 and Retry-After.
func retryAfter(ctx context.Context, err error) error {
	var t *MailThrottled
	if !errors.As(err, &t) {
		return err
	}
	secs := int(time.Until(t.Until).Seconds()) + 1
	return huma.ErrorWithHeaders(httpx.FromError(ctx, ErrMailThrottled), http.Header{"Retry-After": {strconv.Itoa(secs)}})
}
