// Package expression evaluates the user-written expressions and {{ }}
// templates of workflow definitions with github.com/expr-lang/expr.
//
// Expressions run over an untyped environment (input, trigger, nodes, run,
// env, item, index, ...) and under a Budget, because they are written by users
// and evaluated inside the engine. expr has no access to the host: its
// builtins are pure functions over their arguments, except now(), date() and
// timezone(), which only read the clock and the time zone database. The one
// function this package adds is the budget guard (see guardPatch).
package expression

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// MaxSourceBytes caps the length of one expression.
const MaxSourceBytes = 4096

// Budget limits one evaluation. Zero fields fall back to DefaultBudget.
type Budget struct {
	// Time is the wall-clock limit of one evaluation.
	Time time.Duration
	// MaxOutputBytes caps the JSON encoding of a result, and the rendered
	// size of a whole template.
	MaxOutputBytes int
	// MaxMemory is expr's VM memory budget, roughly the number of elements
	// the expression may allocate. It also caps the length of every string,
	// array and map that a let binding or a loop body (map, filter, reduce,
	// ...) produces, which the VM does not count.
	MaxMemory uint
}

// DefaultBudget applies where a Budget field is zero. Change it only during
// program initialisation: it is read without synchronisation.
var DefaultBudget = Budget{
	Time:           100 * time.Millisecond,
	MaxOutputBytes: 1 << 20,
	MaxMemory:      1_000_000,
}

func (b Budget) orDefault() Budget {
	d := DefaultBudget
	if b.Time > 0 {
		d.Time = b.Time
	}
	if b.MaxOutputBytes > 0 {
		d.MaxOutputBytes = b.MaxOutputBytes
	}
	if b.MaxMemory > 0 {
		d.MaxMemory = b.MaxMemory
	}
	return d
}

// ErrBudgetExceeded matches (with errors.Is) every error caused by an
// expression running out of time, memory or output size.
var ErrBudgetExceeded = errors.New("expression budget exceeded")

type budgetError string

func (e budgetError) Error() string      { return string(e) }
func (budgetError) Is(target error) bool { return target == ErrBudgetExceeded }

const errMemory = budgetError("memory budget exceeded")

// Program is a compiled expression. It is safe for concurrent use.
type Program struct {
	src    string
	prog   *vm.Program
	budget Budget
}

// Names the guard patch inserts. Users can type them too ($ is a letter in
// expr) and see $budget in keys($env), which gains them nothing: the state
// evaluates to an empty object and the guard can only pass a value through
// or fail.
const (
	guardFunc = "$guard"
	stateVar  = "$budget"
)

// Compile compiles src. Variables are not type-checked, as the environment
// is only known at run time; unknown names evaluate to nil.
func Compile(src string) (*Program, error) {
	if len(src) > MaxSourceBytes {
		return nil, fmt.Errorf("expression %s is %d bytes long, the limit is %d", quote(src), len(src), MaxSourceBytes)
	}
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("expression is empty")
	}
	prog, err := expr.Compile(src,
		expr.AllowUndefinedVariables(),
		expr.Function(guardFunc, guard),
		expr.Patch(guardPatch{}),
	)
	if err != nil {
		return nil, describe(src, err)
	}
	return &Program{src: src, prog: prog}, nil
}

// Check reports whether src compiles, for validation when a workflow is saved.
func Check(src string) error {
	_, err := Compile(src)
	return err
}

// WithBudget returns a copy of p that evaluates under b.
func (p *Program) WithBudget(b Budget) *Program {
	c := *p
	c.budget = b
	return &c
}

// Eval evaluates p over env and returns the result as plain JSON values (see
// Normalize).
func (p *Program) Eval(ctx context.Context, env map[string]any) (any, error) {
	return p.eval(ctx, env, p.budget.orDefault())
}

// Bool evaluates p as a condition, which must produce a boolean.
func (p *Program) Bool(ctx context.Context, env map[string]any) (bool, error) {
	v, err := p.Eval(ctx, env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, &exprError{msg: fmt.Sprintf("expression %s: condition must be true or false, got %s", quote(p.src), typeName(v))}
	}
	return b, nil
}

