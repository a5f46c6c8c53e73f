// Package apitest drives a real Slipway server (fresh database, loopback
// listener, real HTTP client with cookies) from API tests: PocketBase-style
// scenario tables and the tenancy harness every workspace-scoped endpoint is
// checked with.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slipway/internal/agenttest"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/auth"
	"slipway/internal/config"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/server"
)

// AdminEmail is in SERVICE_INITIAL_ADMIN_EMAILS of every test app.
const AdminEmail = "admin@slipway.test"

// Password is a password that passes the strength rules.
const Password = "correct-horse-battery"

// LogBuffer collects the server's log output.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything logged so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// App is a running server.
type App struct {
	t      testing.TB
	URL    string
	Server *server.Server
	DB     *db.DB
	Logs   *LogBuffer
	Engine db.Engine
	Config *config.Config

	mu      sync.Mutex
	secrets []string // passwords and tokens clients used
}

// Remember adds secrets a test handed out (tokens, signing secrets) to
// what the server's logs must never hold.
func (a *App) Remember(secrets ...string) { a.remember(secrets...) }

func (a *App) remember(secrets ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.secrets = append(a.secrets, secrets...)
}

// baseEnv is the configuration every test server starts from: its own
// data directory, no shutdown delay, the admin, cheap password hashing.
func baseEnv(t testing.TB) map[string]string {
	return map[string]string{
		"SERVICE_DATA_DIR":               t.TempDir(),
		"SERVICE_SHUTDOWN_LB_DELAY_SECS": "0",
		"SERVICE_SHUTDOWN_GRACE_SECS":    "5",
		"SERVICE_INITIAL_ADMIN_EMAILS":   AdminEmail,
		// Real argon2id, cheap parameters: tests hash hundreds of passwords.
		"SERVICE_ARGON2_MEMORY_KIB": "64",
		"SERVICE_ARGON2_TIME":       "1",
		"SERVICE_LOG_LEVEL":         "debug",
		// The process backend's sandbox helper (and the built-in agent) is
		// the slipway binary, not the test binary the server runs in.
		"SERVICE_AGENT_BINARY": agenttest.Binary(t),
	}
}

// New boots a server on a fresh database of the engine, migrated already
// (on PostgreSQL a copy of the migrated template: the server's boot only
// checks the migrations, which saves each test's server applying them).
// env adds or overrides configuration (pairs of name, value).
func New(t testing.TB, engine db.Engine, env ...string) *App {
	t.Helper()
	m := baseEnv(t)
	target := dbtest.MigratedTarget(t, engine)
	if target.Engine == db.SQLite {
		m["DATABASE_URL"] = "sqlite:" + target.Path
	} else {
		m["DATABASE_URL"] = target.URL
	}
	return boot(t, engine, m, env)
}

// Replica boots a second server on the app's database (PostgreSQL: how
// Slipway scales), with its own data directory and instance identity.
func (a *App) Replica(t testing.TB, env ...string) *App {
	t.Helper()
	if a.Engine != db.Postgres {
		t.Fatal("apitest: replicas share a PostgreSQL database")
	}
	m := baseEnv(t)
	m["DATABASE_URL"] = a.DB.Target.URL
	m["SERVICE_JWT_SECRET"] = a.Config.JWTSecret.Reveal()
	r := boot(t, a.Engine, m, env)
	a.mu.Lock()
	r.secrets = append(r.secrets, a.secrets...)
	a.mu.Unlock()
	return r
}

func boot(t testing.TB, engine db.Engine, m map[string]string, env []string) *App {
	t.Helper()
	for i := 0; i+1 < len(env); i += 2 {
		m[env[i]] = env[i+1]
	}
	cfg, err := config.Load(config.MapLookup(m))
	if err != nil {
		t.Fatal(err)
	}
	logs := &LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	d, err := server.Boot(ctx, cfg, log)
	if err != nil {
		t.Fatalf("apitest: boot: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	s, err := server.New(cfg, log, d)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, nil, nil) }()
	app := &App{t: t, URL: "http://" + ln.Addr().String(), Server: s, DB: d, Logs: logs, Engine: engine, Config: cfg}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("apitest: serve: %v", err)
		}
		app.checkLogsHoldNoSecrets(t)
	})
	return app
}

// checkLogsHoldNoSecrets runs after every test app: no password a client
// used, no session or CSRF token handed out, and no stored hash may appear in
// anything the server logged.
func (a *App) checkLogsHoldNoSecrets(t testing.TB) {
	secrets := append([]string{Password}, a.secrets...)
	rows, err := a.DB.R.Query("SELECT password_hash FROM users WHERE password_hash IS NOT NULL UNION ALL SELECT token_hash FROM sessions")
	if err != nil {
		t.Errorf("apitest: reading hashes: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		if rows.Scan(&h) == nil {
			secrets = append(secrets, h)
			if parts := strings.Split(h, "$"); len(parts) == 6 {
				secrets = append(secrets, parts[4], parts[5]) // salt and key of a PHC hash
			}
		}
	}
	logs := a.Logs.String()
	for _, sec := range secrets {
		if len(sec) >= 8 && strings.Contains(logs, sec) {
			t.Errorf("apitest: a secret reached the server log: %q", sec)
		}
	}
}

