package scripts_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/scripts"
)

// These tests drive the real server over HTTP on both engines.

type obj = map[string]any

var (
	scriptKeys          = []string{"id", "name", "slug", "language", "description", "source", "version", "created_at", "updated_at", "created_by"}
	summaryKeys         = []string{"id", "name", "slug", "language", "description", "version", "created_at", "updated_at", "created_by"}
	revisionKeys        = []string{"version", "language", "source", "created_at", "created_by"}
	revisionSummaryKeys = []string{"version", "language", "created_at", "created_by"}
)

func body(name, slug, lang, source string) obj {
	return obj{"name": name, "slug": slug, "language": lang, "source": source}
}

// create posts a script, checks the answer's fields and returns it.
func create(t *testing.T, c *apitest.Client, b obj) scripts.Script {
	t.Helper()
	r := c.Do("POST", "/api/scripts", b)
	fixture.Want(t, r, http.StatusCreated)
	return decodeScript(t, r)
}

func decodeScript(t *testing.T, r *apitest.Response) scripts.Script {
	t.Helper()
	if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, scriptKeys) {
		t.Fatalf("script keys = %v, want %v", got, scriptKeys)
	}
	checkTimes(t, r.Body, "created_at", "updated_at")
	var s scripts.Script
	r.JSON(t, &s)
	return s
}

func get(t *testing.T, c *apitest.Client, id string) scripts.Script {
	t.Helper()
	r := c.Do("GET", "/api/scripts/"+id, nil)
	fixture.Want(t, r, http.StatusOK)
	return decodeScript(t, r)
}

func patch(t *testing.T, c *apitest.Client, id string, b any) scripts.Script {
	t.Helper()
	r := c.Do("PATCH", "/api/scripts/"+id, b)
	fixture.Want(t, r, http.StatusOK)
	return decodeScript(t, r)
}

// checkTimes checks that the fields are RFC 3339 UTC times with a Z.
func checkTimes(t *testing.T, raw []byte, fields ...string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		s, _ := m[f].(string)
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s = %q, want an RFC 3339 UTC time with a trailing Z", f, s)
		}
	}
}

