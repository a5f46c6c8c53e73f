package resources

// The connection test and the browse endpoints (a Discord bot's channels, a
// WebDAV share's folders). Each reads the resource's secret from the vault
// and talks to the far end through the SSRF-guarded outbound client: HTTP
// through Client.Do (never following a redirect, which would carry the
// secret on), PostgreSQL, SMTP and IMAP over Client.DialContext. Every
// message that leaves here, an answer's or an error's, is passed through
// clean: the secret redacted, URLs cut to scheme and host.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/outbound"
	"slipway/internal/platform/redact"
)

const (
	// testTimeout bounds one connection test, every step included.
	testTimeout = 15 * time.Second
	// browseTimeout bounds one browse request (a bot's guilds and each
	// guild's channels).
	browseTimeout = 30 * time.Second
	// maxWireBytes bounds what the far end of a TCP protocol (PostgreSQL,
	// SMTP, IMAP) may send during one test.
	maxWireBytes = 1 << 20
	// maxMessageRunes bounds a test's message.
	maxMessageRunes = 500
)

// target is an opened resource: its row, its secret and what to redact.
type target struct {
	out    *outbound.Client
	res    *Resource
	secret string
	red    *redact.Redactor
	short  []string // secrets too short for the redactor, replaced all the same
}

func (s *Service) target(c *Connection) *target {
	t := &target{out: s.Outbound, res: c.Resource, secret: c.Secret}
	t.hide(c.Secret)
	return t
}

// hide adds a secret (and its URL-escaped forms) to what messages must
// not hold.
func (t *target) hide(secrets ...string) {
	var all []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, v := range []string{s, url.PathEscape(s), url.QueryEscape(s)} {
			if len(v) < 6 {
				t.short = append(t.short, v)
				continue
			}
			all = append(all, v)
		}
	}
	t.red = t.red.With(all...)
}

// urlText matches a URL in a message: the scheme, user info and host are
// captured so that the user info, path, query and fragment can go.
var urlText = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*)://(?:[^\s/?#@]*@)?([^\s/?#"'<>` + "`" + `]*)[^\s"'<>` + "`" + `]*`)

// clean makes a message safe to answer: no secret, no URL beyond its
// scheme and host, no control characters, bounded.
func (t *target) clean(msg string) string {
	msg = t.red.Text(msg)
	for _, s := range t.short {
		msg = strings.ReplaceAll(msg, s, redact.Redacted)
	}
	msg = urlText.ReplaceAllString(msg, "$1://$2")
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, msg)
	msg = strings.Join(strings.Fields(msg), " ")
	if utf8.RuneCountInString(msg) > maxMessageRunes {
		msg = string([]rune(msg)[:maxMessageRunes-1]) + "…"
	}
	return msg
}

func (t *target) ok(format string, args ...any) (*ResourceTest, error) {
	return &ResourceTest{OK: true, Message: t.clean(fmt.Sprintf(format, args...))}, nil
}

func (t *target) failed(format string, args ...any) (*ResourceTest, error) {
	return &ResourceTest{OK: false, Message: t.clean(fmt.Sprintf(format, args...))}, nil
}

// bad is a 400 with a cleaned message.
func (t *target) bad(format string, args ...any) error {
	return apperr.BadRequest("%s", t.clean(fmt.Sprintf(format, args...)))
}

// needSecret refuses a resource of a kind that cannot work without one.
func (t *target) needSecret() error {
	if t.secret == "" {
		return t.bad("this %s resource has no %s stored: set its secret first", t.res.Kind, KindOf(t.res.Kind).Secret)
	}
	return nil
}

// configOf decodes a resource's stored (checked) config.
func configOf[T any](r *Resource) (T, error) {
	var out T
	if err := json.Unmarshal(r.Config, &out); err != nil {
		return out, apperr.BadRequest("the stored %s config does not decode: %v", r.Kind, err)
	}
	return out, nil
}

