package scoping

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Module is the parsed and type-checked Go source of the packages under a
// directory. Packages outside it (the standard library, other modules)
// are not read: they stand in as empty packages, so only what the module
// itself declares resolves (its constants fold, its functions and their
// call sites are known), which is all the walk needs.
type Module struct {
	Fset  *token.FileSet
	Root  string // module directory
	Path  string // module path
	pkgs  map[string]*Package
	fakes map[string]*types.Package
	funcs map[*types.Func]*funcInfo
	calls map[*types.Func][]callSite
	vars  map[*types.Var]pkgVar
	list  []*funcInfo
	used  map[types.Object]bool // package-level names some function refers to
	memo  map[memoKey][]variant
}

// Package is one package of the module.
type Package struct {
	Path  string // import path
	Rel   string // directory relative to internal/ (or the module root)
	Dir   string
	Files []*ast.File
	Types *types.Package
	Info  *types.Info
	m     *Module
	busy  bool
}

type funcInfo struct {
	pkg     *Package
	decl    *ast.FuncDecl
	obj     *types.Func
	key     string
	params  map[*types.Var]int
	assigns map[*types.Var][]assign
	blocks  []ast.Node
}

type assign struct {
	pos    token.Pos
	end    token.Pos   // the assignment takes effect here (its right side is read before)
	op     token.Token // DEFINE, ASSIGN, ADD_ASSIGN, VAR (var decl)
	rhs    ast.Expr    // nil: the zero value
	block  ast.Node    // innermost block holding the assignment
	single bool        // one value per name
	index  int         // which of a call's results (a, b := f())
}

type callSite struct {
	call *ast.CallExpr
	fi   *funcInfo // the caller (nil at package level)
	pkg  *Package
}

type pkgVar struct {
	pkg  *Package
	init ast.Expr
}

// Load parses every non-test Go file of the packages under root/dirs
// (build constraints as for this platform) and type-checks them.
func Load(root, modPath string, dirs ...string) (*Module, error) {
	m := &Module{Fset: token.NewFileSet(), Root: root, Path: modPath, pkgs: map[string]*Package{},
		fakes: map[string]*types.Package{}, funcs: map[*types.Func]*funcInfo{}, calls: map[*types.Func][]callSite{},
		vars: map[*types.Var]pkgVar{}, used: map[types.Object]bool{},
		memo: map[memoKey][]variant{}}
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.IsDir() {
				return nil
			}
			if n := e.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "node_modules" {
				return filepath.SkipDir
			}
			return m.parseDir(path)
		})
		if err != nil {
			return nil, err
		}
	}
	for _, p := range m.sorted() {
		m.check(p)
	}
	m.index()
	return m, nil
}

func (m *Module) parseDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(m.Root, dir)
	rel = filepath.ToSlash(rel)
	p := &Package{Path: m.Path + "/" + rel, Rel: strings.TrimPrefix(rel, "internal/"), Dir: dir, m: m}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, name); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(m.Fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		p.Files = append(p.Files, f)
	}
	if len(p.Files) > 0 {
		m.pkgs[p.Path] = p
	}
	return nil
}

// Packages returns the module's packages by import path.
func (m *Module) sorted() []*Package {
	out := make([]*Package, 0, len(m.pkgs))
	for _, p := range m.pkgs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Import implements types.Importer: the module's own packages are checked
// from source, anything else is an empty stand-in.
func (m *Module) Import(path string) (*types.Package, error) {
	if p, ok := m.pkgs[path]; ok {
		m.check(p)
		return p.Types, nil
	}
	if f, ok := m.fakes[path]; ok {
		return f, nil
	}
	name := path[strings.LastIndex(path, "/")+1:]
	if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" && strings.Contains(path, "/") {
		rest := path[:strings.LastIndex(path, "/")]
		name = rest[strings.LastIndex(rest, "/")+1:]
	}
	name = strings.TrimPrefix(strings.ReplaceAll(strings.ReplaceAll(name, "-", ""), ".", ""), "go")
	f := types.NewPackage(path, name)
	f.MarkComplete()
	m.fakes[path] = f
	return f, nil
}

func (m *Module) check(p *Package) {
	if p.Types != nil || p.busy {
		return
	}
	p.busy = true
	p.Info = &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: m, Error: func(error) {}, FakeImportC: true}
	p.Types, _ = conf.Check(p.Path, m.Fset, p.Files, p.Info)
	p.busy = false
}

