package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// counted is a test server that counts the requests that reached it.
func counted(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }

func private() Policy {
	p := DefaultPolicy()
	p.AllowPrivate = true
	p.Timeout = 5 * time.Second
	return p
}

func TestRefusesPrivateAndLocalAddresses(t *testing.T) {
	srv, hits := counted(t, ok)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p := DefaultPolicy()
	p.Timeout = 5 * time.Second
	c := New(p)

	for _, u := range []string{
		srv.URL,
		fmt.Sprintf("http://user:secret@127.0.0.1:%d/", port),
		fmt.Sprintf("http://localhost:%d/", port),
		fmt.Sprintf("http://0.0.0.0:%d/", port),
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port),
		fmt.Sprintf("http://[::1]:%d/", port),
		"http://10.1.2.3/",
		"http://172.16.0.1/",
		"http://192.168.1.1/",
		"http://100.64.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00::1]/",
		"https://[fe80::1]/",
	} {
		_, err := c.Do(t.Context(), Request{URL: u})
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%s: got %v, want ErrRefused", u, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "private or local address") || strings.Contains(msg, "secret") {
			t.Errorf("%s: message %q", u, msg)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d refused requests reached the server", n)
	}

	// The same server is reachable when private addresses are allowed, so
	// the refusals above were the policy's.
	if resp, err := New(private()).Do(t.Context(), Request{URL: srv.URL}); err != nil || string(resp.Body) != "ok" {
		t.Fatalf("allowed call: %v %v", resp, err)
	}
}

