package runner

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slipway/internal/runnerapi"
	"strings"
	"testing"
)

// TestCheckVersion: the runner talks only to a hub that lists its runner
// API version, and says clearly what is wrong otherwise.
func TestCheckVersion(t *testing.T) {
	for _, c := range []struct {
		name, body string
		status     int
		ok         bool
		says       []string
	}{
		{"speaks v1", `{"version":"1.2.0","runner_api_versions":["v1"]}`, 200, true, nil},
		{"speaks v1 among others", `{"version":"2.0.0","runner_api_versions":["v2","v1"]}`, 200, true, nil},
		{"only a newer version", `{"version":"3.0.0","runner_api_versions":["v2"]}`, 200, false,
			[]string{"speaks runner API versions [v2]", "this runner (version dev) speaks v1", "3.0.0"}},
		{"no runner API at all", `{"version":"0.9.0"}`, 200, false, []string{"[none]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/version" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			cl, err := NewClient(srv.URL, TLSFiles{}, 0, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.CheckVersion(context.Background(), "dev")
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrIncompatible) {
				t.Fatalf("err = %v, want ErrIncompatible", err)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
	if runnerapi.APIVersion != "v1" {
		t.Fatalf("the table above assumes v1, the API is %s", runnerapi.APIVersion)
	}
}

// TestHubWithoutVersionRoute: a server that is not a Slipway hub (404 on
// the version route) is refused at once, not retried forever.
func TestHubWithoutVersionRoute(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cl, err := NewClient(srv.URL, TLSFiles{}, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{cfg: nil, log: slog.New(slog.DiscardHandler), client: cl}
	r.cfg = testConfig(srv.URL)
	err = r.checkHub(context.Background())
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "not a Slipway hub") {
		t.Fatalf("err = %v", err)
	}
}