func (p *Program) eval(ctx context.Context, env map[string]any, b Budget) (any, error) {
	out, err := p.run(ctx, env, b)
	if err != nil {
		return nil, err
	}
	return normalize(out, b.MaxOutputBytes)
}

// state is what the guard sees of the evaluation it runs in.
type state struct {
	ctx     context.Context // cancelled when the time budget runs out
	maxSize int
}

// run executes p on its own goroutine because expr's VM has no way to be
// interrupted: when the time budget runs out, run returns and abandons the
// goroutine. The guard stops it at its next loop iteration or let binding;
// until then it is bounded by the memory budget. A single builtin call on
// large data (sort, toJSON, ==) is not interruptible and finishes on its own.
func (p *Program) run(ctx context.Context, env map[string]any, b Budget) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, &exprError{msg: fmt.Sprintf("expression %s: %v", quote(p.src), err), cause: err}
	}
	// The budget runs from when the VM starts, not from when its goroutine
	// was asked for: on a starved machine the wait to be scheduled is not
	// the expression's doing.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	over := budgetError(fmt.Sprintf("time budget of %v exceeded", b.Time))

	vars := make(map[string]any, len(env)+1)
	maps.Copy(vars, env)
	vars[stateVar] = &state{ctx: ctx, maxSize: int(b.MaxMemory)}

	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned run must not block
	go func() {
		timer := time.AfterFunc(b.Time, func() { cancel(over) })
		machine := vm.VM{MemoryBudget: b.MaxMemory}
		v, err := machine.Run(p.prog, vars)
		timer.Stop()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, describe(p.src, r.err)
		}
		return r.v, nil
	case <-ctx.Done():
		cause := context.Cause(ctx)
		return nil, &exprError{msg: fmt.Sprintf("expression %s: %v", quote(p.src), cause), cause: cause}
	}
}

// guardPatch routes every value a loop body or let binding produces through
// the guard. Those are the only places where an expression repeats work or
// reuses a value, so they bound both its running time and the growth that
// expr's memory budget misses, such as reduce(1..40, #acc + #acc, "x").
type guardPatch struct{}

func (guardPatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.PredicateNode:
		n.Node = guarded(n.Node)
	case *ast.VariableDeclaratorNode:
		n.Value = guarded(n.Value)
	}
}

func guarded(n ast.Node) ast.Node {
	call := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: guardFunc},
		Arguments: []ast.Node{&ast.IdentifierNode{Value: stateVar}, n},
	}
	call.SetLocation(n.Location()) // errors point at the guarded value
	return call
}

func guard(args ...any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("invalid use of " + guardFunc)
	}
	st, ok := args[0].(*state)
	if !ok {
		return nil, errors.New("invalid use of " + guardFunc)
	}
	if st.ctx.Err() != nil {
		return nil, context.Cause(st.ctx)
	}
	if length(args[1]) > st.maxSize {
		return nil, errMemory
	}
	return args[1], nil
}

func length(v any) int {
	switch v := v.(type) {
	case nil, bool, int, float64:
		return 0
	case string:
		return len(v)
	case []any:
		return len(v)
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len()
	}
	return 0
}

// exprError is an error worded for the author of the expression.
type exprError struct {
	msg   string
	cause error
}

func (e *exprError) Error() string { return e.msg }
func (e *exprError) Unwrap() error { return e.cause }

// describe rewords expr's errors on one line, without the source snippet
// and caret expr appends, since the message names the expression already.
func describe(src string, err error) error {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
		if fe.Line > 0 {
			msg = fmt.Sprintf("%s (%d:%d)", fe.Message, fe.Line, fe.Column+1)
		}
		// The VM reports its own budget as a panic with a plain string.
		if fe.Message == string(errMemory) && !errors.Is(err, ErrBudgetExceeded) {
			err = errMemory
		}
	}
	return &exprError{msg: fmt.Sprintf("expression %s: %s", quote(src), msg), cause: err}
}

