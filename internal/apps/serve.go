package apps

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"slipway/internal/apps/manifest"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/ttlcache"
)

// ErrorPages resolves and renders the page shown where an app cannot be
// served: the app's own, else its workspace's, else the instance's
// (errorpages).
type ErrorPages interface {
	Render(ctx context.Context, workspaceID string, appPage json.RawMessage, status int) ([]byte, error)
	// Resolve is the page the cascade picks and where it came from (app,
	// workspace, instance, default).
	Resolve(ctx context.Context, workspaceID string, appPage json.RawMessage) (json.RawMessage, string, error)
	// Check validates a page (a JSON object of at most 16 KiB) and
	// compacts it.
	Check(raw json.RawMessage) (json.RawMessage, error)
}

// topicRoutes carries a changed route path between replicas.
const topicRoutes = "app-routes"

// route is what serving a route path needs, read once and kept until the
// route changes (a deploy, a rollback, an undeploy, a delete) or routeTTL.
type route struct {
	found       bool
	appID       string
	workspaceID string
	releaseID   string
	status      string
	errorPage   json.RawMessage
	yaml        string // the release's manifest
	manifest    *manifest.Manifest
}

// routeTTL bounds what a lost invalidation leaves (another replica's
// change arrives by the bus within milliseconds).
const routeTTL = 10 * time.Second

type routeCache struct {
	routes *ttlcache.Cache[*route]
	// backends are apps' deployments as backend calls need them.
	backends *ttlcache.Cache[*backendEntry]
	// indexes maps a release to its files (path → hash); a release never
	// changes, so an index is kept as long as there is room.
	indexes *ttlcache.Cache[map[string]releaseFile]
	blobs   *blobCache
}

type releaseFile struct {
	hash string
	size int64
}

func newRouteCache() *routeCache {
	return &routeCache{routes: ttlcache.New[*route](routeTTL, 10000), backends: ttlcache.New[*backendEntry](backendTTL, 10000), indexes: ttlcache.New[map[string]releaseFile](time.Hour, 1000),
		blobs: newBlobCache(64 << 20)}
}

// routeChanged forgets the routes here and on every replica (routes
// change rarely: a deploy, a rollback, an undeploy, a delete).
func (s *Service) routeChanged(ctx context.Context, routePath string) {
	s.forget()
	if s.Bus != nil {
		if err := s.Bus.Publish(ctx, topicRoutes, routePath); err != nil {
			s.Log.Warn("apps: publishing a route change failed; other replicas follow within their cache's lifetime", "route", routePath, "err", err)
		}
	}
}

// Run applies the other replicas' route changes until ctx ends.
func (s *Service) Run(ctx context.Context) {
	if s.Bus == nil {
		return
	}
	pubsub.Follow(ctx, s.Bus.Subscribe(topicRoutes), s.forget)
}

// forget drops the routes and the backends (a deployment or a token
// changed).
func (s *Service) forget() {
	s.routes.routes.Clear()
	s.routes.backends.Clear()
}

// lookup finds the deployment whose route path is the longest prefix of
// the segments (at most MaxRouteSegments), and the rest of the path.
func (s *Service) lookup(ctx context.Context, segs []string) (string, *route, string, error) {
	var cands []string
	for i := min(len(segs), MaxRouteSegments); i >= 1; i-- {
		cands = append(cands, "/"+strings.Join(segs[:i], "/"))
	}
	// Longest first: a cached route wins only once every longer one is
	// known (cached entries expire one by one).
	now := time.Now()
	known := map[string]*route{}
	var missing []string
	for _, c := range cands {
		r, ok := s.routes.routes.Get(c, now)
		if !ok {
			missing = append(missing, c)
			continue
		}
		known[c] = r
		if r.found {
			break // the shorter ones cannot win
		}
	}
	if len(missing) > 0 {
		epoch := s.routes.routes.Epoch()
		found, err := routesByPath(ctx, s.DB.R, missing)
		if err != nil {
			return "", nil, "", err
		}
		for _, c := range missing {
			r := found[c]
			if r == nil {
				r = &route{}
			} else if r.manifest, err = manifest.Parse(r.yaml); err != nil {
				r.manifest = nil // served as failing
			}
			s.routes.routes.Put(c, r, now, time.Time{}, epoch)
			known[c] = r
		}
	}
	for _, c := range cands {
		if r := known[c]; r != nil && r.found {
			return c, r, strings.Join(segs[strings.Count(c, "/"):], "/"), nil
		}
	}
	return "", nil, "", nil
}

