// Package sshexec is the raw-ssh-exec backend: agents run as plain
// processes on another host, reached over SSH (no container: unsandboxed,
// behind SERVICE_RUNNER_ALLOW_UNSANDBOXED). The runner keeps the worktree;
// each mount is copied to a directory of the agent's on the host before it
// starts and, when writable, copied back when it ends. The agent's stdio is
// the SSH session's. Host keys are checked against a pinned known_hosts
// file unless SERVICE_SSH_INSECURE_HOST_KEY says otherwise.
package sshexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"slipway/internal/executor"
	"slipway/internal/executor/treecopy"
)

// Config is where and how agents run.
type Config struct {
	Host            string // user@host:port
	KeyPath         string // private key
	KnownHosts      string // pinned known_hosts file
	InsecureHostKey bool
	// AgentCmd is the command line that starts an agent on the host, with
	// {image} and {agent_type} replaced (shell-quoted); $SLIPWAY_COMMAND
	// holds the agent's own command line (the built-in agent: the slipway
	// binary copied next to its workspace), so `eval "$SLIPWAY_COMMAND"`
	// runs it as the hub would.
	AgentCmd string
	// Instance is the agents' owner (runner@<id>): its agents live under
	// ~/.slipway/<instance>/ on the host and only those are ever removed.
	Instance string
}

// Backend runs agents over SSH.
type Backend struct {
	cfg    Config
	user   string
	addr   string
	client *ssh.ClientConfig
	// base is the instance's directory on the host (~/.slipway/<instance>),
	// resolved at the first connection.
	base string

	mu   sync.Mutex
	conn *ssh.Client
	live map[string]bool // agent directories started here and not yet removed
}

var _ executor.Backend = (*Backend)(nil)
var _ executor.PathMapper = (*Backend)(nil)

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// parseHost splits user@host:port (port 22 when absent).
func parseHost(s string) (user, addr string, err error) {
	user, hostport, ok := strings.Cut(s, "@")
	if !ok || user == "" || hostport == "" {
		return "", "", fmt.Errorf("SERVICE_SSH_HOST: %q is not user@host:port", s)
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		hostport = net.JoinHostPort(hostport, "22")
	}
	return user, hostport, nil
}

// New returns the backend; it connects on first use.
func New(cfg Config) (*Backend, error) {
	user, addr, err := parseHost(cfg.Host)
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(cfg.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("SERVICE_SSH_KEY_PATH: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("SERVICE_SSH_KEY_PATH: %w", err)
	}
	var hostKey ssh.HostKeyCallback
	if cfg.InsecureHostKey {
		hostKey = ssh.InsecureIgnoreHostKey()
	} else {
		if st, err := os.Stat(cfg.KnownHosts); err != nil || st.Size() == 0 {
			return nil, fmt.Errorf("SERVICE_SSH_KNOWN_HOSTS: %s is missing or empty; pin the host's key there", cfg.KnownHosts)
		}
		if hostKey, err = knownhosts.New(cfg.KnownHosts); err != nil {
			return nil, fmt.Errorf("SERVICE_SSH_KNOWN_HOSTS: %w", err)
		}
	}
	if strings.TrimSpace(cfg.AgentCmd) == "" {
		return nil, errors.New("SERVICE_SSH_EXEC_AGENT_CMD: required")
	}
	return &Backend{cfg: cfg, user: user, addr: addr,
		client: &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hostKey},
		live:   map[string]bool{}}, nil
}

// Name implements executor.Backend.
func (b *Backend) Name() string { return "raw-ssh-exec" }

