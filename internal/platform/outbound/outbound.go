// Package outbound is the client for addresses that users typed in: the
// workflow nodes http_request and notify_webhook call through it, and so do
// resources (their nodes, connection tests and browsing), over HTTP or, for
// PostgreSQL, SMTP and IMAP, over DialContext.
//
// Such a URL may point back into the network the server runs in (loopback,
// private ranges, the cloud metadata service, the server itself), so unless
// the policy allows private addresses every connection is checked at dial
// time, on the IP actually connected to. A check on the URL alone would miss
// DNS answers that change between check and dial and redirects to internal
// hosts; the dial check sees every hop.
package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The kinds of failure a caller can tell apart with errors.Is.
var (
	// ErrBadRequest: the URL, method or a header is not acceptable.
	ErrBadRequest = errors.New("outbound: bad request")
	// ErrRefused: the request would connect to a private or local address.
	ErrRefused = errors.New("outbound: refused address")
	// ErrTooLarge: the response body is larger than MaxResponseBytes.
	ErrTooLarge = errors.New("outbound: response too large")
	// ErrTimeout: the request, body read included, took longer than Timeout.
	ErrTimeout = errors.New("outbound: timed out")
	// ErrTooManyRedirects: the server redirected more than MaxRedirects times.
	ErrTooManyRedirects = errors.New("outbound: too many redirects")
)

// UserAgent is sent unless the request sets its own.
const UserAgent = "Slipway-Workflows/1"

// maxHeaderBytes bounds response headers; net/http's default of 10 MB is far
// more than any API needs and would be read into memory.
const maxHeaderBytes = 64 << 10

var methods = []string{
	http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodHead, http.MethodOptions,
	"PROPFIND", // WebDAV: listing a share's folders
}

// Policy bounds what a Client may do. Zero fields take DefaultPolicy's values,
// so the zero Policy is the safe one.
type Policy struct {
	// AllowPrivate lets calls reach loopback, private, link-local and the
	// server's own addresses: for self-hosted setups whose services live on
	// the local network.
	AllowPrivate bool
	// Timeout bounds the whole request, redirects and body read included.
	Timeout time.Duration
	// MaxResponseBytes bounds the response body; a larger one is an error.
	MaxResponseBytes int64
	// MaxRedirects is how many redirects are followed; a negative value
	// follows none and returns the redirect response itself.
	MaxRedirects int
}

// DefaultPolicy is the policy for untrusted URLs.
func DefaultPolicy() Policy {
	return Policy{Timeout: 30 * time.Second, MaxResponseBytes: 1 << 20, MaxRedirects: 5}
}

// Request is one call. An empty Method is GET.
type Request struct {
	Method  string
	URL     string
	Headers map[string]string
	Body    []byte
	// NoRedirects returns a redirect response itself instead of following
	// it, whatever the policy: a request that carries a secret in a header
	// should not carry it on to wherever the server points.
	NoRedirects bool
}

// Response is a complete response of any status; only failures to get one
// are errors. Headers holds the first value of each, under canonical keys.
type Response struct {
	Status  int
	Headers map[string]string
	Body    []byte
}

// Client makes outbound calls under one Policy. It is safe for concurrent
// use and keeps connections alive, so share one.
type Client struct {
	policy Policy
	http   *http.Client
	dialer *net.Dialer
	// own are the server's own addresses; a port of 0 stands for every port.
	ownIPs   []netip.AddrPort
	ownNames []hostPort
	// check decides whether a connection to addr may be made; nil allows
	// all. Tests replace it to let exactly their server through.
	check func(ctx context.Context, addr netip.AddrPort) error
}

type hostPort struct {
	host string
	port uint16
}

