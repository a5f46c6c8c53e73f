package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactor(t *testing.T) {
	key := "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----"
	r := New("ghp_abcdef123456", `pa"ss\word-xyz`, "short", key)
	in := map[string]string{
		"raw":     "token ghp_abcdef123456 here",
		"escaped": `pw pa"ss\word-xyz end`,
		"keyline": "leaked MIIEvQIBADANBgkqhkiG9w0BAQEFAASC line",
		"short":   "short stays",
	}
	b, _ := json.Marshal(in)
	out := string(r.JSON(b))
	for _, leak := range []string{"ghp_abcdef123456", `pa\"ss\\word-xyz`, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"} {
		if strings.Contains(out, leak) {
			t.Fatalf("%q survived: %s", leak, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatalf("redaction broke the JSON: %v: %s", err, out)
	}
	if back["raw"] != "token [REDACTED] here" || back["short"] != "short stays" {
		t.Fatalf("redacted = %v", back)
	}
	if got := r.Text("err: ghp_abcdef123456"); got != "err: [REDACTED]" {
		t.Fatalf("Text = %q", got)
	}
	// With adds secrets and keeps the receiver's.
	both := r.With("another-secret-99")
	if got := both.Text("ghp_abcdef123456 another-secret-99"); got != "[REDACTED] [REDACTED]" {
		t.Fatalf("With = %q", got)
	}
	if got := r.Text("another-secret-99"); got != "another-secret-99" {
		t.Fatalf("With changed the receiver: %q", got)
	}
	// NUL characters (refused by PostgreSQL jsonb) are replaced; a nil
	// redactor still does that and redacts nothing.
	nul, _ := json.Marshal(map[string]string{"line": "a\x00b"})
	var none *Redactor
	if got := string(none.JSON(nul)); strings.Contains(got, `\u0000`) || !strings.Contains(got, "a\ufffdb") {
		t.Fatalf("NUL payload = %q", got)
	}
	if none.Text("ghp_abcdef123456") != "ghp_abcdef123456" {
		t.Fatal("a nil redactor changed text")
	}
}

// TestFormats: well-known secret shapes are redacted by every redactor,
// the empty one included, in text and in JSON; look-alikes are not.
func TestFormats(t *testing.T) {
	pem := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
	leaks := []string{
		"sk_live_51HqLyjWDarjtT1zdp7dc",
		"rk_live_abcdefgh12345678",
		"ghp_16C7e42F292c6912E7710c838347Ae178B4a",
		"gho_16C7e42F292c6912E7710c838347Ae178B4a",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
		"scrn_3f9a2b7c1d8e4f60a1b2c3d4",
		"scrnj_eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJy",
		"scwa_Zm9vYmFyYmF6cXV4cXV1eA",
		pem,
	}
	var none *Redactor
	for _, r := range []*Redactor{none, New(), New("unrelated-secret")} {
		for _, leak := range leaks {
			if got := r.Text("before " + leak + " after"); got != "before [REDACTED] after" {
				t.Fatalf("Text(%q) = %q", leak, got)
			}
			b, _ := json.Marshal(map[string]string{"v": "x " + leak + " y"})
			out := string(r.JSON(b))
			var back map[string]string
			if err := json.Unmarshal([]byte(out), &back); err != nil || back["v"] != "x [REDACTED] y" {
				t.Fatalf("JSON(%q) = %s (%v)", leak, out, err)
			}
		}
	}
	for _, keep := range []string{
		"sk_test_51HqLyjWDarjtT1zdp7dc", // test keys are not live
		"ghp_short",
		"my_scrn_token_name",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		"snake_case_identifier_that_is_long",
	} {
		if got := New().Text(keep); got != keep {
			t.Fatalf("%q became %q", keep, got)
		}
	}
}
