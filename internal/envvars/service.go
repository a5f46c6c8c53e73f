package envvars

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/vault"
	"slipway/internal/tenancy"
)

// Deps are what the service works with.
type Deps struct {
	DB    *db.DB
	Clock clock.Clock
	Vault vault.Backend
	Log   *slog.Logger
}

// Service manages env vars.
type Service struct {
	Deps
}

// NewService returns the env vars service.
func NewService(d Deps) *Service { return &Service{Deps: d} }

const (
	// SecretKind is the first part of a secret env var's vault name.
	SecretKind = "envvar"
	// MaxValueBytes bounds a value (the vault's bound too).
	MaxValueBytes = vault.MaxValueBytes
	// MaxPerWorkspace bounds the env vars of a workspace, globals and
	// every project's together: the list returns them all, and a run's
	// environment is read whole.
	MaxPerWorkspace = 1000
	// ReservedPrefix starts the names Slipway gives a run itself.
	ReservedPrefix = "SLIPWAY_"
)

var keyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

func checkKey(key string) error {
	if !keyRE.MatchString(key) {
		return apperr.BadRequest("key must be a letter or _ followed by letters, digits or _, at most 128 in all")
	}
	if strings.HasPrefix(key, ReservedPrefix) {
		return apperr.BadRequest("keys starting with %s are reserved for the variables Slipway sets", ReservedPrefix)
	}
	return nil
}

// checkValue refuses what an environment cannot carry or a log would be
// broken by; the error never quotes the value (it may be a secret).
func checkValue(v string) error {
	if len(v) > MaxValueBytes {
		return apperr.BadRequest("value must be at most %d bytes", MaxValueBytes)
	}
	for _, r := range v {
		switch {
		case r == 0:
			return apperr.BadRequest("value must not contain NUL characters")
		case r == '\n' || r == '\r' || r == '\t':
		case unicode.IsControl(r):
			return apperr.BadRequest("value must not contain control characters other than newline, carriage return and tab (found U+%04X)", r)
		}
	}
	return nil
}

var (
	errProjectNotFound = apperr.New(apperr.CodeNotFound, "project not found")
	errLockedOnly      = apperr.New(apperr.CodeForbidden, "only a workspace owner or admin may lock an env var")
)

func lockedError(key string) error {
	return apperr.New(apperr.CodeForbidden, "the env var %s is locked: only a workspace owner or admin may change or delete it", key)
}

// newSecretName is a fresh vault name for an env var's secret value:
// every write goes to a new name, so a row never names a half-written one.
func newSecretName(id string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return SecretKind + "." + id + "." + hex.EncodeToString(b)
}

// Claims tells the vault's orphan sweep whether an env var names the secret.
func (s *Service) Claims(ctx context.Context, ref vault.Ref) (bool, error) {
	return claims(ctx, s.DB.R, ref.Workspace, ref.Name)
}

// putSecret writes a secret value under a fresh name before its row commits.
func (s *Service) putSecret(ctx context.Context, workspaceID, id, value string) (string, error) {
	name := newSecretName(id)
	if err := s.Vault.Put(ctx, vault.Ref{Workspace: workspaceID, Name: name}, value); err != nil {
		if errors.Is(err, vault.ErrInvalid) {
			return "", apperr.BadRequest("value must be at most %d bytes", MaxValueBytes)
		}
		return "", err
	}
	return name, nil
}

// dropSecret deletes a secret no row names any more; a failure is left to
// the orphan sweep.
func (s *Service) dropSecret(ctx context.Context, workspaceID, name string) {
	if name == "" {
		return
	}
	if err := s.Vault.Delete(context.WithoutCancel(ctx), vault.Ref{Workspace: workspaceID, Name: name}); err != nil {
		s.Log.Warn("envvars: deleting a secret failed; the orphan sweep will remove it", "workspace", workspaceID, "name", name, "err", err)
	}
}

// show fills in what the API shows beside the row.
func show(ws *actor.Workspace, v *EnvVar) {
	v.WorkspaceID, v.OrganizationID = ws.ID, ws.OrganizationID
	if v.IsSecret {
		v.Value = ""
	}
}

// checkProject answers an unknown project and another workspace's alike.
func (s *Service) checkProject(ctx context.Context, q db.Queryer, workspaceID, projectID string) error {
	if !ids.Valid(projectID) {
		return errProjectNotFound
	}
	ok, err := projectExists(ctx, q, workspaceID, projectID)
	if err != nil {
		return err
	}
	if !ok {
		return errProjectNotFound
	}
	return nil
}

// List reads the workspace's env vars, or (projectID set) the globals and
// that project's: globals first, then by project, then by key.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, projectID string) ([]EnvVar, error) {
	if projectID != "" {
		if err := s.checkProject(ctx, s.DB.R, ws.ID, projectID); err != nil {
			return nil, err
		}
	}
	out, err := list(ctx, s.DB.R, ws.ID, projectID, MaxPerWorkspace)
	if err != nil {
		return nil, err
	}
	for i := range out {
		show(ws, &out[i])
	}
	return out, nil
}

