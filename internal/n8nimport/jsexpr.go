package n8nimport

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// n8n expressions are JavaScript. This file reads the small part of it that
// workflows use in practice (member access, indexing, comparisons,
// arithmetic, ternaries, literals, a few well-known methods) into a tree and
// writes it back as expr-lang, resolving n8n's data references ($json,
// $('Node').item.json, $node["Node"].json, $input...) to our environment.
// Anything else (arrow functions, regular expressions, luxon dates, unknown
// globals) is refused, and the caller keeps the text with a warning.

// errUntranslatable wraps every reason an expression cannot be translated.
var errUntranslatable = errors.New("cannot translate")

func untranslatable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUntranslatable, fmt.Sprintf(format, args...))
}

// ---- lexer ----

type jsTokKind uint8

const (
	tEOF jsTokKind = iota
	tIdent
	tNumber
	tString
	tPunct
)

type jsTok struct {
	kind jsTokKind
	s    string  // identifier, punctuation, or the decoded string
	num  float64 // tNumber
}

var jsPuncts = []string{"===", "!==", "...", "**", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "=>",
	"+", "-", "*", "/", "%", "<", ">", "!", "?", ":", ".", ",", "(", ")", "[", "]", "{", "}", "=", "&", "|", "^", "~", ";"}

const maxJSTokens = 2000

