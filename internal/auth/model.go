// Package auth holds accounts, passwords, sessions, the login lockout, CSRF
// and the approval gate. Organizations and workspaces live in tenancy; auth
// reaches them only through the Tenancy interface.
package auth

import (
	"time"

	"slipway/internal/platform/actor"
)

// Verbosity levels of the live feed a user may choose as default.
var Verbosities = []string{"quiet", "normal", "verbose"}

// Profile is the account as the API shows it.
type Profile struct {
	ID          string    `json:"id" format:"uuid"`
	Email       string    `json:"email" format:"email"`
	DisplayName string    `json:"display_name"`
	Approved    bool      `json:"approved" doc:"False until an instance admin approves the account"`
	IsAdmin     bool      `json:"is_admin" doc:"Instance admin (flag set at creation, or a system_admin role)"`
	Verbosity   *string   `json:"verbosity" enum:"quiet,normal,verbose" nullable:"true" doc:"Default live-feed verbosity; null when unset"`
	CreatedAt   time.Time `json:"created_at"`
	// EmailVerified is set once the address answered a verification mail.
	EmailVerified bool `json:"email_verified" doc:"The address answered a verification mail"`
	TwoFactor     bool `json:"two_factor" doc:"Two-factor sign-in (TOTP) is on"`
}

// ProfileOf renders an authenticated user.
func ProfileOf(u *actor.User) Profile {
	return Profile{ID: u.ID, Email: u.Email, DisplayName: u.DisplayName, Approved: u.Approved, IsAdmin: u.Admin,
		Verbosity: u.Verbosity, CreatedAt: u.CreatedAt, EmailVerified: u.EmailVerified, TwoFactor: u.TwoFactor}
}

// user is a users row.
type user struct {
	ID                 string
	Email              string
	DisplayName        string
	PasswordHash       *string
	Approved           bool
	Admin              bool
	Verbosity          *string
	DefaultWorkspaceID *string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	EmailVerified      bool
	TOTPArmed          bool // two-factor sign-in is on
}

func (u *user) profile() Profile {
	return Profile{ID: u.ID, Email: u.Email, DisplayName: u.DisplayName, Approved: u.Approved, IsAdmin: u.Admin,
		Verbosity: u.Verbosity, CreatedAt: u.CreatedAt, EmailVerified: u.EmailVerified}
}

// Session is a newly issued browser session. Token and CSRF go into cookies
// once and are never stored or logged.
type Session struct {
	ID        string
	Token     string
	CSRF      string
	ExpiresAt time.Time
}

// LoginResult is what a successful password check yields.
type LoginResult struct {
	Profile Profile
	Session Session
	// TOTPRequired: the password was right and 2FA is armed; Interim goes
	// to POST /api/auth/2fa/verify with a code (no session yet).
	TOTPRequired bool
	Interim      string
}
