package resources_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/webdav"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/resources"
)

// These tests drive POST /api/resources/{id}/test and the browse endpoints
// of a real server against local servers that speak each kind's protocol:
// go-smtp, go-imap's server, x/net's WebDAV server, this machine's
// PostgreSQL, and HTTP servers answering as Discord, Telegram, an
// OpenAI-compatible API and S3 (which checks Signature V4 itself).

// probe is an app whose resources may reach loopback servers (unless made
// strict), with the owner's client. Every answer is kept: none may hold a
// secret the test registered.
type probe struct {
	t       *testing.T
	f       *fixture.API
	c       *apitest.Client
	answers strings.Builder
	secrets []string
}

func newProbe(t *testing.T, allowPrivate bool) *probe {
	t.Helper()
	var env []string
	if allowPrivate {
		env = []string{"SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true"}
	}
	f := fixture.NewAPI(t, db.SQLite, env...)
	p := &probe{t: t, f: f, c: f.Owner}
	t.Cleanup(func() {
		for _, s := range p.secrets {
			if strings.Contains(p.answers.String(), s) {
				t.Errorf("an answer held the secret %q", s)
			}
		}
	})
	return p
}

// secret registers a secret: no answer and no log line may hold it.
func (p *probe) secret(s string) string {
	p.f.App.Remember(s)
	p.secrets = append(p.secrets, s)
	if b64 := base64.StdEncoding.EncodeToString([]byte(s)); len(b64) >= 8 {
		p.secrets = append(p.secrets, b64)
	}
	return s
}

func (p *probe) do(method, path string, body any) *apitest.Response {
	p.t.Helper()
	r := p.c.Do(method, path, body)
	p.answers.Write(r.Body)
	return r
}

// add creates a resource; secret "" stores none.
func (p *probe) add(kind string, config obj, secret string) string {
	p.t.Helper()
	body := obj{"name": kind + " " + ids.New(), "kind": kind, "config": config}
	if secret != "" {
		body["secret"] = secret
	}
	return create(p.t, p.c, body).ID
}

// test runs the connection test and returns its message after checking
// ok and that the message names every fragment.
func (p *probe) test(id string, ok bool, fragments ...string) string {
	p.t.Helper()
	r := p.do("POST", "/api/resources/"+id+"/test", nil)
	fixture.Want(p.t, r, http.StatusOK)
	if keys := apitest.ObjectKeys(p.t, r.Body); !slices.Equal(keys, []string{"ok", "message"}) {
		p.t.Fatalf("test answer keys %v, want ok and message: %s", keys, r.Body)
	}
	var res resources.ResourceTest
	r.JSON(p.t, &res)
	p.t.Logf("test: ok %v: %s", res.OK, res.Message)
	if res.OK != ok {
		p.t.Fatalf("test ok = %v, want %v: %s", res.OK, ok, res.Message)
	}
	for _, f := range fragments {
		if !strings.Contains(res.Message, f) {
			p.t.Errorf("test message %q does not name %q", res.Message, f)
		}
	}
	return res.Message
}

// bad expects a 400 bad_request naming the fragments.
func (p *probe) bad(method, path string, fragments ...string) {
	p.t.Helper()
	fixture.WantError(p.t, p.do(method, path, nil), http.StatusBadRequest, "bad_request", fragments...)
}

// serve starts an HTTP test server; hits counts its requests.
func serve(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(port, &n)
	return host, n
}

