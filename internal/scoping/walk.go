package scoping

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"
)

// Statement is one SQL statement of the code: the expression that hands it
// on (to the database, to a helper, into a value), the function holding it,
// and what it may read at run time.
type Statement struct {
	Pos  token.Position
	Func string // allowlist key: package dir under internal/, Type.Method or function
	// Texts are the statement's possible texts (one per way its parts may
	// be put together), each with its analysis.
	Texts []Text
	// Tables are the owned and child tables it touches.
	Tables []string
	// Keyed are the child tables it reaches by a parent's key only.
	Keyed []string
}

// Text is one possible text of a statement.
type Text struct {
	SQL      string
	Via      []token.Position // calls followed from a parameter to its argument
	ViaFuncs []string         // the functions making those calls
	Problems []Problem
}

// Unscoped returns the tables some text of s leaves unscoped, sorted.
func (s *Statement) Unscoped() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range s.Texts {
		for _, p := range t.Problems {
			if !seen[p.Table] {
				seen[p.Table] = true
				out = append(out, p.Table)
			}
		}
	}
	sort.Strings(out)
	return out
}

// OpaqueSite is a query handed to the database whose text the walk cannot see.
type OpaqueSite struct {
	Pos  token.Position
	Func string
	Expr string
}

// dbMethods take a query text; the value is the index of its argument.
var dbMethods = map[string]int{
	"ExecContext": 1, "QueryContext": 1, "QueryRowContext": 1, "PrepareContext": 1,
	"QueryRowPrepared": 1, "QueryPrepared": 1, "Later": 0,
	"Exec": 0, "Query": 0, "QueryRow": 0, "Prepare": 0,
}

// transparent calls build a text rather than receive one: their arguments
// are parts, judged in what the call returns.
func transparent(info *types.Info, c *ast.CallExpr) bool {
	sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	if p := pkgOf(info, sel.X); p != "" {
		return p == "fmt" && (sel.Sel.Name == "Sprintf" || sel.Sel.Name == "Fprintf") || p == "strings" ||
			strings.HasSuffix(p, "/platform/db") && sel.Sel.Name == "NewWhere"
	}
	switch sel.Sel.Name {
	case "And", "WriteString", "ILike", "TimeColumn":
		return true
	}
	return false
}

