package triggers

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

// FuzzParseDelivery: whatever a delivery holds, parsing it never panics,
// and what it accepts is JSON: the input is the body, and the trigger
// records the same body.
func FuzzParseDelivery(f *testing.F) {
	for _, seed := range []struct{ body, query, ctype string }{
		{`{"n": 21}`, "a=1&a=2&b=x", "application/json"},
		{``, "", ""},
		{`   `, "%zz", "text/plain"},
		{`[1, 2, {"x": null}]`, "q=%C3%A9", "application/json; charset=utf-8"},
		{`{"a":`, "", ""},
		{"\"\xff\"", "k=\xff", "\xff"},
		{`1e999`, "", ""},
		{`{"a": "x\u0000y"}`, "", ""},
		{`{"a\u0000": 1}`, "k=%00", ""},
		{`"\\u0000"`, "", ""},
	} {
		f.Add([]byte(seed.body), seed.query, seed.ctype)
	}
	f.Fuzz(func(t *testing.T, body []byte, rawQuery, ctype string) {
		q, _ := url.ParseQuery(rawQuery)
		h := http.Header{}
		h.Set("Content-Type", ctype)
		input, trigger, err := parseDelivery("t", h, q, body)
		if err != nil {
			return
		}
		if !json.Valid(input) || !json.Valid(trigger) {
			t.Fatalf("accepted %q: input %q trigger %q", body, input, trigger)
		}
		var v any
		if json.Unmarshal(trigger, &v) == nil && hasNUL(v) {
			t.Fatalf("accepted a NUL: %q %q", body, rawQuery)
		}
		var tr struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(trigger, &tr); err != nil {
			t.Fatal(err)
		}
		var a, b bytes.Buffer
		if json.Compact(&a, input) != nil || json.Compact(&b, tr.Body) != nil || a.String() != b.String() {
			t.Fatalf("the trigger's body %s is not the input %s", tr.Body, input)
		}
	})
}

// Signatures: the HMAC-SHA256 of the exact body under the secret, as
// sha256=<hex>; anything else is refused.
func TestVerify(t *testing.T) {
	const secret = "a-signing-secret-of-some-length"
	body := []byte(`{"n":21}`)
	good := "sha256=" + sign(secret, body)
	if err := verify(secret, good, body); err != nil {
		t.Fatalf("a good signature: %v", err)
	}
	for name, c := range map[string]struct {
		sig  string
		body []byte
	}{
		"missing":        {"", body},
		"tampered body":  {good, []byte(`{"n":22}`)},
		"wrong secret":   {"sha256=" + sign("another-secret-entirely", body), body},
		"no prefix":      {sign(secret, body), body},
		"sha1 prefix":    {"sha1=" + sign(secret, body), body},
		"not hex":        {"sha256=zz", body},
		"truncated":      {good[:len(good)-2], body},
		"trailing space": {good + " ", body},
	} {
		if err := verify(secret, c.sig, c.body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
