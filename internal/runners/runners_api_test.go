package runners_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/runnerapi"
	"slipway/internal/runners"
	"slipway/internal/workport"
)

// hub is an app in hub mode with an owner, a member of the owner's
// organization and an outsider in an organization of their own.
type hub struct {
	*fixture.API
	member *apitest.Client
	org    string
	ws     string
}

func newHub(t *testing.T, e db.Engine, env ...string) *hub {
	t.Helper()
	f := fixture.NewAPI(t, e, append([]string{"SERVICE_HUB_MODE", "true", "SERVICE_WORKER_LEASE_SECS", "5"}, env...)...)
	h := &hub{API: f, ws: f.Owner.DefaultWorkspace()}
	r := f.Owner.Do("GET", "/organization", nil)
	fixture.Want(t, r, http.StatusOK)
	h.org = r.Map(t)["id"].(string)
	h.member = f.App.Approved(f.Admin, "Mia Member")
	now := time.Now().UTC()
	f.Exec(t, "INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES ($1, $2, 'member', $3)", h.org, h.member.ID, now)
	f.Exec(t, "INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'member', $3)", h.ws, h.member.ID, now)
	return h
}

// inOrg selects the hub's organization (the member's default workspace is
// their own).
func (h *hub) inOrg() []string { return []string{"X-Organization-Id", h.org} }

// runner creates a static runner as the owner and returns its id and token.
func (h *hub) runner(t *testing.T, body map[string]any) (id, token string) {
	t.Helper()
	r := h.Owner.Do("POST", "/api/organization/runners", body)
	fixture.Want(t, r, http.StatusCreated)
	var out runners.CreatedRunner
	r.JSON(t, &out)
	h.App.Remember(out.Token)
	return out.Runner.ID, out.Token
}

// as is an anonymous client presenting a runner token.
func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

func (h *hub) call(t *testing.T, token, method, path string, body any) *apitest.Response {
	t.Helper()
	return h.App.Anonymous().Do(method, path, body, bearer(token)...)
}

func (h *hub) heartbeat(t *testing.T, token string, labels ...string) *runnerapi.HeartbeatReply {
	t.Helper()
	r := h.call(t, token, "POST", runnerapi.APIPrefix+"/heartbeat", map[string]any{"labels": labels, "version": "test", "backend": "process", "slots": 2})
	fixture.Want(t, r, http.StatusOK)
	var out runnerapi.HeartbeatReply
	r.JSON(t, &out)
	return &out
}

func (h *hub) list(t *testing.T, c *apitest.Client) []runners.Runner {
	t.Helper()
	r := c.Do("GET", "/api/organization/runners", nil)
	fixture.Want(t, r, http.StatusOK)
	var out []runners.Runner
	r.JSON(t, &out)
	return out
}