// connection returns the SSH connection, dialling it when there is none or
// the last one broke.
func (b *Backend) connection(ctx context.Context) (*ssh.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != nil {
		if _, _, err := b.conn.SendRequest("keepalive@openssh.com", true, nil); err == nil {
			return b.conn, nil
		}
		b.conn.Close()
		b.conn = nil
	}
	d := net.Dialer{}
	raw, err := d.DialContext(ctx, "tcp", b.addr)
	if err != nil {
		return nil, fmt.Errorf("%w: ssh to %s: %v", executor.ErrUnavailable, b.addr, err)
	}
	c, chans, reqs, err := ssh.NewClientConn(raw, b.addr, b.client)
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("%w: ssh to %s: %v", executor.ErrUnavailable, b.addr, err)
	}
	conn := ssh.NewClient(c, chans, reqs)
	if b.base == "" {
		home, err := output(conn, `printf %s "$HOME"`)
		if err != nil || !strings.HasPrefix(home, "/") {
			conn.Close()
			return nil, fmt.Errorf("%w: ssh to %s: no home directory (%q, %v)", executor.ErrUnavailable, b.addr, home, err)
		}
		b.base = strings.TrimRight(home, "/") + "/.slipway/" + unsafeChars.ReplaceAllString(b.cfg.Instance, "_")
	}
	b.conn = conn
	return b.conn, nil
}

// output runs a short command and returns its stdout.
func output(c *ssh.Client, cmd string) (string, error) {
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.Output(cmd)
	return string(out), err
}

// dirs returns the instance's directory on the host (connecting first).
func (b *Backend) dirs(ctx context.Context) (string, error) {
	if _, err := b.connection(ctx); err != nil {
		return "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.base, nil
}

// Close ends the SSH connection.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil {
		return nil
	}
	err := b.conn.Close()
	b.conn = nil
	return err
}

// quote is a POSIX shell single-quoted word.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// run runs a command on the host, feeding stdin, and returns its stdout.
func (b *Backend) run(ctx context.Context, cmd string, stdin io.Reader, stdout io.Writer) error {
	c, err := b.connection(ctx)
	if err != nil {
		return err
	}
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	var stderr bytes.Buffer
	s.Stdin, s.Stdout, s.Stderr = stdin, stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- s.Run(cmd) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("ssh %s: %v: %s", b.addr, err, strings.TrimSpace(stderr.String()))
		}
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// mount is one mount's place on the host.
type mount struct {
	executor.Mount
	remote string // directory it was copied to
	file   string // for a file: its path there
}

func (b *Backend) place(base string, spec executor.Spec) (dir string, ms []mount) {
	dir = base + "/" + unsafeChars.ReplaceAllString(spec.Name, "_")
	for i, m := range spec.Mounts {
		mm := mount{Mount: m, remote: dir + "/m" + strconv.Itoa(i)}
		if st, err := os.Stat(m.Source); err == nil && !st.IsDir() {
			mm.file = mm.remote + "/" + filepath.Base(m.Source)
		}
		ms = append(ms, mm)
	}
	return dir, ms
}

// remotePath maps a path the agent was given (a mount's target) to where
// it is on the host.
func remotePath(p string, ms []mount) string {
	for _, m := range ms {
		if m.file != "" && p == m.Target {
			return m.file
		}
		if m.file == "" && p == m.Target {
			return m.remote
		}
		if m.file == "" && strings.HasPrefix(p, m.Target+"/") {
			return m.remote + "/" + strings.TrimPrefix(p, m.Target+"/")
		}
	}
	return p
}

// AgentPath implements executor.PathMapper: the agent sees its workspace
// at its directory on the host.
func (b *Backend) AgentPath(spec executor.Spec, p string) string {
	base, err := b.dirs(context.Background())
	if err != nil {
		return p // Start fails the same way
	}
	_, ms := b.place(base, spec)
	return remotePath(p, ms)
}

