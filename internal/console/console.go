// Package console serves the single-page app (web/dist, embedded) at the
// routes it owns: every page route answers index.html, the hashed assets
// are cached for good, and nothing else changes: unknown paths and every
// API route keep answering JSON.
package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
)

// Pages are the console's routes (Go 1.22 mux patterns, GET). The spec
// names /admin/?tab=, /operator, /reports/operations, /tasks/board, /login
// and /settings; the rest are the console's own.
var Pages = []string{
	"/{$}", "/login", "/register", "/settings", "/invite", "/reset", "/magic/confirm",
	"/tasks/{id}", "/projects", "/workflows", "/workflows/email", "/workflows/{id}", "/marketplace", "/marketplace/{id}", "/workflows/runs/{id}",
	"/runs", "/runs/{id}", "/runners", "/members", "/admin/", "/admin", "/operator", "/reports/operations", "/plans",
	"/projects/{id}/settings", "/resources", "/resources/{id}", "/activity",
	"/apps", "/apps/{id}", "/inbox", "/inbox/notifications", "/proposals", "/proposals/{id}",
}

// Shared are paths that are both an API operation and a console page (the
// spec lists GET /tasks/board as the task board's data): a browser
// navigating there (Accept: text/html) gets the page, everyone else JSON.
var Shared = []string{"/tasks/board"}

// csp keeps the page to its own origin (styles inline: the component
// library sets style attributes). connect-src 'self' covers the realtime
// socket: CSP3 lets 'self' match ws: and wss: on the page's own host.
const csp = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Console serves the built files.
type Console struct {
	files     fs.FS
	index     []byte
	built     time.Time
	publicURL string   // the canonical base URL (PUBLIC_URL), or ""
	gz        sync.Map // asset name → *packed, compressed on first request
}

// packed is an asset compressed once.
type packed struct {
	once sync.Once
	body []byte // nil: not worth compressing
}

// New reads index.html from the built files; without one (a checkout whose
// console was never built) it answers a page saying how to build it.
// publicURL (PUBLIC_URL, may be "") is the base of the sitemap's addresses.
func New(files fs.FS, publicURL string) *Console {
	c := &Console{files: files, built: time.Now(), publicURL: strings.TrimRight(publicURL, "/")}
	b, err := fs.ReadFile(files, "index.html")
	if err != nil {
		b = []byte("<!doctype html><title>Slipway</title><p>The console is not built in this binary: run <code>npm ci && npm run build</code> in web/.</p>")
	}
	c.index = b
	return c
}

// Mount registers the page routes and the assets on mux.
func (c *Console) Mount(mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}) {
	for _, p := range Pages {
		mux.HandleFunc("GET "+p, c.Page)
	}
	mux.HandleFunc("GET /assets/{file...}", c.Asset)
	for _, f := range Files {
		mux.HandleFunc("GET "+f, c.File)
	}
	mux.HandleFunc("GET /robots.txt", c.RobotsTxt)
	mux.HandleFunc("GET /sitemap.xml", c.SitemapXML)
}

// Page answers index.html; the app routes in the browser.
func (c *Console) Page(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w.Header())
	http.ServeContent(w, r, "index.html", c.built, bytes.NewReader(c.index))
}

// pageHeaders are index.html's headers: never cached without a check, and
// kept to its own origin.
func pageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

// NotFound answers a browser that navigated to a path no route has with
// the console (status 404), which says the page does not exist, instead
// of the API's JSON.
func (c *Console) NotFound(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w.Header())
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		w.Write(c.index)
	}
}

// Unknown reports whether r is a browser navigating to a path that no
// route answers (routes says which do) outside the API.
func Unknown(r *http.Request, routes func(*http.Request) bool) bool {
	return WantsPage(r) && r.URL.Path != "/api" && !strings.HasPrefix(r.URL.Path, "/api/") && !routes(r)
}

// Asset answers a built file; their names carry a content hash, so they
// never change and are cached for a year.
func (c *Console) Asset(w http.ResponseWriter, r *http.Request) {
	name := path.Join("assets", r.PathValue("file"))
	f, err := c.files.Open(name)
	if err != nil {
		httpx.WriteError(w, r, apperr.NotFound("asset"))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		httpx.WriteError(w, r, apperr.NotFound("asset"))
		return
	}
	h := w.Header()
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		h.Set("Content-Type", t)
	}
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Vary", "Accept-Encoding")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		if body := c.compressed(name, f); body != nil {
			h.Set("Content-Encoding", "gzip")
			http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
			return
		}
		if _, err := f.(io.Seeker).Seek(0, io.SeekStart); err != nil {
			httpx.WriteError(w, r, err)
			return
		}
	}
	if rs, ok := f.(io.ReadSeeker); ok {
		http.ServeContent(w, r, name, time.Time{}, rs)
		return
	}
	_, _ = io.Copy(w, f)
}

// compressed is the asset gzipped (made once, kept in memory), or nil for
// what does not shrink (images already compressed).
func (c *Console) compressed(name string, f fs.File) []byte {
	v, _ := c.gz.LoadOrStore(name, &packed{})
	p := v.(*packed)
	p.once.Do(func() {
		raw, err := io.ReadAll(f)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(raw)
		if zw.Close() == nil && buf.Len() < len(raw)*9/10 {
			p.body = buf.Bytes()
		}
	})
	return p.body
}

// WantsPage tells a browser navigation (HTML first) from an API call.
func WantsPage(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	a := r.Header.Get("Accept")
	return strings.HasPrefix(a, "text/html") || (strings.Contains(a, "text/html") && !strings.Contains(a, "application/json"))
}

// Shares reports whether p is both an API operation and a page.
func Shares(p string) bool {
	for _, s := range Shared {
		if p == s {
			return true
		}
	}
	return false
}

// IsPage reports whether a path is one of the console's (pages and assets
// carry no data, so the approval gate does not apply to them).
func IsPage(p string) bool {
	if strings.HasPrefix(p, "/assets/") || p == "/" || slices.Contains(Files, p) || slices.Contains(Crawl, p) {
		return true
	}
	for _, pat := range Pages {
		if matches(pat, p) {
			return true
		}
	}
	return false
}

// matches compares a path with a mux pattern of literal and {wildcard}
// segments.
func matches(pattern, p string) bool {
	pattern = strings.TrimSuffix(pattern, "{$}")
	ps, xs := strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(strings.Trim(p, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}
