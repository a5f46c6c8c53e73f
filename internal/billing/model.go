package billing

import (
	"time"
)

// CommunityPlan is the plan of an organization without a subscription.
const CommunityPlan = "community"

// Plan is a billing plan: what it costs and what it entitles. Every
// organization subscribed to it has its entitlements.
type BillingPlan struct {
	ID            string       `json:"id"`
	Name          string       `json:"name"`
	AmountCents   int64        `json:"amount_cents" doc:"The price in minor units of the currency"`
	Currency      string       `json:"currency" enum:"EUR,USD,GBP"`
	Interval      string       `json:"interval" enum:"month,year,one_time,custom"`
	Active        bool         `json:"active"`
	Public        bool         `json:"public"`
	IncludedSeats Value        `json:"included_seats" doc:"The plan's users.max: a whole number or \"unlimited\""`
	Entitlements  Entitlements `json:"entitlements" doc:"Feature key to value"`
	CreatedAt     time.Time    `json:"created_at"`
	UpdatedAt     time.Time    `json:"updated_at"`
}

// PlanUpdate changes a plan; absent fields stay.
type PlanUpdate struct {
	Name          *string      `json:"name,omitempty" minLength:"1" maxLength:"100"`
	AmountCents   *int64       `json:"amount_cents,omitempty" minimum:"0" maximum:"100000000"`
	Currency      *string      `json:"currency,omitempty" enum:"EUR,USD,GBP"`
	Interval      *string      `json:"interval,omitempty" enum:"month,year,one_time,custom"`
	Active        *bool        `json:"active,omitempty"`
	Public        *bool        `json:"public,omitempty"`
	IncludedSeats *Value       `json:"included_seats,omitempty" doc:"users.max: a non-negative whole number or \"unlimited\""`
	Entitlements  Entitlements `json:"entitlements,omitempty" doc:"Keys given replace the plan's; a null value removes one"`
}

// Override statuses. An expired grant stays active in the row and stops
// counting at its expiry; the board shows it as expired.
const (
	OverrideActive  = "active"
	OverrideRevoked = "revoked"
	OverrideExpired = "expired"
)

// Override is an entitlement grant above (or below) the plan: global, or
// for one workspace, one user, or one user in one workspace.
type Override struct {
	ID          string     `json:"id"`
	Feature     string     `json:"feature"`
	Value       Value      `json:"value"`
	Reason      string     `json:"reason"`
	WorkspaceID *string    `json:"workspace_id" nullable:"true"`
	UserID      *string    `json:"user_id" nullable:"true"`
	Scope       string     `json:"scope" enum:"global,workspace,user,user_in_workspace"`
	ExpiresAt   *time.Time `json:"expires_at" nullable:"true"`
	Status      string     `json:"status" enum:"active,revoked,expired"`
	CreatedBy   *string    `json:"created_by" nullable:"true"`
	CreatedAt   time.Time  `json:"created_at"`
	RevokedAt   *time.Time `json:"revoked_at" nullable:"true"`
	RevokedBy   *string    `json:"revoked_by" nullable:"true"`
}

// OverrideCreate grants an override.
type OverrideCreate struct {
	Feature     string     `json:"feature" minLength:"1" maxLength:"100" pattern:"^[a-z0-9_.]+$"`
	Value       Value      `json:"value"`
	Reason      string     `json:"reason" minLength:"1" maxLength:"500"`
	WorkspaceID string     `json:"workspace_id,omitempty" doc:"Only this workspace (its organization's counts, for organization features)"`
	UserID      string     `json:"user_id,omitempty" doc:"Only when this user acts"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty" doc:"Stops counting then"`
}

// scopeOf names an override's scope from what it is bound to.
func scopeOf(workspaceID, userID *string) string {
	switch {
	case workspaceID != nil && userID != nil:
		return "user_in_workspace"
	case userID != nil:
		return "user"
	case workspaceID != nil:
		return "workspace"
	}
	return "global"
}

// specificity orders scopes: a more specific override wins.
func specificity(scope string) int {
	switch scope {
	case "user_in_workspace":
		return 3
	case "user":
		return 2
	case "workspace":
		return 1
	}
	return 0
}