func TestIsLocal(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "127.9.9.9": true, "::1": true,
		"10.0.0.1": true, "172.16.0.1": true, "172.31.255.255": true, "192.168.0.1": true,
		"fc00::1": true, "fd12:3456::1": true,
		"169.254.169.254": true, "fe80::1%eth0": true,
		"0.0.0.0": true, "0.1.2.3": true, "::": true,
		"224.0.0.1": true, "239.255.255.250": true, "ff02::1": true, "255.255.255.255": true,
		"100.64.0.1": true, "100.127.255.255": true,
		"::ffff:10.0.0.1": true, "::ffff:169.254.169.254": true,
		"64:ff9b::a00:1": true, "64:ff9b::7f00:1": true,

		"8.8.8.8": false, "1.1.1.1": false, "172.32.0.1": false, "100.128.0.1": false,
		"2606:4700::1111": false, "::ffff:8.8.8.8": false, "64:ff9b::808:808": false,
	} {
		if got := isLocal(netip.MustParseAddr(addr)); got != want {
			t.Errorf("isLocal(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestOwnAddresses(t *testing.T) {
	c := New(DefaultPolicy(), "203.0.113.7:8443", "[2001:db8::1]", "localhost:9000", ":7070")
	ctx := t.Context()
	for addr, refused := range map[string]bool{
		"203.0.113.7:8443":          true,
		"[::ffff:203.0.113.7]:8443": true,
		"203.0.113.7:443":           false, // another port of that host
		"[2001:db8::1]:1":           true,  // no port given: every port
		"[2001:db8::2]:443":         false,
		"198.51.100.1:8443":         false,
	} {
		err := c.check(ctx, netip.MustParseAddrPort(addr))
		if errors.Is(err, ErrRefused) != refused {
			t.Errorf("%s: got %v, want refused %v", addr, err, refused)
		}
	}
	// Names are resolved and the listen address ":7070" stands for every
	// interface; both would be refused as loopback anyway, so ask isOwn.
	for addr, own := range map[string]bool{
		"127.0.0.1:9000": true, "127.0.0.1:9001": false,
		"127.0.0.1:7070": true, "127.0.0.1:7071": false,
	} {
		if got := c.isOwn(ctx, netip.MustParseAddrPort(addr)); got != own {
			t.Errorf("isOwn(%s) = %v, want %v", addr, got, own)
		}
	}

	// With private addresses allowed the own addresses are too.
	srv, _ := counted(t, ok)
	if _, err := New(private(), srv.Listener.Addr().String()).Do(ctx, Request{URL: srv.URL}); err != nil {
		t.Fatalf("own address with AllowPrivate: %v", err)
	}
}

func TestCalls(t *testing.T) {
	srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user, pass, _ := r.BasicAuth()
		w.Header().Add("x-reply", "first")
		w.Header().Add("x-reply", "second")
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		if status != 0 {
			w.WriteHeader(status)
		}
		fmt.Fprintf(w, "%s|%s|%s|%s|%s|%s:%s", r.Method, r.Header.Get("User-Agent"),
			r.Header.Get("X-Test"), r.Host, body, user, pass)
	})
	c := New(private())
	host := srv.Listener.Addr().String()

	for _, tc := range []struct {
		name   string
		req    Request
		status int
		body   string
	}{
		{"get with headers",
			Request{URL: srv.URL, Headers: map[string]string{"x-test": "yes"}},
			200, "GET|" + UserAgent + "|yes|" + host + "||:"},
		{"post with body, own user agent",
			Request{Method: "POST", URL: srv.URL + "?status=201", Headers: map[string]string{"User-Agent": "mine/2"}, Body: []byte(`{"a":1}`)},
			201, `POST|mine/2||` + host + `|{"a":1}|:`},
		{"lower-case method, error status passed through",
			Request{Method: "patch", URL: srv.URL + "?status=404", Body: []byte("x")},
			404, "PATCH|" + UserAgent + "||" + host + "|x|:"},
		{"basic auth from the URL, Host header",
			Request{URL: "http://ann:s3cret@" + host + "/", Headers: map[string]string{"Host": "example.test"}},
			200, "GET|" + UserAgent + "||example.test||ann:s3cret"},
	} {
		resp, err := c.Do(t.Context(), tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if resp.Status != tc.status || string(resp.Body) != tc.body {
			t.Errorf("%s: got %d %q, want %d %q", tc.name, resp.Status, resp.Body, tc.status, tc.body)
		}
		if got := resp.Headers["X-Reply"]; got != "first" {
			t.Errorf("%s: X-Reply = %q, want the first value under the canonical key", tc.name, got)
		}
	}

	resp, err := c.Do(t.Context(), Request{Method: "HEAD", URL: srv.URL})
	if err != nil || resp.Status != 200 || len(resp.Body) != 0 {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
}

func TestRedirectToRefusedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	var internalHits atomic.Int32
	internal := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		io.WriteString(w, "internal secrets")
	}))
	internal.Listener.Close()
	internal.Listener = ln
	internal.Start()
	t.Cleanup(internal.Close)
	front, frontHits := counted(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/meta-data", http.StatusFound)
	})

	// allowing lets exactly the given addresses through the real dial
	// check, standing in for public servers.
	allowing := func(allowed ...string) *Client {
		p := DefaultPolicy()
		p.Timeout = 5 * time.Second
		c := New(p)
		c.check = func(ctx context.Context, ap netip.AddrPort) error {
			for _, a := range allowed {
				if ap.Addr() == netip.MustParseAddr(a) {
					return nil
				}
			}
			return c.refuse(ctx, ap)
		}
		return c
	}

	_, err = allowing("127.0.0.1").Do(t.Context(), Request{URL: front.URL})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "127.0.0.2") {
		t.Fatalf("redirect to 127.0.0.2: got %v, want ErrRefused naming it", err)
	}
	if frontHits.Load() != 1 || internalHits.Load() != 0 {
		t.Fatalf("front hit %d times, internal %d times; want 1 and 0", frontHits.Load(), internalHits.Load())
	}

	// Let through, the redirect is followed: the refusal above was the
	// check's on the second hop.
	resp, err := allowing("127.0.0.1", "127.0.0.2").Do(t.Context(), Request{URL: front.URL})
	if err != nil || string(resp.Body) != "internal secrets" {
		t.Fatalf("allowed redirect: %v %v", resp, err)
	}
}

