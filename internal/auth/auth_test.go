package auth_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/auth"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

func reg(email, password, name string) map[string]string {
	return map[string]string{"email": email, "password": password, "display_name": name}
}

func TestRegister(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "too short", Method: "POST", Path: "/api/auth/register", Body: reg("a@example.test", "short-pw", "A"), WantStatus: 400, WantCode: "bad_request", WantContains: []string{"too short"}},
			{Name: "equal to the email", Method: "POST", Path: "/api/auth/register", Body: reg("long.address@example.test", "Long.Address@example.test", "A"), WantStatus: 400, WantCode: "bad_request", WantContains: []string{"email"}},
			{Name: "common password", Method: "POST", Path: "/api/auth/register", Body: reg("a@example.test", "password123", "A"), WantStatus: 400, WantCode: "bad_request", WantContains: []string{"common"}},
			{Name: "one character repeated", Method: "POST", Path: "/api/auth/register", Body: reg("a@example.test", "zzzzzzzzzzzzzz", "A"), WantStatus: 400, WantCode: "bad_request"},
			{Name: "bad email", Method: "POST", Path: "/api/auth/register", Body: reg("not-an-email", apitest.Password, "A"), WantStatus: 400, WantCode: "bad_request", WantContains: []string{"email"}},
			{Name: "blank display name", Method: "POST", Path: "/api/auth/register", Body: reg("a@example.test", apitest.Password, "   "), WantStatus: 400, WantCode: "bad_request", WantContains: []string{"display_name"}},
			{Name: "unknown field", Method: "POST", Path: "/api/auth/register", Body: `{"email":"a@example.test","password":"correct-horse-battery","display_name":"A","admin":true}`, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"admin"}},
			{Name: "missing field", Method: "POST", Path: "/api/auth/register", Body: `{"email":"a@example.test","password":"correct-horse-battery"}`, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"display_name"}},
		})
		if n := app.Count(t, "SELECT COUNT(*) FROM users"); n != 0 {
			t.Fatalf("refused registrations created %d users", n)
		}

		// A new email, and the initial admin's email in another case: both 202.
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "new account", Method: "POST", Path: "/api/auth/register", Body: reg("Ann@Example.test", apitest.Password, "Ann"), WantStatus: 202, WantContains: []string{`{"ok":true}`}},
			{Name: "initial admin, any case", Method: "POST", Path: "/api/auth/register", Body: reg(strings.ToUpper(apitest.AdminEmail), apitest.Password, "Boss"), WantStatus: 202},
		})
		ann := app.Login("ann@example.test", apitest.Password)
		me := ann.Do("GET", "/api/me", nil).Map(t)
		if me["approved"] != false || me["is_admin"] != false || me["email"] != "ann@example.test" || me["display_name"] != "Ann" {
			t.Fatalf("ordinary signup = %v", me)
		}
		admin := app.Login(apitest.AdminEmail, apitest.Password)
		me = admin.Do("GET", "/api/me", nil).Map(t)
		if me["approved"] != true || me["is_admin"] != true {
			t.Fatalf("initial admin signup = %v", me)
		}

		// Registration made Ann's own organization with one default workspace.
		var orgs, workspaces int
		app.DB.R.QueryRow(`SELECT COUNT(*) FROM organization_members m JOIN organizations o ON o.id = m.organization_id
			WHERE m.user_id = $1 AND m.role = 'owner'`, ann.ID).Scan(&orgs)
		app.DB.R.QueryRow(`SELECT COUNT(*) FROM workspace_members m JOIN users u ON u.default_workspace_id = m.workspace_id
			WHERE m.user_id = $1 AND u.id = $1 AND m.role = 'owner'`, ann.ID).Scan(&workspaces)
		if orgs != 1 || workspaces != 1 {
			t.Fatalf("Ann owns %d organizations and administers %d default workspaces", orgs, workspaces)
		}

		// Registering an existing email answers exactly like a new one and
		// changes nothing: the old password still works, the new one does not.
		before := app.Count(t, "SELECT COUNT(*) FROM users")
		r := app.Anonymous().Do("POST", "/api/auth/register", reg("ANN@example.test", "another-strong-pass", "Impostor"))
		if r.Status != 202 || string(r.Body) != "{\"ok\":true}\n" {
			t.Fatalf("existing email = %d %s", r.Status, r.Body)
		}
		if app.Count(t, "SELECT COUNT(*) FROM users") != before {
			t.Fatal("registering an existing email created a user")
		}
		if r := app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": "ann@example.test", "password": "another-strong-pass"}); r.Status != 401 {
			t.Fatalf("the impostor's password works: %d", r.Status)
		}
		app.Login("ann@example.test", apitest.Password)
		if me := ann.Do("GET", "/api/me", nil).Map(t); me["display_name"] != "Ann" {
			t.Fatalf("existing account changed: %v", me)
		}
	})
}

