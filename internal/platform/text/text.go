// Package text holds the one rule for names and titles users give things
// (projects, tasks, profiles, workspaces, organizations, display names): no
// control characters and no bidirectional overrides. Control characters
// break logs, terminals and exports (and PostgreSQL refuses NUL outright);
// bidi overrides make a name display as something it is not.
package text

import (
	"net/mail"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"slipway/internal/platform/apperr"
)

// forbidden reports a character a name must not contain: C0 and C1
// controls, DEL, and the bidirectional embeddings, overrides and isolates
// (U+202A–U+202E, U+2066–U+2069). Line and paragraph separators count as
// controls here: a name is one line.
func forbidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return false
}

// CheckName refuses a name or title with a forbidden character; the error
// names the field and the character's code point (never the value).
func CheckName(field, s string) error {
	for _, r := range s {
		if forbidden(r) {
			return apperr.BadRequest("%s must not contain control or bidirectional-override characters (found U+%04X)", field, r)
		}
	}
	return nil
}

// StripControls drops forbidden characters (for names derived from free
// text, like a title taken from a prompt's first line).
func StripControls(s string) string {
	if !strings.ContainsFunc(s, forbidden) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if forbidden(r) {
			return -1
		}
		return r
	}, s)
}

// Name cleans a name or title: surrounding space trimmed, not empty, at
// most max characters, no control or bidirectional-override characters.
// Every name and title users give anything goes through it.
func Name(field, raw string, max int) (string, error) {
	n := strings.TrimSpace(raw)
	if n == "" {
		return "", apperr.BadRequest("%s must not be empty", field)
	}
	if utf8.RuneCountInString(n) > max {
		return "", apperr.BadRequest("%s is too long: at most %d characters", field, max)
	}
	if err := CheckName(field, n); err != nil {
		return "", err
	}
	return n, nil
}

// Labels cleans capability labels (runners advertise them, tasks require
// them): each one word of at most 64 characters, no commas or controls,
// folded to lowercase; duplicates dropped, first-seen order kept.
func Labels(field string, raw []string) ([]string, error) {
	out := make([]string, 0, len(raw))
	for _, l := range raw {
		if l == "" || utf8.RuneCountInString(l) > 64 || strings.ContainsAny(l, " ,\t\n\r") {
			return nil, apperr.BadRequest("%s: %q is not a label (one word of at most 64 characters)", field, l)
		}
		if err := CheckName(field, l); err != nil {
			return nil, err
		}
		l = strings.ToLower(l)
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// Clip makes untrusted text (an agent's) fit for a field: control
// characters go (as StripControls) and it is cut to at most max bytes on a
// character boundary.
func Clip(s string, max int) string {
	s = StripControls(s)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Email validates an address and returns its lower-case form (the one form
// accounts and invites store and compare).
func Email(raw string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(raw))
	if len(e) > 254 {
		return "", apperr.BadRequest("email is too long")
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || !strings.Contains(e[strings.IndexByte(e, '@')+1:], ".") && !strings.HasSuffix(e, "@localhost") {
		return "", apperr.BadRequest("email is not a valid address")
	}
	return e, nil
}

// RelPath cleans a file's path a tenant gives: trimmed and cleaned
// (path.Clean), and it must be relative, slash-separated UTF-8 text without
// a .. segment (before or after cleaning), backslash, NUL or other control
// or bidirectional-override character, at most maxBytes long and
// maxSegments deep. Names starting with a dot (.env) are ordinary files.
func RelPath(field, raw string, maxBytes, maxSegments int) (string, error) {
	p := strings.TrimSpace(raw)
	switch {
	case p == "":
		return "", apperr.BadRequest("%s must not be empty", field)
	case len(p) > maxBytes:
		return "", apperr.BadRequest("%s is too long: at most %d bytes", field, maxBytes)
	case !utf8.ValidString(p):
		return "", apperr.BadRequest("%s must be UTF-8 text", field)
	case strings.IndexByte(p, 0) >= 0:
		return "", apperr.BadRequest("%s must not contain NUL characters", field)
	}
	if err := CheckName(field, p); err != nil {
		return "", err
	}
	switch {
	case strings.Contains(p, `\`):
		return "", apperr.BadRequest(`%s must separate its segments with /, not \`, field)
	case strings.HasPrefix(p, "/"):
		return "", apperr.BadRequest("%s must be relative: no leading /", field)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return "", apperr.BadRequest("%s must not contain a .. segment", field)
	}
	c := path.Clean(p)
	if c == "." {
		return "", apperr.BadRequest("%s must name a file", field)
	}
	if n := strings.Count(c, "/") + 1; n > maxSegments {
		return "", apperr.BadRequest("%s is too deep: at most %d segments", field, maxSegments)
	}
	return c, nil
}