func TestRedirectLimit(t *testing.T) {
	// /hop/N redirects to /hop/N-1; /hop/0 answers.
	srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if n == 0 {
			io.WriteString(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
	p := private()
	p.MaxRedirects = 2
	c := New(p)

	resp, err := c.Do(t.Context(), Request{URL: srv.URL + "/hop/2"})
	if err != nil || string(resp.Body) != "arrived" {
		t.Fatalf("2 redirects: %v %v", resp, err)
	}
	_, err = c.Do(t.Context(), Request{URL: srv.URL + "/hop/3"})
	if !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("3 redirects: got %v, want ErrTooManyRedirects", err)
	}

	p.MaxRedirects = -1
	resp, err = New(p).Do(t.Context(), Request{URL: srv.URL + "/hop/1"})
	if err != nil || resp.Status != http.StatusFound || resp.Headers["Location"] != "/hop/0" {
		t.Fatalf("not following: %v %v", resp, err)
	}
}

func TestTooLarge(t *testing.T) {
	srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exact":
			w.Write(make([]byte, 1000))
		case "/declared":
			w.Header().Set("Content-Length", "1001")
			w.Write(make([]byte, 1001))
		case "/endless":
			chunk := make([]byte, 4096)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	})
	p := private()
	p.MaxResponseBytes = 1000
	c := New(p)

	resp, err := c.Do(t.Context(), Request{URL: srv.URL + "/exact"})
	if err != nil || len(resp.Body) != 1000 {
		t.Fatalf("body of exactly the limit: %v %v", resp, err)
	}
	for _, path := range []string{"/declared", "/endless"} {
		start := time.Now()
		_, err := c.Do(t.Context(), Request{URL: srv.URL + path})
		if !errors.Is(err, ErrTooLarge) || err.Error() != "outbound: response body is larger than 1000 bytes" {
			t.Fatalf("%s: got %v, want ErrTooLarge", path, err)
		}
		// An endless body ends the call at the limit, not at the timeout.
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: took %v", path, d)
		}
	}
}

func TestTimeout(t *testing.T) {
	srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	p := private()
	p.Timeout = 200 * time.Millisecond
	c := New(p)

	for _, path := range []string{"/slow-headers", "/slow-body"} {
		start := time.Now()
		_, err := c.Do(t.Context(), Request{URL: srv.URL + path})
		d := time.Since(start)
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "timed out after 200ms") {
			t.Fatalf("%s: got %v, want ErrTimeout", path, err)
		}
		if d < 200*time.Millisecond || d > 2*time.Second {
			t.Fatalf("%s: timed out after %v", path, d)
		}
	}

	// The caller's own cancellation is not a timeout.
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	p.Timeout = 5 * time.Second
	_, err := New(p).Do(ctx, Request{URL: srv.URL + "/slow-headers"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestBadRequests(t *testing.T) {
	srv, hits := counted(t, ok)
	c := New(private())
	for _, req := range []Request{
		{Method: "TRACE", URL: srv.URL},
		{Method: "CONNECT", URL: srv.URL},
		{Method: "G ET", URL: srv.URL},
		{URL: "ftp://" + srv.Listener.Addr().String() + "/"},
		{URL: "file:///etc/passwd"},
		{URL: "http:///path"},
		{URL: "http://[::1"},
		{URL: "not a url"},
		{URL: srv.URL, Headers: map[string]string{"X-A\r\nX-B": "1"}},
		{URL: srv.URL, Headers: map[string]string{"X A": "1"}},
		{URL: srv.URL, Headers: map[string]string{"": "1"}},
		{URL: srv.URL, Headers: map[string]string{"X-A": "1\r\nInjected: yes"}},
		{URL: srv.URL, Headers: map[string]string{"X-A": "1\nInjected: yes"}},
		{URL: srv.URL, Headers: map[string]string{"X-A": "a\x00b"}},
	} {
		_, err := c.Do(t.Context(), req)
		if !errors.Is(err, ErrBadRequest) {
			t.Errorf("%q %q %q: got %v, want ErrBadRequest", req.Method, req.URL, req.Headers, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d bad requests reached the server", n)
	}

	_, err := c.Do(t.Context(), Request{URL: "http://ann:s3cret@[::1"})
	if !errors.Is(err, ErrBadRequest) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a bad URL with a password: %v", err)
	}
}

func TestDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)

	p := DefaultPolicy()
	p.Timeout = 5 * time.Second
	c := New(p)
	for _, a := range []string{addr, "localhost:" + port, "[::ffff:127.0.0.1]:" + port, "169.254.169.254:80", "10.0.0.1:5432"} {
		conn, err := c.DialContext(t.Context(), "tcp", a)
		if conn != nil {
			conn.Close()
		}
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "private or local address") {
			t.Errorf("dial %s: got %v, want ErrRefused", a, err)
		}
	}
	if _, err := c.DialContext(t.Context(), "unix", "/run/postgresql/.s.PGSQL.5432"); !errors.Is(err, ErrBadRequest) {
		t.Errorf("a unix socket: got %v, want ErrBadRequest", err)
	}
	// The listener is reachable when private addresses are allowed, so the
	// refusals above were the policy's.
	conn, err := New(private()).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatalf("allowed dial: %v", err)
	}
	got, _ := io.ReadAll(conn)
	conn.Close()
	if string(got) != "hello\n" || accepted.Load() != 1 {
		t.Fatalf("read %q, %d connections accepted; want hello and 1", got, accepted.Load())
	}
}

