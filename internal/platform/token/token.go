// Package token mints the secrets Slipway hands out once and keeps only
// as hashes (webhook receiver tokens, runner tokens, enrollment tokens,
// sessions): 32 random bytes, base64url, behind a prefix that names their
// family; the database keeps and looks up their SHA-256.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// New returns a fresh token with prefix and the hash to store.
func New(prefix string) (token, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	token = prefix + base64.RawURLEncoding.EncodeToString(b)
	return token, Hash(token)
}

// Hash is what the database stores and looks up instead of a token.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
