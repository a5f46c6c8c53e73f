package mail_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// mailServer is a real SMTP server in the test (go-smtp) keeping what it
// receives.
type mailServer struct {
	mu   sync.Mutex
	got  []received
	srv  *smtp.Server
	addr string
}

type received struct {
	from string
	to   []string
	data string
}

type backend struct{ m *mailServer }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{m: b.m}, nil }

type session struct {
	m   *mailServer
	cur received
}

func (s *session) Reset()        { s.cur = received{} }
func (s *session) Logout() error { return nil }
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.cur.from = from
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = string(b)
	s.m.mu.Lock()
	s.m.got = append(s.m.got, s.cur)
	s.m.mu.Unlock()
	return nil
}

// startMailServer serves SMTP on addr ("" picks a port).
func startMailServer(t *testing.T, addr string) *mailServer {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	m := &mailServer{addr: ln.Addr().String()}
	m.srv = smtp.NewServer(backend{m})
	m.srv.Domain = "mail.test"
	m.srv.AllowInsecureAuth = true
	go m.srv.Serve(ln)
	t.Cleanup(func() { m.srv.Close() })
	return m
}

func (m *mailServer) mails() []received {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]received(nil), m.got...)
}

func (m *mailServer) wait(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(m.mails()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d mails arrived, want %d", len(m.mails()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return m.mails()
}

// mailApp is an app whose mail goes to a real SMTP server in the test, with
// its instance admin signed in.
func mailApp(t *testing.T, e db.Engine) (*apitest.App, *apitest.Client, *mailServer) {
	t.Helper()
	ms := startMailServer(t, "")
	app := apitest.New(t, e, smtpEnv(ms.addr)...)
	return app, app.Admin(), ms
}

// race runs n sign-ins at once, each from its own browser, and counts the
// ones that won (200); the others must be refused (400).
func race(t *testing.T, app *apitest.App, n int, do func(c *apitest.Client) int) int {
	t.Helper()
	return apitest.Race(t, n, 200, 400, func() int {
		c := app.Anonymous()
		st := do(c)
		app.Remember(c.SessionToken(), c.CSRFToken())
		return st
	})
}

var inviteLink = regexp.MustCompile(`/invite\?token=(sinv_[A-Za-z0-9_-]+)`)

func smtpEnv(addr string) []string {
	host, port, _ := net.SplitHostPort(addr)
	return []string{"SERVICE_SMTP_HOST", host, "SERVICE_SMTP_PORT", port, "SERVICE_SMTP_FROM", "slipway@mail.test",
		"SERVICE_SMTP_SECURITY", "none", "PUBLIC_URL", "https://slipway.example"}
}

// An invite travels by mail: the link read out of the received mail
// accepts it. A mail server outage delays mail and loses none.
func TestInviteMailEndToEnd(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ms := startMailServer(t, "")
		app := apitest.New(t, e, smtpEnv(ms.addr)...)
		admin := app.Admin()
		owner := app.Approved(admin, "Olga Owner")
		ivy := app.Approved(admin, "Ivy Invitee")

		r := owner.Do("POST", "/organization/invites", map[string]any{"email": ivy.Email})
		if r.Status != http.StatusCreated {
			t.Fatalf("invite: %d %s", r.Status, r.Body)
		}
		app.Remember(r.Map(t)["token"].(string))
		got := ms.wait(t, 1)[0]
		if got.from != "slipway@mail.test" || len(got.to) != 1 || got.to[0] != ivy.Email ||
			!strings.Contains(got.data, "Subject: Olga Owner invited you to Olga Owner's organization on Slipway") {
			t.Fatalf("mail %+v", got)
		}
		m := inviteLink.FindStringSubmatch(got.data)
		if m == nil || !strings.Contains(got.data, "https://slipway.example/invite?token=") {
			t.Fatalf("no link in the mail:\n%s", got.data)
		}
		if r := ivy.Do("POST", "/organization/invites/accept", map[string]any{"token": m[1]}); r.Status != 200 {
			t.Fatalf("accept with the mailed link: %d %s", r.Status, r.Body)
		}
		// The body is sealed at rest: the token is not in the database.
		var sealed string
		if err := app.DB.R.QueryRow(`SELECT body_sealed FROM mail_outbox`).Scan(&sealed); err != nil || strings.Contains(sealed, m[1]) {
			t.Fatalf("body at rest %q, %v", sealed, err)
		}

		// Outage: the server goes away; the mail waits, then goes once.
		ms.srv.Close()
		r = owner.Do("POST", "/organization/invites", map[string]any{"email": "late@example.test"})
		if r.Status != http.StatusCreated {
			t.Fatalf("invite during the outage: %d %s", r.Status, r.Body)
		}
		app.Remember(r.Map(t)["token"].(string))
		deadline := time.Now().Add(20 * time.Second)
		for {
			var attempts int
			var lastErr, status string
			app.DB.R.QueryRow(`SELECT attempts, last_error, status FROM mail_outbox WHERE to_addr = 'late@example.test'`).Scan(&attempts, &lastErr, &status)
			if attempts >= 1 && lastErr != "" && status == "queued" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the failed delivery is not recorded: %d %q %s", attempts, lastErr, status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		back := startMailServer(t, ms.addr) // the same address again
		app.DB.W.Exec(`UPDATE mail_outbox SET next_attempt_at = $1 WHERE status = 'queued'`, time.Now().UTC().Add(-time.Second))
		for i := 0; i < 3; i++ { // repeated sends deliver it once
			if _, err := app.Server.Services.Mail.Send(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		got2 := back.wait(t, 1)
		time.Sleep(200 * time.Millisecond)
		if n := len(back.mails()); n != 1 || got2[0].to[0] != "late@example.test" {
			t.Fatalf("%d mails after the outage: %+v", n, back.mails())
		}
	})
}

func TestTemplates(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ms := startMailServer(t, "")
		app := apitest.New(t, e, smtpEnv(ms.addr)...)
		admin := app.Admin()
		owner := app.Approved(admin, "Olga Owner")

		r := admin.Do("GET", "/api/admin/templates", nil)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"key":"invite"`) ||
			!strings.Contains(string(r.Body), `"variables":["expires","inviter","link","organization","role"]`) ||
			!strings.Contains(string(r.Body), `"custom":false`) {
			t.Fatalf("templates: %d %s", r.Status, r.Body)
		}
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "anonymous with a bad body is 401", Method: "PUT", Path: "/api/admin/templates/invite", Body: map[string]any{"subject": 1}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "not an admin", Client: owner, Method: "PUT", Path: "/api/admin/templates/invite", Body: map[string]any{"subject": "x", "body": "y"},
				WantStatus: 403, WantCode: "forbidden"},
			{Name: "not an admin reads", Client: owner, Method: "GET", Path: "/api/admin/templates", WantStatus: 403, WantCode: "forbidden"},
			{Name: "unknown template", Client: admin, Method: "PUT", Path: "/api/admin/templates/nope", Body: map[string]any{"subject": "x", "body": "y"},
				WantStatus: 404, WantCode: "not_found"},
			{Name: "a placeholder the mail does not fill", Client: admin, Method: "PUT", Path: "/api/admin/templates/invite",
				Body: map[string]any{"subject": "Hi {{name}}", "body": "{{link}}"}, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"{{name}}"}},
			{Name: "control characters", Client: admin, Method: "PUT", Path: "/api/admin/templates/invite",
				Body: map[string]any{"subject": "Hi\x07", "body": "{{link}}"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "empty body", Client: admin, Method: "PUT", Path: "/api/admin/templates/invite",
				Body: map[string]any{"subject": "Hi", "body": "  "}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "edit", Client: admin, Method: "PUT", Path: "/api/admin/templates/invite",
				Body:       map[string]any{"subject": "Join {{organization}}", "body": "Use {{ link }} before {{expires}}.", "reason": "shorter"},
				WantStatus: 200, WantContains: []string{`"custom":true`, `"variables":["expires","link","organization"]`}},
		})
		var reason string
		if err := app.DB.R.QueryRow(`SELECT after FROM audit_log WHERE action = 'template.update'`).Scan(&reason); err != nil || !strings.Contains(reason, "shorter") {
			t.Fatalf("audit %q, %v", reason, err)
		}
		r = owner.Do("POST", "/organization/invites", map[string]any{"email": "new@example.test"})
		app.Remember(r.Map(t)["token"].(string))
		got := ms.wait(t, 1)[0]
		if !strings.Contains(got.data, "Subject: Join Olga Owner's organization") || !inviteLink.MatchString(got.data) {
			t.Fatalf("the edited template is not used:\n%s", got.data)
		}
	})
}

// Without an SMTP server, mail is kept for the dev outbox, bodies included.
func TestDevOutbox(t *testing.T) {
	app := apitest.New(t, db.SQLite)
	admin := app.Admin()
	owner := app.Approved(admin, "Olga Owner")
	r := owner.Do("POST", "/organization/invites", map[string]any{"email": "dev@example.test"})
	tok := r.Map(t)["token"].(string)
	app.Remember(tok)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = admin.Do("GET", "/api/admin/mail/outbox", nil)
		if strings.Contains(string(r.Body), `"status":"sent"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox: %s", r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(string(r.Body), "/invite?token="+tok) || !strings.Contains(string(r.Body), `"to":"dev@example.test"`) {
		t.Fatalf("dev outbox: %s", r.Body)
	}
}

var resetLink = regexp.MustCompile(`/reset\?token=(srst_[A-Za-z0-9_-]+)`)

// Password reset, end to end through the mail: the request answers the
// same for any address, only an account gets the mail, the link sets a new
// password once and signs the account out everywhere.
func TestPasswordResetByMail(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app, admin, ms := mailApp(t, e)
		ann := app.Approved(admin, "Ann Reset")
		anon := app.Anonymous()

		known := anon.Do("POST", "/api/auth/reset/request", map[string]any{"email": ann.Email})
		unknown := anon.Do("POST", "/api/auth/reset/request", map[string]any{"email": "nobody@example.test"})
		malformed := anon.Do("POST", "/api/auth/reset/request", map[string]any{"email": "not an address"})
		for _, r := range []*apitest.Response{known, unknown, malformed} {
			if r.Status != 202 || string(r.Body) != string(known.Body) {
				t.Fatalf("reset requests differ: %d %s / %d %s / %d %s", known.Status, known.Body, unknown.Status, unknown.Body, malformed.Status, malformed.Body)
			}
		}
		got := ms.wait(t, 1)
		time.Sleep(300 * time.Millisecond)
		if n := len(ms.mails()); n != 1 || got[0].to[0] != ann.Email {
			t.Fatalf("%d mails: %+v", n, ms.mails())
		}
		m := resetLink.FindStringSubmatch(got[0].data)
		if m == nil {
			t.Fatalf("no reset link:\n%s", got[0].data)
		}
		tok := m[1]
		app.Remember(tok)
		// A second request within the minute sends nothing more.
		anon.Do("POST", "/api/auth/reset/request", map[string]any{"email": ann.Email})

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "weak password, the token stays usable", Method: "POST", Path: "/api/auth/reset/consume", Body: map[string]any{"token": tok, "password": "short"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown token", Method: "POST", Path: "/api/auth/reset/consume", Body: map[string]any{"token": "srst_nope", "password": "a-new-long-passphrase"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "not a token", Method: "POST", Path: "/api/auth/reset/consume", Body: map[string]any{"token": "hello", "password": "a-new-long-passphrase"},
				WantStatus: 400, WantCode: "bad_request"},
		})
		// Racing consumes: one sets the password.
		if won := race(t, app, 6, func(c *apitest.Client) int {
			return c.Do("POST", "/api/auth/reset/consume", map[string]any{"token": tok, "password": "a-new-long-passphrase"}).Status
		}); won != 1 {
			t.Fatalf("%d consumes won", won)
		}
		app.Remember("a-new-long-passphrase")
		if r := ann.Do("GET", "/api/me", nil); r.Status != 401 {
			t.Fatalf("the old session after a reset: %d", r.Status)
		}
		if r := anon.Do("POST", "/api/auth/login", map[string]any{"email": ann.Email, "password": apitest.Password}); r.Status != 401 {
			t.Fatalf("the old password: %d", r.Status)
		}
		if r := anon.Do("POST", "/api/auth/login", map[string]any{"email": ann.Email, "password": "a-new-long-passphrase"}); r.Status != 200 {
			t.Fatalf("the new password: %d %s", r.Status, r.Body)
		}
		// Expired links do nothing.
		time.Sleep(1100 * time.Millisecond)
		app.DB.W.Exec(`UPDATE auth_tokens SET created_at = $1`, time.Now().UTC().Add(-time.Hour))
		anon.Do("POST", "/api/auth/reset/request", map[string]any{"email": ann.Email})
		all := ms.wait(t, 2)
		m2 := resetLink.FindStringSubmatch(all[1].data)
		app.Remember(m2[1])
		app.DB.W.Exec(`UPDATE auth_tokens SET expires_at = $1 WHERE used_at IS NULL`, time.Now().UTC().Add(-time.Second))
		if r := anon.Do("POST", "/api/auth/reset/consume", map[string]any{"token": m2[1], "password": "another-long-passphrase"}); r.Status != 400 {
			t.Fatalf("an expired token: %d", r.Status)
		}
	})
}

