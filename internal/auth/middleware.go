package auth

import (
	"errors"
	"net/http"
	"strings"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
)

// Middleware authenticates the request (bearer token by prefix, else the
// session cookie), then applies the approval gate and the CSRF check, in
// that order (DESIGN §3). A request without credentials passes through
// anonymous: each operation decides whether it needs a user.
func (s *Service) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if h := r.Header.Get("Authorization"); h != "" {
			kind, token, ok, err := ParseBearer(h)
			runner := ok && (kind == BearerRunner || kind == BearerRunnerJWT) && strings.HasPrefix(r.URL.Path, RunnerAPIPrefix)
			app := ok && (kind == BearerAppToken || kind == BearerAppView) && AppTokenRoute(r.URL.Path)
			switch {
			case app:
				// The apps service checks it against the app the path names.
				ctx = actor.WithAppToken(ctx, token)
				r = r.WithContext(ctx)
			case (err != nil || ok) && !runner:
				// Runner tokens are the runner API's own business (it
				// authenticates them), an App token is good only for its
				// app's backend calls and run submissions, and management
				// tokens come with their feature: any other bearer token is
				// unknown.
				httpx.WriteError(w, r, apperr.New(apperr.CodeUnauthorized, "unknown or expired bearer token"))
				return
			}
		} else if c, err := r.Cookie(SessionCookie); err == nil {
			if token, err := ParseSessionToken(c.Value); err == nil {
				u, err := s.Authenticate(ctx, token)
				switch {
				case err == nil:
					ctx = actor.WithUser(ctx, u)
					r = r.WithContext(ctx)
				case !errors.Is(err, apperr.ErrUnauthorized):
					httpx.WriteError(w, r, err)
					return
				}
			}
		}

		u, authed := actor.UserFrom(ctx)
		if authed && !u.Approved && !approvalExempt(r) && (s.pages == nil || !s.pages(r)) {
			httpx.WriteError(w, r, actor.ErrApprovalPending)
			return
		}
		if authed && u.Method == actor.Cookie && unsafeMethod(r.Method) {
			cookie := ""
			if c, err := r.Cookie(CSRFCookie); err == nil {
				cookie = c.Value
			}
			if !s.ValidCSRF(u.SessionID, r.Header.Get(CSRFHeader), cookie) {
				httpx.WriteError(w, r, apperr.New(apperr.CodeForbidden, "missing or invalid CSRF token: send the service_csrf cookie's value in the X-CSRF-Token header"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ExemptPages names the console's pages (HTML and assets, no data): an
// account waiting for approval loads them like anyone (at wiring time).
func (s *Service) ExemptPages(isPage func(*http.Request) bool) { s.pages = isPage }

// AppTokenRoute reports whether an App token may authenticate a request to
// path: an app's backend calls and run submissions, nothing else.
func AppTokenRoute(path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/apps/")
	if !ok {
		return false
	}
	id, sub, ok := strings.Cut(rest, "/")
	if !ok || id == "" {
		return false
	}
	return sub == "backend" || strings.HasPrefix(sub, "backend/") && !strings.Contains(sub[len("backend/"):], "/") || sub == "runs"
}

// RunnerAPIPrefix is where runner bearer tokens are accepted.
const RunnerAPIPrefix = "/api/runner/"

func unsafeMethod(m string) bool {
	return m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch || m == http.MethodDelete
}

// approvalExempt lists what an account waiting for approval may still do:
// see its own profile, accept an invite (it joins the organization and
// stays pending), use the sign-in flows (sign out, reset a password,
// confirm its address). Probes are not API calls.
func approvalExempt(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/api/auth/") {
		return true
	}
	switch r.URL.Path {
	case "/api/me":
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	case "/api/auth/logout", "/organization/invites/accept":
		return r.Method == http.MethodPost
	case "/livez", "/readyz", "/install-runner.sh", "/install-runner.ps1":
		return true
	}
	return false
}

// AdminPrefix is the instance-admin sub-tree.
const AdminPrefix = "/api/admin/"

// AdminLayer guards the whole /api/admin/ tree: an approved instance admin
// or nothing. Admin handlers check again themselves (actor.RequireAdmin), so
// a route mounted outside this layer by mistake still refuses.
func AdminLayer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, AdminPrefix) {
			if _, err := actor.RequireAdmin(r.Context()); err != nil {
				httpx.WriteError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