// selfSigned is a TLS config with a certificate for 127.0.0.1 that no
// client trusts.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestConnectionTestHTTP: http and api_key resources call their base URL
// with the stored secret in the configured auth.
func TestConnectionTestHTTP(t *testing.T) {
	p := newProbe(t, true)
	token := p.secret("tok-" + randomHex(12))
	var status atomic.Int32
	status.Store(200)
	srv, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, basic := r.BasicAuth()
		authed := r.Header.Get("Authorization") == "Bearer "+token || basic && user == "ann" && pass == token ||
			r.Header.Get("X-Api-Key") == token || r.Header.Get("X-Custom") == token
		switch {
		case r.URL.Path == "/open":
			w.WriteHeader(int(status.Load()))
		case !authed:
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.WriteHeader(int(status.Load()))
		}
	}))
	host := strings.TrimPrefix(srv.URL, "http://")
	// The path and query must not show in a message.
	base := srv.URL + "/v1/hidden-path?q=hidden-query"

	for _, tc := range []struct {
		name   string
		kind   string
		config obj
	}{
		{"bearer by default", "http", obj{"base_url": base}},
		{"basic", "http", obj{"base_url": base, "auth": "basic", "username": "ann"}},
		{"a header", "http", obj{"base_url": base, "auth": "header", "header_name": "X-Custom"}},
		{"api_key's default header", "api_key", obj{"base_url": base}},
		{"api_key bearer", "api_key", obj{"base_url": base, "auth": "bearer"}},
	} {
		id := p.add(tc.kind, tc.config, token)
		msg := p.test(id, true, "HTTP 200 from "+host)
		if strings.Contains(msg, "hidden") {
			t.Fatalf("%s: the message shows the URL's path or query: %s", tc.name, msg)
		}
		wrong := p.add(tc.kind, tc.config, p.secret("wrong-"+randomHex(8)))
		p.test(wrong, false, "HTTP 401 from "+host, "credentials were refused")
	}

	// No auth: any answer but a server failure is a reached server.
	open := p.add("http", obj{"base_url": srv.URL + "/open", "auth": "none"}, "")
	p.test(open, true, "HTTP 200")
	status.Store(404)
	p.test(open, true, "HTTP 404")
	status.Store(503)
	p.test(open, false, "HTTP 503", "server failed")
	status.Store(200)

	// Unreachable.
	gone := p.add("http", obj{"base_url": "http://" + closedPort(t) + "/"}, token)
	p.test(gone, false, "could not reach", "connection refused")

	// Obviously broken configs: 400 before any call.
	p.bad("POST", "/api/resources/"+p.add("http", obj{"base_url": base, "auth": "basic"}, token)+"/test", "username")
	p.bad("POST", "/api/resources/"+p.add("http", obj{"base_url": base, "auth": "header"}, token)+"/test", "header_name")
	p.bad("POST", "/api/resources/"+p.add("http", obj{"base_url": base, "auth": "bearer"}, "")+"/test", "secret")
	p.bad("POST", "/api/resources/"+p.add("api_key", obj{"base_url": base}, "")+"/test", "secret")
	p.bad("POST", "/api/resources/"+p.add("http", obj{"base_url": base, "auth": "basic", "username": "a:b"}, token)+"/test", "colon")
	// A secret no header can carry.
	p.bad("POST", "/api/resources/"+p.add("http", obj{"base_url": base}, p.secret("line\r\nInjected: yes"))+"/test", "control character")

	// Unknown ids.
	fixture.WantError(t, p.do("POST", "/api/resources/"+ids.New()+"/test", nil), http.StatusNotFound, "not_found")
	fixture.WantError(t, p.do("POST", "/api/resources/not-an-id/test", nil), http.StatusNotFound, "not_found")
}

// TestConnectionTestRedirect: a redirect is reported, not followed: the
// secret stays with the host it was configured for.
func TestConnectionTestRedirect(t *testing.T) {
	p := newProbe(t, true)
	key := p.secret("key-" + randomHex(12))
	elsewhere, elsewhereHits := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/collect?k=1", http.StatusFound)
	}))
	id := p.add("api_key", obj{"base_url": srv.URL}, key)
	msg := p.test(id, true, "HTTP 302", "not followed", strings.TrimPrefix(elsewhere.URL, "http://"))
	if strings.Contains(msg, "collect") {
		t.Fatalf("the message shows the redirect's path: %s", msg)
	}
	if elsewhereHits.Load() != 0 {
		t.Fatal("the redirect was followed with the key")
	}
}

