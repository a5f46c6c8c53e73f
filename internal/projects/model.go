// Package projects holds projects (a git repository bound to a workspace)
// and agent profiles (how an agent is run), both workspace-scoped.
package projects

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/text"
)

// ProviderLocal is a project whose pull requests exist only in Slipway
// (a branch pushed to its repository); the other providers are the forge
// kinds (forge.Kinds).
const ProviderLocal = "local"

// Project as the API shows it. Credentials are never returned: only whether
// there are some.
type Project struct {
	ID                string     `json:"id" format:"uuid"`
	WorkspaceID       string     `json:"workspace_id" format:"uuid"`
	Name              string     `json:"name"`
	RepoURL           string     `json:"repo_url"`
	DefaultBranch     string     `json:"default_branch"`
	Provider          string     `json:"provider" enum:"local,github,gitlab,gitea,forgejo"`
	ForgeResourceID   *string    `json:"forge_resource_id" nullable:"true" doc:"The forge resource the project reaches its forge with (null: local, or the resource was deleted)"`
	ForgeRepo         *string    `json:"forge_repo" nullable:"true" doc:"The repository on the forge (owner/name; GitLab: its path with groups)"`
	HasCredentials    bool       `json:"has_credentials"`
	AgentImage        string     `json:"agent_image" doc:"Container image for this project's agents; empty: the profile's or the instance default"`
	AgentProfile      string     `json:"agent_profile" doc:"The agent profile its tasks run with when they name none, the backlog's among them (empty: shell)"`
	Autodev           bool       `json:"autodev" doc:"Open the pull request automatically when a task succeeds"`
	MaxConcurrentRuns *int       `json:"max_concurrent_runs" nullable:"true" doc:"Per-project cap on running tasks, and separately on workflow runs in flight; null means unlimited"`
	ArchivedAt        *time.Time `json:"archived_at" nullable:"true"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// Credentials for the repository. They stay on the host side: git runs
// there, never inside an agent container.
type Credentials struct {
	Username      string `json:"username,omitempty" maxLength:"200"`
	Token         string `json:"token,omitempty" maxLength:"4096" doc:"Password or access token for https URLs"`
	SSHPrivateKey string `json:"ssh_private_key,omitempty" maxLength:"16384" doc:"PEM private key for ssh:// URLs"`
}

// Empty reports whether no credential is set.
func (c Credentials) Empty() bool { return c.Username == "" && c.Token == "" && c.SSHPrivateKey == "" }

// Secrets lists the values that must never appear in events or logs.
func (c Credentials) Secrets() []string {
	var out []string
	for _, s := range []string{c.Token, c.SSHPrivateKey} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

var branchPattern = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._/-]*$`)

// validBranch applies git's ref-name rules that matter here.
func validBranch(b string) error {
	if len(b) > 200 || !branchPattern.MatchString(b) || strings.Contains(b, "..") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".lock") || strings.Contains(b, "//") {
		return apperr.BadRequest("default_branch %q is not a valid branch name", b)
	}
	return nil
}

// validRepoURL accepts a local path, file://, https:// or ssh:// URL. A local
// repository must exist.
func validRepoURL(raw string) error {
	switch {
	case raw == "":
		return apperr.BadRequest("repo_url must not be empty")
	case len(raw) > 2048:
		return apperr.BadRequest("repo_url is too long")
	case strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "file://"):
		path := strings.TrimPrefix(raw, "file://")
		if !filepath.IsAbs(path) {
			return apperr.BadRequest("repo_url: a local repository needs an absolute path")
		}
		if !isGitRepo(path) {
			return apperr.BadRequest("repo_url: %s is not a git repository on this server", path)
		}
		return nil
	case strings.HasPrefix(raw, "https://") || strings.HasPrefix(raw, "ssh://"):
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Path == "" || u.Path == "/" {
			return apperr.BadRequest("repo_url is not a valid repository URL")
		}
		if u.User != nil {
			if _, hasPassword := u.User.Password(); hasPassword {
				return apperr.BadRequest("repo_url must not carry a password; use credentials, which are stored sealed")
			}
		}
		return nil
	}
	return apperr.BadRequest("repo_url must be an absolute local path, file://, https:// or ssh:// (for git@host:repo write ssh://git@host/repo)")
}

func isGitRepo(path string) bool {
	for _, marker := range []string{"HEAD", ".git/HEAD"} {
		if _, err := os.Stat(filepath.Join(path, marker)); err == nil {
			return true
		}
	}
	return false
}

func cleanName(raw string) (string, error) { return text.Name("name", raw, 100) }
