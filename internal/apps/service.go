package apps

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"slipway/internal/apps/manifest"
	"slipway/internal/audit"
	"slipway/internal/billing"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/text"
	"slipway/internal/resources"
	"slipway/internal/runs"
)

// Quota decides the plan's apps.max inside the transaction that adds an
// app (billing).
type Quota interface {
	Check(ctx context.Context, tx *db.Tx, subj billing.Subject, feature string, adding int64) error
}

// Members answers whether a user may act in a workspace (tenancy).
type Members interface {
	CanAccess(ctx context.Context, userID, workspaceID string) (bool, error)
}

// Viewers resolves whether a user is a member of a workspace, as the API's
// X-Workspace-Id does (tenancy, cached across requests).
type Viewers interface {
	ResolveWorkspace(ctx context.Context, u *actor.User, header string) (*actor.Workspace, error)
}

// Bus carries route changes between replicas (nil: one replica).
type Bus interface {
	Publish(ctx context.Context, topic, payload string) error
	Subscribe(topic string) *pubsub.Subscription
}

// Deps are what the service works with.
type Deps struct {
	DB      *db.DB
	Clock   clock.Clock
	Log     *slog.Logger
	Quota   Quota // nil: no plan limit
	Members Members
	// Viewers resolves a user's membership of a workspace (tenancy, cached).
	Viewers Viewers
	Bus     Bus
	// ErrorPages renders what an undeployed or failing app shows.
	ErrorPages ErrorPages
	// Secret derives each app database role's password (the instance
	// secret).
	Secret []byte
	// Resources runs a backend function's statement against a resource
	// the manifest declares.
	Resources Resources
	// Queue and Runs run build steps through the worker port (nil: builds
	// with a build step are refused).
	Queue *jobs.Queue
	Runs  *runs.Service
	// Scripts runs script functions (nil: they are refused).
	Scripts Scripts
}

// Scripts runs a workspace's saved script by slug and waits for its
// output (scripts.Service.Call).
type Scripts interface {
	Call(ctx context.Context, workspaceID, slug string, input json.RawMessage, timeout time.Duration) (json.RawMessage, error)
}

// Resources are the workspace's resources as backend functions use them.
type Resources interface {
	IDByName(ctx context.Context, workspaceID, name string) (string, error)
	Statement(ctx context.Context, workspaceID, resourceID string, st resources.Statement) (any, error)
}

// Service manages apps.
type Service struct {
	Deps
	routes *routeCache
	dbs    *appDatabases
}

// NewService returns the apps service.
func NewService(d Deps) *Service {
	s := &Service{Deps: d, routes: newRouteCache(), dbs: newAppDatabases(d.DB, d.Secret)}
	return s
}

// notFound is the one answer for an unknown or another workspace's app.
var notFound = apperr.NotFound("app")

func checkDescription(d string) (*string, error) {
	d = strings.TrimSpace(d)
	if utf8.RuneCountInString(d) > MaxDescription {
		return nil, apperr.BadRequest("description is too long: at most %d characters", MaxDescription)
	}
	if err := text.CheckName("description", strings.NewReplacer("\r\n", " ", "\n", " ", "\t", " ").Replace(d)); err != nil {
		return nil, err
	}
	if d == "" {
		return nil, nil
	}
	return &d, nil
}

// parseManifest reads manifest_yaml; its problems are a 400.
func parseManifest(y string) (*manifest.Manifest, error) {
	if len(y) > MaxManifestBytes {
		return nil, apperr.BadRequest("manifest_yaml is too large: at most %d bytes", MaxManifestBytes)
	}
	m, err := manifest.Parse(y)
	if err != nil {
		var me *manifest.Error
		if errors.As(err, &me) {
			return nil, apperr.BadRequest("manifest_yaml: %s", me.Error())
		}
		return nil, apperr.BadRequest("manifest_yaml: %v", err)
	}
	return m, nil
}

// readApp runs fn in a read transaction once the app is known to be the
// workspace's (the unknown app's 404 otherwise).
func (s *Service) readApp(ctx context.Context, ws *actor.Workspace, id string, fn func(q db.Queryer) error) error {
	if !ids.Valid(id) {
		return notFound
	}
	return s.DB.ReadTx(ctx, func(q db.Queryer) error {
		if ok, err := appExists(ctx, q, ws.ID, id); err != nil || !ok {
			if err == nil {
				err = notFound
			}
			return err
		}
		return fn(q)
	})
}

// isAdmin: the workspace's owner or admin.
func isAdmin(ws *actor.Workspace) bool { return ws.Role == "owner" || ws.Role == "admin" }

// Create adds an app to the workspace, within its plan's apps.max.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, u *actor.User, in AppCreate) (*App, error) {
	name, err := text.Name("name", in.Name, 100)
	if err != nil {
		return nil, err
	}
	var desc *string
	if in.Description != nil {
		if desc, err = checkDescription(*in.Description); err != nil {
			return nil, err
		}
	}
	m, err := parseManifest(in.ManifestYAML)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	a := &App{AppSummary: AppSummary{ID: ids.New(), Name: name, Description: desc, CreatedAt: now, UpdatedAt: now},
		ManifestYAML: in.ManifestYAML, Manifest: m}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if s.Quota != nil {
			if err := s.Quota.Check(ctx, tx, billing.Subject{WorkspaceID: ws.ID, UserID: u.ID}, "apps.max", 1); err != nil {
				return err
			}
		}
		n, err := countApps(ctx, tx, ws.ID)
		if err != nil {
			return err
		}
		if n >= MaxPerWorkspace {
			return apperr.BadRequest("a workspace holds at most %d apps", MaxPerWorkspace)
		}
		if taken, err := nameTaken(ctx, tx, ws.ID, name, ""); err != nil || taken {
			if err == nil {
				err = apperr.BadRequest("name: the workspace already has an app named %q", name)
			}
			return err
		}
		if err := insertApp(ctx, tx, ws.ID, u.ID, a); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "app.create", "app", a.ID, nil, map[string]any{"name": name})
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// List reads the workspace's apps by name (without their manifests).
func (s *Service) List(ctx context.Context, ws *actor.Workspace, u *actor.User) ([]AppSummary, error) {
	return listApps(ctx, s.DB.R, ws.ID, u.ID)
}