func TestLoginAndCookies(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		app.Register("ann@example.test", apitest.Password, "Ann")
		c := app.Anonymous()
		r := c.Do("POST", "/api/auth/login", map[string]string{"email": " Ann@Example.TEST ", "password": apitest.Password})
		if r.Status != 200 {
			t.Fatalf("login = %d %s", r.Status, r.Body)
		}
		var body struct {
			TOTPRequired bool           `json:"totp_required"`
			User         map[string]any `json:"user"`
		}
		r.JSON(t, &body)
		if body.TOTPRequired || body.User["email"] != "ann@example.test" || body.User["id"] == "" {
			t.Fatalf("login body = %s", r.Body)
		}
		for _, k := range []string{"id", "email", "display_name", "approved", "is_admin", "verbosity", "created_at", "email_verified"} {
			if _, ok := body.User[k]; !ok {
				t.Errorf("profile lacks %s", k)
			}
		}
		if !strings.HasSuffix(body.User["created_at"].(string), "Z") {
			t.Errorf("created_at %v is not UTC with Z", body.User["created_at"])
		}
		sess, csrf := r.Cookie(auth.SessionCookie), r.Cookie(auth.CSRFCookie)
		if sess == nil || csrf == nil {
			t.Fatalf("cookies: %v", r.Header["Set-Cookie"])
		}
		if !sess.HttpOnly || sess.Secure || sess.SameSite != http.SameSiteLaxMode || sess.Path != "/" || len(sess.Value) != 43 {
			t.Fatalf("dev session cookie = %+v", sess)
		}
		if csrf.HttpOnly || csrf.Secure || csrf.SameSite != http.SameSiteLaxMode || csrf.Value == "" || csrf.Value == sess.Value {
			t.Fatalf("dev csrf cookie = %+v", csrf)
		}
		if time.Until(sess.Expires) < 29*24*time.Hour {
			t.Fatalf("session expires %v", sess.Expires)
		}

		// Stored only as a hash.
		var stored string
		app.DB.R.QueryRow("SELECT token_hash FROM sessions").Scan(&stored)
		if stored == "" || stored == sess.Value || strings.Contains(stored, sess.Value) {
			t.Fatalf("token stored as %q", stored)
		}

		// Wrong password and unknown email: the same 401 body.
		wrong := app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": "ann@example.test", "password": "not-the-password"})
		unknown := app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": "nobody@example.test", "password": "not-the-password"})
		if wrong.Status != 401 || unknown.Status != 401 || string(wrong.Body) != string(unknown.Body) {
			t.Fatalf("wrong password %d %s / unknown email %d %s", wrong.Status, wrong.Body, unknown.Status, unknown.Body)
		}
		if wrong.Cookie(auth.SessionCookie) != nil {
			t.Fatal("a failed login set a session cookie")
		}
		if r := app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": "", "password": ""}); r.Status != 400 {
			t.Fatalf("empty login = %d", r.Status)
		}
	})
}

func TestSecureCookiesInProduction(t *testing.T) {
	app := apitest.New(t, db.SQLite, "MODE", "prod", "PUBLIC_URL", "https://slipway.example.test",
		"SERVICE_JWT_SECRET", strings.Repeat("p", 40), "SERVICE_ARGON2_MEMORY_KIB", "19456", "SERVICE_ARGON2_TIME", "2")
	app.Register(apitest.AdminEmail, apitest.Password, "Admin")
	r := app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": apitest.AdminEmail, "password": apitest.Password})
	if r.Status != 200 {
		t.Fatalf("login = %d %s", r.Status, r.Body)
	}
	for _, name := range []string{auth.SessionCookie, auth.CSRFCookie} {
		if c := r.Cookie(name); c == nil || !c.Secure || c.SameSite != http.SameSiteLaxMode {
			t.Fatalf("production %s cookie = %+v", name, c)
		}
	}
	if c := r.Cookie(auth.SessionCookie); !c.HttpOnly {
		t.Fatal("production session cookie is not HttpOnly")
	}
}