// Serve answers GET and HEAD under /a/: a deployed app's files to the
// members of its workspace. A stranger to the workspace gets the same 404
// as an unknown route; someone signed out is sent to sign in. The pages
// run sandboxed (a unique origin): an app's script cannot use the
// viewer's session.
func (s *Service) Serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rest := strings.TrimPrefix(r.URL.Path, ServePrefix+"/")
	segs := strings.Split(rest, "/")
	if rest == "" || len(segs) == 0 || segs[0] == "" {
		http.NotFound(w, r)
		return
	}
	routePath, rt, sub, err := s.lookup(ctx, segs)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, signedIn := actor.UserFrom(ctx)
	if rt == nil {
		if !signedIn {
			toLogin(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	httpx.Routed(r, "GET /a/{route}/{path...}")
	if !signedIn {
		toLogin(w, r)
		return
	}
	if ok, err := s.member(ctx, u, rt.workspaceID); err != nil || !ok || !u.Approved {
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		http.NotFound(w, r)
		return
	}
	if r.URL.Path == ServePrefix+routePath { // the app's root without its slash
		http.Redirect(w, r, ServePrefix+routePath+"/", http.StatusPermanentRedirect)
		return
	}
	if rt.status != "deployed" {
		s.errorPage(w, r, rt, http.StatusNotFound)
		return
	}
	if rt.manifest == nil {
		s.errorPage(w, r, rt, http.StatusBadGateway)
		return
	}
	index, err := s.releaseIndex(ctx, rt)
	if err != nil {
		s.Log.Warn("apps: reading a release failed", "app", rt.appID, "release", rt.releaseID, "err", err)
		s.errorPage(w, r, rt, http.StatusBadGateway)
		return
	}
	file := servedFile(rt.manifest, index, sub)
	if file == "" {
		http.NotFound(w, r)
		return
	}
	f := index[file]
	etag := `"` + f.hash + `"`
	ct := mime.TypeByExtension(path.Ext(file))
	if ct == "" {
		ct = "application/octet-stream"
	}
	// A page carries its viewer's view token: it is the viewer's, so it
	// is neither cached nor revalidated.
	page := strings.HasPrefix(ct, "text/html")
	h := w.Header()
	h.Set("Content-Security-Policy", sandboxCSP)
	if rt.manifest.CSP != "" {
		h.Add("Content-Security-Policy", rt.manifest.CSP)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Type", ct)
	if page {
		h.Set("Cache-Control", "private, no-store")
	} else {
		h.Set("Cache-Control", "private, no-cache")
		h.Set("ETag", etag)
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	body, err := s.blob(ctx, rt.workspaceID, f.hash)
	if err != nil {
		s.Log.Warn("apps: reading a file of a release failed", "app", rt.appID, "file", file, "err", err)
		h.Del("ETag")
		s.errorPage(w, r, rt, http.StatusBadGateway)
		return
	}
	if page {
		body = withViewToken(body, rt.appID, s.viewToken(rt.appID, u.ID, s.Clock.Now()))
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// sandboxCSP runs an app's pages in a unique origin: scripts, forms,
// popups and downloads work, but the page cannot read the viewer's cookies
// or call the API as the viewer, and nothing may frame it but Slipway.
const sandboxCSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads; frame-ancestors 'self'; base-uri 'none'"

func toLogin(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.Path), http.StatusFound)
}

// servedFile is the release's file a path names: the entry page at the
// root, the file itself, a directory's index.html, or a manifest route's
// file ("" for none).
func servedFile(m *manifest.Manifest, index map[string]releaseFile, sub string) string {
	if sub == "" {
		return m.Entry
	}
	clean := path.Clean("/" + sub)[1:]
	if _, ok := index[clean]; ok && clean != "" {
		return clean
	}
	if _, ok := index[path.Join(clean, "index.html")]; ok {
		return path.Join(clean, "index.html")
	}
	for _, rt := range m.Routes {
		p := strings.TrimPrefix(rt.Path, "/")
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(clean+"/", prefix) || clean == p {
			if _, ok := index[rt.File]; ok {
				return rt.File
			}
		}
	}
	return ""
}

func (s *Service) errorPage(w http.ResponseWriter, r *http.Request, rt *route, status int) {
	body, err := s.ErrorPages.Render(r.Context(), rt.workspaceID, rt.errorPage, status)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'")
	w.WriteHeader(status)
	w.Write(body)
}

func (s *Service) releaseIndex(ctx context.Context, rt *route) (map[string]releaseFile, error) {
	now := time.Now()
	if idx, ok := s.routes.indexes.Get(rt.releaseID, now); ok {
		return idx, nil
	}
	epoch := s.routes.indexes.Epoch()
	idx, err := releaseFiles(ctx, s.DB.R, rt.workspaceID, rt.releaseID)
	if err != nil {
		return nil, err
	}
	s.routes.indexes.Put(rt.releaseID, idx, now, time.Time{}, epoch)
	return idx, nil
}

func (s *Service) blob(ctx context.Context, workspaceID, hash string) ([]byte, error) {
	key := workspaceID + "/" + hash
	if b, ok := s.routes.blobs.get(key); ok {
		return b, nil
	}
	b, err := blobContent(ctx, s.DB.R, workspaceID, hash)
	if err != nil {
		return nil, err
	}
	s.routes.blobs.put(key, b)
	return b, nil
}

// blobCache keeps file contents up to a byte budget, least recently used
// out first. A blob's content never changes for its key.
type blobCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // front: most recent
	items map[string]*list.Element
}

type blobEntry struct {
	key  string
	body []byte
}

func newBlobCache(max int) *blobCache {
	return &blobCache{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (c *blobCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*blobEntry).body, true
	}
	return nil, false
}

func (c *blobCache) put(key string, body []byte) {
	if len(body) > c.max/16 {
		return // a large file would push out many small ones
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return
	}
	c.items[key] = c.order.PushFront(&blobEntry{key: key, body: body})
	c.size += len(body)
	for c.size > c.max {
		e := c.order.Back()
		be := e.Value.(*blobEntry)
		c.order.Remove(e)
		delete(c.items, be.key)
		c.size -= len(be.body)
	}
}
