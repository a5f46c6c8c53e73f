// Package vault keeps secrets. The env backend seals them with AES-256-GCM
// under a key derived from the instance secret and stores the sealed text in
// the database; only Open reveals them. (The openbao backend comes later.)
package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// sealedPrefix versions the format.
const sealedPrefix = "v1:"

// Sealer seals and opens secrets.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer derives the sealing key from the instance secret (at least 32
// bytes). Changing that secret makes earlier sealed values unreadable.
func NewSealer(instanceSecret []byte) (*Sealer, error) {
	if len(instanceSecret) < 32 {
		return nil, errors.New("vault: the instance secret must be at least 32 bytes")
	}
	key, err := hkdf.Key(sha256.New, instanceSecret, nil, "slipway/vault/v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext; context binds the sealed value to where it is
// stored (e.g. "project:<id>:credentials"), so it cannot be moved elsewhere.
func (s *Sealer) Seal(plaintext, context string) string {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("vault: crypto/rand failed: " + err.Error())
	}
	out := s.aead.Seal(nonce, nonce, []byte(plaintext), []byte(context))
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(out)
}

// ErrCorrupt reports a sealed value that does not open.
var ErrCorrupt = errors.New("vault: sealed value does not open (wrong instance secret or corrupted)")

// Open decrypts a value made by Seal with the same context.
func (s *Sealer) Open(sealed, context string) (string, error) {
	if !strings.HasPrefix(sealed, sealedPrefix) {
		return "", ErrCorrupt
	}
	raw, err := base64.RawStdEncoding.DecodeString(sealed[len(sealedPrefix):])
	if err != nil || len(raw) < s.aead.NonceSize() {
		return "", ErrCorrupt
	}
	n := s.aead.NonceSize()
	pt, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(context))
	if err != nil {
		return "", fmt.Errorf("%w", ErrCorrupt)
	}
	return string(pt), nil
}