func TestOrganizationRunners(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHub(t, e)
		id, token := h.runner(t, map[string]any{"name": "builder-1", "allowed_labels": []string{"GPU", "linux", "gpu"}})
		if !strings.HasPrefix(token, runnerapi.StaticPrefix) {
			t.Fatalf("token %q", token)
		}
		if n := h.App.Count(t, "SELECT COUNT(*) FROM runners WHERE token_hash = $1", token); n != 0 {
			t.Fatal("the plaintext token is stored")
		}
		otherWS := h.Outsider.DefaultWorkspace()
		base := "/api/organization/runners"
		var rows []apitest.Scenario
		// Anonymous and non-admin callers.
		for _, rt := range []struct{ method, path string }{
			{"GET", base}, {"POST", base}, {"POST", base + "/enrollment-tokens"}, {"GET", base + "/onboarding-status"},
			{"PATCH", base + "/" + id}, {"DELETE", base + "/" + id}, {"POST", base + "/" + id + "/drain"},
			{"POST", base + "/" + id + "/status"}, {"POST", base + "/" + id + "/rotate-token"},
		} {
			rows = append(rows, apitest.Scenario{Name: "anonymous " + rt.method + " " + rt.path, Method: rt.method, Path: rt.path,
				Body: map[string]any{"name": "x"}, WantStatus: 401, WantCode: "unauthorized"})
			body := map[string]any{"name": "x"}
			if strings.HasSuffix(rt.path, "/status") {
				body = map[string]any{"status": "disabled"}
			}
			if rt.method == "GET" || strings.HasSuffix(rt.path, "/drain") || strings.HasSuffix(rt.path, "/rotate-token") || rt.method == "DELETE" {
				body = nil
			}
			// Naming another organization is refused like any non-member's
			// request, whatever the route.
			rows = append(rows, apitest.Scenario{Name: "outsider naming the organization " + rt.method + " " + rt.path, Client: h.Outsider,
				Method: rt.method, Path: rt.path, Body: body, Header: h.inOrg(), WantStatus: 403, WantCode: "forbidden"})
			if rt.method != "GET" {
				rows = append(rows, apitest.Scenario{Name: "member " + rt.method + " " + rt.path, Client: h.member, Method: rt.method, Path: rt.path,
					Body: body, Header: h.inOrg(), WantStatus: 403, WantCode: "forbidden"})
			}
		}
		rows = append(rows,
			apitest.Scenario{Name: "a member reads the runners", Client: h.member, Method: "GET", Path: base, Header: h.inOrg(), WantStatus: 200,
				WantContains: []string{`"name":"builder-1"`, `"allowed_labels":["gpu","linux"]`, `"status":"offline"`}, WantNotContains: []string{token, "token_hash"}},
			apitest.Scenario{Name: "an outsider sees only their organization's (none)", Client: h.Outsider, Method: "GET", Path: base, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if strings.TrimSpace(string(r.Body)) != "[]" {
						t.Fatalf("outsider's list = %s", r.Body)
					}
				}},
			apitest.Scenario{Name: "empty name", Client: h.Owner, Method: "POST", Path: base, Body: map[string]any{"name": " "}, WantStatus: 400},
			apitest.Scenario{Name: "control character in the name", Client: h.Owner, Method: "POST", Path: base, Body: map[string]any{"name": "a\x1bb"}, WantStatus: 400},
			apitest.Scenario{Name: "a label with a space", Client: h.Owner, Method: "POST", Path: base,
				Body: map[string]any{"name": "r", "allowed_labels": []string{"a b"}}, WantStatus: 400, WantContains: []string{"allowed_labels"}},
			apitest.Scenario{Name: "another organization's workspace in the grant", Client: h.Owner, Method: "POST", Path: base,
				Body: map[string]any{"name": "r", "allowed_workspace_ids": []string{otherWS}}, WantStatus: 400, WantContains: []string{"not a workspace of this organization"}},
			apitest.Scenario{Name: "unknown field", Client: h.Owner, Method: "POST", Path: base, Body: map[string]any{"name": "r", "owner": "me"}, WantStatus: 400},
			apitest.Scenario{Name: "a class change is refused", Client: h.Owner, Method: "PATCH", Path: base + "/" + id,
				Body: map[string]any{"class": "enrolled"}, WantStatus: 400, WantContains: []string{"class cannot change"}},
			apitest.Scenario{Name: "the same class is no change", Client: h.Owner, Method: "PATCH", Path: base + "/" + id,
				Body: map[string]any{"class": "static", "name": "builder-one"}, WantStatus: 200, WantContains: []string{`"name":"builder-one"`}},
			apitest.Scenario{Name: "re-scope to a workspace and clear the labels", Client: h.Owner, Method: "PATCH", Path: base + "/" + id,
				Body: map[string]any{"allowed_workspace_ids": []string{h.ws}, "allowed_labels": []string{}}, WantStatus: 200,
				WantContains: []string{`"allowed_workspace_ids":["` + h.ws + `"]`, `"allowed_labels":[]`, `"name":"builder-one"`}},
			apitest.Scenario{Name: "a bad status", Client: h.Owner, Method: "POST", Path: base + "/" + id + "/status", Body: map[string]any{"status": "paused"}, WantStatus: 400},
			apitest.Scenario{Name: "disable", Client: h.Owner, Method: "POST", Path: base + "/" + id + "/status", Body: map[string]any{"status": "disabled"},
				WantStatus: 200, WantContains: []string{`"status":"disabled"`, `"disabled":true`}},
			apitest.Scenario{Name: "enable", Client: h.Owner, Method: "POST", Path: base + "/" + id + "/status", Body: map[string]any{"status": "enabled"},
				WantStatus: 200, WantContains: []string{`"disabled":false`}},
			apitest.Scenario{Name: "drain", Client: h.Owner, Method: "POST", Path: base + "/" + id + "/drain", WantStatus: 200, WantContains: []string{`"status":"draining"`}},
			apitest.Scenario{Name: "enable ends a drain", Client: h.Owner, Method: "POST", Path: base + "/" + id + "/status", Body: map[string]any{"status": "enabled"},
				WantStatus: 200, WantContains: []string{`"draining":false`}},
			apitest.Scenario{Name: "onboarding: start a runner", Client: h.member, Method: "GET", Path: base + "/onboarding-status", Header: h.inOrg(), WantStatus: 200,
				WantContains: []string{`"next_step":"start_runner"`, `"runners":1`, `"hub_mode":true`}},
			apitest.Scenario{Name: "an enrollment token", Client: h.Owner, Method: "POST", Path: base + "/enrollment-tokens",
				Body: map[string]any{"name": "ci", "allowed_labels": []string{"arm"}, "expires_in_secs": 120}, WantStatus: 201,
				WantContains: []string{`"token":"` + runnerapi.EnrollmentPrefix, `"runner_id":null`}},
			apitest.Scenario{Name: "an enrollment token lasts at least a minute", Client: h.Owner, Method: "POST", Path: base + "/enrollment-tokens",
				Body: map[string]any{"expires_in_secs": 5}, WantStatus: 400},
		)
		apitest.Run(t, h.App, rows)

		// Another organization's runner id answers exactly like an unknown one.
		apitest.CheckTenancy(t, h.Owner, h.Outsider, []apitest.TenancyCase{
			{Name: "patch", Method: "PATCH", Path: base + "/{id}", Body: map[string]any{"name": "mine"}, Create: func(t *testing.T, _ *apitest.Client) string { return id }},
			{Name: "drain", Method: "POST", Path: base + "/{id}/drain", Create: func(t *testing.T, _ *apitest.Client) string { return id }},
			{Name: "status", Method: "POST", Path: base + "/{id}/status", Body: map[string]any{"status": "enabled"}, Create: func(t *testing.T, _ *apitest.Client) string { return id }},
			{Name: "rotate-token", Method: "POST", Path: base + "/{id}/rotate-token", Create: func(t *testing.T, _ *apitest.Client) string { return id }},
		})
		// Delete, by hand: the harness's own check would delete it.
		foreign, unknown := h.Outsider.Do("DELETE", base+"/"+id, nil), h.Outsider.Do("DELETE", base+"/"+ids.New(), nil)
		if foreign.Status != 404 || string(foreign.Body) != string(unknown.Body) {
			t.Fatalf("an outsider's delete of our runner = %d %s; of an unknown id %s", foreign.Status, foreign.Body, unknown.Body)
		}
		// (The harness's own checks, as the owner, renamed it.)
		if got := h.list(t, h.Owner); len(got) != 1 || got[0].Name != "mine" {
			t.Fatalf("the outsider's requests changed the runner: %+v", got)
		}
		// Changes are audited.
		// Changes are audited (the scenario's drain and the harness's).
		if n := len(h.App.AuditEntries(t, "runner.drain", id)); n != 2 {
			t.Fatalf("%d drain audit entries", n)
		}
	})
}