// Test tries a resource's connection with its stored secret: 400 for a
// config that cannot work, else ok with what was reached, or not ok with
// why not.
func (s *Service) Test(ctx context.Context, ws *actor.Workspace, id string) (*ResourceTest, error) {
	c, err := s.Open(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	t := s.target(c)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	res, err := t.test(ctx)
	if err != nil {
		if e, ok := apperr.As(err); ok && e.Code == apperr.CodeBadRequest {
			return nil, err
		}
		// Anything else reached here is a failure to connect.
		return t.failed("%s", describe(err))
	}
	return res, nil
}

func (t *target) test(ctx context.Context) (*ResourceTest, error) {
	switch t.res.Kind {
	case "postgresql":
		return t.testPostgres(ctx)
	case "http", "api_key":
		return t.testHTTP(ctx)
	case "openai_compatible":
		return t.testOpenAI(ctx)
	case "discord":
		return t.testDiscord(ctx)
	case "telegram":
		return t.testTelegram(ctx)
	case "seafile_webdav":
		return t.testWebDAV(ctx)
	case "smtp":
		return t.testSMTP(ctx)
	case "imap":
		return t.testIMAP(ctx)
	case "s3":
		return t.testS3(ctx)
	}
	return nil, t.bad("resources of kind %s cannot be tested", t.res.Kind)
}

// call makes one HTTP request to the far end, not following redirects.
// A request outbound refuses to make (a header with a line break, a bad
// URL) is a 400; a failure to get an answer is returned as it is.
func (t *target) call(ctx context.Context, method, rawURL string, headers map[string]string, body []byte) (*outbound.Response, error) {
	resp, err := t.out.Do(ctx, outbound.Request{Method: method, URL: rawURL, Headers: headers, Body: body, NoRedirects: true})
	if errors.Is(err, outbound.ErrBadRequest) {
		return nil, t.bad("%s", strings.TrimPrefix(err.Error(), "outbound: "))
	}
	return resp, err
}

// unreachable says why a call got no answer.
func (t *target) unreachable(site string, err error) (*ResourceTest, error) {
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeBadRequest {
		return nil, err
	}
	return t.failed("could not reach %s: %s", site, describe(err))
}

// describe says what went wrong in a connection's terms, without the
// resolver's address a DNS error names.
func describe(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return fmt.Sprintf("the name %s does not resolve", dns.Name)
	case errors.As(err, &dns):
		return fmt.Sprintf("looking up %s failed", dns.Name)
	case errors.Is(err, outbound.ErrRefused), errors.Is(err, outbound.ErrTimeout), errors.Is(err, outbound.ErrTooLarge):
		if msg, ok := guardMessage(err); ok {
			return msg
		}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("timed out (a test may take %s)", testTimeout)
	case errors.Is(err, errTooChatty):
		return err.Error()
	}
	return strings.TrimPrefix(err.Error(), "outbound: ")
}

// guardMessage finds the outbound guard's own message under a driver's
// wrapping.
func guardMessage(err error) (string, bool) {
	if msg, ok := strings.CutPrefix(err.Error(), "outbound: "); ok {
		return msg, true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return guardMessage(e)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if msg, ok := guardMessage(e); ok {
				return msg, true
			}
		}
	}
	return "", false
}

// site is a URL's scheme and host, as messages name it.
func site(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "the URL"
	}
	return u.Host
}

// joinURL appends a path to a base URL's path.
func joinURL(base, p string) string {
	return strings.TrimRight(base, "/") + p
}

// httpAuth builds the headers of an http or api_key resource's auth.
func (t *target) httpAuth() (baseURL string, headers map[string]string, err error) {
	var auth, user, header string
	switch t.res.Kind {
	case "http":
		c, err := configOf[HTTPConfig](t.res)
		if err != nil {
			return "", nil, err
		}
		baseURL, auth, user, header = c.BaseURL, c.Auth, c.Username, c.HeaderName
		if auth == "" {
			auth = "none"
			if t.secret != "" {
				auth = "bearer"
			}
		}
	default: // api_key
		c, err := configOf[APIKeyConfig](t.res)
		if err != nil {
			return "", nil, err
		}
		baseURL, auth, user, header = c.BaseURL, c.Auth, c.Username, c.HeaderName
		if auth == "" {
			auth = "header"
		}
		if auth == "header" && header == "" {
			header = "X-API-Key"
		}
	}
	if auth != "none" {
		if err := t.needSecret(); err != nil {
			return "", nil, t.bad("auth %s needs a secret, and this %s resource has none stored: set its secret", auth, t.res.Kind)
		}
	}
	headers = map[string]string{}
	switch auth {
	case "bearer":
		headers["Authorization"] = "Bearer " + t.secret
	case "basic":
		if user == "" {
			return "", nil, t.bad("auth basic needs config.username")
		}
		if strings.Contains(user, ":") {
			return "", nil, t.bad("config.username must not contain a colon (basic auth cannot carry one)")
		}
		pair := base64.StdEncoding.EncodeToString([]byte(user + ":" + t.secret))
		t.hide(pair)
		headers["Authorization"] = "Basic " + pair
	case "header":
		if header == "" {
			return "", nil, t.bad("auth header needs config.header_name, the header that carries the secret")
		}
		headers[header] = t.secret
	}
	return baseURL, headers, nil
}

