package conversation

import (
	"fmt"
	"net/http"
	"time"

	"slipway/internal/platform/apperr"
)

// Intercom reads Intercom's webhook notifications: an envelope naming the
// topic, with the conversation as data.item (API 2.x: its opening message
// is item.source; 1.x: item.conversation_message) and, for a reply, only
// the new parts in item.conversation_parts.
type Intercom struct{}

// Name is the provider's path segment.
func (Intercom) Name() string { return "intercom" }

// Verify checks X-Hub-Signature: sha1=<hex HMAC-SHA1 of the body>.
func (Intercom) Verify(secret []byte, header http.Header, body []byte) error {
	sig := header.Get(SignatureHeader)
	if sig == "" {
		return missing(SignatureHeader)
	}
	return sha1Hex(secret, sig, body)
}

type intercomAuthor struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

type intercomMessage struct {
	ID          string         `json:"id"`
	DeliveredAs string         `json:"delivered_as"`
	Body        *string        `json:"body"`
	Author      intercomAuthor `json:"author"`
	Redacted    bool           `json:"redacted"`
}

type intercomPart struct {
	ID        string         `json:"id"`
	PartType  string         `json:"part_type"`
	Body      *string        `json:"body"`
	CreatedAt int64          `json:"created_at"`
	Author    intercomAuthor `json:"author"`
	Redacted  bool           `json:"redacted"`
}

type intercomNotification struct {
	Type  string `json:"type"`
	AppID string `json:"app_id"`
	Topic string `json:"topic"`
	Data  struct {
		Item struct {
			Type                string           `json:"type"`
			ID                  string           `json:"id"`
			CreatedAt           int64            `json:"created_at"`
			Source              *intercomMessage `json:"source"`
			ConversationMessage *intercomMessage `json:"conversation_message"` // API 1.x
			Parts               struct {
				Parts []intercomPart `json:"conversation_parts"`
			} `json:"conversation_parts"`
		} `json:"item"`
	} `json:"data"`
	CreatedAt int64 `json:"created_at"`
}

// Read reads a notification.
func (Intercom) Read(_ http.Header, body []byte) (*Delivery, error) {
	var n intercomNotification
	if err := object(body, &n); err != nil {
		return nil, err
	}
	if n.Type != "notification_event" || n.Topic == "" {
		return nil, apperr.BadRequest("an Intercom delivery is a notification_event with a topic")
	}
	d := &Delivery{Topic: n.Topic}
	item := n.Data.Item
	switch n.Topic {
	case "ping":
		d.Skip = "ping: the webhook is reachable"
	case TopicUserCreated:
		src := item.Source
		if src == nil {
			src = item.ConversationMessage
		}
		switch {
		case item.Type != "conversation" || item.ID == "" || src == nil:
			return nil, apperr.BadRequest("a %s delivery carries a conversation with its opening message", n.Topic)
		case src.DeliveredAs != "" && src.DeliveredAs != "customer_initiated":
			d.Skip = fmt.Sprintf("notify-only: the conversation was started by the team (%s), not the customer", src.DeliveredAs)
		case !customer(src.Author.Type):
			d.Skip = fmt.Sprintf("notify-only: the opening message is by a %s, not the customer", orUnknown(src.Author.Type))
		case src.Redacted || src.Body == nil || plain(*src.Body) == "":
			d.Skip = "notify-only: the opening message has no text"
		default:
			d.Message = &Message{ID: "intercom:" + n.AppID + ":source:" + src.ID, ConversationID: item.ID, Author: src.Author.Name,
				Email: src.Author.Email, Text: plain(*src.Body), At: unix(item.CreatedAt, n.CreatedAt)}
		}
	case TopicUserReplied:
		if item.Type != "conversation" || item.ID == "" {
			return nil, apperr.BadRequest("a %s delivery carries a conversation", n.Topic)
		}
		// The newest of the customer's comments among the new parts.
		var last *intercomPart
		for i := range item.Parts.Parts {
			p := &item.Parts.Parts[i]
			if p.PartType == "comment" && customer(p.Author.Type) && !p.Redacted && p.Body != nil && plain(*p.Body) != "" && p.ID != "" {
				last = p
			}
		}
		if last == nil {
			d.Skip = "notify-only: no new comment of the customer's (a note, an assignment, a closing or a team member's part)"
			break
		}
		d.Message = &Message{ID: "intercom:" + n.AppID + ":part:" + last.ID, ConversationID: item.ID, Author: last.Author.Name,
			Email: last.Author.Email, Text: plain(*last.Body), At: unix(last.CreatedAt, n.CreatedAt)}
	default:
		d.Skip = "filtered topic: " + n.Topic
	}
	return d, nil
}

// unix is the first non-zero Unix time of ts as a time (zero when none).
func unix(ts ...int64) time.Time {
	for _, t := range ts {
		if t > 0 {
			return time.Unix(t, 0).UTC()
		}
	}
	return time.Time{}
}

func orUnknown(s string) string {
	if s == "" {
		return "sender of no type"
	}
	return s
}
