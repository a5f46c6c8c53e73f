package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// SSH is how to reach a Docker engine on another host (the ssh-docker
// backend): the system ssh client runs `docker system dial-stdio` there,
// with host keys checked against the pinned known_hosts file by ssh itself.
type SSH struct {
	Host       string // user@host:port
	KnownHosts string
	KeyPath    string // optional: else ssh's own configuration and agent
}

// args is the ssh command line that connects to the engine.
func (s SSH) args() ([]string, error) {
	user, hostport, ok := strings.Cut(s.Host, "@")
	if !ok || user == "" || hostport == "" {
		return nil, fmt.Errorf("SERVICE_SSH_HOST: %q is not user@host:port", s.Host)
	}
	host, port := hostport, "22"
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("SERVICE_SSH_HOST: bad port in %q", s.Host)
	}
	args := []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + s.KnownHosts,
		"-o", "ServerAliveInterval=15", "-p", port, "-l", user}
	if s.KeyPath != "" {
		args = append(args, "-i", s.KeyPath, "-o", "IdentitiesOnly=yes")
	}
	return append(args, "--", host, "docker", "system", "dial-stdio"), nil
}

// NewOverSSH returns a backend whose engine is reached over SSH. Its agents'
// mounts are copied in and out (the engine does not see this machine's
// files).
func NewOverSSH(s SSH, instance, network string) (*Backend, error) {
	if instance == "" {
		return nil, errors.New("docker: the instance label value is required")
	}
	if st, err := os.Stat(s.KnownHosts); err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("SERVICE_SSH_KNOWN_HOSTS: %s is missing or empty; pin the host's key there", s.KnownHosts)
	}
	args, err := s.args()
	if err != nil {
		return nil, err
	}
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		return nil, fmt.Errorf("SERVICE_RUNNER_EXECUTION_BACKEND=ssh-docker: the ssh client is not installed: %w", err)
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return dialSSH(sshPath, args) }
	cli, err := client.New(client.WithHost("http://docker-over-ssh"), client.WithDialContext(dial), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker: client over ssh to %s: %w", s.Host, err)
	}
	b := build(cli, instance, network)
	b.remote = true
	b.host = "ssh://" + s.Host
	return b, nil
}

// dialSSH starts ssh and speaks HTTP over its stdio.
func dialSSH(sshPath string, args []string) (net.Conn, error) {
	cmd := exec.Command(sshPath, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of our own for its output, not StdoutPipe: Wait (which runs
	// as soon as ssh starts, to learn how it ended) closes StdoutPipe's
	// read end when ssh exits, and output still unread in the pipe then
	// fails with "file already closed". Our read end stays open until the
	// connection closes, so a reader drains it to EOF.
	out, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	stderr := &tail{}
	cmd.Stderr = stderr
	err = cmd.Start()
	w.Close() // ssh holds its own copy
	if err != nil {
		out.Close()
		return nil, err
	}
	c := &cmdConn{cmd: cmd, in: in, out: out, stderr: stderr, done: make(chan struct{})}
	go func() { c.waitErr = cmd.Wait(); close(c.done) }()
	return c, nil
}

// cmdConn is a net.Conn over a command's stdio.
type cmdConn struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     io.ReadCloser
	stderr  *tail
	done    chan struct{}
	waitErr error
	once    sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if err == io.EOF && n == 0 {
		select {
		case <-c.done:
			if c.waitErr != nil {
				return 0, fmt.Errorf("ssh: %v: %s", c.waitErr, c.stderr.String())
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
	return n, err
}
func (c *cmdConn) Write(p []byte) (int, error) { return c.in.Write(p) }

// CloseWrite ends the input (an agent's stdin end travels this way).
func (c *cmdConn) CloseWrite() error { return c.in.Close() }

func (c *cmdConn) Close() error {
	c.once.Do(func() {
		c.in.Close()
		c.cmd.Process.Kill()
		go func() { <-c.done; c.out.Close() }() // once ssh is gone: nothing more comes
	})
	return nil
}
func (c *cmdConn) LocalAddr() net.Addr                { return dummyAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr               { return dummyAddr{} }
func (c *cmdConn) SetDeadline(t time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(t time.Time) error { return nil }

type dummyAddr struct{}

func (dummyAddr) Network() string { return "ssh" }
func (dummyAddr) String() string  { return "ssh" }

// tail keeps the last bytes ssh wrote to stderr, for error messages.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