// testHTTP: GET the base URL with the auth; ok unless there is no
// answer, the credentials are refused (401, 403) or the server fails (5xx).
func (t *target) testHTTP(ctx context.Context) (*ResourceTest, error) {
	base, headers, err := t.httpAuth()
	if err != nil {
		return nil, err
	}
	resp, err := t.call(ctx, "GET", base, headers, nil)
	if err != nil {
		return t.unreachable(site(base), err)
	}
	switch st := resp.Status; {
	case st == 401 || st == 403:
		return t.failed("HTTP %d from %s: the credentials were refused", st, site(base))
	case st >= 500:
		return t.failed("HTTP %d from %s: the server failed", st, site(base))
	case st >= 300 && st < 400:
		to := "elsewhere on the site"
		if u, err := url.Parse(resp.Headers["Location"]); err == nil && u.Host != "" {
			to = "to " + u.Host
		}
		return t.ok("HTTP %d from %s (a redirect %s, not followed)", st, site(base), to)
	default:
		return t.ok("HTTP %d from %s", st, site(base))
	}
}

// testOpenAI: GET {base_url}/models with the key; ok on 2xx.
func (t *target) testOpenAI(ctx context.Context) (*ResourceTest, error) {
	c, err := configOf[OpenAICompatibleConfig](t.res)
	if err != nil {
		return nil, err
	}
	// No key is fine: a local model server may need none (the nodes
	// send none then, too).
	headers := map[string]string{"Accept": "application/json"}
	if t.secret != "" {
		headers["Authorization"] = "Bearer " + t.secret
	}
	u := joinURL(c.BaseURL, "/models")
	resp, err := t.call(ctx, "GET", u, headers, nil)
	if err != nil {
		return t.unreachable(site(u), err)
	}
	switch st := resp.Status; {
	case (st == 401 || st == 403) && t.secret == "":
		return t.failed("HTTP %d from %s: the server wants an API key, and none is stored", st, site(u))
	case st == 401 || st == 403:
		return t.failed("HTTP %d from %s: the API key was refused", st, site(u))
	case st < 200 || st > 299:
		return t.failed("HTTP %d from %s for the model list", st, site(u))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(resp.Body, &list) != nil {
		return t.ok("HTTP %d from %s (the model list is not the usual JSON)", resp.Status, site(u))
	}
	msg := fmt.Sprintf("HTTP %d from %s: %d models", resp.Status, site(u), len(list.Data))
	if c.Model != "" {
		listed := false
		for _, m := range list.Data {
			listed = listed || m.ID == c.Model
		}
		if listed {
			msg += fmt.Sprintf(", %s among them", c.Model)
		} else {
			msg += fmt.Sprintf(", %s not among them", c.Model)
		}
	}
	return t.ok("%s", msg)
}

const defaultDiscordAPI = "https://discord.com/api/v10"

func (t *target) discordBase() (string, error) {
	c, err := configOf[DiscordConfig](t.res)
	if err != nil {
		return "", err
	}
	if err := t.needSecret(); err != nil {
		return "", err
	}
	if c.APIBase == "" {
		return defaultDiscordAPI, nil
	}
	return c.APIBase, nil
}

func (t *target) discordHeaders() map[string]string {
	return map[string]string{"Authorization": "Bot " + t.secret, "Accept": "application/json"}
}

// testDiscord: GET /users/@me as the bot.
func (t *target) testDiscord(ctx context.Context) (*ResourceTest, error) {
	base, err := t.discordBase()
	if err != nil {
		return nil, err
	}
	u := joinURL(base, "/users/@me")
	resp, err := t.call(ctx, "GET", u, t.discordHeaders(), nil)
	if err != nil {
		return t.unreachable(site(u), err)
	}
	switch st := resp.Status; {
	case st == 401 || st == 403:
		return t.failed("HTTP %d from %s: Discord refused the bot token", st, site(u))
	case st != 200:
		return t.failed("HTTP %d from %s", st, site(u))
	}
	var me struct {
		Username      string `json:"username"`
		Discriminator string `json:"discriminator"`
		Bot           bool   `json:"bot"`
	}
	if json.Unmarshal(resp.Body, &me) != nil || me.Username == "" {
		return t.failed("HTTP 200 from %s, but not a Discord user", site(u))
	}
	name := me.Username
	if me.Discriminator != "" && me.Discriminator != "0" {
		name += "#" + me.Discriminator
	}
	if !me.Bot {
		return t.ok("signed in to Discord as @%s (a user account, not a bot)", name)
	}
	return t.ok("signed in to Discord as bot @%s", name)
}

const defaultTelegramAPI = "https://api.telegram.org"

// testTelegram: GET /bot<token>/getMe.
func (t *target) testTelegram(ctx context.Context) (*ResourceTest, error) {
	c, err := configOf[TelegramConfig](t.res)
	if err != nil {
		return nil, err
	}
	if err := t.needSecret(); err != nil {
		return nil, err
	}
	base := c.APIBase
	if base == "" {
		base = defaultTelegramAPI
	}
	u := joinURL(base, "/bot"+url.PathEscape(t.secret)+"/getMe")
	resp, err := t.call(ctx, "GET", u, map[string]string{"Accept": "application/json"}, nil)
	if err != nil {
		return t.unreachable(site(u), err)
	}
	switch st := resp.Status; {
	case st == 401 || st == 403 || st == 404:
		return t.failed("HTTP %d from %s: Telegram refused the bot token", st, site(u))
	case st != 200:
		return t.failed("HTTP %d from %s", st, site(u))
	}
	var me struct {
		OK     bool `json:"ok"`
		Result struct {
			Username  string `json:"username"`
			FirstName string `json:"first_name"`
			IsBot     bool   `json:"is_bot"`
		} `json:"result"`
	}
	if json.Unmarshal(resp.Body, &me) != nil || !me.OK || me.Result.Username == "" {
		return t.failed("HTTP 200 from %s, but not a Telegram bot", site(u))
	}
	return t.ok("signed in to Telegram as bot @%s", me.Result.Username)
}

// davPropfind is the body of the PROPFINDs: only the resource type.
const davPropfind = `<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/></D:prop></D:propfind>`

func (t *target) webdav() (SeafileWebDAVConfig, map[string]string, error) {
	c, err := configOf[SeafileWebDAVConfig](t.res)
	if err != nil {
		return c, nil, err
	}
	if err := t.needSecret(); err != nil {
		return c, nil, err
	}
	if strings.Contains(c.Username, ":") {
		return c, nil, t.bad("config.username must not contain a colon (basic auth cannot carry one)")
	}
	pair := base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + t.secret))
	t.hide(pair)
	return c, map[string]string{"Authorization": "Basic " + pair, "Content-Type": "application/xml; charset=utf-8"}, nil
}