// TestRunnerCredentials: static tokens, rotation, enrolment (single use),
// JWT refresh and revocation, deletion, and what the runner API refuses.
func TestRunnerCredentials(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHub(t, e)
		id, token := h.runner(t, map[string]any{"name": "static"})
		hb := runnerapi.APIPrefix + "/heartbeat"
		beat := map[string]any{"version": "t", "backend": "process", "slots": 1}

		apitest.Run(t, h.App, []apitest.Scenario{
			{Name: "no token", Method: "POST", Path: hb, Body: beat, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "a session is no runner", Client: h.Owner, Method: "POST", Path: hb, Body: beat, WantStatus: 401},
			{Name: "an unknown static token", Method: "POST", Path: hb, Body: beat, Header: bearer(runnerapi.StaticPrefix + "nope"), WantStatus: 401},
			{Name: "a forged JWT", Method: "POST", Path: hb, Body: beat, Header: bearer(runnerapi.JWTPrefix + "eyJhbGciOiJIUzI1NiJ9.e30.c2ln"), WantStatus: 401},
			{Name: "a runner token outside the runner API", Method: "GET", Path: "/api/projects", Header: bearer(token), WantStatus: 401},
			{Name: "a bad label", Method: "POST", Path: hb, Body: map[string]any{"labels": []string{"a,b"}, "version": "t", "backend": "p", "slots": 1},
				Header: bearer(token), WantStatus: 400},
			{Name: "a control character in the version", Method: "POST", Path: hb, Body: map[string]any{"version": "t\x00", "backend": "p", "slots": 1},
				Header: bearer(token), WantStatus: 400},
			{Name: "a static token refreshes nothing", Method: "POST", Path: runnerapi.APIPrefix + "/token", Header: bearer(token), WantStatus: 400},
		})
		reply := h.heartbeat(t, token, "Linux", "gpu", "linux")
		if reply.RunnerID != id || reply.Status != "online" || reply.StaleAfterSecs != 90 || reply.LeaseSecs != 5 {
			t.Fatalf("heartbeat reply = %+v", reply)
		}
		if got := h.list(t, h.Owner)[0]; !got.Online || !got.Eligible || strings.Join(got.Labels, ",") != "gpu,linux" || got.Slots != 2 || got.LastHeartbeatAt == nil {
			t.Fatalf("runner after a heartbeat = %+v", got)
		}

		// Rotation: the old static token is refused at once.
		r := h.Owner.Do("POST", "/api/organization/runners/"+id+"/rotate-token", nil)
		fixture.Want(t, r, http.StatusOK)
		var rot runners.RotatedToken
		r.JSON(t, &rot)
		h.App.Remember(rot.Token)
		if rot.Kind != "static" || rot.ExpiresAt != nil || rot.Token == token {
			t.Fatalf("rotated = %+v", rot)
		}
		fixture.Want(t, h.call(t, token, "POST", hb, beat), http.StatusUnauthorized)
		h.heartbeat(t, rot.Token)

		// Enrolment: single use, even under a race.
		r = h.Owner.Do("POST", "/api/organization/runners/enrollment-tokens", map[string]any{"allowed_labels": []string{"arm"}})
		fixture.Want(t, r, http.StatusCreated)
		var en runners.Enrollment
		r.JSON(t, &en)
		h.App.Remember(en.Token)
		type result struct {
			status int
			tok    runnerapi.Token
		}
		results := make(chan result, 8)
		for i := 0; i < 8; i++ {
			go func() {
				r := h.App.Anonymous().Do("POST", runnerapi.APIPrefix+"/enroll", map[string]any{"token": en.Token, "name": fmt.Sprintf("r%d", i)})
				var res result
				res.status = r.Status
				if r.Status == 200 {
					_ = json.Unmarshal(r.Body, &res.tok)
				}
				results <- res
			}()
		}
		var jwt runnerapi.Token
		wins := 0
		for i := 0; i < 8; i++ {
			res := <-results
			switch res.status {
			case 200:
				wins++
				jwt = res.tok
			case 401:
			default:
				t.Fatalf("enroll answered %d", res.status)
			}
		}
		if wins != 1 {
			t.Fatalf("%d of 8 concurrent redeems won, want exactly 1", wins)
		}
		h.App.Remember(jwt.Token)
		if !strings.HasPrefix(jwt.Token, runnerapi.JWTPrefix) || time.Until(jwt.ExpiresAt) < 59*time.Minute {
			t.Fatalf("jwt = %+v", jwt)
		}
		fixture.Want(t, h.App.Anonymous().Do("POST", runnerapi.APIPrefix+"/enroll", map[string]any{"token": en.Token}), http.StatusUnauthorized)
		enrolled := h.heartbeat(t, jwt.Token, "arm")
		if enrolled.RunnerID != jwt.RunnerID || !strings.HasPrefix(enrolled.Name, "r") {
			t.Fatalf("enrolled runner = %+v", enrolled)
		}
		var listed runners.Runner
		for _, x := range h.list(t, h.Owner) {
			if x.ID == jwt.RunnerID {
				listed = x
			}
		}
		if listed.Class != runners.ClassEnrolled || strings.Join(listed.AllowedLabels, ",") != "arm" {
			t.Fatalf("enrolled runner as listed = %+v", listed)
		}

		// Refresh: a new JWT that works.
		r = h.call(t, jwt.Token, "POST", runnerapi.APIPrefix+"/token", nil)
		fixture.Want(t, r, http.StatusOK)
		var fresh runnerapi.Token
		r.JSON(t, &fresh)
		h.App.Remember(fresh.Token)
		h.heartbeat(t, fresh.Token)

		// Rotating an enrolled runner revokes its JWTs at once and gives an
		// enrollment token that re-enrols the same runner.
		r = h.Owner.Do("POST", "/api/organization/runners/"+jwt.RunnerID+"/rotate-token", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &rot)
		h.App.Remember(rot.Token)
		if rot.Kind != "enrollment" || rot.ExpiresAt == nil {
			t.Fatalf("rotated enrolled runner = %+v", rot)
		}
		fixture.Want(t, h.call(t, fresh.Token, "POST", hb, beat), http.StatusUnauthorized)
		fixture.Want(t, h.call(t, jwt.Token, "POST", hb, beat), http.StatusUnauthorized)
		r = h.App.Anonymous().Do("POST", runnerapi.APIPrefix+"/enroll", map[string]any{"token": rot.Token})
		fixture.Want(t, r, http.StatusOK)
		var again runnerapi.Token
		r.JSON(t, &again)
		h.App.Remember(again.Token)
		if again.RunnerID != jwt.RunnerID {
			t.Fatalf("re-enrolled as %s, want the same runner %s", again.RunnerID, jwt.RunnerID)
		}
		h.heartbeat(t, again.Token)

		// An expired enrollment token is refused like a used one.
		r = h.Owner.Do("POST", "/api/organization/runners/enrollment-tokens", nil)
		fixture.Want(t, r, http.StatusCreated)
		r.JSON(t, &en)
		h.App.Remember(en.Token)
		h.Exec(t, "UPDATE runner_enrollment_tokens SET expires_at = $2 WHERE id = $1", en.ID, time.Now().UTC().Add(-time.Second))
		r = h.App.Anonymous().Do("POST", runnerapi.APIPrefix+"/enroll", map[string]any{"token": en.Token})
		fixture.Want(t, r, http.StatusUnauthorized)
		if !strings.Contains(string(r.Body), "unknown, expired or already redeemed") {
			t.Fatalf("expired enrollment: %s", r.Body)
		}

		// Deleting a runner refuses its token at once.
		fixture.Want(t, h.Owner.Do("DELETE", "/api/organization/runners/"+id, nil), http.StatusOK)
		fixture.Want(t, h.call(t, rot.Token, "POST", hb, beat), http.StatusUnauthorized)
		fixture.Want(t, h.Owner.Do("DELETE", "/api/organization/runners/"+id, nil), http.StatusNotFound)
	})
}

