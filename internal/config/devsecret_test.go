package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDevSecretGeneratedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(MapLookup(map[string]string{"SERVICE_DATA_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	generated, err := c.ResolveJWTSecret()
	if err != nil || !generated {
		t.Fatalf("first resolve: generated=%v err=%v", generated, err)
	}
	if len(c.JWTSecret.Reveal()) < MinJWTSecretBytes {
		t.Fatalf("secret too short: %d bytes", len(c.JWTSecret.Reveal()))
	}
	info, err := os.Stat(filepath.Join(dir, DevSecretFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", info.Mode().Perm())
	}

	again, _ := Load(MapLookup(map[string]string{"SERVICE_DATA_DIR": dir}))
	generated, err = again.ResolveJWTSecret()
	if err != nil || generated {
		t.Fatalf("second resolve: generated=%v err=%v", generated, err)
	}
	if again.JWTSecret != c.JWTSecret {
		t.Fatal("second start did not reuse the kept secret")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("data dir holds %d entries, want only the secret", len(entries))
	}
}

func TestDevSecretLoosePermissionsAreTightened(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DevSecretFile)
	if err := os.WriteFile(path, []byte(strings.Repeat("k", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	c, _ := Load(MapLookup(map[string]string{"SERVICE_DATA_DIR": dir}))
	if _, err := c.ResolveJWTSecret(); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", info.Mode().Perm())
	}
}

func TestDevSecretTooShortIsRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, DevSecretFile), []byte("short"), 0o600)
	c, _ := Load(MapLookup(map[string]string{"SERVICE_DATA_DIR": dir}))
	_, err := c.ResolveJWTSecret()
	if err == nil || !strings.HasPrefix(err.Error(), "SERVICE_JWT_SECRET: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfiguredSecretIsNotReplaced(t *testing.T) {
	dir := t.TempDir()
	c, _ := Load(MapLookup(map[string]string{"SERVICE_DATA_DIR": dir, "SERVICE_JWT_SECRET": strings.Repeat("x", 32)}))
	if generated, err := c.ResolveJWTSecret(); err != nil || generated {
		t.Fatalf("generated=%v err=%v", generated, err)
	}
	if _, err := os.Stat(filepath.Join(dir, DevSecretFile)); !os.IsNotExist(err) {
		t.Fatal("a configured secret must not write a dev secret file")
	}
}

// TestInstanceIDGeneratedOnceAndKept: without SERVICE_INSTANCE_ID a server
// gets the hostname plus a random suffix, kept in its data dir; another data
// dir on the same host gets another identity.
func TestInstanceIDGeneratedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	c := &Config{DataDir: dir}
	gen, err := c.ResolveInstanceID()
	if err != nil || !gen || !instanceIDPattern.MatchString(c.InstanceID) {
		t.Fatalf("first = %q generated=%v, %v", c.InstanceID, gen, err)
	}
	again := &Config{DataDir: dir}
	if gen, err := again.ResolveInstanceID(); err != nil || gen || again.InstanceID != c.InstanceID {
		t.Fatalf("second = %q generated=%v, %v; want the kept %q", again.InstanceID, gen, err, c.InstanceID)
	}
	other := &Config{DataDir: t.TempDir()}
	if _, err := other.ResolveInstanceID(); err != nil || other.InstanceID == c.InstanceID {
		t.Fatalf("another data dir got %q (%v), the same as %q", other.InstanceID, err, c.InstanceID)
	}
	host, _ := os.Hostname()
	if host != "" && !strings.HasPrefix(c.InstanceID, host[:min(len(host), 10)]) {
		t.Errorf("identity %q does not start with the hostname %q", c.InstanceID, host)
	}
	// A configured identity is used as it is.
	set := &Config{DataDir: dir, InstanceID: "hub-a"}
	if gen, err := set.ResolveInstanceID(); err != nil || gen || set.InstanceID != "hub-a" {
		t.Fatalf("configured = %q %v %v", set.InstanceID, gen, err)
	}
	// A damaged kept identity is refused, naming the file.
	if err := os.WriteFile(filepath.Join(dir, InstanceIDFile), []byte("bad id!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Config{DataDir: dir}).ResolveInstanceID(); err == nil || !strings.Contains(err.Error(), InstanceIDFile) {
		t.Fatalf("damaged identity: %v", err)
	}
}