// quote quotes src for messages, shortened: it can be 4 KiB long.
func quote(src string) string {
	const max = 64
	if len(src) <= max {
		return strconv.Quote(src)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(src[cut]) {
		cut--
	}
	return strconv.Quote(src[:cut]) + "…"
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// Normalize converts v to the values encoding/json decodes into: nil, bool,
// string, []any, map[string]any and numbers, so that results can be stored,
// compared and marshalled without surprises. Maps with non-string keys, like
// those groupBy returns, get their keys formatted as strings.
//
// Numbers are not json.Number, which callers would have to special-case, nor
// all float64, which would turn an exact 3 into 3.0 in Go code and lose
// precision on large integers silently: integral numbers within ±(2^53-1),
// the range a float64 (and JavaScript) represents exactly, become int64; all
// others become float64.
func Normalize(v any) (any, error) {
	return normalize(v, math.MaxInt)
}

func normalize(v any, limit int) (any, error) {
	left := limit
	v, ok := plain(v, &left)
	if !ok {
		return nil, tooLarge(limit)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("expression result cannot be represented as JSON: %w", err)
	}
	if len(data) > limit {
		return nil, tooLarge(limit)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any // not v: Decode would fill the value a pointer in v points to
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return numbers(out), nil
}

func tooLarge(limit int) error {
	return budgetError(fmt.Sprintf("expression result is larger than %d bytes", limit))
}

// plain makes maps and slices acceptable to encoding/json, and reports false
// as soon as their encoding would exceed *left bytes. Counting while walking matters: a result
// may share sub-values, so reduce(1..40, [#acc, #acc], 1) is 40 small arrays
// in memory but 2^40 leaves once encoded.
func plain(v any, left *int) (any, bool) {
	if *left < 0 {
		return nil, false
	}
	switch v := v.(type) {
	case nil, bool:
		*left -= 4
		return v, true
	case string:
		*left -= len(v) + 2
		return v, true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.IsNil() {
			return nil, true
		}
		out := make(map[string]any, rv.Len())
		*left -= 2
		for it := rv.MapRange(); it.Next(); {
			k := it.Key()
			for k.Kind() == reflect.Interface {
				k = k.Elem()
			}
			key := fmt.Sprint(k.Interface())
			if k.Kind() == reflect.String {
				key = k.String()
			}
			*left -= len(key) + 4
			e, ok := plain(it.Value().Interface(), left)
			if !ok {
				return nil, false
			}
			out[key] = e
		}
		return out, true
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, true
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			*left -= rv.Len() // encoded as base64, which json.Marshal handles
			return v, true
		}
		out := make([]any, rv.Len())
		*left -= 2
		for i := range out {
			*left--
			e, ok := plain(rv.Index(i).Interface(), left)
			if !ok {
				return nil, false
			}
			out[i] = e
		}
		return out, true
	}
	*left-- // numbers and structs: the size check after marshalling covers them
	return v, true
}

const maxExactInt = 1<<53 - 1

func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil && i >= -maxExactInt && i <= maxExactInt {
			return i
		}
		f, _ := v.Float64() // encoding/json only produced valid, finite numbers
		if f == math.Trunc(f) && math.Abs(f) <= maxExactInt {
			return int64(f)
		}
		return f
	case []any:
		for i := range v {
			v[i] = numbers(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = numbers(v[k])
		}
	}
	return v
}

// Tmpl is a compiled template: text with {{ expression }} placeholders. It
// is safe for concurrent use. There is no escape syntax: a literal "{{" is
// written {{"{{"}}.
type Tmpl struct {
	parts  []part
	budget Budget
}

// part is literal text, or a placeholder when prog is set.
type part struct {
	text string
	prog *Program
}

// Template compiles src.
func Template(src string) (*Tmpl, error) {
	t := &Tmpl{}
	for pos := 0; ; {
		open := strings.Index(src[pos:], "{{")
		if open < 0 {
			t.add(part{text: src[pos:]})
			return t, nil
		}
		open += pos
		t.add(part{text: src[pos:open]})
		body := src[open+2:]
		end := closing(body)
		if end < 0 {
			return nil, fmt.Errorf("template: {{ at %s is never closed with }}", position(src, open))
		}
		prog, err := Compile(body[:end])
		if err != nil {
			return nil, fmt.Errorf("template: placeholder at %s: %w", position(src, open), err)
		}
		t.add(part{prog: prog})
		pos = open + 2 + end + 2
	}
}

func (t *Tmpl) add(p part) {
	if p.prog != nil || p.text != "" {
		t.parts = append(t.parts, p)
	}
}

// CheckTemplate reports whether src compiles, for validation when a workflow
// is saved.
func CheckTemplate(src string) error {
	_, err := Template(src)
	return err
}

// closing returns the index in s of the "}}" that ends a placeholder, or -1.
// It skips string literals, which may contain braces, and the braces of map
// literals, so that {{ {"a": "}}"} }} is one placeholder. Comments are not
// recognised.
func closing(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'', '`':
			end := stringEnd(s, i)
			if end < 0 {
				return -1
			}
			i = end
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			} else if strings.HasPrefix(s[i:], "}}") {
				return i
			}
		}
	}
	return -1
}

