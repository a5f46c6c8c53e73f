package process_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"slipway/internal/agenttest"
	"slipway/internal/executor"
	"slipway/internal/executor/executortest"
	"slipway/internal/executor/process"
	"slipway/internal/executor/sandbox"
)

// factory runs the suite on backends that newBackend makes on a state
// directory (a restart: another one on the same directory).
func factory(newBackend func(stateDir string) *process.Backend) executortest.Factory {
	var mu sync.Mutex
	dirs := map[executor.Backend]string{}
	return executortest.Factory{
		New: func(t *testing.T) executor.Backend {
			dir := t.TempDir()
			b := newBackend(dir)
			mu.Lock()
			dirs[b] = dir
			mu.Unlock()
			return b
		},
		Restarted: func(t *testing.T, b executor.Backend) executor.Backend {
			mu.Lock()
			defer mu.Unlock()
			return newBackend(dirs[b])
		},
		Spec: func(t *testing.T, script string) executor.Spec {
			return executor.Spec{Name: "conformance", Command: []string{"/bin/sh", "-c", script}}
		},
		Alive: func(t *testing.T, _ executor.Backend, marker string) bool {
			return len(agenttest.Processes(marker)) > 0
		},
	}
}

// TestConformance runs the backend suite on the process backend, bare and
// contained by every layer this host has.
func TestConformance(t *testing.T) {
	t.Run("bare", func(t *testing.T) {
		executortest.Run(t, factory(func(dir string) *process.Backend { return process.New(dir, process.Sandbox{}) }))
	})
	t.Run("contained", func(t *testing.T) {
		sb := process.Sandbox{Helper: agenttest.Binary(t), Layers: sandbox.Detect(sandbox.ModeAuto)}
		if !sb.Layers.Enforced() {
			t.Skip("this host has no sandbox layer")
		}
		t.Logf("layers: %s", sb.Layers)
		executortest.Run(t, factory(func(dir string) *process.Backend { return process.New(dir, sb) }))
	})
}

// fakeVM stands in for a microVM launcher: it runs the command with every
// mount target in its arguments and working directory replaced by the
// mount's source (what a VM sharing the mounts at their targets would see).
const fakeVM = `#!/bin/bash
workdir=$1; shift
maps=()
while [ "$1" != "--" ]; do maps+=("$1"); shift; done
shift
args=("$@")
for m in "${maps[@]}"; do
  src=${m%%:*}; rest=${m#*:}; dst=${rest%%:*}
  for i in "${!args[@]}"; do args[$i]=${args[$i]//"$dst"/"$src"}; done
  workdir=${workdir//"$dst"/"$src"}
done
[ -n "$workdir" ] && cd "$workdir"
exec "${args[@]}"
`

// TestLauncherConformance runs the suite on the microvm backend with a
// stand-in launcher.
func TestLauncherConformance(t *testing.T) {
	launcher := filepath.Join(t.TempDir(), "fake-vm")
	if err := os.WriteFile(launcher, []byte(fakeVM), 0o755); err != nil {
		t.Fatal(err)
	}
	template := launcher + " {workdir} {mounts} -- {command}"
	executortest.Run(t, factory(func(dir string) *process.Backend { return process.NewLauncher(dir, template) }))
}

// TestLauncherTemplate: every placeholder is filled, shell-quoted.
func TestLauncherTemplate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "args")
	b := process.NewLauncher(t.TempDir(), `printf '%s\n' {image} {agent_type} {name} {workdir} {mounts} -- {command} > `+out)
	h, err := b.Start(context.Background(), executor.Spec{Name: "vm-1", Image: "img:1 'x'", AgentType: "shell", WorkDir: "/workspace",
		Command: []string{"/usr/local/bin/slipway", "agent"},
		Mounts:  []executor.Mount{{Source: "/data/wt", Target: "/workspace"}, {Source: "/bin/slipway", Target: "/usr/local/bin/slipway", ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Stdin().Close()
	if code, err := h.Wait(context.Background()); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	got, _ := os.ReadFile(out)
	want := "img:1 'x'\nshell\nvm-1\n/workspace\n/data/wt:/workspace:rw\n/bin/slipway:/usr/local/bin/slipway:ro\n--\n/usr/local/bin/slipway\nagent\n"
	if string(got) != want {
		t.Fatalf("launcher saw\n%s\nwant\n%s", got, want)
	}
	if b.Name() != "microvm" {
		t.Fatalf("name %q", b.Name())
	}
}
