package httpx

import (
	"errors"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// JSONAppender is a response body that writes its own JSON. JSONFormat
// hands it a buffer instead of encoding it through encoding/json, whose
// reflection, and whose validation and compaction of every MarshalJSON
// result (each timestamp), were a quarter of a task list request. The bytes
// must be exactly what encoding/json would write for the value with HTML
// escaping off (Huma's setting); the type's tests compare the two.
type JSONAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

var appendPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// marshalAppender writes v's JSON and a newline, as json.Encoder.Encode
// does, in one Write.
func marshalAppender(w io.Writer, v JSONAppender) error {
	bp := appendPool.Get().(*[]byte)
	b, err := v.AppendJSON((*bp)[:0])
	if err == nil {
		_, err = w.Write(append(b, '\n'))
	}
	if cap(b) <= 1<<20 { // a rare huge page does not stay pinned
		*bp = b[:0]
		appendPool.Put(bp)
	}
	return err
}

// AppendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it with HTML escaping off: quote, backslash and control
// characters; invalid UTF-8 becomes U+FFFD; U+2028 and U+2029 are escaped.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSONNullString appends *s as a JSON string, or null.
func AppendJSONNullString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return AppendJSONString(b, *s)
}

var errNotFinite = errors.New("json: unsupported value: a number that is not finite")

// AppendJSONFloat appends f as encoding/json writes a float64 (the
// shortest form that reads back the same; exponents below 1e-6 and from
// 1e21 up). NaN and the infinities have no JSON form: an error, as there.
func AppendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, errNotFinite
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 → e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// AppendJSONTime appends t as time.Time's MarshalJSON writes it (RFC 3339
// with nanoseconds, quoted), with its error for a time RFC 3339 cannot
// hold.
func AppendJSONTime(b []byte, t time.Time) ([]byte, error) {
	b, err := t.AppendText(append(b, '"'))
	return append(b, '"'), err
}

// AppendJSONNullTime appends *t as AppendJSONTime does, or null.
func AppendJSONNullTime(b []byte, t *time.Time) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	return AppendJSONTime(b, *t)
}

// AppendJSONBool appends true or false.
func AppendJSONBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}
