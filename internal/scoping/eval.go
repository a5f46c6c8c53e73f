package scoping

import (
	"cmp"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
)

// A variant is one text a string expression may have at run time, with the
// calls through which the walk followed a parameter to its argument.
type variant struct {
	text string
	via  []token.Pos
}

const (
	maxVariants = 64
	maxDepth    = 4
)

// env is where an expression is evaluated: its function (nil at package
// level) and, when the walk entered a function from a call, the arguments
// its parameters stand for.
type env struct {
	pkg   *Package
	fi    *funcInfo
	bind  map[*types.Var]arg
	depth int
}

type arg struct {
	expr ast.Expr
	env  *env
}

func one(s string) []variant { return []variant{{text: s}} }

func dyn(e ast.Expr) []variant {
	s := types.ExprString(e)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return one(Dyn(s))
}

// concat returns every pairing of a's and b's texts (see trim).
func concat(a, b []variant) []variant {
	var out []variant
	seen := map[string]bool{}
	for _, x := range a {
		for _, y := range b {
			t := x.text + y.text
			if seen[t] {
				continue
			}
			seen[t] = true
			out = append(out, variant{text: t, via: joinVia(x.via, y.via)})
		}
	}
	return trim(out)
}

// trim keeps at most maxVariants texts: the shortest and the longest half.
// Optional parts (filters added under an if) make a text longer: the
// shortest has the fewest conditions, which is where a missing workspace
// shows; the longest has every optional join.
func trim(vs []variant) []variant {
	if len(vs) <= maxVariants {
		return vs
	}
	slices.SortFunc(vs, func(a, b variant) int {
		if c := cmp.Compare(len(a.text), len(b.text)); c != 0 {
			return c
		}
		return strings.Compare(a.text, b.text)
	})
	return append(vs[:maxVariants/2:maxVariants/2], vs[len(vs)-maxVariants/2:]...)
}

func joinVia(a, b []token.Pos) []token.Pos {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := append([]token.Pos{}, a...)
	for _, p := range b {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func union(a, b []variant) []variant {
	seen := map[string]bool{}
	var out []variant
	for _, v := range append(append([]variant{}, a...), b...) {
		if !seen[v.text] {
			seen[v.text] = true
			out = append(out, v)
		}
	}
	return trim(out)
}

type memoKey struct {
	e  ast.Expr
	fi *funcInfo
	en *env // set when the environment binds parameters
}

// eval returns the texts a string expression may have. Outside a call's
// bindings an expression has the same texts wherever the walk meets it, so
// those are kept.
func (m *Module) eval(e ast.Expr, en *env) []variant {
	k := memoKey{e: e, fi: en.fi}
	if en.bind != nil {
		k.en = en
	}
	if vs, ok := m.memo[k]; ok {
		return vs
	}
	vs := m.eval1(e, en)
	m.memo[k] = vs
	return vs
}

func (m *Module) eval1(e ast.Expr, en *env) []variant {
	info := en.pkg.Info
	if tv, ok := info.Types[e]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		return one(constant.StringVal(tv.Value))
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			if s, err := strconv.Unquote(e.Value); err == nil {
				return one(s)
			}
		}
	case *ast.ParenExpr:
		return m.eval(e.X, en)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return concat(m.eval(e.X, en), m.eval(e.Y, en))
		}
	case *ast.Ident:
		return m.evalIdent(e, en)
	case *ast.SelectorExpr:
		if c, ok := info.Uses[e.Sel].(*types.Const); ok && c.Val().Kind() == constant.String {
			return one(constant.StringVal(c.Val()))
		}
		if e.Sel.Name == "SQL" && m.isWhere(e.X, en) { // a db.Where's clause
			return m.eval(e.X, en)
		}
		if vs := m.rangeField(e, en); vs != nil {
			return vs
		}
	case *ast.CallExpr:
		return m.evalCall(e, en)
	case *ast.CompositeLit: // db.Where{SQL: …}
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "SQL" {
					return m.eval(kv.Value, en)
				}
			}
		}
	}
	return dyn(e)
}

