// Package marketplace is the catalog: sources of items (the official one,
// a workspace's own, a Git repository's), items with semver versions
// whose manifests record every file's digest and the capabilities they
// declare, the instance admins' review gate, and installs that make a
// version's objects in a workspace, pinned to its digest, updated with a
// preview of the code and capability changes, and kept up to date
// automatically while the capabilities do not grow.
package marketplace

import (
	"encoding/json"
	"time"
)

// Source kinds and statuses.
const (
	SourceOfficial  = "official"
	SourceGit       = "git"
	SourceWorkspace = "workspace"

	StatusEnabled   = "enabled"
	StatusDisabled  = "disabled"
	StatusSyncError = "sync_error"
)

// Item kinds.
const (
	KindBundle = "bundle"
	KindNode   = "node"
	KindScript = "script"
	KindApp    = "app"
)

// Bounds.
const (
	MaxSourcesPerWorkspace = 20
	MaxGrants              = 100
	MaxItemsPerWorkspace   = 500
	MaxVersionsPerItem     = 200
	MaxChangelog           = 20000
	MaxSummary             = 500
	MaxTags                = 10
	DefaultLimit           = 50
	MaxLimit               = 200
)

// MarketSource is a catalog source.
type MarketSource struct {
	ID          string     `json:"id" format:"uuid"`
	Kind        string     `json:"kind" enum:"official,git,workspace"`
	Name        string     `json:"name"`
	WorkspaceID *string    `json:"workspace_id" nullable:"true" format:"uuid" doc:"The owner; null for the official source"`
	URL         *string    `json:"url" nullable:"true" doc:"git: the repository"`
	Branch      *string    `json:"branch" nullable:"true" doc:"git: the branch read"`
	Grants      []string   `json:"grants" doc:"workspace: the workspaces (ids) that see and may install its items"`
	Status      string     `json:"status" enum:"enabled,disabled,sync_error"`
	LastError   *string    `json:"last_error" nullable:"true" doc:"sync_error: why the last sync failed"`
	SyncedAt    *time.Time `json:"synced_at" nullable:"true"`
	Items       int        `json:"items" doc:"Items it lists"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// SourceCreate adds a source to the active workspace.
type SourceCreate struct {
	Kind   string   `json:"kind" enum:"git,workspace" doc:"workspace: the workspace's own published items, granted to the workspaces named; git: a repository of published items"`
	Name   string   `json:"name" minLength:"1" maxLength:"100"`
	URL    string   `json:"url,omitempty" maxLength:"2048" doc:"git: the repository"`
	Branch string   `json:"branch,omitempty" maxLength:"200" doc:"git: default main"`
	Grants []string `json:"grants,omitempty" maxItems:"100" doc:"workspace: workspace ids that see its items"`
}

// SourcePatch changes a source; absent fields stay.
type SourcePatch struct {
	Name   *string   `json:"name,omitempty" minLength:"1" maxLength:"100"`
	Status *string   `json:"status,omitempty" enum:"enabled,disabled"`
	Grants *[]string `json:"grants,omitempty" maxItems:"100"`
}

// MarketItem is a catalog item.
type MarketItem struct {
	ID            string    `json:"id" format:"uuid"`
	SourceID      string    `json:"source_id" format:"uuid"`
	Kind          string    `json:"kind" enum:"bundle,node,script,app"`
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	Summary       string    `json:"summary"`
	Tags          []string  `json:"tags"`
	Paid          bool      `json:"paid"`
	Price         *Price    `json:"price,omitempty" required:"false" doc:"A paid item's price (absent when free)"`
	Verified      bool      `json:"verified" doc:"Approved by the instance's review: installable across the instance"`
	Listed        bool      `json:"listed" doc:"False after a takedown"`
	LatestVersion string    `json:"latest_version"`
	RatingCount   int64     `json:"rating_count"`
	RatingAverage *float64  `json:"rating_average" nullable:"true"`
	Mine          bool      `json:"mine" doc:"Published by the active workspace"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`

	workspaceID *string
	sellerID    *string
	review      *string
	reason      *string
	reviewedAt  *time.Time
}

// MarketItemPage is a page of items.
type MarketItemPage struct {
	Items []MarketItem `json:"items"`
	Total int          `json:"total"`
}

// ItemVersion is one published version of an item.
type ItemVersion struct {
	ID           string       `json:"id" format:"uuid"`
	ItemID       string       `json:"item_id" format:"uuid"`
	Version      string       `json:"version"`
	Changelog    string       `json:"changelog"`
	Digest       string       `json:"digest" doc:"sha256: of the manifest, which holds every file's digest"`
	Withdrawn    bool         `json:"withdrawn" doc:"A takedown withdrew it: it cannot be installed"`
	Objects      []Object     `json:"objects"`
	Files        []FileEntry  `json:"files"`
	Capabilities Capabilities `json:"capabilities"`
	Needs        []Need       `json:"needs" doc:"bundle: what its workflows read, bound by the installer"`
	CreatedAt    time.Time    `json:"created_at"`

	manifest VersionManifest
}

// ItemVerdict is an item's latest review verdict as anyone may see it: the
// verdict, its reason and when (not who).
type ItemVerdict struct {
	Verdict   string    `json:"verdict" enum:"approved,rejected"`
	Reason    *string   `json:"reason" nullable:"true"`
	DecidedAt time.Time `json:"decided_at"`
}

// Price is a paid item's price: integer minor units of a currency, once or
// every month.
type Price struct {
	AmountMinor int64  `json:"amount_minor" minimum:"1" maximum:"100000000" doc:"Integer minor units (cents): 1 to 100,000,000"`
	Currency    string `json:"currency" pattern:"^[A-Z]{3}$" doc:"ISO 4217, as EUR"`
	Interval    string `json:"interval" enum:"once,month" doc:"once: bought for good; month: a subscription"`
}

// Listing is what every publish says of the item and its new version.
type Listing struct {
	Slug         string       `json:"slug,omitempty" maxLength:"63" doc:"The item's slug (default the published object's)"`
	Name         string       `json:"name,omitempty" maxLength:"200" doc:"Default the published object's"`
	Summary      string       `json:"summary,omitempty" maxLength:"500"`
	Tags         []string     `json:"tags,omitempty" maxItems:"10"`
	Version      string       `json:"version" maxLength:"50" doc:"Semver, as 1.2.0; higher than every published one"`
	Changelog    string       `json:"changelog" minLength:"1" maxLength:"20000"`
	Capabilities Capabilities `json:"capabilities,omitempty" doc:"What it may do: its hosts, the resource kinds and secrets it reads, node kinds it adds, runner labels it needs"`
	Price        *Price       `json:"price,omitempty" doc:"Sell it: the publisher's seller profile is paid for each license (an item once paid stays paid; a later price applies to new purchases)"`
}

// PublishScript publishes a script of the workspace as a version of an
// item (the item is made with the first version).
type PublishScript struct {
	ScriptID string `json:"script_id" format:"uuid"`
	Listing
}

// PublishNode publishes a node type of the workspace (with its script);
// the node kind it adds joins its capabilities.
type PublishNode struct {
	NodeTypeID string `json:"node_type_id" format:"uuid"`
	Listing
}

// NodeTypeContent is a node item's node type as an install makes it; its
// script is the version's object of that key.
type NodeTypeContent struct {
	Slug         string          `json:"slug"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Category     string          `json:"category"`
	ConfigSchema json.RawMessage `json:"config_schema"`
	Script       string          `json:"script" doc:"The key of its script among the version's objects"`
}

