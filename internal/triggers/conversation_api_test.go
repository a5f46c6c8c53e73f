package triggers_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/workflows"
)

func sha1Sig(secret, body string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(body))
	return "sha1=" + hex.EncodeToString(m.Sum(nil))
}

// provider is one conversation provider as a test drives it.
type provider struct {
	kind string
	// body is a delivery of a customer's message written at, from the
	// package's fixtures (docs/research/conversation-webhooks.md).
	body func(t *testing.T, at time.Time) string
	// sign makes the headers of a delivery signed with secret.
	sign func(secret, body string) []string
	// filtered is a delivery of something that is not a customer's message.
	filtered func(t *testing.T) (body string, header []string, reason string)
}

func conversationFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("conversation", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var providers = []provider{
	{kind: "intercom",
		body: func(t *testing.T, at time.Time) string {
			b := conversationFixture(t, "intercom_user_created.json")
			for _, ts := range []string{"1768031789", "1768031790"} {
				b = strings.ReplaceAll(b, ts, fmt.Sprint(at.Unix()))
			}
			return b
		},
		sign: func(secret, body string) []string {
			return []string{"X-Hub-Signature", sha1Sig(secret, body), "Content-Type", "application/json"}
		},
		filtered: func(t *testing.T) (string, []string, string) {
			return conversationFixture(t, "intercom_admin_replied.json"), nil, "filtered topic: conversation.admin.replied"
		}},
	{kind: "helpscout",
		body: func(t *testing.T, at time.Time) string {
			return strings.ReplaceAll(conversationFixture(t, "helpscout_convo_created.json"), "2026-07-23T12:34:12Z", at.UTC().Format(time.RFC3339))
		},
		sign: func(secret, body string) []string {
			m := hmac.New(sha1.New, []byte(secret))
			m.Write([]byte(body))
			return []string{"X-HelpScout-Signature", base64.StdEncoding.EncodeToString(m.Sum(nil)), "X-HelpScout-Event", "convo.created",
				"Content-Type", "application/json; charset=utf-8"}
		},
		filtered: func(t *testing.T) (string, []string, string) {
			return conversationFixture(t, "helpscout_customer_reply.json"), []string{"X-HelpScout-Event", "convo.agent.reply.created"},
				"filtered topic: convo.agent.reply.created"
		}},
}

type ack struct {
	Status        string  `json:"status"`
	BacklogItemID *string `json:"backlog_item_id"`
	Reason        *string `json:"reason"`
}

// TestConversationWebhooks, for each provider on both databases, like the
// workflow webhooks: a customer's message is enqueued as a gated card and
// starts a run that sees the body verbatim as SC_TRIGGER_CONTEXT; the ack
// is exactly {status, backlog_item_id, reason}; a missing, malformed or
// wrong signature is 401 and changes nothing; a body that is not JSON, or
// another content type, is 400; an unknown token (or another provider's,
// or a webhook's) 404; a replay of the same message, a stale one, a
// filtered topic and a disabled trigger are refused or skipped without a
// run.
func TestConversationWebhooks(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := newWebhookFixture(t, e)
		wf := f.createWorkflow(t, []apiObj{
			{"key": "sh", "kind": "code", "config": apiObj{"language": "sh",
				"source": `printf '{"ctx": "%s"}\n' "$(printf '%s' "$SC_TRIGGER_CONTEXT" | sha256sum | cut -c1-64)"`}},
			{"key": "end", "kind": "end", "config": apiObj{"output": "nodes.sh.output.result"}},
		}, []apiObj{{"source": "sh", "target": "end"}})
		hook, _ := f.trigger(t, f.workflow, apiObj{"kind": "webhook"})

		made := map[string]trigger{}
		for _, p := range providers {
			r := f.Owner.Do("POST", "/api/workflows/"+wf+"/triggers", apiObj{"kind": p.kind})
			fixture.Want(t, r, http.StatusCreated)
			var tr trigger
			r.JSON(t, &tr)
			secret, _ := r.Map(t)["signing_secret"].(string)
			f.App.Remember(*tr.Token, secret)
			if len(secret) != 40 || !tr.HasSecret || !strings.HasSuffix(*tr.ReceiverURL, "/api/workflows/triggers/"+p.kind+"/"+*tr.Token) {
				t.Fatalf("the %s trigger: %s", p.kind, r.Body)
			}
			tr.Config = apiObj{"secret": secret}
			made[p.kind] = tr
		}
		// Listed later: neither the token nor the secret.
		r := f.Owner.Do("GET", "/api/workflows/"+wf+"/triggers", nil)
		if strings.Contains(string(r.Body), "signing_secret") || strings.Contains(string(r.Body), `"token"`) {
			t.Fatalf("a list shows a secret: %s", r.Body)
		}

		for _, p := range providers {
			t.Run(p.kind, func(t *testing.T) {
				tr := made[p.kind]
				secret, token := tr.Config["secret"].(string), *tr.Token
				path := "/api/workflows/triggers/" + p.kind + "/"
				deliver := func(token, body string, header ...string) *apitest.Response {
					return f.App.Anonymous().Do("POST", path+token, body, header...)
				}
				runs, cards := f.runCount(t), f.App.Count(t, "SELECT COUNT(*) FROM backlog_items")
				unchanged := func(what string) {
					t.Helper()
					if f.runCount(t) != runs || f.App.Count(t, "SELECT COUNT(*) FROM backlog_items") != cards {
						t.Fatalf("%s: a run or a card was made", what)
					}
				}
				body := p.body(t, time.Now().Add(-time.Minute))

				// Refused before anything: signatures, tokens, bodies.
				tampered := strings.Replace(body, "download", "upload", 1)
				tampered = strings.Replace(tampered, "can't log in", "can log in", 1)
				fixture.WantError(t, deliver(token, tampered, p.sign(secret, body)...), http.StatusUnauthorized, "unauthorized", "does not match")
				fixture.WantError(t, deliver(token, body, "Content-Type", "application/json"), http.StatusUnauthorized, "unauthorized", "signed")
				fixture.WantError(t, deliver(token, body, p.sign("not-the-secret-at-all", body)...), http.StatusUnauthorized, "unauthorized")
				fixture.WantError(t, deliver(token, body, "X-Hub-Signature", "sha1=nothex", "Content-Type", "application/json"), http.StatusUnauthorized, "unauthorized")
				fixture.WantError(t, deliver("whk_"+ids.New(), body, p.sign(secret, body)...), http.StatusNotFound, "not_found")
				fixture.WantError(t, deliver(*hook.Token, body, p.sign(secret, body)...), http.StatusNotFound, "not_found")
				for _, other := range providers {
					if other.kind != p.kind {
						fixture.WantError(t, deliver(*made[other.kind].Token, body, p.sign(secret, body)...), http.StatusNotFound, "not_found")
					}
				}
				notJSON := "topic=conversation.user.created"
				fixture.WantError(t, deliver(token, notJSON, p.sign(secret, notJSON)...), http.StatusBadRequest, "bad_request", "JSON")
				plain := append(slices.Clone(p.sign(secret, body)), "Content-Type", "text/plain")
				fixture.WantError(t, deliver(token, body, plain...), http.StatusBadRequest, "bad_request", "text/plain")
				unchanged("refused deliveries")

				// Skipped, acknowledged: a filtered topic, a stale message.
				fb, fh, reason := p.filtered(t)
				r := deliver(token, fb, append(p.sign(secret, fb), fh...)...)
				var a ack
				r.JSON(t, &a)
				if r.Status != http.StatusOK || a.Status != "skipped" || a.BacklogItemID != nil || a.Reason == nil || !strings.Contains(*a.Reason, reason) {
					t.Fatalf("a filtered delivery: %d %s", r.Status, r.Body)
				}
				stale := p.body(t, time.Now().Add(-7*time.Hour))
				r = deliver(token, stale, p.sign(secret, stale)...)
				a = ack{}
				r.JSON(t, &a)
				if a.Status != "skipped" || !strings.Contains(*a.Reason, "stale replay") {
					t.Fatalf("a stale delivery: %d %s", r.Status, r.Body)
				}
				unchanged("skipped deliveries")

				// A customer's message: enqueued, exactly the ack's fields.
				r = deliver(token, body, p.sign(secret, body)...)
				fixture.Want(t, r, http.StatusOK)
				if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, []string{"status", "backlog_item_id", "reason"}) {
					t.Fatalf("the ack's fields: %v", keys)
				}
				a = ack{}
				r.JSON(t, &a)
				if a.Status != "enqueued" || a.BacklogItemID == nil || a.Reason != nil {
					t.Fatalf("the ack: %s", r.Body)
				}
				card := f.Owner.Do("GET", "/api/projects/"+f.project+"/backlog/items/"+*a.BacklogItemID, nil)
				fixture.Want(t, card, http.StatusOK)
				c := card.Map(t)
				if c["state"] != "inbox" || c["source"] != "conversation" || c["issue_number"] != nil || !strings.Contains(c["title"].(string), ":") {
					t.Fatalf("the card: %s", card.Body)
				}
				if len(f.App.AuditEntries(t, "backlog.item.enqueue", *a.BacklogItemID)) != 1 {
					t.Fatal("the card's enqueue is not audited")
				}
				// The trigger's owner is told the card waits for them.
				notes := f.Owner.Do("GET", "/notifications?source=backlog", nil)
				if !strings.Contains(string(notes.Body), `"target_id":"`+*a.BacklogItemID+`"`) || !strings.Contains(string(notes.Body), "A customer wrote: ") {
					t.Fatalf("the owner's backlog notifications: %s", notes.Body)
				}
				// The run: its input the body, SC_TRIGGER_CONTEXT the body verbatim.
				var runID string
				if err := f.App.DB.R.QueryRow(`SELECT id FROM workflow_runs WHERE workflow_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1`, wf).Scan(&runID); err != nil {
					t.Fatal(err)
				}
				v := waitRun(t, f.Owner, runID)
				sum := sha256.Sum256([]byte(body))
				if v.Status != workflows.RunSucceeded || !strings.Contains(string(v.Output), hex.EncodeToString(sum[:])) {
					t.Fatalf("the run %s: %s %s", v.Status, v.Error, v.Output)
				}
				runs, cards = runs+1, cards+1
				unchanged("the first delivery")

				// The same message again (a retry, a replay): skipped.
				r = deliver(token, body, p.sign(secret, body)...)
				a = ack{}
				r.JSON(t, &a)
				if r.Status != http.StatusOK || a.Status != "skipped" || a.BacklogItemID != nil || !strings.Contains(*a.Reason, "duplicate") {
					t.Fatalf("a replay: %d %s", r.Status, r.Body)
				}
				unchanged("a replay")

				// Disabled: 403; a rotated token replaces the old one.
				fixture.Want(t, f.Owner.Do("PATCH", "/api/workflows/triggers/"+tr.ID, apiObj{"enabled": false}), http.StatusOK)
				fixture.WantError(t, deliver(token, body, p.sign(secret, body)...), http.StatusForbidden, "forbidden")
				fixture.Want(t, f.Owner.Do("PATCH", "/api/workflows/triggers/"+tr.ID, apiObj{"enabled": true}), http.StatusOK)
				fixture.WantError(t, f.Owner.Do("PATCH", "/api/workflows/triggers/"+tr.ID, apiObj{"remove_secret": true}), http.StatusBadRequest, "bad_request", "always signed")
				r = f.Owner.Do("POST", "/api/workflows/triggers/"+tr.ID+"/rotate-token", nil)
				fixture.Want(t, r, http.StatusOK)
				fresh := r.Map(t)["token"].(string)
				f.App.Remember(fresh)
				fixture.WantError(t, deliver(token, body, p.sign(secret, body)...), http.StatusNotFound, "not_found")
				r = deliver(fresh, body, p.sign(secret, body)...)
				a = ack{}
				r.JSON(t, &a)
				if a.Status != "skipped" || !strings.Contains(*a.Reason, "duplicate") {
					t.Fatalf("the rotated token: %d %s", r.Status, r.Body)
				}
				unchanged("the rotation")
			})
		}
	})
}

func waitRun(t *testing.T, c *apitest.Client, id string) workflows.RunView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := c.Do("GET", "/api/workflows/runs/"+id, nil)
		fixture.Want(t, r, http.StatusOK)
		var v workflows.RunView
		r.JSON(t, &v)
		if v.Status == workflows.RunSucceeded || v.Status == workflows.RunFailed || v.Status == workflows.RunCancelled {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s", id, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