var verifyLink = regexp.MustCompile(`(/api/auth/verify/consume\?token=svfy_[A-Za-z0-9_-]+)`)

// Address verification through the mail: the link flips email_verified
// once and always redirects to the login page with a flag.
func TestVerifyByMail(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ms := startMailServer(t, "")
		app := apitest.New(t, e, smtpEnv(ms.addr)...)
		app.Admin()
		bea := app.Pending("Bea Verify") // waiting for approval: may still confirm her address
		anon := app.Anonymous()
		a := anon.Do("POST", "/api/auth/verify/request", map[string]any{"email": bea.Email})
		b := anon.Do("POST", "/api/auth/verify/request", map[string]any{"email": "nobody@example.test"})
		if a.Status != 202 || string(a.Body) != string(b.Body) || b.Status != 202 {
			t.Fatalf("verify requests differ: %d %s / %d %s", a.Status, a.Body, b.Status, b.Body)
		}
		got := ms.wait(t, 1)[0]
		m := verifyLink.FindStringSubmatch(got.data)
		if m == nil || got.to[0] != bea.Email {
			t.Fatalf("mail %+v", got)
		}
		link := m[1]
		app.Remember(link[strings.Index(link, "svfy_"):])
		follow := func(c *apitest.Client, path string) *apitest.Response { return c.Do("GET", path, nil) }
		r := follow(bea, link)
		if r.Status != http.StatusFound || r.Header.Get("Location") != "/login?verified=1" {
			t.Fatalf("first follow: %d %q", r.Status, r.Header.Get("Location"))
		}
		if r := bea.Do("GET", "/api/me", nil); !strings.Contains(string(r.Body), `"email_verified":true`) {
			t.Fatalf("me after verifying: %s", r.Body)
		}
		for _, p := range []string{link, "/api/auth/verify/consume?token=svfy_nope", "/api/auth/verify/consume?token=" + strings.Repeat("x", 500)} {
			if r := follow(anon, p); r.Status != http.StatusFound || r.Header.Get("Location") != "/login?verified=0" {
				t.Fatalf("%s: %d %q", p, r.Status, r.Header.Get("Location"))
			}
		}
	})
}

