package runners

import (
	"slipway/internal/runnerapi"
	"strings"
	"testing"
	"time"
)

// TestJWT: a token verifies with its signer until it expires, and with no
// other key; a changed byte anywhere breaks it.
func TestJWT(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newSigner([]byte("0123456789abcdef0123456789abcdef"))
	tok := s.sign(runnerapi.Claims{Subject: "r1", Organization: "o1", Generation: 3, Scope: runnerapi.JWTScope, IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()})
	c, err := s.verify(tok, now)
	if err != nil || c.Subject != "r1" || c.Organization != "o1" || c.Generation != 3 {
		t.Fatalf("verify = %+v, %v", c, err)
	}
	if _, err := s.verify(tok, now.Add(time.Hour)); err == nil {
		t.Fatal("an expired token verified")
	}
	if _, err := newSigner([]byte("another-secret-of-at-least-32-bytes!!")).verify(tok, now); err == nil {
		t.Fatal("a token verified under another key")
	}
	for i := len(runnerapi.JWTPrefix); i < len(tok); i++ {
		b := []byte(tok)
		b[i] ^= 1
		if _, err := s.verify(string(b), now); err == nil {
			t.Fatalf("a token with byte %d changed verified", i)
		}
	}
	other := s.sign(runnerapi.Claims{Subject: "r1", Scope: "session", ExpiresAt: now.Add(time.Hour).Unix()})
	if _, err := s.verify(other, now); err == nil {
		t.Fatal("a token of another scope verified")
	}
}

// FuzzVerify: whatever a client sends as a runner token, verification
// neither panics nor accepts anything the signer did not sign as it is.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	s := newSigner([]byte("0123456789abcdef0123456789abcdef"))
	good := s.sign(runnerapi.Claims{Subject: "r1", Organization: "o1", Generation: 1, Scope: runnerapi.JWTScope, IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()})
	f.Add(good)
	f.Add(runnerapi.JWTPrefix + "a.b.c")
	f.Add(runnerapi.JWTPrefix)
	f.Add("scrn_" + strings.Repeat("A", 43))
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := s.verify(tok, now)
		if err == nil && tok != good {
			// A different string may still carry the same signed bytes
			// (base64 padding bits): it must then say the same.
			if c.Subject != "r1" || c.Organization != "o1" {
				t.Fatalf("%q verified as %+v", tok, c)
			}
		}
		_, _ = runnerapi.ParseClaims(tok)
	})
}