// isWhere reports whether x is a db.Where (by its type; when the type is
// unknown, by the shape of its use).
func (m *Module) isWhere(x ast.Expr, en *env) bool {
	t := en.pkg.Info.TypeOf(x)
	if t == nil {
		return true
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "Where"
}

func (m *Module) evalIdent(id *ast.Ident, en *env) []variant {
	info := en.pkg.Info
	obj := info.Uses[id]
	if obj == nil {
		obj = info.Defs[id]
	}
	switch o := obj.(type) {
	case *types.Const:
		if o.Val().Kind() == constant.String {
			return one(constant.StringVal(o.Val()))
		}
	case *types.Var:
		if a, ok := en.bind[o]; ok {
			return m.eval(a.expr, a.env)
		}
		if pv, ok := m.vars[o]; ok {
			if en.depth >= maxDepth {
				return dyn(id)
			}
			return m.eval(pv.init, &env{pkg: pv.pkg, depth: en.depth + 1})
		}
		if en.fi == nil {
			break
		}
		if i, ok := en.fi.params[o]; ok {
			return m.evalParam(id, en, i)
		}
		if _, ok := en.fi.assigns[o]; ok {
			return m.reaching(o, id.Pos(), en)
		}
	}
	return dyn(id)
}

// evalParam follows a parameter to the arguments of the function's calls.
func (m *Module) evalParam(id *ast.Ident, en *env, i int) []variant {
	if en.depth >= maxDepth || en.fi.obj == nil {
		return one(Dyn("parameter " + id.Name))
	}
	sites := m.calls[en.fi.obj]
	var out []variant
	for _, s := range sites {
		if s.call.Ellipsis.IsValid() && i >= len(s.call.Args)-1 || i >= len(s.call.Args) {
			continue
		}
		ce := &env{pkg: s.pkg, fi: s.fi, depth: en.depth + 1}
		for _, v := range m.eval(s.call.Args[i], ce) {
			out = union(out, []variant{{text: v.text, via: append([]token.Pos{s.call.Pos()}, v.via...)}})
		}
	}
	if len(out) == 0 {
		return one(Dyn("parameter " + id.Name))
	}
	return out
}

// reaching returns the texts of local variable v at position at: those
// of the assignments that may reach it. Walking back from at, an
// assignment in a block that also holds at is certain to have run, and
// ends the walk; one in a block of its own (an if, a case, a loop) may or
// may not have, so the walk goes on past it.
func (m *Module) reaching(v *types.Var, at token.Pos, en *env) []variant {
	as := en.fi.assigns[v]
	var out []variant
	for k := len(as) - 1; k >= 0; k-- {
		a := as[k]
		if a.end > at {
			continue
		}
		var val []variant
		switch {
		case !a.single:
			val = one(Dyn(v.Name()))
			if c, ok := a.rhs.(*ast.CallExpr); ok {
				val = m.evalResult(c, a.index, en)
			}
		case a.rhs == nil:
			val = one("")
		case a.op == token.ADD_ASSIGN:
			val = concat(m.reaching(v, a.pos, en), m.eval(a.rhs, en))
		case a.op == token.RANGE:
			val = one(Dyn(v.Name()))
			if a.index == 1 {
				if elems, een := m.elements(a.rhs, en); elems != nil {
					val = nil
					for _, el := range elems {
						val = union(val, m.eval(el, een))
					}
				}
			}
		default:
			val = m.eval(a.rhs, en)
		}
		out = union(out, val)
		if encloses(a.block, at) {
			return out
		}
	}
	if len(out) == 0 {
		return one(Dyn(v.Name()))
	}
	return out
}

// evalCall follows the calls that build SQL: fmt.Sprintf, db.NewWhere and
// Where.And, the Dialect's fragments, strings.Builder, and the module's
// own functions that return a string.
func (m *Module) evalCall(c *ast.CallExpr, en *env) []variant {
	info := en.pkg.Info
	if sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr); ok {
		if pkg := pkgOf(info, sel.X); pkg != "" {
			switch {
			case pkg == "fmt" && sel.Sel.Name == "Sprintf" && len(c.Args) > 0:
				return m.sprintf(c.Args[0], c.Args[1:], en)
			case strings.HasSuffix(pkg, "/platform/db") && sel.Sel.Name == "NewWhere" && len(c.Args) > 0:
				return m.eval(c.Args[0], en)
			}
		}
		switch sel.Sel.Name {
		case "And":
			if len(c.Args) > 0 && m.isWhere(sel.X, en) {
				return concat(concat(m.eval(sel.X, en), one(" AND ")), m.eval(c.Args[0], en))
			}
		case "Next", "Placeholder":
			return one("$0")
		case "ForUpdate", "SkipLocked", "StoredJSON":
			return one(" ")
		case "ILike":
			if len(c.Args) == 2 {
				return concat(concat(m.eval(c.Args[0], en), one(" LIKE ")), m.eval(c.Args[1], en))
			}
		case "TimeColumn":
			if len(c.Args) == 1 {
				return m.eval(c.Args[0], en)
			}
		case "String":
			if id, ok := sel.X.(*ast.Ident); ok && en.fi != nil {
				if v, ok := info.Uses[id].(*types.Var); ok {
					return m.builder(v, c.Pos(), en)
				}
			}
		}
	}
	return m.evalResult(c, 0, en)
}

