package docker

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"slipway/internal/executor"
	"slipway/internal/executor/executortest"
	"slipway/internal/executor/sshtest"
	"slipway/internal/platform/db/dbtest"
)

// DockerHostEnv names the engine the container tests use.
const DockerHostEnv = "SERVICE_TEST_DOCKER_HOST"

// testImage is built offline by .ci/docker-up (docker import of a busybox
// rootfs); no registry is reachable.
const testImage = "slipway-test-busybox:latest"

// testNetwork is shared by the tests of every package (the engine has room
// for a few dozen bridge networks only). It is never removed: the packages'
// tests run in parallel processes, and removing it when this one ends failed
// the containers another package was starting (the backend creates it when
// it is missing).
const testNetwork = "slipway-test-agents"

// timeout is generous: nothing here is a timing assertion.
const timeout = 2 * time.Minute

// engine returns the test engine's address, skipping the test without one
// (failing it when SERVICE_TEST_REQUIRE lists docker).
func engine(t *testing.T) string {
	t.Helper()
	host := os.Getenv(DockerHostEnv)
	if host == "" {
		if dbtest.Required("docker") {
			t.Fatalf("SERVICE_TEST_REQUIRE lists docker but %s is not set (run .ci/docker-up)", DockerHostEnv)
		}
		t.Skipf("container tests need %s (run .ci/docker-up)", DockerHostEnv)
	}
	return host
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newBackend returns a backend with an instance label of its own, so that
// its Cleanup can only ever see this test's containers; the test fails if
// one is left behind.
func newBackend(t *testing.T) *Backend {
	t.Helper()
	host := engine(t)
	b, err := New(host, "test@"+t.Name()+"-"+randomSuffix(t), testNetwork)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.cli.ImageInspect(ctx, testImage); err != nil {
		t.Fatalf("test image %s: %v (run .ci/docker-up)", testImage, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		left := b.containers(t, ctx)
		if err := removeLeftovers(ctx, b); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if !t.Failed() && len(left) > 0 {
			t.Errorf("containers left behind: %v", left)
		}
		_ = b.Close()
	})
	return b
}

// removeLeftovers removes what Leftovers lists.
func removeLeftovers(ctx context.Context, b *Backend) error {
	ls, err := b.Leftovers(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.Remove(ctx))
	}
	return errors.Join(errs...)
}

// containers lists every container (running or not) with this backend's
// instance label.
func (b *Backend) containers(t *testing.T, ctx context.Context) []string {
	t.Helper()
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", executor.InstanceLabel+"="+b.instance),
	})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, shortID(c.ID))
	}
	return ids
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

var testLimits = executor.Limits{
	MemoryBytes:    96 << 20,
	NanoCPUs:       500_000_000,
	PidsLimit:      64,
	ReadOnlyRootFS: true,
	TmpfsTmpMB:     16,
	TmpfsRunMB:     4,
	TmpfsHomeMB:    8,
	Network:        testNetwork,
}

func shSpec(t *testing.T, script string) executor.Spec {
	return executor.Spec{
		Name:    "slipway-test-" + randomSuffix(t),
		Image:   testImage,
		Command: []string{"sh", "-c", script},
		Limits:  testLimits,
	}
}

func start(t *testing.T, b *Backend, spec executor.Spec) executor.Handle {
	t.Helper()
	h, err := b.Start(testContext(t), spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Kill(context.Background()); err != nil {
			t.Errorf("kill: %v", err)
		}
	})
	return h
}

type output struct{ stdout, stderr string }

// collect reads both streams to their end, concurrently.
func collect(h executor.Handle) <-chan output {
	ch := make(chan output, 1)
	go func() {
		errc := make(chan string, 1)
		go func() { b, _ := io.ReadAll(h.Stderr()); errc <- string(b) }()
		b, _ := io.ReadAll(h.Stdout())
		ch <- output{stdout: string(b), stderr: <-errc}
	}()
	return ch
}

// run starts the script, closes its stdin, and returns its output and exit
// code.
func run(t *testing.T, b *Backend, spec executor.Spec) (output, int) {
	t.Helper()
	h := start(t, b, spec)
	if err := h.Stdin().Close(); err != nil {
		t.Fatalf("close stdin: %v", err)
	}
	out := collect(h)
	code, err := h.Wait(testContext(t))
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	select {
	case o := <-out:
		return o, code
	case <-time.After(timeout):
		t.Fatal("output did not end after the agent exited")
	}
	return output{}, 0
}