// stringEnd returns the index of the quote closing the literal opened at
// s[start], or -1. Backquoted strings are raw, the others have \ escapes.
func stringEnd(s string, start int) int {
	q := s[start]
	for i := start + 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return i
		}
	}
	return -1
}

// position formats the byte offset i of s as line:column, counting from 1.
func position(s string, i int) string {
	before := s[:i]
	line := strings.Count(before, "\n") + 1
	col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("%d:%d", line, col)
}

// WithBudget returns a copy of t that renders under b.
func (t *Tmpl) WithBudget(b Budget) *Tmpl {
	c := *t
	c.budget = b
	return &c
}

// Render evaluates every placeholder under the budget, and caps the rendered
// text at its MaxOutputBytes. Strings are inserted as they are, nil as
// nothing, and every other value as compact JSON, so numbers read naturally
// (3, not 3.0) and objects and arrays stay machine-readable.
func (t *Tmpl) Render(ctx context.Context, env map[string]any) (string, error) {
	b := t.budget.orDefault()
	var out strings.Builder
	for _, p := range t.parts {
		if p.prog == nil {
			out.WriteString(p.text)
		} else {
			v, err := p.prog.eval(ctx, env, b)
			if err != nil {
				return "", err
			}
			s, err := text(v)
			if err != nil {
				return "", err
			}
			out.WriteString(s)
		}
		if out.Len() > b.MaxOutputBytes {
			return "", budgetError(fmt.Sprintf("template result is larger than %d bytes", b.MaxOutputBytes))
		}
	}
	return out.String(), nil
}

func text(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the text is not necessarily HTML
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// Fields lists the names the expression reads from the variable root, as
// root.name or root["name"], in order of first use; a workflow checks with
// it that nodes.<key> names one of its nodes. Names computed at run time
// (root[x]) are not listed, and neither is anything when the expression
// binds root itself with let.
func (p *Program) Fields(root string) []string {
	var f fields
	f.root = root
	node := p.prog.Node()
	ast.Walk(&node, &f)
	if f.shadowed {
		return nil
	}
	return f.names
}

// Fields lists the names the template's placeholders read from root (see
// Program.Fields).
func (t *Tmpl) Fields(root string) []string {
	var out []string
	for _, p := range t.parts {
		if p.prog != nil {
			for _, name := range p.prog.Fields(root) {
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
	}
	return out
}

type fields struct {
	root     string
	names    []string
	shadowed bool
}

func (f *fields) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.VariableDeclaratorNode:
		f.shadowed = f.shadowed || n.Name == f.root
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok || id.Value != f.root {
			return
		}
		if s, ok := n.Property.(*ast.StringNode); ok && !slices.Contains(f.names, s.Value) {
			f.names = append(f.names, s.Value)
		}
	}
}
