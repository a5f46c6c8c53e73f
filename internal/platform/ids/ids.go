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

// Derive is the UUID id with its last three bytes replaced by n (below
// 2^24): an id for the n-th thing kept inside the row of id (an event or a
// node run packed in its run's row) that is not stored. A UUIDv7's last
// bytes are random, so derived ids stay unique and valid UUIDs.
func Derive(id string, n int64) string {
	u, err := uuid.Parse(id)
	if err != nil {
		return id
	}
	u[13], u[14], u[15] = byte(n>>16), byte(n>>8), byte(n)
	return u.String()
}
