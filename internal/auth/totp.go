package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"time"
)

// TOTP (RFC 6238): HMAC-SHA1 over the 30-second time step, 6 digits.
const (
	totpStep   = 30
	totpDigits = 6
	// totpSkew is how many steps either side of now a code may be from
	// (clocks drift; people type slowly).
	totpSkew = 1
)

// totpAt is the code of a secret at a time step (RFC 4226's HOTP on the
// step), with the given number of digits.
func totpAt(secret []byte, step int64, digits int) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(step))
	mac := hmac.New(sha1.New, secret)
	mac.Write(msg[:])
	sum := mac.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	bin := (uint32(sum[off])&0x7f)<<24 | uint32(sum[off+1])<<16 | uint32(sum[off+2])<<8 | uint32(sum[off+3])
	mod := uint32(1)
	for i := 0; i < digits; i++ {
		mod *= 10
	}
	return fmt.Sprintf("%0*d", digits, bin%mod)
}

// stepOf is the time step of t.
func stepOf(t time.Time) int64 { return t.Unix() / totpStep }

// checkTOTP finds the step (within the skew, after lastStep) whose code is
// code; 0 when none matches.
func checkTOTP(secret []byte, code string, now time.Time, lastStep int64) int64 {
	if len(code) != totpDigits {
		return 0
	}
	found := int64(0)
	for s := stepOf(now) - totpSkew; s <= stepOf(now)+totpSkew; s++ {
		// Every candidate is computed and compared in constant time.
		if subtle.ConstantTimeCompare([]byte(totpAt(secret, s, totpDigits)), []byte(code)) == 1 && s > lastStep && found == 0 {
			found = s
		}
	}
	return found
}
