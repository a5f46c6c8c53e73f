package apps

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// An app's page runs sandboxed (a unique origin): it cannot use the
// viewer's session. To call its own backend as its viewer, each HTML page
// served to a member carries a view token (scwv_) in a meta tag: signed by
// the instance, naming the app, the viewer and an expiry, good for that
// app's backend calls and run submissions only, and checked like a session
// (the viewer must still be a member of the app's workspace).

// ViewTokenPrefix starts every view token.
const ViewTokenPrefix = "scwv_"

// ViewTokenTTL is how long a page's view token works.
const ViewTokenTTL = 8 * time.Hour

func (s *Service) viewMAC(payload string) []byte {
	m := hmac.New(sha256.New, s.Secret)
	m.Write([]byte("app-view:" + payload))
	return m.Sum(nil)
}

// viewToken mints a view token for a viewer of an app.
func (s *Service) viewToken(appID, userID string, now time.Time) string {
	payload := appID + "." + userID + "." + strconv.FormatInt(now.Add(ViewTokenTTL).Unix(), 10)
	return ViewTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(s.viewMAC(payload))
}

// viewer reads a view token for an app: its viewer's id, or "" when the
// token is forged, another app's or expired.
func (s *Service) viewer(token, appID string, now time.Time) string {
	body, ok := strings.CutPrefix(token, ViewTokenPrefix)
	if !ok {
		return ""
	}
	p64, m64, ok := strings.Cut(body, ".")
	if !ok {
		return ""
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.viewMAC(string(payload))) {
		return ""
	}
	parts := strings.Split(string(payload), ".")
	if len(parts) != 3 || parts[0] != appID {
		return ""
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || now.Unix() >= exp {
		return ""
	}
	return parts[1]
}

// withViewToken puts the app's id and the viewer's token into an HTML
// page, first thing in its head: the page's script reads them from
// <meta name="slipway-app-id"> and <meta name="slipway-view-token">.
func withViewToken(page []byte, appID, token string) []byte {
	tags := `<meta name="slipway-app-id" content="` + html.EscapeString(appID) + `"><meta name="slipway-view-token" content="` +
		html.EscapeString(token) + `">`
	at := 0
	if i := bytes.Index(bytes.ToLower(page[:min(len(page), 4096)]), []byte("<head")); i >= 0 {
		if j := bytes.IndexByte(page[i:], '>'); j >= 0 {
			at = i + j + 1
		}
	}
	out := make([]byte, 0, len(page)+len(tags))
	out = append(out, page[:at]...)
	out = append(out, tags...)
	return append(out, page[at:]...)
}

// SandboxCORS lets an app's sandboxed page (its origin is "null") call the
// routes its view token is good for: any origin may, with no credentials
// (the token is the credential; cookies are never read from such a
// request). Other requests pass through untouched.
func SandboxCORS(isAppRoute func(string) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "null" || !isAppRoute(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		// Never a session: the page's token stands alone.
		r.Header.Del("Cookie")
		next.ServeHTTP(w, r)
	})
}