// index records every function with a body, its parameters and local
// assignments, and every call of a module function.
func (m *Module) index() {
	for _, p := range m.sorted() {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Body == nil {
						continue
					}
					obj, _ := p.Info.Defs[d.Name].(*types.Func)
					fi := &funcInfo{pkg: p, decl: d, obj: obj, key: funcKey(p, d), params: map[*types.Var]int{},
						assigns: map[*types.Var][]assign{}}
					i := 0
					for _, fld := range d.Type.Params.List {
						if len(fld.Names) == 0 {
							i++
						}
						for _, n := range fld.Names {
							if v, ok := p.Info.Defs[n].(*types.Var); ok {
								fi.params[v] = i
							}
							i++
						}
					}
					fi.collect()
					m.list = append(m.list, fi)
					if obj != nil {
						m.funcs[obj] = fi
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						vs, ok := s.(*ast.ValueSpec)
						if !ok || len(vs.Values) != len(vs.Names) {
							continue
						}
						for k, n := range vs.Names {
							if v, ok := p.Info.Defs[n].(*types.Var); ok {
								m.vars[v] = pkgVar{pkg: p, init: vs.Values[k]}
							}
						}
					}
				}
			}
		}
	}
	for _, fi := range m.list {
		ast.Inspect(fi.decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if f := calleeOf(fi.pkg, n); f != nil {
					m.calls[f] = append(m.calls[f], callSite{call: n, fi: fi, pkg: fi.pkg})
				}
			case *ast.Ident:
				if o := fi.pkg.Info.Uses[n]; o != nil && o.Pkg() != nil && o.Parent() == o.Pkg().Scope() {
					m.used[o] = true
				}
			}
			return true
		})
	}
}

// funcKey names a function the way the allowlist does: its package's
// directory under internal/, then Type.Method or the function's name.
func funcKey(p *Package, d *ast.FuncDecl) string {
	name := d.Name.Name
	if d.Recv != nil && len(d.Recv.List) > 0 {
		t := d.Recv.List[0].Type
		for {
			switch x := t.(type) {
			case *ast.StarExpr:
				t = x.X
				continue
			case *ast.IndexExpr:
				t = x.X
				continue
			case *ast.IndexListExpr:
				t = x.X
				continue
			}
			break
		}
		if id, ok := t.(*ast.Ident); ok {
			name = id.Name + "." + name
		}
	}
	return p.Rel + "." + name
}

func calleeOf(p *Package, c *ast.CallExpr) *types.Func {
	var obj types.Object
	switch f := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		obj = p.Info.Uses[f]
	case *ast.SelectorExpr:
		obj = p.Info.Uses[f.Sel]
	case *ast.IndexExpr: // generic instantiation
		if id, ok := f.X.(*ast.Ident); ok {
			obj = p.Info.Uses[id]
		}
	}
	fn, _ := obj.(*types.Func)
	if fn != nil {
		fn = fn.Origin()
	}
	return fn
}

// collect records the function's blocks and its assignments to local
// variables.
func (fi *funcInfo) collect() {
	info := fi.pkg.Info
	var stack []ast.Node
	innermost := func() ast.Node {
		for i := len(stack) - 1; i >= 0; i-- {
			switch stack[i].(type) {
			case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
				return stack[i]
			}
		}
		return fi.decl.Body
	}
	ast.Inspect(fi.decl.Body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
			fi.blocks = append(fi.blocks, n)
		case *ast.AssignStmt:
			single := len(n.Lhs) == len(n.Rhs)
			for k, l := range n.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok {
					continue
				}
				obj := info.Defs[id]
				if obj == nil {
					obj = info.Uses[id]
				}
				v, ok := obj.(*types.Var)
				if !ok {
					continue
				}
				a := assign{pos: n.Pos(), end: n.End(), op: n.Tok, block: innermost(), single: single, index: k}
				if single {
					a.rhs = n.Rhs[k]
				} else if len(n.Rhs) == 1 {
					a.rhs = n.Rhs[0] // one call, several results
				}
				fi.assigns[v] = append(fi.assigns[v], a)
			}
		case *ast.ValueSpec:
			for k, id := range n.Names {
				v, ok := info.Defs[id].(*types.Var)
				if !ok {
					continue
				}
				a := assign{pos: n.Pos(), end: n.End(), op: token.VAR, block: innermost(), single: len(n.Values) == 0 || len(n.Values) == len(n.Names)}
				if len(n.Values) == len(n.Names) {
					a.rhs = n.Values[k]
				}
				fi.assigns[v] = append(fi.assigns[v], a)
			}
		case *ast.RangeStmt:
			// The loop's value (or key) is each element of what it ranges
			// over; the body is where it is used.
			for k, e := range []ast.Expr{n.Key, n.Value} {
				id, ok := e.(*ast.Ident)
				if !ok {
					continue
				}
				if v, ok := info.Defs[id].(*types.Var); ok {
					fi.assigns[v] = append(fi.assigns[v], assign{pos: n.Pos(), end: n.Body.Pos(), op: token.RANGE, rhs: n.X,
						block: n.Body, single: true, index: k})
				}
			}
		}
		return true
	})
}

// encloses reports whether block b holds position p.
func encloses(b ast.Node, p token.Pos) bool { return b.Pos() <= p && p < b.End() }
