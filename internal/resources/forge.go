package resources

import (
	"context"
	"encoding/json"
	"errors"

	"slipway/internal/forge"
	"slipway/internal/forge/forges"
	"slipway/internal/platform/apperr"
)

// forgeMaxResponse bounds one answer of a forge's API (a page of 100
// issues with their bodies).
const forgeMaxResponse = 32 << 20

// Forge opens a forge resource of the workspace (another kind, or one
// that is not the workspace's, is a 400 naming the field).
func (s *Service) Forge(ctx context.Context, workspaceID, id string) (*forge.Access, error) {
	c, err := s.openCached(ctx, workspaceID, id)
	if err != nil {
		if errors.Is(err, apperr.ErrNotFound) {
			return nil, apperr.BadRequest("resource_id: no such resource in this workspace")
		}
		return nil, err
	}
	if !forges.Is(c.Resource.Kind) {
		return nil, apperr.BadRequest("resource_id: resource %q is a %s resource, not a forge (github, gitlab, gitea or forgejo)", c.Resource.Name, c.Resource.Kind)
	}
	if c.Secret == "" {
		return nil, apperr.BadRequest("resource_id: resource %q has no access token", c.Resource.Name)
	}
	var cfg ForgeConfig
	if err := json.Unmarshal(c.Resource.Config, &cfg); err != nil {
		return nil, apperr.Wrap(apperr.CodeInternal, err, "the resource's config cannot be read")
	}
	base := cfg.BaseURL
	if base == "" {
		base = forges.DefaultBaseURL(c.Resource.Kind)
	}
	p, err := forges.New(forge.Config{Kind: c.Resource.Kind, BaseURL: base, Token: c.Secret, HTTP: s.Outbound.HTTPClient(forgeMaxResponse)})
	if err != nil {
		return nil, apperr.BadRequest("resource_id: %v", err)
	}
	user := cfg.Username
	if user == "" {
		user = forges.GitUser(c.Resource.Kind)
	}
	return &forge.Access{ResourceID: id, Kind: c.Resource.Kind, BaseURL: base, Provider: p, GitUser: user, Token: c.Secret}, nil
}
