// Package envvars holds a workspace's env vars: global ones, which every
// run of the workspace gets, and a project's, which win over a global one
// of the same key in that project's runs. A secret one keeps its value in
// the vault and shows it to nobody: the API answers "value": "" with
// is_secret true, and the value leaves the vault only into a run's
// environment (Resolve), where it joins the run's redaction set. A locked
// one is changed and deleted by workspace admins only.
package envvars

import "time"

// Scopes of an env var (the request's optional scope field).
const (
	ScopeGlobal  = "global"
	ScopeProject = "project"
)

// EnvVar is an env var as the API shows it: the spec's stored record,
// exactly its fields.
type EnvVar struct {
	ID             string    `json:"id" format:"uuid"`
	CreatedAt      time.Time `json:"created_at"`
	IsSecret       bool      `json:"is_secret" doc:"The value is kept in the vault and never returned (value is then \"\")"`
	Key            string    `json:"key"`
	Locked         bool      `json:"locked" doc:"Only a workspace owner or admin may change or delete it"`
	OrganizationID string    `json:"organization_id" format:"uuid"`
	ProjectID      *string   `json:"project_id" format:"uuid" nullable:"true" doc:"The project whose runs get it; null: every run of the workspace (global)"`
	WorkspaceID    string    `json:"workspace_id" format:"uuid"`
	Value          string    `json:"value" doc:"The value; always \"\" for a secret"`

	secretRef string
}

// EnvVarSave creates or updates the env var of its key in its scope (the
// workspace, or one project of it). On an update an absent field keeps what
// is stored.
type EnvVarSave struct {
	Key   string  `json:"key" minLength:"1" maxLength:"128" doc:"A letter or _, then letters, digits or _ (at most 128); names starting SLIPWAY_ are reserved"`
	Value *string `json:"value,omitempty" maxLength:"65536" doc:"At most 64 KiB; no control characters but newline, carriage return and tab. Required for a new env var, and to make a secret one plain; absent on an update keeps the stored value (a secret one's included)"`
	// Absent: as stored (a new one is not secret). false→true moves the
	// stored value into the vault; true→false needs a value.
	IsSecret    *bool   `json:"is_secret,omitempty" doc:"Keep the value in the vault, never returned; absent: as stored (false for a new one)"`
	ProjectID   *string `json:"project_id,omitempty" format:"uuid" nullable:"true" doc:"A project of the active workspace: the env var is that project's; absent or null: global"`
	WorkspaceID string  `json:"workspace_id,omitempty" format:"uuid" doc:"Optional: must be the active workspace"`
	Scope       string  `json:"scope,omitempty" enum:"global,project" doc:"Optional: global (no project_id) or project (with project_id); must agree with project_id"`
	Locked      *bool   `json:"locked,omitempty" doc:"Workspace owners and admins only: only they may change or delete a locked env var; absent: as stored"`
}
