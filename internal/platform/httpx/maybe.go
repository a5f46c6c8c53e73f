package httpx

import (
	"encoding/json"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// Maybe is an answer that may be null, documented as such: Huma's
// nullable tag does not reach a struct's reference, so the published type
// would otherwise claim the object is always there.
type Maybe[T any] struct{ V *T }

// MaybeOf wraps a pointer (nil: null).
func MaybeOf[T any](v *T, err error) (Maybe[T], error) { return Maybe[T]{V: v}, err }

// MarshalJSON writes the value, or null.
func (m Maybe[T]) MarshalJSON() ([]byte, error) {
	if m.V == nil {
		return []byte("null"), nil
	}
	return json.Marshal(m.V)
}

// Schema is the value's, or null.
func (Maybe[T]) Schema(r huma.Registry) *huma.Schema {
	return NullableRef(r.Schema(reflect.TypeFor[T](), true, ""))
}

// NullableRef is a schema that is s or null.
func NullableRef(s *huma.Schema) *huma.Schema {
	return &huma.Schema{OneOf: []*huma.Schema{s, {Type: "null"}}}
}

// UnmarshalJSON reads the value, or null.
func (m *Maybe[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		m.V = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	m.V = &v
	return nil
}