// TestRunnerDispatch drives the worker port over HTTP by hand: routing by
// labels and grants, the runner line, leases that are the caller's own,
// idempotent event batches, drain, and fleet_only.
func TestRunnerDispatch(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHub(t, e)
		_, gpuTok := h.runner(t, map[string]any{"name": "gpu"})
		_, cpuTok := h.runner(t, map[string]any{"name": "cpu"})
		h.heartbeat(t, gpuTok, "gpu", "linux")
		h.heartbeat(t, cpuTok, "linux")
		project := h.Project(t, h.Owner, "p")

		gpuTask := h.Task(t, h.Owner, project, "echo gpu", map[string]any{"hold": false, "config": map[string]any{"runner": map[string]any{"required_labels": []string{"GPU"}}}})
		line := h.Owner.Do("GET", "/api/tasks/"+gpuTask.ID+"/runner-line", nil)
		fixture.Want(t, line, http.StatusOK)
		if got := strings.TrimSpace(string(line.Body)); got != `{"in_group":true,"match_count":1,"state":"matched"}` {
			t.Fatalf("runner line = %s", got)
		}
		anyTask := h.Task(t, h.Owner, project, "echo any", map[string]any{"hold": false})
		line = h.Owner.Do("GET", "/api/tasks/"+anyTask.ID+"/runner-line", nil)
		if got := strings.TrimSpace(string(line.Body)); got != `{"in_group":false,"match_count":2,"state":"matched"}` {
			t.Fatalf("runner line = %s", got)
		}

		claim := func(token string) []workport.Assignment {
			t.Helper()
			r := h.call(t, token, "POST", runnerapi.APIPrefix+"/claim", map[string]any{"max": 5, "backend": "process"})
			fixture.Want(t, r, http.StatusOK)
			var out runnerapi.Assignments
			r.JSON(t, &out)
			return out.Assignments
		}
		cpuGot := claim(cpuTok)
		if len(cpuGot) != 1 || cpuGot[0].Agent.TaskID != anyTask.ID {
			t.Fatalf("the cpu runner claimed %+v, want only the unlabelled task", cpuGot)
		}
		gpuGot := claim(gpuTok)
		if len(gpuGot) != 1 || gpuGot[0].Agent.TaskID != gpuTask.ID || gpuGot[0].Lease.Worker != "runner@"+gpuGot[0].Lease.Worker[len("runner@"):] {
			t.Fatalf("the gpu runner claimed %+v", gpuGot)
		}
		if a := gpuGot[0]; a.TTL != 5*time.Second || a.Agent.Repo.URL == "" || a.Agent.Repo.Branch == "" || a.Lease.RunID == "" {
			t.Fatalf("assignment = %+v", a)
		}

		// A lease is only ever its holder's: another runner presenting it,
		// or the holder pointing it at another run, is told it is lost.
		l := gpuGot[0].Lease
		ext := runnerapi.APIPrefix + "/jobs/" + l.JobID + "/extend"
		fixture.Want(t, h.call(t, cpuTok, "POST", ext, map[string]any{"lease": l}), http.StatusConflict)
		forged := l
		forged.RunID = cpuGot[0].Lease.RunID
		fixture.Want(t, h.call(t, gpuTok, "POST", runnerapi.APIPrefix+"/jobs/"+l.JobID+"/events",
			map[string]any{"lease": forged, "batch": map[string]any{"seq": 1, "events": []any{}}}), http.StatusConflict)
		forged = cpuGot[0].Lease
		forged.Worker = l.Worker
		fixture.Want(t, h.call(t, gpuTok, "POST", runnerapi.APIPrefix+"/jobs/"+forged.JobID+"/extend", map[string]any{"lease": forged}), http.StatusConflict)
		r := h.call(t, gpuTok, "POST", ext, map[string]any{"lease": l})
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"cancel":false`) {
			t.Fatalf("extend = %s", r.Body)
		}

		// A message for the agent reaches its runner: a deliver nudge on the
		// control stream, the line with the next lease renewal, and only
		// lines after the one the runner says it delivered.
		fixture.Want(t, h.Owner.Do("POST", "/api/tasks/"+gpuTask.ID+"/intervene", map[string]any{"text": "Use the big GPU."}), http.StatusCreated)
		r = h.call(t, gpuTok, "GET", runnerapi.APIPrefix+"/control?wait_ms=5000", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `{"job_id":"`+l.JobID+`","action":"deliver"}`) {
			t.Fatalf("control = %s", r.Body)
		}
		r = h.call(t, gpuTok, "POST", ext, map[string]any{"lease": l, "inbox_after": 0})
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"inbox":[{"seq":1,"line":{"role":"user","seq":1,"text":"Use the big GPU.","type":"message"}}]`) {
			t.Fatalf("extend = %s", r.Body)
		}
		r = h.call(t, gpuTok, "POST", ext, map[string]any{"lease": l, "inbox_after": 1})
		if !strings.Contains(string(r.Body), `"inbox":[]`) {
			t.Fatalf("extend after the delivered line = %s", r.Body)
		}
		if r := h.call(t, cpuTok, "GET", runnerapi.APIPrefix+"/control?wait_ms=10", nil); strings.Contains(string(r.Body), l.JobID) {
			t.Fatalf("another runner heard of the message: %s", r.Body)
		}

		// A retried batch is stored once.
		batch := map[string]any{"lease": l, "batch": map[string]any{"seq": 1, "events": []any{
			map[string]any{"type": "message", "payload": map[string]any{"text": "hello from the runner"}, "at": time.Now().UTC()}}}}
		for i := 0; i < 3; i++ {
			fixture.Want(t, h.call(t, gpuTok, "POST", runnerapi.APIPrefix+"/jobs/"+l.JobID+"/events", batch), http.StatusOK)
		}
		if n := strings.Count(fixture.DumpEvents(fixture.Events(t, h.Owner, gpuTask.ID, "")), "hello from the runner"); n != 1 {
			t.Fatalf("the batch was stored %d times", n)
		}
		fixture.Want(t, h.call(t, gpuTok, "POST", runnerapi.APIPrefix+"/jobs/"+l.JobID+"/finish",
			map[string]any{"lease": l, "result": map[string]any{"outcome": "exploded"}}), http.StatusBadRequest)
		fixture.Want(t, h.call(t, gpuTok, "POST", runnerapi.APIPrefix+"/jobs/"+l.JobID+"/finish",
			map[string]any{"lease": l, "result": map[string]any{"outcome": "failed", "error": "it broke"}}), http.StatusOK)
		if got := fixture.GetTask(t, h.Owner, gpuTask.ID); got.Status != "failed" || got.Error != "it broke" {
			t.Fatalf("task after finish = %s %q", got.Status, got.Error)
		}
		fixture.Want(t, h.call(t, gpuTok, "POST", runnerapi.APIPrefix+"/jobs/"+l.JobID+"/finish",
			map[string]any{"lease": l, "result": map[string]any{"outcome": "succeeded"}}), http.StatusConflict)

		// Cancel reaches the holder on the control stream.
		fixture.Want(t, h.Owner.Do("POST", "/api/tasks/"+anyTask.ID+"/cancel", nil), http.StatusOK)
		r = h.call(t, cpuTok, "GET", runnerapi.APIPrefix+"/control?wait_ms=5000", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `{"job_id":"`+cpuGot[0].Lease.JobID+`","action":"cancel"}`) {
			t.Fatalf("control = %s", r.Body)
		}
		if r := h.call(t, gpuTok, "GET", runnerapi.APIPrefix+"/control?wait_ms=10", nil); strings.TrimSpace(string(r.Body)) != `{"controls":[]}` {
			t.Fatalf("another runner's control stream = %s", r.Body)
		}

		// Draining the gpu runner: gpu work has no eligible runner, and
		// labelled work waits for one rather than run on the server.
		var gpuID string
		for _, x := range h.list(t, h.Owner) {
			if x.Name == "gpu" {
				gpuID = x.ID
			}
		}
		fixture.Want(t, h.Owner.Do("POST", "/api/organization/runners/"+gpuID+"/drain", nil), http.StatusOK)
		gpu2 := h.Task(t, h.Owner, project, "echo gpu", map[string]any{"hold": true, "config": map[string]any{"runner": map[string]any{"required_labels": []string{"gpu"}}}})
		line = h.Owner.Do("GET", "/api/tasks/"+gpu2.ID+"/runner-line", nil)
		if got := strings.TrimSpace(string(line.Body)); got != `{"in_group":true,"match_count":0,"state":"waiting"}` {
			t.Fatalf("runner line with the gpu runner drained = %s", got)
		}
		if got := claim(gpuTok); len(got) != 0 {
			t.Fatalf("a draining runner claimed %+v", got)
		}
		// Tenancy: the outsider's task line never counts our runners.
		op := h.Project(t, h.Outsider, "theirs")
		theirs := h.Task(t, h.Outsider, op, "echo", map[string]any{"hold": true})
		line = h.Outsider.Do("GET", "/api/tasks/"+theirs.ID+"/runner-line", nil)
		if got := strings.TrimSpace(string(line.Body)); got != `{"in_group":false,"match_count":0,"state":"local"}` {
			t.Fatalf("the outsider's runner line = %s", got)
		}
		fixture.Want(t, h.Outsider.Do("GET", "/api/tasks/"+gpu2.ID+"/runner-line", nil), http.StatusNotFound)
	})
}

