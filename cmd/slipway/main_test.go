package main

// These tests run the real binary: built once (with -tags e2e, which adds
// only a deliberately slow route), started as a child process, driven over
// real HTTP and signalled like an orchestrator would.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var binary string

// The long tests (crashes, replicas, runners) run in parallel: each starts
// its own processes on port 0 with its own data directories and databases,
// and tells its agents apart by a marker of its own. Most of their time is
// spent waiting on processes, so overlapping them shortens CI. Tests that
// restart a hub on a port chosen beforehand (freePort) stay serial: a
// parallel server could take the port in between. freePort picks below
// the kernel's ephemeral range, so servers on port 0 in other packages'
// test processes cannot take it either.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slipway-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "slipway")
	build := exec.Command("go", "build", "-tags", "e2e", "-ldflags=-w", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binary:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running slipway process.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
	err    error
}

func (p *proc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

var listenRe = regexp.MustCompile(`msg=listening addr=\S*:(\d+)`)

// start runs `slipway serve` in dir with exactly env (plus PATH and HOME)
// and waits until it listens.
func start(t *testing.T, dir string, env ...string) *proc {
	t.Helper()
	return spawn(t, dir, "serve", listenRe, env...)
}

// spawn runs `slipway <command>` in dir with exactly env (plus PATH, HOME
// and a free port) and waits for a log line matching ready; its first
// group, if any, is the port it listens on.
func spawn(t *testing.T, dir, command string, ready *regexp.Regexp, env ...string) *proc {
	t.Helper()
	return spawnAs(t, nil, binary, dir, command, ready, env...)
}

// spawnAs is spawn of another binary, as another user when cred is set.
func spawnAs(t *testing.T, cred *syscall.Credential, bin, dir, command string, ready *regexp.Regexp, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, command)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SERVER_PORT=0"}, env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	// A pipe of our own, not StderrPipe: Wait closes that one as soon as the
	// process exits, and the last lines (why it exited) would be lost.
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	err = cmd.Start()
	w.Close()
	if err != nil {
		stderr.Close()
		t.Fatal(err)
	}
	read := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		defer close(read)
		defer stderr.Close()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.out.WriteString(line + "\n")
			p.mu.Unlock()
			if m := ready.FindStringSubmatch(line); m != nil {
				a := ""
				if len(m) > 1 {
					a = "127.0.0.1:" + m[1]
				}
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		// Every line it wrote is in p.out, unless a child that outlives it
		// holds its stderr open.
		select {
		case <-read:
		case <-time.After(2 * time.Second):
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
	})
	select {
	case p.addr = <-addr:
	case <-p.exited:
		t.Fatalf("slipway %s exited before it was ready: %v\n%s", command, p.err, p.logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("slipway %s was not ready within 30s\n%s", command, p.logs())
	}
	return p
}

func (p *proc) url(path string) string { return "http://" + p.addr + path }

// status GETs path on a fresh connection; 0 means the connection failed.
func (p *proc) status(path string) int {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(p.url(path))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (p *proc) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.status("/readyz") != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("not ready within 30s\n%s", p.logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("slipway did not exit\n%s", p.logs())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// TestFreshStartAndRestart: no configuration at all (only a port, so tests
// can run side by side) is a working instance; the second start reuses the
// data dir, database and secret.
func TestFreshStartAndRestart(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir)
	p.waitReady(t)
	for _, f := range []string{"data/slipway.db", "data/jwt-secret"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s not created: %v", f, err)
		}
	}
	secret, _ := os.ReadFile(filepath.Join(dir, "data/jwt-secret"))
	if !strings.Contains(p.logs(), "migration applied") || !strings.Contains(p.logs(), "first boot") {
		t.Fatalf("first start did not migrate:\n%s", p.logs())
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	// The dev default load-balancer delay is 5 s; a second signal skips it.
	time.Sleep(100 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.logs())
	}

	p = start(t, dir)
	p.waitReady(t)
	logs := p.logs()
	if strings.Contains(logs, "migration applied") || strings.Contains(logs, "first boot") || strings.Contains(logs, "generated a signing secret") {
		t.Fatalf("second start redid first-start work:\n%s", logs)
	}
	if !strings.Contains(logs, "applied_now=0") {
		t.Fatalf("second start did not report an up-to-date database:\n%s", logs)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "data/jwt-secret"))
	if !bytes.Equal(secret, again) {
		t.Fatal("the dev secret changed between starts")
	}
}

