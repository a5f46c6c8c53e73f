package text

import (
	"errors"
	"testing"

	"slipway/internal/platform/apperr"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"Demo", "Projekt Größe", "日本語の名前", "a-b_c.d (e)", "emoji 🚀", ""} {
		if err := CheckName("name", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"a\x00b", "tab\there", "new\nline", "cr\r", "esc\x1b[31m", "del\x7f", "c1\u0085",
		"rtl\u202eoverride", "isolate\u2066x", "sep\u2028"} {
		err := CheckName("name", bad)
		if !errors.Is(err, apperr.ErrBadRequest) {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
	if got := StripControls("a\x00b\tc\u202ed"); got != "abcd" {
		t.Fatalf("StripControls = %q", got)
	}
	if got := StripControls("plain"); got != "plain" {
		t.Fatalf("StripControls = %q", got)
	}
}