// testWebDAV: PROPFIND the share's URL with Depth 0; ok on 207.
func (t *target) testWebDAV(ctx context.Context) (*ResourceTest, error) {
	c, headers, err := t.webdav()
	if err != nil {
		return nil, err
	}
	headers["Depth"] = "0"
	resp, err := t.call(ctx, "PROPFIND", c.URL, headers, []byte(davPropfind))
	if err != nil {
		return t.unreachable(site(c.URL), err)
	}
	switch st := resp.Status; st {
	case 207:
		return t.ok("signed in to the WebDAV share at %s as %s (HTTP 207)", site(c.URL), c.Username)
	case 401, 403:
		return t.failed("HTTP %d from %s: the user name or password was refused", st, site(c.URL))
	case 404:
		return t.failed("HTTP 404 from %s: no WebDAV folder at the URL", site(c.URL))
	case 405, 501:
		return t.failed("HTTP %d from %s: the URL does not speak WebDAV", st, site(c.URL))
	default:
		return t.failed("HTTP %d from %s, not 207 Multi-Status", st, site(c.URL))
	}
}

// errTooChatty: the far end sent more than maxWireBytes.
var errTooChatty = fmt.Errorf("the server sent more than %d bytes", maxWireBytes)

// boundedConn caps what the far end may send over a connection.
type boundedConn struct {
	net.Conn
	left atomic.Int64
}

func (c *boundedConn) Read(p []byte) (int, error) {
	left := c.left.Load()
	if left <= 0 {
		return 0, errTooChatty
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.Conn.Read(p)
	c.left.Add(-int64(n))
	return n, err
}

// dial opens a TCP connection through the SSRF guard, bounded in what it
// reads and, by the context's deadline, in time.
func (t *target) dial(ctx context.Context, network, address string) (net.Conn, error) {
	conn, err := t.out.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	bc := &boundedConn{Conn: conn}
	bc.left.Store(maxWireBytes)
	return bc, nil
}

// checkHost refuses a host that is no host name or address (a socket
// path, a list, a port of its own).
func (t *target) checkHost(host string) error {
	if host == "" || strings.ContainsAny(host, "/\\,: \t@?#") && !isIPv6(host) {
		return t.bad("config.host must be a host name or address (without a port, a path or a list)")
	}
	return nil
}

func isIPv6(s string) bool {
	ip := net.ParseIP(strings.Trim(s, "[]"))
	return ip != nil && strings.Contains(s, ":")
}
