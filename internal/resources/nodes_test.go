package resources_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/workflows"
)

// farEnd is one local server speaking the protocols the nodes call: the
// Telegram Bot API, Discord's REST API, OpenAI's chat completions and a
// plain JSON API. It records what it was sent.
type farEnd struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
	// telegramDown makes the Bot API refuse the token.
	telegramDown bool
}

type seenRequest struct {
	Method, Path, Auth, APIKey string
	Body                       map[string]any
}

const (
	botToken     = "7001234567:AAH-telegram-bot-token-x1"
	discordToken = "MTA-discord-bot-token.G1.x2"
	apiToken     = "sk_test_http-api-token-x3"
	modelKey     = "sk-model-provider-key-x4"
)

func newFarEnd(t *testing.T) *farEnd {
	f := &farEnd{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), APIKey: r.Header.Get("X-Api-Key"), Body: body})
		down := f.telegramDown
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/tg/bot"+botToken+"/sendMessage" && !down:
			fmt.Fprintf(w, `{"ok":true,"result":{"message_id":501,"chat":{"id":%v},"text":%q}}`, body["chat_id"], body["text"])
		case strings.HasPrefix(r.URL.Path, "/tg/bot"):
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		case strings.HasPrefix(r.URL.Path, "/discord/channels/") && r.Header.Get("Authorization") == "Bot "+discordToken:
			fmt.Fprint(w, `{"id":"1180000000000000099","type":0,"content":"ok"}`)
		case strings.HasPrefix(r.URL.Path, "/discord/"):
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"message": "401: Unauthorized", "code": 0}`)
		case r.URL.Path == "/v1/chat/completions" && r.Header.Get("Authorization") == "Bearer "+modelKey:
			fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"tiny","choices":[{"index":0,"message":{"role":"assistant","content":"{\"label\": \"Bug\", \"confidence\": 0.92}"},"finish_reason":"stop"}]}`)
		case r.URL.Path == "/api/items" && r.Header.Get("Authorization") == "Bearer "+apiToken && r.Method == "POST":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id": 7, "name": %q, "echo": %q}`, body["name"], r.Header.Get("Authorization"))
		default:
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error":"forbidden"}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *farEnd) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// TestResourceNodes runs a workflow whose nodes use four resources against
// a local server speaking each protocol: the answers flow on, every secret
// goes only where it belongs, and no secret is stored anywhere.
func TestResourceNodes(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		far := newFarEnd(t)
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		f.App.Remember(botToken, discordToken, apiToken, modelKey)
		c := f.Owner
		tg := create(t, c, obj{"name": "Bot", "kind": "telegram", "config": obj{"api_base": far.URL + "/tg", "default_chat_id": "-100200"}, "secret": botToken})
		dc := create(t, c, obj{"name": "Discord", "kind": "discord", "config": obj{"api_base": far.URL + "/discord", "default_channel_id": "1180000000000000001"}, "secret": discordToken})
		api := create(t, c, obj{"name": "Tracker", "kind": "http", "config": obj{"base_url": far.URL + "/api", "auth": "bearer"}, "secret": apiToken})
		model := create(t, c, obj{"name": "Model", "kind": "openai_compatible", "config": obj{"base_url": far.URL + "/v1", "model": "tiny"}, "secret": modelKey})

		r := c.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, c, "Triage"), "name": "Triage",
			"nodes": []obj{
				{"key": "file", "kind": "connector", "config": obj{"resource_id": api.ID, "method": "POST", "path": "/items", "body": `{"name": "{{ input.title }}"}`}},
				{"key": "kind", "kind": "llm_classify", "config": obj{"resource_id": model.ID, "prompt": "{{ input.title }}", "categories": []string{"Bug", "Feature"}}},
				{"key": "tell", "kind": "notify_telegram", "config": obj{"resource_id": tg.ID, "text": "Filed #{{ nodes.file.output.json.id }} as {{ nodes.kind.output.label }}"}},
				{"key": "post", "kind": "notify_discord", "config": obj{"resource_id": dc.ID, "content": "New bug: {{ input.title }}"}},
				{"key": "done", "kind": "end", "config": obj{"output": `{"item": nodes.file.output.json.id, "label": nodes.kind.output.label, "confidence": nodes.kind.output.confidence, "telegram": nodes.tell.output, "discord": nodes.post.output}`}},
				{"key": "skip", "kind": "end", "config": obj{}},
			},
			"edges": []obj{{"source": "file", "target": "kind"}, {"source": "kind", "source_handle": "Bug", "target": "tell"},
				{"source": "kind", "source_handle": "Feature", "target": "skip"},
				{"source": "tell", "target": "post"}, {"source": "post", "target": "done"}}})
		fixture.Want(t, r, http.StatusCreated)
		wf := r.Map(t)["id"].(string)

		v := f.RunWorkflow(t, c, wf, obj{"title": "Login fails"})
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("run %s: %s", v.Status, v.Error)
		}
		var out map[string]any
		if err := json.Unmarshal(v.Output, &out); err != nil {
			t.Fatal(err)
		}
		want := `{"confidence":0.92,"discord":{"channel_id":"1180000000000000001","message_id":"1180000000000000099"},"item":7,"label":"Bug","telegram":{"chat_id":"-100200","message_id":501}}`
		if got, _ := json.Marshal(out); string(got) != want {
			t.Fatalf("output %s\nwant   %s", got, want)
		}
		seen := far.requests()
		if len(seen) != 4 {
			t.Fatalf("the far end saw %d requests: %+v", len(seen), seen)
		}
		if seen[0].Path != "/api/items" || seen[0].Body["name"] != "Login fails" {
			t.Fatalf("connector request %+v", seen[0])
		}
		msgs, _ := json.Marshal(seen[1].Body["messages"])
		if seen[1].Body["model"] != "tiny" || !strings.Contains(string(msgs), "Login fails") || !strings.Contains(string(msgs), `[\"Bug\",\"Feature\"]`) {
			t.Fatalf("model request %+v", seen[1])
		}
		if seen[2].Body["text"] != "Filed #7 as Bug" || seen[2].Body["chat_id"] != "-100200" {
			t.Fatalf("telegram request %+v", seen[2])
		}
		if seen[3].Path != "/discord/channels/1180000000000000001/messages" || seen[3].Body["content"] != "New bug: Login fails" {
			t.Fatalf("discord request %+v", seen[3])
		}

		// Failures name what failed and never the secret.
		far.mu.Lock()
		far.telegramDown = true
		far.mu.Unlock()
		v = f.RunWorkflow(t, c, wf, obj{"title": "Crash on save"})
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, "telegram: HTTP 401: Unauthorized") {
			t.Fatalf("a refused bot token: %s %q", v.Status, v.Error)
		}
		body, _ := json.Marshal(v)
		for _, secret := range []string{botToken, discordToken, apiToken, modelKey} {
			if strings.Contains(string(body), secret) {
				t.Fatalf("the run view holds a secret: %s", body)
			}
			if where := f.App.Holding(t, secret); len(where) > 0 {
				t.Fatalf("the database holds a secret in %v", where)
			}
		}

		// Another workspace's resource is not found; a resource of the wrong
		// kind is refused by name.
		theirs := create(t, f.Outsider, obj{"name": "Their bot", "kind": "telegram", "config": obj{"api_base": far.URL + "/tg"}, "secret": botToken})
		for _, tc := range []struct{ resource, want string }{
			{theirs.ID, "resource " + theirs.ID + " not found in this workspace"},
			{api.ID, `resource "Tracker" is a http resource; this node needs telegram`},
		} {
			r := c.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, c, "P "+tc.resource), "name": "Wrong",
				"nodes": []obj{{"key": "tell", "kind": "notify_telegram", "config": obj{"resource_id": tc.resource, "chat_id": "1", "text": "x"}}}})
			fixture.Want(t, r, http.StatusCreated)
			v := f.RunWorkflow(t, c, r.Map(t)["id"].(string), obj{})
			if v.Status != workflows.RunFailed || !strings.Contains(v.Error, tc.want) {
				t.Fatalf("%s: %s %q", tc.resource, v.Status, v.Error)
			}
		}
	})
}