// event is an observation with the time it was made.
type event struct {
	name string
	at   time.Time
}

type timeline struct {
	mu     sync.Mutex
	events []event
}

func (tl *timeline) add(name string) {
	tl.mu.Lock()
	tl.events = append(tl.events, event{name, time.Now()})
	tl.mu.Unlock()
}

func (tl *timeline) order(t *testing.T, want ...string) {
	t.Helper()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var got []string
	for _, e := range tl.events {
		got = append(got, e.name)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("observed %v, want %v", got, want)
	}
}

// slowRequest starts GET /e2e/slow and returns once the server has begun
// answering (headers received), so the request is in flight. done receives
// the body, or an error, when it ends.
func slowRequest(t *testing.T, p *proc, ms int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		resp, err := http.Get(p.url(fmt.Sprintf("/e2e/slow?ms=%d", ms)))
		close(started)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && string(b) != "started\nfinished\n" {
			err = fmt.Errorf("truncated body %q", b)
		}
		done <- err
	}()
	<-started
	return done
}

// watch records readiness turning 503 and the listener closing.
func watch(p *proc, tl *timeline, stop <-chan struct{}) {
	saw503 := false
	for {
		select {
		case <-stop:
			return
		default:
		}
		switch s := p.status("/readyz"); {
		case s == 503 && !saw503:
			saw503 = true
			tl.add("readiness 503")
		case s == 0:
			c, err := net.DialTimeout("tcp", p.addr, time.Second)
			if err != nil {
				tl.add("listener closed")
				return
			}
			c.Close()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSIGTERMDuringSlowRequests: after SIGTERM readiness turns 503, a
// request that ends within the load-balancer delay completes, the listener
// closes, a request that outlives the delay still completes within the
// grace period, and the process exits 0, in that order.
func TestSIGTERMDuringSlowRequests(t *testing.T) {
	p := start(t, t.TempDir(), "SERVICE_SHUTDOWN_LB_DELAY_SECS=2", "SERVICE_SHUTDOWN_GRACE_SECS=10")
	p.waitReady(t)
	tl := &timeline{}
	short := slowRequest(t, p, 1000)
	long := slowRequest(t, p, 4000)
	p.cmd.Process.Signal(syscall.SIGTERM)
	stop := make(chan struct{})
	go watch(p, tl, stop)
	if err := <-short; err != nil {
		t.Fatalf("short in-flight request: %v", err)
	}
	tl.add("short request completed")
	if err := <-long; err != nil {
		t.Fatalf("long in-flight request: %v", err)
	}
	tl.add("long request completed")
	code := p.wait(t)
	tl.add("exit")
	close(stop)
	if code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.logs())
	}
	tl.order(t, "readiness 503", "short request completed", "listener closed", "long request completed", "exit")
}

// TestSIGTERMGraceExpires: a request longer than the grace period is cut
// off; the process still exits 0 and says so.
func TestSIGTERMGraceExpires(t *testing.T) {
	p := start(t, t.TempDir(), "SERVICE_SHUTDOWN_LB_DELAY_SECS=0", "SERVICE_SHUTDOWN_GRACE_SECS=1")
	p.waitReady(t)
	done := slowRequest(t, p, 20000)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.logs())
	}
	if err := <-done; err == nil {
		t.Fatal("a request longer than the grace period completed")
	}
	if !strings.Contains(p.logs(), "outlived the grace period") {
		t.Fatalf("no log line about the cut-off request:\n%s", p.logs())
	}
}

// TestConfigErrorsAtBoot: the binary refuses to start, one line per problem.
func TestConfigErrorsAtBoot(t *testing.T) {
	cmd := exec.Command(binary, "serve")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "MODE=prod", "SERVER_PORT=abc"}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{"PUBLIC_URL", "SERVER_PORT", "SERVICE_JWT_SECRET", "SERVICE_INITIAL_ADMIN_EMAILS"}
	if len(lines) != len(want) {
		t.Fatalf("want %d lines, got:\n%s", len(want), out)
	}
	for i, name := range want {
		if !strings.HasPrefix(lines[i], "slipway: configuration: "+name+": ") {
			t.Errorf("line %d = %q, want it to name %s", i, lines[i], name)
		}
	}
	if _, err := os.Stat(filepath.Join(cmd.Dir, "data")); !os.IsNotExist(err) {
		t.Fatal("a refused boot created the data dir")
	}
}