// boardSorts are the board's sort keys.
var boardSorts = map[string]string{"name": "a.name", "created_at": "a.created_at", "updated_at": "a.updated_at"}

// Board reads the apps as a board: search, sort, pages, and a facet on
// whether each is deployed.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, u *actor.User, q board.Query, status string) (*board.Board[AppSummary], error) {
	rows, total, facets, err := boardPage(ctx, s.DB, ws.ID, u.ID, q, status)
	if err != nil {
		return nil, err
	}
	return board.New(q, rows, total, map[string][]board.Facet{"status": facets}), nil
}

// Get reads one app with its manifest.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*App, error) {
	if !ids.Valid(id) {
		return nil, notFound
	}
	a, err := getApp(ctx, s.DB.R, ws.ID, u.ID, id)
	if err != nil {
		return nil, err
	}
	// A stored manifest was valid when saved; read it for its defaults.
	a.Manifest, _ = manifest.Parse(a.ManifestYAML)
	return a, nil
}

// Update changes an app's name, description or manifest.
func (s *Service) Update(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in AppUpdate) (*App, error) {
	if !ids.Valid(id) {
		return nil, notFound
	}
	var name string
	var err error
	if in.Name != nil {
		if name, err = text.Name("name", *in.Name, 100); err != nil {
			return nil, err
		}
	}
	var desc *string
	if in.Description.Set && !in.Description.Null {
		if desc, err = checkDescription(in.Description.Value); err != nil {
			return nil, err
		}
	}
	if in.ManifestYAML != nil {
		if _, err := parseManifest(*in.ManifestYAML); err != nil {
			return nil, err
		}
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		before, err := getApp(ctx, tx, ws.ID, u.ID, id)
		if err != nil {
			return err
		}
		after := *before
		if in.Name != nil && name != before.Name {
			if taken, err := nameTaken(ctx, tx, ws.ID, name, id); err != nil || taken {
				if err == nil {
					err = apperr.BadRequest("name: the workspace already has an app named %q", name)
				}
				return err
			}
			after.Name = name
		}
		if in.Description.Set {
			after.Description = desc
		}
		if in.ManifestYAML != nil {
			after.ManifestYAML = *in.ManifestYAML
		}
		after.UpdatedAt = s.Clock.Now()
		if err := updateApp(ctx, tx, ws.ID, &after); err != nil {
			return err
		}
		return audit.Record(ctx, tx, after.UpdatedAt, u.ID, "app.update", "app", id,
			map[string]any{"name": before.Name, "description": before.Description, "manifest_yaml": before.ManifestYAML},
			map[string]any{"name": after.Name, "description": after.Description, "manifest_yaml": after.ManifestYAML})
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, ws, u, id)
}

// Delete removes an app, its files, builds, deployment and install rows;
// false when there was none.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, notFound
	}
	var route string
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		a, err := getApp(ctx, tx, ws.ID, u.ID, id)
		if err != nil {
			return err
		}
		if a.Deployment != nil {
			route = a.Deployment.RoutePath
		}
		if err := deleteApp(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		return audit.Record(ctx, tx, s.Clock.Now(), u.ID, "app.delete", "app", id, map[string]any{"name": a.Name}, nil)
	})
	if err != nil {
		return false, err
	}
	if route != "" {
		s.routeChanged(ctx, route)
	}
	if err := s.dbs.drop(ctx, id); err != nil {
		s.Log.Warn("apps: dropping a deleted app's database failed", "app", id, "err", err)
	}
	return true, nil
}

// Install installs the app for a member of its workspace (you, or
// another member by a workspace admin); installing twice changes nothing.
func (s *Service) Install(ctx context.Context, ws *actor.Workspace, u *actor.User, id, userID string, install bool) (*AppInstallation, error) {
	if !ids.Valid(id) {
		return nil, notFound
	}
	if userID == "" {
		userID = u.ID
	}
	if userID != u.ID && !isAdmin(ws) {
		return nil, apperr.New(apperr.CodeForbidden, "only a workspace admin installs an app for another member")
	}
	if userID != u.ID {
		member := false
		if ids.Valid(userID) {
			var err error
			if member, err = s.Members.CanAccess(ctx, userID, ws.ID); err != nil {
				return nil, err
			}
		}
		if !member {
			return nil, apperr.New(apperr.CodeForbidden, "user_id: not a member of the app's workspace")
		}
	}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := getApp(ctx, tx, ws.ID, u.ID, id); err != nil {
			return err
		}
		if install {
			return insertMember(ctx, tx, ws.ID, id, userID, s.Clock.Now())
		}
		return deleteMember(ctx, tx, ws.ID, id, userID)
	})
	if err != nil {
		return nil, err
	}
	return &AppInstallation{AppID: id, UserID: userID, Installed: install}, nil
}
