package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slipway/internal/runnerapi"
	"strings"
	"time"
)

// expiryMargin: a kept token this close to its expiry is treated as expired
// (it would lapse before the first refresh).
const expiryMargin = 30 * time.Second

// loadToken reads the kept JWT. A token the runner must not use comes back
// "" with the reason it was discarded (the file is removed): group- or
// world-readable, malformed, or expired. A missing file is "" with no
// reason.
func loadToken(path string, now time.Time) (token, discarded string, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
	}
	switch {
	case !st.Mode().IsRegular():
		return "", "", fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %s is not a regular file", path)
	case st.Mode().Perm()&0o077 != 0:
		discarded = fmt.Sprintf("it is readable by others (mode %04o; it must be 0600)", st.Mode().Perm())
	default:
		data, err := os.ReadFile(path)
		if err != nil {
			return "", "", fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
		}
		token = strings.TrimSpace(string(data))
		c, perr := runnerapi.ParseClaims(token)
		switch {
		case perr != nil:
			discarded = "it does not hold a runner JWT"
		case !now.Add(expiryMargin).Before(time.Unix(c.ExpiresAt, 0)):
			discarded = "its token expired at " + time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339)
		default:
			return token, "", nil
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: removing a discarded token: %w", err)
	}
	return "", discarded, nil
}

// saveToken writes the token atomically with mode 0600: a temporary file
// in the same directory, synced, then renamed over the old one, so a crash
// leaves the old token or the new one, never half of one.
func saveToken(path, token string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
	}
	f, err := os.CreateTemp(dir, ".runner-token-*")
	if err != nil {
		return fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("SERVICE_RUNNER_TOKEN_FILE: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename itself survives a crash
		d.Close()
	}
	return nil
}
