package manifest

import (
	"math"
	"reflect"
	"testing"
)

func TestPlaceholders(t *testing.T) {
	tests := []struct {
		sql     string
		want    []int
		wantErr string
	}{
		{"SELECT 1", nil, ""},
		{"SELECT $1, $2", []int{1, 2}, ""},
		{"SELECT $2, $1, $2", []int{2, 1}, ""},
		{"SELECT $10", []int{10}, ""},
		{"SELECT ($1)::int+$2", []int{1, 2}, ""},
		{"SELECT $99999999999999999999", []int{math.MaxInt}, ""},
		{"SELECT '$1', $2", []int{2}, ""},
		{"SELECT 'it''s $1', $2", []int{2}, ""},
		{`SELECT E'it\'s $1', $2`, []int{2}, ""},
		{`SELECT e'\\', $1`, []int{1}, ""},
		{`SELECT '\', $1`, []int{1}, ""}, // a plain string: \ is no escape
		{`SELECT some'x', $1`, []int{1}, ""},
		{`SELECT "$1", "a""$2", $3`, []int{3}, ""},
		{"SELECT 1 -- $1\n, $2", []int{2}, ""},
		{"SELECT 1 -- $1", nil, ""},
		{"SELECT /* $1 */ $2", []int{2}, ""},
		{"SELECT /* /* $1 */ $2 */ $3", []int{3}, ""},
		{"SELECT $$ $1 $$, $2", []int{2}, ""},
		{"SELECT $fn$ $1 $$ $2 $fn$, $3", []int{3}, ""},
		{"SELECT a$1, $2", []int{2}, ""},
		{"SELECT é$1, $2", []int{2}, ""},
		{"SELECT $ 1, $2", []int{2}, ""},
		{"SELECT $", nil, ""},
		{"SELECT 'abc", nil, "has an unterminated quoted string"},
		{`SELECT E'abc\'`, nil, "has an unterminated quoted string"},
		{`SELECT "abc`, nil, "has an unterminated quoted identifier"},
		{"SELECT /* /* */", nil, "has an unterminated /* comment"},
		{"SELECT $x$ abc", nil, "has an unterminated $x$ string"},
		{"SELECT $1, $$ abc", []int{1}, "has an unterminated $$ string"},
	}
	for _, tc := range tests {
		got, err := placeholders(tc.sql)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if !reflect.DeepEqual(got, tc.want) || errText != tc.wantErr {
			t.Errorf("placeholders(%q) = %v, %q; want %v, %q", tc.sql, got, errText, tc.want, tc.wantErr)
		}
	}
}
