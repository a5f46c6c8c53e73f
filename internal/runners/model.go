// Package runners is the hub's side of remote runners: an organization's
// runners with their grants (which workspaces and labels they serve), their
// credentials (static scrn_ tokens kept as hashes, or single-use enrollment
// tokens redeemed for short-lived scrnj_ JWTs), heartbeats and the live
// signals dispatch reads (who is eligible for what), the sweep that takes
// stale runners offline, the organization's runner endpoints, and the
// versioned runner API: the worker port over HTTPS (its wire types are
// package runnerapi's). The program a runner runs is package runner.
package runners

import "time"

// Runner classes: how a runner authenticates. A class never changes.
const (
	ClassStatic   = "static"   // a static scrn_ token
	ClassEnrolled = "enrolled" // enrolled with a single-use token; scrnj_ JWTs
)

// Runner statuses as the API shows them.
const (
	StatusOnline   = "online"
	StatusOffline  = "offline"
	StatusDraining = "draining"
	StatusDisabled = "disabled"
)

// Runner as the organization's members see it, with its live dispatch
// signals.
type Runner struct {
	ID                  string     `json:"id" format:"uuid"`
	OrganizationID      string     `json:"organization_id" format:"uuid"`
	Name                string     `json:"name"`
	Class               string     `json:"class" enum:"static,enrolled" doc:"How the runner authenticates; never changes"`
	Status              string     `json:"status" enum:"online,offline,draining,disabled" doc:"disabled and draining win over online and offline"`
	Online              bool       `json:"online" doc:"Heartbeat within the stale window"`
	Draining            bool       `json:"draining" doc:"Finishes its running work and takes no new work"`
	Disabled            bool       `json:"disabled" doc:"Takes no new work until enabled"`
	Eligible            bool       `json:"eligible" doc:"Online, enabled, undrained, healthy and fresh: it receives new work it matches (when hub mode is on)"`
	Healthy             bool       `json:"healthy" doc:"Its execution backend could run work at its last heartbeat"`
	HealthError         string     `json:"health_error" doc:"Why its execution backend cannot run work (no container engine, …); empty while healthy"`
	Labels              []string   `json:"labels" doc:"Labels the runner advertises (SERVICE_RUNNER_LABELS)"`
	AllowedWorkspaceIDs []string   `json:"allowed_workspace_ids" doc:"Workspaces whose work it may take; empty: every workspace of the organization"`
	AllowedLabels       []string   `json:"allowed_labels" doc:"Labels it may serve; empty: any it advertises"`
	Slots               int        `json:"slots" doc:"Work it runs at once"`
	Running             int        `json:"running" doc:"Work it runs now"`
	LastHeartbeatAt     *time.Time `json:"last_heartbeat_at" nullable:"true"`
	Version             string     `json:"version"`
	Backend             string     `json:"backend" doc:"Execution backend (docker, ssh-docker, raw-ssh-exec, microvm)"`
	Hostname            string     `json:"hostname"`
	CreatedAt           time.Time  `json:"created_at"`
}

// Grant is what an organization admin lets a runner serve.
type Grant struct {
	AllowedWorkspaceIDs []string `json:"allowed_workspace_ids,omitempty" maxItems:"500" doc:"Workspaces of the organization; empty: all"`
	AllowedLabels       []string `json:"allowed_labels,omitempty" maxItems:"50" doc:"Labels the runner may serve; empty: any"`
}

// RunnerCreate creates a runner with a static token.
type RunnerCreate struct {
	Name string `json:"name" maxLength:"100"`
	Grant
}

// CreatedRunner is a new runner with its token, shown once.
type CreatedRunner struct {
	Runner *Runner `json:"runner"`
	Token  string  `json:"token" doc:"The static scrn_ token; shown once, only its hash is kept"`
}

// RunnerPatch renames or re-scopes a runner; absent fields stay.
type RunnerPatch struct {
	Name                *string   `json:"name,omitempty" maxLength:"100"`
	AllowedWorkspaceIDs *[]string `json:"allowed_workspace_ids,omitempty" maxItems:"500"`
	AllowedLabels       *[]string `json:"allowed_labels,omitempty" maxItems:"50"`
	Class               *string   `json:"class,omitempty" doc:"Refused unless it is the runner's class: a class never changes"`
}

// EnrollmentCreate mints a single-use enrollment token.
type EnrollmentCreate struct {
	Name string `json:"name,omitempty" maxLength:"100" doc:"Name of the runner it enrols; default: the runner's SERVICE_RUNNER_NAME"`
	Grant
	ExpiresInSecs int `json:"expires_in_secs,omitempty" minimum:"60" maximum:"604800" doc:"Default 3600"`
}

// Enrollment is a minted enrollment token.
type Enrollment struct {
	ID        string    `json:"id" format:"uuid"`
	Token     string    `json:"token" doc:"Single-use; shown once (SERVICE_RUNNER_ENROLLMENT_TOKEN)"`
	RunnerID  *string   `json:"runner_id" nullable:"true" doc:"The runner it re-enrols (after rotate-token); null: a new runner"`
	ExpiresAt time.Time `json:"expires_at"`
}

// RotatedToken is a runner's new credential, shown once: a static token
// for a static runner, an enrollment token that re-enrols an enrolled one.
type RotatedToken struct {
	Token     string     `json:"token"`
	Kind      string     `json:"kind" enum:"static,enrollment"`
	ExpiresAt *time.Time `json:"expires_at" nullable:"true" doc:"When an enrollment token expires; null for a static token"`
}

// Onboarding says how far the organization is with runners.
type Onboarding struct {
	HubMode          bool   `json:"hub_mode" doc:"SERVICE_HUB_MODE: tasks are dispatched to runners"`
	FleetOnly        bool   `json:"fleet_only" doc:"SERVICE_AGENT_EXECUTION=fleet_only: no fallback to the server"`
	Runners          int    `json:"runners"`
	Online           int    `json:"online"`
	Eligible         int    `json:"eligible"`
	PendingEnrolment int    `json:"pending_enrollments" doc:"Enrollment tokens not yet redeemed nor expired"`
	NextStep         string `json:"next_step" enum:"enable_hub_mode,create_runner,start_runner,enable_runner,done"`
}