// TestFleetOnly: with no eligible runner a launch fails naming the cause;
// the runner line says waiting.
func TestFleetOnly(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHub(t, e, "SERVICE_AGENT_EXECUTION", "fleet_only")
		project := h.Project(t, h.Owner, "p")
		task := h.Task(t, h.Owner, project, "echo", map[string]any{"hold": false, "config": map[string]any{"runner": map[string]any{"required_labels": []string{"gpu"}}}})
		if task.Status != "failed" || !strings.Contains(task.Error, "no eligible runner") || !strings.Contains(task.Error, "gpu") {
			t.Fatalf("task = %s %q", task.Status, task.Error)
		}
		if n := h.App.Count(t, "SELECT COUNT(*) FROM jobs WHERE ref_id = $1", task.ID); n != 0 {
			t.Fatalf("%d jobs for a task that cannot run", n)
		}
		line := h.Owner.Do("GET", "/api/tasks/"+task.ID+"/runner-line", nil)
		if got := strings.TrimSpace(string(line.Body)); got != `{"in_group":true,"match_count":0,"state":"waiting"}` {
			t.Fatalf("runner line = %s", got)
		}
		// With a runner that has the label, a restart queues it for the fleet.
		_, tok := h.runner(t, map[string]any{"name": "gpu"})
		h.heartbeat(t, tok, "gpu")
		r := h.Owner.Do("POST", "/api/tasks/"+task.ID+"/restart", nil)
		fixture.Want(t, r, http.StatusOK)
		if got := fixture.GetTask(t, h.Owner, task.ID); got.Status != "queued" {
			t.Fatalf("restarted task = %s %q", got.Status, got.Error)
		}
		if n := h.App.Count(t, "SELECT COUNT(*) FROM jobs WHERE ref_id = $1 AND pool = 'fleet' AND labels = ' gpu '", task.ID); n != 1 {
			t.Fatal("the restarted task's job is not on the fleet with its label")
		}
	})
}

