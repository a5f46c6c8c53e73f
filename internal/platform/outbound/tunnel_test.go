package outbound

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestTunnel: a CONNECT through the tunnel reaches a TLS server when the
// policy lets it, and is refused (403) when the server is on a private
// address the policy keeps out; without the tunnel's credentials, or with
// another method than CONNECT, nothing is dialled.
func TestTunnel(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "through") }))
	t.Cleanup(srv.Close)
	get := func(proxy string) (string, error) {
		u, _ := url.Parse(proxy)
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		r, err := c.Get(srv.URL)
		if err != nil {
			return "", err
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b), nil
	}

	open := NewTunnel(New(private()))
	t.Cleanup(func() { open.Close() })
	proxy, err := open.URL()
	if err != nil {
		t.Fatal(err)
	}
	if body, err := get(proxy); err != nil || body != "through" {
		t.Fatalf("through an allowing tunnel: %q, %v", body, err)
	}
	u, _ := url.Parse(proxy)
	u.User = url.UserPassword("slipway", "wrong")
	if _, err := get(u.String()); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Fatalf("with wrong credentials: %v", err)
	}
	u.User = nil
	r, err := http.Post(u.String()+"/x", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusProxyAuthRequired {
		t.Fatalf("a plain request without credentials: %d", r.StatusCode)
	}

	closed := NewTunnel(New(DefaultPolicy()))
	t.Cleanup(func() { closed.Close() })
	proxy, err = closed.URL()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(proxy); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("a loopback server through the default policy: %v", err)
	}
}
