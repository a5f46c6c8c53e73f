package scoping

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestWalk runs the walk over testdata/internal: the shapes in which the
// code builds SQL, each with what the walk must conclude.
func TestWalk(t *testing.T) {
	m, err := Load("testdata", "example", "internal")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadSchema(os.DirFS("testdata"), "schema")
	if err != nil {
		t.Fatal(err)
	}
	stmts, opaque := m.Walk(s)
	got := map[string][]string{} // function -> unscoped tables of its statements, "-" for a scoped one
	for _, st := range stmts {
		u := st.Unscoped()
		if len(u) == 0 {
			u = []string{"-"}
		}
		got[st.Func] = append(got[st.Func], strings.Join(u, ","))
	}
	want := map[string][]string{
		"sample.Scoped":       {"-", "-"},
		"sample.Unscoped":     {"tasks"},
		"sample.Conditional":  {"tasks"},
		"sample.Always":       {"-"},
		"platform/db.CountBy": {"-"},    // its one caller passes a scoped clause
		"sample.listWhere":    {"runs"}, // one caller's clause has no workspace
		"sample.Passthrough":  {"runs"},
		"sample.Tuple":        {"-"},
		"sample.Builder":      {"-"}, // keyed: the parent's key in every row
		"sample.Ranged":       {"events", "-", "-"},
		"sample.sweeps":       {"events", "-"},
		"sample.Helper":       {"runs"},
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
	}
	for k, g := range got {
		if want[k] == nil {
			t.Errorf("unexpected statements in %s: %v", k, g)
		}
	}
	if len(opaque) != 1 || opaque[0].Func != "sample.Opaque" || opaque[0].Expr != "h.sql" {
		t.Errorf("opaque: %+v", opaque)
	}
	for _, st := range stmts {
		if st.Func == "sample.listWhere" {
			for _, tx := range st.Texts {
				if tx.Problems != nil && len(tx.Via) != 1 {
					t.Errorf("listWhere's unscoped text should name the call it came from: %+v", tx)
				}
			}
		}
	}
}