func TestMigrateCommands(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (string, int) {
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	out, code := run("migrate", "status")
	if code != 0 || !strings.Contains(out, "pending  00001  00001_instance.sql") || !strings.Contains(out, "0 applied, ") {
		t.Fatalf("status before up (%d):\n%s", code, out)
	}
	out, code = run("migrate", "up")
	if code != 0 || !strings.Contains(out, "applied  00001  00001_instance.sql") {
		t.Fatalf("up (%d):\n%s", code, out)
	}
	out, code = run("migrate", "status")
	if code != 0 || !strings.Contains(out, "applied  00001  00001_instance.sql") || !strings.Contains(out, " applied, 0 pending") {
		t.Fatalf("status after up (%d):\n%s", code, out)
	}
	if out, code = run("migrate", "sideways"); code != 2 {
		t.Fatalf("bad subcommand exit %d:\n%s", code, out)
	}
	out, code = run("--help")
	for _, c := range []string{"serve", "migrate up", "migrate status", "openapi", "version"} {
		if code != 0 || !strings.Contains(out, c) {
			t.Fatalf("--help lacks %q (%d):\n%s", c, code, out)
		}
	}
	out, code = run("openapi", "--out", "specs")
	if code != 0 {
		t.Fatalf("openapi (%d):\n%s", code, out)
	}
	for _, f := range []string{"specs/public.json", "specs/management.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("openapi did not write %s", f)
		}
	}
}

