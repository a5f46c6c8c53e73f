package auth_test

import (
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/captcha"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestCaptchaLiftsTheSecondFactorThrottle: an account with 2FA, locked from
// its owner's client, gets back in with a solved captcha at each step (the
// failures stay until the second factor passes); a password change, which
// takes no captcha, never offers one.
func TestCaptchaLiftsTheSecondFactorThrottle(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e, "SERVICE_CAPTCHA_SECRET", "the captcha key of the 2FA test", "SERVICE_CAPTCHA_DIFFICULTY", "8")
		ann := app.Approved(app.Admin(), "Ann Locked")
		var enr struct{ Secret string }
		ann.Do("POST", "/api/me/2fa/enroll", nil).JSON(t, &enr)
		app.Remember(enr.Secret)
		var rc struct {
			RecoveryCodes []string `json:"recovery_codes"`
		}
		if r := ann.Do("POST", "/api/me/2fa/confirm", map[string]any{"code": code(t, enr.Secret, time.Now())}); r.Status != 200 {
			t.Fatalf("confirm: %d %s", r.Status, r.Body)
		} else {
			r.JSON(t, &rc)
		}
		app.Remember(rc.RecoveryCodes...)

		c := app.Anonymous()
		solved := func() map[string]any {
			var ch captcha.Challenge
			c.Do("GET", "/api/auth/captcha/challenge", nil).JSON(t, &ch)
			return map[string]any{"challenge": ch.Challenge, "solution": captcha.Solve(ch)}
		}
		login := func(password string, env map[string]any) *apitest.Response {
			return c.Do("POST", "/api/auth/login", map[string]any{"email": ann.Email, "password": password, "captcha": env})
		}
		for i := 0; i < 5; i++ {
			if r := login("not-the-password", nil); r.Status != 401 {
				t.Fatalf("wrong password %d: %d", i, r.Status)
			}
		}
		if r := login(ann.Password, nil); r.Status != 429 || !strings.Contains(string(r.Body), "captcha") {
			t.Fatalf("locked: %d %s", r.Status, r.Body)
		}
		r := login(ann.Password, solved())
		var body struct {
			TOTPToken string `json:"totp_token"`
		}
		r.JSON(t, &body)
		if r.Status != 200 || body.TOTPToken == "" {
			t.Fatalf("the right password with a captcha: %d %s", r.Status, r.Body)
		}
		app.Remember(body.TOTPToken)
		verify := func(env map[string]any) *apitest.Response {
			return c.Do("POST", "/api/auth/2fa/verify", map[string]any{"token": body.TOTPToken, "code": rc.RecoveryCodes[0], "captcha": env})
		}
		if r := verify(nil); r.Status != 429 || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "captcha") {
			t.Fatalf("the second factor while locked, without a captcha: %d %s", r.Status, r.Body)
		}
		if r := verify(solved()); r.Status != 200 || c.SessionToken() == "" {
			t.Fatalf("the second factor with a captcha: %d %s", r.Status, r.Body)
		}
		app.Remember(c.SessionToken(), c.CSRFToken())

		// Wrong current passwords lock the password change; its 429 offers no captcha.
		for i := 0; i < 5; i++ {
			if r := c.Do("PUT", "/api/me/password", map[string]any{"current_password": "wrong-wrong-wrong", "new_password": "a-new-passphrase-1"}); r.Status != 403 {
				t.Fatalf("wrong current password %d: %d %s", i, r.Status, r.Body)
			}
		}
		if r := c.Do("PUT", "/api/me/password", map[string]any{"current_password": ann.Password, "new_password": "a-new-passphrase-1"}); r.Status != 429 ||
			strings.Contains(string(r.Body), "captcha") {
			t.Fatalf("a locked password change: %d %s", r.Status, r.Body)
		}
	})
}
