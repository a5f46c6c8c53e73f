package httpx

import (
	"encoding/json"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// Optional is a field of a PATCH body that tells apart its three states:
// absent (Set false), null (Set and Null) and a value. A pointer cannot:
// encoding/json leaves it nil both when the key is missing and when it is
// null, and Huma lets null through for any optional field.
type Optional[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// UnmarshalJSON runs only for a key present in the body.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	*o = Optional[T]{Set: true}
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

// Schema documents the field as its value's type; the field's tags add
// nullable and the constraints.
func (Optional[T]) Schema(r huma.Registry) *huma.Schema {
	return huma.SchemaFromType(r, reflect.TypeFor[T]())
}