// TestConnectionTestOpenAI: GET {base_url}/models with the key.
func TestConnectionTestOpenAI(t *testing.T) {
	p := newProbe(t, true)
	key := p.secret("sk-" + randomHex(16))
	srv, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided"}}`)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-small","object":"model"},{"id":"gpt-large","object":"model"}]}`)
	}))
	id := p.add("openai_compatible", obj{"base_url": srv.URL + "/v1/", "model": "gpt-large"}, key)
	p.test(id, true, "HTTP 200", "2 models", "gpt-large among them")
	other := p.add("openai_compatible", obj{"base_url": srv.URL + "/v1", "model": "gpt-huge"}, key)
	p.test(other, true, "gpt-huge not among them")
	p.test(p.add("openai_compatible", obj{"base_url": srv.URL + "/v1"}, p.secret("sk-wrong-"+randomHex(8))), false, "HTTP 401", "API key was refused")
	// Without a key (a local model server may need none) the call is
	// made without one.
	p.test(p.add("openai_compatible", obj{"base_url": srv.URL + "/v1"}, ""), false, "HTTP 401", "none is stored")
	p.test(p.add("openai_compatible", obj{"base_url": srv.URL + "/elsewhere"}, key), false, "HTTP 404")
}

// fakeDiscord answers as Discord's REST API does for a bot with the token.
func fakeDiscord(t *testing.T, token string) (*httptest.Server, *atomic.Int32) {
	mux := http.NewServeMux()
	authed := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bot "+token {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"message": "401: Unauthorized", "code": 0}`)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			h(w, r)
		}
	}
	mux.HandleFunc("GET /api/v10/users/@me", authed(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"80351110224678912","username":"slipbot","discriminator":"0","bot":true}`)
	}))
	mux.HandleFunc("GET /api/v10/users/@me/guilds", authed(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("limit") != "200" {
			t.Errorf("guilds asked with limit %q", r.URL.Query().Get("limit"))
		}
		io.WriteString(w, `[{"id":"111","name":"Zeta crew"},{"id":"222","name":"alpha"},{"id":"../../users/@me","name":"evil"}]`)
	}))
	mux.HandleFunc("GET /api/v10/guilds/{id}/channels", authed(func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("id") {
		case "111":
			io.WriteString(w, `[{"id":"1","name":"general","type":0,"position":2},{"id":"2","name":"Voice","type":2,"position":0},
				{"id":"3","name":"news","type":5,"position":1},{"id":"4","name":"Text channels","type":4,"position":0},
				{"id":"5","name":"forum","type":15,"position":3}]`)
		case "222":
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"message": "Missing Access", "code": 50001}`)
		default:
			t.Errorf("channels of guild %q asked", r.PathValue("id"))
			http.NotFound(w, r)
		}
	}))
	return serve(t, mux)
}

// TestDiscord: the test signs in as the bot; channels lists its guilds
// with their text and announcement channels.
func TestDiscord(t *testing.T) {
	p := newProbe(t, true)
	token := p.secret("MTA1.bot-token." + randomHex(10))
	srv, _ := fakeDiscord(t, token)
	api := srv.URL + "/api/v10"
	id := p.add("discord", obj{"api_base": api}, token)
	p.test(id, true, "bot @slipbot")
	wrong := p.add("discord", obj{"api_base": api}, p.secret("not-the-token-"+randomHex(6)))
	p.test(wrong, false, "HTTP 401", "refused the bot token")

	r := p.do("GET", "/api/resources/"+id+"/discord/channels", nil)
	fixture.Want(t, r, http.StatusOK)
	var guilds []resources.ResourceGuild
	r.JSON(t, &guilds)
	want := []resources.ResourceGuild{
		{GuildID: "222", GuildName: "alpha", Channels: []resources.ResourceChannel{}},
		{GuildID: "111", GuildName: "Zeta crew", Channels: []resources.ResourceChannel{{ID: "3", Name: "news"}, {ID: "1", Name: "general"}}},
	}
	if !reflect.DeepEqual(guilds, want) {
		t.Fatalf("channels %s", r.Body)
	}
	if keys := fixture.ElementKeys(t, r.Body); !slices.Equal(keys[0], []string{"guild_id", "guild_name", "channels"}) {
		t.Fatalf("guild keys %v", keys)
	}

	// A refused token is a 400 (spec); so is another kind, and a bot without a token.
	p.bad("GET", "/api/resources/"+wrong+"/discord/channels", "HTTP 401", "refused the bot token")
	p.bad("GET", "/api/resources/"+p.add("http", obj{"base_url": srv.URL}, "")+"/discord/channels", "only discord resources")
	noToken := p.add("discord", obj{"api_base": api}, "")
	p.bad("GET", "/api/resources/"+noToken+"/discord/channels", "bot token")
	p.bad("POST", "/api/resources/"+noToken+"/test", "bot token")
	// Unreachable: a 400 that says so.
	gone := p.add("discord", obj{"api_base": "http://" + closedPort(t) + "/api/v10"}, token)
	p.bad("GET", "/api/resources/"+gone+"/discord/channels", "could not reach")
	p.test(gone, false, "could not reach")
	fixture.WantError(t, p.do("GET", "/api/resources/"+ids.New()+"/discord/channels", nil), http.StatusNotFound, "not_found")
}

