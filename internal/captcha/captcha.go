// Package captcha is a proof-of-work captcha with no third party: the
// server mints a challenge signed with an HMAC (nothing is stored), the
// browser searches for a number that makes the challenge's SHA-256 start
// with enough zero bits, and the solved envelope is spent once (its nonce
// is kept until the challenge expires, so every replica refuses a replay).
//
// A solved envelope is asked for where an anonymous caller makes the server
// send mail (reset, verify, magic link) and lifts a sign-in throttle for
// one attempt.
package captcha

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
)

// Defaults: 18 zero bits take a browser about a quarter of a second
// (262,144 hashes on average); a challenge is good for five minutes.
const (
	DefaultDifficulty = 18
	TTL               = 5 * time.Minute
	version           = "v1"
	nonceBytes        = 16
)

// Errors the HTTP layer maps to 400.
var (
	ErrDisabled  = apperr.BadRequest("captcha is not enabled on this server (no SERVICE_CAPTCHA_SECRET)")
	ErrMalformed = apperr.BadRequest("the captcha envelope is malformed: challenge must be one minted by GET /api/auth/captcha/challenge and solution a decimal number")
)

// Challenge is what a browser solves.
type Challenge struct {
	Challenge  string    `json:"challenge" doc:"Opaque and signed; send it back unchanged"`
	Algorithm  string    `json:"algorithm" enum:"sha256" doc:"The hash to search with"`
	Difficulty int       `json:"difficulty" doc:"Find a decimal solution so that SHA-256(challenge + \":\" + solution) starts with this many zero bits"`
	ExpiresAt  time.Time `json:"expires_at" doc:"Solve and use it before then; each challenge is accepted once"`
}

// Envelope is a solved challenge, as sent with a request.
type Envelope struct {
	Challenge string `json:"challenge" minLength:"1" maxLength:"200"`
	Solution  string `json:"solution" minLength:"1" maxLength:"20" pattern:"^[0-9]+$" doc:"Decimal digits"`
}

// Service mints and checks challenges. A nil key disables it.
type Service struct {
	db         *db.DB
	clock      clock.Clock
	key        []byte
	difficulty int
}

// New builds the captcha; an empty secret leaves it disabled. difficulty
// (zero bits, 1-32) defaults to DefaultDifficulty.
func New(d *db.DB, clk clock.Clock, secret []byte, difficulty int) *Service {
	if difficulty <= 0 {
		difficulty = DefaultDifficulty
	}
	var key []byte
	if len(secret) > 0 {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("slipway captcha " + version))
		key = m.Sum(nil)
	}
	return &Service{db: d, clock: clk, key: key, difficulty: difficulty}
}

// Enabled reports whether a secret is configured.
func (s *Service) Enabled() bool { return s != nil && s.key != nil }

// Mint makes a fresh challenge.
func (s *Service) Mint() (Challenge, error) {
	if !s.Enabled() {
		return Challenge{}, ErrDisabled
	}
	nonce := make([]byte, nonceBytes)
	if _, err := rand.Read(nonce); err != nil {
		return Challenge{}, fmt.Errorf("captcha: %w", err)
	}
	expires := s.clock.Now().Add(TTL).Truncate(time.Second)
	body := fmt.Sprintf("%s.%d.%d.%s", version, s.difficulty, expires.Unix(), hex.EncodeToString(nonce))
	return Challenge{Challenge: body + "." + s.sign(body), Algorithm: "sha256", Difficulty: s.difficulty, ExpiresAt: expires.UTC()}, nil
}

func (s *Service) sign(body string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// parsed is a well-formed envelope.
type parsed struct {
	body, mac  string
	difficulty int
	expires    time.Time
	nonce      string
}

func parse(e Envelope) (parsed, error) {
	parts := strings.Split(e.Challenge, ".")
	if len(parts) != 5 || parts[0] != version || len(e.Solution) == 0 || len(e.Solution) > 20 {
		return parsed{}, ErrMalformed
	}
	for _, c := range e.Solution {
		if c < '0' || c > '9' {
			return parsed{}, ErrMalformed
		}
	}
	d, err1 := strconv.Atoi(parts[1])
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	nonce, err3 := hex.DecodeString(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || d < 1 || d > 32 || len(nonce) != nonceBytes {
		return parsed{}, ErrMalformed
	}
	return parsed{body: strings.Join(parts[:4], "."), mac: parts[4], difficulty: d, expires: time.Unix(exp, 0), nonce: parts[3]}, nil
}

// valid checks signature, expiry and work (not whether it was spent).
func (s *Service) valid(p parsed, e Envelope, now time.Time) bool {
	if !hmac.Equal([]byte(p.mac), []byte(s.sign(p.body))) || !now.Before(p.expires) {
		return false
	}
	return ZeroBits(e.Challenge, e.Solution) >= p.difficulty
}

// ZeroBits counts the leading zero bits of SHA-256(challenge ":" solution).
func ZeroBits(challenge, solution string) int {
	sum := sha256.Sum256([]byte(challenge + ":" + solution))
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// Solve finds a solution, as the console's script does (tests use it).
func Solve(c Challenge) string {
	for i := uint64(0); ; i++ {
		sol := strconv.FormatUint(i, 10)
		if ZeroBits(c.Challenge, sol) >= c.Difficulty {
			return sol
		}
	}
}

// Check answers whether an envelope is a good, unspent solution without
// spending it (POST /api/auth/captcha/verify). ErrDisabled or ErrMalformed
// otherwise.
func (s *Service) Check(ctx context.Context, e Envelope) (bool, error) {
	if !s.Enabled() {
		return false, ErrDisabled
	}
	p, err := parse(e)
	if err != nil {
		return false, err
	}
	if !s.valid(p, e, s.clock.Now()) {
		return false, nil
	}
	spent, err := isSpent(ctx, s.db.R, p.nonce)
	if err != nil {
		return false, fmt.Errorf("captcha: check: %w", err)
	}
	return !spent, nil
}

// Spend accepts a good, unspent solution once, across replicas: of two
// requests carrying the same envelope, one passes.
func (s *Service) Spend(ctx context.Context, e Envelope) (bool, error) {
	if !s.Enabled() {
		return false, ErrDisabled
	}
	p, err := parse(e)
	if err != nil {
		return false, err
	}
	now := s.clock.Now()
	if !s.valid(p, e, now) {
		return false, nil
	}
	spent, err := spend(ctx, s.db.W, p.nonce, p.expires)
	if err != nil {
		return false, fmt.Errorf("captcha: spend: %w", err)
	}
	return spent, nil
}

// Prune forgets the nonces of expired challenges (they no longer pass
// anyway); every replica runs it hourly.
func (s *Service) Prune(ctx context.Context) (int, error) {
	if s.db == nil {
		return 0, nil
	}
	n, err := pruneSpent(ctx, s.db.W, s.clock.Now())
	if err != nil {
		return 0, fmt.Errorf("captcha: prune: %w", err)
	}
	return n, nil
}