func TestNoRedirectsAndPROPFIND(t *testing.T) {
	srv, hits := counted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "/there", http.StatusFound)
			return
		}
		io.WriteString(w, r.Method+" "+r.Header.Get("Depth"))
	})
	c := New(private())
	resp, err := c.Do(t.Context(), Request{URL: srv.URL + "/away", NoRedirects: true})
	if err != nil || resp.Status != http.StatusFound || resp.Headers["Location"] != "/there" || hits.Load() != 1 {
		t.Fatalf("NoRedirects: %v %v after %d requests", resp, err, hits.Load())
	}
	// Without it the same client follows.
	if resp, err := c.Do(t.Context(), Request{URL: srv.URL + "/away"}); err != nil || string(resp.Body) != "GET " {
		t.Fatalf("following: %v %v", resp, err)
	}
	resp, err = c.Do(t.Context(), Request{Method: "PROPFIND", URL: srv.URL, Headers: map[string]string{"Depth": "0"}})
	if err != nil || string(resp.Body) != "PROPFIND 0" {
		t.Fatalf("PROPFIND: %v %v", resp, err)
	}
}

// HTTPClient, for SDKs: the same dial check, no redirect followed, bodies
// bounded.
func TestHTTPClient(t *testing.T) {
	srv, hits := counted(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/exact":
			w.Write(make([]byte, 1000))
		case "/endless":
			chunk := make([]byte, 4096)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			io.WriteString(w, "ok")
		}
	})
	p := DefaultPolicy()
	p.Timeout = 5 * time.Second
	if _, err := New(p).HTTPClient(0).Get(srv.URL); !errors.Is(err, ErrRefused) || hits.Load() != 0 {
		t.Fatalf("a private address: %v (%d hits)", err, hits.Load())
	}
	c := New(private()).HTTPClient(1000)
	resp, err := c.Get(srv.URL + "/redirect")
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("a redirect is answered, not followed: %v %v", resp, err)
	}
	resp.Body.Close()
	for path, want := range map[string]error{"/exact": nil, "/endless": ErrTooLarge} {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, want) || want == nil && len(b) != 1000 {
			t.Fatalf("%s: %d bytes, %v, want %v", path, len(b), err, want)
		}
	}
}
