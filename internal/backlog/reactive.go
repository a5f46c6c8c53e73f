package backlog

import (
	"context"
	"strings"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// Message is a customer's message a conversation trigger received, for the
// project's reactive backlog.
type Message struct {
	ID       string // the provider's, the same on every delivery of it
	Provider string // intercom, helpscout
	Author   string
	Text     string
}

// Enqueue puts a customer's message on its project's backlog, inside tx
// (the delivery's): a card in the inbox, gated — a person moves it to
// ready before an agent takes it. A message that has a card already is
// not put twice: created is false and id names the card it has.
func (s *Service) Enqueue(ctx context.Context, tx *db.Tx, workspaceID, projectID string, m Message) (id string, created bool, err error) {
	if existing, err := cardOfMessage(ctx, tx, workspaceID, projectID, m.ID); err != nil || existing != "" {
		return existing, false, err
	}
	prio, err := maxPriority(ctx, tx, workspaceID, projectID)
	if err != nil {
		return "", false, err
	}
	who := strings.TrimSpace(m.Author)
	if who == "" {
		who = "A customer"
	}
	title := text.Clip(strings.Join(strings.Fields(who+": "+m.Text), " "), 200)
	now := s.Clock.Now()
	external := m.ID
	it := &itemRow{Item: Item{ID: ids.New(), ProjectID: projectID, Source: SourceConversation, Title: title, Labels: []string{m.Provider},
		State: Inbox, Priority: prio + 1024, CreatedAt: now, UpdatedAt: now}, body: m.Text, externalID: &external}
	if err := insertItem(ctx, tx, workspaceID, it); err != nil {
		return "", false, err
	}
	if err := audit.Record(ctx, tx, now, "", "backlog.item.enqueue", "backlog_item", it.ID, nil, it.Item); err != nil {
		return "", false, err
	}
	return it.ID, true, s.Hub.NotifyTx(ctx, tx, workspaceID, TopicBacklog, it.ID)
}

// SourceProposal is a card an agent proposed and a person approved.
const SourceProposal = "proposal"

// ProposedCard is a card an agent proposes for a project's backlog (a
// proposal of kind backlog_item).
type ProposedCard struct {
	ProjectID string   `json:"project_id" format:"uuid"`
	Title     string   `json:"title" minLength:"1" maxLength:"200"`
	Body      string   `json:"body,omitempty" maxLength:"20000"`
	Labels    []string `json:"labels,omitempty" maxItems:"20"`
}

// checkProposed checks a proposed card: its project is the workspace's
// and not archived, its text clean.
func (s *Service) checkProposed(ctx context.Context, ws *actor.Workspace, in *ProposedCard) error {
	if !ids.Valid(in.ProjectID) {
		return apperr.BadRequest("project_id: not a project of this workspace")
	}
	p, err := s.Projects.Get(ctx, ws, in.ProjectID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return apperr.BadRequest("project_id: not a project of this workspace")
	}
	if err != nil {
		return err
	}
	if p.ArchivedAt != nil {
		return apperr.BadRequest("the project %q is archived", p.Name)
	}
	if in.Title, err = text.Name("title", in.Title, 200); err != nil {
		return err
	}
	if len(in.Body) > 20000 {
		return apperr.BadRequest("body: at most 20000 bytes")
	}
	if in.Labels, err = text.Labels("labels", in.Labels); err != nil {
		return err
	}
	return nil
}

// CheckProposed checks a proposed card and names what it targets: the
// project's backlog (a new card, nothing there to go stale).
func (s *Service) CheckProposed(ctx context.Context, ws *actor.Workspace, in ProposedCard) (string, error) {
	if err := s.checkProposed(ctx, ws, &in); err != nil {
		return "", err
	}
	return "backlog:" + in.ProjectID, nil
}

// AddProposedTx puts an approved card at the bottom of its project's ready
// column, in tx: the approval was the decision to take it on, so an agent
// of the project takes it like a ready issue.
func (s *Service) AddProposedTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, in ProposedCard) (*Item, error) {
	if err := s.checkProposed(ctx, ws, &in); err != nil {
		return nil, err
	}
	prio, err := maxPriority(ctx, tx, ws.ID, in.ProjectID)
	if err != nil {
		return nil, err
	}
	if in.Labels == nil {
		in.Labels = []string{}
	}
	now := s.Clock.Now()
	it := &itemRow{Item: Item{ID: ids.New(), ProjectID: in.ProjectID, Source: SourceProposal, Title: in.Title, Labels: in.Labels,
		State: Ready, Priority: prio + 1024, CreatedAt: now, UpdatedAt: now}, body: in.Body}
	if err := insertItem(ctx, tx, ws.ID, it); err != nil {
		return nil, err
	}
	by := ""
	if u != nil {
		by = u.ID
	}
	if err := audit.Record(ctx, tx, now, by, "backlog.item.propose", "backlog_item", it.ID, nil, it.Item); err != nil {
		return nil, err
	}
	if err := s.Hub.NotifyTx(ctx, tx, ws.ID, TopicBacklog, it.ID); err != nil {
		return nil, err
	}
	// Once committed, the project's agents may take it (like a card moved
	// to ready).
	tx.AfterCommit(func() {
		go func() {
			if err := s.DispatchProject(context.WithoutCancel(ctx), ws.ID, in.ProjectID); err != nil && s.Log != nil {
				s.Log.Warn("backlog: dispatching failed", "project", in.ProjectID, "err", err)
			}
		}()
	})
	return &it.Item, nil
}
