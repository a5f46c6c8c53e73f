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
	"sync"

	"slipway/internal/platform/vaultkeys"
)

// Key is one key-encryption key of the env backend (package vaultkeys,
// which the configuration also reads them with).
type Key = vaultkeys.Key

// ParseKeys reads SERVICE_VAULT_KEYS (vaultkeys.Parse).
func ParseKeys(spec string) ([]Key, error) { return vaultkeys.Parse(spec) }

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
		if len(key.Secret) != 32 || !vaultkeys.ValidID(key.ID) {
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
