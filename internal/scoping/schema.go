package scoping

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Schema is what the migrations say about the tables: their columns and
// their foreign keys. Only the "-- +goose Up" parts count.
type Schema struct {
	Tables map[string]*Table
}

// Table is one table of the schema.
type Table struct {
	Name    string
	Columns map[string]bool
	// Refs maps a column to the table and column it references.
	Refs map[string]Ref
}

// Ref is the target of a foreign key.
type Ref struct{ Table, Column string }

// WorkspaceColumn is the column that says whose a row is.
const WorkspaceColumn = "workspace_id"

// Owned reports whether a table's rows belong to a workspace by a column of
// their own: it has workspace_id.
func (s *Schema) Owned(table string) bool {
	t := s.Tables[table]
	return t != nil && t.Columns[WorkspaceColumn]
}

// Parents returns, for a child table (no workspace_id of its own, but a
// foreign key to a table that is owned or itself a child), its foreign keys
// to those parents: column -> target. Nil for any other table. (A key to
// workspaces itself, such as users.default_workspace_id, is a preference,
// not ownership.)
func (s *Schema) Parents(table string) map[string]Ref {
	t := s.Tables[table]
	if t == nil || t.Columns[WorkspaceColumn] {
		return nil
	}
	var out map[string]Ref
	for col, ref := range t.Refs {
		if s.scopedBy(ref.Table, map[string]bool{table: true}) {
			if out == nil {
				out = map[string]Ref{}
			}
			out[col] = ref
		}
	}
	return out
}

// Child reports whether a table is a child of workspace rows (see Parents).
func (s *Schema) Child(table string) bool { return len(s.Parents(table)) > 0 }

// Scoped reports whether statements on the table must name a workspace:
// owned tables and their children.
func (s *Schema) Scoped(table string) bool { return s.Owned(table) || s.Child(table) }

func (s *Schema) scopedBy(table string, seen map[string]bool) bool {
	if s.Owned(table) {
		return true
	}
	if seen[table] {
		return false
	}
	seen[table] = true
	t := s.Tables[table]
	if t == nil {
		return false
	}
	for _, ref := range t.Refs {
		if s.scopedBy(ref.Table, seen) {
			return true
		}
	}
	return false
}

// ScopedTables lists the owned and the child tables, sorted.
func (s *Schema) ScopedTables() (owned, children []string) {
	for name := range s.Tables {
		switch {
		case s.Owned(name):
			owned = append(owned, name)
		case s.Child(name):
			children = append(children, name)
		}
	}
	sort.Strings(owned)
	sort.Strings(children)
	return owned, children
}

// ReadSchema reads the *.sql migrations in dir of fsys in name order.
func ReadSchema(fsys fs.FS, dir string) (*Schema, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	s := &Schema{Tables: map[string]*Table{}}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if err := s.apply(upPart(string(b))); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
	}
	return s, nil
}

// upPart keeps the "-- +goose Up" sections of a migration.
func upPart(text string) string {
	var b strings.Builder
	up := false
	for line := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "-- +goose Up"):
			up = true
			continue
		case strings.HasPrefix(t, "-- +goose Down"):
			up = false
			continue
		}
		if up {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// apply runs the DDL that shapes tables: CREATE TABLE, ALTER TABLE … ADD
// COLUMN / DROP COLUMN / RENAME TO, DROP TABLE. Everything else is ignored.
func (s *Schema) apply(text string) error {
	for _, stmt := range splitStatements(tokenize(text)) {
		if len(stmt) < 3 {
			continue
		}
		switch {
		case stmt[0].is("CREATE") && stmt[1].is("TABLE"):
			i := 2
			if stmt[i].is("IF") { // IF NOT EXISTS
				i += 3
			}
			if i+1 >= len(stmt) || stmt[i+1].text != "(" {
				continue
			}
			t := &Table{Name: stmt[i].lower(), Columns: map[string]bool{}, Refs: map[string]Ref{}}
			body, _ := groupAt(stmt, i+1)
			for _, def := range splitTop(body, ",") {
				t.define(def)
			}
			s.Tables[t.Name] = t
		case stmt[0].is("ALTER") && stmt[1].is("TABLE"):
			t := s.Tables[stmt[2].lower()]
			if t == nil {
				continue
			}
			rest := stmt[3:]
			switch {
			case len(rest) > 2 && rest[0].is("ADD") && rest[1].is("COLUMN"):
				t.define(rest[2:])
			case len(rest) > 2 && rest[0].is("DROP") && rest[1].is("COLUMN"):
				delete(t.Columns, rest[2].lower())
				delete(t.Refs, rest[2].lower())
			case len(rest) > 2 && rest[0].is("RENAME") && rest[1].is("TO"):
				delete(s.Tables, t.Name)
				t.Name = rest[2].lower()
				s.Tables[t.Name] = t
			case len(rest) > 1 && rest[0].is("ADD") && rest[1].is("CONSTRAINT"):
				t.define(rest[1:])
			}
		case stmt[0].is("DROP") && stmt[1].is("TABLE"):
			delete(s.Tables, stmt[2].lower())
		}
	}
	return nil
}

// define adds a column definition or a table constraint.
func (t *Table) define(def []sqlToken) {
	if len(def) == 0 {
		return
	}
	if def[0].is("CONSTRAINT") && len(def) > 2 {
		def = def[2:]
	}
	switch {
	case def[0].is("FOREIGN") && len(def) > 2 && def[1].is("KEY"):
		cols, next := groupAt(def, 2)
		if next < len(def) && def[next].is("REFERENCES") && next+1 < len(def) {
			target := def[next+1].lower()
			tcols, _ := groupAt(def, next+2)
			if len(cols) == 1 && len(tcols) == 1 {
				t.Refs[cols[0].lower()] = Ref{Table: target, Column: tcols[0].lower()}
			}
		}
		return
	case def[0].is("PRIMARY"), def[0].is("UNIQUE"), def[0].is("CHECK"), def[0].is("EXCLUDE"):
		return
	}
	col := def[0].lower()
	t.Columns[col] = true
	for i := 1; i+1 < len(def); i++ {
		if def[i].is("REFERENCES") {
			ref := Ref{Table: def[i+1].lower(), Column: "id"}
			if tcols, _ := groupAt(def, i+2); len(tcols) == 1 {
				ref.Column = tcols[0].lower()
			}
			t.Refs[col] = ref
		}
	}
}

// splitStatements splits tokens at top-level semicolons.
func splitStatements(toks []sqlToken) [][]sqlToken {
	var out [][]sqlToken
	start, depth := 0, 0
	for i, t := range toks {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		case ";":
			if depth == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

// groupAt returns the tokens inside the parentheses that open at i and the
// index after the closing one; nil, i when toks[i] is not "(".
func groupAt(toks []sqlToken, i int) ([]sqlToken, int) {
	if i >= len(toks) || toks[i].text != "(" {
		return nil, i
	}
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return toks[i+1 : j], j + 1
			}
		}
	}
	return toks[i+1:], len(toks)
}

// splitTop splits tokens at top-level separators sep.
func splitTop(toks []sqlToken, sep string) [][]sqlToken {
	var out [][]sqlToken
	start, depth := 0, 0
	for i, t := range toks {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		case sep:
			if depth == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	return append(out, toks[start:])
}
