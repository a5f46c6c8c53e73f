package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Lookup reads one environment variable; os.LookupEnv fits.
type Lookup func(name string) (string, bool)

// MapLookup adapts a map (tests, tools) to a Lookup.
func MapLookup(m map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// OSLookup reads the process environment.
var OSLookup Lookup = os.LookupEnv

// reader reads variables and collects one error per problem, each naming its
// variable, so a misconfigured boot reports everything at once.
type reader struct {
	lookup Lookup
	errs   []error
	// read records every name looked up (tests compare it with the Var tables).
	read map[string]bool
}

func newReader(lookup Lookup) *reader {
	return &reader{lookup: lookup, read: map[string]bool{}}
}

func (r *reader) failf(name, format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

func (r *reader) err() error { return errors.Join(r.errs...) }

// raw returns the trimmed value; an empty value counts as unset, as in most
// env-file tooling.
func (r *reader) raw(name string) (string, bool) {
	r.read[name] = true
	v, ok := r.lookup(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return "", false
	}
	return v, true
}

func (r *reader) str(name, def string) string {
	if v, ok := r.raw(name); ok {
		return v
	}
	return def
}

func (r *reader) boolean(name string, def bool) bool {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "1", "t", "true", "yes", "y", "on":
		return true
	case "0", "f", "false", "no", "n", "off":
		return false
	}
	r.failf(name, "%q is not a boolean (use true or false)", v)
	return def
}

// integer parses a whole number within [min, max].
func (r *reader) integer(name string, def, min, max int64) int64 {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.failf(name, "%q is not a whole number", v)
		return def
	}
	if n < min || n > max {
		r.failf(name, "%d is out of range [%d, %d]", n, min, max)
		return def
	}
	return n
}

func (r *reader) seconds(name string, def int64) time.Duration {
	return time.Duration(r.integer(name, def, 0, 10*365*24*3600)) * time.Second
}

func (r *reader) oneOf(name, def string, allowed ...string) string {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a
		}
	}
	r.failf(name, "%q is not one of %s", v, strings.Join(allowed, ", "))
	return def
}

// list splits on commas and whitespace, dropping empties.
func (r *reader) list(name string) []string {
	v, ok := r.raw(name)
	if !ok {
		return nil
	}
	return splitList(v)
}

func splitList(v string) []string {
	return strings.FieldsFunc(v, func(c rune) bool {
		return c == ',' || c == ' ' || c == '\t' || c == '\n'
	})
}

// httpURL checks for an absolute http(s) URL.
func (r *reader) httpURL(name, v string) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.failf(name, "%q is not an absolute http or https URL", v)
	}
}

// pair reports the "both or neither" rule for two related variables.
func (r *reader) pair(a, av, b, bv string) {
	if (av == "") != (bv == "") {
		missing, given := a, b
		if av != "" {
			missing, given = b, a
		}
		r.failf(missing, "must be set together with %s", given)
	}
}

// Secret is a string that never prints: fmt and slog show a placeholder.
type Secret string

// Reveal returns the value; call it only where the secret is used.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return s.String() }

// MarshalText keeps encoders (JSON, slog's JSON handler) from printing it.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
