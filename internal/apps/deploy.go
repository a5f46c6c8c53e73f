package apps

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// ServePrefix is where deployed apps are served: /a + the route path.
const ServePrefix = "/a"

// MaxRouteSegments bounds a route path's depth.
const MaxRouteSegments = 3

// cleanRoute checks a route path: / and 1 to 3 segments of a-z, 0-9 and
// - (at most 40 each), no trailing /. "orders" reads as "/orders".
func cleanRoute(raw string) (string, error) {
	r := strings.TrimSpace(raw)
	r = "/" + strings.Trim(r, "/")
	segs := strings.Split(r[1:], "/")
	if r == "/" || len(segs) > MaxRouteSegments {
		return "", apperr.BadRequest("route_path must be / and 1 to %d segments, e.g. /orders or /team/orders", MaxRouteSegments)
	}
	for _, s := range segs {
		if s == "" || len(s) > 40 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || s[0] == '-' {
			return "", apperr.BadRequest("route_path: %q is not a segment (1 to 40 of a-z, 0-9 and -, not starting with -)", s)
		}
	}
	return r, nil
}

// checkMigrations applies the rule between a release and the app's
// database: the migrations the release expects and those applied must be
// one a prefix of the other. When applied ones are a prefix of the
// release's, the rest are pending (the deploy applies them); otherwise 409
// names where they part.
func checkMigrations(expected []migrationRef, applied []migrationRef) (pending []migrationRef, err error) {
	n := min(len(expected), len(applied))
	for i := 0; i < n; i++ {
		if expected[i] != applied[i] {
			return nil, apperr.New(apperr.CodeConflict,
				"the release expects migration %s (checksum %.12s…) where the app's database has %s applied: its migrations are not a prefix of those applied",
				expected[i].Name, expected[i].Checksum, applied[i].Name)
		}
	}
	return expected[n:], nil
}

// AppDeployment reads the app's deployment, or nil when it never was.
func (s *Service) Deployment(ctx context.Context, ws *actor.Workspace, id string) (*AppDeployment, error) {
	var out *AppDeployment
	err := s.readApp(ctx, ws, id, func(q db.Queryer) (err error) {
		out, err = getDeployment(ctx, q, ws.ID, id)
		return err
	})
	return out, err
}

// Deploy serves a release (the given build, else the latest succeeded one)
// at a route path. Pending migrations the release expects are applied
// first; a release whose migrations part from those applied is refused.
func (s *Service) Deploy(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in AppDeployInput) (*AppDeployment, error) {
	if !ids.Valid(id) {
		return nil, notFound
	}
	route, err := cleanRoute(in.RoutePath)
	if err != nil {
		return nil, err
	}
	if in.BuildID != "" && !ids.Valid(in.BuildID) {
		return nil, apperr.BadRequest("build_id: no such build of the app")
	}
	return s.point(ctx, ws, u, id, in.BuildID, &route, "app.deploy")
}

// PatchDeployment moves the deployment to another release (a rollback or
// a roll forward: a pointer swap, nothing rebuilt) or another route.
func (s *Service) PatchDeployment(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in AppDeploymentPatch) (*AppDeployment, error) {
	if !ids.Valid(id) {
		return nil, notFound
	}
	var route *string
	if in.RoutePath != nil {
		r, err := cleanRoute(*in.RoutePath)
		if err != nil {
			return nil, err
		}
		route = &r
	}
	build := ""
	if in.BuildID != nil {
		if !ids.Valid(*in.BuildID) {
			return nil, apperr.BadRequest("build_id: no such build of the app")
		}
		build = *in.BuildID
	}
	cur, err := s.Deployment(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, apperr.NotFound("deployment")
	}
	if in.ErrorPage != nil {
		page, err := s.ErrorPages.Check(in.ErrorPage)
		if err != nil {
			return nil, err
		}
		err = s.DB.Tx(ctx, func(tx *db.Tx) error {
			if err := lockApp(ctx, tx, s.DB.Dialect, ws.ID, id); err != nil {
				return err
			}
			before, err := deploymentErrorPage(ctx, tx, ws.ID, id)
			if err != nil {
				return err
			}
			if err := setDeploymentErrorPage(ctx, tx, ws.ID, id, page); err != nil {
				return err
			}
			return audit.Record(ctx, tx, s.Clock.Now(), u.ID, "app.error_page", "app", id, before, page)
		})
		if err != nil {
			return nil, err
		}
		s.routeChanged(ctx, cur.RoutePath)
		if in.BuildID == nil && in.RoutePath == nil {
			return s.Deployment(ctx, ws, id)
		}
	}
	if build == "" {
		build = cur.ReleaseID
	}
	if route == nil {
		route = &cur.RoutePath
	}
	return s.point(ctx, ws, u, id, build, route, "app.deployment")
}

