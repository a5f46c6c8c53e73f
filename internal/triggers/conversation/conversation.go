// Package conversation reads support-conversation webhook deliveries: it
// checks a delivery's signature and says whether it carries a customer's
// message (a new conversation or a reply) — the only deliveries that start
// work — or why it is to be acknowledged and skipped (a filtered topic, a
// notification about the conversation rather than a message, an agent's
// own reply, an internal note, a ping). Two providers: Intercom, whose
// format the contract names (topics conversation.user.created and
// conversation.user.replied, X-Hub-Signature: sha1=<hex HMAC-SHA1 of the
// body>), and Help Scout, whose webhooks sign the body with HMAC-SHA1 too
// (docs/research/conversation-webhooks.md).
//
// It holds no state: the trigger that receives a delivery deduplicates by
// the message id and refuses stale replays by the message's time.
package conversation

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"slipway/internal/platform/apperr"
)

// The topics a customer's message arrives as (the contract's names; Help
// Scout's events are mapped onto them).
const (
	TopicUserCreated = "conversation.user.created"
	TopicUserReplied = "conversation.user.replied"
)

// SignatureHeader is the contract's signature header (both providers).
const SignatureHeader = "X-Hub-Signature"

// MaxText bounds a message's text as read (the body itself stays whole for
// the run).
const MaxText = 20000

// Delivery is what a delivery says.
type Delivery struct {
	// Topic is the contract's topic for a customer's message, else the
	// provider's own event name.
	Topic string
	// Message is the customer's message; nil when the delivery carries
	// none (Skip says why).
	Message *Message
	Skip    string
}

// Message is a customer's message.
type Message struct {
	// ID is the message's provider-scoped id, the same on every delivery of
	// it ("intercom:<app>:part:<id>", "helpscout:thread:<id>").
	ID             string
	ConversationID string
	Author         string // the customer's name or address, as the provider gives it
	Email          string
	Text           string    // plain text (HTML removed), at most MaxText bytes
	At             time.Time // when it was written
}

// Provider is one support product's webhook format.
type Provider interface {
	// Name is the provider's path segment: /api/workflows/triggers/<name>/{token}.
	Name() string
	// Verify checks the delivery's signature against the trigger's secret,
	// in constant time: apperr unauthorized when it is missing or wrong.
	Verify(secret []byte, header http.Header, body []byte) error
	// Read reads a verified delivery: apperr bad request when it is not a
	// JSON object of the provider's shape.
	Read(header http.Header, body []byte) (*Delivery, error)
}

// Providers are the providers by name.
var Providers = map[string]Provider{"intercom": Intercom{}, "helpscout": HelpScout{}}

// Stale reports whether a message is older than window at now: a replay
// (a provider may deliver late — Intercom holds deliveries to a throttled
// endpoint up to two hours — so the window is wider than that).
func Stale(m *Message, now time.Time, window time.Duration) bool {
	return !m.At.IsZero() && now.Sub(m.At) > window
}

// sha1Hex checks "sha1=<hex>" against the body's HMAC-SHA1.
func sha1Hex(secret []byte, signature string, body []byte) error {
	hexSig, ok := strings.CutPrefix(signature, "sha1=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil {
		return apperr.New(apperr.CodeUnauthorized, "%s must be sha1=<hex HMAC-SHA1 of the body>", SignatureHeader)
	}
	return macEqual(secret, got, body)
}

func macEqual(secret, got, body []byte) error {
	mac := hmac.New(sha1.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return apperr.New(apperr.CodeUnauthorized, "the signature does not match the body")
	}
	return nil
}

func missing(header string) error {
	return apperr.New(apperr.CodeUnauthorized, "this trigger takes signed deliveries: send %s: sha1=<hex HMAC-SHA1 of the body>", header)
}

// object decodes a delivery's body into v, refusing what is not a JSON
// object.
func object(body []byte, v any) error {
	trimmed := strings.TrimSpace(string(body))
	if !strings.HasPrefix(trimmed, "{") {
		return apperr.BadRequest("a delivery's body is a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return apperr.BadRequest("a delivery's body is a JSON object of the provider's shape: %s", err.Error())
	}
	return nil
}

// plain turns a message body (HTML, or plain text) into text: tags gone,
// entities read, blank runs collapsed, cut to MaxText on a character.
func plain(s string) string {
	var b strings.Builder
	inTag := false
	for _, r := range s {
		switch {
		case r == '<':
			inTag = true
		case r == '>' && inTag:
			inTag = false
			b.WriteByte(' ')
		case !inTag:
			b.WriteRune(r)
		}
	}
	out := strings.Join(strings.Fields(html.UnescapeString(b.String())), " ")
	if len(out) > MaxText {
		cut := MaxText
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut]
	}
	return out
}

// customer reports whether an Intercom author type is the customer's side
// (its users, leads and contacts; admins, bots and teams are not).
func customer(authorType string) bool {
	switch authorType {
	case "user", "lead", "contact":
		return true
	}
	return false
}