// alive reports whether one of the backend's containers runs a command
// holding marker.
func alive(t *testing.T, b executor.Backend, marker string) bool {
	list, err := b.(*Backend).cli.ContainerList(context.Background(), client.ContainerListOptions{
		Filters: make(client.Filters).Add("label", executor.InstanceLabel+"="+b.(*Backend).instance),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if strings.Contains(c.Command, marker) {
			return true
		}
	}
	return false
}

// TestConformance runs the backend suite on a real engine.
func TestConformance(t *testing.T) {
	executortest.Run(t, executortest.Factory{
		New: func(t *testing.T) executor.Backend { return newBackend(t) },
		Restarted: func(t *testing.T, b executor.Backend) executor.Backend {
			again, err := New(engine(t), b.(*Backend).instance, testNetwork)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = again.Close() })
			return again
		},
		Spec:  func(t *testing.T, script string) executor.Spec { return shSpec(t, script) },
		Alive: alive,
	})
}

// TestConformanceOverSSH runs the suite on the same engine reached the
// ssh-docker way: the system ssh client to a real sshd on loopback, `docker
// system dial-stdio` there, and every mount copied in and out.
func TestConformanceOverSSH(t *testing.T) {
	host := engine(t)
	srv := sshtest.Start(t, "DOCKER_HOST="+host)
	over := func(t *testing.T, instance string) *Backend {
		b, err := NewOverSSH(SSH{Host: srv.Host, KnownHosts: srv.KnownHosts, KeyPath: srv.KeyPath}, instance, testNetwork)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = removeLeftovers(context.Background(), b)
			_ = b.Close()
		})
		return b
	}
	executortest.Run(t, executortest.Factory{
		New:       func(t *testing.T) executor.Backend { return over(t, "test@ssh-"+randomSuffix(t)) },
		Restarted: func(t *testing.T, b executor.Backend) executor.Backend { return over(t, b.(*Backend).instance) },
		Spec:      func(t *testing.T, script string) executor.Spec { return shSpec(t, script) },
		Alive:     alive,
	})
}

func TestExitCodeIsReportedAndContainerRemoved(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	h := start(t, b, shSpec(t, `echo bye; exit 7`))
	out := collect(h)
	code, err := h.Wait(testContext(t))
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
	if o := <-out; o.stdout != "bye\n" {
		t.Errorf("stdout %q", o.stdout)
	}
	if _, err := b.cli.ContainerInspect(testContext(t), h.ID(), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("container still there after Wait (inspect error %v)", err)
	}
	// Wait again and Kill after Wait are harmless.
	if code, err := h.Wait(testContext(t)); code != 7 || err != nil {
		t.Errorf("second Wait: %d, %v", code, err)
	}
	if err := h.Kill(testContext(t)); err != nil {
		t.Errorf("Kill after Wait: %v", err)
	}
}

func TestBindMountIsWritableAndOwnedByTheHubUser(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	work := t.TempDir()
	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "in.txt"), []byte("input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := shSpec(t, `echo written > out.txt && cat /ro/in.txt && if echo x > /ro/x 2>/dev/null; then echo "ro is writable"; fi; pwd`)
	spec.WorkDir = "/workspace"
	spec.Mounts = []executor.Mount{{Source: work, Target: "/workspace"}, {Source: ro, Target: "/ro", ReadOnly: true}}
	out, code := run(t, b, spec)
	if code != 0 {
		t.Fatalf("exit code %d; stderr %q", code, out.stderr)
	}
	if out.stdout != "input\n/workspace\n" {
		t.Errorf("stdout %q", out.stdout)
	}
	assertOwnedBy(t, filepath.Join(work, "out.txt"), b.uid, b.gid, "written\n")
}