// point makes the deployment serve a release at a route: the one place a
// deployment changes, in one transaction with its audit entry.
func (s *Service) point(ctx context.Context, ws *actor.Workspace, u *actor.User, id, buildID string, route *string, action string) (*AppDeployment, error) {
	// Migrations first, outside the transaction: they run on the app's
	// database, and may take a while.
	err := s.readApp(ctx, ws, id, func(db.Queryer) error { return nil })
	if err != nil {
		return nil, err
	}
	if rel, expected, err := releaseFor(ctx, s.DB.R, ws.ID, id, buildID); err != nil {
		return nil, err
	} else if rel != nil {
		applied, err := appliedMigrations(ctx, s.DB.R, ws.ID, id)
		if err != nil {
			return nil, err
		}
		pending, err := checkMigrations(expected, applied)
		if err != nil {
			return nil, err
		}
		if err := s.applyPending(ctx, ws, id, pending); err != nil {
			return nil, err
		}
	}
	var out *AppDeployment
	var oldRoute string
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := lockApp(ctx, tx, s.DB.Dialect, ws.ID, id); err != nil {
			return err
		}
		rel, expected, err := releaseFor(ctx, tx, ws.ID, id, buildID)
		if err != nil {
			return err
		}
		if rel == nil {
			if buildID != "" {
				return apperr.BadRequest("build_id: no such succeeded build of the app")
			}
			return apperr.New(apperr.CodeConflict, "the app has no succeeded build: build it first (POST /api/apps/%s/builds)", id)
		}
		applied, err := appliedMigrations(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		pending, err := checkMigrations(expected, applied)
		if err != nil {
			return err
		}
		if len(pending) > 0 {
			return apperr.New(apperr.CodeConflict, "the app's migrations changed meanwhile (%s is not applied): deploy again", pending[0].Name)
		}
		before, err := getDeployment(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if before != nil {
			oldRoute = before.RoutePath
		}
		if taken, err := routeTaken(ctx, tx, *route, id); err != nil || taken {
			if err == nil {
				err = apperr.New(apperr.CodeConflict, "route_path %s is taken by another app", *route)
			}
			return err
		}
		now := s.Clock.Now()
		d := &AppDeployment{AppID: id, ReleaseID: rel.ID, Release: rel.Number, RoutePath: *route, Status: "deployed", DeployedAt: now, UpdatedAt: now}
		if before != nil {
			d.HasToken = before.HasToken
		}
		if err := saveDeployment(ctx, tx, ws.ID, d); err != nil {
			return err
		}
		d.URL = ServePrefix + d.RoutePath + "/"
		out = d
		return audit.Record(ctx, tx, now, u.ID, action, "app", id, before, d)
	})
	if err != nil {
		return nil, err
	}
	s.routeChanged(ctx, out.RoutePath)
	if oldRoute != "" && oldRoute != out.RoutePath {
		s.routeChanged(ctx, oldRoute)
	}
	return out, nil
}

