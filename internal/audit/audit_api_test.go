package audit_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/audit"
	"slipway/internal/fixture"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// These tests drive the owner console's audit board over HTTP on both
// engines, with entries the real operations recorded.

const boardPath = "/api/admin/audit/board"

var rowKeys = []string{"id", "actor_id", "action", "target_kind", "target_id", "before", "after", "created_at", "actor_email"}

func read(t *testing.T, c *apitest.Client, query url.Values) board.Board[audit.AuditEntry] {
	t.Helper()
	path := boardPath
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	r := c.Do("GET", path, nil)
	fixture.Want(t, r, http.StatusOK)
	var raw struct {
		Rows []json.RawMessage `json:"rows"`
	}
	r.JSON(t, &raw)
	for _, row := range raw.Rows {
		if keys := apitest.ObjectKeys(t, row); !slices.Equal(keys, rowKeys) {
			t.Fatalf("row keys = %v, want %v", keys, rowKeys)
		}
	}
	var b board.Board[audit.AuditEntry]
	r.JSON(t, &b)
	return b
}

func all(t *testing.T, c *apitest.Client, query url.Values) []audit.AuditEntry {
	t.Helper()
	q := url.Values{"page_size": {"200"}}
	for k, v := range query {
		q[k] = v
	}
	b := read(t, c, q)
	if len(b.Rows) != b.Total {
		t.Fatalf("page_size 200 holds %d of %d rows", len(b.Rows), b.Total)
	}
	return b.Rows
}

func counts(rows []audit.AuditEntry, field func(audit.AuditEntry) string) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		out[field(r)]++
	}
	return out
}

func facetCounts(t *testing.T, b board.Board[audit.AuditEntry], name string) map[string]int {
	t.Helper()
	fs, ok := b.Facets[name]
	if !ok {
		t.Fatalf("no %s facet in %v", name, b.Facets)
	}
	out := map[string]int{}
	for _, f := range fs {
		if f.Label != f.Value {
			t.Errorf("facet %s: label %q for value %q", name, f.Label, f.Value)
		}
		out[f.Value] = f.Count
	}
	return out
}

func action(e audit.AuditEntry) string     { return e.Action }
func targetKind(e audit.AuditEntry) string { return e.TargetKind }

func ids(rows []audit.AuditEntry) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func object(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("snapshot %s is not an object: %v", raw, err)
	}
	return m
}

