package auth

import (
	"context"
	"errors"
	"slices"
	"strings"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// NormalizeEmail validates an address and returns its lower-case form.
func NormalizeEmail(raw string) (string, error) { return text.Email(raw) }

func cleanDisplayName(raw string) (string, error) { return text.Name("display_name", raw, 100) }

// RegisterInput is a signup.
type RegisterInput struct {
	Email       string
	Password    string
	DisplayName string
}

// Register creates an account unless the email exists. To not reveal which
// emails have accounts, both cases do the same hashing work and return the
// same result; an existing account is left untouched.
func (s *Service) Register(ctx context.Context, in RegisterInput) error {
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return err
	}
	name, err := cleanDisplayName(in.DisplayName)
	if err != nil {
		return err
	}
	if err := CheckPassword(in.Password, email); err != nil {
		return err
	}
	hash, err := HashPassword(in.Password, s.cfg.HashParams)
	if err != nil {
		return err
	}
	initial := slices.Contains(s.cfg.InitialAdminEmails, email)
	_, err = s.createUser(ctx, email, name, hash, initial, initial)
	if errors.Is(err, apperr.ErrConflict) {
		s.log.Info("registration for an existing email ignored")
		return nil
	}
	return err
}

// createUser inserts a user with their personal organization and workspace
// in one transaction. It returns apperr conflict if the email exists.
func (s *Service) createUser(ctx context.Context, email, name, hash string, approved, admin bool) (*user, error) {
	now := s.clock.Now()
	u := &user{ID: ids.New(), Email: email, DisplayName: name, PasswordHash: &hash, Approved: approved, Admin: admin,
		CreatedAt: now, UpdatedAt: now}
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		if _, err := userByEmail(ctx, tx, email); err == nil {
			return apperr.New(apperr.CodeConflict, "an account with this email exists")
		} else if !errors.Is(err, apperr.ErrNotFound) {
			return err
		}
		if err := insertUser(ctx, tx, u); err != nil {
			if s.db.Dialect.IsUniqueViolation(err) {
				return apperr.New(apperr.CodeConflict, "an account with this email exists")
			}
			return err
		}
		wsID, err := s.tenancy.ProvisionPersonal(ctx, tx, u.ID, name, now)
		if err != nil {
			return err
		}
		u.DefaultWorkspaceID = &wsID
		return setDefaultWorkspace(ctx, tx, u.ID, wsID)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// CreateUser bootstraps an approved account offline (slipway users create).
func (s *Service) CreateUser(ctx context.Context, in RegisterInput, admin bool) (Profile, error) {
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return Profile{}, err
	}
	if in.DisplayName == "" {
		in.DisplayName = email[:strings.IndexByte(email, '@')]
	}
	name, err := cleanDisplayName(in.DisplayName)
	if err != nil {
		return Profile{}, err
	}
	if err := CheckPassword(in.Password, email); err != nil {
		return Profile{}, err
	}
	hash, err := HashPassword(in.Password, s.cfg.HashParams)
	if err != nil {
		return Profile{}, err
	}
	u, err := s.createUser(ctx, email, name, hash, true, admin)
	if err != nil {
		return Profile{}, err
	}
	return u.profile(), nil
}

// UpdateProfile changes the display name and returns the refreshed profile.
func (s *Service) UpdateProfile(ctx context.Context, u *actor.User, displayName string) (Profile, error) {
	name, err := cleanDisplayName(displayName)
	if err != nil {
		return Profile{}, err
	}
	defer s.forgetUser(u.ID)
	if err := updateDisplayName(ctx, s.db.W, u.ID, name, s.clock.Now()); err != nil {
		return Profile{}, err
	}
	return s.Profile(ctx, u.ID)
}

// SetVerbosity sets (or, with nil, clears) the default live-feed verbosity.
func (s *Service) SetVerbosity(ctx context.Context, u *actor.User, v *string) (Profile, error) {
	if v != nil && !slices.Contains(Verbosities, *v) {
		return Profile{}, apperr.BadRequest("verbosity must be one of %s, or null to clear it", strings.Join(Verbosities, ", "))
	}
	defer s.forgetUser(u.ID)
	if err := updateVerbosity(ctx, s.db.W, u.ID, v, s.clock.Now()); err != nil {
		return Profile{}, err
	}
	return s.Profile(ctx, u.ID)
}

