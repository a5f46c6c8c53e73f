package scoping

import (
	"slices"
	"sort"
	"strings"
)

// Problem is a table a statement reaches without naming its workspace.
type Problem struct {
	Table string
	Why   string
}

// Analysis is what a statement touches and which of its workspace tables
// it leaves unscoped.
type Analysis struct {
	// Tables lists the owned and child tables the statement touches.
	Tables []string
	// Keyed lists the child tables it reaches by their parent's key only
	// (see Analyze): accepted, and counted apart.
	Keyed []string
	// Problems lists those it does not scope (empty: scoped).
	Problems []Problem
}

// tref is one table reference of a statement: a table, a CTE, a derived
// table or a table function, with its alias.
type tref struct {
	table  string // lower-case name; "" for CTEs, derived tables, functions
	alias  string
	dyn    bool // the table's name is only known at run time
	insert bool // the target of an INSERT (scoped by what it supplies)
	scoped bool
	keyed  bool   // scoped by a parent key only
	why    string // for an INSERT target: what it lacks
}

// block is one SELECT, UPDATE, DELETE or INSERT: its tables, resolved
// against its own FROM first, then its enclosing blocks (correlation).
type block struct {
	parent *block
	trefs  []*tref
	ctes   map[string]bool
}

// fact: dst becomes scoped once src is (src nil: at once). A key fact
// scopes a child by its parent's key alone.
type fact struct {
	src, dst *tref
	key      bool
}

type analyzer struct {
	s     *Schema
	facts []fact
	all   []*tref
}

// Analyze judges one statement's text against the schema. The rules:
//
//   - A table with workspace_id (owned) must have it constrained in a
//     top-level conjunct of the WHERE or of its JOIN's ON: workspace_id =,
//     IN or = ANY anything (a parameter, a literal, a subquery, a column of
//     a table that is not a workspace table). a.workspace_id =
//     b.workspace_id (or workspaces.id) scopes a once b is, and a
//     correlated subquery may lean on its enclosing query's scoped tables.
//     A condition under OR or NOT, or in a LEFT JOIN's ON for any table but
//     the joined one, scopes nothing.
//   - A child table (no workspace_id, a foreign key to an owned or child
//     table) is proven scoped when that key is joined to a scoped parent:
//     c.fk = p.id, c.fk IN (SELECT id FROM parent … scoped), or EXISTS
//     (SELECT … FROM parent p WHERE p.id = c.fk AND … scoped). It is
//     accepted as keyed when the key equals a value (c.fk = $1, c.fk IN
//     (…)), which names one parent the caller read through its own scoped
//     statement; keyed tables are reported apart. A child statement that
//     names no parent (a sweep, a row by its own id) is a problem.
//   - INSERT into an owned table must supply workspace_id; INSERT …
//     SELECT must also scope what it reads. INSERT into a child table must
//     supply a parent key: proven when the SELECT reads a scoped parent,
//     keyed otherwise.
//   - UPDATE and DELETE scope their target like a SELECT scopes its FROM
//     (with UPDATE … FROM and DELETE … USING tables). CTEs, UNION arms and
//     every subquery are judged on their own.
//   - A table whose name is only known at run time is a problem.
//
// ON CONFLICT … DO UPDATE is not judged: its conflict target is a key of
// the inserted row, which already names its workspace.
func Analyze(s *Schema, text string) Analysis {
	a := &analyzer{s: s}
	a.statement(nest(tokenize(text)), nil, false)
	// Fixpoint: scoping flows along the facts; the proven ones first, so
	// that a child scoped both ways counts as proven.
	for _, keys := range []bool{false, true} {
		for changed := true; changed; {
			changed = false
			for _, f := range a.facts {
				if f.key && !keys || f.dst.scoped || f.src != nil && !f.src.scoped {
					continue
				}
				f.dst.scoped = true
				f.dst.keyed = keys
				changed = true
			}
		}
	}
	var out Analysis
	seen := map[string]bool{}
	for _, t := range a.all {
		switch {
		case t.dyn:
			out.Problems = append(out.Problems, Problem{Table: "?", Why: "table name only known at run time"})
		case t.table == "" || !s.Scoped(t.table):
		default:
			if !seen[t.table] {
				seen[t.table] = true
				out.Tables = append(out.Tables, t.table)
			}
			if t.scoped && t.keyed && !slices.Contains(out.Keyed, t.table) {
				out.Keyed = append(out.Keyed, t.table)
			}
			if !t.scoped {
				why := t.why
				if why == "" && s.Owned(t.table) {
					why = "no workspace_id condition"
				} else if why == "" {
					why = "not joined to a scoped parent (" + parentList(s, t.table) + ")"
				}
				out.Problems = append(out.Problems, Problem{Table: t.table, Why: why})
			}
		}
	}
	sort.Strings(out.Tables)
	sort.Strings(out.Keyed)
	return out
}

