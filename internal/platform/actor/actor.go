// Package actor carries who is acting in a request: the authenticated user
// and, for workspace-scoped operations, the active workspace. Authentication
// and workspace resolution fill it in; services read it. It knows nothing
// about how either was established.
package actor

import (
	"context"
	"time"

	"slipway/internal/platform/apperr"
)

// Method says how the user authenticated.
type Method string

const (
	Cookie Method = "cookie"
	Bearer Method = "bearer"
)

// User is the authenticated caller.
type User struct {
	ID          string
	Email       string
	DisplayName string
	Approved    bool
	Admin       bool // is_admin flag or a system_admin role row
	Verbosity   *string
	// EmailVerified: the address answered a verification mail.
	EmailVerified bool
	// TwoFactor: two-factor sign-in (TOTP) is on (read with cookie sessions).
	TwoFactor bool
	CreatedAt time.Time
	// DefaultWorkspaceID is the user's default joined workspace, "" if none.
	DefaultWorkspaceID string
	Method             Method
	SessionID          string // for cookie sessions
}

// Workspace is the active workspace of a workspace-scoped request.
type Workspace struct {
	ID             string
	OrganizationID string
	Role           string // owner, admin or member
}

type ctxKey int

const (
	userKey ctxKey = iota
	workspaceKey
	appTokenKey
)

// WithAppToken returns ctx carrying an App token (scwa_) the request
// presented: the apps service checks it against the app the request names.
func WithAppToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, appTokenKey, token)
}

// AppTokenFrom returns the App token the request presented, if any.
func AppTokenFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(appTokenKey).(string)
	return t, ok && t != ""
}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey, u)
}

// UserFrom returns the authenticated user, if any.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey).(*User)
	return u, ok && u != nil
}

// RequireUser returns the authenticated user or 401.
func RequireUser(ctx context.Context) (*User, error) {
	if u, ok := UserFrom(ctx); ok {
		return u, nil
	}
	return nil, apperr.New(apperr.CodeUnauthorized, "authentication required")
}

// RequireApproved returns the approved user, 401 without one, 403 while
// approval is pending.
func RequireApproved(ctx context.Context) (*User, error) {
	u, err := RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	if !u.Approved {
		return nil, ErrApprovalPending
	}
	return u, nil
}

// RequireAdmin returns the approved instance admin, or 401/403. Admin
// handlers call it themselves even though the /api/admin layer checks too.
func RequireAdmin(ctx context.Context) (*User, error) {
	u, err := RequireApproved(ctx)
	if err != nil {
		return nil, err
	}
	if !u.Admin {
		return nil, apperr.New(apperr.CodeForbidden, "instance admin only")
	}
	return u, nil
}

// ErrApprovalPending is the approval gate's answer.
var ErrApprovalPending = apperr.New(apperr.CodeForbidden, "your account is waiting for approval by an instance admin")

// WithWorkspace returns ctx carrying the active workspace.
func WithWorkspace(ctx context.Context, w *Workspace) context.Context {
	return context.WithValue(ctx, workspaceKey, w)
}

// WorkspaceFrom returns the active workspace. Workspace-scoped operations
// always have one (their middleware refuses the request otherwise).
func WorkspaceFrom(ctx context.Context) (*Workspace, error) {
	if w, ok := ctx.Value(workspaceKey).(*Workspace); ok && w != nil {
		return w, nil
	}
	return nil, apperr.New(apperr.CodeInternal, "no active workspace resolved for a workspace-scoped operation")
}