// TestTelegram: getMe with the token in the path.
func TestTelegram(t *testing.T) {
	p := newProbe(t, true)
	token := p.secret("123456:AA" + randomHex(14))
	srv, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bot"+token+"/getMe" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
			return
		}
		io.WriteString(w, `{"ok":true,"result":{"id":123456,"is_bot":true,"first_name":"Slip","username":"slip_alerts_bot"}}`)
	}))
	p.test(p.add("telegram", obj{"api_base": srv.URL, "default_chat_id": "42"}, token), true, "bot @slip_alerts_bot")
	p.test(p.add("telegram", obj{"api_base": srv.URL + "/"}, p.secret("654321:ZZ"+randomHex(14))), false, "HTTP 401", "refused the bot token")
	p.bad("POST", "/api/resources/"+p.add("telegram", obj{"api_base": srv.URL}, "")+"/test", "bot token")
}

// davServer is x/net's WebDAV server on an in-memory file system under
// /dav/, behind basic auth.
func davServer(t *testing.T, user, pass string) *httptest.Server {
	t.Helper()
	fs := webdav.NewMemFS()
	ctx := context.Background()
	for _, d := range []string{"/Projects", "/Projects/2024", "/Projects/2025", "/My Docs", "/archive"} {
		if err := fs.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fs.OpenFile(ctx, "/notes.txt", 0o2|0o100, 0o644) // O_RDWR|O_CREATE
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("not a folder"))
	f.Close()
	h := &webdav.Handler{Prefix: "/dav", FileSystem: fs, LockSystem: webdav.NewMemLS()}
	srv, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, pw, ok := r.BasicAuth()
		if !ok || u != user || pw != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="dav"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	return srv
}

// TestWebDAV: the test PROPFINDs the share; folders lists sub-folders.
func TestWebDAV(t *testing.T) {
	p := newProbe(t, true)
	pass := p.secret("dav-" + randomHex(10))
	srv := davServer(t, "ann@example.com", pass)
	id := p.add("seafile_webdav", obj{"url": srv.URL + "/dav", "username": "ann@example.com"}, pass)
	p.test(id, true, "HTTP 207", "ann@example.com")
	wrong := p.add("seafile_webdav", obj{"url": srv.URL + "/dav/", "username": "ann@example.com"}, p.secret("dav-wrong-"+randomHex(6)))
	p.test(wrong, false, "HTTP 401", "refused")
	p.test(p.add("seafile_webdav", obj{"url": srv.URL + "/dav/nowhere", "username": "ann@example.com"}, pass), false, "HTTP 404")

	folders := func(query string) []resources.ResourceFolder {
		t.Helper()
		r := p.do("GET", "/api/resources/"+id+"/storage/folders"+query, nil)
		fixture.Want(t, r, http.StatusOK)
		var out []resources.ResourceFolder
		r.JSON(t, &out)
		return out
	}
	root := []resources.ResourceFolder{{Name: "My Docs", Path: "/My Docs"}, {Name: "Projects", Path: "/Projects"}, {Name: "archive", Path: "/archive"}}
	for _, q := range []string{"", "?path=", "?path=/"} {
		if got := folders(q); !reflect.DeepEqual(got, root) {
			t.Fatalf("folders%s = %+v", q, got)
		}
	}
	sub := []resources.ResourceFolder{{Name: "2024", Path: "/Projects/2024"}, {Name: "2025", Path: "/Projects/2025"}}
	for _, q := range []string{"?path=Projects", "?path=/Projects/", "?path=%2FProjects"} {
		if got := folders(q); !reflect.DeepEqual(got, sub) {
			t.Fatalf("folders%s = %+v", q, got)
		}
	}
	if got := folders("?path=My%20Docs"); len(got) != 0 {
		t.Fatalf("an empty folder lists %+v", got)
	}
	r := p.do("GET", "/api/resources/"+id+"/storage/folders?path=archive", nil)
	if fixture.Want(t, r, http.StatusOK); strings.TrimSpace(string(r.Body)) != "[]" {
		t.Fatalf("an empty folder answers %s, want []", r.Body)
	}

	for _, q := range []string{"../etc", "Projects/../..", "/Projects/./2024", "a//b", "..", "%00x"} {
		p.bad("GET", "/api/resources/"+id+"/storage/folders?path="+q, "path")
	}
	p.bad("GET", "/api/resources/"+id+"/storage/folders?path=nowhere", "HTTP 404", "no folder /nowhere")
	p.bad("GET", "/api/resources/"+wrong+"/storage/folders", "HTTP 401", "refused")
	p.bad("GET", "/api/resources/"+p.add("http", obj{"base_url": srv.URL}, "")+"/storage/folders", "only seafile_webdav resources")
	noPass := p.add("seafile_webdav", obj{"url": srv.URL + "/dav", "username": "ann@example.com"}, "")
	p.bad("GET", "/api/resources/"+noPass+"/storage/folders", "password")
	p.bad("POST", "/api/resources/"+noPass+"/test", "password")
	fixture.WantError(t, p.do("GET", "/api/resources/"+ids.New()+"/storage/folders", nil), http.StatusNotFound, "not_found")
}

