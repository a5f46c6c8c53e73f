package notifications

import (
	"context"
	"slices"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Mail settings: what of their notifications a person is also mailed.
const (
	MailOff       = "off"
	MailDecisions = "decisions" // what waits for their decision: approvals, gates, proposals
	MailAll       = "all"
)

// MaxMailsPerHour bounds the notifications mailed to one person an hour;
// past it they wait in the inbox only.
const MaxMailsPerHour = 20

// Decisions are the sources that wait for a person's decision.
var Decisions = []string{SourceApproval, SourceGate, SourceProposal}

// Settings are a person's notification settings.
type Settings struct {
	Mail string `json:"mail" enum:"off,decisions,all" doc:"Also mail notifications: off (default), decisions (approvals, gates, proposals) or all"`
}

// Settings reads the caller's notification settings.
func (s *Service) Settings(ctx context.Context, u *actor.User) (*Settings, error) {
	mode, err := mailSetting(ctx, s.db.R, u.ID)
	if err != nil {
		return nil, err
	}
	return &Settings{Mail: mode}, nil
}

// SaveSettings replaces the caller's notification settings.
func (s *Service) SaveSettings(ctx context.Context, u *actor.User, in Settings) (*Settings, error) {
	if !slices.Contains([]string{MailOff, MailDecisions, MailAll}, in.Mail) {
		return nil, apperr.BadRequest("mail must be off, decisions or all")
	}
	if err := s.db.Tx(ctx, func(tx *db.Tx) error {
		return saveMailSetting(ctx, tx, u.ID, in.Mail, s.clock.Now())
	}); err != nil {
		return nil, err
	}
	return &in, nil
}

// mail mails a new notification to its recipient when their settings ask
// for it and they are under the hourly bound, inside tx (so a notification
// is mailed once, with it).
func (s *Service) mail(ctx context.Context, tx *db.Tx, userID, id string, n Note, now time.Time) error {
	if s.mailer == nil {
		return nil
	}
	to, name, mode, err := mailTarget(ctx, tx, userID)
	if err != nil || to == "" {
		return err
	}
	if mode != MailAll && !(mode == MailDecisions && slices.Contains(Decisions, n.Source)) {
		return nil
	}
	sent, err := mailedSince(ctx, tx, userID, now.Add(-time.Hour))
	if err != nil || sent >= MaxMailsPerHour {
		return err
	}
	link := n.Link
	if link == "" {
		link = "/inbox/notifications"
	}
	if err := s.mailer.Queue(ctx, tx, to, "notification", map[string]string{"name": name, "title": n.Title, "body": n.Body,
		"link": s.publicURL + link}); err != nil {
		return err
	}
	return markMailed(ctx, tx, userID, id)
}