// New returns a Client for p. own lists the server's own addresses, as
// host:port or host (every port): its listen address and its public URL's
// host. Unless p.AllowPrivate, connections to them are refused, since a
// workflow calling its own server could act with the server's network
// position. An own host that is empty or unspecified (":8080") stands for
// every address of this machine's interfaces; a name is resolved at each
// dial so that it matches where the name points now.
func New(p Policy, own ...string) *Client {
	d := DefaultPolicy()
	if p.Timeout <= 0 {
		p.Timeout = d.Timeout
	}
	if p.MaxResponseBytes <= 0 {
		p.MaxResponseBytes = d.MaxResponseBytes
	}
	if p.MaxRedirects == 0 {
		p.MaxRedirects = d.MaxRedirects
	}
	c := &Client{policy: p}
	if !p.AllowPrivate {
		c.ownIPs, c.ownNames = parseOwn(own)
		c.check = c.refuse
	}
	dialer := &net.Dialer{
		Timeout:   p.Timeout,
		KeepAlive: 30 * time.Second,
		ControlContext: func(ctx context.Context, _, address string, _ syscall.RawConn) error {
			if c.check == nil {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fail(ErrRefused, "refusing to call %s: not an IP address", address)
			}
			return c.check(ctx, ap)
		},
	}
	c.dialer = dialer
	c.http = &http.Client{
		// No Proxy: the dial check would see the proxy, not the target.
		Transport: &http.Transport{
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           100,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			ExpectContinueTimeout:  time.Second,
			MaxResponseHeaderBytes: maxHeaderBytes,
		},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if p.MaxRedirects < 0 || r.Context().Value(noRedirects{}) != nil {
				return http.ErrUseLastResponse
			}
			if len(via) > p.MaxRedirects {
				return fail(ErrTooManyRedirects, "stopped after %d redirects", p.MaxRedirects)
			}
			return nil
		},
	}
	return c
}

// Do makes the call and reads the whole response. Error messages name the
// scheme and host only: user info, paths and queries may hold secrets.
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	tctx, cancel := context.WithTimeout(ctx, c.policy.Timeout)
	defer cancel()
	if req.NoRedirects {
		tctx = context.WithValue(tctx, noRedirects{}, true)
	}
	hreq, err := newRequest(tctx, req)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, c.explain(ctx, tctx, hreq, err)
	}
	defer resp.Body.Close()

	limit := c.policy.MaxResponseBytes
	if resp.ContentLength > limit {
		return nil, fail(ErrTooLarge, "response body is larger than %d bytes", limit)
	}
	// One byte past the limit tells a body of exactly the limit from a larger one.
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, c.explain(ctx, tctx, hreq, err)
	}
	if int64(len(body)) > limit {
		return nil, fail(ErrTooLarge, "response body is larger than %d bytes", limit)
	}
	headers := make(map[string]string, len(resp.Header))
	for k, v := range resp.Header {
		if len(v) > 0 {
			headers[k] = v[0]
		}
	}
	return &Response{Status: resp.StatusCode, Headers: headers, Body: body}, nil
}

// noRedirects marks the context of a request made with NoRedirects.
type noRedirects struct{}

// DialContext opens a TCP connection under the same check as the HTTP
// calls, for the protocols that are not HTTP (PostgreSQL, SMTP, IMAP):
// unless the policy allows private addresses, every address a name
// resolves to is checked as it is connected to. The dial is bounded by the
// policy's Timeout; the connection itself is not: the caller sets its
// deadlines. Only tcp, tcp4 and tcp6 are dialled.
func (c *Client) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fail(ErrBadRequest, "network %q is not tcp", network)
	}
	conn, err := c.dialer.DialContext(ctx, network, address)
	if err != nil {
		var f *failure
		if errors.As(err, &f) {
			return nil, f // refused, said without net.OpError's noise
		}
		return nil, err
	}
	return conn, nil
}

func newRequest(ctx context.Context, r Request) (*http.Request, error) {
	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodGet
	}
	if !slices.Contains(methods, method) {
		return nil, fail(ErrBadRequest, "method %q is not one of %s", r.Method, strings.Join(methods, ", "))
	}
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body) // lets 307/308 redirects resend it
	}
	hreq, err := http.NewRequestWithContext(ctx, method, r.URL, body)
	if err != nil {
		// url.Error would quote the whole URL, user info included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fail(ErrBadRequest, "bad URL: %v", err)
	}
	if s := hreq.URL.Scheme; s != "http" && s != "https" {
		return nil, fail(ErrBadRequest, "URL scheme %q is not http or https", s)
	}
	if hreq.URL.Host == "" {
		return nil, fail(ErrBadRequest, "URL has no host")
	}
	for k, v := range r.Headers {
		if k == "" || strings.ContainsFunc(k, notTokenChar) {
			return nil, fail(ErrBadRequest, "header name %q is not a valid token", k)
		}
		// A CR or LF would let a user smuggle headers or a second request.
		if strings.ContainsFunc(v, isControl) {
			return nil, fail(ErrBadRequest, "header %s has a control character (CR, LF, NUL…) in its value", k)
		}
		if http.CanonicalHeaderKey(k) == "Host" {
			hreq.Host = v // net/http ignores a Host in Header
			continue
		}
		hreq.Header.Set(k, v)
	}
	if hreq.Header.Get("User-Agent") == "" {
		hreq.Header.Set("User-Agent", UserAgent)
	}
	return hreq, nil
}