func jsLex(src string) ([]jsTok, error) {
	var toks []jsTok
	for i := 0; i < len(src); {
		if len(toks) > maxJSTokens {
			return nil, untranslatable("the expression is too long")
		}
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(src) && (src[i+1] == '/' || src[i+1] == '*'):
			return nil, untranslatable("comments are not supported")
		case isJSIdentStart(c):
			j := i + 1
			for j < len(src) && isJSIdentPart(src[j]) {
				j++
			}
			toks = append(toks, jsTok{kind: tIdent, s: src[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (isJSIdentPart(src[j]) || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && j > i && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(src[i:j]), "0x")) {
				j++
			}
			f, err := jsNumber(src[i:j])
			if err != nil {
				return nil, err
			}
			toks = append(toks, jsTok{kind: tNumber, num: f, s: src[i:j]})
			i = j
		case c == '"' || c == '\'' || c == '`':
			s, n, err := jsString(src[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, jsTok{kind: tString, s: s})
			i += n
		default:
			matched := ""
			for _, p := range jsPuncts {
				if strings.HasPrefix(src[i:], p) {
					matched = p
					break
				}
			}
			// a?.5 is a ternary with .5, not optional chaining.
			if matched == "?." && i+2 < len(src) && src[i+2] >= '0' && src[i+2] <= '9' {
				matched = "?"
			}
			if matched == "" {
				r, _ := utf8.DecodeRuneInString(src[i:])
				return nil, untranslatable("unexpected character %q", r)
			}
			toks = append(toks, jsTok{kind: tPunct, s: matched})
			i += len(matched)
		}
	}
	return append(toks, jsTok{kind: tEOF}), nil
}

func isJSIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isJSIdentPart(c byte) bool { return isJSIdentStart(c) || c >= '0' && c <= '9' }

func jsNumber(s string) (float64, error) {
	clean := strings.ReplaceAll(s, "_", "")
	lower := strings.ToLower(clean)
	switch {
	case strings.HasSuffix(lower, "n"):
		return 0, untranslatable("BigInt literals are not supported")
	case strings.HasPrefix(lower, "0x") || strings.HasPrefix(lower, "0o") || strings.HasPrefix(lower, "0b"):
		i, err := strconv.ParseInt(clean, 0, 64)
		if err != nil {
			return 0, untranslatable("number %q", s)
		}
		return float64(i), nil
	case len(clean) > 1 && clean[0] == '0' && clean[1] >= '0' && clean[1] <= '9':
		return 0, untranslatable("legacy octal number %q", s)
	}
	f, err := strconv.ParseFloat(clean, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, untranslatable("number %q", s)
	}
	return f, nil
}

// jsString decodes the string literal at the start of s and returns it with
// the number of bytes it took. Template literals are taken when they hold
// no ${} substitution.
func jsString(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c == '$' && q == '`' && i+1 < len(s) && s[i+1] == '{':
			return "", 0, untranslatable("template literals with ${} are not supported")
		case (c == '\n' || c == '\r') && q != '`':
			return "", 0, untranslatable("unterminated string")
		case c == '\\':
			if i+1 >= len(s) {
				return "", 0, untranslatable("unterminated string")
			}
			e := s[i+1]
			i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'v':
				b.WriteByte('\v')
			case '0':
				b.WriteByte(0)
			case '\n':
				// line continuation
			case 'x':
				if i+2 > len(s) {
					return "", 0, untranslatable("bad escape")
				}
				v, err := strconv.ParseUint(s[i:i+2], 16, 8)
				if err != nil {
					return "", 0, untranslatable("bad escape")
				}
				b.WriteRune(rune(v))
				i += 2
			case 'u':
				var hex string
				if i < len(s) && s[i] == '{' {
					end := strings.IndexByte(s[i:], '}')
					if end < 0 {
						return "", 0, untranslatable("bad escape")
					}
					hex, i = s[i+1:i+end], i+end+1
				} else {
					if i+4 > len(s) {
						return "", 0, untranslatable("bad escape")
					}
					hex, i = s[i:i+4], i+4
				}
				v, err := strconv.ParseUint(hex, 16, 32)
				if err != nil || v > utf8.MaxRune {
					return "", 0, untranslatable("bad escape")
				}
				b.WriteRune(rune(v))
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", 0, untranslatable("unterminated string")
}

// ---- parser ----

type jsNode interface{}

type (
	jsNum    struct{ v float64 }
	jsStr    struct{ v string }
	jsIdent  struct{ name string }
	jsMember struct {
		obj      jsNode
		name     string
		optional bool
	}
	jsIndex struct {
		obj, idx jsNode
		optional bool
	}
	jsCall struct {
		callee jsNode
		args   []jsNode
	}
	jsUnary struct {
		op string
		x  jsNode
	}
	jsBinary struct {
		op   string
		l, r jsNode
	}
	jsCond   struct{ c, a, b jsNode }
	jsArray  struct{ elems []jsNode }
	jsObject struct {
		keys []string
		vals []jsNode
	}
)

type jsParser struct {
	toks  []jsTok
	pos   int
	depth int
}

const maxJSDepth = 100

func parseJS(src string) (jsNode, error) {
	toks, err := jsLex(src)
	if err != nil {
		return nil, err
	}
	p := &jsParser{toks: toks}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, untranslatable("unexpected %q", t.s)
	}
	return n, nil
}

func (p *jsParser) peek() jsTok { return p.toks[p.pos] }

func (p *jsParser) next() jsTok {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *jsParser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.s == s
}

func (p *jsParser) expect(s string) error {
	if !p.isPunct(s) {
		return untranslatable("expected %q", s)
	}
	p.next()
	return nil
}

func (p *jsParser) enter() error {
	p.depth++
	if p.depth > maxJSDepth {
		return untranslatable("the expression is nested too deeply")
	}
	return nil
}

func (p *jsParser) expr() (jsNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.isPunct("?") {
		return c, nil
	}
	p.next()
	a, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	return jsCond{c, a, b}, nil
}

var jsPrec = map[string]int{
	"??": 1, "||": 2, "&&": 3,
	"==": 6, "!=": 6, "===": 6, "!==": 6,
	"<": 7, ">": 7, "<=": 7, ">=": 7,
	"+": 9, "-": 9, "*": 10, "/": 10, "%": 10, "**": 11,
}

func (p *jsParser) binary(min int) (jsNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		prec, ok := jsPrec[t.s]
		if t.kind != tPunct || !ok || prec <= min {
			if t.kind == tPunct && (t.s == "&" || t.s == "|" || t.s == "^" || t.s == "=" || t.s == "=>") ||
				t.kind == tIdent && (t.s == "in" || t.s == "instanceof") {
				return nil, untranslatable("operator %q is not supported", t.s)
			}
			return l, nil
		}
		p.next()
		next := prec
		if t.s == "**" {
			next = prec - 1 // right associative
		}
		r, err := p.binary(next)
		if err != nil {
			return nil, err
		}
		l = jsBinary{t.s, l, r}
	}
}