// Published answers a publish.
type Published struct {
	Item    MarketItem  `json:"item"`
	Version ItemVersion `json:"version"`
}

// MarketInstall is an item installed in a workspace.
type MarketInstall struct {
	ID          string            `json:"id" format:"uuid"`
	ItemID      string            `json:"item_id" format:"uuid"`
	ItemName    string            `json:"item_name"`
	Version     string            `json:"version"`
	Digest      string            `json:"digest" doc:"The installed version's digest"`
	Range       string            `json:"range" doc:"Semver range auto-update keeps within"`
	AutoUpdate  bool              `json:"auto_update"`
	HeldVersion *string           `json:"held_version" nullable:"true" doc:"A version auto-update did not apply: its capabilities grew (it waits for a person)"`
	HeldReason  *string           `json:"held_reason" nullable:"true"`
	Objects     map[string]string `json:"objects" doc:"What it made, by manifest key: the objects' ids"`
	ProjectID   *string           `json:"project_id" nullable:"true" format:"uuid" doc:"bundle: the project its workflows joined"`
	Bindings    map[string]string `json:"bindings" doc:"bundle: each need's key → the workspace's resource or app"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`

	workspaceID string
	installedBy *string
}

// InstallInput installs a version.
type InstallInput struct {
	Range     string            `json:"range,omitempty" maxLength:"100" doc:"Semver range for updates (default ^version)"`
	ProjectID string            `json:"project_id,omitempty" format:"uuid" doc:"bundle: the project its workflows join (required)"`
	Bindings  map[string]string `json:"bindings,omitempty" maxProperties:"50" doc:"bundle: each need's key → a resource (or app) of the workspace; every need is bound"`
}