func TestLockout(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		app.Register("ann@example.test", apitest.Password, "Ann")
		login := func(email, pw string) *apitest.Response {
			return app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": email, "password": pw})
		}
		// Five failures lock the account from this client; the same holds for
		// an email that has no account, with an identical answer.
		for _, email := range []string{"ann@example.test", "ghost@example.test"} {
			for i := 0; i < 5; i++ {
				if r := login(email, "wrong-password-"+strconv.Itoa(i)); r.Status != 401 {
					t.Fatalf("%s failure %d = %d %s", email, i, r.Status, r.Body)
				}
			}
		}
		annLocked := login("ann@example.test", apitest.Password) // right password, still locked
		ghostLocked := login("ghost@example.test", apitest.Password)
		if annLocked.Status != 429 || ghostLocked.Status != 429 || string(annLocked.Body) != string(ghostLocked.Body) {
			t.Fatalf("locked: ann %d %s / ghost %d %s", annLocked.Status, annLocked.Body, ghostLocked.Status, ghostLocked.Body)
		}
		if !strings.Contains(string(annLocked.Body), `"code":"rate_limited"`) {
			t.Fatalf("lock body = %s", annLocked.Body)
		}
		ra, err := strconv.Atoi(annLocked.Header.Get("Retry-After"))
		if err != nil || ra < 60 || ra > 15*60+1 {
			t.Fatalf("Retry-After = %q", annLocked.Header.Get("Retry-After"))
		}
		// The message says for how long (it said "try again later").
		if want := fmt.Sprintf("try again in %d minutes", (ra+59)/60); !strings.Contains(string(annLocked.Body), want) {
			t.Fatalf("lock body = %s, want %q (Retry-After %d)", annLocked.Body, want, ra)
		}
		if annLocked.Cookie(auth.SessionCookie) != nil {
			t.Fatal("a locked login set a session")
		}
		// Another account from the same address is not locked yet.
		app.Register("bob@example.test", apitest.Password, "Bob")
		if r := login("bob@example.test", apitest.Password); r.Status != 200 {
			t.Fatalf("bob = %d %s", r.Status, r.Body)
		}
		// Twenty failures from one address lock it for every email.
		for i := 0; i < 10; i++ {
			login("spray"+strconv.Itoa(i)+"@example.test", "wrong-password")
		}
		if r := login("bob@example.test", apitest.Password); r.Status != 429 {
			t.Fatalf("address lock: bob = %d %s", r.Status, r.Body)
		}
		// An attacker elsewhere cannot keep Ann out: the throttle is per
		// account and client. (The test's other client is 127.0.0.2.)
		elsewhere := fromAddress(t, "127.0.0.2")
		loginFrom := func(c *http.Client, email, pw string) int {
			b, _ := json.Marshal(map[string]string{"email": email, "password": pw})
			resp, err := c.Post(app.URL+"/api/auth/login", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		app.Register("cat@example.test", apitest.Password, "Cat")
		for i := 0; i < 6; i++ {
			loginFrom(elsewhere, "cat@example.test", "wrong-password-"+strconv.Itoa(i))
		}
		if st := loginFrom(elsewhere, "cat@example.test", apitest.Password); st != 429 {
			t.Fatalf("the attacking client is not throttled: %d", st)
		}
		if st := loginFrom(fromAddress(t, "127.0.0.3"), "cat@example.test", apitest.Password); st != 200 {
			t.Fatalf("the owner, from their own client, during the attack: %d", st)
		}
		// Ann, locked at 127.0.0.1, signs in from another client.
		if st := loginFrom(fromAddress(t, "127.0.0.4"), "ann@example.test", apitest.Password); st != 200 {
			t.Fatalf("ann from another client: %d", st)
		}
		// When the lock has passed, the right password works again.
		app.DB.W.Exec("UPDATE auth_failures SET locked_until = $1, window_start = $1", time.Now().UTC().Add(-time.Hour))
		if r := login("ann@example.test", apitest.Password); r.Status != 200 {
			t.Fatalf("after the lock = %d %s", r.Status, r.Body)
		}
	})
}

func TestSessionsEndAndRevoke(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		ann := app.Approved(admin, "Ann")
		other := app.Login(ann.Email, apitest.Password)
		third := app.Login(ann.Email, apitest.Password)

		// A token copied into another client works like the original.
		replay := func(token string) int {
			c := app.Anonymous()
			return c.Do("GET", "/api/me", nil, "Cookie", auth.SessionCookie+"="+token).Status
		}
		token := other.SessionToken()
		if replay(token) != 200 {
			t.Fatal("a live token does not authenticate")
		}

		// Logout revokes the session server-side and clears the cookies.
		r := other.Do("POST", "/api/auth/logout", nil)
		if r.Status != 200 || r.Cookie(auth.SessionCookie) == nil || r.Cookie(auth.SessionCookie).MaxAge >= 0 {
			t.Fatalf("logout = %d %v", r.Status, r.Header["Set-Cookie"])
		}
		if replay(token) != 401 {
			t.Fatal("a logged-out token still authenticates")
		}
		if r := app.Anonymous().Do("POST", "/api/auth/logout", nil); r.Status != 401 {
			t.Fatalf("anonymous logout = %d", r.Status)
		}

		// A password change revokes every other session and keeps this one.
		r = ann.Do("PUT", "/api/me/password", map[string]string{"current_password": apitest.Password, "new_password": "a-brand-new-passphrase"})
		if r.Status != 200 {
			t.Fatalf("password change = %d %s", r.Status, r.Body)
		}
		if third.Do("GET", "/api/me", nil).Status != 401 {
			t.Fatal("another session survived the password change")
		}
		if ann.Do("GET", "/api/me", nil).Status != 200 {
			t.Fatal("the changing session was revoked")
		}

		// Garbage and unknown tokens are simply anonymous.
		if replay("garbage") != 401 || replay(strings.Repeat("A", 43)) != 401 {
			t.Fatal("a bogus token authenticated")
		}
	})
}

