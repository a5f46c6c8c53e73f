package resources

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/redact"
	"slipway/internal/platform/vault"
)

// Row-level security for a postgresql resource with rls_managed: the
// resource's user (who may create roles) provisions, in its database, a
// role and a schema for the resource's workspace, and a policy on every
// table of the shared schema (rls_schema, default public) with a
// workspace_id column, so that the role sees and changes only the
// workspace's rows. The workspace's db_query and db_execute nodes then
// connect as that role, its password kept in the vault.

// RLSSecretKind is the first part of a role password's vault name.
const RLSSecretKind = "rls"

var plainName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// rlsNamesFor names what a workspace gets; the workspace id is a UUID, so
// its hex digits make names from a strict charset.
func rlsNamesFor(workspaceID, shared string) (rlsNames, error) {
	hexID := strings.ReplaceAll(workspaceID, "-", "")
	n := rlsNames{Role: "slipway_ws_" + hexID, Schema: "ws_" + hexID, Policy: "slipway_ws_" + hexID, Shared: shared, Workspace: workspaceID}
	if n.Shared == "" {
		n.Shared = "public"
	}
	if !ids.Valid(workspaceID) || !plainName.MatchString(n.Role) || !plainName.MatchString(n.Schema) || !plainName.MatchString(n.Shared) {
		return rlsNames{}, apperr.BadRequest("cannot derive row-level security names for this workspace")
	}
	return n, nil
}

// ClaimsRLS tells the vault's orphan sweep whether a log row names the secret.
func (s *Service) ClaimsRLS(ctx context.Context, ref vault.Ref) (bool, error) {
	return claimsRLS(ctx, s.DB.R, ref.Workspace, ref.Name)
}

// rlsResource opens a resource that may be provisioned: 400 unless it is
// postgresql with rls_managed.
func (s *Service) rlsResource(ctx context.Context, ws *actor.Workspace, id string) (*Connection, PostgreSQLConfig, error) {
	c, err := s.Open(ctx, ws, id)
	if err != nil {
		return nil, PostgreSQLConfig{}, err
	}
	if c.Resource.Kind != "postgresql" || !c.Resource.RLSManaged {
		return nil, PostgreSQLConfig{}, apperr.BadRequest("row-level security is provisioned for postgresql resources with rls_managed only")
	}
	cfg, err := decode[PostgreSQLConfig](configMap(c.Resource))
	return c, cfg, err
}