// explain turns a failed call into an error of this package's kinds.
func (c *Client) explain(ctx, tctx context.Context, r *http.Request, err error) error {
	var f *failure
	if errors.As(err, &f) {
		return f // refused or redirected too often, said without url.Error's noise
	}
	site := r.URL.Scheme + "://" + r.URL.Host
	if ctx.Err() != nil {
		return fmt.Errorf("outbound: %s %s: %w", r.Method, site, ctx.Err())
	}
	if tctx.Err() != nil {
		return fail(ErrTimeout, "%s %s timed out after %s", r.Method, site, c.policy.Timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("outbound: %s %s: %w", r.Method, site, err)
}

// refuse is the check of a Client that does not allow private addresses.
func (c *Client) refuse(ctx context.Context, ap netip.AddrPort) error {
	if isLocal(ap.Addr()) || c.isOwn(ctx, ap) {
		return fail(ErrRefused, "refusing to call %s: private or local address", ap)
	}
	return nil
}

// reserved are ranges netip has no predicate for that must not be reached.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"; 0.0.0.0 reaches localhost
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT, often internal
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking, used internally
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved and broadcast
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
}

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4 address
// in their last four bytes, which is what must be checked.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

func isLocal(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsMulticast() || ip.IsUnspecified() ||
		slices.ContainsFunc(reserved, func(p netip.Prefix) bool { return p.Contains(ip) })
}

func (c *Client) isOwn(ctx context.Context, ap netip.AddrPort) bool {
	ip := ap.Addr().WithZone("").Unmap()
	portMatches := func(p uint16) bool { return p == 0 || p == ap.Port() }
	for _, o := range c.ownIPs {
		if o.Addr() == ip && portMatches(o.Port()) {
			return true
		}
	}
	for _, o := range c.ownNames {
		if !portMatches(o.port) {
			continue
		}
		// A name that does not resolve now is not where this dial goes.
		addrs, _ := net.DefaultResolver.LookupNetIP(ctx, "ip", o.host)
		for _, a := range addrs {
			if a.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

func parseOwn(own []string) (ips []netip.AddrPort, names []hostPort) {
	for _, o := range own {
		host, portText := o, ""
		if h, p, err := net.SplitHostPort(o); err == nil {
			host, portText = h, p
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		// A port that does not parse stands for every port: refusing more
		// is the safe side.
		port, _ := strconv.ParseUint(portText, 10, 16)
		ip, err := netip.ParseAddr(host)
		switch {
		case host == "" || err == nil && ip.IsUnspecified():
			addrs, _ := net.InterfaceAddrs()
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					if ip, ok := netip.AddrFromSlice(n.IP); ok {
						ips = append(ips, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
					}
				}
			}
		case err == nil:
			ips = append(ips, netip.AddrPortFrom(ip.WithZone("").Unmap(), uint16(port)))
		default:
			names = append(names, hostPort{strings.ToLower(host), uint16(port)})
		}
	}
	return ips, names
}

// failure is an error of one of the package's kinds with its own message.
type failure struct {
	kind error
	msg  string
}

func (f *failure) Error() string { return f.msg }
func (f *failure) Unwrap() error { return f.kind }

func fail(kind error, format string, args ...any) error {
	return &failure{kind, "outbound: " + fmt.Sprintf(format, args...)}
}

func notTokenChar(r rune) bool {
	return r > '~' || !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
		strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

func isControl(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }

// HTTPClient is a net/http client under the same checks, for API clients
// that want one (a forge's SDK): every dial checked, no redirect followed
// (a token in a header must not travel on), the policy's timeout per
// request, and each response body cut off with ErrTooLarge past the
// policy's MaxResponseBytes (maxBody, when positive, instead).
func (c *Client) HTTPClient(maxBody int64) *http.Client {
	if maxBody <= 0 {
		maxBody = c.policy.MaxResponseBytes
	}
	return &http.Client{
		Transport:     &bounded{next: c.http.Transport, limit: maxBody},
		Timeout:       c.policy.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// bounded bounds the bodies of the responses it passes on.
type bounded struct {
	next  http.RoundTripper
	limit int64
}

func (b *bounded) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err != nil {
		var f *failure
		if errors.As(err, &f) {
			return nil, f
		}
		return nil, err
	}
	if resp.ContentLength > b.limit {
		resp.Body.Close()
		return nil, fail(ErrTooLarge, "response body is larger than %d bytes", b.limit)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: b.limit}
	return resp, nil
}

// limitedBody reads at most left bytes, then fails with ErrTooLarge.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, fail(ErrTooLarge, "response body is too large")
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.ReadCloser.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, fail(ErrTooLarge, "response body is too large")
	}
	return n, err
}
