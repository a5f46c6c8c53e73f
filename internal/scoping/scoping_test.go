package scoping

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"slipway/migrations"
)

var dump = flag.String("scoping.dump", "", "write every statement the walk finds, with its verdict, to this file")

var loaded struct {
	once   sync.Once
	m      *Module
	schema *Schema
	root   string
	err    error
}

// load reads the module's packages under internal/ and the PostgreSQL
// migrations (the SQLite ones have the same tables), once for the tests
// that need them.
func load(t *testing.T) (*Module, *Schema, func(string) string) {
	t.Helper()
	l := &loaded
	l.once.Do(func() {
		if l.root, l.err = filepath.Abs("../.."); l.err != nil {
			return
		}
		if l.m, l.err = Load(l.root, "slipway", "internal"); l.err != nil {
			return
		}
		l.schema, l.err = ReadSchema(migrations.FS, "postgres")
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
	rel := func(file string) string {
		if r, err := filepath.Rel(l.root, file); err == nil {
			return r
		}
		return file
	}
	return l.m, l.schema, rel
}

// TestEveryStatementScoped walks every SQL statement of the non-test Go
// files under internal/ and fails on one that touches a workspace's rows
// without naming the workspace, unless the allowlist (allowlist.go) names
// it. See Analyze for the rules and docs/decisions.md ("Scoped SQL,
// proven").
func TestEveryStatementScoped(t *testing.T) {
	m, schema, rel := load(t)
	stmts, opaque := m.Walk(schema)

	used := make([]bool, len(Unscoped))
	var touching, scoped, keyed, allowed int
	var failures []string
	for _, st := range stmts {
		if len(st.Tables) == 0 {
			continue
		}
		touching++
		bad := st.Unscoped()
		if len(bad) == 0 {
			scoped++
			if len(st.Keyed) > 0 {
				keyed++
			}
			continue
		}
		// A text is allowed when the function holding the statement, or a
		// function whose call supplied the text (a clause passed to a
		// helper), is named with the table.
		var missing []string
		var shown *Text
		for i := range st.Texts {
			tx := &st.Texts[i]
			for _, p := range tx.Problems {
				ok := false
				for k, e := range Unscoped {
					if slices.Contains(e.Tables, p.Table) && (e.Func == st.Func || slices.Contains(tx.ViaFuncs, e.Func)) {
						used[k], ok = true, true
					}
				}
				if !ok {
					if !slices.Contains(missing, p.Table) {
						missing = append(missing, p.Table)
					}
					if shown == nil {
						shown = tx
					}
				}
			}
		}
		if len(missing) == 0 {
			allowed++
			continue
		}
		failures = append(failures, describe(rel(st.Pos.Filename), st, shown, missing))
	}
	for _, o := range opaque {
		if !slices.ContainsFunc(Opaque, func(x OpaqueQuery) bool { return x.Func == o.Func }) {
			failures = append(failures, fmt.Sprintf("%s:%d: %s hands the database a text the walk cannot read: %s\n"+
				"\tbuild it where the walk can follow it (a literal, a constant, a local variable), or name the function in Opaque",
				rel(o.Pos.Filename), o.Pos.Line, o.Func, o.Expr))
		}
	}
	for i, e := range Unscoped {
		if e.Reason == "" {
			failures = append(failures, fmt.Sprintf("allowlist: %s has no reason", e.Func))
		}
		if !used[i] {
			failures = append(failures, fmt.Sprintf("allowlist: %s %v matches no unscoped statement any more: take it out", e.Func, e.Tables))
		}
	}
	for _, o := range Opaque {
		if !slices.ContainsFunc(opaque, func(x OpaqueSite) bool { return x.Func == o.Func }) {
			failures = append(failures, fmt.Sprintf("allowlist: opaque %s matches no query any more: take it out", o.Func))
		}
	}
	t.Logf("%d statements; %d touch workspace tables: %d scoped (%d of them reach a child table by its parent's key), %d allowlisted",
		len(stmts), touching, scoped, keyed, allowed)
	if *dump != "" {
		writeDump(t, *dump, rel, stmts)
	}
	if len(failures) > 0 {
		t.Errorf("%d statements touch a workspace's rows without naming the workspace.\n"+
			"Put workspace_id in the WHERE (a store method takes the workspace id), or, when no workspace applies (a sweep,\n"+
			"a token lookup, an admin read), add the function to internal/scoping/allowlist.go with the reason.\n\n%s",
			len(failures), strings.Join(failures, "\n\n"))
	}
}

// describe says where a statement is, what it leaves unscoped and why, with
// the first of its texts that does.
func describe(file string, st *Statement, tx *Text, missing []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: %s: %s", file, st.Pos.Line, st.Func, strings.Join(missing, ", "))
	var why []string
	for _, p := range tx.Problems {
		if w := p.Table + ": " + p.Why; slices.Contains(missing, p.Table) && !slices.Contains(why, w) {
			why = append(why, w)
		}
	}
	fmt.Fprintf(&b, " (%s)\n\t%s", strings.Join(why, "; "), strings.Join(strings.Fields(tx.SQL), " "))
	for k, v := range tx.Via {
		fmt.Fprintf(&b, "\n\tthe text comes from the call at %s:%d", filepath.Base(v.Filename), v.Line)
		if k < len(tx.ViaFuncs) {
			fmt.Fprintf(&b, " in %s", tx.ViaFuncs[k])
		}
	}
	if n := len(st.Texts); n > 1 {
		fmt.Fprintf(&b, "\n\t(one of the %d texts this statement may have)", n)
	}
	return b.String()
}

func writeDump(t *testing.T, path string, rel func(string) string, stmts []*Statement) {
	var b strings.Builder
	for _, st := range stmts {
		fmt.Fprintf(&b, "%s:%d %s tables=%v keyed=%v unscoped=%v\n", rel(st.Pos.Filename), st.Pos.Line, st.Func, st.Tables, st.Keyed, st.Unscoped())
		for _, tx := range st.Texts {
			fmt.Fprintf(&b, "    %s %v\n", strings.Join(strings.Fields(tx.SQL), " "), tx.Problems)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSQLLivesInStores fails on SQL written outside a package's store files
// (store.go, <concept>_store.go): a statement's text, or a call that hands
// the database a query. OutsideStores (allowlist.go) names the packages
// that are exempt.
func TestSQLLivesInStores(t *testing.T) {
	m, _, rel := load(t)
	var failures []string
	seen := map[string]bool{}
	for _, s := range m.OutsideStores() {
		if _, ok := OutsideStores[s.Pkg]; ok {
			seen[s.Pkg] = true
			continue
		}
		failures = append(failures, fmt.Sprintf("%s:%d: %s: %s", rel(s.Pos.Filename), s.Pos.Line, s.Func, s.What))
	}
	for pkg := range OutsideStores {
		if !seen[pkg] {
			failures = append(failures, fmt.Sprintf("allowlist: %s has no SQL outside its stores any more: take it out of OutsideStores", pkg))
		}
	}
	if len(failures) > 0 {
		t.Errorf("SQL outside the store files: move it into the package's store.go (or <concept>_store.go), as a function that\n"+
			"takes a db.Queryer or *db.Tx and the workspace id.\n\n%s", strings.Join(failures, "\n"))
	}
}