// evalResult evaluates result k of a call of one of the module's
// functions that returns a string or a db.Where there: the texts its
// return statements may give, its parameters standing for the call's
// arguments.
func (m *Module) evalResult(c *ast.CallExpr, k int, en *env) []variant {
	fn := calleeOf(en.pkg, c)
	fi := m.funcs[fn]
	if fi == nil || en.depth >= maxDepth || !returnsText(fn, k) {
		return dyn(c)
	}
	bind := map[*types.Var]arg{}
	for v, i := range fi.params {
		if i < len(c.Args) {
			bind[v] = arg{expr: c.Args[i], env: en}
		}
	}
	callee := &env{pkg: fi.pkg, fi: fi, bind: bind, depth: en.depth + 1}
	var out []variant
	ast.Inspect(fi.decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			if k < len(n.Results) && len(n.Results) > 1 || len(n.Results) == 1 && k == 0 {
				out = union(out, m.eval(n.Results[k], callee))
			}
		}
		return true
	})
	if len(out) == 0 {
		return dyn(c)
	}
	return out
}

func returnsText(fn *types.Func, k int) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Results().Len() <= k {
		return false
	}
	switch t := sig.Results().At(k).Type().(type) {
	case *types.Basic:
		return t.Kind() == types.String
	case *types.Named:
		return t.Obj().Name() == "Where"
	}
	return false
}

// pkgOf returns the import path x names when it is a package name.
func pkgOf(info *types.Info, x ast.Expr) string {
	id, ok := x.(*ast.Ident)
	if !ok {
		return ""
	}
	if pn, ok := info.Uses[id].(*types.PkgName); ok {
		return pn.Imported().Path()
	}
	return ""
}

// sprintf fills a format's verbs with its arguments' texts.
func (m *Module) sprintf(format ast.Expr, args []ast.Expr, en *env) []variant {
	var out []variant
	for _, f := range m.eval(format, en) {
		parts := []variant{{via: f.via}}
		s, k := f.text, 0
		for {
			i := strings.IndexByte(s, '%')
			if i < 0 || i+1 >= len(s) {
				parts = concat(parts, one(s))
				break
			}
			parts = concat(parts, one(s[:i]))
			j := i + 1
			for j < len(s) && strings.IndexByte("+-# 0123456789.", s[j]) >= 0 {
				j++
			}
			if j >= len(s) {
				break
			}
			switch {
			case s[j] == '%':
				parts = concat(parts, one("%"))
			case k < len(args) && s[j] == 'd':
				// A number: a placeholder's or a limit's, never a name.
				if tv, ok := en.pkg.Info.Types[args[k]]; ok && tv.Value != nil {
					parts = concat(parts, one(tv.Value.ExactString()))
				} else {
					parts = concat(parts, one("0"))
				}
				k++
			case k < len(args):
				parts = concat(parts, m.eval(args[k], en))
				k++
			}
			s = s[j+1:]
		}
		out = union(out, parts)
	}
	return out
}

