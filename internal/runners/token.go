package runners

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Token prefixes: static runner tokens and runner JWTs are the spec's;
// enrollment tokens are ours (they never travel as bearer tokens).
const (
	StaticPrefix     = "scrn_"
	JWTPrefix        = "scrnj_"
	EnrollmentPrefix = "scrne_"
)

// Claims of a runner JWT: the runner, its organization, the token
// generation (a rotation bumps the runner's and refuses older tokens) and
// the lifetime.
type Claims struct {
	Subject      string `json:"sub"`
	Organization string `json:"org"`
	Generation   int    `json:"gen"`
	Scope        string `json:"scope"`
	IssuedAt     int64  `json:"iat"`
	ExpiresAt    int64  `json:"exp"`
}

// jwtScope is the only scope runner JWTs carry: the runner API.
const jwtScope = "runner"

var (
	jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	// ErrBadJWT: not a runner JWT of this hub, or expired.
	ErrBadJWT = errors.New("runners: invalid or expired runner token")
)

// signer signs and verifies runner JWTs (HS256) with a key derived from the
// hub's signing secret, so that no other token of the hub verifies as one.
type signer struct{ key []byte }

func newSigner(secret []byte) signer {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("slipway runner jwt v1"))
	return signer{key: m.Sum(nil)}
}

func (s signer) sign(c Claims) string {
	payload, _ := json.Marshal(c)
	unsigned := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(unsigned))
	return JWTPrefix + unsigned + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s signer) verify(token string, now time.Time) (*Claims, error) {
	rest, ok := strings.CutPrefix(token, JWTPrefix)
	if !ok {
		return nil, ErrBadJWT
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return nil, ErrBadJWT
	}
	sig, err := base64.RawURLEncoding.DecodeString(rest[i+1:])
	if err != nil {
		return nil, ErrBadJWT
	}
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(rest[:i]))
	if !hmac.Equal(sig, m.Sum(nil)) {
		return nil, ErrBadJWT
	}
	c, err := ParseClaims(token)
	if err != nil || c.Scope != jwtScope || c.Subject == "" || now.Unix() >= c.ExpiresAt {
		return nil, ErrBadJWT
	}
	return c, nil
}

// ParseClaims reads a runner JWT's claims without verifying it (a runner
// reads its own token's expiry this way; only the hub can verify it).
func ParseClaims(token string) (*Claims, error) {
	rest, ok := strings.CutPrefix(token, JWTPrefix)
	if !ok {
		return nil, ErrBadJWT
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[0] != jwtHeader {
		return nil, ErrBadJWT
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, ErrBadJWT
	}
	var c Claims
	if err := json.Unmarshal(raw, &c); err != nil || c.ExpiresAt == 0 {
		return nil, ErrBadJWT
	}
	return &c, nil
}
