// Package ids mints identifiers: UUIDv7 (time-ordered, so primary-key indexes
// stay append-mostly) and random tokens.
package ids

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/google/uuid"
)

// New returns a new UUIDv7 in its canonical text form.
func New() string {
	return uuid.Must(uuid.NewV7()).String()
}

// Valid reports whether s is a canonical UUID (any version).
func Valid(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// RandomHex returns n random bytes hex-encoded.
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("ids: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}
