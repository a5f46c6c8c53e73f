// Package redact removes secrets from text and JSON before it is stored or
// shown: event payloads, error messages, agent output.
package redact

import (
	"bytes"
	"encoding/json"
	"strings"
)

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
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// JSON returns a JSON payload safe to store: secrets redacted and NUL
// characters (which PostgreSQL's jsonb refuses) replaced by U+FFFD.
func (r *Redactor) JSON(p []byte) []byte {
	if r != nil && r.r != nil {
		p = []byte(r.r.Replace(string(p)))
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