// RLSRefresh provisions (again) the workspace's role, schema and policies.
// The role's new password goes to the vault before the log row names it. A
// database that refuses answers 200 with status "failed" and its error.
func (s *Service) RLSRefresh(ctx context.Context, ws *actor.Workspace, id string) (*RLSStatus, error) {
	c, cfg, err := s.rlsResource(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	n, err := rlsNamesFor(ws.ID, cfg.RLSSchema)
	if err != nil {
		return nil, err
	}
	pool, err := s.pool(ctx, c)
	if err != nil {
		return s.rlsFailed(ctx, ws, c, err)
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	password := hex.EncodeToString(b)
	name := RLSSecretKind + "." + c.Resource.ID + "." + hex.EncodeToString(b[:6])
	if err := s.Vault.Put(ctx, vault.Ref{Workspace: ws.ID, Name: name}, password); err != nil {
		return nil, err
	}
	tables, err := provisionRLS(ctx, pool, n, password)
	if err != nil {
		s.dropSecret(ctx, ws, name)
		return s.rlsFailed(ctx, ws, c, err)
	}
	now := s.Clock.Now()
	st := &RLSStatus{ResourceID: c.Resource.ID, Status: "provisioned", RoleName: &n.Role, SchemaName: &n.Schema, Policies: int64(tables),
		ProvisionedAt: &now, UpdatedAt: &now}
	var old string
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := get(ctx, tx, ws.ID, id, s.DB.Dialect.ForUpdate()); err != nil {
			return err // deleted meanwhile
		}
		_, prev, err := rlsOf(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		old = prev
		return saveRLS(ctx, tx, ws.ID, st, name)
	})
	if err != nil {
		s.dropSecret(ctx, ws, name)
		return nil, err
	}
	s.dropSecret(ctx, ws, old)
	// The role's new password reaches nodes through a fresh Connection (its
	// pool is keyed by the secret, so the next use opens one with it). The
	// resource's own pool stays: closing it would break a refresh running
	// beside this one on it.
	s.conns.Drop(func(c *Connection) bool { return c.Resource.ID == id })
	return st, nil
}

// rlsFailed records a refresh the database refused and answers it.
func (s *Service) rlsFailed(ctx context.Context, ws *actor.Workspace, c *Connection, cause error) (*RLSStatus, error) {
	msg := redact.New(c.Secret).Text(pgFailure(cause))
	now := s.Clock.Now()
	cur, ref, err := rlsOf(ctx, s.DB.R, ws.ID, c.Resource.ID)
	if err != nil {
		return nil, err
	}
	st := &RLSStatus{ResourceID: c.Resource.ID, Status: "failed", Error: &msg, UpdatedAt: &now}
	if cur != nil { // what was provisioned before stays in use
		st.RoleName, st.SchemaName, st.Policies, st.ProvisionedAt = cur.RoleName, cur.SchemaName, cur.Policies, cur.ProvisionedAt
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error { return saveRLS(ctx, tx, ws.ID, st, ref) })
	return st, err
}

// RLSStatusOf reads what was provisioned for a resource.
func (s *Service) RLSStatusOf(ctx context.Context, ws *actor.Workspace, id string) (*RLSStatus, error) {
	r, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	st, _, err := rlsOf(ctx, s.DB.R, ws.ID, r.ID)
	if err != nil || st != nil {
		return st, err
	}
	return &RLSStatus{ResourceID: r.ID, Status: "unprovisioned"}, nil
}

// Namespaces lists the workspace's provisioned schemas.
func (s *Service) Namespaces(ctx context.Context, ws *actor.Workspace) ([]DBNamespace, error) {
	return namespaces(ctx, s.DB.R, ws.ID)
}

// unprovision drops the workspace's role in the resource's database and
// forgets it, best effort: a database that cannot be reached keeps the role
// (logged), the row goes anyway.
func (s *Service) unprovision(ctx context.Context, ws *actor.Workspace, c *Connection) {
	st, ref, err := rlsOf(ctx, s.DB.R, ws.ID, c.Resource.ID)
	if err != nil || st == nil {
		return
	}
	cfg, _ := decode[PostgreSQLConfig](configMap(c.Resource))
	n, err := rlsNamesFor(ws.ID, cfg.RLSSchema)
	if err == nil && st.RoleName != nil {
		if pool, err := s.pool(ctx, c); err != nil {
			s.Log.Warn("resources: the database of a resource with row-level security cannot be reached; its role stays", "resource", c.Resource.ID)
		} else if err := dropRLS(ctx, pool, n); err != nil {
			s.Log.Warn("resources: dropping a workspace's role failed; it stays", "resource", c.Resource.ID, "err", redact.New(c.Secret).Text(err.Error()))
		}
	}
	_ = s.DB.Tx(ctx, func(tx *db.Tx) error { return removeRLS(ctx, tx, ws.ID, c.Resource.ID) })
	s.dropSecret(ctx, ws, ref)
}

// asWorkspaceRole is the connection a node of the workspace uses on an
// rls_managed resource: the workspace's role with its password, its own
// schema first on the search path. Not provisioned: the node fails.
func (s *Service) asWorkspaceRole(ctx context.Context, workspaceID string, c *Connection) (*Connection, error) {
	st, ref, err := rlsOf(ctx, s.DB.R, workspaceID, c.Resource.ID)
	if err != nil {
		return nil, err
	}
	if st == nil || st.RoleName == nil || ref == "" {
		return nil, &NodeError{Message: "resource \"" + c.Resource.Name + "\" manages row-level security and is not provisioned for this workspace yet: refresh it (POST /api/resources/" + c.Resource.ID + "/rls_refresh)"}
	}
	password, err := s.Vault.Get(ctx, vault.Ref{Workspace: workspaceID, Name: ref})
	if err != nil {
		return nil, err
	}
	cfg := configMap(c.Resource)
	cfg["user"] = *st.RoleName
	raw, _ := json.Marshal(cfg)
	r := *c.Resource
	r.Config = raw
	shared := "public"
	if v, _ := cfg["rls_schema"].(string); v != "" {
		shared = v
	}
	return &Connection{Resource: &r, Secret: password, searchPath: *st.SchemaName + ", " + shared}, nil
}
