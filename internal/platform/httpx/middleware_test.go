package httpx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// serve runs the middleware chain the server uses around mux, on a real
// listener, and returns its URL and what it logged.
func serve(t *testing.T, mux *http.ServeMux) (string, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	srv := httptest.NewServer(Observe(log, Recover(Router(mux))))
	t.Cleanup(srv.Close)
	return srv.URL, logs
}

// logBuffer collects log lines written from the server's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp, body
}

func TestWholeResponseLeavesWithItsLength(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		// Several writes, more than net/http's own 4 KiB buffer: without
		// holding back this would go out chunked.
		for range 10 {
			_, _ = w.Write(bytes.Repeat([]byte("a"), 1000))
		}
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		for range 100 {
			_, _ = w.Write(bytes.Repeat([]byte("b"), 1000))
		}
	})
	mux.HandleFunc("GET /empty", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	url, logs := serve(t, mux)

	resp, body := get(t, url+"/small")
	if resp.StatusCode != http.StatusCreated || len(body) != 10000 {
		t.Fatalf("small: status %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp.ContentLength != 10000 || len(resp.TransferEncoding) != 0 {
		t.Fatalf("small: Content-Length %d, Transfer-Encoding %v; want 10000 and none", resp.ContentLength, resp.TransferEncoding)
	}
	if resp.Header.Get(RequestIDHeader) == "" {
		t.Fatal("small: no request id")
	}

	// Beyond what is held back, the response streams as before, whole.
	resp, body = get(t, url+"/big")
	if resp.StatusCode != http.StatusOK || len(body) != 100000 || !bytes.Equal(body, bytes.Repeat([]byte("b"), 100000)) {
		t.Fatalf("big: status %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp.ContentLength != -1 {
		t.Fatalf("big: Content-Length %d; want none (streamed)", resp.ContentLength)
	}

	resp, body = get(t, url+"/empty")
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("empty: status %d, %d bytes", resp.StatusCode, len(body))
	}

	// The log counts the bytes of each.
	for _, want := range []string{`"route":"GET /small","status":201,"bytes":10000`, `"route":"GET /big","status":200,"bytes":100000`} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

func TestFlushSendsWhatWasHeld(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("first\n"))
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		<-release
		_, _ = w.Write([]byte("second\n"))
	})
	url, _ := serve(t, mux)
	resp, err := http.Get(url + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first line arrives while the handler still waits.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	close(release)
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
}

func TestPanicBeforeAnythingWentOutIsACleanError(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /half", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("half of a success"))
		panic("boom")
	})
	url, logs := serve(t, mux)
	resp, body := get(t, url+"/half")
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d; want 500", resp.StatusCode)
	}
	var e Error
	if err := json.Unmarshal(body, &e); err != nil || e.Code != "internal_error" {
		t.Fatalf("body %q: %v", body, err)
	}
	if strings.Contains(string(body), "half") {
		t.Fatalf("the held part of the failed response leaked: %q", body)
	}
	if !strings.Contains(e.Message, resp.Header.Get(RequestIDHeader)) {
		t.Fatalf("message %q lacks the request id", e.Message)
	}
	if !strings.Contains(logs.String(), `"msg":"panic serving request"`) {
		t.Fatalf("panic not logged:\n%s", logs.String())
	}
}

func TestPanicAfterTheStatusWentOutAborts(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /late", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("partial"))
		http.NewResponseController(w).Flush()
		panic("boom")
	})
	url, _ := serve(t, mux)
	resp, err := http.Get(url + "/late")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// The client must not see a complete "success": the body breaks off.
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("a response whose handler panicked mid-way read as complete")
	}
}

func TestRouterAnswersAreJSON(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /thing", func(w http.ResponseWriter, r *http.Request) {})
	url, _ := serve(t, mux)
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/nothing", 404, "not_found"},
		{"POST", "/thing", 405, "method_not_allowed"},
	} {
		req, _ := http.NewRequest(c.method, url+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e Error
		if resp.StatusCode != c.status || json.Unmarshal(body, &e) != nil || string(e.Code) != c.code {
			t.Fatalf("%s %s: %d %q", c.method, c.path, resp.StatusCode, body)
		}
		if resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s: Content-Type %q", c.method, c.path, resp.Header.Get("Content-Type"))
		}
	}
	// A handler that writes nothing is a 200 with an empty body.
	resp, body := get(t, url+"/thing")
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("empty handler: %d %q", resp.StatusCode, body)
	}
}

func TestHeldBuffersAreNotShared(t *testing.T) {
	// Concurrent responses each get their own bytes back, over and over
	// (a pooled buffer given back too early would mix them up).
	mux := http.NewServeMux()
	mux.HandleFunc("GET /echo/{v}", func(w http.ResponseWriter, r *http.Request) {
		v := r.PathValue("v")
		for range 200 {
			_, _ = w.Write([]byte(v))
		}
		time.Sleep(time.Millisecond)
	})
	url, _ := serve(t, mux)
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			v := strings.Repeat(string(rune('a'+i)), 7)
			want := strings.Repeat(v, 200)
			for range 50 {
				resp, err := http.Get(url + "/echo/" + v)
				if err != nil {
					done <- err
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(body) != want {
					done <- io.ErrUnexpectedEOF
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// Links in mail take the request's origin only when it came to a loopback
// name or address: any other Host is the caller's to write.
func TestLoopbackOrigin(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/o", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, LoopbackOrigin(r.Context())) })
	url, _ := serve(t, mux)
	port := url[strings.LastIndex(url, ":"):]
	for host, want := range map[string]string{
		"":                       url, // the client's own: 127.0.0.1:port
		"localhost" + port:       "http://localhost" + port,
		"LOCALHOST":              "http://LOCALHOST",
		"[::1]" + port:           "http://[::1]" + port,
		"127.0.0.2":              "http://127.0.0.2",
		"evil.example" + port:    "",
		"localhost.evil.example": "",
		"10.0.0.8" + port:        "",
	} {
		req, _ := http.NewRequest("GET", url+"/o", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want {
			t.Errorf("Host %q: origin %q, want %q", host, body, want)
		}
	}
}
