package sshexec_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"slipway/internal/agenttest"
	"slipway/internal/executor"
	"slipway/internal/executor/executortest"
	"slipway/internal/executor/sshexec"
	"slipway/internal/executor/sshtest"
	"slipway/internal/platform/ids"
)

func newBackend(t *testing.T, srv *sshtest.Server, instance string) *sshexec.Backend {
	t.Helper()
	b, err := sshexec.New(sshexec.Config{Host: srv.Host, KeyPath: srv.KeyPath, KnownHosts: srv.KnownHosts, AgentCmd: `eval "$SLIPWAY_COMMAND"`,
		Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestConformance runs the backend suite against a real sshd on loopback.
func TestConformance(t *testing.T) {
	srv := sshtest.Start(t)
	var mu sync.Mutex // the suite runs in parallel
	instances := map[executor.Backend]string{}
	executortest.Run(t, executortest.Factory{
		New: func(t *testing.T) executor.Backend {
			inst := "runner@test-" + ids.RandomHex(4)
			b := newBackend(t, srv, inst)
			mu.Lock()
			instances[b] = inst
			mu.Unlock()
			return b
		},
		Restarted: func(t *testing.T, b executor.Backend) executor.Backend {
			mu.Lock()
			inst := instances[b]
			mu.Unlock()
			return newBackend(t, srv, inst)
		},
		Spec: func(t *testing.T, script string) executor.Spec {
			return executor.Spec{Name: "agent-" + ids.RandomHex(4), Command: []string{"/bin/sh", "-c", script}}
		},
		Alive: func(t *testing.T, _ executor.Backend, marker string) bool {
			return len(agenttest.Processes(marker)) > 0
		},
	})
}

// TestMountsGoAndComeBack: a file mount (the agent binary) is run from its
// copy; the workspace comes back with the agent's changes, deletions
// included, and the worktree's .git link untouched; a link the agent made
// pointing outside the tree is kept as a link and never written through.
func TestMountsGoAndComeBack(t *testing.T) {
	srv := sshtest.Start(t)
	b := newBackend(t, srv, "runner@mounts-"+ids.RandomHex(4))
	ws := t.TempDir()
	for name, content := range map[string]string{".git": "gitdir: /somewhere/else\n", "keep.txt": "kept\n", "gone.txt": "bye\n", "sub/a.txt": "a\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tool := filepath.Join(t.TempDir(), "tool.sh")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho tool ran in \"$(basename \"$PWD\")\"\nrm gone.txt\necho new > new.txt\nchmod +x new.txt\nln -s /etc/passwd escape\necho changed > sub/a.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := executor.Spec{Name: "m-" + ids.RandomHex(4), Command: []string{"/opt/tool.sh"}, WorkDir: "/workspace",
		Mounts: []executor.Mount{{Source: ws, Target: "/workspace"}, {Source: tool, Target: "/opt/tool.sh", ReadOnly: true}}}
	h, err := b.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	h.Stdin().Close()
	out := make([]byte, 200)
	n, _ := h.Stdout().Read(out)
	code, err := h.Wait(context.Background())
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v (%s)", code, err, out[:n])
	}
	if !strings.HasPrefix(string(out[:n]), "tool ran in m0") {
		t.Fatalf("stdout %q", out[:n])
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	if read(".git") != "gitdir: /somewhere/else\n" || read("keep.txt") != "kept\n" || read("new.txt") != "new\n" || read("sub/a.txt") != "changed\n" {
		t.Fatalf("after the run: .git %q keep %q new %q sub/a %q", read(".git"), read("keep.txt"), read("new.txt"), read("sub/a.txt"))
	}
	if _, err := os.Stat(filepath.Join(ws, "gone.txt")); !os.IsNotExist(err) {
		t.Fatalf("a file the agent deleted came back: %v", err)
	}
	if st, err := os.Stat(filepath.Join(ws, "new.txt")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("new.txt lost its mode: %v %v", st.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(ws, "escape")); err != nil || target != "/etc/passwd" {
		t.Fatalf("the link: %q %v", target, err)
	}
	if ls, err := b.Leftovers(context.Background()); err != nil || len(ls) != 0 {
		t.Fatalf("the agent's directory was left on the host: %v %v", ls, err)
	}
}

func TestConfigErrors(t *testing.T) {
	srv := sshtest.Start(t)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, c := range []struct {
		cfg  sshexec.Config
		want string
	}{
		{sshexec.Config{Host: "nohost", KeyPath: srv.KeyPath, KnownHosts: srv.KnownHosts, AgentCmd: "x"}, "SERVICE_SSH_HOST"},
		{sshexec.Config{Host: srv.Host, KeyPath: "/nope", KnownHosts: srv.KnownHosts, AgentCmd: "x"}, "SERVICE_SSH_KEY_PATH"},
		{sshexec.Config{Host: srv.Host, KeyPath: srv.KeyPath, KnownHosts: empty, AgentCmd: "x"}, "SERVICE_SSH_KNOWN_HOSTS"},
		{sshexec.Config{Host: srv.Host, KeyPath: srv.KeyPath, KnownHosts: srv.KnownHosts}, "SERVICE_SSH_EXEC_AGENT_CMD"},
	} {
		if _, err := sshexec.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	// A host key that is not the pinned one is refused.
	other := sshtest.Start(t)
	b, err := sshexec.New(sshexec.Config{Host: srv.Host, KeyPath: srv.KeyPath, KnownHosts: other.KnownHosts, AgentCmd: "true", Instance: "runner@x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Start(context.Background(), executor.Spec{Name: "x", Command: []string{"true"}}); err == nil ||
		!strings.Contains(err.Error(), "knownhosts") {
		t.Fatalf("an unpinned host key: %v", err)
	}
}
