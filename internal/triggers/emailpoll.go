package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"slipway/internal/mailbox"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/workflows"
)

// The mail poller. Each mailbox with an enabled email trigger has one
// poller across the replicas: the one holding its lease (email_mailboxes'
// holder and held_until, renewed while it polls, taken over when it
// lapses). A poller signs in, reads the folder's new messages (UID above
// the last handled, under the same UIDVALIDITY), and for each one, in one
// transaction, records it (once: a second replica's attempt finds it
// recorded and starts nothing) and starts a run per trigger it goes to,
// with the message's attachments as the run's files. A message no trigger
// takes is first moved to the unrouted folder, then recorded. Between
// rounds it waits with IMAP IDLE.

// Poller timing; vars so tests may shorten them (before servers start).
var (
	MailScanEvery  = 2 * time.Second  // how often the mailboxes to poll are looked up
	MailIdle       = 10 * time.Second // the longest IDLE before the lease is renewed
	MailRetryAfter = 5 * time.Second  // after a failed round
)

// DefaultMailLease is a poller's lease on its mailbox.
const DefaultMailLease = 30 * time.Second

// SetMailLease changes this replica's poller lease (tests make it lapse
// at once, so that every replica polls every mailbox: each message must
// still start its runs once).
func (s *Service) SetMailLease(d time.Duration) { s.mailLease.Store(int64(d)) }

func (s *Service) lease() time.Duration {
	if d := s.mailLease.Load(); d > 0 {
		return time.Duration(d)
	}
	return DefaultMailLease
}

const mailBatch = 50

// RunMail keeps one poller per mailbox with an enabled email trigger
// (when this replica holds its lease) until ctx ends.
func (s *Service) RunMail(ctx context.Context) {
	if s.mail == nil {
		return
	}
	pollers := map[mailboxRef]context.CancelFunc{}
	done := make(chan mailboxRef, 16)
	t := time.NewTicker(MailScanEvery)
	defer t.Stop()
	for {
		boxes, err := activeMailboxes(ctx, s.db)
		if err != nil && ctx.Err() == nil {
			s.log.Error("listing the mailboxes to poll failed", "err", err)
		}
		active := map[mailboxRef]bool{}
		for _, m := range boxes {
			active[m] = true
			if _, ok := pollers[m]; !ok {
				pctx, cancel := context.WithCancel(ctx)
				pollers[m] = cancel
				go func() {
					s.pollMailbox(pctx, m)
					done <- m
				}()
			}
		}
		for m, cancel := range pollers {
			if !active[m] {
				cancel()
			}
		}
		select {
		case <-ctx.Done():
			for _, cancel := range pollers {
				cancel()
			}
			for range pollers {
				<-done
			}
			return
		case m := <-done:
			delete(pollers, m)
		case <-t.C:
		}
	}
}

// pollMailbox polls one mailbox while this replica holds its lease; it
// waits for the lease while another replica holds it.
func (s *Service) pollMailbox(ctx context.Context, m mailboxRef) {
	defer func() {
		_ = releaseMailbox(context.WithoutCancel(ctx), s.db.W, m, s.holder)
	}()
	for ctx.Err() == nil {
		held, err := s.hold(ctx, m)
		if err != nil && ctx.Err() == nil {
			s.log.Error("holding a mailbox's lease failed", "resource_id", m.resourceID, "err", err)
		}
		if held {
			err = s.pollSession(ctx, m)
			if ctx.Err() != nil {
				return
			}
			failure := ""
			if err != nil && !errors.Is(err, errLeaseLost) {
				failure = err.Error()
				s.log.Warn("polling a mailbox failed", "resource_id", m.resourceID, "err", err)
			}
			_ = polled(ctx, s.db.W, m, s.clock.Now().UTC(), failure)
		}
		select { // after a failed round, or to see whether the holder still holds
		case <-ctx.Done():
		case <-time.After(MailRetryAfter):
		}
	}
}

var errLeaseLost = errors.New("triggers: another replica holds the mailbox")

func (s *Service) hold(ctx context.Context, m mailboxRef) (bool, error) {
	now := s.clock.Now().UTC()
	return holdMailbox(ctx, s.db.W, m, s.holder, now, now.Add(s.lease()))
}