// A hub running as root runs its agents as an unprivileged user, and gives
// them their writable mounts (created by root) so they can work there.
func TestAgentsNeverRunAsRoot(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	wantUID := os.Getuid()
	if wantUID == 0 {
		wantUID = AgentUID
	}
	work := t.TempDir() // the test's user's, like a worktree the hub made
	if err := os.MkdirAll(filepath.Join(work, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "src", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := shSpec(t, `id -u; echo edit >> /workspace/src/main.go && echo new > /workspace/src/new.go && echo ok`)
	spec.Mounts = []executor.Mount{{Source: work, Target: "/workspace"}}
	out, code := run(t, b, spec)
	if code != 0 || out.stdout != fmt.Sprintf("%d\nok\n", wantUID) {
		t.Fatalf("exit code %d, stdout %q, stderr %q", code, out.stdout, out.stderr)
	}
	assertOwnedBy(t, filepath.Join(work, "src", "new.go"), wantUID, wantUID, "new\n")
}

// With a hub user other than root, the files are that user's, not root's
// (the container runs as the hub's uid:gid; here a stand-in uid).
func TestBindMountFilesBelongToTheContainerUser(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	b.user, b.uid, b.gid = "4321:4322", 4321, 4322
	work := t.TempDir()
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	spec := shSpec(t, `id -u; id -g; echo $HOME; echo written > /workspace/out.txt`)
	spec.Mounts = []executor.Mount{{Source: work, Target: "/workspace"}}
	out, code := run(t, b, spec)
	if code != 0 {
		t.Fatalf("exit code %d; stderr %q", code, out.stderr)
	}
	if out.stdout != "4321\n4322\n/home/agent\n" {
		t.Errorf("stdout %q", out.stdout)
	}
	assertOwnedBy(t, filepath.Join(work, "out.txt"), 4321, 4322, "written\n")
}

func assertOwnedBy(t *testing.T, path string, uid, gid int, content string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("file written in the container: %v", err)
	}
	if string(data) != content {
		t.Errorf("%s: %q, want %q", path, data, content)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("%s is owned by %d:%d, want %d:%d", path, st.Uid, st.Gid, uid, gid)
	}
}

// Every limit and security setting reaches the engine (inspect) and the
// process (what it sees from inside).
func TestLimitsAndSecurityReachTheContainer(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	spec := shSpec(t, `
		id -u; id -g
		grep -E '^(CapEff|NoNewPrivs):' /proc/self/status
		cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes
		cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max
		if touch /rootfs-write 2>/dev/null; then echo "rootfs writable"; else echo "rootfs read-only"; fi
		for d in /tmp /run /home/agent; do
			stat -c "%n %a" $d
			df -k $d | tail -n 1 | awk '{print "size " $2}'
			touch $d/probe || echo "$d not writable"
		done
		cp /bin/busybox /tmp/echo && /tmp/echo "exec in /tmp ok"
		echo "HOME=$HOME"
		echo ready
		cat`)
	spec.Env = map[string]string{"AGENT_TOKEN": "t0k", "LANG": "C.UTF-8"}
	spec.Labels = map[string]string{"service.task": "task-1", executor.InstanceLabel: "spoofed"}
	h := start(t, b, spec)
	out := collect(h)

	// The container stays up (cat waits for stdin) while it is inspected.
	ctx := testContext(t)
	got, err := b.cli.ContainerInspect(ctx, h.ID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	c := got.Container
	hc := c.HostConfig
	user := b.user
	checks := []struct {
		name      string
		got, want any
	}{
		{"Memory", hc.Memory, testLimits.MemoryBytes},
		{"MemorySwap", hc.MemorySwap, testLimits.MemoryBytes},
		{"NanoCPUs", hc.NanoCPUs, testLimits.NanoCPUs},
		{"PidsLimit", deref(hc.PidsLimit), testLimits.PidsLimit},
		{"ReadonlyRootfs", hc.ReadonlyRootfs, true},
		{"NetworkMode", string(hc.NetworkMode), testNetwork},
		{"CapDrop", strings.Join(hc.CapDrop, ","), "ALL"},
		{"CapAdd", len(hc.CapAdd), 0},
		{"Privileged", hc.Privileged, false},
		{"SecurityOpt no-new-privileges", slices.Contains(hc.SecurityOpt, "no-new-privileges"), true},
		{"Tmpfs /tmp", hc.Tmpfs["/tmp"], "rw,nosuid,nodev,exec,size=16m,mode=1777"},
		{"Tmpfs /run", hc.Tmpfs["/run"], "rw,nosuid,nodev,noexec,size=4m,mode=1777"},
		{"Tmpfs /home/agent", hc.Tmpfs["/home/agent"], "rw,nosuid,nodev,exec,size=8m,mode=1777"},
		{"User", c.Config.User, user},
		{"OpenStdin", c.Config.OpenStdin, true},
		{"StdinOnce", c.Config.StdinOnce, true},
		{"Tty", c.Config.Tty, false},
		{"label instance", c.Config.Labels[executor.InstanceLabel], b.instance},
		{"label task", c.Config.Labels["service.task"], "task-1"},
		{"env HOME", slices.Contains(c.Config.Env, "HOME=/home/agent"), true},
		{"env AGENT_TOKEN", slices.Contains(c.Config.Env, "AGENT_TOKEN=t0k"), true},
		{"env LANG", slices.Contains(c.Config.Env, "LANG=C.UTF-8"), true},
		{"Image", c.Config.Image, testImage},
		{"Cmd", strings.Join(c.Config.Cmd[:2], " "), "sh -c"},
		{"Name", c.Name, "/" + spec.Name},
		{"attached to network", c.NetworkSettings != nil && c.NetworkSettings.Networks[testNetwork] != nil, true},
		{"running", c.State != nil && c.State.Running, true},
	}
	for _, ch := range checks {
		if fmt.Sprint(ch.got) != fmt.Sprint(ch.want) {
			t.Errorf("%s: %v, want %v", ch.name, ch.got, ch.want)
		}
	}

	if _, err := io.WriteString(h.Stdin(), "from stdin\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.Stdin().Close(); err != nil {
		t.Fatal(err)
	}
	code, err := h.Wait(ctx)
	o := <-out
	if err != nil || code != 0 {
		t.Fatalf("wait: %d, %v; stderr %q", code, err, o.stderr)
	}
	uid, gid := strconv.Itoa(b.uid), strconv.Itoa(b.gid) // the hub's, or AgentUID when the hub is root
	want := strings.Join([]string{
		uid, gid,
		"CapEff:\t0000000000000000",
		"NoNewPrivs:\t1",
		strconv.FormatInt(testLimits.MemoryBytes, 10),
		strconv.FormatInt(testLimits.PidsLimit, 10),
		"rootfs read-only",
		"/tmp 1777", "size 16384",
		"/run 1777", "size 4096",
		"/home/agent 1777", "size 8192",
		"exec in /tmp ok",
		"HOME=/home/agent",
		"ready",
		"from stdin",
	}, "\n") + "\n"
	if o.stdout != want {
		t.Errorf("what the process sees:\n%s\nwant:\n%s\nstderr: %s", o.stdout, want, o.stderr)
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func TestKillStopsAndRemovesTheContainer(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	h := start(t, b, shSpec(t, `echo started; exec sleep 600`))
	ctx := testContext(t)
	errOut := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(h.Stderr()); errOut <- b }()
	// Kill only once the script surely runs.
	stdout := bufio.NewReader(h.Stdout())
	if line, err := stdout.ReadString('\n'); line != "started\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	killed := make(chan error, 1)
	go func() { killed <- h.Kill(ctx) }()
	select {
	case err := <-killed:
		if err != nil {
			t.Fatalf("kill: %v", err)
		}
	case <-time.After(timeout):
		t.Fatal("Kill did not return")
	}
	if _, err := b.cli.ContainerInspect(ctx, h.ID(), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("container still there after Kill (inspect error %v)", err)
	}
	// Output ends, Wait returns (SIGKILL: 137), Kill again is a no-op.
	if rest, err := io.ReadAll(stdout); err != nil || len(rest) != 0 {
		t.Errorf("stdout after Kill: %q, %v", rest, err)
	}
	if e := <-errOut; len(e) != 0 {
		t.Errorf("stderr %q", e)
	}
	code, err := h.Wait(ctx)
	if err != nil || code != 137 {
		t.Errorf("Wait after Kill: %d, %v (want 137)", code, err)
	}
	if err := h.Kill(ctx); err != nil {
		t.Errorf("second Kill: %v", err)
	}
}

// A caller that never reads the output still gets the exit code, and the
// container is removed; the unread output ends with an error.
func TestWaitWithoutReadingTheOutput(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	b.drainGrace = 100 * time.Millisecond
	h := start(t, b, shSpec(t, `echo unread; echo unread >&2; exit 3`))
	code, err := h.Wait(testContext(t))
	if err != nil || code != 3 {
		t.Fatalf("wait: %d, %v", code, err)
	}
	if _, err := io.ReadAll(h.Stdout()); !errors.Is(err, errOutputAbandoned) {
		t.Errorf("reading stdout after the removal: %v", err)
	}
	if left := b.containers(t, testContext(t)); len(left) != 0 {
		t.Errorf("containers left after Wait: %v", left)
	}
}

// The context of Start bounds the start only, not the agent's life.
func TestStartContextBoundsOnlyTheStart(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	h, err := b.Start(ctx, shSpec(t, `read -r line; echo "got $line"`))
	cancel()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = h.Kill(context.Background()) })
	out := collect(h)
	if _, err := io.WriteString(h.Stdin(), "late\n"); err != nil {
		t.Fatalf("write stdin: %v", err)
	}
	code, err := h.Wait(testContext(t))
	if o := <-out; err != nil || code != 0 || o.stdout != "got late\n" {
		t.Errorf("after the start context ended: %d, %v, %q, %q", code, err, o.stdout, o.stderr)
	}
}

// Kill works with the context of a task that has just been cancelled.
func TestKillWithCancelledContext(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	h := start(t, b, shSpec(t, `exec sleep 600`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v", err)
	}
	if err := h.Kill(ctx); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if left := b.containers(t, testContext(t)); len(left) != 0 {
		t.Errorf("containers left after Kill: %v", left)
	}
}

func TestLeftoversAreOnlyThisInstancesContainers(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	ctx := testContext(t)
	other := "runner@someone-else-" + randomSuffix(t)

	orphan := createRaw(t, b, map[string]string{executor.InstanceLabel: b.instance, "service.run": "r1"}, true)
	stopped := createRaw(t, b, map[string]string{executor.InstanceLabel: b.instance}, false)
	foreign := createRaw(t, b, map[string]string{executor.InstanceLabel: other}, true)
	unlabelled := createRaw(t, b, nil, true)
	live := start(t, b, shSpec(t, `exec cat`))

	ls, err := b.Leftovers(ctx)
	if err != nil {
		t.Fatalf("leftovers: %v", err)
	}
	got := map[string]executor.Leftover{}
	for _, l := range ls {
		got[l.ID()] = l
	}
	if len(got) != 2 || got[orphan] == nil || got[stopped] == nil {
		t.Fatalf("leftovers = %v, want exactly the orphan %s and the stopped %s", got, shortID(orphan), shortID(stopped))
	}
	if got[orphan].Labels()["service.run"] != "r1" {
		t.Errorf("labels = %v", got[orphan].Labels())
	}
	if _, exited := got[orphan].Exited(); exited {
		t.Error("a running leftover reads as exited")
	}
	for _, l := range ls {
		if err := l.Remove(ctx); err != nil {
			t.Fatalf("remove: %v", err)
		}
	}
	for _, id := range []string{orphan, stopped} {
		if _, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("own orphan %s survived its removal (inspect error %v)", shortID(id), err)
		}
	}
	for _, id := range []string{foreign, unlabelled, live.ID()} {
		got, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			t.Errorf("container %s was touched: %v", shortID(id), err)
			continue
		}
		if !got.Container.State.Running {
			t.Errorf("container %s is no longer running", shortID(id))
		}
	}
	if err := live.Stdin().Close(); err != nil {
		t.Fatal(err)
	}
	if code, err := live.Wait(ctx); err != nil || code != 0 {
		t.Errorf("live agent after the removal of leftovers: %d, %v", code, err)
	}
}

