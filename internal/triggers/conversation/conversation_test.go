package conversation_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/triggers/conversation"
)

var secret = []byte("whsec-conversation-0123456789")

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mac(key, body []byte) []byte {
	m := hmac.New(sha1.New, key)
	m.Write(body)
	return m.Sum(nil)
}

func hubSig(key, body []byte) string { return "sha1=" + hex.EncodeToString(mac(key, body)) }

func code(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Signatures: what each provider accepts and refuses, like the workflow
// webhooks' (missing, malformed, tampered body, another secret).
func TestVerify(t *testing.T) {
	body := fixture(t, "intercom_user_created.json")
	tampered := []byte(strings.Replace(string(body), "can't log in", "can log in", 1))
	cases := []struct {
		name     string
		p        conversation.Provider
		header   http.Header
		body     []byte
		ok       bool
		fragment string
	}{
		{"intercom: signed", conversation.Intercom{}, http.Header{"X-Hub-Signature": {hubSig(secret, body)}}, body, true, ""},
		{"intercom: missing", conversation.Intercom{}, http.Header{}, body, false, "send X-Hub-Signature"},
		{"intercom: not sha1=", conversation.Intercom{}, http.Header{"X-Hub-Signature": {hex.EncodeToString(mac(secret, body))}}, body, false, "sha1=<hex"},
		{"intercom: not hex", conversation.Intercom{}, http.Header{"X-Hub-Signature": {"sha1=zz"}}, body, false, "sha1=<hex"},
		{"intercom: tampered body", conversation.Intercom{}, http.Header{"X-Hub-Signature": {hubSig(secret, body)}}, tampered, false, "does not match"},
		{"intercom: another secret", conversation.Intercom{}, http.Header{"X-Hub-Signature": {hubSig([]byte("other"), body)}}, body, false, "does not match"},
		{"intercom: sha256 header is not its", conversation.Intercom{}, http.Header{"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(mac(secret, body))}}, body, false, "send X-Hub-Signature"},
		{"helpscout: its own header", conversation.HelpScout{}, http.Header{"X-Helpscout-Signature": {base64.StdEncoding.EncodeToString(mac(secret, body))}}, body, true, ""},
		{"helpscout: the contract's header", conversation.HelpScout{}, http.Header{"X-Hub-Signature": {hubSig(secret, body)}}, body, true, ""},
		{"helpscout: missing", conversation.HelpScout{}, http.Header{}, body, false, "X-HelpScout-Signature"},
		{"helpscout: not base64", conversation.HelpScout{}, http.Header{"X-Helpscout-Signature": {"%%%"}}, body, false, "base64"},
		{"helpscout: tampered body", conversation.HelpScout{}, http.Header{"X-Helpscout-Signature": {base64.StdEncoding.EncodeToString(mac(secret, body))}}, tampered, false, "does not match"},
		{"helpscout: another secret", conversation.HelpScout{}, http.Header{"X-Hub-Signature": {hubSig([]byte("other"), body)}}, body, false, "does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Verify(secret, c.header, c.body)
			if c.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if code(err) != apperr.CodeUnauthorized || !strings.Contains(err.Error(), c.fragment) {
				t.Fatalf("got %v (code %q), want unauthorized naming %q", err, code(err), c.fragment)
			}
		})
	}
}

// Read: a customer's message becomes a Message (its id stable across
// deliveries, its text plain); everything else is skipped with a reason;
// what is not the provider's shape is a bad request.
func TestRead(t *testing.T) {
	hs := func(event string) http.Header { return http.Header{"X-Helpscout-Event": {event}} }
	cases := []struct {
		name      string
		p         conversation.Provider
		header    http.Header
		body      []byte
		topic     string
		id, text  string
		at        string
		skip, bad string
	}{
		{name: "intercom: a new conversation", p: conversation.Intercom{}, body: fixture(t, "intercom_user_created.json"), topic: conversation.TopicUserCreated,
			id: "intercom:abc123de:source:3381828792", text: "Hi, I can't log in to my account", at: "2026-01-10T07:56:29Z"},
		{name: "intercom: a reply", p: conversation.Intercom{}, body: fixture(t, "intercom_user_replied.json"), topic: conversation.TopicUserReplied,
			id: "intercom:abc123de:part:37358129876", text: "I reset my password but still get an error.", at: "2026-01-10T08:01:47Z"},
		{name: "intercom: ping", p: conversation.Intercom{}, body: fixture(t, "intercom_ping.json"), topic: "ping", skip: "ping"},
		{name: "intercom: an admin's reply is a filtered topic", p: conversation.Intercom{}, body: fixture(t, "intercom_admin_replied.json"),
			topic: "conversation.admin.replied", skip: "filtered topic: conversation.admin.replied"},
		{name: "intercom: a note under user.replied", p: conversation.Intercom{}, body: fixture(t, "intercom_user_replied_note.json"),
			topic: conversation.TopicUserReplied, skip: "notify-only: no new comment of the customer's"},
		{name: "intercom: an outbound conversation", p: conversation.Intercom{}, body: fixture(t, "intercom_user_created_outbound.json"),
			topic: conversation.TopicUserCreated, skip: "started by the team (admin_initiated)"},
		{name: "intercom: not JSON", p: conversation.Intercom{}, body: []byte("topic=conversation.user.created"), bad: "JSON object"},
		{name: "intercom: a JSON array", p: conversation.Intercom{}, body: []byte(`[{"topic":"ping"}]`), bad: "JSON object"},
		{name: "intercom: not a notification", p: conversation.Intercom{}, body: []byte(`{"hello":"world"}`), bad: "notification_event"},
		{name: "intercom: a field of the wrong type", p: conversation.Intercom{}, body: []byte(`{"type":"notification_event","topic":7}`), bad: "provider's shape"},
		{name: "intercom: user.created without its message", p: conversation.Intercom{}, body: []byte(`{"type":"notification_event","topic":"conversation.user.created","data":{"item":{"type":"conversation","id":"1"}}}`), bad: "opening message"},

		{name: "helpscout: a new conversation", p: conversation.HelpScout{}, header: hs("convo.created"), body: fixture(t, "helpscout_convo_created.json"),
			topic: conversation.TopicUserCreated, id: "helpscout:thread:88171881", text: "Hello, I tried to download the file off your site...", at: "2026-07-23T12:34:12Z"},
		{name: "helpscout: a customer's reply (the newest of the customer's threads)", p: conversation.HelpScout{}, header: hs("convo.customer.reply.created"),
			body: fixture(t, "helpscout_customer_reply.json"), topic: conversation.TopicUserReplied, id: "helpscout:thread:88172002", text: "Still broken after the update.",
			at: "2026-07-23T14:02:40Z"},
		{name: "helpscout: an agent's reply", p: conversation.HelpScout{}, header: hs("convo.agent.reply.created"), body: fixture(t, "helpscout_customer_reply.json"),
			topic: "convo.agent.reply.created", skip: "filtered topic: convo.agent.reply.created"},
		{name: "helpscout: a note", p: conversation.HelpScout{}, header: hs("convo.note.created"), body: fixture(t, "helpscout_convo_created.json"),
			topic: "convo.note.created", skip: "filtered topic"},
		{name: "helpscout: a conversation the team started", p: conversation.HelpScout{}, header: hs("convo.created"),
			body:  []byte(`{"id":5,"createdBy":{"id":1,"type":"user"},"_embedded":{"threads":[{"id":9,"type":"message","state":"published","body":"Hi","createdBy":{"type":"user"}}]}}`),
			topic: conversation.TopicUserCreated, skip: "started by the team"},
		{name: "helpscout: a draft only", p: conversation.HelpScout{}, header: hs("convo.customer.reply.created"),
			body:  []byte(`{"id":5,"createdBy":{"id":1,"type":"customer"},"_embedded":{"threads":[{"id":9,"type":"customer","state":"draft","body":"Hi","createdBy":{"type":"customer"}}]}}`),
			topic: conversation.TopicUserReplied, skip: "no published message"},
		{name: "helpscout: no event header", p: conversation.HelpScout{}, body: fixture(t, "helpscout_convo_created.json"), bad: "X-HelpScout-Event"},
		{name: "helpscout: not JSON", p: conversation.HelpScout{}, header: hs("convo.created"), body: []byte("<xml/>"), bad: "JSON object"},
		{name: "helpscout: no conversation", p: conversation.HelpScout{}, header: hs("convo.created"), body: []byte(`{}`), bad: "carries a conversation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.p.Read(c.header, c.body)
			if c.bad != "" {
				if code(err) != apperr.CodeBadRequest || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("got %+v, %v; want a bad request naming %q", d, err, c.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Topic != c.topic {
				t.Fatalf("topic %q, want %q", d.Topic, c.topic)
			}
			if c.skip != "" {
				if d.Message != nil || !strings.Contains(d.Skip, c.skip) {
					t.Fatalf("got %+v (skip %q), want skipped with %q", d.Message, d.Skip, c.skip)
				}
				return
			}
			m := d.Message
			if m == nil || d.Skip != "" {
				t.Fatalf("no message: skipped %q", d.Skip)
			}
			if m.ID != c.id || m.Text != c.text || m.At.Format(time.RFC3339) != c.at || m.ConversationID == "" {
				t.Fatalf("message %+v, want id %s, text %q at %s", m, c.id, c.text, c.at)
			}
		})
	}
}

// The same message read from a second delivery (Intercom's retry, a
// replay) has the same id: the trigger deduplicates on it.
func TestMessageIDsAreStable(t *testing.T) {
	body := fixture(t, "intercom_user_replied.json")
	a, _ := conversation.Intercom{}.Read(nil, body)
	retried := strings.Replace(string(body), `"delivery_attempts": 1`, `"delivery_attempts": 2`, 1)
	b, _ := conversation.Intercom{}.Read(nil, []byte(retried))
	if a.Message.ID != b.Message.ID || retried == string(body) {
		t.Fatalf("%s vs %s", a.Message.ID, b.Message.ID)
	}
}

func TestStale(t *testing.T) {
	m := &conversation.Message{At: time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC)}
	if conversation.Stale(m, m.At.Add(5*time.Hour), 6*time.Hour) || !conversation.Stale(m, m.At.Add(7*time.Hour), 6*time.Hour) {
		t.Fatal("the window")
	}
	if conversation.Stale(&conversation.Message{}, time.Now(), time.Hour) {
		t.Fatal("a message without a time is not stale")
	}
}

// Text is plain and bounded whatever the body holds.
func TestTextIsPlainAndBounded(t *testing.T) {
	huge := `{"type":"notification_event","app_id":"a","topic":"conversation.user.replied","data":{"item":{"type":"conversation","id":"1",` +
		`"conversation_parts":{"conversation_parts":[{"id":"p","part_type":"comment","author":{"type":"user"},"body":"<p>` +
		strings.Repeat("é &amp; <b>bold</b> ", 5000) + `</p>"}]}}}}`
	d, err := conversation.Intercom{}.Read(nil, []byte(huge))
	if err != nil || d.Message == nil {
		t.Fatalf("%+v %v", d, err)
	}
	if len(d.Message.Text) > conversation.MaxText || strings.ContainsAny(d.Message.Text, "<>") || !strings.HasPrefix(d.Message.Text, "é & bold é") {
		t.Fatalf("text of %d bytes: %.60q", len(d.Message.Text), d.Message.Text)
	}
}