// TestUnacknowledgedClaim: work a runner claimed and never acknowledged
// (it died, or the claim's answer never reached it) goes back to the queue
// when its lease runs out, without costing an attempt, and another runner
// takes it.
func TestUnacknowledgedClaim(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHub(t, e)
		_, aTok := h.runner(t, map[string]any{"name": "a"})
		_, bTok := h.runner(t, map[string]any{"name": "b"})
		h.heartbeat(t, aTok, "linux")
		h.heartbeat(t, bTok, "linux")
		task := h.Task(t, h.Owner, h.Project(t, h.Owner, "p"), "echo", map[string]any{"hold": false})
		claim := func(token string, wait int) []workport.Assignment {
			t.Helper()
			r := h.call(t, token, "POST", runnerapi.APIPrefix+"/claim", map[string]any{"max": 1, "backend": "process", "wait_ms": wait})
			fixture.Want(t, r, http.StatusOK)
			var out runnerapi.Assignments
			r.JSON(t, &out)
			return out.Assignments
		}
		got := claim(aTok, 0)
		if len(got) != 1 || got[0].Lease.Attempt != 1 {
			t.Fatalf("a's claim = %+v", got)
		}
		// Runner b keeps heartbeating; a says nothing more. Within the
		// lease (5 s) and a rescue round, the work comes back.
		deadline := time.Now().Add(20 * time.Second)
		var again []workport.Assignment
		for len(again) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the unacknowledged work never came back; task is %s", fixture.GetTask(t, h.Owner, task.ID).Status)
			}
			h.heartbeat(t, bTok, "linux")
			again = claim(bTok, 1000)
		}
		if again[0].Agent.TaskID != task.ID || again[0].Lease.Attempt != 1 {
			t.Fatalf("b's claim = %+v (want the same task, attempt 1: the first claim cost nothing)", again[0])
		}
		if log := fixture.DumpEvents(fixture.Events(t, h.Owner, task.ID, "")); !strings.Contains(log, "went away before starting it") {
			t.Fatalf("the task's log does not say why it came back:\n%s", log)
		}
	})
}