// Start copies the mounts to the host and starts the agent there.
func (b *Backend) Start(ctx context.Context, spec executor.Spec) (executor.Handle, error) {
	if len(spec.Command) == 0 {
		return nil, errors.New("raw-ssh-exec: empty command")
	}
	base, err := b.dirs(ctx)
	if err != nil {
		return nil, err
	}
	dir, ms := b.place(base, spec)
	if err := b.run(ctx, "rm -rf "+quote(dir)+" && mkdir -p "+quote(dir), nil, io.Discard); err != nil {
		return nil, fmt.Errorf("%w: %v", executor.ErrUnavailable, err)
	}
	b.mu.Lock()
	b.live[path.Base(dir)] = true
	b.mu.Unlock()
	fail := func(err error) (executor.Handle, error) {
		b.remove(context.WithoutCancel(ctx), dir, "")
		return nil, err
	}
	for _, m := range ms {
		if err := b.upload(ctx, m); err != nil {
			return fail(fmt.Errorf("raw-ssh-exec: copying %s to the host: %w", m.Target, err))
		}
	}
	argv := make([]string, len(spec.Command))
	for i, a := range spec.Command {
		argv[i] = quote(remotePath(a, ms))
	}
	line := strings.NewReplacer("{image}", quote(spec.Image), "{agent_type}", quote(spec.AgentType)).Replace(b.cfg.AgentCmd)
	env := []string{"SLIPWAY_COMMAND=" + quote(strings.Join(argv, " "))}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+quote(spec.Env[k]))
	}
	workdir := dir
	if spec.WorkDir != "" {
		workdir = remotePath(spec.WorkDir, ms)
	}
	// The session's shell leads its own process group (sshd starts it in a
	// new session); its pid, kept in the agent's directory, kills the agent
	// and everything it started.
	script := "echo $$ > " + quote(dir+"/pid") + " && cd " + quote(workdir) + " && exec env " + strings.Join(env, " ") + " sh -c " + quote(line)

	c, err := b.connection(ctx)
	if err != nil {
		return fail(err)
	}
	s, err := c.NewSession()
	if err != nil {
		return fail(err)
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return fail(err)
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return fail(err)
	}
	stderr, err := s.StderrPipe()
	if err != nil {
		s.Close()
		return fail(err)
	}
	if err := s.Start(script); err != nil {
		s.Close()
		return fail(fmt.Errorf("%w: starting the agent on %s: %v", executor.ErrUnavailable, b.addr, err))
	}
	h := &handle{b: b, s: s, dir: dir, ms: ms, stdin: stdin, stdout: stdout, stderr: stderr, done: make(chan struct{})}
	go h.wait()
	return h, nil
}

func (b *Backend) upload(ctx context.Context, m mount) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(treecopy.Tar(pw, m.Source)) }()
	return b.run(ctx, "mkdir -p "+quote(m.remote)+" && tar -x -f - -C "+quote(m.remote), pr, io.Discard)
}

// download brings a writable mount's tree back into its source.
func (b *Backend) download(ctx context.Context, m mount) error {
	incoming := m.Source + ".incoming"
	if err := os.RemoveAll(incoming); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	extracted := make(chan error, 1)
	go func() {
		err := treecopy.Extract(pr, incoming, "")
		if err == nil {
			_, _ = io.Copy(io.Discard, pr) // tar pads its last record
		}
		pr.CloseWithError(err)
		extracted <- err
	}()
	err := b.run(ctx, "tar -c -f - -C "+quote(m.remote)+" .", nil, pw)
	pw.CloseWithError(err)
	if xerr := <-extracted; err == nil {
		err = xerr
	}
	if err != nil {
		os.RemoveAll(incoming)
		return err
	}
	// A worktree's .git link stays the runner's own.
	return treecopy.Replace(m.Source, incoming, ".git")
}

// remove kills an agent's process group (when pid is "", the one its
// directory records) and removes its directory on the host.
func (b *Backend) remove(ctx context.Context, dir, pid string) error {
	kill := `p=$(cat ` + quote(dir+"/pid") + ` 2>/dev/null); [ -n "$p" ] && kill -KILL -- -"$p" 2>/dev/null; `
	if pid != "" {
		kill = "kill -KILL -- -" + pid + " 2>/dev/null; "
	}
	err := b.run(ctx, kill+"rm -rf "+quote(dir), nil, io.Discard)
	if err == nil {
		b.mu.Lock()
		delete(b.live, path.Base(dir))
		b.mu.Unlock()
	}
	return err
}