// change is what a save makes of the stored env var (nil: none yet).
type change struct {
	isSecret bool
	value    string // the plain value, or the secret one to put in the vault
	put      bool   // a new secret value goes to the vault
	locked   bool
}

// plan decides a save against what is stored (cur, nil for none).
func plan(cur *EnvVar, in EnvVarSave, admin bool) (change, error) {
	var c change
	if cur != nil {
		if cur.Locked && !admin {
			return c, lockedError(cur.Key)
		}
		c.isSecret, c.locked = cur.IsSecret, cur.Locked
	}
	if in.IsSecret != nil {
		c.isSecret = *in.IsSecret
	}
	if in.Locked != nil {
		c.locked = *in.Locked // true only from an admin (Save checked)
	}
	switch {
	case in.Value != nil:
		c.value, c.put = *in.Value, c.isSecret
	case cur == nil:
		return c, apperr.BadRequest("value is required for a new env var")
	case cur.IsSecret && !c.isSecret:
		return c, apperr.BadRequest("value is required to make a secret env var plain")
	case !cur.IsSecret:
		// As it was, or moved into the vault.
		c.value, c.put = cur.Value, c.isSecret
	}
	if c.put && c.value == "" {
		return c, apperr.BadRequest("a secret env var needs a value that is not empty")
	}
	return c, nil
}

// errRaced: the env var changed between the read that planned a save and
// its transaction; the save starts over.
var errRaced = errors.New("envvars: changed while saving")

// Save creates or updates the env var of in.Key in its scope: global, or
// in.ProjectID's. A secret value is written to the vault under a fresh name
// before the row names it; the value it replaces is deleted after.
func (s *Service) Save(ctx context.Context, ws *actor.Workspace, u *actor.User, in EnvVarSave) (*EnvVar, error) {
	if err := checkKey(in.Key); err != nil {
		return nil, err
	}
	if in.Value != nil {
		if err := checkValue(*in.Value); err != nil {
			return nil, err
		}
	}
	if in.WorkspaceID != "" && in.WorkspaceID != ws.ID {
		return nil, apperr.BadRequest("workspace_id is not the active workspace")
	}
	var projectID string
	if in.ProjectID != nil {
		projectID = *in.ProjectID
	}
	switch in.Scope {
	case "":
	case ScopeGlobal:
		if projectID != "" {
			return nil, apperr.BadRequest("scope global takes no project_id")
		}
	case ScopeProject:
		if projectID == "" {
			return nil, apperr.BadRequest("scope project needs a project_id")
		}
	default:
		return nil, apperr.BadRequest("scope must be global or project")
	}
	admin := tenancy.WorkspaceAdmin(ws.Role)
	if in.Locked != nil && *in.Locked && !admin {
		return nil, errLockedOnly
	}
	if projectID != "" {
		if err := s.checkProject(ctx, s.DB.R, ws.ID, projectID); err != nil {
			return nil, err
		}
	}
	var by string
	if u != nil {
		by = u.ID
	}
	for attempt := 1; ; attempt++ {
		v, err := s.save(ctx, ws, by, projectID, in, admin)
		if errors.Is(err, errRaced) && attempt < 5 {
			continue
		}
		if errors.Is(err, errRaced) {
			return nil, apperr.New(apperr.CodeConflict, "the env var %s is being changed by someone else; try again", in.Key)
		}
		return v, err
	}
}

func (s *Service) save(ctx context.Context, ws *actor.Workspace, by, projectID string, in EnvVarSave, admin bool) (*EnvVar, error) {
	// Read once outside the transaction to write the new secret first.
	cur, err := byKey(ctx, s.DB.R, ws.ID, projectID, in.Key, "")
	if errors.Is(err, errNotFound) {
		cur, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := plan(cur, in, admin)
	if err != nil {
		return nil, err
	}
	id := ids.New()
	if cur != nil {
		id = cur.ID
	}
	newRef := ""
	if c.put {
		if newRef, err = s.putSecret(ctx, ws.ID, id, c.value); err != nil {
			return nil, err
		}
	}
	var out *EnvVar
	oldRef := ""
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		row, err := byKey(ctx, tx, ws.ID, projectID, in.Key, s.DB.Dialect.ForUpdate())
		if errors.Is(err, errNotFound) {
			row, err = nil, nil
		}
		if err != nil {
			return err
		}
		if !same(cur, row) {
			return errRaced
		}
		out, oldRef, err = s.write(ctx, tx, ws, by, projectID, in.Key, admin, cur, c, id, newRef)
		return err
	})
	if err != nil {
		s.dropSecret(ctx, ws.ID, newRef)
		return nil, err
	}
	s.dropSecret(ctx, ws.ID, oldRef)
	show(ws, out)
	return out, nil
}

