package notifications

import (
	"slices"
	"testing"
)

func TestMentioned(t *testing.T) {
	people := []Person{{"o", "Olivia@example.com"}, {"a", "ann@a.test"}, {"b", "ann@b.test"}, {"m", "mo.k@example.com"}}
	for text, want := range map[string][]string{
		"@olivia please look":                       {"o"},
		"cc @OLIVIA@EXAMPLE.COM and @mo.k.":         {"o", "m"},
		"@ann is two people; @ann@b.test is one":    {"b"},
		"write to olivia@example.com (no mention)":  nil,
		"@nobody, @olivia, @olivia again":           {"o"},
		"(@mo.k) and\n@olivia":                      {"m", "o"},
		"email:@olivia counts, foo@olivia does not": {"o"},
	} {
		if got := Mentioned(text, people); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
}
