package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/config"
	"slipway/internal/platform/db"
)

// logBuffer collects a server's log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testConfig loads a dev configuration from env plus a temp data dir.
func testConfig(t *testing.T, target db.Target, env map[string]string) *config.Config {
	t.Helper()
	m := map[string]string{"SERVICE_DATA_DIR": t.TempDir(), "SERVICE_SHUTDOWN_LB_DELAY_SECS": "0", "SERVICE_SHUTDOWN_GRACE_SECS": "5",
		"SERVICE_ARGON2_MEMORY_KIB": "64", "SERVICE_ARGON2_TIME": "1"}
	for k, v := range env {
		m[k] = v
	}
	cfg, err := config.Load(config.MapLookup(m))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = target
	if _, err := cfg.ResolveJWTSecret(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testServer is a booted server listening on a loopback port.
type testServer struct {
	*Server
	URL    string
	Logs   *logBuffer
	Client *http.Client
	DB     *db.DB
}

// startServer boots (migrating target) and serves until the test ends.
func startServer(t *testing.T, target db.Target, env map[string]string, tlsCfg *tls.Config) *testServer {
	t.Helper()
	cfg := testConfig(t, target, env)
	logs := &logBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := Boot(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	s, err := New(cfg, log, d)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, tlsCfg, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	return &testServer{Server: s, URL: scheme + "://" + ln.Addr().String(), Logs: logs, Client: &http.Client{Timeout: 10 * time.Second}, DB: d}
}

// do sends a request and returns status, headers and body.
func (ts *testServer) do(t *testing.T, method, path, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ts.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// errorBody decodes the error body strictly: exactly code, error and
// optionally details.
func errorBody(t *testing.T, b []byte) (code, msg string) {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("error body is not JSON: %q", b)
	}
	for k := range raw {
		if k != "code" && k != "error" && k != "details" {
			t.Fatalf("error body has extra field %q: %s", k, b)
		}
	}
	json.Unmarshal(raw["code"], &code)
	json.Unmarshal(raw["error"], &msg)
	if code == "" || msg == "" {
		t.Fatalf("error body lacks code or error: %s", b)
	}
	return code, msg
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
