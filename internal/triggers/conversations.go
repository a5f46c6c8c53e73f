package triggers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"
	"time"

	"slipway/internal/backlog"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	tokens "slipway/internal/platform/token"
	"slipway/internal/triggers/conversation"
)

// Conversation trigger kinds: a support product's webhook (package
// conversation reads each one's deliveries).
const (
	KindIntercom  = "intercom"
	KindHelpScout = "helpscout"
)

// ConversationReplayWindow: a customer's message written longer ago than
// this is a stale replay, acknowledged and skipped (Intercom delays
// deliveries to a throttled endpoint by up to two hours).
const ConversationReplayWindow = 6 * time.Hour

// Ack statuses.
const (
	AckEnqueued = "enqueued"
	AckSkipped  = "skipped"
)

// ConversationAck answers a conversation webhook delivery (the spec's
// conversation webhook ack): enqueued with the backlog card it made, or
// skipped with the reason; never an error for what is only not work.
type ConversationAck struct {
	Status        string  `json:"status" enum:"enqueued,skipped"`
	BacklogItemID *string `json:"backlog_item_id" nullable:"true" format:"uuid" doc:"The card the message became (enqueued)"`
	Reason        *string `json:"reason" nullable:"true" doc:"Why nothing was enqueued (skipped)"`
}

// Backlog is what conversation triggers need of the backlog: a customer's
// message as a gated card of the workflow's project; owner (the trigger's
// creator, nil when gone) is who is told it waits.
type Backlog interface {
	Enqueue(ctx context.Context, tx *db.Tx, workspaceID, projectID string, owner *string, m backlog.Message) (string, bool, error)
}

func conversational(kind string) bool { return kind == KindIntercom || kind == KindHelpScout }

// newSigningSecret is a signing secret for a conversation trigger whose
// creator gave none (Help Scout lets you paste one of at most 40
// characters: this is 40).
func newSigningSecret() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func skipped(reason string) *ConversationAck {
	return &ConversationAck{Status: AckSkipped, Reason: &reason}
}

// errDuplicate rolls back a delivery whose message was received already.
var errDuplicate = errors.New("triggers: a message received already")

// DeliverConversation receives a support product's delivery: the token
// names a trigger of that provider (else 404, like an unknown one), its
// signature must match the raw body (401), the body must be a JSON object
// of the provider's shape (400). A customer's message — not stale, not
// received before — becomes a gated card on the workflow's project's
// backlog and starts a run with the body verbatim as its input (and
// SC_TRIGGER_CONTEXT), in one transaction; anything else is acknowledged
// skipped with the reason.
func (s *Service) DeliverConversation(ctx context.Context, provider, token string, header http.Header, body []byte) (*ConversationAck, error) {
	p, ok := conversation.Providers[provider]
	if !ok || s.backlog == nil || !strings.HasPrefix(token, tokenPrefix) || len(token) > 100 {
		return nil, apperr.NotFound("trigger")
	}
	t, err := byTokenHash(ctx, s.db, tokens.Hash(token))
	if err != nil {
		return nil, err
	}
	if t.Kind != provider {
		return nil, apperr.NotFound("trigger")
	}
	if !t.Enabled {
		return nil, apperr.New(apperr.CodeForbidden, "this trigger is disabled")
	}
	if t.sealedSecret == nil {
		return nil, apperr.New(apperr.CodeUnauthorized, "this trigger has no signing secret: rotate its token to make one")
	}
	secret, err := s.sealer.Open(*t.sealedSecret, secretContext(t.ID))
	if err != nil {
		return nil, err
	}
	if err := p.Verify([]byte(secret), header, body); err != nil {
		return nil, err
	}
	if ct := header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, apperr.BadRequest("the body must be JSON (Content-Type application/json), not %q", ct)
		}
	}
	if strings.Contains(string(body), `\u0000`) {
		return nil, apperr.BadRequest("the body must not contain NUL characters")
	}
	d, err := p.Read(header, body)
	if err != nil {
		return nil, err
	}
	if d.Message == nil {
		return skipped(d.Skip), nil
	}
	m := d.Message
	now := s.clock.Now().UTC()
	if conversation.Stale(m, now, ConversationReplayWindow) {
		return skipped("stale replay: the message was written at " + m.At.Format(time.RFC3339) + ", more than " +
			ConversationReplayWindow.String() + " ago"), nil
	}
	trigger, err := json.Marshal(map[string]any{"kind": t.Kind, "trigger_id": t.ID, "topic": d.Topic, "body": json.RawMessage(body),
		"message": map[string]any{"id": m.ID, "conversation_id": m.ConversationID, "author": m.Author, "email": m.Email, "text": m.Text, "at": m.At}})
	if err != nil {
		return nil, apperr.BadRequest("the delivery cannot be recorded: %v", err)
	}
	var card string
	err = s.db.Batch(ctx, func(tx *db.Tx) error {
		first, err := recordDelivery(ctx, tx, t.ID, m.ID, now)
		if err != nil {
			return err
		}
		if !first {
			return errDuplicate
		}
		w, err := s.workflows.GetTx(ctx, tx, &actor.Workspace{ID: t.workspaceID}, t.WorkflowID)
		if err != nil {
			return err
		}
		if card, _, err = s.backlog.Enqueue(ctx, tx, t.workspaceID, w.ProjectID, t.createdBy, backlog.Message{ID: m.ID, Provider: t.Kind, Author: m.Author,
			Text: m.Text}); err != nil {
			return err
		}
		_, err = s.workflows.StartRunTx(ctx, tx, t.workspaceID, t.createdBy, t.WorkflowID, body, trigger)
		return err
	})
	if errors.Is(err, errDuplicate) {
		return skipped("duplicate: message " + m.ID + " was received already"), nil
	}
	if err != nil {
		return nil, err
	}
	return &ConversationAck{Status: AckEnqueued, BacklogItemID: &card}, nil
}
