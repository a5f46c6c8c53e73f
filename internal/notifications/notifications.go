// Package notifications holds what needs a person: a tool approval or a
// human gate waiting on them, a proposal to review, a run of theirs that
// failed, a card that needs input. One row per recipient; the producers
// (other domains' reactions, listed in the composition root) say who. A
// new notification is hinted on the recipient's personal realtime topic,
// so the console's bell moves without a poll, and a repeated event
// (the same dedupe key) is the first notification of it, not a second.
package notifications

import (
	"context"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/realtime"
	"slipway/internal/platform/text"
)

// Sources: what a notification is about.
const (
	SourceApproval  = "approval"   // a tool approval of the recipient's task waits
	SourceGate      = "gate"       // a human gate of the recipient's workflow run waits
	SourceProposal  = "proposal"   // a proposal waits for a workspace admin
	SourceMention   = "mention"    // someone named the recipient
	SourceRunFailed = "run_failed" // a task or workflow run of the recipient's failed
	SourceInvite    = "invite"     // the recipient was invited to an organization
	SourceBacklog   = "backlog"    // a backlog card needs input
)

// Sources lists every source, in the order the facets show them.
var Sources = []string{SourceApproval, SourceGate, SourceProposal, SourceMention, SourceRunFailed, SourceInvite, SourceBacklog}

// Topic is the personal realtime topic of a user's notifications: a hint
// (the notification's id, or "" for many at once) whenever one is added,
// read or deleted.
const Topic = "notifications"

// Bounds: a user keeps at most MaxPerUser notifications (the oldest go
// first) and read ones for Retention.
const (
	MaxPerUser = 10000
	Retention  = 90 * 24 * time.Hour
	maxTitle   = 200
	maxBody    = 2000
)

// Notification is one thing that needs (or needed) a person.
type Notification struct {
	ID          string     `json:"id" format:"uuid"`
	WorkspaceID *string    `json:"workspace_id" nullable:"true" format:"uuid" doc:"null: about the account itself (an invite)"`
	Source      string     `json:"source" enum:"approval,gate,proposal,mention,run_failed,invite,backlog"`
	Title       string     `json:"title"`
	Body        string     `json:"body"`
	TargetKind  string     `json:"target_kind" doc:"What it is about: task, tool_approval, workflow_run, proposal, backlog_item, invite"`
	TargetID    string     `json:"target_id"`
	Link        string     `json:"link" doc:"The console path that shows it"`
	Read        bool       `json:"read"`
	ReadAt      *time.Time `json:"read_at" nullable:"true"`
	CreatedAt   time.Time  `json:"created_at"`
}

// Note is what a producer says: the notification each recipient gets.
type Note struct {
	WorkspaceID string // "": about the account itself
	Source      string
	Title, Body string
	TargetKind  string
	TargetID    string
	Link        string
	// Key collapses repeats: a recipient has at most one notification per
	// key (e.g. "run_failed:<run id>").
	Key string
}

// Page is GET /notifications: one page of the caller's notifications,
// the total that match, and counts by source and read state.
type Page struct {
	Items  []Notification `json:"items"`
	Total  int            `json:"total"`
	Facets Facets         `json:"facets"`
}

// Facets count the caller's notifications (in the active workspace and
// their own): by source, and unread.
type Facets struct {
	Source map[string]int `json:"source" doc:"Notifications per source (every source listed, 0 when none)"`
	Unread int            `json:"unread"`
}

// Query filters GET /notifications.
type Query struct {
	Source string `query:"source" enum:"approval,gate,proposal,mention,run_failed,invite,backlog" doc:"Only this source"`
	Unread bool   `query:"unread" doc:"Only unread ones"`
	Limit  int    `query:"limit" minimum:"0" maximum:"200" doc:"Page size (default 50, at most 200)"`
	Offset int    `query:"offset" minimum:"0" maximum:"100000"`
}

