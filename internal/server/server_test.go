package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type echoInput struct {
	Body struct {
		Name  string `json:"name" minLength:"1"`
		Count int    `json:"count,omitempty" minimum:"0"`
	}
}

type echoOutput struct {
	Body struct {
		Name string `json:"name"`
	}
}

// mountTestRoutes adds operations that exist only in this test, to drive
// each error path through the real middleware and Huma configuration.
func mountTestRoutes(ts *testServer) {
	huma.Register(ts.APIs.Public, huma.Operation{OperationID: "test-echo", Method: http.MethodPost, Path: "/api/test/echo"},
		func(ctx context.Context, in *echoInput) (*echoOutput, error) {
			switch in.Body.Name {
			case "missing":
				return nil, apperr.NotFound("widget")
			case "conflict":
				return nil, apperr.New(apperr.CodeConflict, "widget %q exists", in.Body.Name)
			case "db":
				return nil, apperr.Wrap(apperr.CodeDatabase, errorString("pq: relation \"secret_table\" does not exist"), "could not save the widget")
			case "plain":
				return nil, errorString("SELECT password_hash FROM users failed")
			case "panic":
				panic("widget exploded: SELECT * FROM secret_table")
			}
			out := &echoOutput{}
			out.Body.Name = in.Body.Name
			return out, nil
		})
	ts.Mux().HandleFunc("GET /api/test/panic", func(http.ResponseWriter, *http.Request) {
		panic("plain handler exploded")
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestErrorBodies(t *testing.T) {
	ts := startServer(t, dbtest.EmptyTarget(t, db.SQLite), nil, nil)
	mountTestRoutes(ts)

	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantCode   string
		wantMsg    string // substring
		notInBody  []string
	}{
		{"unknown route", "GET", "/api/nope", "", 404, "not_found", "no route for GET /api/nope", nil},
		{"unknown route outside /api", "GET", "/nope", "", 404, "not_found", "no route", nil},
		{"wrong method on a Huma route", "DELETE", "/api/version", "", 405, "method_not_allowed", "allowed: GET, HEAD", nil},
		{"wrong method on a plain route", "POST", "/livez", "", 405, "method_not_allowed", "POST", nil},
		{"malformed JSON", "POST", "/api/test/echo", `{"name":`, 400, "bad_request", "", nil},
		{"unknown field", "POST", "/api/test/echo", `{"name":"a","colour":"red"}`, 400, "bad_request", "colour", nil},
		{"validation failure", "POST", "/api/test/echo", `{"name":"a","count":-1}`, 400, "bad_request", "count", nil},
		{"missing body", "POST", "/api/test/echo", "", 400, "bad_request", "", nil},
		{"wrong type never echoes the value", "POST", "/api/test/echo", `{"name":"hunter2-secret","count":"x"}`, 400, "bad_request", "count", []string{"hunter2-secret"}},
		{"domain not found", "POST", "/api/test/echo", `{"name":"missing"}`, 404, "not_found", "widget not found", nil},
		{"domain conflict", "POST", "/api/test/echo", `{"name":"conflict"}`, 409, "conflict", `widget "conflict" exists`, nil},
		{"database error keeps its message, hides the cause", "POST", "/api/test/echo", `{"name":"db"}`, 500, "database_error", "could not save the widget", []string{"secret_table", "pq:"}},
		{"unexpected error is internal and hides the cause", "POST", "/api/test/echo", `{"name":"plain"}`, 500, "internal_error", "request id", []string{"password_hash", "SELECT"}},
		{"panic in a Huma handler", "POST", "/api/test/echo", `{"name":"panic"}`, 500, "internal_error", "request id", []string{"secret_table", "goroutine", "exploded"}},
		{"panic in a plain handler", "GET", "/api/test/panic", "", 500, "internal_error", "request id", []string{"goroutine", "exploded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, b := ts.do(t, tt.method, tt.path, tt.body)
			t.Logf("%d %s", status, b)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", status, tt.wantStatus, b)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type = %q", ct)
			}
			code, msg := errorBody(t, b)
			if code != tt.wantCode || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("body = %s, want code %s and message containing %q", b, tt.wantCode, tt.wantMsg)
			}
			for _, s := range tt.notInBody {
				if strings.Contains(string(b), s) {
					t.Fatalf("body leaks %q: %s", s, b)
				}
			}
			if status == 500 && !strings.Contains(msg, h.Get("X-Request-Id")) {
				t.Fatalf("500 message %q does not carry the request id %s", msg, h.Get("X-Request-Id"))
			}
		})
	}

	// The causes hidden from clients are in the log, tied to the request id.
	logs := ts.Logs.String()
	for _, want := range []string{"secret_table", "password_hash", "panic serving request", "widget exploded", "goroutine"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	// Success still works through the same stack.
	status, _, b := ts.do(t, "POST", "/api/test/echo", `{"name":"ok"}`)
	if status != 200 || string(b) != `{"name":"ok"}`+"\n" {
		t.Fatalf("echo = %d %s", status, b)
	}
}

