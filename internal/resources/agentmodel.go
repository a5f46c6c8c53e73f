package resources

import (
	"cmp"
	"context"
	"errors"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/vault"
)

// modelResource reads an openai_compatible resource of the workspace
// through q. Another workspace's id reads as an unknown one.
func modelResource(ctx context.Context, q db.Queryer, workspaceID, id string) (*Resource, OpenAICompatibleConfig, error) {
	var cfg OpenAICompatibleConfig
	if !ids.Valid(id) {
		return nil, cfg, apperr.BadRequest("no resource %q in this workspace", id)
	}
	r, err := get(ctx, q, workspaceID, id, "")
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, cfg, apperr.BadRequest("no resource %s in this workspace", id)
	}
	if err != nil {
		return nil, cfg, err
	}
	if r.Kind != "openai_compatible" {
		return nil, cfg, apperr.BadRequest("resource %q is a %s resource; an llm profile needs an openai_compatible one", r.Name, r.Kind)
	}
	cfg, err = configOf[OpenAICompatibleConfig](r)
	return r, cfg, err
}

// ModelDefault checks that id names an openai_compatible resource of the
// workspace (read through q, the caller's transaction) and gives its
// default model ("" when it names none).
func (s *Service) ModelDefault(ctx context.Context, q db.Queryer, workspaceID, id string) (string, error) {
	_, cfg, err := modelResource(ctx, q, workspaceID, id)
	return cfg.Model, err
}

// Model opens an openai_compatible resource of the workspace for an llm
// agent's run, through q (the claim's transaction): its base URL, the
// given model or else the resource's, and its key from the vault (empty
// when the resource has no secret).
func (s *Service) Model(ctx context.Context, q db.Queryer, workspaceID, id, model string) (baseURL, useModel, key string, err error) {
	r, cfg, err := modelResource(ctx, q, workspaceID, id)
	if err != nil {
		return "", "", "", err
	}
	if useModel = cmp.Or(model, cfg.Model); useModel == "" {
		return "", "", "", apperr.BadRequest("resource %q names no default model: give the profile a model", r.Name)
	}
	if r.secretRef != "" {
		m, err := vault.GetManyIn(ctx, q, s.Vault, workspaceID, []string{r.secretRef})
		if err != nil {
			return "", "", "", err
		}
		var ok bool
		if key, ok = m[r.secretRef]; !ok {
			return "", "", "", apperr.New(apperr.CodeVault, "the secret of resource %q is missing from the vault", r.Name)
		}
	}
	return cfg.BaseURL, useModel, key, nil
}