func parentList(s *Schema, table string) string {
	var parts []string
	for col, ref := range s.Parents(table) {
		parts = append(parts, col+" -> "+ref.Table+"."+ref.Column)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func (a *analyzer) add(t *tref) *tref {
	a.all = append(a.all, t)
	return t
}

// statement analyses a statement or a subquery (a group's nodes). filters
// says whether the statement, as a whole, restricts the enclosing block's
// rows (EXISTS or IN in a top-level conjunct): only then may its conditions
// scope the enclosing block's tables.
func (a *analyzer) statement(ns []node, parent *block, filters bool) *block {
	for len(ns) == 1 && ns[0].paren {
		ns = ns[0].group
	}
	if len(ns) == 0 {
		return nil
	}
	ctes := map[string]bool{}
	if parent != nil {
		for k := range parent.ctes {
			ctes[k] = true
		}
	}
	if ns[0].is("WITH") {
		i := 1
		if i < len(ns) && ns[i].is("RECURSIVE") {
			i++
		}
		for i < len(ns) {
			if ns[i].paren || ns[i].tok.kind != tWord {
				break
			}
			name := ns[i].tok.lower()
			ctes[name] = true
			i++
			if i < len(ns) && ns[i].paren { // column list
				i++
			}
			for i < len(ns) && (ns[i].is("AS") || ns[i].is("NOT") || ns[i].is("MATERIALIZED")) {
				i++
			}
			if i < len(ns) && ns[i].paren {
				a.statement(ns[i].group, &block{parent: parent, ctes: ctes}, false)
				i++
			}
			if i < len(ns) && ns[i].punct(",") {
				i++
				continue
			}
			break
		}
		ns = ns[i:]
	}
	scope := &block{parent: parent, ctes: ctes}
	if len(ns) == 0 {
		return scope
	}
	switch {
	case ns[0].is("SELECT"), ns[0].paren, ns[0].is("VALUES"):
		parts := splitCompound(ns)
		var first *block
		for _, p := range parts {
			b := a.selectBlock(p, scope, filters)
			if first == nil {
				first = b
			}
		}
		return first
	case ns[0].is("INSERT"):
		return a.insert(ns, scope)
	case ns[0].is("UPDATE"):
		return a.update(ns, scope)
	case ns[0].is("DELETE"):
		return a.delete(ns, scope)
	}
	a.scan(ns, scope)
	return scope
}

// splitCompound splits a query at top-level UNION / INTERSECT / EXCEPT.
func splitCompound(ns []node) [][]node {
	var out [][]node
	start := 0
	for i := 0; i < len(ns); i++ {
		if ns[i].is("UNION") || ns[i].is("INTERSECT") || ns[i].is("EXCEPT") {
			out = append(out, ns[start:i])
			j := i + 1
			if j < len(ns) && (ns[j].is("ALL") || ns[j].is("DISTINCT")) {
				j++
			}
			start = j
			i = j - 1
		}
	}
	return append(out, ns[start:])
}

var clauseWords = []string{"FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "FOR", "WINDOW", "RETURNING",
	"SET", "USING", "ON", "VALUES", "SELECT", "DO"}

// clauses splits a block's nodes at its top-level clause keywords; the
// result maps each keyword found to its nodes (the first SELECT's list
// under "SELECT").
func clauses(ns []node, words ...string) map[string][]node {
	out := map[string][]node{}
	cur, start := "", 0
	for i, n := range ns {
		for _, w := range words {
			if n.is(w) {
				if _, done := out[strings.ToUpper(w)]; done || cur == strings.ToUpper(w) {
					continue
				}
				if cur != "" {
					out[cur] = ns[start:i]
				}
				cur, start = strings.ToUpper(w), i+1
				break
			}
		}
	}
	if cur != "" {
		out[cur] = ns[start:]
	}
	return out
}

func (a *analyzer) selectBlock(ns []node, scope *block, filters bool) *block {
	for len(ns) == 1 && ns[0].paren {
		return a.statement(ns[0].group, scope.parent, filters)
	}
	b := &block{parent: scope.parent, ctes: scope.ctes}
	if len(ns) > 0 && ns[0].is("VALUES") {
		a.scan(ns, b)
		return b
	}
	cl := clauses(ns, "SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "FOR", "WINDOW")
	if from, ok := cl["FROM"]; ok {
		a.from(from, b)
	}
	if w, ok := cl["WHERE"]; ok {
		a.conditions(w, b, nil, filters)
	}
	for _, k := range []string{"SELECT", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET"} {
		a.scan(cl[k], b)
	}
	return b
}

var joinWords = map[string]bool{"JOIN": true, "LEFT": true, "RIGHT": true, "FULL": true, "INNER": true, "CROSS": true,
	"NATURAL": true, "OUTER": true, "LATERAL": true}

var notAlias = map[string]bool{"WHERE": true, "JOIN": true, "LEFT": true, "RIGHT": true, "INNER": true, "OUTER": true,
	"FULL": true, "CROSS": true, "NATURAL": true, "ON": true, "USING": true, "GROUP": true, "ORDER": true, "LIMIT": true,
	"OFFSET": true, "HAVING": true, "UNION": true, "INTERSECT": true, "EXCEPT": true, "FOR": true, "WINDOW": true,
	"RETURNING": true, "SET": true, "VALUES": true, "LATERAL": true, "SELECT": true, "FROM": true, "AND": true, "OR": true,
	"NOT": true, "DO": true, "WITH": true, "DEFAULT": true}

// tableRef reads one table reference at ns[i:] into b; it returns the
// reference and the index after it.
func (a *analyzer) tableRef(ns []node, i int, b *block) (*tref, int) {
	if i >= len(ns) {
		return nil, i
	}
	t := &tref{}
	n := ns[i]
	switch {
	case n.paren:
		a.statement(n.group, b, false) // a derived table
		i++
	case n.tok.kind == tDyn:
		t.dyn = true
		i++
	case n.tok.kind == tWord:
		name := n.tok.lower()
		i++
		for i+1 < len(ns) && ns[i].punct(".") && !ns[i+1].paren { // schema.table
			name = ns[i+1].tok.lower()
			i += 2
		}
		switch {
		case i < len(ns) && ns[i].paren: // a table function
			a.scan(ns[i].group, b)
			i++
		case b.ctes[name]:
		default:
			t.table = name
			t.alias = name
		}
	default:
		return nil, i + 1
	}
	if i < len(ns) && ns[i].is("AS") {
		i++
	}
	if i < len(ns) && !ns[i].paren && ns[i].tok.kind == tWord && !notAlias[strings.ToUpper(ns[i].tok.text)] {
		t.alias = ns[i].tok.lower()
		i++
		if i < len(ns) && ns[i].paren { // column aliases
			i++
		}
	}
	b.trefs = append(b.trefs, t)
	return a.add(t), i
}

// from reads a FROM list (or UPDATE … FROM, DELETE … USING) with its joins
// and their ON conditions.
func (a *analyzer) from(ns []node, b *block) {
	i := 0
	for i < len(ns) {
		left := false
		for i < len(ns) && !ns[i].paren && joinWords[strings.ToUpper(ns[i].tok.text)] {
			if ns[i].is("LEFT") || ns[i].is("RIGHT") || ns[i].is("FULL") {
				left = true
			}
			i++
		}
		t, next := a.tableRef(ns, i, b)
		i = next
		if i < len(ns) && ns[i].is("ON") {
			j := i + 1
			for j < len(ns) && !ns[j].punct(",") && (ns[j].paren || !joinWords[strings.ToUpper(ns[j].tok.text)]) {
				j++
			}
			var joined *tref
			if left {
				joined = t
			}
			a.conditions(ns[i+1:j], b, joined, false)
			i = j
		} else if i < len(ns) && ns[i].is("USING") {
			i += 2
		}
		if i < len(ns) && ns[i].punct(",") {
			i++
		}
		if t == nil && next == i {
			i++
		}
	}
}

// conditions reads a WHERE or ON clause. Only top-level conjuncts scope;
// only joined (when not nil: a LEFT JOIN's table) may be scoped by an ON.
func (a *analyzer) conditions(ns []node, b *block, joined *tref, filters bool) {
	for _, c := range conjuncts(ns) {
		a.conjunct(c, b, joined, filters)
	}
}

// conjuncts splits at top-level AND (the AND of BETWEEN excepted).
func conjuncts(ns []node) [][]node {
	var out [][]node
	start, between := 0, false
	for i, n := range ns {
		switch {
		case n.is("BETWEEN"):
			between = true
		case n.is("AND") && between:
			between = false
		case n.is("AND"):
			out = append(out, ns[start:i])
			start = i + 1
		}
	}
	return append(out, ns[start:])
}

func hasTop(ns []node, kw string) bool {
	for _, n := range ns {
		if n.is(kw) {
			return true
		}
	}
	return false
}

func isQuery(ns []node) bool {
	for len(ns) == 1 && ns[0].paren {
		ns = ns[0].group
	}
	return len(ns) > 0 && (ns[0].is("SELECT") || ns[0].is("WITH") || ns[0].is("VALUES"))
}

// colref is a column reference: the table it resolves to and the column.
type colref struct {
	t   *tref
	col string
}

// operand reads ns as a single column reference; ok is false for anything
// else (a parameter, a literal, an expression).
func (a *analyzer) operand(ns []node, b *block) (colref, bool) {
	switch {
	case len(ns) == 1 && !ns[0].paren && ns[0].tok.kind == tWord:
		col := ns[0].tok.lower()
		return colref{resolveColumn(a.s, b, col), col}, true
	case len(ns) == 3 && !ns[0].paren && ns[0].tok.kind == tWord && ns[1].punct(".") && !ns[2].paren && ns[2].tok.kind == tWord:
		return colref{resolveAlias(b, ns[0].tok.lower()), ns[2].tok.lower()}, true
	}
	return colref{}, false
}

func resolveAlias(b *block, alias string) *tref {
	for ; b != nil; b = b.parent {
		for _, t := range b.trefs {
			if t.alias == alias {
				return t
			}
		}
	}
	return nil
}

// resolveColumn finds the one table of the nearest block that has col.
func resolveColumn(s *Schema, b *block, col string) *tref {
	for ; b != nil; b = b.parent {
		var found *tref
		n := 0
		for _, t := range b.trefs {
			if tb := s.Tables[t.table]; tb != nil && tb.Columns[col] {
				found = t
				n++
			}
		}
		if n == 1 {
			return found
		}
		if n > 1 {
			return nil
		}
	}
	return nil
}

// wsValued reports whether c is a workspace id: an owned table's
// workspace_id or workspaces.id.
func (a *analyzer) wsValued(c colref) bool {
	if c.t == nil || c.t.table == "" {
		return false
	}
	return c.col == WorkspaceColumn && a.s.Owned(c.t.table) || c.t.table == "workspaces" && c.col == "id"
}

// inBlock reports whether t belongs to b itself (not an enclosing block).
func inBlock(b *block, t *tref) bool {
	for _, x := range b.trefs {
		if x == t {
			return true
		}
	}
	return false
}

// may reports whether a condition in b may scope t: t is b's own (and, in a
// LEFT JOIN's ON, the joined table), or b filters its enclosing block.
func may(b *block, t, joined *tref, filters bool) bool {
	if t == nil {
		return false
	}
	if joined != nil && t != joined {
		return false
	}
	return inBlock(b, t) || filters
}

func (a *analyzer) conjunct(c []node, b *block, joined *tref, filters bool) {
	if len(c) == 0 {
		return
	}
	if hasTop(c, "OR") {
		a.scan(c, b)
		return
	}
	if len(c) == 1 && c[0].paren && !isQuery(c[0].group) {
		a.conditions(c[0].group, b, joined, filters)
		return
	}
	if c[0].is("EXISTS") && len(c) == 2 && c[1].paren {
		a.statement(c[1].group, b, joined == nil)
		return
	}
	if c[0].is("NOT") {
		a.scan(c, b)
		return
	}
	// l = r, l IN (…), l = ANY (…)
	for k, n := range c {
		if n.punct("=") {
			l, r := c[:k], c[k+1:]
			if len(r) == 2 && (r[0].is("ANY") || r[0].is("SOME")) && r[1].paren {
				a.member(l, r[1].group, b, joined, filters)
				return
			}
			a.equal(l, r, b, joined, filters)
			a.equal(r, l, b, joined, filters)
			a.scan(c, b)
			return
		}
		if n.is("IN") && k+1 < len(c) && c[k+1].paren && k+2 == len(c) {
			if k > 0 && c[k-1].is("NOT") {
				break
			}
			a.member(c[:k], c[k+1].group, b, joined, filters)
			return
		}
	}
	a.scan(c, b)
}

// equal records what l = r says when l is a column.
func (a *analyzer) equal(l, r []node, b *block, joined *tref, filters bool) {
	lc, ok := a.operand(l, b)
	if !ok || lc.t == nil {
		return
	}
	rc, rcol := a.operand(r, b)
	switch {
	case a.wsValued(lc):
		if !may(b, lc.t, joined, filters) {
			return
		}
		if rcol && a.wsValued(rc) {
			a.facts = append(a.facts, fact{src: rc.t, dst: lc.t})
			return
		}
		if rcol && rc.t != nil && rc.t.table != "" && a.s.Scoped(rc.t.table) {
			// Compared with another workspace table's column that is not
			// its workspace: scoped only as far as that table is.
			a.facts = append(a.facts, fact{src: rc.t, dst: lc.t})
			return
		}
		a.facts = append(a.facts, fact{dst: lc.t})
	case lc.t.table != "":
		// A child's key joined to its parent: the child is scoped once
		// the parent is.
		ref, isKey := a.s.Parents(lc.t.table)[lc.col]
		if !isKey || !may(b, lc.t, joined, filters) {
			return
		}
		switch {
		case !rcol:
			// The parent's key given as a value: keyed.
			a.facts = append(a.facts, fact{dst: lc.t, key: true})
		case rc.t != nil && rc.t.table == ref.Table && rc.col == ref.Column:
			a.facts = append(a.facts, fact{src: rc.t, dst: lc.t})
		}
	}
}

// member records what l IN (list or subquery) says.
func (a *analyzer) member(l, list []node, b *block, joined *tref, filters bool) {
	lc, ok := a.operand(l, b)
	if !isQuery(list) {
		a.scan(list, b)
		if !ok || !may(b, lc.t, joined, filters) {
			return
		}
		if a.wsValued(lc) {
			a.facts = append(a.facts, fact{dst: lc.t})
		} else if _, isKey := a.s.Parents(lc.t.table)[lc.col]; isKey {
			a.facts = append(a.facts, fact{dst: lc.t, key: true})
		}
		return
	}
	sub := a.statement(list, b, false)
	if !ok || lc.t == nil || !may(b, lc.t, joined, filters) {
		return
	}
	if a.wsValued(lc) {
		a.facts = append(a.facts, fact{dst: lc.t})
		return
	}
	ref, isKey := a.s.Parents(lc.t.table)[lc.col]
	if !isKey || sub == nil {
		return
	}
	// The subquery's one selected column must be the parent's key.
	if sel := selected(list); sel != nil {
		if sc, ok := a.operand(sel, sub); ok && sc.t != nil && sc.t.table == ref.Table && sc.col == ref.Column {
			a.facts = append(a.facts, fact{src: sc.t, dst: lc.t})
		}
	}
}

// selected returns the select list of a simple subquery when it is one item.
func selected(ns []node) []node {
	for len(ns) == 1 && ns[0].paren {
		ns = ns[0].group
	}
	if len(ns) == 0 || !ns[0].is("SELECT") {
		return nil
	}
	cl := clauses(ns, "SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "FOR", "UNION")
	list := cl["SELECT"]
	if len(list) > 0 && list[0].is("DISTINCT") {
		list = list[1:]
	}
	if len(splitNodes(list, ",")) != 1 {
		return nil
	}
	return list
}

func splitNodes(ns []node, sep string) [][]node {
	var out [][]node
	start := 0
	for i, n := range ns {
		if n.punct(sep) {
			out = append(out, ns[start:i])
			start = i + 1
		}
	}
	return append(out, ns[start:])
}

// scan finds subqueries anywhere in ns and judges them on their own.
func (a *analyzer) scan(ns []node, b *block) {
	for _, n := range ns {
		if !n.paren {
			continue
		}
		if isQuery(n.group) {
			a.statement(n.group, b, false)
		} else {
			a.scan(n.group, b)
		}
	}
}

func (a *analyzer) update(ns []node, scope *block) *block {
	b := &block{parent: scope.parent, ctes: scope.ctes}
	cl := clauses(ns[1:], "SET", "FROM", "WHERE", "RETURNING")
	// ns[1:] up to SET is the target.
	i := 1
	for i < len(ns) && !ns[i].is("SET") {
		i++
	}
	if i > 1 {
		if ns[1].is("ONLY") {
			a.tableRef(ns[:i], 2, b)
		} else {
			a.tableRef(ns[:i], 1, b)
		}
	}
	if from, ok := cl["FROM"]; ok {
		a.from(from, b)
	}
	if w, ok := cl["WHERE"]; ok {
		a.conditions(w, b, nil, false)
	}
	a.scan(cl["SET"], b)
	a.scan(cl["RETURNING"], b)
	return b
}

func (a *analyzer) delete(ns []node, scope *block) *block {
	b := &block{parent: scope.parent, ctes: scope.ctes}
	cl := clauses(ns, "FROM", "USING", "WHERE", "RETURNING")
	from := cl["FROM"]
	if len(from) > 0 && from[0].is("ONLY") {
		from = from[1:]
	}
	a.tableRef(from, 0, b)
	if using, ok := cl["USING"]; ok {
		a.from(using, b)
	}
	if w, ok := cl["WHERE"]; ok {
		a.conditions(w, b, nil, false)
	}
	a.scan(cl["RETURNING"], b)
	return b
}

func (a *analyzer) insert(ns []node, scope *block) *block {
	b := &block{parent: scope.parent, ctes: scope.ctes}
	i := 1
	if i < len(ns) && ns[i].is("INTO") {
		i++
	}
	var target *tref
	switch {
	case i < len(ns) && !ns[i].paren && ns[i].tok.kind == tDyn:
		target = a.add(&tref{dyn: true})
		i++
	case i < len(ns) && !ns[i].paren && ns[i].tok.kind == tWord:
		target = &tref{table: ns[i].tok.lower()}
		i++
		for i+1 < len(ns) && ns[i].punct(".") && !ns[i+1].paren {
			target.table = ns[i+1].tok.lower()
			i += 2
		}
		target.alias = target.table
		if i+1 < len(ns) && ns[i].is("AS") {
			target.alias = ns[i+1].tok.lower()
			i += 2
		}
		a.add(target)
	}
	var cols []string
	if i < len(ns) && ns[i].paren {
		for _, c := range splitNodes(ns[i].group, ",") {
			if len(c) == 1 && !c[0].paren {
				cols = append(cols, c[0].tok.lower())
			}
		}
		i++
	}
	rest := ns[i:]
	// The source runs up to ON CONFLICT or RETURNING.
	end := len(rest)
	for k, n := range rest {
		if n.is("ON") && k+1 < len(rest) && rest[k+1].is("CONFLICT") || n.is("RETURNING") {
			end = k
			break
		}
	}
	source, tail := rest[:end], rest[end:]
	var src *block
	if len(source) > 0 && (source[0].is("SELECT") || source[0].is("WITH") || source[0].paren && isQuery(source[0].group)) {
		src = a.statement(source, scope, false)
	} else {
		a.scan(source, b)
	}
	a.scan(tail, b)
	if target == nil || target.table == "" {
		return b
	}
	target.insert = true
	has := func(c string) bool {
		if cols == nil {
			return true // every column, in table order
		}
		for _, x := range cols {
			if x == c {
				return true
			}
		}
		return false
	}
	switch {
	case a.s.Owned(target.table):
		if has(WorkspaceColumn) {
			target.scoped = true
		} else {
			target.why = "INSERT without workspace_id"
		}
	case a.s.Child(target.table):
		target.why = "INSERT into a child table without its parent's key"
		for col, ref := range a.s.Parents(target.table) {
			if !has(col) {
				continue
			}
			if src == nil {
				a.facts = append(a.facts, fact{dst: target, key: true})
				continue
			}
			for _, t := range src.trefs {
				if t.table == ref.Table {
					a.facts = append(a.facts, fact{src: t, dst: target})
				}
			}
			a.facts = append(a.facts, fact{dst: target, key: true})
		}
	}
	return b
}
