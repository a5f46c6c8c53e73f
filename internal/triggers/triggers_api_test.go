package triggers_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/triggers"
)

type apiObj = map[string]any

func signBody(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// webhookFixture is an app with a project and a workflow that doubles n.
type webhookFixture struct {
	*fixture.API
	project, workflow string
}

func newWebhookFixture(t *testing.T, e db.Engine) *webhookFixture {
	f := &webhookFixture{API: fixture.NewAPI(t, e)}
	f.project = f.Project(t, f.Owner, "Hooks")
	f.workflow = f.createWorkflow(t, []apiObj{
		{"key": "double", "kind": "transform", "config": apiObj{"mapping": apiObj{"ok": "true", "n": "input.n * 2"}}},
		{"key": "respond", "kind": "end", "config": apiObj{"output": "nodes.double.output"}},
	}, []apiObj{{"source": "double", "target": "respond"}})
	return f
}

func (f *webhookFixture) createWorkflow(t *testing.T, nodes, edges []apiObj) string {
	t.Helper()
	r := f.Owner.Do("POST", "/api/workflows", apiObj{"project_id": f.project, "name": "wf " + t.Name(), "nodes": nodes, "edges": edges})
	fixture.Want(t, r, http.StatusCreated)
	return r.Map(t)["id"].(string)
}

type trigger struct {
	ID          string  `json:"id"`
	Token       *string `json:"token"`
	ReceiverURL *string `json:"receiver_url"`
	Enabled     bool    `json:"enabled"`
	HasSecret   bool    `json:"has_secret"`
	NextFireAt  *string `json:"next_fire_at"`
	Config      apiObj  `json:"config"`
}

func (f *webhookFixture) trigger(t *testing.T, workflow string, body apiObj) (trigger, []string) {
	t.Helper()
	r := f.Owner.Do("POST", "/api/workflows/"+workflow+"/triggers", body)
	fixture.Want(t, r, http.StatusCreated)
	var tr trigger
	r.JSON(t, &tr)
	if tr.Token != nil {
		f.App.Remember(*tr.Token)
	}
	if s, ok := body["secret"].(string); ok {
		f.App.Remember(s)
	}
	return tr, apitest.ObjectKeys(t, r.Body)
}

// deliver posts a body to a receiver token, anonymously.
func (f *webhookFixture) deliver(token, body string, header ...string) *apitest.Response {
	return f.App.Anonymous().Do("POST", "/api/workflows/triggers/webhook/"+token, body, header...)
}

func (f *webhookFixture) runCount(t *testing.T) int {
	return f.App.Count(t, "SELECT COUNT(*) FROM workflow_runs")
}

func TestWebhooks(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := newWebhookFixture(t, e)
		owner := f.Owner

		// An async webhook: its token and receiver URL once, 202 with the run.
		async, keys := f.trigger(t, f.workflow, apiObj{"kind": "webhook"})
		want := []string{"config", "created_at", "enabled", "has_secret", "id", "kind", "last_fired_at", "next_fire_at", "receiver_url", "token",
			"updated_at", "workflow_id"}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Fatalf("created webhook keys %v", keys)
		}
		if async.Token == nil || !strings.HasPrefix(*async.Token, "whk_") || !strings.HasSuffix(*async.ReceiverURL, "/api/workflows/triggers/webhook/"+*async.Token) ||
			async.Config["response_mode"] != "async" || async.HasSecret || !async.Enabled || async.NextFireAt != nil {
			t.Fatalf("created webhook %+v", async)
		}
		r := f.deliver(*async.Token, `{"n": 21}`)
		fixture.Want(t, r, http.StatusAccepted)
		runID := r.Map(t)["run_id"].(string)
		deadline := time.Now().Add(10 * time.Second)
		for {
			r = owner.Do("GET", "/api/workflows/runs/"+runID, nil)
			if r.Map(t)["status"] == "succeeded" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the webhook's run: %s", r.Body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if m := r.Map(t); m["output"].(apiObj)["n"] != float64(42) || m["input"].(apiObj)["n"] != float64(21) {
			t.Fatalf("run %s", r.Body)
		}
		// What a run cannot hold is refused, on both databases, before any run.
		runs := f.runCount(t)
		for _, c := range []struct{ path, body string }{{"", `{"a": "x\u0000"}`}, {"?k=%00", `{}`}, {"", `{"a": 1`}} {
			r := f.App.Anonymous().Do("POST", "/api/workflows/triggers/webhook/"+*async.Token+c.path, c.body)
			if r.Status != http.StatusBadRequest {
				t.Errorf("delivery %s %s: %d %s", c.path, c.body, r.Status, r.Body)
			}
		}
		if f.runCount(t) != runs {
			t.Fatal("a refused delivery started a run")
		}
		// Listed without the token.
		r = owner.Do("GET", "/api/workflows/"+f.workflow+"/triggers", nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.Contains(string(r.Body), *async.Token) || strings.Contains(string(r.Body), "receiver_url") {
			t.Fatalf("the list shows the token: %s", r.Body)
		}

		// A sync webhook with a secret answers with the end node's output.
		const secret = "a-signing-secret-0123456789"
		sync, _ := f.trigger(t, f.workflow, apiObj{"kind": "webhook", "config": apiObj{"response_mode": "sync"}, "secret": secret})
		if !sync.HasSecret || sync.Config["sync_timeout_seconds"] != float64(30) || strings.Contains(string(owner.Do("GET", "/api/workflows/"+f.workflow+"/triggers", nil).Body), secret) {
			t.Fatalf("sync webhook %+v", sync)
		}
		body := `{"n":21}`
		r = f.deliver(*sync.Token, body, "X-Hub-Signature-256", signBody(secret, body))
		fixture.Want(t, r, http.StatusOK)
		if strings.TrimSpace(string(r.Body)) != `{"n":42,"ok":true}` {
			t.Fatalf("sync answer %s", r.Body)
		}

		// Signatures: nothing but the right one starts a run.
		before := f.runCount(t)
		for name, c := range map[string]struct {
			body, sig string
			status    int
		}{
			"missing header":  {body, "", http.StatusUnauthorized},
			"tampered body":   {`{"n":22}`, signBody(secret, body), http.StatusUnauthorized},
			"wrong secret":    {body, signBody("another-secret-0123456789", body), http.StatusUnauthorized},
			"not sha256=":     {body, strings.TrimPrefix(signBody(secret, body), "sha256="), http.StatusUnauthorized},
			"signed not JSON": {`{"n":`, signBody(secret, `{"n":`), http.StatusBadRequest},
		} {
			r := f.deliver(*sync.Token, c.body, "X-Hub-Signature-256", c.sig)
			if r.Status != c.status || !strings.Contains(string(r.Body), `"code"`) {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
			}
		}
		if n := f.runCount(t); n != before {
			t.Fatalf("refused deliveries started %d runs", n-before)
		}

		// Unknown, malformed, disabled and rotated tokens start nothing.
		for _, token := range []string{"whk_" + strings.Repeat("A", 43), "nope", strings.Repeat("x", 150)} {
			if r := f.deliver(token, body); r.Status != http.StatusNotFound {
				t.Errorf("token %q: %d %s", token, r.Status, r.Body)
			}
		}
		fixture.Want(t, owner.Do("PATCH", "/api/workflows/triggers/"+async.ID, apiObj{"enabled": false}), http.StatusOK)
		if r := f.deliver(*async.Token, body); r.Status != http.StatusForbidden {
			t.Fatalf("a disabled trigger: %d %s", r.Status, r.Body)
		}
		fixture.Want(t, owner.Do("PATCH", "/api/workflows/triggers/"+async.ID, apiObj{"enabled": true}), http.StatusOK)
		r = owner.Do("POST", "/api/workflows/triggers/"+async.ID+"/rotate-token", nil)
		fixture.Want(t, r, http.StatusOK)
		var rotated trigger
		r.JSON(t, &rotated)
		f.App.Remember(*rotated.Token)
		if *rotated.Token == *async.Token {
			t.Fatal("rotate kept the token")
		}
		if r := f.deliver(*async.Token, body); r.Status != http.StatusNotFound {
			t.Fatalf("the rotated-out token: %d %s", r.Status, r.Body)
		}
		if n := f.runCount(t); n != before {
			t.Fatalf("refused deliveries started %d runs", n-before)
		}
		fixture.Want(t, f.deliver(*rotated.Token, body), http.StatusAccepted)

		// Secrets change: removed, a delivery needs no signature.
		fixture.Want(t, owner.Do("PATCH", "/api/workflows/triggers/"+sync.ID, apiObj{"remove_secret": true}), http.StatusOK)
		fixture.Want(t, f.deliver(*sync.Token, body), http.StatusOK)

		// A sync run that fails answers 422 naming it; one that outlasts the
		// timeout answers 202 with its id.
		failing := f.createWorkflow(t, []apiObj{{"key": "stop", "kind": "end", "config": apiObj{"status": "failed", "message": "no {{ input.n }}"}}}, nil)
		ft, _ := f.trigger(t, failing, apiObj{"kind": "webhook", "config": apiObj{"response_mode": "sync"}})
		r = f.deliver(*ft.Token, body)
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "no 21") {
			t.Fatalf("failing sync run: %d %s", r.Status, r.Body)
		}
		waiting := f.createWorkflow(t, []apiObj{{"key": "wait", "kind": "wait_event", "config": apiObj{"event": "never"}}}, nil)
		wt, _ := f.trigger(t, waiting, apiObj{"kind": "webhook", "config": apiObj{"response_mode": "sync", "sync_timeout_seconds": 1}})
		start := time.Now()
		r = f.deliver(*wt.Token, body)
		if r.Status != http.StatusAccepted || r.Map(t)["status"] != "running" || time.Since(start) > 5*time.Second {
			t.Fatalf("sync past its timeout: %d %s after %s", r.Status, r.Body, time.Since(start))
		}

		// Deleting the workflow takes its triggers along.
		fixture.Want(t, owner.Do("DELETE", "/api/workflows/"+failing, nil), http.StatusOK)
		if r := f.deliver(*ft.Token, body); r.Status != http.StatusNotFound {
			t.Fatalf("a deleted workflow's webhook: %d", r.Status)
		}
		fixture.Want(t, owner.Do("DELETE", "/api/workflows/triggers/"+wt.ID, nil), http.StatusOK)
		if r := owner.Do("PATCH", "/api/workflows/triggers/"+wt.ID, apiObj{"enabled": false}); r.Status != http.StatusNotFound {
			t.Fatalf("a deleted trigger: %d", r.Status)
		}
	})
}

func TestTriggerValidationAndTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := newWebhookFixture(t, e)
		owner, outsider := f.Owner, f.Outsider
		hook, _ := f.trigger(t, f.workflow, apiObj{"kind": "webhook"})
		sched, _ := f.trigger(t, f.workflow, apiObj{"kind": "schedule", "config": apiObj{"cron": "0 * * * *"}})
		if sched.Token != nil || sched.NextFireAt == nil || sched.Config["timezone"] != "UTC" {
			t.Fatalf("schedule %+v", sched)
		}
		path := "/api/workflows/" + f.workflow + "/triggers"
		bad := func(name string, body any) apitest.Scenario {
			return apitest.Scenario{Name: name, Client: owner, Method: "POST", Path: path, Body: body, WantStatus: http.StatusBadRequest, WantCode: "bad_request"}
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			bad("unknown kind", apiObj{"kind": "email"}),
			bad("no kind", apiObj{}),
			bad("webhook with a cron", apiObj{"kind": "webhook", "config": apiObj{"cron": "* * * * *"}}),
			bad("async with a timeout", apiObj{"kind": "webhook", "config": apiObj{"sync_timeout_seconds": 5}}),
			bad("bad response mode", apiObj{"kind": "webhook", "config": apiObj{"response_mode": "later"}}),
			bad("timeout over 300", apiObj{"kind": "webhook", "config": apiObj{"response_mode": "sync", "sync_timeout_seconds": 301}}),
			bad("short secret", apiObj{"kind": "webhook", "secret": "short"}),
			bad("secret with a control character", apiObj{"kind": "webhook", "secret": "0123456789abcdef\x07"}),
			bad("schedule without timing", apiObj{"kind": "schedule"}),
			bad("bad cron", apiObj{"kind": "schedule", "config": apiObj{"cron": "every day"}}),
			bad("bad zone", apiObj{"kind": "schedule", "config": apiObj{"cron": "@daily", "timezone": "Nowhere/City"}}),
			bad("schedule with a secret", apiObj{"kind": "schedule", "config": apiObj{"interval_seconds": 60}, "secret": "0123456789abcdef"}),
			bad("interval zero", apiObj{"kind": "schedule", "config": apiObj{"interval_seconds": 0, "cron": ""}}),
			bad("extra property", apiObj{"kind": "webhook", "colour": "red"}),
			{Name: "PATCH secret and remove", Client: owner, Method: "PATCH", Path: "/api/workflows/triggers/" + hook.ID,
				Body: apiObj{"secret": "0123456789abcdef", "remove_secret": true}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "PATCH a schedule's secret", Client: owner, Method: "PATCH", Path: "/api/workflows/triggers/" + sched.ID,
				Body: apiObj{"secret": "0123456789abcdef"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "PATCH a bad config", Client: owner, Method: "PATCH", Path: "/api/workflows/triggers/" + sched.ID,
				Body: apiObj{"config": apiObj{"cron": "99 * * * *"}}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "rotate a schedule", Client: owner, Method: "POST", Path: "/api/workflows/triggers/" + sched.ID + "/rotate-token",
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown workflow", Client: owner, Method: "GET", Path: "/api/workflows/01930000-0000-7000-8000-000000000000/triggers",
				WantStatus: 404, WantCode: "not_found"},
			{Name: "anonymous list", Method: "GET", Path: path, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous create", Method: "POST", Path: path, Body: apiObj{"kind": "webhook"}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous rotate", Method: "POST", Path: "/api/workflows/triggers/" + hook.ID + "/rotate-token", WantStatus: 401, WantCode: "unauthorized"},
		})
		// The schedule's config changes, and its next tick with it.
		r := owner.Do("PATCH", "/api/workflows/triggers/"+sched.ID, apiObj{"config": apiObj{"cron": "30 6 * * *", "timezone": "Asia/Tokyo"}})
		fixture.Want(t, r, http.StatusOK)
		if m := r.Map(t); m["config"].(apiObj)["timezone"] != "Asia/Tokyo" || !strings.HasSuffix(m["next_fire_at"].(string), "T21:30:00Z") {
			t.Fatalf("patched schedule %s", r.Body)
		}

		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "list", Method: "GET", Path: "/api/workflows/{id}/triggers", Create: func(*testing.T, *apitest.Client) string { return f.workflow }},
			{Name: "create", Method: "POST", Path: "/api/workflows/{id}/triggers", Body: apiObj{"kind": "schedule", "config": apiObj{"interval_seconds": 3600}},
				Create: func(*testing.T, *apitest.Client) string { return f.workflow }},
			{Name: "patch", Method: "PATCH", Path: "/api/workflows/triggers/{id}", Body: apiObj{"enabled": true},
				Create: func(*testing.T, *apitest.Client) string { return hook.ID }},
			{Name: "rotate", Method: "POST", Path: "/api/workflows/triggers/{id}/rotate-token",
				Create: func(*testing.T, *apitest.Client) string { return hook.ID }},
			{Name: "delete", Method: "DELETE", Path: "/api/workflows/triggers/{id}",
				Create: func(t *testing.T, c *apitest.Client) string {
					tr, _ := f.trigger(t, f.workflow, apiObj{"kind": "webhook"})
					return tr.ID
				}},
		})
	})
}

