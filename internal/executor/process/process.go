// Package process runs agents as plain child processes, for a machine
// without a container engine: contained by the layers of package sandbox
// this host has (a per-job uid and private mounts when the server is root,
// Landlock, bubblewrap). Where none holds, the server runs only instance
// admins' code on it.
package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"slipway/internal/executor"
	"slipway/internal/executor/sandbox"
)

// Backend starts agents as child processes of the hub.
type Backend struct {
	// sessions records the session id of every agent this backend started
	// and has not seen end, so a hub that died can clean up after itself at
	// its next start ("" keeps no record).
	sessions string
	mu       sync.Mutex
	live     map[int]bool // sessions this Backend started that have not ended
	// launcher, when set, is the microvm backend's command template: the
	// agent runs in whatever the launcher starts (a microVM), which sees
	// the mounts at their targets.
	launcher string
	sb       Sandbox
	homes    string       // where agents' home directories are made
	uids     map[int]bool // job uids in use (root), by offset from UIDBase
}

// Sandbox says how agents are contained.
type Sandbox struct {
	// Helper is the slipway binary that applies the layers ("" runs agents
	// uncontained: the microvm launcher, and tests of the bare backend).
	Helper string
	Layers sandbox.Layers
}

// UIDBase is the first uid of jobs when the server is root; job uids are
// nobody's (no passwd entry) and never the same for two running jobs.
const UIDBase = 1 << 30

// maxJobs bounds the uids handed out at once.
const maxJobs = 1 << 16

// NewLauncher returns the microvm backend: each agent is the local process
// of a launcher command (SERVICE_RUNNER_MICROVM_CMD) run by sh, with
// {image}, {agent_type}, {name}, {workdir}, {mounts} and {command}
// replaced (shell-quoted; {mounts} is one word per mount,
// source:target:rw or :ro, {command} the agent's command line). The
// launcher's stdio is the agent's; it runs in its own session, is killed
// with the runner and found again after a crash like any process agent.
func NewLauncher(stateDir, template string) *Backend {
	b := New(stateDir, Sandbox{})
	b.launcher = template
	if stateDir != "" {
		b.sessions = filepath.Join(stateDir, "microvm-agents")
	}
	return b
}

// New returns the process backend, containing agents as sb says. stateDir
// keeps the record of running agents across a crash and their home
// directories ("" for none: homes go to the system's temporary directory).
// Homes that an earlier process left (it was killed) are removed here.
func New(stateDir string, sb Sandbox) *Backend {
	b := &Backend{live: map[int]bool{}, sb: sb, uids: map[int]bool{}}
	if abs, err := filepath.Abs(stateDir); err == nil && stateDir != "" {
		stateDir = abs // agents run elsewhere: their paths must not be relative
	}
	if stateDir != "" {
		b.sessions = filepath.Join(stateDir, "process-agents")
		b.homes = filepath.Join(stateDir, "agent-homes")
		os.RemoveAll(b.homes)
	}
	return b
}

// Name implements executor.Backend.
func (b *Backend) Name() string {
	if b.launcher != "" {
		return "microvm"
	}
	return "process"
}

// quote is a POSIX shell single-quoted word.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launch is the launcher's command line for spec.
func (b *Backend) launch(spec executor.Spec) []string {
	var mounts, command []string
	for _, m := range spec.Mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		mounts = append(mounts, quote(m.Source+":"+m.Target+":"+mode))
	}
	for _, a := range spec.Command {
		command = append(command, quote(a))
	}
	line := strings.NewReplacer("{image}", quote(spec.Image), "{agent_type}", quote(spec.AgentType), "{name}", quote(spec.Name),
		"{workdir}", quote(spec.WorkDir), "{mounts}", strings.Join(mounts, " "), "{command}", strings.Join(command, " ")).Replace(b.launcher)
	return []string{"/bin/sh", "-c", line}
}

// Contained reports whether this backend contains its agents: false where
// no layer holds (or no helper was given), and the server then runs only
// instance admins' code on it.
func (b *Backend) Contained() bool { return b.sb.Helper != "" && b.sb.Layers.Enforced() }

// Layers are the layers that contain this backend's agents.
func (b *Backend) Layers() sandbox.Layers { return b.sb.Layers }

// Leftovers implements executor.Backend: the sessions of agents an earlier
// process of this hub started and did not see end. Their members (scripts,
// tools) outlive a hub killed with SIGKILL, since only direct children get
// the death signal. Labels are not kept for processes.
func (b *Backend) Leftovers(context.Context) ([]executor.Leftover, error) {
	if b.sessions == "" {
		return nil, nil
	}
	b.mu.Lock()
	data, err := os.ReadFile(b.sessions)
	live := maps.Clone(b.live)
	b.mu.Unlock()
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []executor.Leftover
	for _, line := range strings.Fields(string(data)) {
		id, start, _ := strings.Cut(line, ":")
		sid, err := strconv.Atoi(id)
		if err != nil || sid <= 1 || live[sid] {
			continue
		}
		// A leader alive under another start time is a new process that
		// got the number: the recorded session has no members left (Linux
		// does not reuse a number that is still some process's session id).
		if now, ok := startTime(sid); ok && now != start {
			if err := b.record(sid, false); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, &leftover{b: b, sid: sid})
	}
	return out, nil
}

