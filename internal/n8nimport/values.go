package n8nimport

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"slipway/internal/platform/expression"
)

// n8n parameter values are literals, or strings starting with "=" whose
// text holds {{ JavaScript }} placeholders. These helpers turn them into our
// templates and expressions; what cannot be translated stays as text and
// the node gets a warning.

// n8nPart is literal text, or a placeholder's code when code is set.
type n8nPart struct {
	text string
	code bool
}

// splitN8n splits the text of an expression-mode value into literal text
// and placeholders. ok is false when a {{ is never closed.
func splitN8n(s string) (parts []n8nPart, ok bool) {
	for {
		open := strings.Index(s, "{{")
		if open < 0 {
			if s != "" {
				parts = append(parts, n8nPart{text: s})
			}
			return parts, true
		}
		if open > 0 {
			parts = append(parts, n8nPart{text: s[:open]})
		}
		body := s[open+2:]
		end := jsClosing(body)
		if end < 0 {
			return nil, false
		}
		parts = append(parts, n8nPart{text: body[:end], code: true})
		s = body[end+2:]
	}
}

// jsClosing is the index of the }} ending a placeholder's code, skipping
// string literals and the braces of object literals; -1 when there is none.
func jsClosing(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'', '`':
			q := s[i]
			j := i + 1
			for ; j < len(s) && s[j] != q; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return -1
			}
			i = j
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

// escapeTemplate makes text a template that renders as itself: our
// templates have no escape syntax, so each {{ becomes a placeholder that
// yields it.
func escapeTemplate(s string) string {
	return strings.ReplaceAll(s, "{{", `{{"{{"}}`)
}

// stringify is how n8n writes a value into text: strings as they are,
// nothing for null, objects and arrays as JSON, the rest as text.
func stringify(e string) string {
	return `(let _v = ` + e + `; type(_v) in ["map", "array"] ? toJSON(_v) : string(_v ?? ""))`
}

// snippet shortens a value for a warning.
func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 120 {
		r := []rune(s)
		s = string(r[:117]) + "..."
	}
	return strconv.Quote(s)
}

func reason(err error) string {
	msg := err.Error()
	if errors.Is(err, errUntranslatable) {
		msg = strings.TrimPrefix(msg, errUntranslatable.Error()+": ")
	}
	return msg
}

// checkExpr compiles an expression and checks the nodes it reads exist.
func (c *converter) checkExpr(src string) error {
	p, err := expression.Compile(src)
	if err != nil {
		return err
	}
	for _, k := range p.Fields("nodes") {
		if !c.keys[k] {
			return untranslatable("it reads a node that is not in the workflow")
		}
	}
	return nil
}

// checkTemplate compiles a template and checks the nodes it reads exist.
func (c *converter) checkTemplate(src string) error {
	t, err := expression.Template(src)
	if err != nil {
		return err
	}
	for _, k := range t.Fields("nodes") {
		if !c.keys[k] {
			return untranslatable("it reads a node that is not in the workflow")
		}
	}
	return nil
}

// expressionMode reports a value in n8n's expression mode and returns its
// text.
func expressionMode(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, "=") {
		return "", false
	}
	return s[1:], true
}

// literalExpr writes a JSON value as an expression.
func literalExpr(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return formatNumber(v)
	case string:
		return quoteExpr(v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "nil"
	}
	return "fromJSON(" + quoteExpr(string(raw)) + ")"
}

// literalText writes a JSON value as text.
func literalText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return formatNumber(v)
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// expr turns a parameter value into an expression: literals stay what they
// are, expression-mode text becomes the expression it computes.
func (x *nodeCtx) expr(field string, v any) string {
	body, ok := expressionMode(v)
	if !ok {
		return literalExpr(v)
	}
	out, err := x.translate(body, false)
	if err != nil {
		x.untranslated(field, body, err)
		return quoteExpr(body)
	}
	return out
}

