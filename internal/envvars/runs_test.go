package envvars_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/workflows"
)

// TestEnvVarsReachRuns: a project's env vars (over the workspace's) reach
// a code node's environment, the expressions' env and an agent's task; a
// secret one's value is redacted from the node's output, its logs, the
// run's output, a webhook's payload, a model's prompt, a Telegram message
// and the task's events, is in no answer and no log line, and is stored
// nowhere.
func TestEnvVarsReachRuns(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		var mu sync.Mutex
		var hooked []string
		// One local server for the webhook, a model's chat completions and
		// the Telegram Bot API; it keeps every body it is sent.
		var model, telegram []string
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.URL.Path == "/v1/chat/completions":
				model = append(model, string(b))
				w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"{\"label\":\"yes\",\"confidence\":1}"}}]}`))
			case strings.HasPrefix(r.URL.Path, "/tg/"):
				telegram = append(telegram, string(b))
				w.Write([]byte(`{"ok":true,"result":{"message_id":1}}`))
			default:
				hooked = append(hooked, string(b))
			}
		}))
		t.Cleanup(hook.Close)
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		const secret = "tok-Very-Secret-9f2c1d"
		f.App.Remember(secret)
		c := f.Owner
		project := f.Project(t, c, "Deploys")
		other := f.Project(t, c, "Other")
		rec := &recorder{t: t}
		rec.save(c, obj{"key": "GREETING", "value": "hello from the workspace"})
		rec.save(c, obj{"key": "GREETING", "value": "hello from the project", "project_id": project})
		rec.save(c, obj{"key": "API_TOKEN", "value": secret, "is_secret": true})
		rec.save(c, obj{"key": "REGION", "value": "eu-west", "project_id": other}) // another project's: not seen
		resource := func(body obj) string {
			r := c.Do("POST", "/api/resources", body)
			fixture.Want(t, r, http.StatusCreated)
			return r.Map(t)["id"].(string)
		}
		modelID := resource(obj{"name": "Model", "kind": "openai_compatible", "config": obj{"base_url": hook.URL + "/v1", "model": "m"}, "secret": "model-key-123456"})
		botID := resource(obj{"name": "Bot", "kind": "telegram", "config": obj{"api_base": hook.URL + "/tg", "default_chat_id": "7"}, "secret": "1:bot-token-123456"})

		r := c.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Env",
			"nodes": []obj{
				{"key": "sh", "kind": "code", "config": obj{"language": "sh", "source": `echo "log: $GREETING / $API_TOKEN / [${REGION:-none}]"
printf '{"greeting": "%s", "token": "%s", "region": "%s"}\n' "$GREETING" "$API_TOKEN" "${REGION:-none}"`}},
				{"key": "expr", "kind": "transform", "config": obj{"mapping": obj{"greeting": "env.GREETING", "token": "env.API_TOKEN", "keys": "keys(env)"}}},
				{"key": "tell", "kind": "notify_webhook", "config": obj{"url": hook.URL + "/hook", "payload": `{"text": "token is " + env.API_TOKEN}`}},
				{"key": "ask", "kind": "llm_classify", "config": obj{"resource_id": modelID, "prompt": "Is {{ env.API_TOKEN }} fine?", "categories": []string{"yes", "no"}}},
				{"key": "tg", "kind": "notify_telegram", "config": obj{"resource_id": botID, "text": "deployed with {{ env.API_TOKEN }}"}},
				{"key": "end", "kind": "end", "config": obj{"output": `{"sh": nodes.sh.output.result, "expr": nodes.expr.output}`}},
				{"key": "no", "kind": "end", "config": obj{}},
			},
			"edges": []obj{{"source": "sh", "target": "expr"}, {"source": "expr", "target": "tell"}, {"source": "tell", "target": "ask"},
				{"source": "ask", "source_handle": "yes", "target": "tg"}, {"source": "ask", "source_handle": "no", "target": "no"}, {"source": "tg", "target": "end"}}})
		fixture.Want(t, r, http.StatusCreated)
		wf := r.Map(t)["id"].(string)
		v := f.RunWorkflow(t, c, wf, obj{})
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("run %s: %s", v.Status, v.Error)
		}
		var out struct {
			SH   map[string]string `json:"sh"`
			Expr struct {
				Greeting string   `json:"greeting"`
				Token    string   `json:"token"`
				Keys     []string `json:"keys"`
			} `json:"expr"`
		}
		if err := json.Unmarshal(v.Output, &out); err != nil {
			t.Fatalf("%v: %s", err, v.Output)
		}
		if out.SH["greeting"] != "hello from the project" || out.SH["token"] != "[REDACTED]" || out.SH["region"] != "none" {
			t.Fatalf("the code node saw %v", out.SH)
		}
		slices.Sort(out.Expr.Keys)
		if out.Expr.Greeting != "hello from the project" || out.Expr.Token != "[REDACTED]" || strings.Join(out.Expr.Keys, ",") != "API_TOKEN,GREETING" {
			t.Fatalf("the expressions saw %+v", out.Expr)
		}
		mu.Lock()
		got := strings.Join(hooked, "\n")
		mu.Unlock()
		if got != `{"text":"token is [REDACTED]"}` {
			t.Fatalf("the webhook got %q", got)
		}
		mu.Lock()
		prompts, messages := strings.Join(model, "\n"), strings.Join(telegram, "\n")
		mu.Unlock()
		if !strings.Contains(prompts, "Is [REDACTED] fine?") || strings.Contains(prompts, secret) {
			t.Fatalf("the model was asked %s", prompts)
		}
		if messages != `{"chat_id":"7","text":"deployed with [REDACTED]"}` {
			t.Fatalf("the Telegram message: %s", messages)
		}
		// An agent's task in the project: its events show the value redacted.
		r = c.Do("POST", "/api/tasks", obj{"project_id": project, "prompt": `echo "agent: $API_TOKEN"`})
		fixture.Want(t, r, http.StatusCreated)
		taskID := r.Map(t)["id"].(string)
		if task := fixture.AwaitTask(t, c, taskID); task.Status != "done" {
			t.Fatalf("the task %s: %s", task.Status, task.Error)
		}
		r = c.Do("GET", "/api/tasks/"+taskID+"/events", nil)
		fixture.Want(t, r, http.StatusOK)
		if body := string(r.Body); strings.Contains(body, secret) || !strings.Contains(body, "agent: [REDACTED]") {
			t.Fatalf("the task's events: %s", body)
		}
		// The code node's log line is stored, redacted.
		if n := len(f.App.Holding(t, "log: hello from the project / [REDACTED] / [none]")); n != 1 {
			t.Fatalf("%d log lines with the redacted token", n)
		}
		rec.neverAnswered(secret)
		if where := f.App.Holding(t, secret); len(where) > 0 {
			t.Fatalf("the database holds the secret in %v", where)
		}
	})
}