type handle struct {
	b      *Backend
	s      *ssh.Session
	dir    string
	ms     []mount
	stdin  io.WriteCloser
	stdout io.Reader
	stderr io.Reader

	done    chan struct{}
	code    int
	err     error
	killed  bool
	mu      sync.Mutex
	cleaned bool
}

func (h *handle) ID() string            { return h.b.addr + ":" + h.dir }
func (h *handle) Stdout() io.Reader     { return h.stdout }
func (h *handle) Stderr() io.Reader     { return h.stderr }
func (h *handle) Stdin() io.WriteCloser { return h.stdin }

var signals = map[ssh.Signal]int{ssh.SIGHUP: 1, ssh.SIGINT: 2, ssh.SIGQUIT: 3, ssh.SIGILL: 4, ssh.SIGABRT: 6, ssh.SIGFPE: 8, ssh.SIGKILL: 9,
	ssh.SIGSEGV: 11, ssh.SIGPIPE: 13, ssh.SIGALRM: 14, ssh.SIGTERM: 15, ssh.SIGUSR1: 10, ssh.SIGUSR2: 12}

// wait waits for the agent's end, then brings its writable mounts back
// (unless it was killed) and removes its directory.
func (h *handle) wait() {
	err := h.s.Wait()
	var ee *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		h.code = ee.ExitStatus()
		if sig := ssh.Signal(ee.Signal()); sig != "" {
			h.code = 128 + signals[sig]
			if n, ok := signals[sig]; !ok || n == 0 {
				h.code = 128 + int(syscall.SIGKILL)
			}
		}
	default:
		h.err = fmt.Errorf("raw-ssh-exec: the session with %s ended: %w", h.b.addr, err)
	}
	h.mu.Lock()
	killed := h.killed
	h.mu.Unlock()
	ctx := context.Background()
	if !killed && h.err == nil {
		for _, m := range h.ms {
			if m.ReadOnly || m.file != "" {
				continue
			}
			if err := h.b.download(ctx, m); err != nil {
				h.err = fmt.Errorf("raw-ssh-exec: copying %s back from the host: %w", m.Target, err)
				break
			}
		}
	}
	h.cleanup(ctx)
	close(h.done)
}

func (h *handle) cleanup(ctx context.Context) error {
	h.mu.Lock()
	if h.cleaned {
		h.mu.Unlock()
		return nil
	}
	h.cleaned = true
	h.mu.Unlock()
	err := h.b.remove(ctx, h.dir, "")
	h.s.Close()
	return err
}

// Wait implements executor.Handle.
func (h *handle) Wait(ctx context.Context) (int, error) {
	select {
	case <-h.done:
		return h.code, h.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Kill implements executor.Handle: the agent's process group is killed and
// its directory removed; nothing is copied back.
func (h *handle) Kill(ctx context.Context) error {
	h.mu.Lock()
	h.killed = true
	h.mu.Unlock()
	select {
	case <-h.done:
		return nil
	default:
	}
	if err := h.b.remove(context.WithoutCancel(ctx), h.dir, ""); err != nil {
		return err
	}
	h.s.Close()
	return nil
}

// Leftovers implements executor.Backend: the agent directories of this
// instance on the host that this Backend did not start.
func (b *Backend) Leftovers(ctx context.Context) ([]executor.Leftover, error) {
	base, err := b.dirs(ctx)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := b.run(ctx, "mkdir -p "+quote(base)+" && ls -1 "+quote(base), nil, &out); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var ls []executor.Leftover
	for _, name := range strings.Fields(out.String()) {
		if b.live[name] {
			continue
		}
		ls = append(ls, &leftover{b: b, dir: base + "/" + name})
	}
	return ls, nil
}

type leftover struct {
	b   *Backend
	dir string
}

func (l *leftover) ID() string                { return l.b.addr + ":" + l.dir }
func (l *leftover) Labels() map[string]string { return nil }
func (l *leftover) Exited() (int, bool)       { return 0, false }
func (l *leftover) Output(context.Context) (io.ReadCloser, error) {
	return nil, executor.ErrNoOutput
}
func (l *leftover) Remove(ctx context.Context) error { return l.b.remove(ctx, l.dir, "") }