// builder returns what was written to a strings.Builder v before at, in
// order (writes in loops and branches once each).
func (m *Module) builder(v *types.Var, at token.Pos, en *env) []variant {
	info := en.pkg.Info
	out := one("")
	ast.Inspect(en.fi.decl.Body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok || c.Pos() >= at {
			return true
		}
		sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
		if !ok {
			return true
		}
		target := func(x ast.Expr) bool {
			if u, ok := x.(*ast.UnaryExpr); ok && u.Op == token.AND {
				x = u.X
			}
			id, ok := x.(*ast.Ident)
			return ok && info.Uses[id] == v
		}
		switch {
		case target(sel.X) && (sel.Sel.Name == "WriteString") && len(c.Args) == 1:
			out = concat(out, m.eval(c.Args[0], en))
		case target(sel.X) && (sel.Sel.Name == "WriteByte" || sel.Sel.Name == "WriteRune") && len(c.Args) == 1:
			if bl, ok := c.Args[0].(*ast.BasicLit); ok && bl.Kind == token.CHAR {
				if r, _, _, err := strconv.UnquoteChar(bl.Value[1:len(bl.Value)-1], '\''); err == nil {
					out = concat(out, one(string(r)))
				}
			}
		case pkgOf(info, sel.X) == "fmt" && sel.Sel.Name == "Fprintf" && len(c.Args) > 1 && target(c.Args[0]):
			out = concat(out, m.sprintf(c.Args[1], c.Args[2:], en))
		}
		return true
	})
	return out
}

// elements returns the elements of the composite literal x is (a literal,
// or a variable or package-level variable initialised with one), with the
// environment they are written in; nil when x is not one.
func (m *Module) elements(x ast.Expr, en *env) ([]ast.Expr, *env) {
	switch x := ast.Unparen(x).(type) {
	case *ast.CompositeLit:
		out := make([]ast.Expr, 0, len(x.Elts))
		for _, el := range x.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			out = append(out, el)
		}
		return out, en
	case *ast.Ident:
		v, ok := en.pkg.Info.Uses[x].(*types.Var)
		if !ok {
			return nil, nil
		}
		if pv, ok := m.vars[v]; ok {
			return m.elements(pv.init, &env{pkg: pv.pkg, depth: en.depth})
		}
	}
	return nil, nil
}

// rangeField evaluates v.f where v is the value of a range over a literal
// of struct literals: f of each element.
func (m *Module) rangeField(e *ast.SelectorExpr, en *env) []variant {
	id, ok := e.X.(*ast.Ident)
	if !ok || en.fi == nil {
		return nil
	}
	v, ok := en.pkg.Info.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	var out []variant
	for _, a := range en.fi.assigns[v] {
		if a.op != token.RANGE || a.index != 1 {
			continue
		}
		elems, een := m.elements(a.rhs, en)
		for _, el := range elems {
			lit, ok := el.(*ast.CompositeLit)
			if !ok {
				continue
			}
			if f := field(lit, e.Sel.Name, een.pkg.Info); f != nil {
				out = union(out, m.eval(f, een))
			}
		}
	}
	return out
}

// field returns the expression a struct literal gives field name.
func field(lit *ast.CompositeLit, name string, info *types.Info) ast.Expr {
	for i, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == name {
				return kv.Value
			}
			continue
		}
		// Positional: the i-th field of the literal's struct type.
		t := info.TypeOf(lit)
		if t == nil {
			return nil
		}
		st, ok := t.Underlying().(*types.Struct)
		if ok && i < st.NumFields() && st.Field(i).Name() == name {
			return el
		}
	}
	return nil
}