// createRaw makes a container behind the backend's back, as a crashed
// process would have left it; the test removes it at the end.
func createRaw(t *testing.T, b *Backend, labels map[string]string, run bool) string {
	t.Helper()
	ctx := testContext(t)
	c, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: testImage, Cmd: []string{"sleep", "600"}, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		_, _ = b.cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	})
	if run {
		if _, err := b.cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	return c.ID
}

func TestMissingImageIsUnavailable(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	spec := shSpec(t, `true`)
	spec.Image = "slipway-test-missing-" + randomSuffix(t) + ":latest"
	_, err := b.Start(testContext(t), spec)
	if !errors.Is(err, executor.ErrUnavailable) {
		t.Fatalf("error %v does not wrap ErrUnavailable", err)
	}
	msg := err.Error()
	t.Logf("missing image: %s", msg)
	for _, want := range []string{fmt.Sprintf("image %q not found locally", spec.Image), "never pulled", "build or load it first"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if !cerrdefs.IsNotFound(err) {
		t.Errorf("the engine's not-found error is not kept: %v", err)
	}
}

// No engine: no Docker needed for this one.
func TestNoEngineIsUnavailable(t *testing.T) {
	t.Parallel()
	host := "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")
	b, err := New(host, "test@no-engine", testNetwork)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := testContext(t)
	_, err = b.Start(ctx, executor.Spec{Name: "x", Image: testImage, Command: []string{"true"}})
	if !errors.Is(err, executor.ErrUnavailable) {
		t.Fatalf("Start: %v does not wrap ErrUnavailable", err)
	}
	t.Logf("no engine: %v", err)
	if want := "no container engine at " + host + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Start: message %q does not start with %q", err, want)
	}
	if err := b.Check(ctx); !errors.Is(err, executor.ErrUnavailable) {
		t.Errorf("Check: %v", err)
	}
	if _, err := b.Leftovers(ctx); !errors.Is(err, executor.ErrUnavailable) {
		t.Errorf("Leftovers: %v", err)
	}
}

