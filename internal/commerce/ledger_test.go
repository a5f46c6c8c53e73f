package commerce

import (
	"os"
	"regexp"
	"testing"
)

// TestLedgerAppendOnly: no statement changes or removes a ledger entry (a
// correction is a new entry, so the entries always sum to the balance the
// seller was shown).
func TestLedgerAppendOnly(t *testing.T) {
	src, err := os.ReadFile("store.go")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?i)(UPDATE\s+seller_ledger|DELETE\s+FROM\s+seller_ledger)`).Find(src); m != nil {
		t.Fatalf("store.go changes ledger entries: %q", m)
	}
}
