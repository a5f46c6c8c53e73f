package mail_test

import (
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/captcha"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

const captchaSecret = "the captcha key of this test server"

// solved asks the server for a challenge and solves it, as the console does.
func solved(t *testing.T, c *apitest.Client) map[string]any {
	t.Helper()
	var ch captcha.Challenge
	r := c.Do("GET", "/api/auth/captcha/challenge", nil)
	if r.Status != 200 || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("challenge: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &ch)
	return map[string]any{"challenge": ch.Challenge, "solution": captcha.Solve(ch)}
}

// The captcha's own operations: 400 only when it is off or the envelope is
// malformed; a wrong answer is 200 {ok: false}; checking does not spend.
func TestCaptchaOperations(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		off := apitest.New(t, e)
		apitest.Run(t, off, []apitest.Scenario{
			{Name: "challenge while off", Method: "GET", Path: "/api/auth/captcha/challenge", WantStatus: 400, WantCode: "bad_request",
				WantContains: []string{"SERVICE_CAPTCHA_SECRET"}},
			{Name: "verify while off", Method: "POST", Path: "/api/auth/captcha/verify", Body: map[string]any{"challenge": "v1.8.1.00.x", "solution": "1"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "a reset needs no captcha while off", Method: "POST", Path: "/api/auth/reset/request", Body: map[string]any{"email": "a@example.test"},
				WantStatus: 202, WantContains: []string{`"ok":true`}},
		})

		app := apitest.New(t, e, "SERVICE_CAPTCHA_SECRET", captchaSecret, "SERVICE_CAPTCHA_DIFFICULTY", "10")
		anon := app.Anonymous()
		good := solved(t, anon)
		var ch captcha.Challenge
		anon.Do("GET", "/api/auth/captcha/challenge", nil).JSON(t, &ch)
		if ch.Difficulty != 10 || ch.Challenge == good["challenge"] {
			t.Fatalf("a second challenge: %+v", ch)
		}
		wrong := "0"
		for captcha.ZeroBits(ch.Challenge, wrong) >= 10 {
			wrong += "0"
		}
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "good, checked", Method: "POST", Path: "/api/auth/captcha/verify", Body: good, WantStatus: 200, WantContains: []string{`"ok":true`}},
			{Name: "good, checked again (checking does not spend)", Method: "POST", Path: "/api/auth/captcha/verify", Body: good, WantStatus: 200,
				WantContains: []string{`"ok":true`}},
			{Name: "wrong solution", Method: "POST", Path: "/api/auth/captcha/verify", Body: map[string]any{"challenge": ch.Challenge, "solution": wrong},
				WantStatus: 200, WantContains: []string{`"ok":false`}},
			{Name: "not a challenge", Method: "POST", Path: "/api/auth/captcha/verify", Body: map[string]any{"challenge": "hello", "solution": "1"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "solution not digits", Method: "POST", Path: "/api/auth/captcha/verify", Body: map[string]any{"challenge": ch.Challenge, "solution": "one"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "no solution", Method: "POST", Path: "/api/auth/captcha/verify", Body: map[string]any{"challenge": ch.Challenge},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "not an object", Method: "POST", Path: "/api/auth/captcha/verify", Body: "solved", WantStatus: 400, WantCode: "bad_request"},
			{Name: "control characters", Method: "POST", Path: "/api/auth/captcha/verify", Body: map[string]any{"challenge": "v1\x00", "solution": "1"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "spent by a reset request", Method: "POST", Path: "/api/auth/reset/request", Body: map[string]any{"email": "a@example.test", "captcha": good},
				WantStatus: 202, WantContains: []string{`"ok":true`}},
			{Name: "checked once spent", Method: "POST", Path: "/api/auth/captcha/verify", Body: good, WantStatus: 200, WantContains: []string{`"ok":false`}},
			{Name: "a malformed envelope on a request", Method: "POST", Path: "/api/auth/reset/request",
				Body: map[string]any{"email": "a@example.test", "captcha": map[string]any{"challenge": "hello", "solution": "1"}}, WantStatus: 400, WantCode: "bad_request"},
		})
	})
}

// With a captcha configured, the anonymous mail requests send mail only
// with a fresh solved captcha, and still say nothing about the address.
func TestCaptchaGatesMailRequests(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ms := startMailServer(t, "")
		app := apitest.New(t, e, append(smtpEnv(ms.addr), "SERVICE_CAPTCHA_SECRET", captchaSecret, "SERVICE_CAPTCHA_DIFFICULTY", "10")...)
		admin := app.Admin()
		ann := app.Approved(admin, "Ann Captcha")
		app.DB.W.Exec(`UPDATE users SET email_verified = FALSE WHERE email = $1`, ann.Email)

		for _, path := range []string{"/api/auth/reset/request", "/api/auth/verify/request", "/api/auth/magic/request"} {
			c := app.Anonymous()
			queued := app.Count(t, "SELECT COUNT(*) FROM mail_outbox")
			// Without a captcha, or with a spent one: {ok: false} and no mail.
			none := c.Do("POST", path, map[string]any{"email": ann.Email})
			env := solved(t, c)
			if r := c.Do("POST", "/api/auth/captcha/verify", env); !strings.Contains(string(r.Body), `"ok":true`) {
				t.Fatalf("%s: verify: %s", path, r.Body)
			}
			unknown := c.Do("POST", path, map[string]any{"email": "nobody@example.test", "captcha": env})
			replay := c.Do("POST", path, map[string]any{"email": ann.Email, "captcha": env})
			for name, r := range map[string]*apitest.Response{"no captcha": none, "a spent captcha": replay} {
				if r.Status != 202 || strings.TrimSpace(string(r.Body)) != `{"ok":false}` || r.Header.Get("Set-Cookie") != "" {
					t.Fatalf("%s with %s: %d %s %q", path, name, r.Status, r.Body, r.Header.Get("Set-Cookie"))
				}
			}
			// Mail is queued in the request's transaction: none queued, none sent.
			if n := app.Count(t, "SELECT COUNT(*) FROM mail_outbox"); n != queued {
				t.Fatalf("%s: %d mails queued without a captcha", path, n-queued)
			}
			// A fresh one: the same answer for a known and an unknown address.
			known := c.Do("POST", path, map[string]any{"email": ann.Email, "captcha": solved(t, c)})
			if known.Status != 202 || strings.TrimSpace(string(known.Body)) != `{"ok":true}` || string(known.Body) != string(unknown.Body) {
				t.Fatalf("%s: known %d %s / unknown %d %s", path, known.Status, known.Body, unknown.Status, unknown.Body)
			}
			if path == "/api/auth/magic/request" && (known.Header.Get("Set-Cookie") == "" || unknown.Header.Get("Set-Cookie") == "") {
				t.Fatalf("magic request without a pending cookie")
			}
			got := ms.wait(t, 1)
			if got[0].to[0] != ann.Email {
				t.Fatalf("%s: mail to %v", path, got[0].to)
			}
			ms.mu.Lock()
			ms.got = nil
			ms.mu.Unlock()
		}
	})
}