// TestUsersCreate bootstraps an admin offline, then signs in to the server
// started on the same data dir.
func TestUsersCreate(t *testing.T) {
	dir := t.TempDir()
	create := func(stdin string, args ...string) (string, int) {
		cmd := exec.Command(binary, append([]string{"users", "create"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SERVICE_ARGON2_MEMORY_KIB=64", "SERVICE_ARGON2_TIME=1"}
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	if out, code := create("short\n", "--email", "root@example.test", "--admin"); code != 1 || !strings.Contains(out, "too short") {
		t.Fatalf("weak password: %d %s", code, out)
	}
	if out, code := create("offline-bootstrap-pw\n", "--admin"); code != 2 || !strings.Contains(out, "--email") {
		t.Fatalf("missing email: %d %s", code, out)
	}
	out, code := create("offline-bootstrap-pw\n", "--email", "Root@Example.test", "--admin", "--name", "Root")
	if code != 0 || !strings.Contains(out, "created root@example.test") || !strings.Contains(out, "admin=true") {
		t.Fatalf("create: %d %s", code, out)
	}
	if out, code := create("offline-bootstrap-pw\n", "--email", "root@example.test"); code != 1 || !strings.Contains(out, "exists") {
		t.Fatalf("duplicate: %d %s", code, out)
	}
	if strings.Contains(out, "offline-bootstrap-pw") {
		t.Fatal("the password was echoed")
	}

	p := start(t, dir, "SERVICE_ARGON2_MEMORY_KIB=64", "SERVICE_ARGON2_TIME=1")
	p.waitReady(t)
	resp, err := http.Post(p.url("/api/auth/login"), "application/json",
		strings.NewReader(`{"email":"root@example.test","password":"offline-bootstrap-pw"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"approved":true`) || !strings.Contains(string(body), `"is_admin":true`) ||
		!strings.Contains(string(body), `"display_name":"Root"`) {
		t.Fatalf("login = %d %s", resp.StatusCode, body)
	}
}

// TestCrashDuringTask kills the server (SIGKILL) while an agent runs; the
// agent dies with it, and the next start runs the task again and finishes
// it, with an event saying why.
func TestCrashDuringTask(t *testing.T) {
	dir := t.TempDir()
	bare := filepath.Join(dir, "origin.git")
	seed := filepath.Join(dir, "seed")
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", bare}, {"init", "-q", "-b", "main", seed}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(seed, "README.md"), []byte("hello\n"), 0o644)
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}, {"push", "-q", bare, "main"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = seed
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	// The agent leaves a marker outside its worktree, which a sandbox
	// forbids: no sandbox (the admin's own workspace may run code then).
	env := []string{"SERVICE_AGENT_BACKEND=process", "SERVICE_PROCESS_SANDBOX=off", "SERVICE_INITIAL_ADMIN_EMAILS=root@example.test",
		"SERVICE_ARGON2_MEMORY_KIB=64", "SERVICE_ARGON2_TIME=1", "SERVICE_INSTANCE_ID=crash-test", "SERVICE_SHUTDOWN_LB_DELAY_SECS=0"}
	p := start(t, dir, env...)
	p.waitReady(t)
	c := newAPIClient(t, p)
	c.post("/api/auth/register", `{"email":"root@example.test","password":"correct-horse-battery","display_name":"Root"}`, 202)
	c.post("/api/auth/login", `{"email":"root@example.test","password":"correct-horse-battery"}`, 200)
	project := c.id(c.post("/api/projects", `{"name":"demo","repo_url":"`+bare+`","autodev":true}`, 201))
	// The first run blocks until the marker file exists; the second finds it.
	marker := filepath.Join(dir, "second-run")
	sleeper := fmt.Sprintf("sleep %d", 600+time.Now().UnixNano()%1000) // recognisable in /proc
	prompt := `if [ -e ` + marker + ` ]; then echo again >> README.md; else touch ` + marker + `; echo waiting; ` + sleeper + `; fi`
	body, _ := json.Marshal(map[string]string{"project_id": project, "prompt": prompt})
	task := c.id(c.post("/api/tasks", string(body), 201))
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(c.get("/api/tasks/"+task+"/events"), "waiting") {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never started:\n%s", p.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The agent's home and temporary directory, which the crash leaves.
	homes, _ := os.ReadDir(filepath.Join(dir, "data", "agent-homes"))
	if len(homes) != 1 {
		t.Fatalf("agent homes while the agent runs: %v", homes)
	}
	crashedHome := filepath.Join(dir, "data", "agent-homes", homes[0].Name())

	p.cmd.Process.Kill() // no graceful anything
	p.wait(t)
	if _, err := os.Stat(crashedHome); err != nil {
		t.Fatalf("the crash took the agent's home along already: %v", err)
	}

	p = start(t, dir, env...)
	p.waitReady(t)
	c.base = p.url("")
	// Swept at the boot.
	if _, err := os.Stat(crashedHome); !os.IsNotExist(err) {
		t.Fatalf("the crashed agent's home is still there after the restart: %v", err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		got := c.get("/api/tasks/" + task)
		if strings.Contains(got, `"status":"done_pr"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart the task is %s\n%s", got, c.get("/api/tasks/"+task+"/events"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if events := c.get("/api/tasks/" + task + "/events"); !strings.Contains(events, "the server running this task stopped; it runs again") {
		t.Fatalf("no recovery event:\n%s", events)
	}
	out, _ := exec.Command("git", "-C", bare, "log", "--all", "--format=%s").CombinedOutput()
	if !strings.Contains(string(out), "if [ -e") {
		t.Fatalf("the task's commit is not in the repository:\n%s", out)
	}
	// Nothing of the crashed server's agent survives: its script was killed
	// when the agent died, and the sleep it started at the next boot.
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), sleeper) && !strings.Contains(string(stat), ") Z ") {
			t.Fatalf("process %s (%s) outlived the crashed server", e.Name(), sleeper)
		}
	}
}

// apiClient is a cookie-holding client for the e2e tests.
type apiClient struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newAPIClient(t *testing.T, p *proc) *apiClient {
	jar, _ := cookiejar.New(nil)
	return &apiClient{t: t, base: p.url(""), http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (c *apiClient) do(method, path, body string, want int) string {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if c.csrf != "" {
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if want != 0 && resp.StatusCode != want {
		c.t.Fatalf("%s %s = %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "service_csrf" {
			c.csrf = ck.Value
		}
	}
	return string(b)
}

func (c *apiClient) post(path, body string, want int) string { return c.do("POST", path, body, want) }
func (c *apiClient) get(path string) string                  { return c.do("GET", path, "", 200) }

func (c *apiClient) id(body string) string {
	c.t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.ID == "" {
		c.t.Fatalf("no id in %s", body)
	}
	return v.ID
}