// TestWebhookBodyLimit: a body of exactly MaxBodyBytes is taken, one byte
// more is refused and starts nothing.
func TestWebhookBodyLimit(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := newWebhookFixture(t, e)
		tr, _ := f.trigger(t, f.workflow, apiObj{"kind": "webhook"})
		pad := func(n int) string {
			const head, tail = `{"n":1,"pad":"`, `"}`
			return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
		}
		fixture.Want(t, f.deliver(*tr.Token, pad(triggers.MaxBodyBytes)), http.StatusAccepted)
		runs := f.runCount(t)
		if r := f.deliver(*tr.Token, pad(triggers.MaxBodyBytes+1)); r.Status != http.StatusRequestEntityTooLarge && r.Status != http.StatusBadRequest {
			t.Fatalf("one byte over the limit: %d %s", r.Status, r.Body)
		}
		if f.runCount(t) != runs {
			t.Fatal("a body over the limit started a run")
		}
	})
}

// TestWebhookReplays: a delivery id a trigger received is refused with 409
// and starts nothing, until it is pruned after a day; a signed timestamp
// outside the tolerance, or not covered by the signature, is refused.
func TestWebhookReplays(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := newWebhookFixture(t, e)
		tr, _ := f.trigger(t, f.workflow, apiObj{"kind": "webhook"})
		other, _ := f.trigger(t, f.workflow, apiObj{"kind": "webhook"})
		body := `{"n":1}`
		for _, h := range []string{triggers.DeliveryHeader, triggers.GitHubDeliveryHeader} {
			id := "delivery-" + h
			fixture.Want(t, f.deliver(*tr.Token, body, h, id), http.StatusAccepted)
			runs := f.runCount(t)
			r := f.deliver(*tr.Token, body, h, id)
			if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), `"code":"conflict"`) {
				t.Fatalf("replayed %s: %d %s", h, r.Status, r.Body)
			}
			if f.runCount(t) != runs {
				t.Fatal("a replay started a run")
			}
			// Another trigger, and another id, are not replays.
			fixture.Want(t, f.deliver(*other.Token, body, h, id), http.StatusAccepted)
			fixture.Want(t, f.deliver(*tr.Token, body, h, id+"-2"), http.StatusAccepted)
		}
		if r := f.deliver(*tr.Token, body, triggers.DeliveryHeader, strings.Repeat("x", 201)); r.Status != http.StatusBadRequest {
			t.Fatalf("a delivery id of 201 characters: %d %s", r.Status, r.Body)
		}

		// A day later the id is forgotten (the hourly prune) and taken again.
		if _, err := f.App.DB.W.ExecContext(context.Background(), "UPDATE webhook_deliveries SET received_at = $1 WHERE delivery_id = $2 AND trigger_id = $3",
			time.Now().UTC().Add(-triggers.DeliveryMemory-time.Minute), "delivery-"+triggers.DeliveryHeader, tr.ID); err != nil {
			t.Fatal(err)
		}
		if n, err := f.App.Server.Services.Triggers.Prune(context.Background()); err != nil || n != 1 {
			t.Fatalf("prune: %d %v", n, err)
		}
		fixture.Want(t, f.deliver(*tr.Token, body, triggers.DeliveryHeader, "delivery-"+triggers.DeliveryHeader), http.StatusAccepted)

		// Signed timestamps.
		const secret = "a-signing-secret-0123456789"
		signed, _ := f.trigger(t, f.workflow, apiObj{"kind": "webhook", "secret": secret})
		now := time.Now().Unix()
		at := func(sec int64) string { return strconv.FormatInt(sec, 10) }
		fixture.Want(t, f.deliver(*signed.Token, body, triggers.TimestampHeader, at(now), "X-Hub-Signature-256", signBody(secret, at(now)+"."+body)), http.StatusAccepted)
		runs := f.runCount(t)
		for name, h := range map[string][]string{
			"too old":          {triggers.TimestampHeader, at(now - 600), "X-Hub-Signature-256", signBody(secret, at(now-600)+"."+body)},
			"too far ahead":    {triggers.TimestampHeader, at(now + 600), "X-Hub-Signature-256", signBody(secret, at(now+600)+"."+body)},
			"not covered":      {triggers.TimestampHeader, at(now), "X-Hub-Signature-256", signBody(secret, body)},
			"changed":          {triggers.TimestampHeader, at(now - 1), "X-Hub-Signature-256", signBody(secret, at(now)+"."+body)},
			"not Unix seconds": {triggers.TimestampHeader, "yesterday", "X-Hub-Signature-256", signBody(secret, "yesterday."+body)},
		} {
			if r := f.deliver(*signed.Token, body, h...); r.Status != http.StatusUnauthorized {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
			}
		}
		if f.runCount(t) != runs {
			t.Fatal("a refused delivery started a run")
		}
	})
}