func TestRequestLogLines(t *testing.T) {
	ts := startServer(t, dbtest.EmptyTarget(t, db.SQLite), nil, nil)
	ts.do(t, "GET", "/api/version?token=sk-should-not-be-logged", "", "X-Request-Id", "req-abc.123")
	ts.do(t, "GET", "/api/missing/sk-path-secret", "")
	ts.do(t, "GET", "/livez", "")

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(ts.Logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("want 2 request lines (probes are quiet when healthy), got %d: %v", len(lines), lines)
	}
	first := lines[0]
	if first["request_id"] != "req-abc.123" || first["method"] != "GET" || first["route"] != "GET /api/version" ||
		first["status"] != float64(200) || first["duration"] == nil {
		t.Fatalf("request line = %v", first)
	}
	if lines[1]["route"] != "-" || lines[1]["status"] != float64(404) {
		t.Fatalf("unmatched request line = %v", lines[1])
	}
	if strings.Contains(ts.Logs.String(), "sk-should-not-be-logged") || strings.Contains(ts.Logs.String(), "sk-path-secret") {
		t.Fatal("a URL token reached the log")
	}

	// An unusable caller id is replaced, never echoed.
	_, h, _ := ts.do(t, "GET", "/api/version", "", "X-Request-Id", "bad id with spaces")
	if id := h.Get("X-Request-Id"); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-z]+$`).MatchString(id) {
		t.Fatalf("replacement request id = %q", id)
	}
}

func TestProbesAndInstaller(t *testing.T) {
	ts := startServer(t, dbtest.EmptyTarget(t, db.SQLite), nil, nil)
	for _, p := range []string{"/livez", "/readyz"} {
		status, _, b := ts.do(t, "GET", p, "")
		if status != 200 || string(b) != "{\"status\":\"ok\"}\n" {
			t.Fatalf("%s = %d %s", p, status, b)
		}
	}
	for _, p := range []string{"/install-runner.sh", "/install-runner.ps1"} {
		status, _, b := ts.do(t, "GET", p, "")
		code, msg := errorBody(t, b)
		if status != 503 || code != "internal_error" || !strings.Contains(msg, "SERVICE_RUNNER_VERSION") {
			t.Fatalf("%s unconfigured = %d %s", p, status, b)
		}
	}

	ts.StartDraining()
	status, _, b := ts.do(t, "GET", "/readyz", "")
	if _, msg := errorBody(t, b); status != 503 || !strings.Contains(msg, "shutting down") {
		t.Fatalf("draining readyz = %d %s", status, b)
	}
	if status, _, _ := ts.do(t, "GET", "/livez", ""); status != 200 {
		t.Fatalf("livez while draining = %d", status)
	}
	if status, _, _ := ts.do(t, "GET", "/api/version", ""); status != 200 {
		t.Fatalf("requests must still be served while draining, got %d", status)
	}
}

func TestInstallerRedirects(t *testing.T) {
	ts := startServer(t, dbtest.EmptyTarget(t, db.SQLite), map[string]string{
		"SERVICE_RUNNER_VERSION": "1.4.2", "SERVICE_RUNNER_DOWNLOAD_BASE": "https://releases.example.com/slipway/",
	}, nil)
	ts.Client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for file, want := range map[string]string{
		"install-runner.sh":  "https://releases.example.com/slipway/1.4.2/install-runner.sh",
		"install-runner.ps1": "https://releases.example.com/slipway/1.4.2/install-runner.ps1",
	} {
		status, h, _ := ts.do(t, "GET", "/"+file, "")
		if status != http.StatusFound || h.Get("Location") != want {
			t.Fatalf("/%s = %d Location %q, want 302 %s", file, status, h.Get("Location"), want)
		}
	}
}

func TestCORS(t *testing.T) {
	ts := startServer(t, dbtest.EmptyTarget(t, db.SQLite), map[string]string{"CORS_ALLOWED_ORIGINS": "https://console.example.com"}, nil)
	status, h, _ := ts.do(t, "OPTIONS", "/api/version", "", "Origin", "https://console.example.com", "Access-Control-Request-Method", "POST")
	if status != 204 || h.Get("Access-Control-Allow-Origin") != "https://console.example.com" || h.Get("Access-Control-Allow-Credentials") != "true" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "X-CSRF-Token") {
		t.Fatalf("preflight = %d %v", status, h)
	}
	_, h, _ = ts.do(t, "GET", "/api/version", "", "Origin", "https://evil.example.com")
	if h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("unlisted origin got CORS headers: %v", h)
	}
	status, _, _ = ts.do(t, "OPTIONS", "/api/version", "", "Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST")
	if status == 204 {
		t.Fatal("preflight from an unlisted origin was approved")
	}
}

func TestBootMigrations(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		// Skipping boot migrations against an empty database refuses to start,
		// naming what is missing.
		target := dbtest.EmptyTarget(t, e)
		cfg := testConfig(t, target, map[string]string{"SERVICE_SKIP_BOOT_MIGRATIONS": "true"})
		if _, err := Boot(ctx, cfg, discard()); err == nil || !strings.Contains(err.Error(), "00001_instance.sql") {
			t.Fatalf("skip on empty db: %v", err)
		}
		// A normal boot migrates; a second boot with the skip flag then starts.
		d, err := Boot(ctx, testConfig(t, target, nil), discard())
		if err != nil {
			t.Fatal(err)
		}
		// A newer binary left a migration this one does not know.
		if _, err := d.W.ExecContext(ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)"); err != nil {
			t.Fatal(err)
		}
		d.Close()
		d, err = Boot(ctx, cfg, discard())
		if err != nil {
			t.Fatalf("skip with every migration plus a newer one: %v", err)
		}
		d.Close()
		d, err = Boot(ctx, testConfig(t, target, nil), discard())
		if err != nil {
			t.Fatalf("migrating boot against a newer database: %v", err)
		}
		d.Close()
	})
}

// TestClientGoneIsNotAServerError: a request whose client disconnects while
// the server works on it is logged as 499 at info level, not as a 500 error.
func TestClientGoneIsNotAServerError(t *testing.T) {
	ts := startServer(t, dbtest.EmptyTarget(t, db.SQLite), nil, nil)
	started := make(chan struct{})
	huma.Register(ts.APIs.Public, huma.Operation{OperationID: "test-wait", Method: http.MethodGet, Path: "/api/test/wait"},
		func(ctx context.Context, _ *struct{}) (*struct{}, error) {
			close(started)
			<-ctx.Done()
			return nil, fmt.Errorf("querying: %w", ctx.Err()) // what a store returns when its query is cut
		})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/test/wait", nil)
	go func() {
		<-started
		cancel()
	}()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the request was answered")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, l := range strings.Split(ts.Logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != "request" || m["route"] != "GET /api/test/wait" {
				continue
			}
			if m["status"] != float64(499) || m["level"] != "INFO" {
				t.Fatalf("request line = %v", m)
			}
			if strings.Contains(ts.Logs.String(), `"level":"ERROR"`) {
				t.Fatalf("an error was logged:\n%s", ts.Logs.String())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request line:\n%s", ts.Logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