// ObjectPlan is what an install or update does to one object.
type ObjectPlan struct {
	Key    string `json:"key"`
	Type   string `json:"type"`
	Name   string `json:"name"`
	Action string `json:"action" enum:"create,update,unchanged"`
}

// InstallPreview says what an install would do, without doing it.
type InstallPreview struct {
	Version      string       `json:"version"`
	Digest       string       `json:"digest"`
	Objects      []ObjectPlan `json:"objects"`
	Capabilities Capabilities `json:"capabilities"`
	Installed    *string      `json:"installed" nullable:"true" doc:"The version installed already, if any"`
	Needs        []Need       `json:"needs" doc:"bundle: what the installer binds"`
}

// FileDiff is how one file differs between two versions.
type FileDiff struct {
	Path   string `json:"path"`
	Status string `json:"status" enum:"added,removed,changed"`
	Patch  string `json:"patch" doc:"A unified diff of its lines (empty when too large to show)"`
}

// UpdatePreview says what updating an install would change: the code and
// the capabilities.
type UpdatePreview struct {
	From         string         `json:"from"`
	To           string         `json:"to"`
	Files        []FileDiff     `json:"files"`
	Capabilities CapabilityDiff `json:"capabilities"`
	Objects      []ObjectPlan   `json:"objects"`
	Needs        []Need         `json:"needs" doc:"bundle: what the new version reads"`
	Unbound      []string       `json:"unbound" doc:"bundle: needs the install has no binding for (the update must bind them)"`
}

// InstallUpdate updates an install.
type InstallUpdate struct {
	Version  string            `json:"version,omitempty" maxLength:"50" doc:"Default: the latest version within the install's range"`
	Bindings map[string]string `json:"bindings,omitempty" maxProperties:"50" doc:"bundle: bindings for needs the new version adds (or to change)"`
}

// AutoUpdateInput arms or disarms auto-update.
type AutoUpdateInput struct {
	Enabled bool   `json:"enabled"`
	Range   string `json:"range,omitempty" maxLength:"100" doc:"A new semver range (default: keep)"`
}

// ReviewInput is a review decision's optional reason.
type ReviewInput struct {
	Reason string `json:"reason,omitempty" maxLength:"2000"`
}

// ScriptContent is a script item's file: the script as an install makes it.
type ScriptContent struct {
	Slug        string  `json:"slug"`
	Name        string  `json:"name"`
	Language    string  `json:"language"`
	Description *string `json:"description,omitempty"`
	Source      string  `json:"source"`
}

func decodeStrings(raw string) []string {
	out := []string{}
	_ = json.Unmarshal([]byte(raw), &out)
	return out
}
