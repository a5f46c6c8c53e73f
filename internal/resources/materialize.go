package resources

import (
	"context"
	"encoding/json"
	"errors"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/vault"
)

// Materialize is a resource of the workspace as a code node's script gets
// it, read through q (the dispatcher's transaction): a JSON object with its
// id, kind, name, config and secret, and the secret alone (for the run's
// redaction set). found is false for an unknown or another workspace's id.
// An rls_managed database is handed over as the workspace's role, never as
// the resource's own user.
func (s *Service) Materialize(ctx context.Context, q db.Queryer, workspaceID, id string) (value, secret string, found bool, err error) {
	if !ids.Valid(id) {
		return "", "", false, nil
	}
	r, err := get(ctx, q, workspaceID, id, "")
	if errors.Is(err, apperr.ErrNotFound) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	config := configMap(r)
	ref := r.secretRef
	if r.Kind == "postgresql" && r.RLSManaged {
		st, roleRef, err := rlsOf(ctx, q, workspaceID, r.ID)
		if err != nil {
			return "", "", false, err
		}
		if st == nil || st.RoleName == nil || roleRef == "" {
			return "", "", false, apperr.BadRequest("resource %q manages row-level security and is not provisioned for this workspace yet", r.Name)
		}
		config["user"], ref = *st.RoleName, roleRef
		config["search_path"] = *st.SchemaName
	}
	if ref != "" {
		m, err := vault.GetManyIn(ctx, q, s.Vault, workspaceID, []string{ref})
		if err != nil {
			return "", "", false, err
		}
		v, ok := m[ref]
		if !ok {
			return "", "", false, apperr.New(apperr.CodeVault, "the secret of resource %q is missing from the vault", r.Name)
		}
		secret = v
	}
	b, err := json.Marshal(map[string]any{"id": r.ID, "kind": r.Kind, "name": r.Name, "config": config, "secret": secret})
	return string(b), secret, true, err
}
