package envvars

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/tenancy"
)

// A proposed env var (an agent's proposal) sets a plain value in its
// scope: a secret is given by a person, never proposed (its value would
// sit in the proposal for every member to read), and locking is an
// admin's own act.

// proposedScope checks a proposed env var and answers its project ("" for
// a global one).
func proposedScope(ws *actor.Workspace, in EnvVarSave) (string, error) {
	if err := checkKey(in.Key); err != nil {
		return "", err
	}
	if in.Value == nil {
		return "", apperr.BadRequest("value is required")
	}
	if err := checkValue(*in.Value); err != nil {
		return "", err
	}
	if in.IsSecret != nil && *in.IsSecret {
		return "", apperr.BadRequest("a secret env var cannot be proposed: a person sets its value")
	}
	if in.Locked != nil {
		return "", apperr.BadRequest("locked cannot be proposed: locking is a workspace admin's own act")
	}
	if in.WorkspaceID != "" && in.WorkspaceID != ws.ID {
		return "", apperr.BadRequest("workspace_id is not the proposal's workspace")
	}
	var projectID string
	if in.ProjectID != nil {
		projectID = *in.ProjectID
	}
	switch {
	case in.Scope == ScopeGlobal && projectID != "":
		return "", apperr.BadRequest("scope global takes no project_id")
	case in.Scope == ScopeProject && projectID == "":
		return "", apperr.BadRequest("scope project needs a project_id")
	case in.Scope != "" && in.Scope != ScopeGlobal && in.Scope != ScopeProject:
		return "", apperr.BadRequest("scope must be global or project")
	}
	return projectID, nil
}

// CheckProposed checks a proposed env var through q without writing: its
// target (key and scope) and that target's state now ("" when no env var
// of the key is there; a secret one refuses the proposal).
func (s *Service) CheckProposed(ctx context.Context, q db.Queryer, ws *actor.Workspace, in EnvVarSave) (target, state string, err error) {
	projectID, err := proposedScope(ws, in)
	if err != nil {
		return "", "", err
	}
	scope := "global"
	if projectID != "" {
		if err := s.checkProject(ctx, q, ws.ID, projectID); err != nil {
			return "", "", err
		}
		scope = "project:" + projectID
	}
	target = "env_var:" + scope + ":" + in.Key
	cur, err := byKey(ctx, q, ws.ID, projectID, in.Key, "")
	if errors.Is(err, errNotFound) {
		return target, "", nil
	}
	if err != nil {
		return "", "", err
	}
	if cur.IsSecret {
		return "", "", apperr.BadRequest("%s is a secret env var: a person changes it, it cannot be proposed", in.Key)
	}
	sum := sha256.Sum256([]byte(cur.ID + "\x00" + cur.Value + "\x00" + map[bool]string{true: "locked"}[cur.Locked]))
	return target, hex.EncodeToString(sum[:]), nil
}

// SaveProposedTx saves a proposed env var in tx as u (an approved
// proposal's): a plain value, created or replacing the one of its key.
func (s *Service) SaveProposedTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, in EnvVarSave) (*EnvVar, error) {
	projectID, err := proposedScope(ws, in)
	if err != nil {
		return nil, err
	}
	if projectID != "" {
		if err := s.checkProject(ctx, tx, ws.ID, projectID); err != nil {
			return nil, err
		}
	}
	admin := tenancy.WorkspaceAdmin(ws.Role)
	cur, err := byKey(ctx, tx, ws.ID, projectID, in.Key, s.DB.Dialect.ForUpdate())
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
	if c.isSecret {
		return nil, apperr.BadRequest("%s is a secret env var: a person changes it, it cannot be proposed", in.Key)
	}
	id := ids.New()
	if cur != nil {
		id = cur.ID
	}
	v, _, err := s.write(ctx, tx, ws, u.ID, projectID, in.Key, admin, cur, c, id, "")
	if errors.Is(err, errRaced) {
		return nil, apperr.New(apperr.CodeConflict, "the env var %s is being changed by someone else; try again", in.Key)
	}
	if err != nil {
		return nil, err
	}
	show(ws, v)
	return v, nil
}
