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
	"regexp"
	"strings"
	"sync"
)

// Key is one key-encryption key of the env backend: an id the sealed text
// names and 32 secret bytes.
type Key struct {
	ID     string
	Secret []byte
}

var keyIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// ParseKeys reads SERVICE_VAULT_KEYS: comma-separated `id:base64` pairs,
// each key 32 bytes (standard or URL base64, padded or not), the first the
// one that seals. The others only open what they sealed until Rewrap has
// moved it.
func ParseKeys(spec string) ([]Key, error) {
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

// InstanceKey derives the key used when SERVICE_VAULT_KEYS is unset from
// the instance secret (SERVICE_JWT_SECRET): id "instance". Changing that
// secret then makes the stored secrets unreadable; set SERVICE_VAULT_KEYS
// (with this key second, until a Rewrap) to part them.
func InstanceKey(instanceSecret []byte) (Key, error) {
	if len(instanceSecret) < 32 {
		return Key{}, errors.New("vault: the instance secret must be at least 32 bytes")
	}
	k, err := hkdf.Key(sha256.New, instanceSecret, nil, "slipway/vault/kek", 32)
	return Key{ID: "instance", Secret: k}, err
}

// Keyring seals under the current key and opens under any it holds. The
// data key of a workspace under a key is derived once and kept (at most
// maxDataKeys of them).
type Keyring struct {
	keys    map[string][]byte
	current string

	mu   sync.RWMutex
	aead map[string]cipher.AEAD // key id + "/" + workspace
}

const maxDataKeys = 16384

// NewKeyring holds keys, the first one current.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("vault: a keyring needs a key")
	}
	k := &Keyring{keys: map[string][]byte{}, current: keys[0].ID, aead: map[string]cipher.AEAD{}}
	for _, key := range keys {
		if len(key.Secret) != 32 || !keyIDRE.MatchString(key.ID) {
			return nil, fmt.Errorf("vault: key %q must have a plain id and 32 bytes", key.ID)
		}
		k.keys[key.ID] = key.Secret
	}
	return k, nil
}

// Current is the id of the key that seals.
func (k *Keyring) Current() string { return k.current }

// dataKey is the AEAD of one workspace under one key.
func (k *Keyring) dataKey(keyID, workspace string) (cipher.AEAD, error) {
	id := keyID + "/" + workspace
	k.mu.RLock()
	a := k.aead[id]
	k.mu.RUnlock()
	if a != nil {
		return a, nil
	}
	kek, ok := k.keys[keyID]
	if !ok {
		return nil, fmt.Errorf("sealed under key %q, which SERVICE_VAULT_KEYS no longer holds", keyID)
	}
	dek, err := hkdf.Key(sha256.New, kek, nil, "slipway/vault/workspace/"+workspace, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(dek)
	if err != nil {
		return nil, err
	}
	if a, err = cipher.NewGCM(block); err != nil {
		return nil, err
	}
	k.mu.Lock()
	if len(k.aead) >= maxDataKeys {
		clear(k.aead)
	}
	k.aead[id] = a
	k.mu.Unlock()
	return a, nil
}

// additional binds a sealed value to its ref: moved to another row or
// workspace it does not open.
func additional(ref Ref) []byte {
	return []byte("slipway/vault\x00" + ref.Workspace + "\x00" + ref.Name)
}

// seal encrypts value for ref under the current key: `<key id>:<base64 of
// nonce and ciphertext>`.
func (k *Keyring) seal(ref Ref, value string) (string, error) {
	a, err := k.dataKey(k.current, ref.Workspace)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := a.Seal(nonce, nonce, []byte(value), additional(ref))
	return k.current + ":" + base64.RawStdEncoding.EncodeToString(out), nil
}

// keyOf is the id of the key a sealed value names.
func keyOf(sealed string) string {
	id, _, _ := strings.Cut(sealed, ":")
	return id
}

// open decrypts a value seal made for ref, under whichever key it names.
func (k *Keyring) open(ref Ref, sealed string) (string, error) {
	id, enc, ok := strings.Cut(sealed, ":")
	if !ok {
		return "", ErrCorrupt
	}
	a, err := k.dataKey(id, ref.Workspace)
	if err != nil {
		return "", err
	}
	raw, err := base64.RawStdEncoding.DecodeString(enc)
	if err != nil || len(raw) < a.NonceSize() {
		return "", ErrCorrupt
	}
	n := a.NonceSize()
	pt, err := a.Open(nil, raw[:n], raw[n:], additional(ref))
	if err != nil {
		return "", ErrCorrupt
	}
	return string(pt), nil
}
