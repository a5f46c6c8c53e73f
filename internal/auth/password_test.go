package auth

import (
	"errors"
	"strings"
	"testing"

	"slipway/internal/platform/apperr"
)

var cheap = HashParams{MemoryKiB: 64, Time: 1, Threads: 1}

func TestHashAndVerify(t *testing.T) {
	h, err := HashPassword("a long enough secret", cheap)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") || strings.Contains(h, "a long enough secret") {
		t.Fatalf("hash = %q", h)
	}
	h2, _ := HashPassword("a long enough secret", cheap)
	if h == h2 {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	if ok, err := VerifyPassword("a long enough secret", h); err != nil || !ok {
		t.Fatalf("right password: %v %v", ok, err)
	}
	if ok, err := VerifyPassword("a long enough secreT", h); err != nil || ok {
		t.Fatalf("wrong password: %v %v", ok, err)
	}
	// Parameters come from the stored hash, so raising the defaults later
	// keeps old hashes verifiable.
	strong, _ := HashPassword("pw-under-other-params", HashParams{MemoryKiB: 128, Time: 2, Threads: 1})
	if ok, err := VerifyPassword("pw-under-other-params", strong); err != nil || !ok {
		t.Fatalf("other params: %v %v", ok, err)
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdA$aGFzaA", "$argon2id$v=18$m=64,t=1,p=1$c2FsdA$aGFzaA",
		"$argon2id$v=19$m=x,t=1,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=64,t=1,p=1$!!$aGFzaA", "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$"} {
		if _, err := VerifyPassword("x", bad); err == nil {
			t.Errorf("malformed hash %q verified without error", bad)
		}
	}
}

func TestDefaultHashParams(t *testing.T) {
	// Documented in docs/decisions.md and bench/README.md.
	if DefaultHashParams != (HashParams{MemoryKiB: 32768, Time: 2, Threads: 1}) {
		t.Fatalf("DefaultHashParams = %+v", DefaultHashParams)
	}
}

func TestCheckPassword(t *testing.T) {
	tests := []struct {
		pw, email string
		want      string // "" = accepted; else part of the message
	}{
		{"correct-horse-battery", "a@b.io", ""},
		{"short", "a@b.io", "too short"},
		{"123456789", "a@b.io", "too short"},
		{strings.Repeat("x", 1025) + "y", "a@b.io", "too long"},
		{"Alice@Example.com", "alice@example.com", "email"},
		{"password123", "a@b.io", "too common"},
		{"QWERTYUIOP", "a@b.io", "too common"},
		{"aaaaaaaaaaaa", "a@b.io", "repeated"},
		{"ééééééééééé", "a@b.io", "repeated"},
		{"päßwörd-ünïcødé", "a@b.io", ""},
	}
	for _, tt := range tests {
		err := CheckPassword(tt.pw, tt.email)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q refused: %v", tt.pw, err)
			}
			continue
		}
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.CodeBadRequest || !strings.Contains(ae.Message, tt.want) {
			t.Errorf("%q: err = %v, want bad_request mentioning %q", tt.pw, err, tt.want)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{" Ann@Example.COM ": "ann@example.com", "root@localhost": "root@localhost"} {
		if got, err := NormalizeEmail(in); err != nil || got != want {
			t.Errorf("NormalizeEmail(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "ann", "ann@", "@example.com", "Ann <ann@example.com>", "ann@example", strings.Repeat("a", 250) + "@x.io"} {
		if _, err := NormalizeEmail(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// An unknown email is checked against a dummy hash made with the same
// parameters as real ones, so it costs the same argon2id work as a wrong
// password.
func TestDummyHashCostsTheSameWork(t *testing.T) {
	p := HashParams{MemoryKiB: 96, Time: 3, Threads: 1}
	s, err := NewService(Config{HashParams: p, Secret: []byte(strings.Repeat("s", 32))}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := HashPassword("some-password", p)
	prefix := func(h string) string { return h[:strings.LastIndex(h[:strings.LastIndex(h, "$")], "$")] }
	if prefix(s.dummyHash) != prefix(real) {
		t.Fatalf("dummy hash %q and real hash %q use different parameters", prefix(s.dummyHash), prefix(real))
	}
	if ok, err := VerifyPassword("anything", s.dummyHash); err != nil || ok {
		t.Fatalf("the dummy hash verifies: %v %v", ok, err)
	}
}

// BenchmarkHashPassword measures one argon2id hash at the production
// defaults (figures in bench/README.md).
func BenchmarkHashPassword(b *testing.B) {
	for b.Loop() {
		if _, err := HashPassword("correct-horse-battery", DefaultHashParams); err != nil {
			b.Fatal(err)
		}
	}
}
