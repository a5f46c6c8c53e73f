// Package vaultkeys reads the env vault backend's key-encryption keys
// (SERVICE_VAULT_KEYS): the configuration checks them at load, the vault
// uses them.
package vaultkeys

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Key is one key-encryption key of the env backend: an id the sealed text
// names and 32 secret bytes.
type Key struct {
	ID     string
	Secret []byte
}

var keyIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Parse reads SERVICE_VAULT_KEYS: comma-separated `id:base64` pairs,
// each key 32 bytes (standard or URL base64, padded or not), the first the
// one that seals. The others only open what they sealed until Rewrap has
// moved it.
func Parse(spec string) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, enc, ok := strings.Cut(part, ":")
		if !ok || !keyIDRE.MatchString(id) {
			return nil, fmt.Errorf("a key is `id:base64` with an id of lowercase letters, digits, '-' and '_' (at most 32), not %q", redactKey(part))
		}
		if seen[id] {
			return nil, fmt.Errorf("key id %q appears twice", id)
		}
		seen[id] = true
		secret, err := decodeKey(enc)
		if err != nil || len(secret) != 32 {
			return nil, fmt.Errorf("key %q: the key must be 32 bytes in base64 (`openssl rand -base64 32`)", id)
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	if len(keys) == 0 {
		return nil, errors.New("no key given")
	}
	return keys, nil
}

func redactKey(part string) string {
	if id, _, ok := strings.Cut(part, ":"); ok {
		return id + ":…"
	}
	return "…"
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// ValidID reports whether an id may name a key.
func ValidID(id string) bool { return keyIDRE.MatchString(id) }
