// Package sshtest starts a real OpenSSH server on loopback for the tests of
// the SSH backends: its own host key, an authorized client key, and a
// known_hosts file pinning it.
package sshtest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/db/dbtest"
)

func setEnv(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return "SetEnv " + strings.Join(env, " ") + "\n"
}

// Server is a running sshd.
type Server struct {
	Host       string // user@127.0.0.1:port
	KeyPath    string // the client's private key
	KnownHosts string // pins the server's host key
	Port       int
}

// Start runs sshd -D on a free loopback port until the test ends; env
// (NAME=value) is set in every session. It skips the test when sshd is not
// installed (fails when SERVICE_TEST_REQUIRE lists sshd).
func Start(t testing.TB, env ...string) *Server {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	if _, err := os.Stat(sshd); err != nil {
		if dbtest.Required("sshd") {
			t.Fatal("SERVICE_TEST_REQUIRE lists sshd but OpenSSH's sshd is not installed")
		}
		t.Skip("SSH backend tests need OpenSSH's sshd (apt-get install openssh-server)")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host", "client"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	clientPub, _ := os.ReadFile(filepath.Join(dir, "client.pub"))
	hostPub, _ := os.ReadFile(filepath.Join(dir, "host.pub"))
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	auth := write("authorized_keys", string(clientPub))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// Privilege separation wants its empty directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	cfg := write("sshd_config", fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers %s
LogLevel ERROR
%s`, port, filepath.Join(dir, "host"), auth, filepath.Join(dir, "sshd.pid"), u.Username, setEnv(env)))
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfg)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen: %v\n%s", err, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	fields := strings.Fields(string(hostPub))
	known := write("known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, fields[0], fields[1]))
	return &Server{Host: fmt.Sprintf("%s@127.0.0.1:%d", u.Username, port), KeyPath: filepath.Join(dir, "client"), KnownHosts: known, Port: port}
}