// template turns a parameter value into a template.
func (x *nodeCtx) template(field string, v any) string {
	body, ok := expressionMode(v)
	if !ok {
		return escapeTemplate(literalText(v))
	}
	out, err := x.translate(body, true)
	if err != nil {
		x.untranslated(field, body, err)
		return escapeTemplate(body)
	}
	return out
}

// typedExpr is expr for a value of a declared type (Set's fields): a
// literal "5" of type number is the number 5.
func (x *nodeCtx) typedExpr(field string, v any, typ string) string {
	if _, ok := expressionMode(v); ok {
		return x.expr(field, v)
	}
	s, isString := v.(string)
	switch typ {
	case "number":
		if isString {
			if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !isNonFinite(f) {
				return formatNumber(f)
			}
		}
	case "boolean":
		if isString && (s == "true" || s == "false") {
			return s
		}
	case "array", "object":
		if isString && json.Valid([]byte(s)) {
			return "fromJSON(" + quoteExpr(s) + ")"
		}
	}
	return literalExpr(v)
}

// jsonExpr is an expression for a parameter holding JSON text (a response
// body, a raw Set): literal JSON is parsed, a single placeholder is its
// value, and text with placeholders is rendered and then parsed.
func (x *nodeCtx) jsonExpr(field string, v any) string {
	s, isString := v.(string)
	if !isString {
		return literalExpr(v)
	}
	body, ok := expressionMode(v)
	if !ok {
		if json.Valid([]byte(s)) {
			return "fromJSON(" + quoteExpr(s) + ")"
		}
		return quoteExpr(s)
	}
	parts, closed := splitN8n(body)
	if closed && len(parts) == 1 && parts[0].code {
		return x.expr(field, v)
	}
	if closed && !hasCode(parts) {
		if json.Valid([]byte(body)) {
			return "fromJSON(" + quoteExpr(body) + ")"
		}
		return quoteExpr(body)
	}
	out, err := x.translate(body, false)
	if err == nil {
		out = "fromJSON(" + out + ")"
		err = x.c.checkExpr(out)
	}
	if err != nil {
		x.untranslated(field, body, err)
		return quoteExpr(body)
	}
	return out
}

func hasCode(parts []n8nPart) bool {
	for _, p := range parts {
		if p.code {
			return true
		}
	}
	return false
}

// translate turns the text of an expression-mode value into a template
// (asTemplate) or an expression, and checks it compiles.
func (x *nodeCtx) translate(body string, asTemplate bool) (string, error) {
	parts, ok := splitN8n(body)
	if !ok {
		return "", untranslatable("a {{ is never closed")
	}
	var b strings.Builder
	var pieces []string
	for _, p := range parts {
		if !p.code {
			if asTemplate {
				b.WriteString(escapeTemplate(p.text))
			} else {
				pieces = append(pieces, quoteExpr(p.text))
			}
			continue
		}
		if strings.TrimSpace(p.text) == "" {
			return "", untranslatable("an empty {{ }}")
		}
		e, err := translateJS(p.text, x.sc)
		if err != nil {
			return "", err
		}
		if asTemplate {
			b.WriteString("{{ " + e + " }}")
		} else {
			pieces = append(pieces, e)
		}
	}
	if asTemplate {
		out := b.String()
		return out, x.c.checkTemplate(out)
	}
	var out string
	switch {
	case len(parts) == 0:
		out = `""`
	case len(parts) == 1:
		out = pieces[0] // a single placeholder keeps its value's type
	default:
		for i, p := range parts {
			if p.code {
				pieces[i] = stringify(pieces[i])
			}
		}
		out = strings.Join(pieces, " + ")
	}
	return out, x.c.checkExpr(out)
}

// untranslated warns that a value is kept as text.
func (x *nodeCtx) untranslated(field, body string, err error) {
	x.warn("the expression in %s could not be translated (%s), so it is kept as text and must be rewritten: %s", field, reason(err), snippet(body))
}

func isNonFinite(f float64) bool { return f != f || f > 1e308 || f < -1e308 }
