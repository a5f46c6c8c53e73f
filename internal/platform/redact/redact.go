// Package redact removes secrets from text and JSON before it is stored or
// shown: event payloads, error messages, agent output, node outputs. A
// Redactor replaces the secrets it was given (those injected into a run)
// and, always, text in the shape of a well-known secret token (Formats).
package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Formats are the shapes of secrets redacted whatever the run was given:
// live payment keys, GitHub tokens, private keys in PEM, Slipway's own
// runner and workspace-app tokens. Certificates and other public PEM
// blocks are left alone. A pattern never spans a JSON string's quote, so
// it applies to text and to JSON alike (a PEM key inside JSON has its
// line breaks escaped as \n).
var Formats = regexp.MustCompile(strings.Join([]string{
	`\b[rs]k_live_[0-9A-Za-z]{8,}`,
	`\bgh[pousr]_[0-9A-Za-z]{20,}`,
	`\bgithub_pat_[0-9A-Za-z_]{20,}`,
	`\bscrnj_[0-9A-Za-z_.-]{16,}`,
	`\bscrn_[0-9A-Za-z_-]{16,}`,
	`\bscwa_[0-9A-Za-z_-]{16,}`,
	`\bscwv_[0-9A-Za-z_.-]{16,}`,
	`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----[^"]*?-----END ([A-Z0-9]+ )*PRIVATE KEY-----`,
}, "|"))

// Redacted is what a secret becomes.
const Redacted = "[REDACTED]"

// minLen is the shortest secret worth redacting: shorter ones would shred
// ordinary text and protect nothing.
const minLen = 6

// Redactor replaces a fixed set of secrets. The zero value redacts nothing.
type Redactor struct {
	r       *strings.Replacer
	secrets []string
}

// New redacts each secret as it appears raw, as it appears inside a JSON
// string (escaped) and, for multi-line secrets (keys), line by line.
func New(secrets ...string) *Redactor {
	var pairs, kept []string
	for _, s := range secrets {
		if len(s) < minLen {
			continue
		}
		kept = append(kept, s)
		pairs = append(pairs, s, Redacted)
		if b, err := json.Marshal(s); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != s {
				pairs = append(pairs, esc, Redacted)
			}
		}
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); len(line) >= 16 && line != s {
				pairs = append(pairs, line, Redacted)
			}
		}
	}
	if len(pairs) == 0 {
		return &Redactor{}
	}
	return &Redactor{r: strings.NewReplacer(pairs...), secrets: kept}
}

// With returns a redactor for these secrets and the receiver's.
func (r *Redactor) With(secrets ...string) *Redactor {
	if r == nil {
		return New(secrets...)
	}
	return New(append(append([]string{}, r.secrets...), secrets...)...)
}

// Text redacts a plain string.
func (r *Redactor) Text(s string) string {
	if r != nil && r.r != nil {
		s = r.r.Replace(s)
	}
	return formats(s)
}

// formats redacts the well-known secret shapes.
func formats(s string) string {
	if !mayHold(s) {
		return s
	}
	return Formats.ReplaceAllString(s, Redacted)
}

// mayHold reports whether a Formats pattern could match: it looks at the
// few characters before each underscore (every token shape has one after
// its fixed prefix) and for a PEM header, so text without any (most
// output) never reaches the regexp.
func mayHold[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '_':
			for _, p := range tokenPrefixes {
				if i >= len(p) && string(s[i-len(p):i]) == p {
					return true
				}
			}
		case '-':
			if i+10 <= len(s) && string(s[i:i+10]) == "-----BEGIN" {
				return true
			}
		}
	}
	return false
}

// tokenPrefixes are what comes before the first underscore of each shape.
var tokenPrefixes = []string{"k_live", "ghp", "gho", "ghu", "ghs", "ghr", "github", "scrn", "scrnj", "scwa"}

// JSON returns a JSON payload safe to store: secrets redacted and NUL
// characters (which PostgreSQL's jsonb refuses) replaced by U+FFFD.
func (r *Redactor) JSON(p []byte) []byte {
	if r != nil && r.r != nil {
		p = []byte(r.r.Replace(string(p)))
	}
	if mayHold(p) {
		p = Formats.ReplaceAll(p, []byte(Redacted))
	}
	if bytes.Contains(p, []byte(`\u0000`)) {
		var v any
		if json.Unmarshal(p, &v) == nil {
			if b, err := json.Marshal(replaceNUL(v)); err == nil {
				p = b
			}
		}
	}
	return p
}

func replaceNUL(v any) any {
	switch t := v.(type) {
	case string:
		return strings.ReplaceAll(t, "\x00", "\uFFFD")
	case []any:
		for i := range t {
			t[i] = replaceNUL(t[i])
		}
	case map[string]any:
		for k, e := range t {
			t[k] = replaceNUL(e)
		}
	}
	return v
}
