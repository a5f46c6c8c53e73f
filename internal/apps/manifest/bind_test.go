package manifest

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func raws(vals ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(vals))
	for i, v := range vals {
		out[i] = json.RawMessage(v)
	}
	return out
}

func TestBindTypes(t *testing.T) {
	tests := []struct {
		typ, in string
		want    any
		wantErr string
	}{
		{TypeString, `"Ada"`, "Ada", ""},
		{TypeString, `""`, "", ""},
		{TypeString, `"caf\u00e9 \"x\""`, `café "x"`, ""},
		{TypeString, `42`, nil, "must be a string"},
		{TypeString, `true`, nil, "must be a string"},
		{TypeString, `["a"]`, nil, "must be a string"},
		{TypeString, `"a\u0000b"`, nil, "must not contain NUL characters"},

		{TypeInteger, `42`, int64(42), ""},
		{TypeInteger, ` -7 `, int64(-7), ""},
		{TypeInteger, `0`, int64(0), ""},
		{TypeInteger, `42.0`, int64(42), ""},
		{TypeInteger, `1e3`, int64(1000), ""},
		{TypeInteger, `1.5E+1`, int64(15), ""},
		{TypeInteger, `12345678901234567890e-1`, int64(1234567890123456789), ""},
		{TypeInteger, `0e999999999999`, int64(0), ""},
		{TypeInteger, `9223372036854775807`, int64(math.MaxInt64), ""},
		{TypeInteger, `-9223372036854775808`, int64(math.MinInt64), ""},
		{TypeInteger, `9223372036854775808`, nil, "is out of range for an integer"},
		{TypeInteger, `1e19`, nil, "is out of range for an integer"},
		{TypeInteger, `1e999999999999`, nil, "is out of range for an integer"},
		{TypeInteger, `4.5`, nil, "must be an integer"},
		{TypeInteger, `1.0000000000000000001`, nil, "must be an integer"},
		{TypeInteger, `1e-999999999999`, nil, "must be an integer"},
		{TypeInteger, `"42"`, nil, "must be an integer"},
		{TypeInteger, `true`, nil, "must be an integer"},

		{TypeNumber, `1.5`, 1.5, ""},
		{TypeNumber, `7`, 7.0, ""},
		{TypeNumber, `-2e-3`, -0.002, ""},
		{TypeNumber, `1e999`, nil, "is out of range for a number"},
		{TypeNumber, `"1.5"`, nil, "must be a number"},

		{TypeBoolean, `true`, true, ""},
		{TypeBoolean, `false`, false, ""},
		{TypeBoolean, `"true"`, nil, "must be true or false"},
		{TypeBoolean, `1`, nil, "must be true or false"},

		{TypeJSON, `{"a": [1, 2], "b": "x y"}`, `{"a":[1,2],"b":"x y"}`, ""},
		{TypeJSON, `"text"`, `"text"`, ""},
		{TypeJSON, `3.25`, `3.25`, ""},
		{TypeJSON, `false`, `false`, ""},
		{TypeJSON, `[]`, `[]`, ""},

		{TypeString, `{"a":`, nil, "is not valid JSON"},
		{TypeJSON, `nope`, nil, "is not valid JSON"},
	}
	for _, tc := range tests {
		f := &Function{Name: "f", Args: []Arg{{Name: "v", Type: tc.typ, Required: true}}}
		got, err := f.Bind(raws(tc.in))
		if tc.wantErr != "" {
			want := "args[0] (v): " + tc.wantErr
			if err == nil || err.Error() != want {
				t.Errorf("%s %s: err = %v, want %q", tc.typ, tc.in, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", tc.typ, tc.in, err)
			continue
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], tc.want) {
			t.Errorf("%s %s: got %#v, want %#v", tc.typ, tc.in, got, tc.want)
		}
	}
}

func TestBindCount(t *testing.T) {
	f := &Function{Name: "find", Args: []Arg{
		{Name: "customer", Type: TypeString, Required: true},
		{Name: "limit", Type: TypeInteger, Required: false},
		{Name: "filter", Type: TypeJSON, Required: false},
	}}
	tests := []struct {
		name    string
		in      []json.RawMessage
		want    []any
		wantErr string
	}{
		{"all", raws(`"c1"`, `10`, `{"x":1}`), []any{"c1", int64(10), `{"x":1}`}, ""},
		{"optional missing bind nil", raws(`"c1"`), []any{"c1", nil, nil}, ""},
		{"optional null binds nil", raws(`"c1"`, `null`, ` null `), []any{"c1", nil, nil}, ""},
		{"optional skipped with null", raws(`"c1"`, `null`, `[1]`), []any{"c1", nil, `[1]`}, ""},
		{"required missing", nil, nil, "args[0] (customer): is required"},
		{"required null", raws(`null`), nil, "args[0] (customer): is required"},
		{"required empty", raws(``), nil, "args[0] (customer): is required"},
		{"too many", raws(`"c1"`, `1`, `2`, `3`), nil, "args: find takes 3 args, got 4"},
		{"several problems", raws(`1`, `"ten"`), nil, "args[0] (customer): must be a string; args[1] (limit): must be an integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.Bind(tc.in)
			if tc.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || e.Error() != tc.wantErr {
					t.Fatalf("err = %v, want *Error %q", err, tc.wantErr)
				}
				if got != nil {
					t.Fatalf("got %v with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}

	none := &Function{Name: "ping"}
	if got, err := none.Bind(nil); err != nil || len(got) != 0 {
		t.Fatalf("no args: %v, %v", got, err)
	}
	if _, err := none.Bind(raws(`1`)); err == nil || !strings.Contains(err.Error(), "ping takes no args, got 1") {
		t.Fatalf("no args, one sent: %v", err)
	}
}

// TestBindParsed binds through a parsed manifest, as the server will.
func TestBindParsed(t *testing.T) {
	m, err := Parse(fullYAML)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := m.Function("list_orders")
	if !ok {
		t.Fatal("list_orders not found")
	}
	if _, err := f.Bind(raws(`7`)); err == nil || err.Error() != "args[0] (customer): must be a string" {
		t.Fatalf("err = %v", err)
	}
	got, err := f.Bind(raws(`"c-1"`))
	if err != nil || !reflect.DeepEqual(got, []any{"c-1"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}