// Profile reads a user's current profile.
func (s *Service) Profile(ctx context.Context, userID string) (Profile, error) {
	u, err := userByID(ctx, s.db.R, userID)
	if err != nil {
		return Profile{}, err
	}
	return u.profile(), nil
}

// ErrWrongPassword answers a password change with a wrong current password.
var ErrWrongPassword = apperr.New(apperr.CodeForbidden, "current password is incorrect")

// ChangePassword replaces the password after checking the current one, and
// revokes every other session of the user. A wrong current password counts
// toward the account lockout like a failed sign-in.
func (s *Service) ChangePassword(ctx context.Context, u *actor.User, current, next, ip string) error {
	if err := CheckPassword(next, u.Email); err != nil {
		return err
	}
	now := s.clock.Now()
	keys := []string{accountKey(u.Email, ip), addressKey(ip)}
	// No captcha input here: a lock holds until it ends.
	if account, client, err := lockedUntil(ctx, s.db.R, now, keys[0], keys[1]); err != nil {
		return err
	} else if account != nil || client != nil {
		return ErrLocked
	}
	row, err := userByID(ctx, s.db.R, u.ID)
	if err != nil {
		return err
	}
	if row.PasswordHash == nil {
		return apperr.BadRequest("this account has no password (it signs in through an identity provider)")
	}
	ok, err := VerifyPassword(current, *row.PasswordHash)
	if err != nil {
		return err
	}
	if !ok {
		if err := recordFailure(ctx, s.db.W, keys[0], now, lockWindow, accountLimit, lockFor); err != nil {
			return err
		}
		return ErrWrongPassword
	}
	hash, err := HashPassword(next, s.cfg.HashParams)
	if err != nil {
		return err
	}
	defer s.forgetUser(u.ID)
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := updatePasswordHash(ctx, tx, u.ID, hash, now); err != nil {
			return err
		}
		_, err := revokeOtherSessions(ctx, tx, u.ID, u.SessionID, now)
		return err
	})
}

// ListUsers pages through accounts, oldest first.
func (s *Service) ListUsers(ctx context.Context, pendingOnly bool, limit, offset int) ([]Profile, int, error) {
	rows, total, err := listUsers(ctx, s.db.R, pendingOnly, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Profile, 0, len(rows))
	for _, u := range rows {
		out = append(out, u.profile())
	}
	return out, total, nil
}

// Approve sets approved=true; repeating it is harmless. An actual change
// writes an audit entry.
func (s *Service) Approve(ctx context.Context, admin *actor.User, userID string) (Profile, error) {
	defer s.forgetUser(userID)
	var p Profile
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		u, err := userByID(ctx, tx, userID)
		if err != nil {
			return err
		}
		before := u.profile()
		if u.Approved {
			p = before
			return nil
		}
		now := s.clock.Now()
		if err := approveUser(ctx, tx, userID, now); err != nil {
			return err
		}
		u.Approved = true
		p = u.profile()
		return audit.Record(ctx, tx, now, admin.ID, "user.approve", "user", userID, before, p)
	})
	return p, err
}

// ErrApprovedCannotBeRejected refuses rejecting an approved account.
var ErrApprovedCannotBeRejected = apperr.New(apperr.CodeConflict, "an approved account cannot be rejected")

// Reject hard-deletes an unapproved profile, with its sessions and its
// personal organization, and writes an audit entry. An approved account is
// refused.
func (s *Service) Reject(ctx context.Context, admin *actor.User, userID string) error {
	defer s.forgetUser(userID)
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		u, err := userByID(ctx, tx, userID)
		if err != nil {
			return err
		}
		if u.Approved {
			return ErrApprovedCannotBeRejected
		}
		if err := s.tenancy.RemovePersonal(ctx, tx, userID); err != nil {
			return err
		}
		if err := deleteUser(ctx, tx, userID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, s.clock.Now(), admin.ID, "user.reject", "user", userID, u.profile(), nil)
	})
}
