package errorpages_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/errorpages"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

type obj = map[string]any

const (
	wsPath    = "/api/workspace/error-page"
	adminPath = "/api/admin/error-page"
)

func orgOf(t *testing.T, c *apitest.Client) string {
	t.Helper()
	return c.Do("GET", "/organization", nil).Map(t)["id"].(string)
}

// joined brings a new account into the owner's organization and gives it
// role in the owner's workspace, acting there.
func joined(t *testing.T, f *fixture.API, name, role string) *apitest.Client {
	t.Helper()
	owner := f.Owner
	ws, org := owner.DefaultWorkspace(), orgOf(t, owner)
	c := f.App.Approved(f.Admin, name)
	r := owner.Do("POST", "/organization/invites", obj{"email": c.Email, "role": "member", "workspace_ids": []string{ws}}, "X-Organization-Id", org)
	fixture.Want(t, r, http.StatusCreated)
	token := r.Map(t)["token"].(string)
	f.App.Remember(token)
	fixture.Want(t, c.Do("POST", "/organization/invites/accept", obj{"token": token}), http.StatusOK)
	fixture.Want(t, owner.Do("PUT", "/api/workspaces/"+ws+"/members/"+c.ID, obj{"role": role}), http.StatusOK)
	c.Workspace = ws
	return c
}

// wantPage checks that GET path answers exactly the JSON object want.
func wantPage(t *testing.T, c *apitest.Client, path, want string) {
	t.Helper()
	r := c.Do("GET", path, nil)
	fixture.Want(t, r, http.StatusOK)
	sameJSON(t, r.Body, want)
}

func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %s", got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("page = %s, want %s", got, want)
	}
}

// TestErrorPagesAccess: an anonymous caller is 401 whatever the body; a
// plain member reads the workspace's page and may not change it, whatever
// the body; a workspace admin may; the instance default is the instance
// admin's alone.
func TestErrorPagesAccess(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		mona := joined(t, f, "Mona Member", "member")
		wade := joined(t, f, "Wade Wsadmin", "admin")
		valid := obj{"title": "Down"}
		var scenarios []apitest.Scenario
		for _, path := range []string{wsPath, adminPath} {
			scenarios = append(scenarios,
				apitest.Scenario{Name: "anonymous GET " + path, Method: "GET", Path: path, WantStatus: 401, WantCode: "unauthorized"},
				apitest.Scenario{Name: "anonymous PUT " + path, Method: "PUT", Path: path, Body: valid, WantStatus: 401, WantCode: "unauthorized"},
				apitest.Scenario{Name: "anonymous PUT broken " + path, Method: "PUT", Path: path, Body: `{"broken": [`, WantStatus: 401, WantCode: "unauthorized"},
				apitest.Scenario{Name: "anonymous PUT not an object " + path, Method: "PUT", Path: path, Body: `[1]`, WantStatus: 401, WantCode: "unauthorized"},
			)
		}
		scenarios = append(scenarios,
			apitest.Scenario{Name: "member reads", Client: mona, Method: "GET", Path: wsPath, WantStatus: 200, WantContains: []string{"{}"}},
			apitest.Scenario{Name: "member PUT", Client: mona, Method: "PUT", Path: wsPath, Body: valid, WantStatus: 403, WantCode: "forbidden"},
			apitest.Scenario{Name: "member PUT broken body: still 403", Client: mona, Method: "PUT", Path: wsPath, Body: `{"broken": [`, WantStatus: 403, WantCode: "forbidden"},
			apitest.Scenario{Name: "member PUT {}", Client: mona, Method: "PUT", Path: wsPath, Body: obj{}, WantStatus: 403, WantCode: "forbidden"},
			apitest.Scenario{Name: "non-admin GET instance", Client: f.Owner, Method: "GET", Path: adminPath, WantStatus: 403, WantCode: "forbidden"},
			apitest.Scenario{Name: "non-admin PUT instance", Client: f.Owner, Method: "PUT", Path: adminPath, Body: valid, WantStatus: 403, WantCode: "forbidden"},
			apitest.Scenario{Name: "non-admin PUT broken instance", Client: f.Owner, Method: "PUT", Path: adminPath, Body: `{"broken": [`, WantStatus: 403, WantCode: "forbidden"},
			apitest.Scenario{Name: "workspace admin PUT", Client: wade, Method: "PUT", Path: wsPath, Body: obj{"title": "By Wade"}, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) { sameJSON(t, r.Body, `{"title":"By Wade"}`) }},
			apitest.Scenario{Name: "member reads the admin's page", Client: mona, Method: "GET", Path: wsPath, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) { sameJSON(t, r.Body, `{"title":"By Wade"}`) }},
			apitest.Scenario{Name: "owner PUT", Client: f.Owner, Method: "PUT", Path: wsPath, Body: obj{"title": "By Olivia"}, WantStatus: 200},
			apitest.Scenario{Name: "instance admin PUT", Client: f.Admin, Method: "PUT", Path: adminPath, Body: obj{"title": "Instance"}, WantStatus: 200},
			apitest.Scenario{Name: "instance admin GET", Client: f.Admin, Method: "GET", Path: adminPath, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) { sameJSON(t, r.Body, `{"title":"Instance"}`) }},
		)
		apitest.Run(t, f.App, scenarios)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM audit_log WHERE action = $1 AND actor_id = $2", errorpages.ActionWorkspace, mona.ID); n != 0 {
			t.Fatalf("%d audit entries by the member", n)
		}
	})
}