// A solved captcha lifts an account's sign-in throttle for its owner's
// client, one attempt per captcha; the client's throttle across accounts
// does not yield.
func TestCaptchaLiftsSignInThrottle(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e, "SERVICE_CAPTCHA_SECRET", captchaSecret, "SERVICE_CAPTCHA_DIFFICULTY", "8")
		admin := app.Admin()
		bob := app.Approved(admin, "Bob Throttle")
		c := app.Anonymous()
		login := func(password string, env map[string]any) *apitest.Response {
			body := map[string]any{"email": bob.Email, "password": password}
			if env != nil {
				body["captcha"] = env
			}
			return c.Do("POST", "/api/auth/login", body)
		}
		for i := 0; i < 5; i++ {
			if r := login("not-the-password", nil); r.Status != 401 {
				t.Fatalf("wrong password %d: %d", i, r.Status)
			}
		}
		locked := login(apitest.Password, nil)
		if locked.Status != 429 || locked.Header.Get("Retry-After") == "" || !strings.Contains(string(locked.Body), "captcha") {
			t.Fatalf("locked: %d %s", locked.Status, locked.Body)
		}
		// A wrong password with a captcha: heard (401), the captcha spent.
		env := solved(t, c)
		if r := login("still-not-it", env); r.Status != 401 {
			t.Fatalf("a wrong password with a captcha: %d %s", r.Status, r.Body)
		}
		if r := login(apitest.Password, env); r.Status != 429 {
			t.Fatalf("the right password with a spent captcha: %d", r.Status)
		}
		if r := login(apitest.Password, map[string]any{"challenge": "hello", "solution": "1"}); r.Status != 400 {
			t.Fatalf("a malformed captcha: %d", r.Status)
		}
		r := login(apitest.Password, solved(t, c))
		if r.Status != 200 || c.SessionToken() == "" {
			t.Fatalf("the right password with a fresh captcha: %d %s", r.Status, r.Body)
		}
		app.Remember(c.SessionToken(), c.CSRFToken())

		// Twenty failures across accounts lock the client; a captcha does not lift that.
		sprayer := app.Anonymous()
		for i := 0; i < 20; i++ {
			sprayer.Do("POST", "/api/auth/login", map[string]any{"email": "spray" + string(rune('a'+i)) + "@example.test", "password": "guess-guess-guess"})
		}
		if r := sprayer.Do("POST", "/api/auth/login", map[string]any{"email": bob.Email, "password": apitest.Password, "captcha": solved(t, sprayer)}); r.Status != 429 {
			t.Fatalf("a locked client with a captcha: %d", r.Status)
		}
	})
}