// pollSession signs in and polls until an error, the lease is lost or
// ctx ends.
func (s *Service) pollSession(ctx context.Context, m mailboxRef) error {
	info, err := s.mail.MailboxInfo(ctx, m.workspaceID, m.resourceID)
	if err != nil {
		return err
	}
	sess, err := s.mail.OpenMailbox(ctx, m.workspaceID, m.resourceID)
	if err != nil {
		return err
	}
	defer sess.Close()
	folder, err := sess.Select(ctx, info.Inbox)
	if err != nil {
		return err
	}
	s.log.Debug("polling a mailbox", "resource_id", m.resourceID, "folder", info.Inbox, "uid_validity", folder.UIDValidity)
	st, err := readMailbox(ctx, s.db.R, s.db, m)
	if err != nil {
		return err
	}
	if st.uidValidity != folder.UIDValidity {
		// A folder seen for the first time counts mail from the first
		// trigger's creation; one made anew (a new UIDVALIDITY: its UIDs
		// mean other messages now) from the last poll.
		since := st.since
		if st.uidValidity != 0 && st.polledAt != nil {
			since = *st.polledAt
		}
		if err := resetMailbox(ctx, s.db.W, m, folder.UIDValidity, since); err != nil {
			return err
		}
		st.uidValidity, st.lastUID, st.since = folder.UIDValidity, 0, since
	}
	for {
		uids, err := sess.Search(ctx, st.lastUID, st.since.AddDate(0, 0, -1), mailBatch)
		if err != nil {
			return err
		}
		for _, uid := range uids {
			if err := s.deliverMail(ctx, sess, m, info, st, uid); err != nil {
				return err
			}
			st.lastUID = uid
		}
		held, err := s.hold(ctx, m)
		if err != nil {
			return err
		}
		if !held {
			return errLeaseLost
		}
		if len(uids) == mailBatch {
			continue
		}
		if err := sess.Wait(ctx, MailIdle); err != nil {
			return err
		}
	}
}

// deliverMail handles one new message: runs of the triggers it goes to,
// or the unrouted folder.
func (s *Service) deliverMail(ctx context.Context, sess mailbox.Session, m mailboxRef, info *mailbox.Info, st *mailboxState, uid uint32) error {
	raw, err := sess.Fetch(ctx, uid, mailbox.MaxMessageBytes)
	if err != nil {
		return err
	}
	if raw == nil { // gone meanwhile
		return skipMessage(ctx, s.db.W, m, st.uidValidity, uid)
	}
	if !raw.InternalDate.IsZero() && raw.InternalDate.Before(st.since.Truncate(time.Second)) {
		s.log.Debug("mail older than the mailbox's start skipped", "resource_id", m.resourceID, "uid", uid, "arrived", raw.InternalDate)
		return skipMessage(ctx, s.db.W, m, st.uidValidity, uid)
	}
	e, files := mailbox.Read(raw)
	var aliases []string
	for _, r := range append(append(append([]string{}, e.To...), e.Cc...), e.Headers["delivered-to"], e.Headers["x-original-to"]) {
		if a, ok := mailbox.AliasOf(info.Address, r); ok {
			aliases = append(aliases, a)
		}
	}
	targets, err := mailTargets(ctx, s.db.R, s.db, m, aliases)
	if err != nil {
		return err
	}
	now := s.clock.Now().UTC()
	if len(targets) == 0 {
		// Moved first, recorded then: a crash between leaves the message
		// in the unrouted folder, not in the inbox (it is not there to
		// be moved twice).
		if err := sess.Move(ctx, uid, info.Unrouted); err != nil {
			if ctx.Err() != nil || sess.Closed() {
				return err // tried again with the next session
			}
			// The server refuses this one move (a full quota, a folder it
			// will not make): the message stays in the inbox, handled, so
			// that it does not hold up the mail behind it.
			s.log.Warn("an unrouted message could not be moved; it stays in the inbox", "resource_id", m.resourceID, "uid", uid, "err", err)
		}
		return s.db.Tx(ctx, func(tx *db.Tx) error {
			_, err := handleMessage(ctx, tx, m, st.uidValidity, uid, e.MessageID, "unrouted", 0, now)
			return err
		})
	}
	input := e.JSON()
	runFiles := make([]workflows.RunFile, len(files))
	for i, f := range files {
		runFiles[i] = workflows.RunFile{Path: f.Path, Content: f.Content}
	}
	started := 0
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		first, err := handleMessage(ctx, tx, m, st.uidValidity, uid, e.MessageID, "routed", len(targets), now)
		if err != nil || !first {
			return err
		}
		for _, t := range targets {
			alias := t.Config.Alias
			trigger, err := json.Marshal(map[string]any{"kind": t.Kind, "trigger_id": t.ID, "resource_id": m.resourceID, "mailbox": info.Inbox,
				"uid_validity": st.uidValidity, "uid": uid, "alias": alias, "message_id": e.MessageID, "body": json.RawMessage(input)})
			if err != nil {
				return err
			}
			run, err := s.workflows.StartRunTx(ctx, tx, m.workspaceID, t.createdBy, t.WorkflowID, input, trigger)
			if e, ok := apperr.As(err); ok {
				// The workflow went, or will not start this run: the
				// message is not retried for it.
				s.log.Warn("mail not delivered to a trigger", "trigger_id", t.ID, "uid", uid, "err", e.Message)
				continue
			}
			if err != nil {
				return err
			}
			if err := s.workflows.AddRunFilesTx(ctx, tx, &actor.Workspace{ID: m.workspaceID}, run.ID, runFiles); err != nil {
				return err
			}
			started++
		}
		return nil
	})
	if err == nil && started > 0 {
		s.log.Debug("mail delivered", "resource_id", m.resourceID, "uid", uid, "runs", started)
	}
	return err
}