// TestAuditBoard: entries with their snapshots and actors, facets,
// search, filters, sorts and pages; admins only; no way to change it.
func TestAuditBoard(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)

		// Changes that the operations record.
		r := f.Owner.Do("GET", "/organization", nil)
		fixture.Want(t, r, http.StatusOK)
		org := r.Map(t)
		orgID, oldName := org["id"].(string), org["name"].(string)
		fixture.Want(t, f.Owner.Do("PUT", "/organization", map[string]any{"name": "Renamed Shipyard"}), http.StatusOK)
		ws := f.Owner.DefaultWorkspace()
		r = f.Owner.Do("GET", "/api/workspaces/"+ws+"/autonomy", nil)
		fixture.Want(t, r, http.StatusOK)
		oldLevel := r.Map(t)["level"].(float64)
		fixture.Want(t, f.Owner.Do("PUT", "/api/workspaces/"+ws+"/autonomy", map[string]any{"level": 7}), http.StatusOK)
		fixture.Want(t, f.Outsider.Do("PUT", "/api/workspaces/"+f.Outsider.DefaultWorkspace()+"/autonomy", map[string]any{"level": 55}), http.StatusOK)
		// And one the system recorded (no actor).
		if err := audit.Record(context.Background(), f.App.DB.W, time.Now().UTC(), "", "instance.sweep", "instance", "nightly", nil, map[string]any{"swept": 3}); err != nil {
			t.Fatal(err)
		}

		// Instance admins only.
		fixture.WantError(t, f.Owner.Do("GET", boardPath, nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, f.Outsider.Do("GET", boardPath+"?q=rename", nil), http.StatusForbidden, "forbidden")
		if r := f.App.Anonymous().Do("GET", boardPath, nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("anonymous: status %d, want 401: %s", r.Status, r.Body)
		}

		// The default: newest first, with the shared board shape.
		b := read(t, f.Admin, nil)
		if b.Page != 1 || b.PageSize != 50 {
			t.Fatalf("page %d page_size %d, want 1 and 50", b.Page, b.PageSize)
		}
		rows := all(t, f.Admin, nil)
		if len(rows) < 5 {
			t.Fatalf("%d entries, want at least 5: %+v", len(rows), rows)
		}
		for i := 1; i < len(rows); i++ {
			if rows[i].CreatedAt.After(rows[i-1].CreatedAt) {
				t.Fatalf("row %d (%s) is newer than row %d (%s)", i, rows[i].CreatedAt, i-1, rows[i-1].CreatedAt)
			}
		}
		if rows[0].Action != "instance.sweep" {
			t.Fatalf("newest entry is %s, want the system's instance.sweep", rows[0].Action)
		}

		// The system's entry: no actor, no before, an after.
		sys := rows[0]
		if sys.ActorID != nil || sys.ActorEmail != nil || string(sys.Before) != "null" || object(t, sys.After)["swept"] != float64(3) {
			t.Fatalf("system entry = %+v (before %s, after %s)", sys, sys.Before, sys.After)
		}

		// The rename: before and after snapshots and the actor's email.
		renames := all(t, f.Admin, url.Values{"action": {"organization.rename"}})
		if len(renames) != 1 {
			t.Fatalf("%d renames, want 1", len(renames))
		}
		ren := renames[0]
		if ren.TargetKind != "organization" || ren.TargetID != orgID || ren.ActorID == nil || *ren.ActorID != f.Owner.ID ||
			ren.ActorEmail == nil || *ren.ActorEmail != f.Owner.Email {
			t.Fatalf("rename entry = %+v", ren)
		}
		if got := object(t, ren.Before)["name"]; got != oldName {
			t.Errorf("rename before.name = %v, want %q", got, oldName)
		}
		if got := object(t, ren.After)["name"]; got != "Renamed Shipyard" {
			t.Errorf("rename after.name = %v, want Renamed Shipyard", got)
		}
		autonomy := all(t, f.Admin, url.Values{"action": {"workspace.autonomy"}, "q": {f.Owner.Email}})
		if len(autonomy) != 1 || autonomy[0].TargetID != ws ||
			object(t, autonomy[0].Before)["level"] != oldLevel || object(t, autonomy[0].After)["level"] != float64(7) {
			t.Fatalf("the owner's autonomy entries = %+v", autonomy)
		}

		// Facets: counted over everything when nothing filters.
		wantActions, wantKinds := counts(rows, action), counts(rows, targetKind)
		if got := facetCounts(t, b, "action"); !maps.Equal(got, wantActions) {
			t.Errorf("action facet = %v, want %v", got, wantActions)
		}
		if got := facetCounts(t, b, "target_kind"); !maps.Equal(got, wantKinds) {
			t.Errorf("target_kind facet = %v, want %v", got, wantKinds)
		}
		if wantActions["workspace.autonomy"] != 2 || wantKinds["workspace"] < 2 {
			t.Fatalf("counts %v %v: want two autonomy changes", wantActions, wantKinds)
		}

		// A filter narrows the rows and the other facet, not its own.
		fb := read(t, f.Admin, url.Values{"target_kind": {"workspace"}, "page_size": {"200"}})
		for _, row := range fb.Rows {
			if row.TargetKind != "workspace" {
				t.Fatalf("target_kind=workspace holds %+v", row)
			}
		}
		if fb.Total != wantKinds["workspace"] || len(fb.Rows) != fb.Total {
			t.Fatalf("target_kind=workspace: %d rows of %d, want %d", len(fb.Rows), fb.Total, wantKinds["workspace"])
		}
		if got := facetCounts(t, fb, "target_kind"); !maps.Equal(got, wantKinds) {
			t.Errorf("target_kind facet under its own filter = %v, want %v", got, wantKinds)
		}
		if got, want := facetCounts(t, fb, "action"), counts(fb.Rows, action); !maps.Equal(got, want) {
			t.Errorf("action facet under target_kind=workspace = %v, want %v", got, want)
		}
		if got := facetCounts(t, fb, "action"); got["organization.rename"] != 0 || got["workspace.autonomy"] != 2 {
			t.Errorf("action facet under target_kind=workspace = %v", got)
		}
		both := read(t, f.Admin, url.Values{"target_kind": {"workspace"}, "action": {"organization.rename"}})
		if both.Total != 0 || len(both.Rows) != 0 {
			t.Fatalf("workspace renames: %+v", both.Rows)
		}
		if got := facetCounts(t, both, "target_kind"); got["organization"] != 1 || got["workspace"] != 0 {
			t.Errorf("target_kind facet under action=organization.rename = %v", got)
		}

		// q: by action, by the actor's email (any case), by target id; the
		// facets follow q.
		qb := read(t, f.Admin, url.Values{"q": {"RENAME"}})
		if qb.Total != 1 || qb.Rows[0].ID != ren.ID {
			t.Fatalf("q=RENAME: %+v", qb.Rows)
		}
		if got := facetCounts(t, qb, "action"); !maps.Equal(got, map[string]int{"organization.rename": 1}) {
			t.Errorf("action facet under q=RENAME = %v", got)
		}
		mine := all(t, f.Admin, url.Values{"q": {strings.ToUpper(strings.Split(f.Outsider.Email, "@")[0])}})
		if len(mine) == 0 {
			t.Fatal("q by the outsider's email found nothing")
		}
		for _, row := range mine {
			if row.ActorEmail == nil || *row.ActorEmail != f.Outsider.Email {
				t.Fatalf("q by the outsider's email holds %+v", row)
			}
		}
		if got := all(t, f.Admin, url.Values{"q": {"nightly"}}); len(got) != 1 || got[0].ID != sys.ID {
			t.Fatalf("q by target id: %+v", got)
		}
		// Wildcards are literal.
		if got := read(t, f.Admin, url.Values{"q": {"%"}}); got.Total != 0 {
			t.Fatalf("q=%%: %d rows", got.Total)
		}

		// Sorts.
		asc := all(t, f.Admin, url.Values{"sort": {"created_at"}, "order": {"asc"}})
		if want := ids(rows); !slices.Equal(ids(asc), reversed(want)) {
			t.Errorf("created_at asc is not the reverse of the default")
		}
		byAction := all(t, f.Admin, url.Values{"sort": {"action"}, "order": {"asc"}})
		if !slices.IsSortedFunc(byAction, func(a, b audit.AuditEntry) int { return strings.Compare(a.Action, b.Action) }) ||
			byAction[0].Action == byAction[len(byAction)-1].Action {
			t.Errorf("sort=action asc: %v", actions(byAction))
		}
		byActionDesc := all(t, f.Admin, url.Values{"sort": {"action"}, "order": {"desc"}})
		if byActionDesc[0].Action != byAction[len(byAction)-1].Action {
			t.Errorf("sort=action desc starts with %s", byActionDesc[0].Action)
		}
		target := func(e audit.AuditEntry) string { return e.TargetKind + "\x00" + e.TargetID }
		byTarget := all(t, f.Admin, url.Values{"sort": {"target"}, "order": {"asc"}})
		if !slices.IsSortedFunc(byTarget, func(a, b audit.AuditEntry) int { return strings.Compare(target(a), target(b)) }) {
			t.Errorf("sort=target asc: %v", targets(byTarget))
		}
		byTargetDesc := all(t, f.Admin, url.Values{"sort": {"target"}, "order": {"desc"}})
		if !slices.IsSortedFunc(byTargetDesc, func(a, b audit.AuditEntry) int { return strings.Compare(target(b), target(a)) }) {
			t.Errorf("sort=target desc: %v", targets(byTargetDesc))
		}
		fixture.WantError(t, f.Admin.Do("GET", boardPath+"?sort=actor_id", nil), http.StatusBadRequest, "bad_request", "created_at", "action", "target")
		if r := f.Admin.Do("GET", boardPath+"?order=sideways", nil); r.Status != http.StatusUnprocessableEntity && r.Status != http.StatusBadRequest {
			t.Errorf("order=sideways: status %d", r.Status)
		}

		// Pages: in order, without gaps or repeats.
		var paged []string
		for page := 1; ; page++ {
			p := read(t, f.Admin, url.Values{"page_size": {"2"}, "page": {strconv.Itoa(page)}})
			if p.Total != len(rows) || p.Page != page || p.PageSize != 2 {
				t.Fatalf("page %d: total %d page %d page_size %d", page, p.Total, p.Page, p.PageSize)
			}
			if len(p.Rows) == 0 {
				break
			}
			if len(p.Rows) > 2 {
				t.Fatalf("page %d holds %d rows", page, len(p.Rows))
			}
			paged = append(paged, ids(p.Rows)...)
		}
		if !slices.Equal(paged, ids(rows)) {
			t.Errorf("the pages hold %v, want %v", paged, ids(rows))
		}

		// Append-only: no operation edits or deletes entries.
		for _, m := range []string{"DELETE", "PUT", "PATCH", "POST"} {
			for _, p := range []string{boardPath, "/api/admin/audit", "/api/admin/audit/" + ren.ID} {
				if r := f.Admin.Do(m, p, map[string]any{}); r.Status != http.StatusMethodNotAllowed && r.Status != http.StatusNotFound {
					t.Errorf("%s %s: status %d, want 405 or 404", m, p, r.Status)
				}
			}
		}
		if after := all(t, f.Admin, nil); !slices.Equal(ids(after), ids(rows)) {
			t.Errorf("the log changed: %v, want %v", ids(after), ids(rows))
		}
	})
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func actions(rows []audit.AuditEntry) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Action
	}
	return out
}

func targets(rows []audit.AuditEntry) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.TargetKind + "/" + r.TargetID
	}
	return out
}