// Walk finds every statement of the module and judges it.
func (m *Module) Walk(s *Schema) (stmts []*Statement, opaque []OpaqueSite) {
	byKey := map[string]*Statement{}
	judge := func(fi *funcInfo, p *Package, key string, at ast.Expr, vs []variant) {
		var texts []variant
		for _, v := range vs {
			if LooksLikeStatement(v.text) {
				texts = append(texts, v)
			}
		}
		if len(texts) == 0 {
			return
		}
		pos := m.Fset.Position(at.Pos())
		id := fmt.Sprintf("%s:%d:%d", pos.Filename, pos.Line, pos.Column)
		st := byKey[id]
		if st == nil {
			st = &Statement{Pos: pos, Func: key}
			byKey[id] = st
		}
		for _, v := range texts {
			a := Analyze(s, v.text)
			t := Text{SQL: v.text, Problems: a.Problems}
			for _, c := range v.via {
				t.Via = append(t.Via, m.Fset.Position(c))
				if fi := m.funcAt(c); fi != nil {
					t.ViaFuncs = append(t.ViaFuncs, fi.key)
				}
			}
			st.Texts = append(st.Texts, t)
			st.Tables = mergeSorted(st.Tables, a.Tables)
			st.Keyed = mergeSorted(st.Keyed, a.Keyed)
		}
	}
	for _, fi := range m.sortedFuncs() {
		en := &env{pkg: fi.pkg, fi: fi}
		info := fi.pkg.Info
		hasCallers := len(m.calls[fi.obj]) > 0
		isString := func(e ast.Expr) bool {
			t := info.TypeOf(e)
			if t == nil {
				_, lit := e.(*ast.BasicLit)
				_, bin := e.(*ast.BinaryExpr)
				return lit || bin
			}
			b, ok := t.Underlying().(*types.Basic)
			return ok && (b.Kind() == types.String || b.Kind() == types.UntypedString)
		}
		isParam := func(e ast.Expr) bool {
			id, ok := ast.Unparen(e).(*ast.Ident)
			if !ok {
				return false
			}
			v, ok := info.Uses[id].(*types.Var)
			if !ok {
				return false
			}
			_, ok = fi.params[v]
			return ok
		}
		sink := func(e ast.Expr) {
			if isString(e) && !isParam(e) {
				judge(fi, fi.pkg, fi.key, e, m.eval(e, en))
			}
		}
		ast.Inspect(fi.decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if transparent(info, n) {
					return true
				}
				sel, _ := ast.Unparen(n.Fun).(*ast.SelectorExpr)
				qi, isDB := -1, false
				if sel != nil && pkgOf(info, sel.X) == "" { // a method, not a package's function (syscall.Exec)
					qi, isDB = dbMethods[sel.Sel.Name]
				}
				for i, a := range n.Args {
					if isDB && i == qi {
						if isParam(a) {
							continue // the text comes from the callers, judged there
						}
						vs := m.eval(a, en)
						judge(fi, fi.pkg, fi.key, a, vs)
						if !anySQL(vs) && !allowedOpaque(vs) {
							pos := m.Fset.Position(a.Pos())
							opaque = append(opaque, OpaqueSite{Pos: pos, Func: fi.key, Expr: types.ExprString(a)})
						}
						continue
					}
					sink(a)
				}
			case *ast.ReturnStmt:
				if !hasCallers {
					for _, r := range n.Results {
						sink(r)
					}
				}
			case *ast.CompositeLit:
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						el = kv.Value
					}
					sink(el)
				}
			case *ast.AssignStmt:
				for k, l := range n.Lhs {
					if _, local := l.(*ast.Ident); local && !isPkgVar(info, l) || len(n.Lhs) != len(n.Rhs) {
						continue
					}
					sink(n.Rhs[k])
				}
			}
			return true
		})
	}
	// Package-level SQL that no function's statement used.
	for _, p := range m.sorted() {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, sp := range gd.Specs {
					vs, ok := sp.(*ast.ValueSpec)
					if !ok || len(vs.Values) != len(vs.Names) {
						continue
					}
					for k, n := range vs.Names {
						key, en := p.Rel+"."+n.Name, &env{pkg: p}
						// Texts inside a package-level literal (a table of
						// statements) are statements of their own.
						ast.Inspect(vs.Values[k], func(x ast.Node) bool {
							if cl, ok := x.(*ast.CompositeLit); ok {
								for _, el := range cl.Elts {
									if kv, ok := el.(*ast.KeyValueExpr); ok {
										el = kv.Value
									}
									if t := p.Info.TypeOf(el); t != nil {
										if b, ok := t.Underlying().(*types.Basic); ok && b.Info()&types.IsString != 0 {
											judge(nil, p, key, el, m.eval(el, en))
										}
									}
								}
							}
							return true
						})
						o := p.Info.Defs[n]
						if o == nil || m.used[o] {
							continue
						}
						judge(nil, p, key, vs.Values[k], m.eval(vs.Values[k], en))
					}
				}
			}
		}
	}
	for _, st := range byKey {
		stmts = append(stmts, st)
	}
	sort.Slice(stmts, func(i, j int) bool {
		a, b := stmts[i].Pos, stmts[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	sort.Slice(opaque, func(i, j int) bool {
		a, b := opaque[i].Pos, opaque[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	return stmts, opaque
}

// funcAt returns the function whose body holds p.
func (m *Module) funcAt(p token.Pos) *funcInfo {
	for _, fi := range m.list {
		if fi.decl.Body.Pos() <= p && p < fi.decl.Body.End() {
			return fi
		}
	}
	return nil
}

func isPkgVar(info *types.Info, e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	if !ok {
		return false
	}
	o := info.Uses[id]
	return o != nil && o.Pkg() != nil && o.Parent() == o.Pkg().Scope()
}

func anySQL(vs []variant) bool {
	for _, v := range vs {
		if LooksLikeStatement(v.text) {
			return true
		}
	}
	return false
}

// allowedOpaque: a text that starts with anything but a statement the
// walk judges (DDL, PRAGMA, SAVEPOINT, SET, a lock function) is no
// concern, even with run-time parts; one that starts with a run-time part
// may be anything.
func allowedOpaque(vs []variant) bool {
	for _, v := range vs {
		toks := tokenize(v.text)
		for len(toks) > 0 && toks[0].kind == tPunct && toks[0].text == "(" {
			toks = toks[1:]
		}
		if len(toks) == 0 || toks[0].kind == tDyn {
			return false
		}
		switch strings.ToUpper(toks[0].text) {
		case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH":
			return false
		}
	}
	return true
}

func (m *Module) sortedFuncs() []*funcInfo {
	out := append([]*funcInfo{}, m.list...)
	sort.Slice(out, func(i, j int) bool { return out[i].decl.Pos() < out[j].decl.Pos() })
	return out
}

func mergeSorted(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range append(append([]string{}, a...), b...) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// Site is a place in the code that holds SQL.
type Site struct {
	Pos  token.Position
	Pkg  string // directory under internal/
	Func string
	What string
}

// IsStoreFile reports whether a file is one of a package's stores:
// store.go, <concept>_store.go or store_<concept>.go.
func IsStoreFile(path string) bool {
	base := path[strings.LastIndexAny(path, `/\`)+1:]
	return base == "store.go" || strings.HasSuffix(base, "_store.go") || strings.HasPrefix(base, "store_") && strings.HasSuffix(base, ".go")
}

// OutsideStores lists the SQL written outside store files: the literals
// that read as a statement and the calls that hand the database a query.
func (m *Module) OutsideStores() []Site {
	var out []Site
	for _, fi := range m.sortedFuncs() {
		file := m.Fset.Position(fi.decl.Pos()).Filename
		if IsStoreFile(file) {
			continue
		}
		info := fi.pkg.Info
		ast.Inspect(fi.decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && LooksLikeStatement(s) {
					out = append(out, Site{Pos: m.Fset.Position(n.Pos()), Pkg: fi.pkg.Rel, Func: fi.key, What: "SQL text"})
				}
			case *ast.CallExpr:
				sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr)
				if !ok || pkgOf(info, sel.X) != "" {
					return true
				}
				if qi, ok := dbMethods[sel.Sel.Name]; ok && qi < len(n.Args) {
					out = append(out, Site{Pos: m.Fset.Position(n.Pos()), Pkg: fi.pkg.Rel, Func: fi.key, What: "query: " + sel.Sel.Name})
				}
			}
			return true
		})
	}
	for _, p := range m.sorted() {
		for _, f := range p.Files {
			if IsStoreFile(m.Fset.Position(f.Pos()).Filename) {
				continue
			}
			for _, d := range f.Decls {
				if gd, ok := d.(*ast.GenDecl); ok {
					ast.Inspect(gd, func(n ast.Node) bool {
						if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
							if s, err := strconv.Unquote(bl.Value); err == nil && LooksLikeStatement(s) {
								out = append(out, Site{Pos: m.Fset.Position(bl.Pos()), Pkg: p.Rel, Func: p.Rel, What: "SQL text"})
							}
						}
						return true
					})
				}
			}
		}
	}
	return out
}