// Deps are what the service needs.
type Deps struct {
	DB    *db.DB
	Clock clock.Clock
	Hub   *realtime.Hub // nil: nothing is live
	// Mailer mails notifications to the people who asked for it (nil:
	// none are); PublicURL makes their links absolute.
	Mailer    Mailer
	PublicURL string
}

// Mailer queues a templated mail in a transaction (package mail).
type Mailer interface {
	Queue(ctx context.Context, tx *db.Tx, to, key string, vars map[string]string) error
}

// Service stores and serves notifications.
type Service struct {
	db        *db.DB
	clock     clock.Clock
	hub       *realtime.Hub
	mailer    Mailer
	publicURL string
}

// NewService returns the notifications service.
func NewService(d Deps) *Service {
	return &Service{db: d.DB, clock: d.Clock, hub: d.Hub, mailer: d.Mailer, publicURL: strings.TrimRight(d.PublicURL, "/")}
}

// Notify gives each recipient the note, inside tx (the transaction of the
// event it is about): nothing is said of what rolls back. A recipient who
// has the key already keeps the first notification.
func (s *Service) Notify(ctx context.Context, tx *db.Tx, n Note, recipients ...string) error {
	if len(recipients) == 0 {
		return nil
	}
	n.Title, n.Body = text.Clip(n.Title, maxTitle), text.Clip(n.Body, maxBody)
	if n.Key == "" {
		n.Key = n.Source + ":" + n.TargetID
	}
	now := s.clock.Now()
	seen := map[string]bool{}
	for _, uid := range recipients {
		if uid == "" || seen[uid] {
			continue
		}
		seen[uid] = true
		id := ids.New()
		added, err := insert(ctx, tx, id, uid, n, now)
		if err != nil {
			return err
		}
		if added {
			if err := s.hub.NotifyUserTx(ctx, tx, uid, Topic, id); err != nil {
				return err
			}
			if err := s.mail(ctx, tx, uid, id, n, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// Settle marks read, inside tx, the notifications of a decision that was
// taken (its key: "approval:<id>", "gate:<node run>", "proposal:<id>"),
// whoever received them: what was asked of them is answered.
func (s *Service) Settle(ctx context.Context, tx *db.Tx, key string) error {
	users, err := settle(ctx, tx, key, s.clock.Now())
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := s.hub.NotifyUserTx(ctx, tx, u, Topic, ""); err != nil {
			return err
		}
	}
	return nil
}

// List is the caller's notifications in the active workspace and their
// own, newest first.
func (s *Service) List(ctx context.Context, u *actor.User, ws *actor.Workspace, q Query) (*Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	items, total, err := list(ctx, s.db, filter{userID: u.ID, workspaceID: ws.ID, source: q.Source, state: map[bool]string{true: "unread"}[q.Unread]}, limit, q.Offset)
	if err != nil {
		return nil, err
	}
	f, err := s.facets(ctx, u, ws)
	if err != nil {
		return nil, err
	}
	return &Page{Items: items, Total: total, Facets: *f}, nil
}

func (s *Service) facets(ctx context.Context, u *actor.User, ws *actor.Workspace) (*Facets, error) {
	bySource, unread, err := counts(ctx, s.db.R, u.ID, ws.ID)
	if err != nil {
		return nil, err
	}
	f := &Facets{Source: map[string]int{}, Unread: unread}
	for _, src := range Sources {
		f.Source[src] = bySource[src]
	}
	return f, nil
}

// BoardQuery filters the notifications board.
type BoardQuery struct {
	board.Query
	Source string `query:"source" enum:"approval,gate,proposal,mention,run_failed,invite,backlog" doc:"Only this source"`
	State  string `query:"state" enum:"unread,read" doc:"Only unread or only read ones"`
}

// Board is the caller's notifications as a board (newest first; q searches
// titles), with chips by source and by state.
func (s *Service) Board(ctx context.Context, u *actor.User, ws *actor.Workspace, q BoardQuery) (*board.Board[Notification], error) {
	if q.Sort != "" && q.Sort != "created_at" {
		return nil, apperr.BadRequest("sort must be created_at")
	}
	if q.Order == "asc" {
		return nil, apperr.BadRequest("notifications are newest first: order must be desc")
	}
	if q.Page < 1 {
		q.Page = 1
	}
	if q.PageSize < 1 {
		q.PageSize = 50
	}
	items, total, err := list(ctx, s.db, filter{userID: u.ID, workspaceID: ws.ID, source: q.Source, state: q.State, q: q.Q}, q.PageSize, q.Offset())
	if err != nil {
		return nil, err
	}
	f, err := s.facets(ctx, u, ws)
	if err != nil {
		return nil, err
	}
	bySource := make([]board.Facet, 0, len(Sources))
	total2 := 0
	for _, src := range Sources {
		bySource = append(bySource, board.Facet{Value: src, Label: labels[src], Count: f.Source[src]})
		total2 += f.Source[src]
	}
	states := []board.Facet{{Value: "unread", Label: "Unread", Count: f.Unread}, {Value: "read", Label: "Read", Count: total2 - f.Unread}}
	return board.New(q.Query, items, total, map[string][]board.Facet{"source": bySource, "state": states}), nil
}

var labels = map[string]string{SourceApproval: "Tool approvals", SourceGate: "Human gates", SourceProposal: "Proposals",
	SourceMention: "Mentions", SourceRunFailed: "Failed runs", SourceInvite: "Invites", SourceBacklog: "Backlog"}

// Informational are the sources that only inform: the others (approvals,
// gates, proposals) are also decisions the inbox shows as themselves.
var Informational = []string{SourceMention, SourceRunFailed, SourceInvite, SourceBacklog}

// Attention is the caller's newest unread informational notifications
// (at most limit) and how many there are: the inbox's share.
func (s *Service) Attention(ctx context.Context, u *actor.User, ws *actor.Workspace, limit int) ([]Notification, int, error) {
	return unreadOf(ctx, s.db, u.ID, ws.ID, Informational, limit)
}

// Unread counts the caller's unread notifications (the bell).
func (s *Service) Unread(ctx context.Context, u *actor.User, ws *actor.Workspace) (int, error) {
	_, unread, err := counts(ctx, s.db.R, u.ID, ws.ID)
	return unread, err
}

// MarkRead marks one of the caller's notifications read (again: no
// change); another's, or one of a workspace not active, is not found.
func (s *Service) MarkRead(ctx context.Context, u *actor.User, ws *actor.Workspace, id string) (*Notification, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("notification")
	}
	var out *Notification
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		changed, err := markRead(ctx, tx, u.ID, ws.ID, id, s.clock.Now())
		if err != nil {
			return err
		}
		if out, err = get(ctx, tx, u.ID, ws.ID, id); err != nil {
			return err
		}
		if changed {
			return s.hub.NotifyUserTx(ctx, tx, u.ID, Topic, id)
		}
		return nil
	})
	return out, err
}

// ReadAll marks every unread notification of the caller's (active
// workspace and their own) read; it answers how many it marked.
func (s *Service) ReadAll(ctx context.Context, u *actor.User, ws *actor.Workspace) (int, error) {
	var n int
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if n, err = markAllRead(ctx, tx, u.ID, ws.ID, s.clock.Now()); err != nil || n == 0 {
			return err
		}
		return s.hub.NotifyUserTx(ctx, tx, u.ID, Topic, "")
	})
	return n, err
}

// Delete removes one of the caller's notifications; false when there was
// none (an unknown id and another person's alike).
func (s *Service) Delete(ctx context.Context, u *actor.User, ws *actor.Workspace, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, nil
	}
	var deleted bool
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if deleted, err = remove(ctx, tx, u.ID, ws.ID, id); err != nil || !deleted {
			return err
		}
		return s.hub.NotifyUserTx(ctx, tx, u.ID, Topic, id)
	})
	return deleted, err
}

// Prune drops read notifications older than Retention and, past
// MaxPerUser, a user's oldest; it answers how many went.
func (s *Service) Prune(ctx context.Context) (int, error) {
	return prune(ctx, s.db, s.clock.Now().Add(-Retention), MaxPerUser)
}