func (p *jsParser) unary() (jsNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	t := p.peek()
	if t.kind == tPunct && (t.s == "!" || t.s == "-" || t.s == "+") {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return jsUnary{t.s, x}, nil
	}
	if t.kind == tPunct && t.s == "~" || t.kind == tIdent && (t.s == "typeof" || t.s == "void" || t.s == "delete" || t.s == "await" || t.s == "new") {
		return nil, untranslatable("%q is not supported", t.s)
	}
	return p.postfix()
}

func (p *jsParser) postfix() (jsNode, error) {
	n, err := p.primary()
	if err != nil {
		return nil, err
	}
	for steps := 0; ; steps++ {
		if steps > maxJSDepth {
			return nil, untranslatable("the expression is nested too deeply")
		}
		switch {
		case p.isPunct("."):
			p.next()
			t := p.next()
			if t.kind != tIdent {
				return nil, untranslatable("expected a property name")
			}
			n = jsMember{obj: n, name: t.s}
		case p.isPunct("?."):
			p.next()
			switch {
			case p.isPunct("["):
				p.next()
				idx, err := p.expr()
				if err != nil {
					return nil, err
				}
				if err := p.expect("]"); err != nil {
					return nil, err
				}
				n = jsIndex{obj: n, idx: idx, optional: true}
			case p.isPunct("("):
				return nil, untranslatable("optional calls are not supported")
			default:
				t := p.next()
				if t.kind != tIdent {
					return nil, untranslatable("expected a property name")
				}
				n = jsMember{obj: n, name: t.s, optional: true}
			}
		case p.isPunct("["):
			p.next()
			idx, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			n = jsIndex{obj: n, idx: idx}
		case p.isPunct("("):
			p.next()
			args, err := p.list(")")
			if err != nil {
				return nil, err
			}
			n = jsCall{callee: n, args: args}
		default:
			return n, nil
		}
	}
}

// list reads comma-separated expressions up to the closing punctuation.
func (p *jsParser) list(closing string) ([]jsNode, error) {
	var out []jsNode
	for !p.isPunct(closing) {
		if p.isPunct("...") {
			return nil, untranslatable("spread is not supported")
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, x)
		if p.isPunct(",") {
			p.next()
			continue
		}
		if !p.isPunct(closing) {
			return nil, untranslatable("expected %q", closing)
		}
	}
	p.next()
	return out, nil
}

func (p *jsParser) primary() (jsNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	t := p.next()
	switch t.kind {
	case tNumber:
		return jsNum{t.num}, nil
	case tString:
		return jsStr{t.s}, nil
	case tIdent:
		if p.isPunct("=>") {
			return nil, untranslatable("arrow functions are not supported")
		}
		switch t.s {
		case "function", "this", "class", "let", "const", "var", "return", "if", "for", "while", "yield", "super", "import":
			return nil, untranslatable("%q is not supported", t.s)
		}
		return jsIdent{t.s}, nil
	case tPunct:
		switch t.s {
		case "(":
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			if p.isPunct("=>") {
				return nil, untranslatable("arrow functions are not supported")
			}
			return x, nil
		case "[":
			elems, err := p.list("]")
			if err != nil {
				return nil, err
			}
			return jsArray{elems}, nil
		case "{":
			var obj jsObject
			for !p.isPunct("}") {
				k := p.next()
				if k.kind != tIdent && k.kind != tString && k.kind != tNumber {
					return nil, untranslatable("unsupported object key")
				}
				key := k.s
				if k.kind == tNumber {
					key = formatNumber(k.num)
				}
				if err := p.expect(":"); err != nil {
					return nil, err
				}
				v, err := p.expr()
				if err != nil {
					return nil, err
				}
				obj.keys, obj.vals = append(obj.keys, key), append(obj.vals, v)
				if p.isPunct(",") {
					p.next()
				} else if !p.isPunct("}") {
					return nil, untranslatable("expected \"}\"")
				}
			}
			p.next()
			return obj, nil
		}
	}
	if t.kind == tEOF {
		return nil, untranslatable("the expression ends early")
	}
	return nil, untranslatable("unexpected %q", t.s)
}

