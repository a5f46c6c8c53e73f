package runner

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"slipway/internal/config"
	"slipway/internal/runnerapi"
)

// jwt builds a token with the runner JWT's shape (unsigned: only the hub
// verifies; a runner reads the expiry).
func jwt(t *testing.T, exp time.Time) string {
	t.Helper()
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, _ := json.Marshal(runnerapi.Claims{Subject: "r", Organization: "o", Generation: 1, Scope: "runner", IssuedAt: exp.Add(-time.Hour).Unix(), ExpiresAt: exp.Unix()})
	return runnerapi.JWTPrefix + header + "." + base64.RawURLEncoding.EncodeToString(claims) + ".c2ln"
}

func TestTokenFile(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "runner-token")

	if tok, why, err := loadToken(path, now); tok != "" || why != "" || err != nil {
		t.Fatalf("missing file = %q %q %v", tok, why, err)
	}
	good := jwt(t, now.Add(time.Hour))
	if err := saveToken(path, good); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, %v", st.Mode(), err)
	}
	if tok, why, err := loadToken(path, now); tok != good || why != "" || err != nil {
		t.Fatalf("kept token = %q %q %v", tok, why, err)
	}
	// Saving again replaces it whole, leaving no temporary file behind.
	newer := jwt(t, now.Add(2*time.Hour))
	if err := saveToken(path, newer); err != nil {
		t.Fatal(err)
	}
	if tok, _, _ := loadToken(path, now); tok != newer {
		t.Fatalf("after a second save: %q", tok)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("the state dir holds %d entries, want only the token file", len(entries))
	}

	for _, c := range []struct {
		name    string
		content string
		mode    os.FileMode
		reason  string
	}{
		{"group readable", good, 0o640, "readable by others"},
		{"world readable", good, 0o604, "readable by others"},
		{"malformed", "scrnj_not.a.jwt", 0o600, "does not hold a runner JWT"},
		{"a static token", "scrn_abc", 0o600, "does not hold a runner JWT"},
		{"expired", jwt(t, now.Add(-time.Minute)), 0o600, "expired"},
		{"about to expire", jwt(t, now.Add(10*time.Second)), 0o600, "expired"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			tok, why, err := loadToken(path, now)
			if err != nil || tok != "" || !strings.Contains(why, c.reason) {
				t.Fatalf("loadToken = %q, %q, %v; want discarded because %q", tok, why, err, c.reason)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("the discarded token file is still there: %v", err)
			}
		})
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadToken(path, now); err == nil || !strings.Contains(err.Error(), "SERVICE_RUNNER_TOKEN_FILE") {
		t.Fatalf("a directory as the token file: %v", err)
	}
}

func testConfig(hub string) *config.Runner { return &config.Runner{HubURL: hub} }