// TestErrorPageValidation: invalid JSON, a value that is not an object, a
// page over 16 KiB, a control character and a known key of the wrong type
// or too long are 400 bad_request, and leave the stored page as it was;
// unknown keys of any shape are kept.
func TestErrorPageValidation(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		const stored = `{"title":"Kept","message":"Still here","contact":"ops@example.test","extra":{"n":[1,2.5,"x"],"deep":{"ok":true}}}`
		for _, tc := range []struct {
			c    *apitest.Client
			path string
		}{{f.Owner, wsPath}, {f.Admin, adminPath}} {
			r := tc.c.Do("PUT", tc.path, stored)
			fixture.Want(t, r, http.StatusOK)
			sameJSON(t, r.Body, stored)
			big := `{"message":"` + strings.Repeat("x", 1000) + `","pad":"` + strings.Repeat("y", errorpages.MaxPageBytes) + `"}`
			for _, bad := range []struct {
				name, body string
				fragments  []string
			}{
				{"invalid JSON", `{"title": "x",`, nil},
				{"not JSON at all", `title: x`, nil},
				{"an array", `[{"title":"x"}]`, []string{"object"}},
				{"a string", `"x"`, []string{"object"}},
				{"a number", `42`, []string{"object"}},
				{"null", `null`, []string{"object"}},
				{"two objects", `{} {}`, nil},
				{"too big", big, []string{"16384"}},
				{"a control character", `{"title":"bell\u0007"}`, []string{"control", "title"}},
				{"a carriage return", `{"message":"a\r\nb"}`, []string{"control", "message"}},
				{"an escape deep inside", `{"extra":{"list":["ok","\u001b[31m"]}}`, []string{"control", "extra.list[1]"}},
				{"a control character in a key", `{"k\u0001":"v"}`, []string{"control", "key"}},
				{"a NUL", `{"title":"a\u0000b"}`, nil},
				{"title a number", `{"title":5}`, []string{"title", "string"}},
				{"message an object", `{"message":{"text":"x"}}`, []string{"message", "string"}},
				{"contact an array", `{"contact":["a"]}`, []string{"contact", "string"}},
				{"title null", `{"title":null}`, []string{"title", "string"}},
				{"title too long", `{"title":"` + strings.Repeat("é", errorpages.MaxTitleChars+1) + `"}`, []string{"title", "200"}},
				{"message too long", `{"message":"` + strings.Repeat("m", errorpages.MaxMessageChars+1) + `"}`, []string{"message", "2000"}},
				{"contact too long", `{"contact":"` + strings.Repeat("c", errorpages.MaxContactChars+1) + `"}`, []string{"contact", "200"}},
			} {
				t.Run(tc.path+" "+bad.name, func(t *testing.T) {
					r := tc.c.Do("PUT", tc.path, bad.body)
					fixture.WantError(t, r, http.StatusBadRequest, "bad_request", bad.fragments...)
					wantPage(t, tc.c, tc.path, stored)
				})
			}
			// At the bounds: accepted (characters, not bytes; tab and newline pass).
			atBounds := obj{"title": strings.Repeat("é", errorpages.MaxTitleChars), "message": "line 1\n\tline 2 " + strings.Repeat("m", errorpages.MaxMessageChars-16),
				"contact": strings.Repeat("c", errorpages.MaxContactChars)}
			fixture.Want(t, tc.c.Do("PUT", tc.path, atBounds), http.StatusOK)
			// Pretty-printed: the bound counts the page without spaces.
			pretty, _ := json.MarshalIndent(obj{"pad": strings.Repeat("p", errorpages.MaxPageBytes-20)}, "", "                              ")
			fixture.Want(t, tc.c.Do("PUT", tc.path, string(pretty)), http.StatusOK)
		}
	})
}