// ---- emitter ----

// jsScope is what an expression's references resolve against.
type jsScope struct {
	json string                            // what $json (the current item) is
	node func(name string) (string, error) // what $('name').item.json is
}

// translateJS turns one n8n JavaScript expression into an expr-lang one.
func translateJS(src string, sc jsScope) (string, error) {
	n, err := parseJS(src)
	if err != nil {
		return "", err
	}
	return sc.emit(n)
}

// exprIdent matches a property name expr can take after a dot.
var exprIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// exprReserved are expr-lang's words that cannot follow a dot.
var exprReserved = map[string]bool{"in": true, "not": true, "and": true, "or": true, "matches": true, "contains": true,
	"startsWith": true, "endsWith": true, "let": true, "nil": true, "true": true, "false": true, "if": true, "else": true}

func quoteExpr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r == utf8.RuneError {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53-1 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// access writes obj.name (or obj["name"] when name is no plain identifier).
func access(obj, name string, optional bool) string {
	if exprIdent.MatchString(name) && !exprReserved[name] {
		if optional {
			return obj + "?." + name
		}
		return obj + "." + name
	}
	if optional {
		return obj + "?.[" + quoteExpr(name) + "]"
	}
	return obj + "[" + quoteExpr(name) + "]"
}

func (sc jsScope) emitAll(ns []jsNode) ([]string, error) {
	out := make([]string, len(ns))
	for i, n := range ns {
		s, err := sc.emit(n)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// item resolves n when it denotes an n8n item (whose .json is the data):
// $input.item, $input.first(), items[0], $('X').item, $node["X"], ...
func (sc jsScope) item(n jsNode) (string, bool, error) {
	switch n := n.(type) {
	case jsMember:
		if id, ok := n.obj.(jsIdent); ok && id.name == "$input" && n.name == "item" {
			return sc.json, true, nil
		}
		if id, ok := n.obj.(jsIdent); ok && id.name == "$node" {
			ref, err := sc.node(n.name)
			return ref, true, err
		}
		if name, ok := nodeCall(n.obj); ok && (n.name == "item") {
			ref, err := sc.node(name)
			return ref, true, err
		}
	case jsIndex:
		if id, ok := n.obj.(jsIdent); ok && id.name == "$node" {
			if s, ok := n.idx.(jsStr); ok {
				ref, err := sc.node(s.v)
				return ref, true, err
			}
			return "", false, untranslatable("$node needs a node name")
		}
		if id, ok := n.obj.(jsIdent); ok && id.name == "items" {
			return sc.json, true, nil
		}
		if c, ok := n.obj.(jsCall); ok {
			// $input.all()[i], $('X').all()[i], $items("X")[i], $items()[i]
			if m, ok := c.callee.(jsMember); ok && m.name == "all" && len(c.args) == 0 {
				if id, ok := m.obj.(jsIdent); ok && id.name == "$input" {
					return sc.json, true, nil
				}
				if name, ok := nodeCall(m.obj); ok {
					ref, err := sc.node(name)
					return ref, true, err
				}
			}
			if id, ok := c.callee.(jsIdent); ok && id.name == "$items" {
				if len(c.args) == 0 {
					return sc.json, true, nil
				}
				if s, ok := c.args[0].(jsStr); ok {
					ref, err := sc.node(s.v)
					return ref, true, err
				}
			}
		}
	case jsCall:
		if m, ok := n.callee.(jsMember); ok {
			switch m.name {
			case "first", "last", "itemMatching", "pairedItem":
				if id, ok := m.obj.(jsIdent); ok && id.name == "$input" && m.name != "pairedItem" && m.name != "itemMatching" {
					return sc.json, true, nil
				}
				if name, ok := nodeCall(m.obj); ok {
					ref, err := sc.node(name)
					return ref, true, err
				}
			}
		}
	}
	return "", false, nil
}

// nodeCall matches $('Name') (or $("Name")).
func nodeCall(n jsNode) (string, bool) {
	c, ok := n.(jsCall)
	if !ok {
		return "", false
	}
	id, ok := c.callee.(jsIdent)
	if !ok || id.name != "$" || len(c.args) != 1 {
		return "", false
	}
	s, ok := c.args[0].(jsStr)
	return s.v, ok
}

func (sc jsScope) emit(n jsNode) (string, error) {
	switch n := n.(type) {
	case jsNum:
		return formatNumber(n.v), nil
	case jsStr:
		return quoteExpr(n.v), nil
	case jsIdent:
		switch n.name {
		case "true", "false":
			return n.name, nil
		case "null", "undefined":
			return "nil", nil
		case "$json":
			return sc.json, nil
		case "$now":
			return "now()", nil
		case "$itemIndex", "$runIndex":
			return "0", nil // one item per node, one run of it
		}
		return "", untranslatable("unknown name %s", n.name)
	case jsMember:
		if n.name == "json" {
			if ref, ok, err := sc.item(n.obj); ok || err != nil {
				return ref, err
			}
		}
		if id, ok := n.obj.(jsIdent); ok {
			switch id.name {
			case "$execution":
				if n.name == "id" {
					return "run.id", nil
				}
				return "", untranslatable("$execution.%s", n.name)
			case "$workflow":
				if n.name == "id" {
					return "run.workflow_id", nil
				}
				return "", untranslatable("$workflow.%s", n.name)
			case "$env":
				return access("env", n.name, false), nil
			}
		}
		obj, err := sc.emit(n.obj)
		if err != nil {
			return "", err
		}
		if n.name == "length" {
			return "len(" + obj + ")", nil
		}
		return access(obj, n.name, n.optional), nil
	case jsIndex:
		if id, ok := n.obj.(jsIdent); ok && id.name == "$env" {
			if s, ok := n.idx.(jsStr); ok {
				return access("env", s.v, false), nil
			}
		}
		obj, err := sc.emit(n.obj)
		if err != nil {
			return "", err
		}
		idx, err := sc.emit(n.idx)
		if err != nil {
			return "", err
		}
		if n.optional {
			return obj + "?.[" + idx + "]", nil
		}
		return obj + "[" + idx + "]", nil
	case jsCall:
		return sc.emitCall(n)
	case jsUnary:
		x, err := sc.emit(n.x)
		if err != nil {
			return "", err
		}
		switch n.op {
		case "!":
			return "!(" + x + ")", nil
		case "-":
			return "-(" + x + ")", nil
		}
		return "float(" + x + ")", nil // unary plus converts to a number
	case jsBinary:
		l, err := sc.emit(n.l)
		if err != nil {
			return "", err
		}
		r, err := sc.emit(n.r)
		if err != nil {
			return "", err
		}
		op := n.op
		switch op {
		case "===":
			op = "=="
		case "!==":
			op = "!="
		}
		return "(" + l + " " + op + " " + r + ")", nil
	case jsCond:
		parts, err := sc.emitAll([]jsNode{n.c, n.a, n.b})
		if err != nil {
			return "", err
		}
		return "(" + parts[0] + " ? " + parts[1] + " : " + parts[2] + ")", nil
	case jsArray:
		elems, err := sc.emitAll(n.elems)
		if err != nil {
			return "", err
		}
		return "[" + strings.Join(elems, ", ") + "]", nil
	case jsObject:
		vals, err := sc.emitAll(n.vals)
		if err != nil {
			return "", err
		}
		pairs := make([]string, len(vals))
		for i, v := range vals {
			pairs[i] = quoteExpr(n.keys[i]) + ": " + v
		}
		return "{" + strings.Join(pairs, ", ") + "}", nil
	}
	return "", untranslatable("unsupported expression")
}

// globalFuncs are JavaScript's functions with an expr-lang equivalent
// taking the same arguments.
var globalFuncs = map[string]string{
	"JSON.stringify": "toJSON", "JSON.parse": "fromJSON", "String": "string", "Number": "float", "parseFloat": "float",
	"parseInt": "int", "Math.round": "round", "Math.floor": "floor", "Math.ceil": "ceil", "Math.abs": "abs",
	"Math.max": "max", "Math.min": "min", "Object.keys": "keys", "Object.values": "values",
}

func (sc jsScope) emitCall(n jsCall) (string, error) {
	if _, ok := nodeCall(n); ok {
		return "", untranslatable("$() is only supported as $('Node').item.json")
	}
	name := ""
	switch c := n.callee.(type) {
	case jsIdent:
		name = c.name
	case jsMember:
		if id, ok := c.obj.(jsIdent); ok && (id.name == "JSON" || id.name == "Math" || id.name == "Object") {
			name = id.name + "." + c.name
		}
	}
	args, err := sc.emitAll(n.args)
	if err != nil {
		return "", err
	}
	if name == "$if" && len(args) == 3 {
		return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")", nil
	}
	if fn, ok := globalFuncs[name]; ok {
		switch {
		case fn == "toJSON" && len(args) >= 1:
			return "toJSON(" + args[0] + ")", nil // the indent argument is left out
		case fn == "int" && len(args) >= 1:
			return "int(" + args[0] + ")", nil // the radix argument is left out
		case (fn == "max" || fn == "min") && len(args) >= 1, len(args) == 1:
			return fn + "(" + strings.Join(args, ", ") + ")", nil
		}
		return "", untranslatable("%s with %d arguments", name, len(args))
	}
	if name != "" {
		return "", untranslatable("%s()", name)
	}
	m, ok := n.callee.(jsMember)
	if !ok {
		return "", untranslatable("unsupported call")
	}
	if _, isItem, _ := sc.item(m.obj); isItem || isGlobal(m.obj) {
		return "", untranslatable(".%s()", m.name)
	}
	recv, err := sc.emit(m.obj)
	if err != nil {
		return "", err
	}
	switch {
	case m.name == "toUpperCase" && len(args) == 0:
		return "upper(" + recv + ")", nil
	case m.name == "toLowerCase" && len(args) == 0:
		return "lower(" + recv + ")", nil
	case m.name == "trim" && len(args) == 0:
		return "trim(" + recv + ")", nil
	case m.name == "toString" && len(args) == 0:
		return "string(" + recv + ")", nil
	case m.name == "startsWith" && len(args) == 1:
		return "(" + recv + " startsWith " + args[0] + ")", nil
	case m.name == "endsWith" && len(args) == 1:
		return "(" + recv + " endsWith " + args[0] + ")", nil
	case m.name == "includes" && len(args) == 1:
		return "(type(" + recv + ") == \"string\" ? " + recv + " contains " + args[0] + " : " + args[0] + " in " + recv + ")", nil
	case m.name == "split" && len(args) == 1:
		return "split(" + recv + ", " + args[0] + ")", nil
	case m.name == "join" && len(args) <= 1:
		glue := `","`
		if len(args) == 1 {
			glue = args[0]
		}
		return "join(map(" + recv + ", string(#)), " + glue + ")", nil
	case m.name == "indexOf" && len(args) == 1:
		return "indexOf(" + recv + ", " + args[0] + ")", nil
	case m.name == "slice" && len(args) == 1:
		return recv + "[" + args[0] + ":]", nil
	case m.name == "slice" && len(args) == 2:
		return recv + "[" + args[0] + ":" + args[1] + "]", nil
	case m.name == "keys" && len(args) == 0:
		return "keys(" + recv + ")", nil
	}
	return "", untranslatable(".%s()", m.name)
}

// isGlobal reports an n8n or JavaScript global whose methods are not
// translated ($input.all(), $now.toISO(), DateTime.now(), ...).
func isGlobal(n jsNode) bool {
	id, ok := n.(jsIdent)
	return ok && (strings.HasPrefix(id.name, "$") || id.name == "DateTime" || id.name == "Date" || id.name == "items")
}
