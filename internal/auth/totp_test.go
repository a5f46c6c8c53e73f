package auth

import (
	"testing"
	"time"
)

// The RFC 6238 appendix B vectors (SHA-1, 8 digits, 30-second steps).
func TestTOTPVectors(t *testing.T) {
	secret := []byte("12345678901234567890")
	for _, v := range []struct {
		unix int64
		code string
	}{
		{59, "94287082"}, {1111111109, "07081804"}, {1111111111, "14050471"},
		{1234567890, "89005924"}, {2000000000, "69279037"}, {20000000000, "65353130"},
	} {
		if got := totpAt(secret, v.unix/totpStep, 8); got != v.code {
			t.Errorf("T=%d: %s, want %s", v.unix, got, v.code)
		}
	}
}

func TestCheckTOTP(t *testing.T) {
	secret := []byte("12345678901234567890")
	now := time.Unix(1111111111, 0)
	code := totpAt(secret, stepOf(now), totpDigits)
	if s := checkTOTP(secret, code, now, 0); s != stepOf(now) {
		t.Fatalf("the current code: step %d", s)
	}
	if s := checkTOTP(secret, code, now.Add(totpStep*time.Second), 0); s != stepOf(now) {
		t.Fatalf("a code from the step before: %d", s)
	}
	if s := checkTOTP(secret, code, now.Add(3*totpStep*time.Second), 0); s != 0 {
		t.Fatalf("a code three steps old: %d", s)
	}
	if s := checkTOTP(secret, code, now, stepOf(now)); s != 0 {
		t.Fatalf("a code used already: %d", s)
	}
	if s := checkTOTP(secret, "12345", now, 0); s != 0 {
		t.Fatal("a short code")
	}
}