// Undeploy stops serving the app: its route shows the error page until it
// is deployed again (the route stays the app's).
func (s *Service) Undeploy(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*AppDeployment, error) {
	if !ids.Valid(id) {
		return nil, notFound
	}
	var out *AppDeployment
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := getApp(ctx, tx, ws.ID, u.ID, id); err != nil {
			return err
		}
		before, err := getDeployment(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if before == nil {
			return apperr.NotFound("deployment")
		}
		after := *before
		after.Status, after.UpdatedAt = "undeployed", s.Clock.Now()
		if before.Status == "undeployed" {
			out = before
			return nil
		}
		if err := setDeploymentStatus(ctx, tx, ws.ID, id, "undeployed", after.UpdatedAt); err != nil {
			return err
		}
		out = &after
		return audit.Record(ctx, tx, after.UpdatedAt, u.ID, "app.undeploy", "app", id, before, after)
	})
	if err != nil {
		return nil, err
	}
	s.routeChanged(ctx, out.RoutePath)
	return out, nil
}

// TokenPrefix starts every App token.
const TokenPrefix = "scwa_"

// hashToken is what is stored of an App token.
func hashToken(t string) string {
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
}

// AppToken is a new App token, shown once.
type AppToken struct {
	Token string `json:"token" doc:"scwa_…: shown this once; only its hash is stored"`
}

// CreateToken mints the deployment's App token (a workspace admin), which
// replaces the one before; only its hash is stored.
func (s *Service) CreateToken(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*AppToken, error) {
	if !ids.Valid(id) {
		return nil, notFound
	}
	if !isAdmin(ws) {
		return nil, apperr.New(apperr.CodeForbidden, "only a workspace owner or admin mints App tokens")
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	tok := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		d, err := getDeployment(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if d == nil {
			if _, err := getApp(ctx, tx, ws.ID, u.ID, id); err != nil {
				return err
			}
			return apperr.New(apperr.CodeConflict, "the app is not deployed: an App token belongs to a deployment")
		}
		now := s.Clock.Now()
		if err := setToken(ctx, tx, ws.ID, id, hashToken(tok), &now); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "app.token", "app", id, map[string]bool{"had_token": d.HasToken}, map[string]bool{"has_token": true})
	})
	if err != nil {
		return nil, err
	}
	s.routeChanged(ctx, "")
	return &AppToken{Token: tok}, nil
}

// DeleteToken revokes the deployment's App token (a workspace admin);
// false when there was none.
func (s *Service) DeleteToken(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, notFound
	}
	if !isAdmin(ws) {
		return false, apperr.New(apperr.CodeForbidden, "only a workspace owner or admin revokes App tokens")
	}
	had := false
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := getApp(ctx, tx, ws.ID, u.ID, id); err != nil {
			return err
		}
		d, err := getDeployment(ctx, tx, ws.ID, id)
		if err != nil || d == nil || !d.HasToken {
			return err
		}
		had = true
		now := s.Clock.Now()
		if err := setToken(ctx, tx, ws.ID, id, "", nil); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "app.token.delete", "app", id, map[string]bool{"has_token": true}, map[string]bool{"has_token": false})
	})
	if err == nil && had {
		s.routeChanged(ctx, "")
	}
	return had, err
}

// ErrorPage is the page the app shows when undeployed or failing, through
// the cascade: its own, its workspace's, the instance's, the built-in one.
func (s *Service) ErrorPage(ctx context.Context, ws *actor.Workspace, id string) (*ResolvedErrorPage, error) {
	var own json.RawMessage
	err := s.readApp(ctx, ws, id, func(q db.Queryer) (err error) {
		own, err = deploymentErrorPage(ctx, q, ws.ID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	page, source, err := s.ErrorPages.Resolve(ctx, ws.ID, own)
	if err != nil {
		return nil, err
	}
	return &ResolvedErrorPage{Page: page, Source: source}, nil
}