func TestNetworkIsCreatedWhenMissing(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	ctx := testContext(t)
	name := "slipway-test-net-" + randomSuffix(t)
	if _, err := b.cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("network %s exists before the test (%v)", name, err)
	}
	t.Cleanup(func() {
		_, _ = b.cli.NetworkRemove(context.Background(), name, client.NetworkRemoveOptions{})
	})
	spec := shSpec(t, `ip -o -4 addr show eth0 >/dev/null && echo has-eth0`)
	spec.Limits.Network = name
	out, code := run(t, b, spec)
	if code != 0 || out.stdout != "has-eth0\n" {
		t.Fatalf("run: %d, %q, %q", code, out.stdout, out.stderr)
	}
	n, err := b.cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if err != nil {
		t.Fatalf("network not created: %v", err)
	}
	if got := n.Network.Labels[executor.InstanceLabel]; got != b.instance {
		t.Errorf("network label %q, want %q", got, b.instance)
	}
	// A second Start reuses it.
	if _, code := run(t, b, spec); code != 0 {
		t.Errorf("second run on the existing network: exit %d", code)
	}
	list, err := b.cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("name", name)})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("networks named %s: %d (%v)", name, len(list.Items), err)
	}
}

// A Start that fails after the container was created leaves nothing behind.
func TestFailedStartLeavesNoContainer(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	// With docker-init as PID 1 a missing program is not a start failure:
	// init reports it and exits 127, and the container is removed.
	spec := shSpec(t, `true`)
	spec.Command = []string{"/no/such/program"}
	if h, err := b.Start(testContext(t), spec); err == nil {
		h.Stdin().Close()
		outc := collect(h)
		code, werr := h.Wait(testContext(t))
		out := <-outc
		if werr != nil || code != 127 {
			t.Fatalf("missing program: exit %d, %v", code, werr)
		}
		if !strings.Contains(out.stderr, "/no/such/program") {
			t.Fatalf("stderr does not name the missing program: %q", out.stderr)
		}
	}
	spec = shSpec(t, `true`)
	spec.Mounts = []executor.Mount{{Source: filepath.Join(t.TempDir(), "missing"), Target: "/workspace"}}
	if _, err := b.Start(testContext(t), spec); err == nil {
		t.Fatal("Start with a missing bind source succeeded")
	}
	if left := b.containers(t, testContext(t)); len(left) != 0 {
		t.Errorf("containers left behind: %v", left)
	}
}

func TestContainerName(t *testing.T) {
	for in, want := range map[string]string{
		"slipway-task-0193": "slipway-task-0193",
		"task 12/run:3":     "task-12-run-3",
		"_x":                "",
		"-.ok":              "ok",
		"":                  "",
		"émoji-🙂-name.v1_2": "moji---name.v1_2",
	} {
		if got := containerName(in); got != want {
			t.Errorf("containerName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTmpfsOptions(t *testing.T) {
	if got, want := tmpfsOptions(512, true), "rw,nosuid,nodev,exec,size=512m,mode=1777"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := tmpfsOptions(0, false), "rw,nosuid,nodev,noexec,mode=1777"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
