package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"slipway/internal/platform/ids"
)

// DevSecretFile is the file in the data directory that keeps the generated
// dev signing secret across restarts.
const DevSecretFile = "jwt-secret"

// ResolveJWTSecret fills JWTSecret in dev mode when it was not configured:
// it reads the secret kept in the data directory or generates and keeps one
// (mode 0600). It reports whether a new secret was generated. In production
// the secret is always configured (Load refuses otherwise).
func (c *Config) ResolveJWTSecret() (generated bool, err error) {
	if c.JWTSecret != "" {
		return false, nil
	}
	if c.IsProd() {
		return false, errors.New("SERVICE_JWT_SECRET: required in production")
	}
	path := filepath.Join(c.DataDir, DevSecretFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		s := strings.TrimSpace(string(b))
		if len(s) < MinJWTSecretBytes {
			return false, fmt.Errorf("SERVICE_JWT_SECRET: the kept dev secret %s is shorter than %d bytes; delete it to generate a new one", path, MinJWTSecretBytes)
		}
		if info, statErr := os.Stat(path); statErr == nil && info.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return false, fmt.Errorf("SERVICE_JWT_SECRET: %s is readable by others and cannot be restricted: %w", path, err)
			}
		}
		c.JWTSecret = Secret(s)
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		s := ids.RandomHex(32)
		// Write a temp file, then hard-link it into place: the link either
		// creates a complete file or fails because another process won the race.
		tmp, err := os.CreateTemp(c.DataDir, ".jwt-secret-*")
		if err != nil {
			return false, fmt.Errorf("SERVICE_JWT_SECRET: cannot keep a dev secret in %s: %w", c.DataDir, err)
		}
		defer os.Remove(tmp.Name())
		_, werr := tmp.WriteString(s + "\n")
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(tmp.Name(), 0o600)
		}
		if werr != nil {
			return false, fmt.Errorf("SERVICE_JWT_SECRET: writing a dev secret in %s: %w", c.DataDir, werr)
		}
		if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
			return c.ResolveJWTSecret()
		} else if err != nil {
			return false, fmt.Errorf("SERVICE_JWT_SECRET: keeping the dev secret at %s: %w", path, err)
		}
		c.JWTSecret = Secret(s)
		return true, nil
	default:
		return false, fmt.Errorf("SERVICE_JWT_SECRET: reading the dev secret %s: %w", path, err)
	}
}

// InstanceIDFile keeps the generated instance identity in the data dir.
const InstanceIDFile = "instance-id"

// ResolveInstanceID fills InstanceID when SERVICE_INSTANCE_ID is not set:
// the identity kept in the data directory, or a new one (the hostname plus
// a random suffix) kept there. Two servers on one host, each with its own
// data directory, so never share an identity (one would take the other's
// containers and work for its own). It reports whether one was generated.
func (c *Config) ResolveInstanceID() (generated bool, err error) {
	if c.InstanceID != "" {
		return false, nil
	}
	path := filepath.Join(c.DataDir, InstanceIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if !instanceIDPattern.MatchString(id) {
			return false, fmt.Errorf("SERVICE_INSTANCE_ID: the kept identity in %s is not valid; delete the file to generate a new one", path)
		}
		c.InstanceID = id
		return false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("SERVICE_INSTANCE_ID: reading %s: %w", path, err)
	}
	host, _ := os.Hostname() // "" on error, and then "slipway" below
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, host)
	host = strings.Trim(host, ".-_")
	if len(host) > 48 {
		host = host[:48]
	}
	if host == "" {
		host = "slipway"
	}
	id := host + "-" + ids.RandomHex(3)
	tmp, err := os.CreateTemp(c.DataDir, ".instance-id-*")
	if err != nil {
		return false, fmt.Errorf("SERVICE_INSTANCE_ID: cannot keep an identity in %s: %w", c.DataDir, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		tmp.Close()
		return false, fmt.Errorf("SERVICE_INSTANCE_ID: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("SERVICE_INSTANCE_ID: writing %s: %w", tmp.Name(), err)
	}
	// A hard link either creates the complete file or finds one another
	// process made first; then that one is the identity.
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return c.ResolveInstanceID()
	} else if err != nil {
		return false, fmt.Errorf("SERVICE_INSTANCE_ID: keeping the identity at %s: %w", path, err)
	}
	c.InstanceID = id
	return true, nil
}