// Client is an HTTP client with its own cookie jar. After a sign-in it sends
// the CSRF header on unsafe requests, as the console does.
type Client struct {
	app       *App
	http      *http.Client
	Email     string
	Password  string
	ID        string // user id after sign-in
	Workspace string // sent as X-Workspace-Id when set
}

// Anonymous returns a client without a session.
func (a *App) Anonymous() *Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		a.t.Fatal(err)
	}
	return &Client{app: a, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Response is what a request returned.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test if it is not JSON.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body is not the expected JSON (%v): %s", err, r.Body)
	}
}

// Map decodes a JSON object body.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// Cookie returns a cookie set by the response, or nil.
func (r *Response) Cookie(name string) *http.Cookie {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Do sends a request. body may be nil, a string (raw JSON) or a value to
// marshal. header holds name, value pairs; "X-CSRF-Token", "" suppresses the
// automatic CSRF header.
func (c *Client) Do(method, path string, body any, header ...string) *Response {
	c.app.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.app.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.app.URL+path, rd)
	if err != nil {
		c.app.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Workspace != "" {
		req.Header.Set("X-Workspace-Id", c.Workspace)
	}
	if method != http.MethodGet && method != http.MethodHead {
		if v := c.cookie(auth.CSRFCookie); v != "" {
			req.Header.Set(auth.CSRFHeader, v)
		}
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.app.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.app.t.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func (c *Client) cookie(name string) string {
	u, err := url.Parse(c.app.URL)
	if err != nil {
		c.app.t.Fatal(err)
	}
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// CookieHeader is the client's cookies as a Cookie header (for sockets and
// streams opened by other clients).
func (c *Client) CookieHeader() string {
	return auth.SessionCookie + "=" + c.SessionToken() + "; " + auth.CSRFCookie + "=" + c.CSRFToken()
}

// On is the client talking to another replica, with the same cookies.
func (c *Client) On(replica *App) *Client {
	cc := *c
	cc.app = replica
	jar, err := cookiejar.New(nil)
	if err != nil {
		replica.t.Fatal(err)
	}
	u, _ := url.Parse(replica.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: auth.SessionCookie, Value: c.SessionToken(), Path: "/"}, {Name: auth.CSRFCookie, Value: c.CSRFToken(), Path: "/"}})
	cc.http = &http.Client{Jar: jar, Timeout: c.http.Timeout, CheckRedirect: c.http.CheckRedirect}
	return &cc
}

// URL is the address of the client's server.
func (c *Client) URL() string { return c.app.URL }

// SessionToken returns the client's session cookie value ("" if none).
func (c *Client) SessionToken() string { return c.cookie(auth.SessionCookie) }

// CSRFToken returns the client's CSRF cookie value ("" if none).
func (c *Client) CSRFToken() string { return c.cookie(auth.CSRFCookie) }

// Register signs an account up and fails the test unless it is accepted.
func (a *App) Register(email, password, name string) {
	a.t.Helper()
	a.remember(password)
	r := a.Anonymous().Do("POST", "/api/auth/register", map[string]string{"email": email, "password": password, "display_name": name})
	if r.Status != http.StatusAccepted {
		a.t.Fatalf("register %s: %d %s", email, r.Status, r.Body)
	}
}

// Login signs in and returns the signed-in client.
func (a *App) Login(email, password string) *Client {
	a.t.Helper()
	c := a.Anonymous()
	r := c.Do("POST", "/api/auth/login", map[string]string{"email": email, "password": password})
	if r.Status != http.StatusOK {
		a.t.Fatalf("login %s: %d %s", email, r.Status, r.Body)
	}
	var body struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	r.JSON(a.t, &body)
	c.Email, c.Password, c.ID = email, password, body.User.ID
	a.remember(password, c.SessionToken(), c.CSRFToken())
	return c
}

// Admin returns a signed-in instance admin (registered on first use).
func (a *App) Admin() *Client {
	a.t.Helper()
	a.Register(AdminEmail, Password, "Admin")
	return a.Login(AdminEmail, Password)
}

// Pending registers an account and signs it in without approval.
func (a *App) Pending(name string) *Client {
	a.t.Helper()
	email := strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@example.test"
	a.Register(email, Password, name)
	return a.Login(email, Password)
}

// Approved registers an account, has the admin approve it, and returns it
// signed in.
func (a *App) Approved(admin *Client, name string) *Client {
	a.t.Helper()
	c := a.Pending(name)
	if r := admin.Do("POST", "/api/admin/users/"+c.ID+"/approve", nil); r.Status != http.StatusOK {
		a.t.Fatalf("approve %s: %d %s", name, r.Status, r.Body)
	}
	return c
}

// DefaultWorkspace returns the id of the client's default workspace.
func (c *Client) DefaultWorkspace() string {
	c.app.t.Helper()
	var ws []struct {
		ID        string `json:"id"`
		IsDefault bool   `json:"is_default"`
	}
	r := c.Do("GET", "/api/workspaces", nil)
	r.JSON(c.app.t, &ws)
	for _, w := range ws {
		if w.IsDefault {
			return w.ID
		}
	}
	c.app.t.Fatalf("%s has no default workspace: %s", c.Email, r.Body)
	return ""
}