// TestRescopeReachesAWaitingRunner: a grant widened while the runner waits
// in a long poll lets it take the work it now matches in that same poll.
func TestRescopeReachesAWaitingRunner(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHub(t, e)
		_, aTok := h.runner(t, map[string]any{"name": "a"})
		bID, bTok := h.runner(t, map[string]any{"name": "b", "allowed_labels": []string{"cpu"}})
		h.heartbeat(t, aTok, "gpu")
		h.heartbeat(t, bTok, "gpu")
		task := h.Task(t, h.Owner, h.Project(t, h.Owner, "p"), "echo", map[string]any{"hold": false,
			"config": map[string]any{"runner": map[string]any{"required_labels": []string{"gpu"}}}})
		got := make(chan []workport.Assignment, 1)
		go func() {
			r := h.call(t, bTok, "POST", runnerapi.APIPrefix+"/claim", map[string]any{"max": 1, "backend": "process", "wait_ms": 20000})
			var out runnerapi.Assignments
			_ = json.Unmarshal(r.Body, &out)
			got <- out.Assignments
		}()
		time.Sleep(500 * time.Millisecond) // b waits, unable to take gpu work
		fixture.Want(t, h.Owner.Do("PATCH", "/api/organization/runners/"+bID, map[string]any{"allowed_labels": []string{}}), http.StatusOK)
		as := <-got
		if len(as) != 1 || as[0].Agent.TaskID != task.ID {
			t.Fatalf("the re-scoped runner's waiting claim answered %+v", as)
		}
	})
}

