// Package agenttest gives execution tests real parts: the slipway binary
// (built statically, so it also runs inside agent containers), bare git
// repositories, and the offline test image on a real Docker engine.
package agenttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"slipway/internal/platform/db/dbtest"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns a statically linked slipway binary built from this tree,
// once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		// CI builds it once for every package (.ci/run); a test process
		// builds its own otherwise.
		if prebuilt := os.Getenv("SLIPWAY_TEST_BINARY"); prebuilt != "" {
			if _, err := os.Stat(prebuilt); err != nil {
				buildErr = err
			}
			buildPath = prebuilt
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "slipway-agent-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "slipway")
		// Without DWARF (-w): it links in about half the time, and nothing
		// debugs it.
		cmd := exec.Command("go", "build", "-ldflags=-w", "-o", buildPath, "./cmd/slipway")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("agenttest: building slipway: %v", buildErr)
	}
	return buildPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// Git runs git in dir and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// BareRepo makes a bare repository whose main branch has one commit with
// the given files (path → content).
func BareRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	bare := filepath.Join(dir, "origin.git")
	seed := filepath.Join(dir, "seed")
	Git(t, "", "init", "-q", "--bare", "-b", "main", bare)
	Git(t, "", "init", "-q", "-b", "main", seed)
	if len(files) == 0 {
		files = map[string]string{"README.md": "hello\n"}
	}
	for p, c := range files {
		full := filepath.Join(seed, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, seed, "add", ".")
	Git(t, seed, "-c", "user.name=seed", "-c", "user.email=seed@example.test", "commit", "-q", "-m", "initial commit")
	Git(t, seed, "push", "-q", bare, "main")
	return bare
}

// TestImage is the offline busybox image .ci/docker-up builds.
const TestImage = "slipway-test-busybox:latest"

// DockerHost returns SERVICE_TEST_DOCKER_HOST, skipping the test without
// it (failing instead when SERVICE_TEST_REQUIRE lists docker).
func DockerHost(t testing.TB) string {
	t.Helper()
	h := os.Getenv("SERVICE_TEST_DOCKER_HOST")
	if h == "" {
		if dbtest.Required("docker") {
			t.Fatal("SERVICE_TEST_REQUIRE lists docker but SERVICE_TEST_DOCKER_HOST is not set")
		}
		t.Skip("container tests need SERVICE_TEST_DOCKER_HOST (see .ci/docker-up)")
	}
	return h
}

// Processes lists the live (not zombie) processes whose command line holds
// s: what a test sees of agents and scripts run by the process backend.
func Processes(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), s) {
			continue
		}
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(stat), ") Z ") {
			continue
		}
		out = append(out, e.Name())
	}
	return out
}