// wantError checks an error body: the status, the code and an error
// message naming every fragment.
func wantError(t *testing.T, r *apitest.Response, status int, code string, fragments ...string) string {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var e struct {
		Code  string `json:"code"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code != code || e.Error == "" {
		t.Fatalf("error body = %s, want code %s", r.Body, code)
	}
	if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"code", "error"}) {
		t.Errorf("error keys = %v, want [code error]", got)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Error, f) {
			t.Errorf("error %q does not name %q", e.Error, f)
		}
	}
	return e.Error
}

// same reports whether two scripts read the same (pointers compared by
// what they point to).
func same(t *testing.T, a, b scripts.Script) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func TestScriptsCreateReadList(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner

		src := "#!/bin/sh\n# prints a greeting\n\techo \"hello\" \x1b[1m\nexit 0\n"
		a := create(t, owner, body("  Deploy notes  ", "deploy-notes", "sh", src))
		if !ids.Valid(a.ID) || a.Name != "Deploy notes" || a.Slug != "deploy-notes" || a.Language != "sh" || a.Source != src ||
			a.Description != nil || a.Version != 1 || a.CreatedBy == nil || *a.CreatedBy != owner.ID || !a.CreatedAt.Equal(a.UpdatedAt) {
			t.Fatalf("created script = %+v", a)
		}
		b := create(t, owner, obj{"name": "Report", "slug": "report", "language": "python", "source": "print('ok')",
			"description": "Weekly report\n\tfor the team"})
		if b.Description == nil || *b.Description != "Weekly report\n\tfor the team" {
			t.Fatalf("description = %v", b.Description)
		}
		c := create(t, owner, obj{"name": "Nothing", "slug": "n", "language": "javascript", "source": "1", "description": nil})
		if c.Description != nil {
			t.Fatalf("a null description came back as %q", *c.Description)
		}
		// A blank description is none.
		d := create(t, owner, obj{"name": "Blank", "slug": "blank", "language": "bash", "source": "true", "description": "   "})
		if d.Description != nil {
			t.Fatalf("a blank description came back as %q", *d.Description)
		}

		if got := get(t, owner, a.ID); got.Source != src || got.Name != a.Name || got.Version != 1 || !got.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("GET = %+v, want %+v", got, a)
		}

		// The list: newest first, no sources, nothing of other workspaces.
		create(t, f.Outsider, body("Theirs", "theirs", "sh", "echo theirs"))
		r := owner.Do("GET", "/api/scripts", nil)
		fixture.Want(t, r, http.StatusOK)
		for _, keys := range fixture.ElementKeys(t, r.Body) {
			if !slices.Equal(keys, summaryKeys) {
				t.Fatalf("list row keys = %v, want %v", keys, summaryKeys)
			}
		}
		if strings.Contains(string(r.Body), "echo") || strings.Contains(string(r.Body), "print(") {
			t.Fatalf("the list carries sources: %s", r.Body)
		}
		var list []scripts.ScriptSummary
		r.JSON(t, &list)
		var got []string
		for _, s := range list {
			got = append(got, s.Slug)
		}
		if want := []string{"blank", "n", "report", "deploy-notes"}; !slices.Equal(got, want) {
			t.Fatalf("list = %v, want %v (newest first)", got, want)
		}
		if list[2].Description == nil || *list[2].Description != "Weekly report\n\tfor the team" || list[2].Version != 1 || list[2].ID != b.ID {
			t.Fatalf("list row = %+v", list[2])
		}

		// Another workspace may use the same slug and name.
		create(t, f.Outsider, body("Deploy notes", "deploy-notes", "sh", "echo"))

		// The first revision holds the created source.
		r = owner.Do("GET", "/api/scripts/"+a.ID+"/revisions/1", nil)
		fixture.Want(t, r, http.StatusOK)
		if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, revisionKeys) {
			t.Fatalf("revision keys = %v", keys)
		}
		var rev scripts.ScriptRevision
		r.JSON(t, &rev)
		if rev.Version != 1 || rev.Language != "sh" || rev.Source != src || rev.CreatedBy == nil || *rev.CreatedBy != owner.ID || !rev.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("revision 1 = %+v", rev)
		}
	})
}

func TestScriptsValidation(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		existing := create(t, owner, body("Existing", "existing", "sh", "echo existing"))
		other := create(t, owner, body("Other", "other", "sh", "echo other"))

		with := func(field string, v any) obj {
			b := body("Valid name", "valid-slug", "python", "print(1)")
			b[field] = v
			return b
		}
		without := func(field string) obj {
			b := body("Valid name", "valid-slug", "python", "print(1)")
			delete(b, field)
			return b
		}
		// A source under the character limit but over the byte limit.
		wide := strings.Repeat("é", scripts.MaxSourceBytes/2+1)
		bad := []struct {
			name  string
			body  any
			names []string
		}{
			{"no name", without("name"), []string{"name"}},
			{"empty name", with("name", ""), []string{"name"}},
			{"blank name", with("name", "   "), []string{"name must not be empty"}},
			{"long name", with("name", strings.Repeat("n", 201)), []string{"name"}},
			{"name with a tab", with("name", "tab\tname"), []string{"name must not contain control"}},
			{"name with a line break", with("name", "line\nbreak"), []string{"name must not contain control"}},
			{"name with an escape", with("name", "esc\x1b[2J"), []string{"name must not contain control"}},
			{"name with a bidi override", with("name", "rtl\u202eevil"), []string{"name must not contain control"}},
			{"name with DEL", with("name", "del\x7f"), []string{"name must not contain control"}},
			{"name with NUL", with("name", "nul\x00name"), []string{"NUL"}},
			{"name not a string", with("name", 5), []string{"name"}},
			{"no slug", without("slug"), []string{"slug"}},
			{"empty slug", with("slug", ""), []string{"slug"}},
			{"uppercase slug", with("slug", "Deploy"), []string{"slug"}},
			{"slug starting with a digit", with("slug", "1deploy"), []string{"slug"}},
			{"slug starting with a hyphen", with("slug", "-deploy"), []string{"slug"}},
			{"slug with an underscore", with("slug", "de_ploy"), []string{"slug"}},
			{"slug with a space", with("slug", "de ploy"), []string{"slug"}},
			{"slug with a control", with("slug", "de\nploy"), []string{"slug"}},
			{"long slug", with("slug", "a"+strings.Repeat("b", 63)), []string{"slug"}},
			{"no language", without("language"), []string{"language"}},
			{"unknown language", with("language", "ruby"), []string{"language"}},
			{"language alias", with("language", "node"), []string{"language"}},
			{"uppercase language", with("language", "Python"), []string{"language"}},
			{"no source", without("source"), []string{"source"}},
			{"empty source", with("source", ""), []string{"source"}},
			{"source over the character limit", with("source", strings.Repeat("x", scripts.MaxSourceBytes+1)), []string{"source"}},
			{"source over the byte limit", with("source", wide), []string{"source is too long", "bytes"}},
			{"source with NUL", with("source", "echo a\x00b"), []string{"NUL"}},
			{"description with an escape", with("description", "esc\x1b[2J"), []string{"description must not contain control"}},
			{"description with a bidi override", with("description", "a\u202eb"), []string{"description must not contain control"}},
			{"description with NUL", with("description", "a\x00b"), []string{"NUL"}},
			{"long description", with("description", strings.Repeat("d", 2001)), []string{"description"}},
			{"description not a string", with("description", 3), []string{"description"}},
			{"unknown field", with("kind", "x"), []string{"kind"}},
			{"not an object", "[]", nil},
			{"not JSON", "{", nil},
		}
		var scenarios []apitest.Scenario
		for _, b := range bad {
			scenarios = append(scenarios, apitest.Scenario{Name: "create: " + b.name, Client: owner, Method: "POST", Path: "/api/scripts", Body: b.body,
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: b.names})
		}
		badPatch := []struct {
			name  string
			body  any
			names []string
		}{
			{"null name", obj{"name": nil}, []string{"name must not be null"}},
			{"null slug", obj{"slug": nil}, []string{"slug must not be null"}},
			{"null language", obj{"language": nil}, []string{"language must not be null"}},
			{"null source", obj{"source": nil}, []string{"source must not be null"}},
			{"blank name", obj{"name": " "}, []string{"name must not be empty"}},
			{"name with an escape", obj{"name": "a\x1bb"}, []string{"name must not contain control"}},
			{"name with NUL", obj{"name": "a\x00b"}, []string{"NUL"}},
			{"bad slug", obj{"slug": "Bad_Slug"}, []string{"slug"}},
			{"bad language", obj{"language": "perl"}, []string{"language"}},
			{"empty source", obj{"source": ""}, []string{"source"}},
			{"wide source", obj{"source": wide}, []string{"source is too long"}},
			{"source with NUL", obj{"source": "\x00"}, []string{"NUL"}},
			{"description with a control", obj{"description": "a\x07b"}, []string{"description must not contain control"}},
			{"long description", obj{"description": strings.Repeat("d", 2001)}, []string{"description"}},
			{"unknown field", obj{"version": 7}, []string{"version"}},
			{"taken slug", obj{"slug": "other"}, []string{`slug \"other\" is already used`}},
			{"taken name", obj{"name": "Other"}, []string{`name \"Other\" is already used`}},
			// Valid fields do not apply when another is bad.
			{"good name, bad slug", obj{"name": "Renamed", "slug": "X"}, []string{"slug"}},
		}
		for _, b := range badPatch {
			scenarios = append(scenarios, apitest.Scenario{Name: "patch: " + b.name, Client: owner, Method: "PATCH", Path: "/api/scripts/" + existing.ID,
				Body: b.body, WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: b.names})
		}
		scenarios = append(scenarios,
			apitest.Scenario{Name: "create: taken slug", Client: owner, Method: "POST", Path: "/api/scripts", Body: body("Fresh name", "existing", "sh", "x"),
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{`slug \"existing\" is already used`}},
			apitest.Scenario{Name: "create: taken name", Client: owner, Method: "POST", Path: "/api/scripts", Body: body("Existing", "fresh-slug", "sh", "x"),
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{`name \"Existing\" is already used`}},
			apitest.Scenario{Name: "create: taken name (trimmed)", Client: owner, Method: "POST", Path: "/api/scripts", Body: body(" Existing ", "fresh-slug", "sh", "x"),
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{`name \"Existing\" is already used`}},
			apitest.Scenario{Name: "revision 0", Client: owner, Method: "GET", Path: "/api/scripts/" + existing.ID + "/revisions/0",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"version"}},
			apitest.Scenario{Name: "revision not a number", Client: owner, Method: "GET", Path: "/api/scripts/" + existing.ID + "/revisions/latest",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"version"}},
			apitest.Scenario{Name: "board: unknown sort", Client: owner, Method: "GET", Path: "/api/scripts/board?sort=source",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"sort"}},
			apitest.Scenario{Name: "board: unknown language", Client: owner, Method: "GET", Path: "/api/scripts/board?language=ruby",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"language"}},
			apitest.Scenario{Name: "board: control in q", Client: owner, Method: "GET", Path: "/api/scripts/board?q=a%1Bb",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"q must not contain control"}},
			apitest.Scenario{Name: "board: NUL in q", Client: owner, Method: "GET", Path: "/api/scripts/board?q=%00",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			apitest.Scenario{Name: "board: page size over 200", Client: owner, Method: "GET", Path: "/api/scripts/board?page_size=201",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: []string{"page_size"}},
		)
		before := get(t, owner, existing.ID)
		apitest.Run(t, app, scenarios)

		// Nothing was stored or changed.
		if n := app.Count(t, "SELECT COUNT(*) FROM scripts"); n != 2 {
			t.Fatalf("%d scripts stored, want 2", n)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM script_revisions"); n != 2 {
			t.Fatalf("%d revisions stored, want 2", n)
		}
		if after := get(t, owner, existing.ID); !same(t, after, before) {
			t.Fatalf("refused patches changed the script: %+v -> %+v", before, after)
		}
		if after := get(t, owner, other.ID); after.Name != "Other" || after.Slug != "other" {
			t.Fatalf("other script = %+v", after)
		}

		// The largest source passes, multi-byte included.
		big := strings.Repeat("é", scripts.MaxSourceBytes/2)
		s := create(t, owner, body("Big", "big", "sh", big))
		if got := get(t, owner, s.ID); got.Source != big {
			t.Fatalf("the largest source came back with %d bytes", len(got.Source))
		}
		// So does a source whose JSON form is mostly escapes.
		escaped := strings.Repeat("\x01", scripts.MaxSourceBytes)
		s = create(t, owner, body("Escaped", "escaped", "sh", escaped))
		if got := get(t, owner, s.ID); got.Source != escaped {
			t.Fatalf("the escaped source came back with %d bytes", len(got.Source))
		}
	})
}