// A runner disabled (or drained) after its claim read its match claims
// nothing: the claim's transaction asks again.
func TestDisableBetweenMatchAndClaim(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHub(t, e)
		ctx := context.Background()
		for _, stop := range []string{"disabled", "draining"} {
			id, token := h.runner(t, map[string]any{"name": "racer-" + stop})
			h.heartbeat(t, token, "linux")
			svc := h.App.Server.Services.Runners
			m, err := svc.Match(ctx, id)
			if err != nil || m == nil {
				t.Fatalf("match %v, %v", m, err)
			}
			// Fleet work the runner was eligible for when it read its match.
			task := h.Task(t, h.Owner, h.Project(t, h.Owner, "p-"+stop), "true", map[string]any{"hold": false})
			if stop == "disabled" {
				fixture.Want(t, h.Owner.Do("POST", "/api/organization/runners/"+id+"/status", map[string]any{"status": "disabled"}), http.StatusOK)
			} else {
				fixture.Want(t, h.Owner.Do("POST", "/api/organization/runners/"+id+"/drain", nil), http.StatusOK)
			}
			as, err := h.App.Server.Dispatcher.ClaimMatching(ctx, workport.ClaimRequest{Worker: runnerapi.Owner(id), Backend: "process", Max: 1},
				func(context.Context) (*jobs.Match, error) { return m, nil }) // the match read before the change
			if err != nil || len(as) != 0 {
				t.Fatalf("a %s runner claimed %+v (%v)", stop, as, err)
			}
			// Without the check in the claim, the same stale match claims it.
			stale := *m
			stale.Still = nil
			if as, err := h.App.Server.Dispatcher.ClaimMatching(ctx, workport.ClaimRequest{Worker: runnerapi.Owner(id), Backend: "process", Max: 1},
				func(context.Context) (*jobs.Match, error) { return &stale, nil }); err != nil || len(as) != 1 {
				t.Fatalf("the control claim got %+v (%v): the test does not reach the race", as, err)
			}
			fixture.Want(t, h.Owner.Do("POST", "/api/tasks/"+task.ID+"/cancel", nil), http.StatusOK)
		}
	})
}

// TestRunnerHealthAndGoodbye: a runner whose backend check fails says so in
// its heartbeat and is not eligible (its work goes elsewhere, with a
// routing event saying why); one that says goodbye is offline at once.
func TestRunnerHealthAndGoodbye(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		h := newHub(t, e)
		id, tok := h.runner(t, map[string]any{"name": "r"})
		beat := func(unhealthy string) {
			t.Helper()
			r := h.call(t, tok, "POST", runnerapi.APIPrefix+"/heartbeat", map[string]any{"version": "test", "backend": "docker", "slots": 2,
				"unhealthy": unhealthy})
			fixture.Want(t, r, http.StatusOK)
		}
		find := func() runners.Runner {
			for _, x := range h.list(t, h.Owner) {
				if x.ID == id {
					return x
				}
			}
			t.Fatal("runner not listed")
			return runners.Runner{}
		}
		beat("no container engine at unix:///gone.sock:\ndial unix: connect refused")
		if r := find(); r.Status != "online" || r.Healthy || r.Eligible || r.HealthError != "no container engine at unix:///gone.sock:dial unix: connect refused" {
			t.Fatalf("unhealthy runner = %+v", r)
		}
		project := h.Project(t, h.Owner, "p")
		task := h.Task(t, h.Owner, project, "echo", map[string]any{"hold": true})
		if got := strings.TrimSpace(string(h.Owner.Do("GET", "/api/tasks/"+task.ID+"/runner-line", nil).Body)); got != `{"in_group":false,"match_count":0,"state":"local"}` {
			t.Fatalf("runner line with only an unhealthy runner = %s", got)
		}
		claim := h.call(t, tok, "POST", runnerapi.APIPrefix+"/claim", map[string]any{"max": 1, "backend": "docker"})
		if fixture.Want(t, claim, http.StatusOK); strings.TrimSpace(string(claim.Body)) != `{"assignments":[]}` {
			t.Fatalf("an unhealthy runner claimed %s", claim.Body)
		}

		beat("")
		if r := find(); !r.Healthy || !r.Eligible || r.HealthError != "" {
			t.Fatalf("healthy again = %+v", r)
		}
		labelled := h.Task(t, h.Owner, project, "echo", map[string]any{"hold": false, "config": map[string]any{"runner": map[string]any{"required_labels": []string{"gpu"}}}})
		evs := h.Owner.Do("GET", "/api/tasks/"+labelled.ID+"/events", nil)
		if !strings.Contains(string(evs.Body), `"event_type":"routing"`) || !strings.Contains(string(evs.Body), `labelled work never runs on the server`) {
			t.Fatalf("a labelled task with no runner for it: events %s", evs.Body)
		}

		fixture.Want(t, h.call(t, "scrn_not-a-token", "POST", runnerapi.APIPrefix+"/goodbye", nil), http.StatusUnauthorized)
		fixture.Want(t, h.call(t, tok, "POST", runnerapi.APIPrefix+"/goodbye", nil), http.StatusOK)
		if r := find(); r.Status != "offline" || r.Eligible || r.Running != 0 {
			t.Fatalf("after goodbye = %+v", r)
		}
		beat("")
		if r := find(); r.Status != "online" {
			t.Fatalf("a heartbeat after goodbye = %+v", r)
		}
	})
}
