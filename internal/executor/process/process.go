// Package process runs agents as plain child processes: for a development
// machine without a container engine only. Nothing isolates them unless
// bubblewrap is installed, so the server refuses it in production and warns
// loudly in dev.
package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"slipway/internal/executor"
)

// Backend starts agents as child processes of the hub.
type Backend struct {
	bwrap string // path of bubblewrap, "" when absent
}

// New returns the process backend; it uses bubblewrap when found on PATH.
func New() *Backend {
	path, _ := exec.LookPath("bwrap")
	return &Backend{bwrap: path}
}

// Name implements executor.Backend.
func (b *Backend) Name() string { return "process" }

// Sandboxed reports whether agents run inside bubblewrap.
func (b *Backend) Sandboxed() bool { return b.bwrap != "" }

// Cleanup has nothing to do: child processes die with their process group.
func (b *Backend) Cleanup(context.Context) error { return nil }

// hostPath maps a container path to the host through the spec's mounts.
func hostPath(p string, mounts []executor.Mount) string {
	for _, m := range mounts {
		if p == m.Target {
			return m.Source
		}
		if strings.HasPrefix(p, m.Target+"/") {
			return filepath.Join(m.Source, strings.TrimPrefix(p, m.Target+"/"))
		}
	}
	return p
}

// Start runs the spec's command with its working directory and command path
// mapped through the mounts (the process sees host paths).
func (b *Backend) Start(ctx context.Context, spec executor.Spec) (executor.Handle, error) {
	if len(spec.Command) == 0 {
		return nil, errors.New("process: empty command")
	}
	argv := append([]string{hostPath(spec.Command[0], spec.Mounts)}, spec.Command[1:]...)
	dir := hostPath(spec.WorkDir, spec.Mounts)
	home, err := os.MkdirTemp("", "slipway-agent-home-")
	if err != nil {
		return nil, err
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8"}
	for k, v := range spec.Env {
		env = append(env, k+"="+v)
	}
	if b.bwrap != "" {
		args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
			"--bind", home, home, "--bind", dir, dir, "--unshare-all", "--share-net", "--die-with-parent", "--new-session", "--chdir", dir, "--"}
		argv = append(append([]string{b.bwrap}, args...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	// Own process group (Kill ends the agent and its children) and killed if
	// the hub dies, so a crashed hub leaves no agent behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Our own pipes, not StdoutPipe: Wait closes those as soon as the process
	// exits, which would lose output still unread. With these, readers see
	// EOF only after everything written was read.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stderr, stderrW, err := os.Pipe()
	if err != nil {
		stdout.Close()
		stdoutW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdout.Close()
		stderr.Close()
		os.RemoveAll(home)
		return nil, fmt.Errorf("%w: starting %s: %v", executor.ErrUnavailable, argv[0], err)
	}
	h := &handle{cmd: cmd, stdin: stdin, stdout: stdout, stderr: stderr, home: home, done: make(chan struct{})}
	go func() {
		h.waitErr = cmd.Wait()
		os.RemoveAll(home)
		close(h.done)
	}()
	return h, nil
}

type handle struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.Reader
	stderr  io.Reader
	home    string
	done    chan struct{}
	waitErr error
	once    sync.Once
}

func (h *handle) ID() string            { return fmt.Sprintf("pid:%d", h.cmd.Process.Pid) }
func (h *handle) Stdout() io.Reader     { return h.stdout }
func (h *handle) Stderr() io.Reader     { return h.stderr }
func (h *handle) Stdin() io.WriteCloser { return h.stdin }

func (h *handle) Wait(ctx context.Context) (int, error) {
	select {
	case <-h.done:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(h.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if h.waitErr != nil {
		return -1, h.waitErr
	}
	return 0, nil
}

// killGrace is how long the agent gets to stop its own children after
// SIGTERM before its whole group is killed.
const killGrace = 3 * time.Second

// Kill asks the agent to stop (SIGTERM: it interrupts and kills the
// process groups of its scripts), then kills its whole group.
func (h *handle) Kill(context.Context) error {
	h.once.Do(func() {
		select {
		case <-h.done:
			return
		default:
		}
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-h.done:
		case <-time.After(killGrace):
		}
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	})
	return nil
}

// AgentPath implements executor.PathMapper: agents see host paths.
func (b *Backend) AgentPath(spec executor.Spec, p string) string { return hostPath(p, spec.Mounts) }
