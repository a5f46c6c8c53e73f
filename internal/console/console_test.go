package console_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/console"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/web"
)

// The console answers its page routes with the app, its assets with long
// caching, a browser's unknown path with the app and a 404, and leaves
// every API route, and every other client's unknown path, to JSON.
func TestServing(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		pending := app.Pending("Pat Pending")
		anon := app.Anonymous()
		index, err := fs.ReadFile(web.Dist(), "index.html")
		if err != nil {
			t.Fatalf("the console is not built (web/dist): %v", err)
		}
		html := []string{"Accept", "text/html,application/xhtml+xml,*/*;q=0.8"}
		for _, p := range []string{"/", "/login", "/register", "/settings", "/tasks/board", "/tasks/0191f3a0-0000-7000-8000-000000000000",
			"/projects", "/workflows", "/runs", "/runners", "/members", "/admin/?tab=users", "/admin/?tab=nonsense", "/operator", "/reports/operations",
			"/invite?token=x", "/reset?token=x", "/magic/confirm?token=x"} {
			for name, c := range map[string]*apitest.Client{"anonymous": anon, "admin": admin, "pending": pending} {
				r := c.Do("GET", p, nil, html...)
				if r.Status != 200 || string(r.Body) != string(index) || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
					t.Fatalf("%s %s: %d %s %.80s", name, p, r.Status, r.Header.Get("Content-Type"), r.Body)
				}
				csp := r.Header.Get("Content-Security-Policy")
				if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "connect-src 'self';") || r.Header.Get("Cache-Control") != "no-cache" {
					t.Fatalf("%s: headers %v", p, r.Header)
				}
			}
		}
		// /tasks/board is also the board's data: JSON unless a browser navigates.
		if r := admin.Do("GET", "/tasks/board", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"rows"`) || r.Header.Get("Vary") != "Accept" {
			t.Fatalf("the board's data: %d %.200s", r.Status, r.Body)
		}
		if r := anon.Do("GET", "/tasks/board", nil, "Accept", "application/json"); r.Status != 401 || r.Map(t)["code"] != "unauthorized" {
			t.Fatalf("anonymous board data: %d %s", r.Status, r.Body)
		}
		if r := pending.Do("GET", "/api/projects", nil, html...); r.Status != 403 {
			t.Fatalf("the approval gate still guards the API: %d", r.Status)
		}
		// A browser navigating where nothing is gets the console, which says
		// so, with a 404 (it got the API's JSON); the API, an asset and any
		// other client still get JSON.
		for _, p := range []string{"/nothing", "/tasks", "/workflows/x/y/z"} {
			for name, c := range map[string]*apitest.Client{"anonymous": anon, "admin": admin, "pending": pending} {
				r := c.Do("GET", p, nil, html...)
				if r.Status != 404 || string(r.Body) != string(index) || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
					!strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'self'") {
					t.Fatalf("%s %s: %d %s %.80s", name, p, r.Status, r.Header.Get("Content-Type"), r.Body)
				}
			}
		}
		for _, c := range []struct {
			path   string
			header []string
		}{{"/api/nothing", html}, {"/assets/nothing.js", html}, {"/nothing", []string{"Accept", "application/json"}}, {"/nothing", nil}} {
			r := anon.Do("GET", c.path, nil, c.header...)
			if r.Status/100 == 2 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("%s %v: %d %s", c.path, c.header, r.Status, r.Header.Get("Content-Type"))
			}
		}
		// Every asset index.html names is served, cached for good.
		assets := regexp.MustCompile(`/assets/[^"]+`).FindAllString(string(index), -1)
		if len(assets) == 0 {
			t.Fatalf("index.html names no assets:\n%s", index)
		}
		for _, a := range assets {
			r := anon.Do("GET", a, nil)
			if r.Status != 200 || len(r.Body) == 0 || r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
				t.Fatalf("%s: %d %v", a, r.Status, r.Header)
			}
			// Scripts are served gzipped, but for the few tiny chunks the
			// build makes (a 28-byte one does not shrink).
			if strings.HasSuffix(a, ".js") && len(r.Body) >= 512 {
				z := anon.Do("GET", a, nil, "Accept-Encoding", "gzip")
				if z.Header.Get("Content-Encoding") != "gzip" || len(z.Body) >= len(r.Body) || !strings.Contains(z.Header.Get("Vary"), "Accept-Encoding") {
					t.Fatalf("%s gzipped: %v, %d bytes of %d", a, z.Header, len(z.Body), len(r.Body))
				}
			}
			want := map[string]string{".js": "text/javascript", ".css": "text/css"}
			for ext, ct := range want {
				if strings.HasSuffix(a, ext) && !strings.HasPrefix(r.Header.Get("Content-Type"), ct) {
					t.Fatalf("%s: %s", a, r.Header.Get("Content-Type"))
				}
			}
		}
		if r := anon.Do("POST", "/login", nil); r.Status != http.StatusMethodNotAllowed && r.Status != http.StatusNotFound {
			t.Fatalf("POST to a page: %d", r.Status)
		}
	})
}

// TestEveryConsoleRouteIsAPage: each route the console's router names
// (web/src/App.tsx) is served as the page, so that opening its address
// directly, or reloading it, works.
func TestEveryConsoleRouteIsAPage(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "web", "src", "App.tsx"))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range console.Pages {
		mux.HandleFunc("GET "+p, func(http.ResponseWriter, *http.Request) {})
	}
	routes := regexp.MustCompile(`<Route path="([^"*]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 10 {
		t.Fatalf("found %d routes in App.tsx", len(routes))
	}
	for _, m := range routes {
		path := regexp.MustCompile(`:[A-Za-z]+`).ReplaceAllString(m[1], "0123")
		if _, pattern := mux.Handler(httptest.NewRequest("GET", path, nil)); pattern == "" {
			t.Errorf("the console route %s is not in console.Pages: opening it directly is a 404", m[1])
		}
	}
}
