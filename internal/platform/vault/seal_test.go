package vault

import (
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	s, err := NewSealer([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal("ghp_supersecret", "project:1:credentials")
	if strings.Contains(sealed, "ghp_supersecret") || !strings.HasPrefix(sealed, "v1:") {
		t.Fatalf("sealed = %q", sealed)
	}
	if s.Seal("ghp_supersecret", "project:1:credentials") == sealed {
		t.Fatal("sealing is deterministic: the nonce is not random")
	}
	if got, err := s.Open(sealed, "project:1:credentials"); err != nil || got != "ghp_supersecret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := s.Open(sealed, "project:2:credentials"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("opened under another context: %v", err)
	}
	other, _ := NewSealer([]byte(strings.Repeat("j", 32)))
	if _, err := other.Open(sealed, "project:1:credentials"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("opened with another secret: %v", err)
	}
	for _, bad := range []string{"", "v1:", "v1:!!!", "v2:abc", sealed[:len(sealed)-2]} {
		if _, err := s.Open(bad, "project:1:credentials"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Open(%q) = %v", bad, err)
		}
	}
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Fatal("a short secret was accepted")
	}
}
