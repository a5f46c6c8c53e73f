// Package forges opens the provider of a forge kind: the one place that
// knows every forge package.
package forges

import (
	"fmt"

	"slipway/internal/forge"
	"slipway/internal/forge/gitea"
	"slipway/internal/forge/github"
	"slipway/internal/forge/gitlab"
)

// DefaultBaseURL is a kind's API root when its resource names none ("":
// the kind needs one).
func DefaultBaseURL(kind string) string {
	switch kind {
	case forge.GitHub:
		return "https://api.github.com"
	case forge.GitLab:
		return "https://gitlab.com"
	}
	return ""
}

// GitUser is the user name git sends with a kind's token over https.
func GitUser(kind string) string {
	if kind == forge.GitHub {
		return "x-access-token"
	}
	return "oauth2"
}

// New opens the provider of cfg.Kind.
func New(cfg forge.Config) (forge.Provider, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL(cfg.Kind)
	}
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("%w: a %s forge needs its address", forge.ErrInvalid, cfg.Kind)
	}
	switch cfg.Kind {
	case forge.GitHub:
		return github.New(cfg)
	case forge.GitLab:
		return gitlab.New(cfg)
	case forge.Gitea, forge.Forgejo:
		return gitea.New(cfg)
	}
	return nil, fmt.Errorf("%w: unknown forge %q", forge.ErrInvalid, cfg.Kind)
}

// Reader is the webhook reader of a kind (nil: none).
func Reader(kind string) forge.ReadWebhook {
	switch kind {
	case forge.GitHub:
		return github.ReadWebhook
	case forge.GitLab:
		return gitlab.ReadWebhook
	case forge.Gitea, forge.Forgejo:
		return gitea.ReadWebhook
	}
	return nil
}

// Is reports whether kind is a forge's.
func Is(kind string) bool {
	for _, k := range forge.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}