func TestScriptsPatchAndRevisions(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		s := create(t, owner, obj{"name": "Build", "slug": "build", "language": "sh", "source": "echo one", "description": "first"})

		// An empty PATCH, or one repeating the current values, changes
		// nothing (not even updated_at).
		if p := patch(t, owner, s.ID, obj{}); !same(t, p, s) {
			t.Fatalf("empty PATCH = %+v, want %+v", p, s)
		}
		if p := patch(t, owner, s.ID, obj{"name": "Build", "slug": "build", "language": "sh", "source": "echo one", "description": "first"}); !same(t, p, s) {
			t.Fatalf("PATCH with the current values = %+v, want %+v", p, s)
		}

		// Each field on its own; the others stay.
		p := patch(t, owner, s.ID, obj{"name": " Build it "})
		if p.Name != "Build it" || p.Slug != "build" || p.Source != "echo one" || p.Version != 1 || p.Description == nil || *p.Description != "first" ||
			p.UpdatedAt.Before(s.UpdatedAt) || !p.CreatedAt.Equal(s.CreatedAt) {
			t.Fatalf("after name = %+v", p)
		}
		p = patch(t, owner, s.ID, obj{"slug": "build-it"})
		if p.Slug != "build-it" || p.Name != "Build it" || p.Version != 1 {
			t.Fatalf("after slug = %+v", p)
		}
		// Description: absent keeps, a string sets, null clears.
		p = patch(t, owner, s.ID, obj{"name": "Build it"})
		if p.Description == nil || *p.Description != "first" {
			t.Fatalf("an absent description changed: %v", p.Description)
		}
		p = patch(t, owner, s.ID, obj{"description": "second\nline"})
		if p.Description == nil || *p.Description != "second\nline" {
			t.Fatalf("after description = %v", p.Description)
		}
		p = patch(t, owner, s.ID, `{"description": null}`)
		if p.Description != nil {
			t.Fatalf("a null description left %q", *p.Description)
		}
		if r := owner.Do("GET", "/api/scripts/"+s.ID, nil); !strings.Contains(string(r.Body), `"description":null`) {
			t.Fatalf("a cleared description is not null: %s", r.Body)
		}
		patch(t, owner, s.ID, obj{"description": "third"})
		p = patch(t, owner, s.ID, obj{"source": "echo one"})
		if p.Description == nil || *p.Description != "third" || p.Version != 1 {
			t.Fatalf("after an unchanged source = %+v", p)
		}
		// No revision yet: only source and language make one.
		if n := f.App.Count(t, "SELECT COUNT(*) FROM script_revisions WHERE script_id = $1", s.ID); n != 1 {
			t.Fatalf("%d revisions after non-source changes, want 1", n)
		}

		// Source, language, then both with other fields: a revision each.
		p = patch(t, owner, s.ID, obj{"source": "echo two"})
		if p.Version != 2 || p.Source != "echo two" || p.Language != "sh" {
			t.Fatalf("after source = %+v", p)
		}
		p = patch(t, owner, s.ID, obj{"language": "bash"})
		if p.Version != 3 || p.Source != "echo two" || p.Language != "bash" {
			t.Fatalf("after language = %+v", p)
		}
		p = patch(t, owner, s.ID, obj{"language": "python", "source": "print(4)", "name": "Build four", "description": nil})
		if p.Version != 4 || p.Source != "print(4)" || p.Language != "python" || p.Name != "Build four" || p.Description != nil {
			t.Fatalf("after everything = %+v", p)
		}
		if got := get(t, owner, s.ID); !same(t, got, p) {
			t.Fatalf("GET after PATCH = %+v, want %+v", got, p)
		}

		// Revisions: newest first, no sources.
		r := owner.Do("GET", "/api/scripts/"+s.ID+"/revisions", nil)
		fixture.Want(t, r, http.StatusOK)
		for _, keys := range fixture.ElementKeys(t, r.Body) {
			if !slices.Equal(keys, revisionSummaryKeys) {
				t.Fatalf("revision row keys = %v, want %v", keys, revisionSummaryKeys)
			}
		}
		var revs []scripts.ScriptRevisionSummary
		r.JSON(t, &revs)
		var got []string
		for _, rv := range revs {
			got = append(got, fmt.Sprintf("%d:%s", rv.Version, rv.Language))
			if rv.CreatedBy == nil || *rv.CreatedBy != owner.ID {
				t.Errorf("revision %d created_by = %v, want %s", rv.Version, rv.CreatedBy, owner.ID)
			}
			if rv.CreatedAt.IsZero() {
				t.Errorf("revision %d has no created_at", rv.Version)
			}
		}
		if want := []string{"4:python", "3:bash", "2:sh", "1:sh"}; !slices.Equal(got, want) {
			t.Fatalf("revisions = %v, want %v", got, want)
		}
		if !revs[0].CreatedAt.Equal(p.UpdatedAt) {
			t.Errorf("the newest revision's time %v is not the script's updated_at %v", revs[0].CreatedAt, p.UpdatedAt)
		}
		for v, want := range map[int]struct{ lang, src string }{1: {"sh", "echo one"}, 2: {"sh", "echo two"}, 3: {"bash", "echo two"}, 4: {"python", "print(4)"}} {
			r := owner.Do("GET", fmt.Sprintf("/api/scripts/%s/revisions/%d", s.ID, v), nil)
			fixture.Want(t, r, http.StatusOK)
			if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, revisionKeys) {
				t.Fatalf("revision keys = %v", keys)
			}
			checkTimes(t, r.Body, "created_at")
			var rev scripts.ScriptRevision
			r.JSON(t, &rev)
			if rev.Version != int64(v) || rev.Language != want.lang || rev.Source != want.src {
				t.Errorf("revision %d = %+v, want %+v", v, rev, want)
			}
		}
		wantError(t, owner.Do("GET", "/api/scripts/"+s.ID+"/revisions/5", nil), http.StatusNotFound, "not_found", "script revision not found")
		wantError(t, owner.Do("GET", "/api/scripts/"+s.ID+"/revisions/9007199254740991", nil), http.StatusNotFound, "not_found")

		// Revisions of a script without changes: just the first.
		other := create(t, owner, body("Other", "other", "javascript", "console.log(1)"))
		r = owner.Do("GET", "/api/scripts/"+other.ID+"/revisions", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &revs)
		if len(revs) != 1 || revs[0].Version != 1 || revs[0].Language != "javascript" {
			t.Fatalf("revisions of an unchanged script = %+v", revs)
		}

		// A slug freed by a rename can be taken; the rename to a taken one
		// cannot.
		wantError(t, owner.Do("PATCH", "/api/scripts/"+other.ID, obj{"slug": "build-it"}), http.StatusBadRequest, "bad_request", `slug "build-it"`)
		patch(t, owner, s.ID, obj{"slug": "built"})
		if p := patch(t, owner, other.ID, obj{"slug": "build-it"}); p.Slug != "build-it" {
			t.Fatalf("the freed slug was not taken: %+v", p)
		}

		// A revision whose author's account went (ON DELETE SET NULL).
		f.Exec(t, "UPDATE script_revisions SET created_by = NULL WHERE script_id = $1 AND version = 2", s.ID)
		r = owner.Do("GET", "/api/scripts/"+s.ID+"/revisions/2", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"created_by":null`) {
			t.Fatalf("a revision without an author: %s", r.Body)
		}

		// Unknown ids.
		unknown := ids.New()
		for _, path := range []string{"/api/scripts/" + unknown, "/api/scripts/" + unknown + "/revisions", "/api/scripts/" + unknown + "/revisions/1",
			"/api/scripts/not-an-id", "/api/scripts/not-an-id/revisions", "/api/scripts/not-an-id/revisions/1"} {
			wantError(t, owner.Do("GET", path, nil), http.StatusNotFound, "not_found", "script not found")
		}
		wantError(t, owner.Do("PATCH", "/api/scripts/"+unknown, obj{"name": "x"}), http.StatusNotFound, "not_found", "script not found")
		wantError(t, owner.Do("PATCH", "/api/scripts/not-an-id", obj{"name": "x"}), http.StatusNotFound, "not_found", "script not found")
	})
}

func TestScriptsBoard(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		langs := []string{"python", "sh", "python", "bash", "python", "javascript", "sh"}
		var made []scripts.Script
		for i, l := range langs {
			made = append(made, create(t, owner, body(fmt.Sprintf("Script %c", 'A'+i), fmt.Sprintf("script-%c", 'a'+i), l, "code "+l)))
		}
		create(t, f.Outsider, body("Script Z", "script-z", "python", "theirs"))

		type page struct {
			Rows     []scripts.ScriptSummary   `json:"rows"`
			Total    int                       `json:"total"`
			Page     int                       `json:"page"`
			PageSize int                       `json:"page_size"`
			Facets   map[string][]facetCounter `json:"facets"`
		}
		read := func(query string) page {
			t.Helper()
			r := owner.Do("GET", "/api/scripts/board"+query, nil)
			fixture.Want(t, r, http.StatusOK)
			if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, []string{"rows", "total", "page", "page_size", "facets"}) {
				t.Fatalf("board keys = %v", keys)
			}
			var raw struct {
				Rows json.RawMessage `json:"rows"`
			}
			r.JSON(t, &raw)
			for _, keys := range fixture.ElementKeys(t, raw.Rows) {
				if !slices.Equal(keys, summaryKeys) {
					t.Fatalf("board row keys = %v, want %v", keys, summaryKeys)
				}
			}
			var p page
			r.JSON(t, &p)
			return p
		}
		slugs := func(p page) string {
			var out []string
			for _, r := range p.Rows {
				out = append(out, strings.TrimPrefix(r.Slug, "script-"))
			}
			return strings.Join(out, "")
		}
		facet := func(p page) string {
			var out []string
			for _, c := range p.Facets["language"] {
				out = append(out, fmt.Sprintf("%s=%d", c.Value, c.Count))
			}
			return strings.Join(out, " ")
		}

		p := read("")
		if p.Total != 7 || p.Page != 1 || p.PageSize != 50 || slugs(p) != "gfedcba" {
			t.Fatalf("board = total %d page %d size %d rows %s", p.Total, p.Page, p.PageSize, slugs(p))
		}
		if got := facet(p); got != "sh=2 bash=1 python=3 javascript=1" {
			t.Fatalf("language facet = %s", got)
		}
		for _, c := range p.Facets["language"] {
			if c.Label == "" {
				t.Errorf("facet %s has no label", c.Value)
			}
		}
		if len(p.Facets) != 1 {
			t.Fatalf("facets = %v, want only language", p.Facets)
		}
		if p.Rows[6].ID != made[0].ID || p.Rows[6].Version != 1 || p.Rows[6].Language != "python" {
			t.Fatalf("last row = %+v", p.Rows[6])
		}

		// Paging.
		p = read("?page_size=3&page=2")
		if p.Total != 7 || p.Page != 2 || p.PageSize != 3 || slugs(p) != "dcb" {
			t.Fatalf("page 2 = total %d rows %s", p.Total, slugs(p))
		}
		p = read("?page_size=3&page=3")
		if p.Total != 7 || slugs(p) != "a" {
			t.Fatalf("page 3 = total %d rows %s", p.Total, slugs(p))
		}
		p = read("?page_size=3&page=4")
		if p.Total != 7 || len(p.Rows) != 0 || p.Rows == nil {
			t.Fatalf("page 4 = total %d rows %v", p.Total, p.Rows)
		}

		// The language filter narrows rows, not the facet.
		p = read("?language=python")
		if p.Total != 3 || slugs(p) != "eca" || facet(p) != "sh=2 bash=1 python=3 javascript=1" {
			t.Fatalf("python = total %d rows %s facet %s", p.Total, slugs(p), facet(p))
		}
		// Search by name or slug, case-insensitive; the facet follows it.
		p = read("?q=SCRIPT-B")
		if p.Total != 1 || slugs(p) != "b" || facet(p) != "sh=1 bash=0 python=0 javascript=0" {
			t.Fatalf("q = total %d rows %s facet %s", p.Total, slugs(p), facet(p))
		}
		p = read("?q=script%20c")
		if p.Total != 1 || slugs(p) != "c" {
			t.Fatalf("q by name = total %d rows %s", p.Total, slugs(p))
		}
		p = read("?q=%25")
		if p.Total != 0 {
			t.Fatalf("a %% search matched %d", p.Total)
		}
		// Sorts: text A to Z by default, times newest first.
		if p = read("?sort=name"); slugs(p) != "abcdefg" {
			t.Fatalf("by name = %s", slugs(p))
		}
		if p = read("?sort=slug&order=desc"); slugs(p) != "gfedcba" {
			t.Fatalf("by slug desc = %s", slugs(p))
		}
		// bash, javascript, python (a c e: ties by id), sh (b g).
		if p = read("?sort=language"); slugs(p) != "dfacebg" {
			t.Fatalf("by language = %s", slugs(p))
		}
		if p = read("?sort=created_at&order=asc"); slugs(p) != "abcdefg" {
			t.Fatalf("oldest first = %s", slugs(p))
		}
		patch(t, owner, made[1].ID, obj{"source": "changed"})
		if p = read("?sort=updated_at&page_size=1"); slugs(p) != "b" {
			t.Fatalf("recently updated = %s", slugs(p))
		}
		// The outsider sees only theirs.
		r := f.Outsider.Do("GET", "/api/scripts/board", nil)
		fixture.Want(t, r, http.StatusOK)
		var theirs page
		r.JSON(t, &theirs)
		if theirs.Total != 1 || theirs.Rows[0].Slug != "script-z" {
			t.Fatalf("outsider's board = %+v", theirs)
		}
	})
}

type facetCounter struct {
	Value string `json:"value"`
	Label string `json:"label"`
	Count int    `json:"count"`
}

func TestScriptsDelete(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner

		// A plain delete takes the revisions along.
		s := create(t, owner, body("Gone", "gone", "sh", "echo"))
		patch(t, owner, s.ID, obj{"source": "echo 2"})
		r := owner.Do("DELETE", "/api/scripts/"+s.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.TrimSpace(string(r.Body)) != `{"deleted":true}` {
			t.Fatalf("delete = %s", r.Body)
		}
		wantError(t, owner.Do("GET", "/api/scripts/"+s.ID, nil), http.StatusNotFound, "not_found", "script not found")
		wantError(t, owner.Do("GET", "/api/scripts/"+s.ID+"/revisions", nil), http.StatusNotFound, "not_found")
		wantError(t, owner.Do("GET", "/api/scripts/"+s.ID+"/revisions/1", nil), http.StatusNotFound, "not_found")
		if n := f.App.Count(t, "SELECT COUNT(*) FROM script_revisions WHERE script_id = $1", s.ID); n != 0 {
			t.Fatalf("%d revisions left", n)
		}
		// Deleting it again, or an unknown id: already gone.
		for _, id := range []string{s.ID, ids.New(), "not-an-id"} {
			r := owner.Do("DELETE", "/api/scripts/"+id, nil)
			fixture.Want(t, r, http.StatusOK)
			if strings.TrimSpace(string(r.Body)) != `{"deleted":false}` {
				t.Fatalf("delete of a missing script = %s", r.Body)
			}
		}
		// The slug is free again.
		create(t, owner, body("Gone", "gone", "sh", "echo"))

		// A script run by code nodes stays while they do.
		used := create(t, owner, body("Used", "used", "python", "print(1)"))
		spare := create(t, owner, body("Spare", "spare", "python", "print(2)"))
		lonely := create(t, owner, body("Lonely", "lonely", "sh", "echo"))
		project := f.Project(t, owner, "Alpha")
		workflow := func(name string, nodes ...obj) string {
			t.Helper()
			r := owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": name, "nodes": nodes})
			fixture.Want(t, r, http.StatusCreated)
			return r.Map(t)["id"].(string)
		}
		w1 := workflow("Runs it", obj{"key": "t", "kind": "transform", "config": obj{"expression": "1"}},
			obj{"key": "c", "kind": "code", "config": obj{"script_id": used.ID}})
		w2 := workflow("Runs it too", obj{"key": "c", "kind": "code", "config": obj{"script_id": used.ID}})
		// Only mentioning the id does not hold a script (inline source, a
		// transform); this workflow's node d runs the spare one.
		w3 := workflow("Mentions it", obj{"key": "c", "kind": "code", "config": obj{"source": "echo " + used.ID + " " + lonely.ID}},
			obj{"key": "d", "kind": "code", "config": obj{"script_id": spare.ID}},
			obj{"key": "t", "kind": "transform", "config": obj{"expression": `"` + used.ID + `"`}})
		// Another workspace cannot name the script in a code node at all:
		// it is no script of theirs.
		theirProject := f.Project(t, f.Outsider, "Theirs")
		wantError(t, f.Outsider.Do("POST", "/api/workflows", obj{"project_id": theirProject, "name": "Theirs",
			"nodes": []obj{{"key": "c", "kind": "code", "config": obj{"script_id": lonely.ID}}}}), http.StatusBadRequest, "bad_request", "no script")

		msg := wantError(t, owner.Do("DELETE", "/api/scripts/"+used.ID, nil), http.StatusBadRequest, "bad_request", w1, w2, "2 workflow")
		if strings.Index(msg, w1) > strings.Index(msg, w2) || strings.Contains(msg, w3) {
			t.Errorf("dependents not exactly w1, w2 oldest first: %s", msg)
		}
		msg = wantError(t, owner.Do("DELETE", "/api/scripts/"+spare.ID, nil), http.StatusBadRequest, "bad_request", w3, "1 workflow")
		if strings.Contains(msg, w1) || strings.Contains(msg, w2) {
			t.Errorf("dependents of the spare script: %s", msg)
		}
		for _, sc := range []scripts.Script{used, spare} {
			if got := get(t, owner, sc.ID); !same(t, got, sc) {
				t.Fatalf("a refused delete changed the script: %+v", got)
			}
		}
		r = owner.Do("DELETE", "/api/scripts/"+lonely.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.TrimSpace(string(r.Body)) != `{"deleted":true}` {
			t.Fatalf("delete of a script only mentioned = %s", r.Body)
		}

		// Removing one dependent leaves the other named.
		fixture.Want(t, owner.Do("DELETE", "/api/workflows/"+w1, nil), http.StatusOK)
		msg = wantError(t, owner.Do("DELETE", "/api/scripts/"+used.ID, nil), http.StatusBadRequest, "bad_request", w2, "1 workflow")
		if strings.Contains(msg, w1) {
			t.Fatalf("a deleted workflow is still named: %s", msg)
		}
		// Replacing the code node's script by inline source frees the
		// script too.
		fixture.Want(t, owner.Do("PUT", "/api/workflows/"+w2, obj{"nodes": []obj{{"key": "c", "kind": "code", "config": obj{"source": "echo"}}}}), http.StatusOK)
		r = owner.Do("DELETE", "/api/scripts/"+used.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.TrimSpace(string(r.Body)) != `{"deleted":true}` {
			t.Fatalf("delete after the dependents went = %s", r.Body)
		}
		wantError(t, owner.Do("GET", "/api/scripts/"+used.ID, nil), http.StatusNotFound, "not_found")
		// Deleting the last dependent workflow frees the spare one.
		fixture.Want(t, owner.Do("DELETE", "/api/workflows/"+w3, nil), http.StatusOK)
		r = owner.Do("DELETE", "/api/scripts/"+spare.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.TrimSpace(string(r.Body)) != `{"deleted":true}` {
			t.Fatalf("delete after the workflow went = %s", r.Body)
		}
	})
}

func TestScriptsAuthAndTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner, outsider := f.App, f.Owner, f.Outsider
		mine := create(t, owner, body("Mine", "mine", "sh", "echo mine"))
		id := mine.ID

		// Unauthenticated: 401 on every route, before the body is looked at.
		routes := []struct{ method, path string }{
			{"GET", "/api/scripts"}, {"POST", "/api/scripts"}, {"GET", "/api/scripts/board"}, {"GET", "/api/scripts/" + id},
			{"PATCH", "/api/scripts/" + id}, {"DELETE", "/api/scripts/" + id}, {"GET", "/api/scripts/" + id + "/revisions"},
			{"GET", "/api/scripts/" + id + "/revisions/1"},
		}
		var scenarios []apitest.Scenario
		for _, rt := range routes {
			scenarios = append(scenarios, apitest.Scenario{Name: "anonymous " + rt.method + " " + rt.path, Method: rt.method, Path: rt.path,
				Body: `{"name": 7, "bogus": true}`, WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"})
		}
		// A pending account is refused too.
		pending := app.Pending("Pat Pending")
		scenarios = append(scenarios, apitest.Scenario{Name: "pending account", Client: pending, Method: "GET", Path: "/api/scripts",
			WantStatus: http.StatusForbidden, WantCode: "forbidden"})
		apitest.Run(t, app, scenarios)

		// Another workspace's script is an unknown one.
		mk := func(t *testing.T, c *apitest.Client) string {
			return create(t, c, body("T "+ids.New(), "t-"+ids.New()[24:], "sh", "echo t")).ID
		}
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "GET script", Method: "GET", Path: "/api/scripts/{id}", Create: mk},
			{Name: "PATCH script", Method: "PATCH", Path: "/api/scripts/{id}", Body: obj{"source": "echo pwned"}, Create: mk},
			{Name: "PATCH description", Method: "PATCH", Path: "/api/scripts/{id}", Body: `{"description": null}`, Create: mk},
			{Name: "revisions", Method: "GET", Path: "/api/scripts/{id}/revisions", Create: mk},
			{Name: "revision", Method: "GET", Path: "/api/scripts/{id}/revisions/1", Create: mk},
		})

		// DELETE of another workspace's script answers as for an unknown id
		// ({deleted: false}) and deletes nothing; nothing the outsider does
		// changes the owner's script.
		snapshot := func() string {
			var sb strings.Builder
			for _, p := range []string{"/api/scripts/" + id, "/api/scripts/" + id + "/revisions", "/api/scripts"} {
				r := owner.Do("GET", p, nil)
				fixture.Want(t, r, http.StatusOK)
				sb.Write(r.Body)
			}
			return sb.String()
		}
		before := snapshot()
		foreign := outsider.Do("DELETE", "/api/scripts/"+id, nil)
		missing := outsider.Do("DELETE", "/api/scripts/"+ids.New(), nil)
		if foreign.Status != http.StatusOK || foreign.Status != missing.Status || string(foreign.Body) != string(missing.Body) ||
			strings.TrimSpace(string(foreign.Body)) != `{"deleted":false}` {
			t.Fatalf("DELETE of a foreign script = %d %s; of an unknown one %d %s", foreign.Status, foreign.Body, missing.Status, missing.Body)
		}
		wantError(t, outsider.Do("PATCH", "/api/scripts/"+id, obj{"name": "pwned", "slug": "pwned"}), http.StatusNotFound, "not_found")
		if after := snapshot(); after != before {
			t.Fatalf("the outsider's requests changed the owner's script:\n%s\n%s", before, after)
		}
		// The outsider's list and board hold none of the owner's scripts,
		// and their names and slugs do not collide with them.
		for _, p := range []string{"/api/scripts", "/api/scripts/board"} {
			r := outsider.Do("GET", p, nil)
			fixture.Want(t, r, http.StatusOK)
			if strings.Contains(string(r.Body), id) {
				t.Fatalf("%s shows another workspace's script: %s", p, r.Body)
			}
		}
		create(t, outsider, body("Mine", "mine", "sh", "echo theirs"))
		// X-Workspace-Id naming a workspace the caller is not in is refused.
		ownerWS := owner.DefaultWorkspace()
		r := outsider.Do("GET", "/api/scripts/"+id, nil, "X-Workspace-Id", ownerWS)
		if r.Status == http.StatusOK {
			t.Fatalf("the outsider read the script through the owner's workspace header: %s", r.Body)
		}
	})
}
