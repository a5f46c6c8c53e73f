// Package resources holds a workspace's typed connections (a database, an
// API, a mail server, a bot): each a kind, a config validated against the
// kind's JSON Schema and at most one secret kept in the vault. Responses
// say has_secret, never the secret; the secret leaves the vault only into
// a run that uses the resource and into the server-side connection test.
package resources

import (
	"encoding/json"
	"time"
)

// Resource is a resource as the API shows it.
type Resource struct {
	ID                string          `json:"id" format:"uuid"`
	Name              string          `json:"name"`
	Kind              string          `json:"kind"`
	Description       string          `json:"description"`
	Config            json.RawMessage `json:"config" doc:"The kind's config (GET /api/resource-kinds has its JSON Schema); never a secret"`
	HasSecret         bool            `json:"has_secret" doc:"A secret is stored in the vault; it is never returned"`
	RLSManaged        bool            `json:"rls_managed" doc:"postgresql: Slipway provisions a role and schema with row-level security for the workspace"`
	MaxConcurrentUses *int64          `json:"max_concurrent_uses" nullable:"true" doc:"Runs that may use the resource at once; null: unlimited"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	SecretUpdatedAt   *time.Time      `json:"secret_updated_at" nullable:"true" doc:"When the secret was last set; null without one"`

	secretRef string
}

// ResourceCreate creates a resource.
type ResourceCreate struct {
	Name        string         `json:"name" minLength:"1" maxLength:"100"`
	Kind        string         `json:"kind" doc:"One of GET /api/resource-kinds"`
	Description string         `json:"description,omitempty" maxLength:"2000"`
	Config      map[string]any `json:"config" doc:"The kind's config"`
	Secret      *string        `json:"secret,omitempty" maxLength:"65536" doc:"The password, token or key; stored in the vault, never returned"`
	RLSManaged  bool           `json:"rls_managed,omitempty" doc:"postgresql only"`
}

// ResourceUpdate changes a resource; an absent field is left as it is. The
// config, when given, replaces the old one whole. secret: absent leaves it,
// "" clears it, a value overwrites it. Changing where the secret is sent
// (a host, a URL) of a resource that has one requires sending the secret
// again.
type ResourceUpdate struct {
	Name        *string        `json:"name,omitempty" minLength:"1" maxLength:"100"`
	Description *string        `json:"description,omitempty" maxLength:"2000"`
	Config      map[string]any `json:"config,omitempty"`
	Secret      *string        `json:"secret,omitempty" maxLength:"65536"`
	RLSManaged  *bool          `json:"rls_managed,omitempty"`
}

// ResourceConcurrency sets max_concurrent_uses.
type ResourceConcurrency struct {
	MaxConcurrentUses *int64 `json:"max_concurrent_uses" required:"true" nullable:"true" minimum:"1" maximum:"100000" doc:"null: unlimited"`
}

// ResourceTest answers a connection test.
type ResourceTest struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// ResourceUsage is what uses a resource.
type ResourceUsage struct {
	ResourceID        string                `json:"resource_id" format:"uuid"`
	Name              string                `json:"name"`
	Kind              string                `json:"kind"`
	Workflows         []ResourceWorkflowUse `json:"workflows" doc:"Workflows with a node that names the resource"`
	Profiles          []ResourceProfileUse  `json:"profiles" doc:"Agent profiles whose llm runs use the resource (openai_compatible)"`
	MaxConcurrentUses *int64                `json:"max_concurrent_uses" nullable:"true"`
}

// ResourceProfileUse is one agent profile that names a resource.
type ResourceProfileUse struct {
	ProfileID string `json:"profile_id" format:"uuid"`
	Name      string `json:"name"`
}

// ResourceWorkflowUse is one workflow that names a resource.
type ResourceWorkflowUse struct {
	WorkflowID string   `json:"workflow_id" format:"uuid"`
	Name       string   `json:"name"`
	NodeKeys   []string `json:"node_keys"`
}

// ResourceGuild is a Discord server the bot is in, with its text and
// announcement channels.
type ResourceGuild struct {
	GuildID   string            `json:"guild_id"`
	GuildName string            `json:"guild_name"`
	Channels  []ResourceChannel `json:"channels"`
}

// ResourceChannel is a Discord channel a bot can post to.
type ResourceChannel struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ResourceFolder is a folder of a WebDAV share.
type ResourceFolder struct {
	Name string `json:"name"`
	Path string `json:"path" doc:"From the share's root, as ?path= takes it"`
}

// RLSStatus is what row-level security provisioned for a postgresql
// resource with rls_managed: status "unprovisioned" with null fields when
// nothing was, "provisioned", or "failed" with the error.
type RLSStatus struct {
	ResourceID    string     `json:"resource_id" format:"uuid"`
	Status        string     `json:"status" enum:"unprovisioned,provisioned,failed"`
	RoleName      *string    `json:"role_name" nullable:"true" doc:"The workspace's role in the database"`
	SchemaName    *string    `json:"schema_name" nullable:"true" doc:"The workspace's own schema, owned by its role"`
	Policies      int64      `json:"policies" doc:"Tables of the shared schema with a policy for the workspace"`
	Error         *string    `json:"error" nullable:"true" doc:"Why the last refresh failed"`
	ProvisionedAt *time.Time `json:"provisioned_at" nullable:"true"`
	UpdatedAt     *time.Time `json:"updated_at" nullable:"true"`
}

// DBNamespace is a workspace's schema in a database resource.
type DBNamespace struct {
	Handle string `json:"handle" doc:"The resource's name"`
	Schema string `json:"schema"`
}
