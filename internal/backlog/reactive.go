package backlog

import (
	"context"
	"strings"

	"slipway/internal/audit"
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
