package conversation

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"slipway/internal/platform/apperr"
)

// HelpScout reads Help Scout's webhooks: the event in X-HelpScout-Event,
// the conversation (Mailbox API v2) as the body with its threads newest
// first under _embedded.threads. convo.created (by a customer) is the
// contract's conversation.user.created and convo.customer.reply.created
// its conversation.user.replied; every other event is skipped.
//
// Help Scout signs with X-HelpScout-Signature: base64(HMAC-SHA1(secret,
// body)). The contract names X-Hub-Signature: sha1=<hex> for every
// provider; both are accepted, so a real Help Scout and a client of the
// contract alike are verified (docs/decisions.md).
type HelpScout struct{}

// Help Scout's headers.
const (
	HelpScoutSignatureHeader = "X-HelpScout-Signature"
	HelpScoutEventHeader     = "X-HelpScout-Event"
)

// Name is the provider's path segment.
func (HelpScout) Name() string { return "helpscout" }

// Verify checks X-HelpScout-Signature (base64) or X-Hub-Signature (sha1=<hex>).
func (HelpScout) Verify(secret []byte, header http.Header, body []byte) error {
	if sig := header.Get(HelpScoutSignatureHeader); sig != "" {
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			return apperr.New(apperr.CodeUnauthorized, "%s must be the base64 HMAC-SHA1 of the body", HelpScoutSignatureHeader)
		}
		return macEqual(secret, got, body)
	}
	if sig := header.Get(SignatureHeader); sig != "" {
		return sha1Hex(secret, sig, body)
	}
	return apperr.New(apperr.CodeUnauthorized, "this trigger takes signed deliveries: send %s (base64 HMAC-SHA1 of the body) or %s: sha1=<hex>",
		HelpScoutSignatureHeader, SignatureHeader)
}

type helpScoutPerson struct {
	ID    int64  `json:"id"`
	Type  string `json:"type"`
	First string `json:"first"`
	Last  string `json:"last"`
	Email string `json:"email"`
}

type helpScoutThread struct {
	ID        int64           `json:"id"`
	Type      string          `json:"type"`
	State     string          `json:"state"`
	Body      *string         `json:"body"`
	CreatedBy helpScoutPerson `json:"createdBy"`
	CreatedAt time.Time       `json:"createdAt"`
}

type helpScoutConversation struct {
	ID        int64           `json:"id"`
	CreatedBy helpScoutPerson `json:"createdBy"`
	Embedded  struct {
		Threads []helpScoutThread `json:"threads"`
	} `json:"_embedded"`
}

// Read reads a delivery.
func (HelpScout) Read(header http.Header, body []byte) (*Delivery, error) {
	event := header.Get(HelpScoutEventHeader)
	if event == "" {
		return nil, apperr.BadRequest("a Help Scout delivery names its event in %s", HelpScoutEventHeader)
	}
	var c helpScoutConversation
	if err := object(body, &c); err != nil {
		return nil, err
	}
	d := &Delivery{Topic: event}
	switch event {
	case "convo.created", "convo.customer.reply.created":
		if c.ID == 0 {
			return nil, apperr.BadRequest("a %s delivery carries a conversation", event)
		}
		if event == "convo.created" {
			d.Topic = TopicUserCreated
			if c.CreatedBy.Type != "customer" { // Help Scout's "user" is a team member
				d.Skip = "notify-only: the conversation was started by the team, not the customer"
				return d, nil
			}
		} else {
			d.Topic = TopicUserReplied
		}
		// Newest first: the newest published thread of the customer's.
		for _, t := range c.Embedded.Threads {
			if (t.Type == "customer" || t.Type == "chat") && t.State == "published" && t.CreatedBy.Type == "customer" && t.Body != nil && plain(*t.Body) != "" {
				name := t.CreatedBy.First
				if t.CreatedBy.Last != "" {
					name += " " + t.CreatedBy.Last
				}
				d.Message = &Message{ID: "helpscout:thread:" + strconv.FormatInt(t.ID, 10), ConversationID: strconv.FormatInt(c.ID, 10),
					Author: name, Email: t.CreatedBy.Email, Text: plain(*t.Body), At: t.CreatedAt.UTC()}
				return d, nil
			}
		}
		d.Skip = "notify-only: no published message of the customer's in the conversation"
	default:
		d.Skip = "filtered topic: " + event
	}
	return d, nil
}