// startTime is a process's start time in clock ticks after boot (field 22
// of /proc/<pid>/stat); ok is false when the process does not exist.
func startTime(pid int) (string, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", false
	}
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(rest) < 20 {
		return "", false
	}
	return rest[19], true
}

// leftover is the session of an agent an earlier process started.
type leftover struct {
	b   *Backend
	sid int
}

func (l *leftover) ID() string                { return fmt.Sprintf("session:%d", l.sid) }
func (l *leftover) Labels() map[string]string { return nil }
func (l *leftover) Exited() (int, bool)       { return 0, false }
func (l *leftover) Output(context.Context) (io.ReadCloser, error) {
	return nil, executor.ErrNoOutput
}

// Remove kills every process left in the session and forgets it.
func (l *leftover) Remove(context.Context) error {
	if err := killSession(l.sid); err != nil {
		return err // still recorded: the next start tries again
	}
	return l.b.record(l.sid, false)
}

// record adds or removes a session in the state file (and in live, the
// sessions this Backend started).
func (b *Backend) record(sid int, add bool) error {
	if b.sessions == "" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if add {
		b.live[sid] = true
	} else {
		delete(b.live, sid)
	}
	data, err := os.ReadFile(b.sessions)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("process: reading %s: %w", b.sessions, err)
	}
	var keep []string
	for _, line := range strings.Fields(string(data)) {
		if id, _, _ := strings.Cut(line, ":"); id != strconv.Itoa(sid) {
			keep = append(keep, line)
		}
	}
	if add {
		// With the leader's start time, so that a later process that gets
		// the same number is not mistaken for it.
		start, _ := startTime(sid) // "" if it has exited already: no later holder of the number matches
		keep = append(keep, strconv.Itoa(sid)+":"+start)
	}
	if err := os.WriteFile(b.sessions, []byte(strings.Join(keep, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("process: writing %s: %w", b.sessions, err)
	}
	return nil
}

// killSession SIGKILLs every process in session sid. Linux does not hand out
// a pid that is still some process's session id, so while members remain the
// id cannot belong to anyone else. When /proc cannot be listed, only the
// leader's process group is killed, and the error says members may be left.
func killSession(sid int) error {
	entries, err := os.ReadDir("/proc") // on error, still what was read before it
	if err != nil {
		syscall.Kill(-sid, syscall.SIGKILL)
		err = fmt.Errorf("process: listing /proc to end session %d: %w", sid, err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command (which may contain spaces) start after
		// the last ')': state ppid pgrp session ...
		rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(rest) > 3 && rest[3] == strconv.Itoa(sid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return err
}

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
	if b.launcher != "" {
		argv, dir = b.launch(spec), ""
	}
	home, err := b.newHome()
	if err != nil {
		return nil, err
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8"}
	for k, v := range spec.Env {
		env = append(env, k+"="+v)
	}
	if dir == "" {
		dir = home // not the server's own working directory
	}
	job, err := b.contain(spec, argv, dir, home)
	if err != nil {
		os.RemoveAll(home)
		return nil, err
	}
	cmd := exec.Command(job.argv[0], job.argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	// Its own session (so everything it starts can be found and killed, even
	// in other process groups) and killed if the hub dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if job.uid != 0 {
		// The helper sets up its mounts in a namespace of its own (Go makes
		// it private) before it becomes the job's uid.
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS
		cmd.Dir = ""
	}
	fail := func(err error) (executor.Handle, error) {
		job.release()
		os.RemoveAll(home)
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fail(err)
	}
	// Our own pipes, not StdoutPipe: Wait closes those as soon as the process
	// exits, which would lose output still unread. With these, readers see
	// EOF only after everything written was read.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	stderr, stderrW, err := os.Pipe()
	if err != nil {
		stdout.Close()
		stdoutW.Close()
		return fail(err)
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdout.Close()
		stderr.Close()
		return fail(fmt.Errorf("%w: starting %s: %v", executor.ErrUnavailable, argv[0], err))
	}
	h := &handle{cmd: cmd, stdin: stdinPipe{stdin}, stdout: stdout, stderr: stderr, home: home, done: make(chan struct{})}
	sid := cmd.Process.Pid
	if err := b.record(sid, true); err != nil {
		// Untracked, it could outlive a crash of the hub unnoticed.
		kerr := killSession(sid)
		_ = cmd.Wait() // reaps it; its status does not matter any more
		_, rerr := fail(err)
		return nil, errors.Join(rerr, kerr)
	}
	go func() {
		h.waitErr = cmd.Wait()
		// What the agent left running dies with it. A session that stays
		// recorded (the kill or the record failed) only costs a kill at the
		// next start; the agent's result matters more.
		if killSession(sid) == nil {
			_ = b.record(sid, false)
		}
		// What it wrote in its writable mounts is the server's again.
		job.release()
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

// stdinPipe is an agent's stdin. cmd.Wait closes it once the agent has
// exited, so closing it after a quick agent ended is no error.
type stdinPipe struct{ io.WriteCloser }

func (p stdinPipe) Close() error {
	if err := p.WriteCloser.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

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
	var err error
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
		err = killSession(h.cmd.Process.Pid)
	})
	return err
}

// AgentPath implements executor.PathMapper: process agents see host paths;
// a launcher's agents see the mounts at their targets.
func (b *Backend) AgentPath(spec executor.Spec, p string) string {
	if b.launcher != "" {
		return p
	}
	return hostPath(p, spec.Mounts)
}
