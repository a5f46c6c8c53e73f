package auth

import (
	"strings"
	"testing"
)

func TestParseSessionToken(t *testing.T) {
	good := newSessionToken()
	if _, err := ParseSessionToken(good); err != nil {
		t.Fatalf("a fresh token is refused: %v", err)
	}
	for _, bad := range []string{"", good[:42], good + "A", strings.Repeat("A", 42) + "=", strings.Repeat("A", 42) + "/",
		strings.Repeat("é", 21) + "A", " " + good[1:]} {
		if _, err := ParseSessionToken(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseBearer(t *testing.T) {
	tests := []struct {
		header string
		kind   BearerKind
		ok     bool
		err    bool
	}{
		{"", "", false, false},
		{"Bearer scrn_abc123", BearerRunner, true, false},
		{"bearer scrnj_eyJhbGciOi.eyJzdWIi.sig-_x", BearerRunnerJWT, true, false},
		{"Bearer scwa_Zm9v", BearerAppToken, true, false},
		{"Bearer somethingelse", BearerUnrecognised, true, false},
		{"Bearer scrn_", BearerUnrecognised, true, false},
		{"Basic dXNlcjpwYXNz", "", false, true},
		{"Bearer", "", false, true},
		{"Bearer ", "", false, true},
		{"Bearer has space", "", false, true},
		{"Bearer " + strings.Repeat("a", maxBearerLen+1), "", false, true},
		{"Bearer tok\x00en", "", false, true},
	}
	for _, tt := range tests {
		kind, _, ok, err := ParseBearer(tt.header)
		if kind != tt.kind || ok != tt.ok || (err != nil) != tt.err {
			t.Errorf("ParseBearer(%q) = %q, ok=%v, err=%v; want %q, ok=%v, err=%v", tt.header, kind, ok, err, tt.kind, tt.ok, tt.err)
		}
	}
}

func TestCSRFIsBoundToTheSession(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	a, b := csrfToken(secret, "session-a"), csrfToken(secret, "session-b")
	if a == b {
		t.Fatal("two sessions share a CSRF token")
	}
	if !validCSRF(secret, "session-a", a, a) {
		t.Fatal("the session's own token is refused")
	}
	for _, c := range []struct{ header, cookie string }{{b, b}, {a, b}, {b, a}, {"", a}, {a, ""}, {"", ""}} {
		if validCSRF(secret, "session-a", c.header, c.cookie) {
			t.Errorf("accepted header %q cookie %q", c.header, c.cookie)
		}
	}
	if csrfToken([]byte(strings.Repeat("j", 32)), "session-a") == a {
		t.Fatal("the token does not depend on the secret")
	}
}

// FuzzParseSessionToken: any cookie value either is refused or is exactly
// 43 base64url characters, and parsing never panics.
func FuzzParseSessionToken(f *testing.F) {
	f.Add(newSessionToken())
	f.Add("")
	f.Add(strings.Repeat("A", 43))
	f.Add(strings.Repeat("=", 43))
	f.Add("\xff\xfe" + strings.Repeat("a", 41))
	f.Fuzz(func(t *testing.T, v string) {
		tok, err := ParseSessionToken(v)
		if err != nil {
			return
		}
		if tok != v || len(tok) != sessionTokenLen {
			t.Fatalf("accepted %q as %q", v, tok)
		}
		for i := 0; i < len(tok); i++ {
			if !isBase64URL(tok[i]) {
				t.Fatalf("accepted a token with byte %q", tok[i])
			}
		}
	})
}

// FuzzParseBearer: an accepted header yields a token of bounded length made
// of token characters, whose kind matches its prefix; nothing panics.
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"", "Bearer scrn_x", "Bearer scrnj_a.b.c", "Bearer scwa_q", "Basic x", "Bearer  x", "bearer\tx", "Bearer \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		kind, tok, ok, err := ParseBearer(h)
		if err != nil || !ok {
			if tok != "" || kind != "" {
				t.Fatalf("refused %q but returned %q/%q", h, kind, tok)
			}
			return
		}
		if tok == "" || len(tok) > maxBearerLen {
			t.Fatalf("accepted token of length %d", len(tok))
		}
		for i := 0; i < len(tok); i++ {
			if !isBase64URL(tok[i]) && tok[i] != '.' {
				t.Fatalf("accepted byte %q", tok[i])
			}
		}
		switch {
		case strings.HasPrefix(tok, "scrnj_") && len(tok) > 6:
			if kind != BearerRunnerJWT {
				t.Fatalf("%q classified %q", tok, kind)
			}
		case strings.HasPrefix(tok, "scrn_") && len(tok) > 5:
			if kind != BearerRunner {
				t.Fatalf("%q classified %q", tok, kind)
			}
		case strings.HasPrefix(tok, "scwa_") && len(tok) > 5:
			if kind != BearerAppToken {
				t.Fatalf("%q classified %q", tok, kind)
			}
		default:
			if kind != BearerUnrecognised {
				t.Fatalf("%q classified %q", tok, kind)
			}
		}
	})
}