// TestSignedInSessions: an account lists where it is signed in (never a
// token) and signs any of those sessions out, at once; another account's
// session is an unknown id.
func TestSignedInSessions(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		ann := app.Approved(admin, "Ann")
		laptop := app.Anonymous()
		if r := laptop.Do("POST", "/api/auth/login", map[string]string{"email": ann.Email, "password": apitest.Password},
			"User-Agent", "Firefox on the laptop"); r.Status != 200 {
			t.Fatalf("login = %d %s", r.Status, r.Body)
		}
		bob := app.Approved(admin, "Bob")

		list := func(c *apitest.Client) (all []auth.SignedIn, current auth.SignedIn) {
			t.Helper()
			r := c.Do("GET", "/api/me/sessions", nil)
			if r.Status != 200 {
				t.Fatalf("list = %d %s", r.Status, r.Body)
			}
			for _, tok := range []string{ann.SessionToken(), laptop.SessionToken(), bob.SessionToken()} {
				if strings.Contains(string(r.Body), tok) {
					t.Fatalf("a session token is listed: %s", r.Body)
				}
			}
			r.JSON(t, &all)
			n := 0
			for _, s := range all {
				if s.Current {
					current, n = s, n+1
				}
			}
			if n != 1 {
				t.Fatalf("%d current sessions in %s", n, r.Body)
			}
			return all, current
		}
		annSessions, annCurrent := list(ann)
		var stored int
		if err := app.DB.R.QueryRow("SELECT COUNT(*) FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = $1", ann.Email).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if len(annSessions) != stored || len(annSessions) < 2 {
			t.Fatalf("ann's list has %d sessions, the database %d", len(annSessions), stored)
		}
		lapSessions, lapCurrent := list(laptop)
		if lapCurrent.ID == annCurrent.ID || lapCurrent.UserAgent != "Firefox on the laptop" || lapCurrent.IP == "" || len(lapSessions) != len(annSessions) {
			t.Fatalf("the laptop's view: %+v of %d", lapCurrent, len(lapSessions))
		}
		for i := 1; i < len(annSessions); i++ {
			if annSessions[i].CreatedAt.After(annSessions[i-1].CreatedAt) {
				t.Fatalf("not newest first: %+v", annSessions)
			}
		}
		bobSessions, bobCurrent := list(bob)
		for _, s := range bobSessions {
			if s.ID == annCurrent.ID || s.ID == lapCurrent.ID {
				t.Fatal("bob sees ann's sessions")
			}
		}

		// Another account's session is exactly an unknown id; so is a
		// malformed one.
		foreign := bob.Do("DELETE", "/api/me/sessions/"+lapCurrent.ID, nil)
		unknown := bob.Do("DELETE", "/api/me/sessions/"+strings.Replace(lapCurrent.ID, lapCurrent.ID[:4], "0000", 1), nil)
		if foreign.Status != 404 || string(foreign.Body) != string(unknown.Body) {
			t.Fatalf("foreign = %d %s, unknown = %d %s", foreign.Status, foreign.Body, unknown.Status, unknown.Body)
		}
		if r := bob.Do("DELETE", "/api/me/sessions/not-an-id", nil); r.Status != 404 {
			t.Fatalf("malformed id = %d %s", r.Status, r.Body)
		}
		if laptop.Do("GET", "/api/me", nil).Status != 200 {
			t.Fatal("bob's attempt signed the laptop out")
		}

		// Ann signs the laptop out from her other session: at once.
		if r := ann.Do("DELETE", "/api/me/sessions/"+lapCurrent.ID, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"deleted":true`) {
			t.Fatalf("sign out = %d %s", r.Status, r.Body)
		}
		if r := laptop.Do("GET", "/api/me", nil); r.Status != 401 {
			t.Fatalf("the signed-out laptop = %d", r.Status)
		}
		after, _ := list(ann)
		if len(after) != len(annSessions)-1 {
			t.Fatalf("%d sessions after signing one out, %d before", len(after), len(annSessions))
		}
		if r := ann.Do("DELETE", "/api/me/sessions/"+lapCurrent.ID, nil); r.Status != 404 {
			t.Fatalf("signing a spent session out again = %d", r.Status)
		}
		if r := app.Anonymous().Do("GET", "/api/me/sessions", nil); r.Status != 401 {
			t.Fatalf("anonymous list = %d", r.Status)
		}

		// The current session may sign itself out.
		if r := bob.Do("DELETE", "/api/me/sessions/"+bobCurrent.ID, nil); r.Status != 200 {
			t.Fatalf("own sign out = %d %s", r.Status, r.Body)
		}
		if r := bob.Do("GET", "/api/me", nil); r.Status != 401 {
			t.Fatalf("bob after signing himself out = %d", r.Status)
		}
	})
}

// TestSessionExpiry ages a session in the database behind the server's
// back, so it runs without the in-memory session cache.
func TestSessionExpiry(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e, "SERVICE_SESSION_CACHE_SECS", "0")
		admin := app.Admin()
		if r := admin.Do("GET", "/api/me", nil); r.Status != 200 {
			t.Fatalf("fresh session = %d", r.Status)
		}
		if _, err := app.DB.W.Exec("UPDATE sessions SET expires_at = $1", time.Now().UTC().Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		if r := admin.Do("GET", "/api/me", nil); r.Status != 401 {
			t.Fatalf("expired session = %d %s", r.Status, r.Body)
		}
	})
}

func TestCSRF(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		ann := app.Approved(admin, "Ann")
		bob := app.Approved(admin, "Bob")
		ws := ann.Do("POST", "/api/workspaces", map[string]string{"name": "Scratch"}).Map(t)["id"].(string)

		unsafe := []struct{ method, path, body string }{
			{"PUT", "/api/me", `{"display_name":"Ann B"}`},
			{"PATCH", "/api/me/verbosity", `{"verbosity":"quiet"}`},
			{"DELETE", "/api/workspaces/" + ws, ""},
			{"POST", "/api/auth/logout", ""},
		}
		for _, u := range unsafe {
			for _, bad := range []struct{ name, header string }{
				{"no header", ""},
				{"wrong header", strings.Repeat("x", 43)},
				{"another session's token", bob.CSRFToken()},
			} {
				hdr := []string{auth.CSRFHeader, bad.header}
				r := ann.Do(u.method, u.path, nilIfEmpty(u.body), hdr...)
				if r.Status != 403 || !strings.Contains(string(r.Body), `"code":"forbidden"`) || !strings.Contains(string(r.Body), "CSRF") {
					t.Fatalf("%s %s with %s = %d %s", u.method, u.path, bad.name, r.Status, r.Body)
				}
			}
		}
		// Nothing happened: still signed in, name unchanged, workspace there.
		if me := ann.Do("GET", "/api/me", nil).Map(t); me["display_name"] != "Ann" || me["verbosity"] != nil {
			t.Fatalf("a refused request changed the profile: %v", me)
		}
		// With the right token each goes through.
		for _, u := range unsafe {
			if r := ann.Do(u.method, u.path, nilIfEmpty(u.body)); r.Status != 200 {
				t.Fatalf("%s %s with the token = %d %s", u.method, u.path, r.Status, r.Body)
			}
		}
		// Safe methods need no token.
		if r := bob.Do("GET", "/api/workspaces", nil); r.Status != 200 {
			t.Fatalf("GET = %d", r.Status)
		}
		// A bearer credential is judged as a bearer (no CSRF involved): it
		// wins over the cookie and, unknown, is 401, not a CSRF 403.
		r := bob.Do("PUT", "/api/me", `{"display_name":"B"}`, "Authorization", "Bearer scrn_notissued", auth.CSRFHeader, "")
		if r.Status != 401 {
			t.Fatalf("bearer request = %d %s", r.Status, r.Body)
		}
	})
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func TestApprovalGate(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		pending := app.Pending("Pat Pending")
		gate := "waiting for approval"
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "own profile", Client: pending, Method: "GET", Path: "/api/me", WantStatus: 200, WantContains: []string{`"approved":false`}},
			{Name: "workspaces", Client: pending, Method: "GET", Path: "/api/workspaces", WantStatus: 403, WantCode: "forbidden", WantContains: []string{gate}},
			{Name: "profile update", Client: pending, Method: "PUT", Path: "/api/me", Body: `{"display_name":"P"}`, WantStatus: 403, WantContains: []string{gate}},
			{Name: "verbosity", Client: pending, Method: "PATCH", Path: "/api/me/verbosity", Body: `{"verbosity":"quiet"}`, WantStatus: 403, WantContains: []string{gate}},
			{Name: "organization", Client: pending, Method: "GET", Path: "/organization", WantStatus: 403, WantContains: []string{gate}},
			{Name: "admin", Client: pending, Method: "GET", Path: "/api/admin/users", WantStatus: 403, WantContains: []string{gate}},
			{Name: "version", Client: pending, Method: "GET", Path: "/api/version", WantStatus: 403, WantContains: []string{gate}},
			{Name: "unknown route", Client: pending, Method: "GET", Path: "/api/nothing-here", WantStatus: 403, WantContains: []string{gate}},
			{Name: "probes are not API calls", Client: pending, Method: "GET", Path: "/livez", WantStatus: 200},
		})
		// Approval takes effect on the existing session.
		if r := admin.Do("POST", "/api/admin/users/"+pending.ID+"/approve", nil); r.Status != 200 {
			t.Fatalf("approve = %d %s", r.Status, r.Body)
		}
		if r := pending.Do("GET", "/api/workspaces", nil); r.Status != 200 {
			t.Fatalf("after approval = %d %s", r.Status, r.Body)
		}
		// Logout stays open to a pending account.
		other := app.Pending("Other Pending")
		if r := other.Do("POST", "/api/auth/logout", nil); r.Status != 200 {
			t.Fatalf("pending logout = %d %s", r.Status, r.Body)
		}
	})
}

func TestProfile(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		ann := app.Approved(admin, "Ann")
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "anonymous me", Method: "GET", Path: "/api/me", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "rename", Client: ann, Method: "PUT", Path: "/api/me", Body: `{"display_name":"  Ann Lovelace "}`, WantStatus: 200,
				WantContains: []string{`"display_name":"Ann Lovelace"`, `"email":"ann@example.test"`}},
			{Name: "rename persists", Client: ann, Method: "GET", Path: "/api/me", WantStatus: 200, WantContains: []string{`"display_name":"Ann Lovelace"`}},
			{Name: "blank name", Client: ann, Method: "PUT", Path: "/api/me", Body: `{"display_name":""}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "email is not editable here", Client: ann, Method: "PUT", Path: "/api/me", Body: `{"display_name":"A","email":"x@y.io"}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "set verbosity", Client: ann, Method: "PATCH", Path: "/api/me/verbosity", Body: `{"verbosity":"verbose"}`, WantStatus: 200, WantContains: []string{`"verbosity":"verbose"`}},
			{Name: "bad verbosity", Client: ann, Method: "PATCH", Path: "/api/me/verbosity", Body: `{"verbosity":"shouty"}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "verbosity is required", Client: ann, Method: "PATCH", Path: "/api/me/verbosity", Body: `{}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "clear verbosity", Client: ann, Method: "PATCH", Path: "/api/me/verbosity", Body: `{"verbosity":null}`, WantStatus: 200, WantContains: []string{`"verbosity":null`}},
			{Name: "wrong current password", Client: ann, Method: "PUT", Path: "/api/me/password", Body: map[string]string{"current_password": "not-my-password", "new_password": "a-brand-new-passphrase"}, WantStatus: 403, WantCode: "forbidden"},
			{Name: "weak new password", Client: ann, Method: "PUT", Path: "/api/me/password", Body: map[string]string{"current_password": apitest.Password, "new_password": "short"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "new password equal to the email", Client: ann, Method: "PUT", Path: "/api/me/password", Body: map[string]string{"current_password": apitest.Password, "new_password": "ann@example.test"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "change password", Client: ann, Method: "PUT", Path: "/api/me/password", Body: map[string]string{"current_password": apitest.Password, "new_password": "a-brand-new-passphrase"}, WantStatus: 200, WantContains: []string{`{"ok":true}`}},
		})
		if r := app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": ann.Email, "password": apitest.Password}); r.Status != 401 {
			t.Fatalf("old password = %d", r.Status)
		}
		app.Login(ann.Email, "a-brand-new-passphrase")
	})
}

// TestNoSecretsInLogs runs the flows that handle passwords, tokens and
// hashes with debug logging on, then searches the captured log for each.
func TestNoSecretsInLogs(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		ann := app.Approved(admin, "Ann")
		app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": ann.Email, "password": "wrong-password-123"})
		app.Anonymous().Do("POST", "/api/auth/register", reg("weak@example.test", "password123", "W"))
		app.Anonymous().Do("POST", "/api/auth/register", reg(ann.Email, "dup-account-secret", "Dup"))
		ann.Do("PUT", "/api/me/password", map[string]string{"current_password": "wrong-current-pw", "new_password": "next-secret-phrase"})
		ann.Do("PUT", "/api/me/password", map[string]string{"current_password": apitest.Password, "new_password": "next-secret-phrase"})
		ann.Do("GET", "/api/me", nil, "Cookie", auth.SessionCookie+"="+strings.Repeat("Q", 43))
		ann.Do("GET", "/api/version?token=qs-secret-token", nil)
		ann.Do("POST", "/api/auth/logout", nil)

		secrets := []string{apitest.Password, "wrong-password-123", "password123", "dup-account-secret", "wrong-current-pw",
			"next-secret-phrase", admin.SessionToken(), admin.CSRFToken(), strings.Repeat("Q", 43), "qs-secret-token"}
		rows, err := app.DB.R.Query("SELECT password_hash FROM users WHERE password_hash IS NOT NULL UNION ALL SELECT token_hash FROM sessions")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var h string
			rows.Scan(&h)
			secrets = append(secrets, h)
			// The salt and key parts of a PHC hash on their own, too.
			if parts := strings.Split(h, "$"); len(parts) == 6 {
				secrets = append(secrets, parts[4], parts[5])
			}
		}
		rows.Close()
		logs := app.Logs.String()
		if !strings.Contains(logs, `"msg":"request"`) {
			t.Fatal("no request lines were captured; the check would prove nothing")
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(logs, s) {
				t.Errorf("a secret reached the log: %q", s)
			}
		}
	})
}

// fromAddress is an HTTP client whose connections come from a loopback
// address of its own (the server tells clients apart by address).
func fromAddress(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

func TestDiscoverAndForget(t *testing.T) {
	app := apitest.New(t, db.SQLite)
	app.Register("ann@example.test", apitest.Password, "Ann")
	known := app.Anonymous().Do("POST", "/api/auth/discover", map[string]string{"email": "ann@example.test"})
	unknown := app.Anonymous().Do("POST", "/api/auth/discover", map[string]string{"email": "nobody@example.test"})
	if known.Status != 200 || unknown.Status != 200 || string(known.Body) != string(unknown.Body) || strings.TrimSpace(string(known.Body)) != `{"start_url":null}` {
		t.Fatalf("discover: %d %s / %d %s", known.Status, known.Body, unknown.Status, unknown.Body)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := 0; i < 2; i++ { // idempotent
		resp, err := c.Get(app.URL + "/api/auth/sso/forget")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var cleared bool
		for _, ck := range resp.Cookies() {
			cleared = cleared || (ck.Name == auth.RealmCookie && ck.MaxAge < 0)
		}
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/login" || !cleared {
			t.Fatalf("forget: %d %q cleared %v", resp.StatusCode, resp.Header.Get("Location"), cleared)
		}
	}
}

// The sign-in page learns whether an instance admin exists yet, and
// whether the server lists first admins (not who): no web control grants
// admin.
func TestSetup(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		anon := app.Anonymous()
		if r := anon.Do("GET", "/api/auth/setup", nil); r.Status != 200 ||
			strings.TrimSpace(string(r.Body)) != `{"has_admin":false,"captcha":false,"initial_admins":true}` {
			t.Fatalf("a fresh instance: %d %s", r.Status, r.Body)
		}
		unlisted := apitest.New(t, e, "SERVICE_INITIAL_ADMIN_EMAILS", "")
		if r := unlisted.Anonymous().Do("GET", "/api/auth/setup", nil); r.Status != 200 ||
			strings.TrimSpace(string(r.Body)) != `{"has_admin":false,"captcha":false,"initial_admins":false}` {
			t.Fatalf("an instance that lists no first admin: %d %s", r.Status, r.Body)
		}
		app.Pending("Pat Pending") // an account waiting for approval is not an admin
		if r := anon.Do("GET", "/api/auth/setup", nil); !strings.Contains(string(r.Body), `"has_admin":false`) {
			t.Fatalf("with a pending account: %s", r.Body)
		}
		app.Admin()
		if r := anon.Do("GET", "/api/auth/setup", nil); !strings.Contains(string(r.Body), `"has_admin":true`) {
			t.Fatalf("with an admin: %s", r.Body)
		}
	})
}

// TestParallelGuesses: attempts are counted before the password is checked,
// so 60 guesses at once from one address get exactly 5 evaluations (401)
// and 55 refusals (429), on both databases. A guess spread over many
// addresses passes an account-wide ceiling only at a pace, and its owner
// still signs in from their own address.
func TestParallelGuesses(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		app.Register("ann@example.test", apitest.Password, "Ann")
		loginFrom := func(c *http.Client, email, pw string) (int, string) {
			b, _ := json.Marshal(map[string]string{"email": email, "password": pw})
			resp, err := c.Post(app.URL+"/api/auth/login", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Error(err)
				return 0, ""
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		c := fromAddress(t, "127.0.0.1")
		statuses := make(chan int, 60)
		var wg sync.WaitGroup
		for i := 0; i < 60; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, _ := loginFrom(c, "ann@example.test", "wrong-password-"+strconv.Itoa(i))
				statuses <- st
			}()
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for st := range statuses {
			count[st]++
		}
		if count[401] != 5 || count[429] != 55 {
			t.Fatalf("60 parallel guesses: %v, want 5 evaluated (401) and 55 refused (429)", count)
		}

		// Spread over addresses: the account-wide ceiling (50) then lets one
		// attempt through per pace; the client and account-per-client keys
		// of each address stay far from their limits.
		app.Register("bob@example.test", apitest.Password, "Bob")
		for i := 0; i < 50; i++ {
			if st, body := loginFrom(fromAddress(t, "127.0.1."+strconv.Itoa(i+1)), "bob@example.test", "wrong"); st != 401 {
				t.Fatalf("guess %d: %d %s", i, st, body)
			}
		}
		if st, body := loginFrom(fromAddress(t, "127.0.2.1"), "bob@example.test", "wrong"); st != 429 || !strings.Contains(body, "rate_limited") {
			t.Fatalf("past the ceiling, at once: %d %s", st, body)
		}
		// Bob, from his own address, once the pace allows: signed in.
		if st, _ := loginFrom(fromAddress(t, "127.0.3.1"), "bob@example.test", apitest.Password); st != 429 {
			t.Fatalf("within the pace: %d", st)
		}
		app.DB.W.Exec("UPDATE auth_failures SET locked_until = $1 WHERE key = $2", time.Now().UTC().Add(-time.Second), "ceiling:bob@example.test")
		if st, body := loginFrom(fromAddress(t, "127.0.3.1"), "bob@example.test", apitest.Password); st != 200 {
			t.Fatalf("the owner after the pace: %d %s", st, body)
		}
	})
}

// TestTrustedProxies: behind a trusted proxy the sign-in throttle keys on
// the client X-Forwarded-For names (the last address the proxy did not
// add), so one client's lock is not another's; from an untrusted peer the
// header is ignored, so a forged one does not get a locked client out.
func TestTrustedProxies(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		for _, trusted := range []bool{true, false} {
			env := []string{"SERVICE_TRUSTED_PROXIES", "10.9.0.0/16"}
			if trusted {
				env = []string{"SERVICE_TRUSTED_PROXIES", "127.0.0.1, 10.9.0.0/16"}
			}
			app := apitest.New(t, e, env...)
			app.Register("ann@example.test", apitest.Password, "Ann")
			login := func(forwarded, pw string) *apitest.Response {
				return app.Anonymous().Do("POST", "/api/auth/login", map[string]string{"email": "ann@example.test", "password": pw},
					"X-Forwarded-For", forwarded)
			}
			for i := 0; i < 5; i++ {
				// The client wrote the first address; the proxies added the rest.
				if r := login("192.0.2.66, 203.0.113.9, 10.9.1.1", "wrong-"+strconv.Itoa(i)); r.Status != 401 {
					t.Fatalf("trusted=%v failure %d: %d %s", trusted, i, r.Status, r.Body)
				}
			}
			if r := login("192.0.2.77, 203.0.113.9, 10.9.1.1", apitest.Password); r.Status != 429 {
				t.Fatalf("trusted=%v: the locked client, whatever it writes first: %d %s", trusted, r.Status, r.Body)
			}
			other := login("203.0.113.10, 10.9.1.1", apitest.Password)
			if trusted && other.Status != 200 {
				t.Fatalf("behind a trusted proxy another client is not locked: %d %s", other.Status, other.Body)
			}
			if !trusted && other.Status != 429 {
				t.Fatalf("a forged X-Forwarded-For from an untrusted peer got out of the lock: %d %s", other.Status, other.Body)
			}
		}
	})
}

// TestMailRequestsThrottled: reset, verification and magic-link requests
// are throttled without a captcha, per address asked for (an address with
// no account alike, so the answer tells nothing) and per client, with 429
// and Retry-After; on both databases.
func TestMailRequestsThrottled(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		app.Register("ann@example.test", apitest.Password, "Ann")
		for n, path := range []string{"/api/auth/reset/request", "/api/auth/verify/request", "/api/auth/magic/request"} {
			c := fromAddress(t, "127.0.4."+strconv.Itoa(n+1))
			ask := func(email string) (int, string) {
				b, _ := json.Marshal(map[string]string{"email": email})
				resp, err := c.Post(app.URL+path, "application/json", bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode, resp.Header.Get("Retry-After")
			}
			for _, email := range []string{"ann@example.test", "nobody@example.test"} {
				for i := 0; i < 3; i++ {
					if st, _ := ask(email); st != 202 {
						t.Fatalf("%s %s request %d: %d", path, email, i, st)
					}
				}
				if st, ra := ask(email); st != 429 || ra == "" {
					t.Fatalf("%s %s past the address's limit: %d, Retry-After %q", path, email, st, ra)
				}
			}
			// The client's limit across addresses: ten requests in all (the
			// refused ones did not count).
			for i := 0; i < 4; i++ {
				if st, _ := ask("other" + strconv.Itoa(i) + "@example.test"); st != 202 {
					t.Fatalf("%s another address %d: %d", path, i, st)
				}
			}
			if st, ra := ask("one-more@example.test"); st != 429 || ra == "" {
				t.Fatalf("%s past the client's limit: %d, Retry-After %q", path, st, ra)
			}
		}
	})
}
