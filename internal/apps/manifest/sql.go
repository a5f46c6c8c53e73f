package manifest

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// placeholders lists the numbers of the positional parameters ($1, $2, …)
// a PostgreSQL statement uses, each once, in order of first use. It skips
// what PostgreSQL does not read as a parameter: quoted strings ('…', E'…'
// with backslash escapes, $tag$…$tag$), quoted identifiers ("…"), comments
// (-- to the end of the line, /* … */ nested) and a $ inside an identifier
// (a$1). A number too large for an int counts as math.MaxInt. The error
// names a string or comment left open.
func placeholders(sql string) ([]int, error) {
	var used []int
	seen := map[int]bool{}
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case c == '\'':
			backslash := i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i < 2 || !identByte(sql[i-2]))
			end, ok := skipQuoted(sql, i, '\'', backslash)
			if !ok {
				return used, errors.New("has an unterminated quoted string")
			}
			i = end
		case c == '"':
			end, ok := skipQuoted(sql, i, '"', false)
			if !ok {
				return used, errors.New("has an unterminated quoted identifier")
			}
			i = end
		case c == '-' && i+1 < n && sql[i+1] == '-':
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				return used, nil
			}
			i += end + 1
		case c == '/' && i+1 < n && sql[i+1] == '*':
			end, ok := skipBlockComment(sql, i)
			if !ok {
				return used, errors.New("has an unterminated /* comment")
			}
			i = end
		case c == '$' && i > 0 && identByte(sql[i-1]):
			i++ // part of an identifier, like a$1
		case c == '$' && i+1 < n && isDigit(sql[i+1]):
			j := i + 1
			for j < n && isDigit(sql[j]) {
				j++
			}
			num, err := strconv.Atoi(sql[i+1 : j])
			if err != nil {
				num = math.MaxInt
			}
			if !seen[num] {
				seen[num] = true
				used = append(used, num)
			}
			i = j
		case c == '$':
			tag, ok := dollarTag(sql[i:])
			if !ok {
				i++
				continue
			}
			end := strings.Index(sql[i+len(tag):], tag)
			if end < 0 {
				return used, errors.New("has an unterminated " + tag + " string")
			}
			i += len(tag) + end + len(tag)
		default:
			i++
		}
	}
	return used, nil
}

// skipQuoted returns the index just past the quoted text opening at
// sql[start]. A doubled quote stands for one; with backslash, \ escapes
// the next byte.
func skipQuoted(sql string, start int, quote byte, backslash bool) (int, bool) {
	for i := start + 1; i < len(sql); i++ {
		switch {
		case backslash && sql[i] == '\\':
			i++
		case sql[i] == quote:
			if i+1 < len(sql) && sql[i+1] == quote {
				i++
				continue
			}
			return i + 1, true
		}
	}
	return len(sql), false
}

// skipBlockComment returns the index just past the /* … */ comment opening
// at sql[start]; comments nest, as in PostgreSQL.
func skipBlockComment(sql string, start int) (int, bool) {
	depth := 0
	for i := start; i+1 < len(sql); {
		switch {
		case sql[i] == '/' && sql[i+1] == '*':
			depth++
			i += 2
		case sql[i] == '*' && sql[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i, true
			}
		default:
			i++
		}
	}
	return len(sql), false
}

// dollarTag returns the $tag$ (or $$) that s starts with, if it does.
func dollarTag(s string) (string, bool) {
	j := 1
	for j < len(s) && s[j] != '$' && identByte(s[j]) && !(j == 1 && isDigit(s[j])) {
		j++
	}
	if j < len(s) && s[j] == '$' {
		return s[:j+1], true
	}
	return "", false
}

// identByte reports a byte that may continue an identifier: a letter, a
// digit, _, $ or any byte of a non-ASCII character.
func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
