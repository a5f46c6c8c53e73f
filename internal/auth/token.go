package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
)

// Cookie names (spec: service_session; ours: service_csrf).
const (
	SessionCookie = "service_session"
	CSRFCookie    = "service_csrf"
	CSRFHeader    = "X-CSRF-Token"
)

// sessionTokenLen is the length of a session token: 32 random bytes in
// unpadded base64url.
const sessionTokenLen = 43

var errMalformedToken = errors.New("auth: malformed token")

// newSessionToken returns a fresh random session token.
func newSessionToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseSessionToken validates a session cookie value's shape before anything
// else touches it: exactly 43 base64url characters.
func ParseSessionToken(v string) (string, error) {
	if len(v) != sessionTokenLen {
		return "", errMalformedToken
	}
	for i := 0; i < len(v); i++ {
		if !isBase64URL(v[i]) {
			return "", errMalformedToken
		}
	}
	return v, nil
}

func isBase64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// BearerKind names a bearer token family by its prefix (spec: scrn_, scrnj_,
// scwa_; management tokens come with the management API).
type BearerKind string

const (
	BearerRunner       BearerKind = "runner"     // scrn_
	BearerRunnerJWT    BearerKind = "runner_jwt" // scrnj_
	BearerAppToken     BearerKind = "app"        // scwa_
	BearerAppView      BearerKind = "app_view"   // scwv_: an app's page calling its own backend as its viewer
	BearerUnrecognised BearerKind = "unrecognised"
)

var bearerPrefixes = []struct {
	prefix string
	kind   BearerKind
}{
	// Longest first: scrnj_ also starts with scrn.
	{"scrnj_", BearerRunnerJWT},
	{"scrn_", BearerRunner},
	{"scwa_", BearerAppToken},
	{"scwv_", BearerAppView},
}

// maxBearerLen bounds what is accepted as a bearer token (a JWT with claims
// fits comfortably).
const maxBearerLen = 4096

// ParseBearer reads an Authorization header value. ok is false when the
// header carries no bearer credentials at all; an error means it tried and
// is malformed.
func ParseBearer(header string) (kind BearerKind, token string, ok bool, err error) {
	if header == "" {
		return "", "", false, nil
	}
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", "", false, errMalformedToken
	}
	token = strings.TrimSpace(rest)
	if token == "" || len(token) > maxBearerLen {
		return "", "", false, errMalformedToken
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		// Token characters: base64url, JWT dots, and the prefix underscore.
		if !isBase64URL(c) && c != '.' {
			return "", "", false, errMalformedToken
		}
	}
	for _, p := range bearerPrefixes {
		if strings.HasPrefix(token, p.prefix) && len(token) > len(p.prefix) {
			return p.kind, token, true, nil
		}
	}
	return BearerUnrecognised, token, true, nil
}

// csrfToken derives the CSRF token bound to a session: an HMAC of the
// session id under the instance signing secret. It is never stored.
func csrfToken(secret []byte, sessionID string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("csrf\x00"))
	m.Write([]byte(sessionID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validCSRF reports whether header and cookie both equal the session's
// token, comparing in constant time.
func validCSRF(secret []byte, sessionID, header, cookie string) bool {
	want := []byte(csrfToken(secret, sessionID))
	return subtle.ConstantTimeCompare([]byte(header), want) == 1 &&
		subtle.ConstantTimeCompare([]byte(cookie), want) == 1
}
