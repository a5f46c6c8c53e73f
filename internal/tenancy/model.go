// Package tenancy holds organizations, their members and roles, workspaces
// and workspace membership, and resolves the active workspace of a request.
package tenancy

import "time"

// Organization roles and workspace roles.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Organization as the caller sees it, with the caller's role.
type Organization struct {
	ID        string    `json:"id" format:"uuid"`
	Name      string    `json:"name"`
	Role      string    `json:"role" enum:"owner,admin,member" doc:"The caller's role in the organization"`
	CreatedAt time.Time `json:"created_at"`
}

// Member of an organization.
type Member struct {
	UserID      string    `json:"user_id" format:"uuid"`
	Email       string    `json:"email" format:"email"`
	DisplayName string    `json:"display_name"`
	Role        string    `json:"role" enum:"owner,admin,member"`
	JoinedAt    time.Time `json:"joined_at"`
}

// Summary of an organization.
type Summary struct {
	ID             string         `json:"id" format:"uuid"`
	Name           string         `json:"name"`
	Role           string         `json:"role" enum:"owner,admin,member" doc:"The caller's role"`
	MemberCount    int            `json:"member_count"`
	WorkspaceCount int            `json:"workspace_count"`
	MembersByRole  map[string]int `json:"members_by_role" doc:"owner, admin and member counts"`
}

// Workspace as the caller sees it.
type Workspace struct {
	ID               string    `json:"id" format:"uuid"`
	Name             string    `json:"name"`
	OrganizationID   string    `json:"organization_id" format:"uuid"`
	OrganizationName string    `json:"organization_name"`
	Role             string    `json:"role" doc:"The caller's workspace role (owner, admin or member); empty when the caller only manages it through the organization"`
	IsDefault        bool      `json:"is_default" doc:"The workspace used when a request has no X-Workspace-Id"`
	CreatedAt        time.Time `json:"created_at"`
}