var (
	magicLink = regexp.MustCompile(`(/api/auth/magic/consume\?token=(smgc_[A-Za-z0-9_-]+))`)
	magicCode = regexp.MustCompile(`waiting: ([0-9]{8})`)
)

// Magic link sign-in through the mail: the request answers the same for
// every address; the mailed GET link only redirects; POST consumes once;
// the waiting browser can sign in with the code instead.
func TestMagicLinkByMail(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app, admin, ms := mailApp(t, e)
		mia := app.Approved(admin, "Mia Magic")

		waiting := app.Anonymous()
		stranger := app.Anonymous()
		a := waiting.Do("POST", "/api/auth/magic/request", map[string]any{"email": mia.Email})
		b := stranger.Do("POST", "/api/auth/magic/request", map[string]any{"email": "nobody@example.test"})
		if a.Status != 202 || b.Status != 202 || string(a.Body) != string(b.Body) || a.Header.Get("Set-Cookie") == "" || b.Header.Get("Set-Cookie") == "" {
			t.Fatalf("magic requests differ: %d %s %q / %d %s %q", a.Status, a.Body, a.Header.Get("Set-Cookie"), b.Status, b.Body, b.Header.Get("Set-Cookie"))
		}
		pa, pb := waiting.Do("GET", "/api/auth/magic/pending", nil), stranger.Do("GET", "/api/auth/magic/pending", nil)
		if !strings.Contains(string(pa.Body), `"status":"waiting"`) || !strings.Contains(string(pb.Body), `"status":"waiting"`) {
			t.Fatalf("pending: %s / %s", pa.Body, pb.Body)
		}
		if r := app.Anonymous().Do("GET", "/api/auth/magic/pending", nil); !strings.Contains(string(r.Body), `"status":"unknown"`) {
			t.Fatalf("a browser without a request: %s", r.Body)
		}
		got := ms.wait(t, 1)
		time.Sleep(200 * time.Millisecond)
		if n := len(ms.mails()); n != 1 || got[0].to[0] != mia.Email {
			t.Fatalf("%d mails", n)
		}
		link, code := magicLink.FindStringSubmatch(got[0].data), magicCode.FindStringSubmatch(got[0].data)
		if link == nil || code == nil {
			t.Fatalf("mail:\n%s", got[0].data)
		}
		app.Remember(link[2], code[1])
		// The GET only redirects: scanners do not spend the link.
		for i := 0; i < 2; i++ {
			r := app.Anonymous().Do("GET", link[1], nil)
			if r.Status != http.StatusFound || r.Header.Get("Location") != "/magic/confirm?token="+link[2] {
				t.Fatalf("GET link: %d %q", r.Status, r.Header.Get("Location"))
			}
		}
		// The waiting browser types the code: signed in, once.
		if r := waiting.Do("POST", "/api/auth/magic/code", map[string]any{"code": "00000000"}); r.Status != 400 {
			t.Fatalf("a wrong code: %d", r.Status)
		}
		if r := stranger.Do("POST", "/api/auth/magic/code", map[string]any{"code": code[1]}); r.Status != 400 {
			t.Fatalf("the code from another browser: %d", r.Status)
		}
		r := waiting.Do("POST", "/api/auth/magic/code", map[string]any{"code": code[1]})
		if r.Status != 200 || waiting.SessionToken() == "" || !strings.Contains(string(r.Body), mia.Email) {
			t.Fatalf("code sign-in: %d %s", r.Status, r.Body)
		}
		app.Remember(waiting.SessionToken(), waiting.CSRFToken())
		if r := waiting.Do("GET", "/api/me", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"email_verified":true`) {
			t.Fatalf("me after the magic sign-in: %d %s", r.Status, r.Body)
		}
		// The link of a used request does nothing more; racing consumes of a fresh one win once.
		if r := app.Anonymous().Do("POST", "/api/auth/magic/consume", map[string]any{"token": link[2]}); r.Status != 400 {
			t.Fatalf("a used link: %d", r.Status)
		}
		if r := waiting.Do("GET", "/api/auth/magic/pending", nil); !strings.Contains(string(r.Body), `"status":"used"`) {
			t.Fatalf("pending after use: %s", r.Body)
		}
		time.Sleep(1100 * time.Millisecond)
		app.DB.W.Exec(`UPDATE auth_tokens SET created_at = $1`, time.Now().UTC().Add(-time.Hour))
		app.Anonymous().Do("POST", "/api/auth/magic/request", map[string]any{"email": mia.Email})
		fresh := magicLink.FindStringSubmatch(ms.wait(t, 2)[1].data)
		app.Remember(fresh[2])
		if won := race(t, app, 6, func(c *apitest.Client) int {
			return c.Do("POST", "/api/auth/magic/consume", map[string]any{"token": fresh[2]}).Status
		}); won != 1 {
			t.Fatalf("%d consumes won", won)
		}
		// Guessing a code: five wrong tries end the request's code.
		time.Sleep(1100 * time.Millisecond)
		app.DB.W.Exec(`UPDATE auth_tokens SET created_at = $1`, time.Now().UTC().Add(-time.Hour))
		guesser := app.Anonymous()
		guesser.Do("POST", "/api/auth/magic/request", map[string]any{"email": mia.Email})
		third := magicCode.FindStringSubmatch(ms.wait(t, 3)[2].data)
		app.Remember(third[1])
		for i := 0; i < 5; i++ {
			if r := guesser.Do("POST", "/api/auth/magic/code", map[string]any{"code": fmt.Sprintf("%08d", i)}); r.Status != 400 {
				t.Fatalf("guess %d: %d", i, r.Status)
			}
		}
		if r := guesser.Do("POST", "/api/auth/magic/code", map[string]any{"code": third[1]}); r.Status != 400 {
			t.Fatalf("the right code after five wrong ones: %d", r.Status)
		}
	})
}
