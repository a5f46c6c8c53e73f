// Package configschema checks a config object against the JSON Schema
// generated from its Go type: the schemas the API publishes (node kinds,
// resource kinds) are the ones enforced.
package configschema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
)

// Set holds the schemas of a set of config types, generated once.
type Set struct {
	once     sync.Once
	types    map[string]reflect.Type
	registry huma.Registry
	schemas  map[string]*huma.Schema
}

// NewSet makes the schemas of the types, by name, on first use.
func NewSet(types map[string]reflect.Type) *Set { return &Set{types: types} }

func (s *Set) init() {
	s.once.Do(func() {
		s.registry = huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
		s.schemas = make(map[string]*huma.Schema, len(s.types))
		for name, t := range s.types {
			s.schemas[name] = s.registry.Schema(t, false, "")
		}
	})
}

// Schema is the JSON Schema of a name's type, as JSON.
func (s *Set) Schema(name string) json.RawMessage {
	s.init()
	b, err := json.Marshal(s.schemas[name])
	if err != nil {
		panic(err) // generated from our own types: cannot fail
	}
	return b
}

// Check validates a config against a name's schema. A config of more than
// maxBytes of JSON is refused; the error lists every problem, each with
// where it is (config.<path>).
func (s *Set) Check(name string, config map[string]any, maxBytes int) error {
	s.init()
	// Validate works on the JSON shapes (float64 numbers, []any): round
	// trip what a YAML or Go caller built.
	raw, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("config is not JSON: %v", err)
	}
	if len(raw) > maxBytes {
		return fmt.Errorf("config is larger than %d bytes", maxBytes)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("config is not JSON: %v", err)
	}
	res := &huma.ValidateResult{}
	huma.Validate(s.registry, s.schemas[name], huma.NewPathBuffer(make([]byte, 0, 64), 0), huma.ModeWriteToServer, v, res)
	if len(res.Errors) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(res.Errors))
	for _, e := range res.Errors {
		if d, ok := e.(*huma.ErrorDetail); ok {
			if loc := strings.TrimPrefix(d.Location, "."); loc != "" {
				msgs = append(msgs, d.Message+" (config."+loc+")")
			} else {
				msgs = append(msgs, d.Message)
			}
			continue
		}
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
