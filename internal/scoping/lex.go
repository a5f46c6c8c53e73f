package scoping

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Dyn marks a part of a statement the walk could not fold to text (a
// value only known at run time). It reads as one opaque token, and never as
// a condition on the workspace.
const (
	dynOpen  = "⟪"
	dynClose = "⟫"
)

// Dyn returns the marker for a run-time part described by what.
func Dyn(what string) string { return dynOpen + what + dynClose }

type tokKind int

const (
	tWord tokKind = iota
	tString
	tNumber
	tParam
	tDyn
	tPunct
)

type sqlToken struct {
	kind tokKind
	text string
}

// is reports whether the token is the keyword (or name) kw, in any case.
func (t sqlToken) is(kw string) bool { return t.kind == tWord && strings.EqualFold(t.text, kw) }

func (t sqlToken) lower() string { return strings.ToLower(t.text) }

// tokenize splits SQL text into tokens; comments and white space go.
func tokenize(s string) []sqlToken {
	var out []sqlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return out
			}
			i += j + 1
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return out
			}
			i += j + 4
		case strings.HasPrefix(s[i:], dynOpen):
			j := strings.Index(s[i:], dynClose)
			if j < 0 {
				out = append(out, sqlToken{tDyn, s[i+len(dynOpen):]})
				return out
			}
			out = append(out, sqlToken{tDyn, s[i+len(dynOpen) : i+j]})
			i += j + len(dynClose)
		case c == '\'':
			j := i + 1
			for j < len(s) {
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			out = append(out, sqlToken{tString, s[i:min(j+1, len(s))]})
			i = j + 1
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				j = len(s) - i - 1
			}
			out = append(out, sqlToken{tWord, s[i+1 : i+1+j]})
			i += j + 2
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			out = append(out, sqlToken{tParam, s[i:j]})
			i = j
		case c == '?':
			out = append(out, sqlToken{tParam, "?"})
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			out = append(out, sqlToken{tNumber, s[i:j]})
			i = j
		case c == '_' || c < utf8.RuneSelf && unicode.IsLetter(rune(c)):
			j := i
			for j < len(s) && (s[j] == '_' || s[j] < utf8.RuneSelf && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])))) {
				j++
			}
			out = append(out, sqlToken{tWord, s[i:j]})
			i = j
		default:
			n := 1
			for _, op := range []string{"::", "<>", "!=", "<=", ">=", "||", "->>", "->", "@>", "<@"} {
				if strings.HasPrefix(s[i:], op) {
					n = len(op)
					break
				}
			}
			if c >= utf8.RuneSelf {
				_, n = utf8.DecodeRuneInString(s[i:])
			}
			out = append(out, sqlToken{tPunct, s[i : i+n]})
			i += n
		}
	}
	return out
}

// node is a token or a parenthesised group of nodes.
type node struct {
	tok   sqlToken
	group []node
	paren bool
}

func (n node) is(kw string) bool { return !n.paren && n.tok.is(kw) }

func (n node) punct(p string) bool { return !n.paren && n.tok.kind == tPunct && n.tok.text == p }

// nest turns tokens into nodes, parentheses into groups.
func nest(toks []sqlToken) []node {
	out, _ := nestFrom(toks, 0)
	return out
}

func nestFrom(toks []sqlToken, i int) ([]node, int) {
	var out []node
	for i < len(toks) {
		t := toks[i]
		switch {
		case t.kind == tPunct && t.text == "(":
			g, next := nestFrom(toks, i+1)
			out = append(out, node{group: g, paren: true})
			i = next
		case t.kind == tPunct && t.text == ")":
			return out, i + 1
		default:
			out = append(out, node{tok: t})
			i++
		}
	}
	return out, i
}

// LooksLikeStatement reports whether text is an SQL statement the walk
// judges: it starts with SELECT, INSERT INTO, UPDATE … SET, DELETE FROM or
// WITH … AS (keywords in capitals, as the code writes them; this keeps
// English text and HTTP method names out).
func LooksLikeStatement(text string) bool {
	toks := tokenize(text)
	for len(toks) > 0 && toks[0].kind == tPunct && toks[0].text == "(" {
		toks = toks[1:]
	}
	if len(toks) < 2 || toks[0].kind != tWord {
		return false
	}
	kw := toks[0].text
	switch kw {
	case "SELECT":
		return true
	case "INSERT":
		return toks[1].text == "INTO"
	case "DELETE":
		return toks[1].text == "FROM"
	case "UPDATE":
		for _, t := range toks[2:min(len(toks), 6)] {
			if t.text == "SET" {
				return true
			}
		}
		return false
	case "WITH":
		return len(toks) > 2 && (toks[1].text == "RECURSIVE" || toks[2].text == "AS" || toks[2].text == "(")
	}
	return false
}
