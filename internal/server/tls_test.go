package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"slipway/internal/config"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/tlstest"
)

// tlsFixture writes a CA, a server pair and returns the config paths.
func tlsFixture(t *testing.T, ca *tlstest.CA, withClientCA bool) config.TLS {
	dir := t.TempDir()
	c, k := ca.Issue(t, "slipway-hub", true)
	cfg := config.TLS{CertPath: tlstest.WriteFile(t, dir, "cert.pem", c), KeyPath: tlstest.WriteFile(t, dir, "key.pem", k)}
	if withClientCA {
		cfg.ClientCAPath = tlstest.WriteFile(t, dir, "ca.PEM", ca.PEM)
	}
	return cfg
}

// mountPeerRoute reports what the server learned of the client certificate.
func mountPeerRoute(ts *testServer) {
	ts.Mux().HandleFunc("GET /test/peer", func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			fmt.Fprint(w, "plain")
			return
		}
		if len(r.TLS.VerifiedChains) > 0 {
			fmt.Fprint(w, "verified:"+r.TLS.VerifiedChains[0][0].Subject.CommonName)
			return
		}
		fmt.Fprint(w, "anonymous")
	})
}

func httpsClient(ca *tlstest.CA, clientCert *tls.Certificate, requested *bool) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	cfg := &tls.Config{RootCAs: roots}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if requested != nil {
			*requested = true
		}
		if clientCert == nil {
			return &tls.Certificate{}, nil
		}
		return clientCert, nil
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), nil
}

func TestHTTPS(t *testing.T) {
	ca := tlstest.NewCA(t, "test-ca")
	tlsCfg, err := TLSConfig(tlsFixture(t, ca, false))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, dbtest.EmptyTarget(t, db.SQLite), nil, tlsCfg)
	mountPeerRoute(ts)

	requested := false
	body, err := get(t, httpsClient(ca, nil, &requested), ts.URL+"/test/peer")
	if err != nil || body != "anonymous" {
		t.Fatalf("HTTPS request = %q, %v", body, err)
	}
	if requested {
		t.Fatal("without a client CA the server must not request client certificates")
	}
	if body, err := get(t, httpsClient(ca, nil, nil), ts.URL+"/readyz"); err != nil || !strings.Contains(body, "ok") {
		t.Fatalf("readyz over HTTPS = %q, %v", body, err)
	}
	// A client that does not trust the certificate fails the handshake.
	if _, err := get(t, &http.Client{Timeout: 5 * time.Second}, ts.URL+"/readyz"); err == nil {
		t.Fatal("an untrusted server certificate was accepted")
	}
}

func TestMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "runner-ca")
	tlsCfg, err := TLSConfig(tlsFixture(t, ca, true))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, dbtest.EmptyTarget(t, db.SQLite), nil, tlsCfg)
	mountPeerRoute(ts)

	cp, kp := ca.Issue(t, "runner-7", false)
	good, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	rogueCA := tlstest.NewCA(t, "rogue-ca")
	rp, rk := rogueCA.Issue(t, "intruder", false)
	rogue, _ := tls.X509KeyPair(rp, rk)

	requested := false
	body, err := get(t, httpsClient(ca, &good, &requested), ts.URL+"/test/peer")
	if err != nil || body != "verified:runner-7" || !requested {
		t.Fatalf("client with a CA-signed certificate = %q, %v (requested=%v)", body, err, requested)
	}

	requested = false
	body, err = get(t, httpsClient(ca, nil, &requested), ts.URL+"/test/peer")
	if err != nil || body != "anonymous" || !requested {
		t.Fatalf("browser without a certificate = %q, %v (requested=%v)", body, err, requested)
	}

	if body, err := get(t, httpsClient(ca, &rogue, nil), ts.URL+"/test/peer"); err == nil {
		t.Fatalf("a certificate from another CA was accepted: %q", body)
	}
}

func TestTLSConfigErrorsNameTheVariable(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	good := tlsFixture(t, ca, false)
	dir := t.TempDir()
	notPEM := tlstest.WriteFile(t, dir, "junk.pem", []byte("not a certificate"))
	tests := []struct {
		name string
		cfg  config.TLS
		want string
	}{
		{"missing cert file", config.TLS{CertPath: filepath.Join(dir, "nope.pem"), KeyPath: good.KeyPath}, "SERVICE_TLS_CERT_PATH"},
		{"key does not match", config.TLS{CertPath: good.CertPath, KeyPath: notPEM}, "SERVICE_TLS_KEY_PATH"},
		{"missing CA file", config.TLS{CertPath: good.CertPath, KeyPath: good.KeyPath, ClientCAPath: filepath.Join(dir, "none.pem")}, "SERVICE_TLS_CLIENT_CA_PATH"},
		{"CA file without PEM", config.TLS{CertPath: good.CertPath, KeyPath: good.KeyPath, ClientCAPath: notPEM}, "SERVICE_TLS_CLIENT_CA_PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := TLSConfig(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to name %s", err, tt.want)
			}
		})
	}
}
