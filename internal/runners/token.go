package runners

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slipway/internal/runnerapi"
	"strings"
	"time"
)

// signer signs and verifies runner JWTs (HS256) with a key derived from the
// hub's signing secret, so that no other token of the hub verifies as one.
type signer struct{ key []byte }

func newSigner(secret []byte) signer {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("slipway runner jwt v1"))
	return signer{key: m.Sum(nil)}
}

func (s signer) sign(c runnerapi.Claims) string {
	payload, _ := json.Marshal(c)
	unsigned := runnerapi.JWTHeader + "." + base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(unsigned))
	return runnerapi.JWTPrefix + unsigned + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s signer) verify(token string, now time.Time) (*runnerapi.Claims, error) {
	rest, ok := strings.CutPrefix(token, runnerapi.JWTPrefix)
	if !ok {
		return nil, runnerapi.ErrBadJWT
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return nil, runnerapi.ErrBadJWT
	}
	sig, err := base64.RawURLEncoding.DecodeString(rest[i+1:])
	if err != nil {
		return nil, runnerapi.ErrBadJWT
	}
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(rest[:i]))
	if !hmac.Equal(sig, m.Sum(nil)) {
		return nil, runnerapi.ErrBadJWT
	}
	c, err := runnerapi.ParseClaims(token)
	if err != nil || c.Scope != runnerapi.JWTScope || c.Subject == "" || now.Unix() >= c.ExpiresAt {
		return nil, runnerapi.ErrBadJWT
	}
	return c, nil
}