// TestConnectionTestNoSSRF: without SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE a
// resource pointing at this machine is refused before anything is sent,
// over HTTP and over the TCP protocols alike.
func TestConnectionTestNoSSRF(t *testing.T) {
	p := newProbe(t, false)
	secret := p.secret("ssrf-" + randomHex(10))
	srv, hits := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var dialled atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	host, port := hostPort(t, ln.Addr().String())

	for _, tc := range []struct {
		kind   string
		config obj
	}{
		{"http", obj{"base_url": srv.URL}},
		{"api_key", obj{"base_url": "http://localhost:" + strings.Split(srv.URL, ":")[2]}},
		{"openai_compatible", obj{"base_url": srv.URL + "/v1"}},
		{"discord", obj{"api_base": srv.URL}},
		{"telegram", obj{"api_base": srv.URL}},
		{"seafile_webdav", obj{"url": srv.URL, "username": "ann"}},
		{"s3", obj{"endpoint": srv.URL, "region": "us-east-1", "bucket": "reports", "access_key_id": "AKID", "path_style": true}},
		{"postgresql", obj{"host": host, "port": port, "database": "app", "user": "reader", "sslmode": "disable"}},
		{"smtp", obj{"host": host, "port": port, "security": "none", "username": "ann", "from": "ann@example.com"}},
		{"imap", obj{"host": "localhost", "port": port, "security": "none", "username": "ann"}},
		{"http", obj{"base_url": "http://169.254.169.254/latest/meta-data/"}},
		{"postgresql", obj{"host": "10.0.0.1", "database": "app", "user": "reader"}},
	} {
		p.test(p.add(tc.kind, tc.config, secret), false, "private or local address")
	}
	discord := p.add("discord", obj{"api_base": srv.URL}, secret)
	p.bad("GET", "/api/resources/"+discord+"/discord/channels", "private or local address")
	dav := p.add("seafile_webdav", obj{"url": srv.URL, "username": "ann"}, secret)
	p.bad("GET", "/api/resources/"+dav+"/storage/folders", "private or local address")
	if hits.Load() != 0 || dialled.Load() != 0 {
		t.Fatalf("refused calls reached the servers: %d HTTP requests, %d connections", hits.Load(), dialled.Load())
	}
}

// TestConnectTenancy: another workspace's resource answers the test and
// browse routes exactly like an unknown one.
func TestConnectTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		f.App.Remember("tenancy-secret-2")
		// Resources pointing at this machine: the owner's own requests are
		// refused by the outbound guard, quickly and without DNS.
		mk := func(kind string, config obj) func(t *testing.T, c *apitest.Client) string {
			return func(t *testing.T, c *apitest.Client) string {
				return create(t, c, obj{"name": "R " + ids.New(), "kind": kind, "config": config, "secret": "tenancy-secret-2"}).ID
			}
		}
		apitest.CheckTenancy(t, f.Owner, f.Outsider, []apitest.TenancyCase{
			{Name: "test", Method: "POST", Path: "/api/resources/{id}/test", Create: mk("http", obj{"base_url": "http://127.0.0.1:9/"})},
			{Name: "discord channels", Method: "GET", Path: "/api/resources/{id}/discord/channels", Create: mk("discord", obj{"api_base": "http://127.0.0.1:9/api"})},
			{Name: "storage folders", Method: "GET", Path: "/api/resources/{id}/storage/folders?path=a", Create: mk("seafile_webdav", obj{"url": "http://127.0.0.1:9/dav", "username": "ann"})},
			{Name: "storage folders, bad path", Method: "GET", Path: "/api/resources/{id}/storage/folders?path=../x", Create: mk("seafile_webdav", obj{"url": "http://127.0.0.1:9/dav", "username": "ann"})},
		})
	})
}
