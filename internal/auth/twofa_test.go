package auth_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// code is an independent RFC 6238 implementation (SHA-1, 6 digits, 30 s)
// for the test's authenticator.
func code(t *testing.T, b32 string, at time.Time) string {
	t.Helper()
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(b32)
	if err != nil {
		t.Fatal(err)
	}
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(at.Unix()/30))
	m := hmac.New(sha1.New, secret)
	m.Write(msg[:])
	s := m.Sum(nil)
	o := s[19] & 0x0f
	v := (uint32(s[o])&0x7f)<<24 | uint32(s[o+1])<<16 | uint32(s[o+2])<<8 | uint32(s[o+3])
	return fmt.Sprintf("%06d", v%1000000)
}

func TestTwoFactor(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		ann := app.Approved(admin, "Ann Twofa")

		// The profile says whether two-factor sign-in is on (the console
		// shows the form that fits), through the session cache too.
		twoFactor := func(want bool) {
			t.Helper()
			if r := ann.Do("GET", "/api/me", nil); r.Status != 200 || !strings.Contains(string(r.Body), fmt.Sprintf(`"two_factor":%v`, want)) {
				t.Fatalf("me, two_factor %v wanted: %d %s", want, r.Status, r.Body)
			}
		}
		twoFactor(false)
		r := ann.Do("POST", "/api/me/2fa/enroll", nil)
		if r.Status != 200 {
			t.Fatalf("enroll: %d %s", r.Status, r.Body)
		}
		var enr struct{ Secret, URI string }
		r.JSON(t, &enr)
		app.Remember(enr.Secret)
		if len(enr.Secret) < 32 || !strings.HasPrefix(enr.URI, "otpauth://totp/Slipway:") || !strings.Contains(enr.URI, "secret="+enr.Secret) {
			t.Fatalf("enrollment %+v", enr)
		}
		var sealed string
		app.DB.R.QueryRow(`SELECT totp_pending FROM users WHERE id = $1`, ann.ID).Scan(&sealed)
		if sealed == "" || strings.Contains(sealed, enr.Secret) {
			t.Fatalf("the pending secret at rest: %q", sealed)
		}
		if r := ann.Do("POST", "/api/me/2fa/confirm", map[string]any{"code": "000000"}); r.Status != 400 {
			t.Fatalf("a wrong confirm: %d", r.Status)
		}
		r = ann.Do("POST", "/api/me/2fa/confirm", map[string]any{"code": code(t, enr.Secret, time.Now())})
		if r.Status != 200 {
			t.Fatalf("confirm: %d %s", r.Status, r.Body)
		}
		var rc struct {
			RecoveryCodes []string `json:"recovery_codes"`
		}
		r.JSON(t, &rc)
		app.Remember(rc.RecoveryCodes...)
		if len(rc.RecoveryCodes) != 10 || rc.RecoveryCodes[0] == rc.RecoveryCodes[1] {
			t.Fatalf("recovery codes %v", rc.RecoveryCodes)
		}
		if r := ann.Do("POST", "/api/me/2fa/enroll", nil); r.Status != 409 {
			t.Fatalf("enrolling while armed: %d", r.Status)
		}
		twoFactor(true)

		// A right password now asks for the second factor, with no session.
		login := func() (*apitest.Client, string) {
			c := app.Anonymous()
			r := c.Do("POST", "/api/auth/login", map[string]any{"email": ann.Email, "password": ann.Password})
			var body struct {
				TOTPRequired bool   `json:"totp_required"`
				TOTPToken    string `json:"totp_token"`
			}
			r.JSON(t, &body)
			if r.Status != 200 || !body.TOTPRequired || body.TOTPToken == "" || c.SessionToken() != "" {
				t.Fatalf("login with 2FA armed: %d %s", r.Status, r.Body)
			}
			app.Remember(body.TOTPToken)
			return c, body.TOTPToken
		}
		verify := func(c *apitest.Client, tok, code string) *apitest.Response {
			return c.Do("POST", "/api/auth/2fa/verify", map[string]any{"token": tok, "code": code})
		}
		c, tok := login()
		if r := c.Do("GET", "/api/me", nil); r.Status != 401 {
			t.Fatalf("me before the second factor: %d", r.Status)
		}
		if r := verify(c, tok, "000000"); r.Status != 400 {
			t.Fatalf("a wrong code: %d", r.Status)
		}
		// The confirm used this step's code: the next one signs in (a code
		// is accepted once, so the confirm's cannot be replayed).
		confirmed := code(t, enr.Secret, time.Now())
		if r := verify(c, tok, confirmed); r.Status != 400 {
			t.Fatalf("the confirm's code again: %d", r.Status)
		}
		next := code(t, enr.Secret, time.Now().Add(30*time.Second))
		if r := verify(c, tok, next); r.Status != 200 || c.SessionToken() == "" {
			t.Fatalf("the right code: %d %s", r.Status, r.Body)
		}
		app.Remember(c.SessionToken(), c.CSRFToken())
		if r := c.Do("GET", "/api/me", nil); r.Status != 200 {
			t.Fatalf("me after the second factor: %d", r.Status)
		}
		c2, tok2 := login()
		if r := verify(c2, tok2, next); r.Status != 400 {
			t.Fatalf("a code used once already: %d", r.Status)
		}

		// A recovery code works once, even when raced. (The sign-ins come
		// first, one by one: attempts are counted before they are checked,
		// so six at once would find the account's throttle full.)
		var wg sync.WaitGroup
		statuses := make([]int, 6)
		for i := range statuses {
			cc, tk := login()
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = verify(cc, tk, rc.RecoveryCodes[0]).Status
				app.Remember(cc.SessionToken(), cc.CSRFToken())
			}()
		}
		wg.Wait()
		won := 0
		for _, s := range statuses {
			if s == 200 {
				won++
			}
		}
		if won != 1 {
			t.Fatalf("%d sign-ins with one recovery code: %v", won, statuses)
		}
		app.DB.W.Exec(`DELETE FROM auth_failures`) // the losers counted as failures

		// Interim tokens are signed and short-lived.
		for _, bad := range []string{"s2fa_forged", tok + "x", "nope"} {
			if r := verify(app.Anonymous(), bad, code(t, enr.Secret, time.Now())); r.Status != http.StatusUnauthorized {
				t.Fatalf("interim %q: %d", bad, r.Status)
			}
		}
		// Wrong codes count toward the throttle.
		c3, tok3 := login()
		for i := 0; i < 5; i++ {
			verify(c3, tok3, fmt.Sprintf("%06d", i))
		}
		if r := verify(c3, tok3, rc.RecoveryCodes[2]); r.Status != 429 {
			t.Fatalf("after five wrong codes: %d", r.Status)
		}
		app.DB.W.Exec(`DELETE FROM auth_failures`)

		// Disable needs a valid code; afterwards a password signs in.
		if r := ann.Do("POST", "/api/me/2fa/disable", map[string]any{"code": "000000"}); r.Status != 400 {
			t.Fatalf("disable with a wrong code: %d", r.Status)
		}
		if r := ann.Do("POST", "/api/me/2fa/disable", map[string]any{"code": rc.RecoveryCodes[1]}); r.Status != 200 {
			t.Fatalf("disable: %d %s", r.Status, r.Body)
		}
		twoFactor(false)
		r = app.Anonymous().Do("POST", "/api/auth/login", map[string]any{"email": ann.Email, "password": ann.Password})
		if r.Status != 200 || !strings.Contains(string(r.Body), `"totp_required":false`) {
			t.Fatalf("login after disabling: %d %s", r.Status, r.Body)
		}
	})
}