// write stores a planned save in tx, over cur (nil: a new env var with
// id); it answers the env var and the vault reference it replaced ("" for
// none).
func (s *Service) write(ctx context.Context, tx *db.Tx, ws *actor.Workspace, by, projectID, key string, admin bool, cur *EnvVar, c change,
	id, newRef string) (*EnvVar, string, error) {
	if projectID != "" && !admin {
		// A project's entry would change what the project's runs get of
		// a locked global one: that is changing it.
		g, err := byKey(ctx, tx, ws.ID, "", key, "")
		if err != nil && !errors.Is(err, errNotFound) {
			return nil, "", err
		}
		if g != nil && g.Locked {
			return nil, "", lockedError(key)
		}
	}
	now := s.Clock.Now()
	v := &EnvVar{ID: id, CreatedAt: now, Key: key, IsSecret: c.isSecret, Locked: c.locked, ProjectID: optional(projectID)}
	switch {
	case !c.isSecret:
		v.Value = c.value
	case c.put:
		v.secretRef = newRef
	default:
		v.secretRef = cur.secretRef
	}
	if cur == nil {
		n, err := count(ctx, tx, ws.ID)
		if err != nil {
			return nil, "", err
		}
		if n >= MaxPerWorkspace {
			return nil, "", apperr.BadRequest("a workspace holds at most %d env vars", MaxPerWorkspace)
		}
		if err := insert(ctx, tx, ws.ID, by, v, now); err != nil {
			if s.DB.Dialect.IsUniqueViolation(err) {
				return nil, "", errRaced // created at the same time: update it
			}
			return nil, "", err
		}
		return v, "", nil
	}
	v.CreatedAt = cur.CreatedAt
	if err := update(ctx, tx, ws.ID, v, now); err != nil {
		return nil, "", err
	}
	if cur.secretRef != v.secretRef {
		return v, cur.secretRef, nil
	}
	return v, "", nil
}

// same reports whether the row the transaction locked is the one the save
// was planned on.
func same(planned, locked *EnvVar) bool {
	if planned == nil || locked == nil {
		return planned == locked
	}
	return planned.ID == locked.ID && planned.IsSecret == locked.IsSecret && planned.secretRef == locked.secretRef &&
		planned.Value == locked.Value && planned.Locked == locked.Locked
}

// Delete removes an env var, then its secret value from the vault (best
// effort). It reports false when there was no such env var (an unknown,
// malformed or other workspace's id alike).
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, nil
	}
	admin := tenancy.WorkspaceAdmin(ws.Role)
	var ref string
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		v, err := byID(ctx, tx, ws.ID, id, s.DB.Dialect.ForUpdate())
		if err != nil {
			return err
		}
		if v.Locked && !admin {
			return lockedError(v.Key)
		}
		ref = v.secretRef
		return remove(ctx, tx, ws.ID, id)
	})
	if errors.Is(err, errNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.dropSecret(ctx, ws.ID, ref)
	return true, nil
}

// Resolve is the environment of a run of the workspace in the project
// (projectID "": outside any project): the globals, over which the
// project's own env vars win, with secret values read from the vault. The
// second result lists the secret values in it, for the run's redaction set.
// It reads through q: a caller inside a transaction passes it, so that it
// never waits for a second connection of a pool its transaction may have
// exhausted (PostgreSQL).
func (s *Service) Resolve(ctx context.Context, q db.Queryer, workspaceID, projectID string) (map[string]string, []string, error) {
	if q == nil {
		q = s.DB.R
	}
	var vars []EnvVar
	var err error
	if projectID == "" {
		vars, err = globals(ctx, q, workspaceID, MaxPerWorkspace)
	} else {
		vars, err = list(ctx, q, workspaceID, projectID, MaxPerWorkspace)
	}
	if err != nil {
		return nil, nil, err
	}
	// Globals come first, so a project's entry replaces the global one.
	won := map[string]*EnvVar{}
	for i := range vars {
		won[vars[i].Key] = &vars[i]
	}
	keys := slices.Sorted(maps.Keys(won))
	env := make(map[string]string, len(won))
	var names []string
	for _, key := range keys {
		if v := won[key]; v.IsSecret {
			names = append(names, v.secretRef)
		} else {
			env[key] = v.Value
		}
	}
	secrets := []string{}
	if len(names) > 0 {
		values, err := vault.GetManyIn(ctx, q, s.Vault, workspaceID, names)
		if err != nil {
			return nil, nil, err
		}
		for _, key := range keys {
			v := won[key]
			if !v.IsSecret {
				continue
			}
			value, ok := values[v.secretRef]
			if !ok {
				return nil, nil, apperr.New(apperr.CodeVault, "the value of the secret env var %s is missing from the vault", key)
			}
			env[key] = value
			secrets = append(secrets, value)
		}
	}
	return env, secrets, nil
}

// optional is s as a nullable field: nil when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
