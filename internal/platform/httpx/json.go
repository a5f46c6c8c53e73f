package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/danielgtaylor/huma/v2"
)

// errNUL refuses request bodies with NUL characters in their strings.
var errNUL = errors.New("text must not contain NUL characters (\\u0000)")

// JSONFormat is Huma's JSON format, except that it refuses request bodies
// whose strings (or keys) hold a NUL character: PostgreSQL cannot store one
// in text, SQLite would keep it and hand it to every later reader, and no
// text a user writes needs it. Huma answers 400 naming the body.
// Bodies that write their own JSON (JSONAppender) skip encoding/json.
var JSONFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		if a, ok := v.(JSONAppender); ok {
			return marshalAppender(w, a)
		}
		return huma.DefaultJSONFormat.Marshal(w, v)
	},
	Unmarshal: func(data []byte, v any) error {
		if bytes.Contains(data, []byte(`\u0000`)) && holdsNUL(data) {
			return errNUL
		}
		return huma.DefaultJSONFormat.Unmarshal(data, v)
	},
}

// holdsNUL decodes data and looks for a NUL in any string; an escaped
// backslash followed by "u0000" is text, not a NUL, and passes.
func holdsNUL(data []byte) bool {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return false // the real decode reports the syntax error
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch t := v.(type) {
		case string:
			return bytes.IndexByte([]byte(t), 0) >= 0
		case []any:
			for _, e := range t {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for k, e := range t {
				if bytes.IndexByte([]byte(k), 0) >= 0 || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
