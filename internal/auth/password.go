package auth

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"slipway/internal/platform/apperr"
)

// HashParams are argon2id's cost parameters.
//
// Default: 32 MiB, 2 passes, 1 lane. That is above OWASP's minimum for
// argon2id (19 MiB, 2 passes, 1 lane) and takes about 60 ms on one core of the
// development machine (see bench/README.md); memory stays bounded because at
// most GOMAXPROCS hashes run at once (hashSlots), so login storms queue
// instead of exhausting RAM. The parameters are stored in each hash, so
// raising them later only affects new hashes.
type HashParams struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// DefaultHashParams is what production uses.
var DefaultHashParams = HashParams{MemoryKiB: 32 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
	// MinPasswordLen and MaxPasswordBytes bound acceptable passwords.
	MinPasswordLen   = 10
	MaxPasswordBytes = 1024
)

var hashSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

func withSlot(f func()) {
	hashSlots <- struct{}{}
	defer func() { <-hashSlots }()
	f()
}

// HashPassword returns a PHC-format argon2id hash of pw.
func HashPassword(pw string, p HashParams) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	var key []byte
	withSlot(func() { key = argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, keyLen) })
	return encodePHC(p, salt, key), nil
}

func encodePHC(p HashParams, salt, key []byte) string {
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(key))
}

var errBadHash = errors.New("auth: malformed password hash")

// dummyHash is a well-formed hash with the given parameters, a random salt
// and a random key that no password produces. Verifying against it costs
// exactly the argon2id work of a real check, and making it costs nothing
// (no hashing at start-up, no 32 MiB held while idle).
func dummyHash(p HashParams) string {
	b := make([]byte, saltLen+keyLen)
	if _, err := rand.Read(b); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	return encodePHC(p, b[:saltLen], b[saltLen:])
}

// VerifyPassword checks pw against a hash made by HashPassword, in constant
// time, with the parameters stored in the hash.
func VerifyPassword(pw, encoded string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var p HashParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil {
		return false, errBadHash
	}
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := enc.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	var got []byte
	withSlot(func() { got = argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want))) })
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

//go:embed common-passwords.txt
var commonPasswordsFile []byte

var commonPasswords = func() map[string]bool {
	m := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(commonPasswordsFile))
	for sc.Scan() {
		if w := strings.TrimSpace(sc.Text()); w != "" {
			m[strings.ToLower(w)] = true
		}
	}
	return m
}()

// CheckPassword rejects weak passwords before any hashing work: too short,
// too long, equal to the email, a well-known password, or one character
// repeated.
func CheckPassword(pw, email string) error {
	n := utf8.RuneCountInString(pw)
	switch {
	case n < MinPasswordLen:
		return apperr.BadRequest("password is too short: use at least %d characters", MinPasswordLen)
	case len(pw) > MaxPasswordBytes:
		return apperr.BadRequest("password is too long: at most %d bytes", MaxPasswordBytes)
	case email != "" && strings.EqualFold(strings.TrimSpace(pw), strings.TrimSpace(email)):
		return apperr.BadRequest("password must not be your email address")
	case commonPasswords[strings.ToLower(pw)]:
		return apperr.BadRequest("password is too common: choose one that is not on lists of leaked passwords")
	case strings.Count(pw, string([]rune(pw)[0])) == n:
		return apperr.BadRequest("password must not be one character repeated")
	}
	return nil
}