// TestErrorPageReplaceClearAudit: a PUT replaces the whole object (a key
// it lacks is gone), {} clears the page, and each change is audited with
// the page before and after; a PUT that changes nothing writes nothing.
func TestErrorPageReplaceClearAudit(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		ws := f.Owner.DefaultWorkspace()
		for _, tc := range []struct {
			c              *apitest.Client
			path, action   string
			kind, targetID string
		}{
			{f.Owner, wsPath, errorpages.ActionWorkspace, "workspace", ws},
			{f.Admin, adminPath, errorpages.ActionInstance, "instance", errorpages.InstanceTarget},
		} {
			t.Run(tc.action, func(t *testing.T) {
				wantPage(t, tc.c, tc.path, `{}`)
				first := `{"title":"Down for maintenance","message":"Back at noon","contact":"ops@example.test","brand":{"color":"#123456"}}`
				r := tc.c.Do("PUT", tc.path, first)
				fixture.Want(t, r, http.StatusOK)
				sameJSON(t, r.Body, first)
				wantPage(t, tc.c, tc.path, first)

				second := `{"title":"Failing"}`
				r = tc.c.Do("PUT", tc.path, second)
				fixture.Want(t, r, http.StatusOK)
				sameJSON(t, r.Body, second)
				wantPage(t, tc.c, tc.path, second) // message, contact and brand are gone

				fixture.Want(t, tc.c.Do("PUT", tc.path, second), http.StatusOK) // no change: not audited

				r = tc.c.Do("PUT", tc.path, `{}`)
				fixture.Want(t, r, http.StatusOK)
				sameJSON(t, r.Body, `{}`)
				wantPage(t, tc.c, tc.path, `{}`)

				entries := f.App.AuditEntries(t, tc.action, tc.targetID)
				if len(entries) != 3 {
					t.Fatalf("%d audit entries, want 3: %+v", len(entries), entries)
				}
				steps := [][2]string{{`{}`, first}, {first, second}, {second, `{}`}}
				for i, en := range entries {
					if en.ActorID != tc.c.ID || en.TargetKind != tc.kind {
						t.Fatalf("entry %d: actor %s kind %s", i, en.ActorID, en.TargetKind)
					}
					b, _ := json.Marshal(en.Before)
					a, _ := json.Marshal(en.After)
					sameJSON(t, b, steps[i][0])
					sameJSON(t, a, steps[i][1])
				}
			})
		}
		// The owner console's audit board filters by the action.
		r := f.Admin.Do("GET", "/api/admin/audit/board?action="+errorpages.ActionInstance, nil)
		fixture.Want(t, r, http.StatusOK)
		var board struct {
			Rows []struct {
				Action     string          `json:"action"`
				TargetKind string          `json:"target_kind"`
				Before     json.RawMessage `json:"before"`
				After      json.RawMessage `json:"after"`
			} `json:"rows"`
		}
		r.JSON(t, &board)
		if len(board.Rows) != 3 {
			t.Fatalf("board: %s", r.Body)
		}
		for _, it := range board.Rows {
			if it.Action != errorpages.ActionInstance || it.TargetKind != "instance" || len(it.Before) == 0 || len(it.After) == 0 {
				t.Fatalf("board item %+v", it)
			}
		}
		sameJSON(t, board.Rows[0].After, `{}`) // newest first: the clear
	})
}

// TestErrorPageTenancy: another workspace's page is never visible or
// changed: naming a workspace the caller has not joined answers exactly
// what naming an unknown one does.
func TestErrorPageTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		const secret = `{"title":"Olivia's private page"}`
		fixture.Want(t, f.Owner.Do("PUT", wsPath, secret), http.StatusOK)
		foreignWS, unknownWS := f.Owner.DefaultWorkspace(), ids.New()
		for _, method := range []string{"GET", "PUT"} {
			var body any
			if method == "PUT" {
				body = obj{"title": "Otto was here"}
			}
			foreign := f.Outsider.Do(method, wsPath, body, "X-Workspace-Id", foreignWS)
			missing := f.Outsider.Do(method, wsPath, body, "X-Workspace-Id", unknownWS)
			if foreign.Status != missing.Status || foreign.Status < 400 {
				t.Fatalf("%s: another workspace answers %d, an unknown one %d: %s / %s", method, foreign.Status, missing.Status, foreign.Body, missing.Body)
			}
			if fb, mb := strings.ReplaceAll(string(foreign.Body), foreignWS, "{id}"), strings.ReplaceAll(string(missing.Body), unknownWS, "{id}"); fb != mb {
				t.Fatalf("%s: another workspace and an unknown one answer differently:\n%s\n%s", method, fb, mb)
			}
			if strings.Contains(string(foreign.Body), "private") {
				t.Fatalf("%s: the page leaked: %s", method, foreign.Body)
			}
		}
		// The outsider's own workspace has its own page, none set.
		wantPage(t, f.Outsider, wsPath, `{}`)
		fixture.Want(t, f.Outsider.Do("PUT", wsPath, `{"title":"Otto's"}`), http.StatusOK)
		wantPage(t, f.Owner, wsPath, secret)
		wantPage(t, f.Outsider, wsPath, `{"title":"Otto's"}`)
	})
}
