package main

// Real processes: one hub and two runners with different labels, on both
// databases: routing by labels, drain, disable, rotate-token, and kill -9 of
// a runner mid-task.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"slipway/internal/agenttest"
	"slipway/internal/executor"
	"slipway/internal/executor/sshtest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/tlstest"
)

var runnerReady = regexp.MustCompile(`msg="worker starting"`)

// startRunner runs `slipway runner` against the hub with a static token.
func startRunner(t *testing.T, dir, hub, token string, extra ...string) *proc {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"SERVICE_HUB_URL=" + hub, "SERVICE_RUNNER_ALLOW_INSECURE_TRANSPORT=true", "SERVICE_RUNNER_TOKEN=" + token,
		"SERVICE_RUNNER_EXECUTION_BACKEND=process", "SERVICE_RUNNER_ALLOW_UNSANDBOXED=true", "SERVICE_RUNNER_HEARTBEAT_SECS=1",
		"SERVICE_RUNNER_POLL_SECS=1"}, extra...)
	return spawn(t, dir, "runner", runnerReady, env...)
}

type apiRunner struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	Eligible    bool   `json:"eligible"`
	Healthy     bool   `json:"healthy"`
	HealthError string `json:"health_error"`
}

type apiRouting struct {
	To       string
	Labels   []string
	Eligible int
	Reason   string
}

// routing is the task's last routing event.
func routing(evs []apiEvent) apiRouting {
	var r apiRouting
	for _, e := range evs {
		if e.Type == "routing" {
			r = apiRouting{}
			_ = json.Unmarshal(e.Payload, &r)
		}
	}
	return r
}

func (c *apiClient) runners() map[string]apiRunner {
	c.t.Helper()
	var rs []apiRunner
	if err := json.Unmarshal([]byte(c.get("/api/organization/runners")), &rs); err != nil {
		c.t.Fatal(err)
	}
	out := map[string]apiRunner{}
	for _, r := range rs {
		out[r.Name] = r
	}
	return out
}

// createRunner makes a static runner and returns its id and token.
func (c *apiClient) createRunner(name string) (id, token string) {
	c.t.Helper()
	var out struct {
		Runner struct {
			ID string `json:"id"`
		} `json:"runner"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(c.post("/api/organization/runners", `{"name":"`+name+`"}`, 201)), &out); err != nil {
		c.t.Fatal(err)
	}
	return out.Runner.ID, out.Token
}

func (c *apiClient) labelledTask(project, prompt string, labels ...string) string {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"project_id": project, "prompt": prompt,
		"config": map[string]any{"runner": map[string]any{"required_labels": labels}}})
	return c.id(c.post("/api/tasks", string(body), 201))
}

// ranOn is who claimed the task's runs, in order.
func (c *apiClient) ranOn(id string) []string { return claimedBy(c.events(id)) }

// checkSecretEnv sets a secret env var, runs a task that prints it where
// it runs (labels route it), and checks the agent got the value while
// every stored event shows it redacted.
func (c *apiClient) checkSecretEnv(t *testing.T, project, where string, labels ...string) {
	t.Helper()
	secret := "deploy-" + fmt.Sprint(time.Now().UnixNano()) + "-s3cret"
	c.post("/api/settings/env-vars", `{"key": "DEPLOY_TOKEN", "value": "`+secret+`", "is_secret": true}`, 200)
	prompt := `test -n "$DEPLOY_TOKEN" && echo "token=$DEPLOY_TOKEN length=${#DEPLOY_TOKEN}"`
	var id string
	if len(labels) > 0 {
		id = c.labelledTask(project, prompt, labels...)
	} else {
		id = c.createTask(project, prompt)
	}
	c.waitAll([]string{id}, time.Minute, "done")
	text := eventsText(c.events(id))
	if strings.Contains(text, secret) || !strings.Contains(text, "token=[REDACTED] length="+fmt.Sprint(len(secret))) {
		t.Fatalf("%s: the secret env var in the task's events:\n%s", where, text)
	}
}

func TestRunners(t *testing.T) {
	t.Parallel()
	dbtest.Engines(t, func(t *testing.T, e db.Engine) { runnersEndToEnd(t, e) })
}

func runnersEndToEnd(t *testing.T, engine db.Engine) {
	dir := t.TempDir()
	s := startServer(t, engine, dir, "SERVICE_HUB_MODE=true", "SERVICE_WORKER_LEASE_SECS=5", "SERVICE_AGENT_BACKEND=process")
	c := s.c
	hub := s.p.url("")
	gpuID, gpuTok := c.createRunner("gpu")
	cpuID, cpuTok := c.createRunner("cpu")
	gpu := startRunner(t, filepath.Join(dir, "gpu"), hub, gpuTok, "SERVICE_RUNNER_LABELS=GPU, linux", "SERVICE_RUNNER_SLOTS=2")
	cpu := startRunner(t, filepath.Join(dir, "cpu"), hub, cpuTok, "SERVICE_RUNNER_LABELS=linux", "SERVICE_RUNNER_SLOTS=2")
	onGPU, onCPU := []string{"runner@" + gpuID}, []string{"runner@" + cpuID}
	eventually(t, 10*time.Second, "both runners are online", func() bool {
		rs := c.runners()
		return rs["gpu"].Status == "online" && rs["cpu"].Status == "online"
	})

	// Routing by labels: gpu work only on the gpu runner; work both
	// advertise on either; nothing on the hub while runners are eligible.
	var gpuTasks, anyTasks []string
	for i := 0; i < 4; i++ {
		gpuTasks = append(gpuTasks, c.labelledTask(s.project, fmt.Sprintf("echo gpu %d > gpu-%d.txt", i, i), "gpu"))
		anyTasks = append(anyTasks, c.labelledTask(s.project, fmt.Sprintf("echo any %d > any-%d.txt", i, i), "linux"))
	}
	c.waitAll(append(slices.Clone(gpuTasks), anyTasks...), time.Minute, "done")
	for _, id := range gpuTasks {
		if got := c.ranOn(id); !slices.Equal(got, onGPU) {
			t.Fatalf("a gpu task ran on %v, want %v", got, onGPU)
		}
	}
	for _, id := range anyTasks {
		if got := c.ranOn(id); !slices.Equal(got, onGPU) && !slices.Equal(got, onCPU) {
			t.Fatalf("a linux task ran on %v", got)
		}
	}

	// A secret env var reaches the agent on a runner, redacted in what it
	// sends back.
	c.checkSecretEnv(t, s.project, "process runner", "gpu")

	// Every decision is an event: where the work went and why.
	if r := routing(c.events(gpuTasks[0])); r.To != "runners" || r.Eligible != 1 || !slices.Equal(r.Labels, []string{"gpu"}) {
		t.Fatalf("a gpu task's routing event = %+v", r)
	}

	// Drain: running work finishes, no new work. Labelled gpu work never
	// falls back to the hub (it has no gpu): it waits, saying so, and runs
	// on the gpu runner once that is enabled again.
	long := c.labelledTask(s.project, "echo started; sleep 2; echo finished > long.txt", "gpu")
	eventually(t, 20*time.Second, "the long task starts on the gpu runner", func() bool {
		return strings.Contains(eventsText(c.events(long)), "started")
	})
	c.post("/api/organization/runners/"+gpuID+"/drain", "", 200)
	after := c.labelledTask(s.project, "echo after > after.txt", "gpu")
	c.waitAll([]string{long}, time.Minute, "done")
	if got := c.ranOn(long); !slices.Equal(got, onGPU) {
		t.Fatalf("the long task ran on %v", got)
	}
	if r := routing(c.events(after)); r.To != "runners" || r.Eligible != 0 || !strings.Contains(r.Reason, "waits") {
		t.Fatalf("gpu work after the drain: routing %+v", r)
	}
	if line := c.get("/api/tasks/" + after + "/runner-line"); !strings.Contains(line, `"state":"waiting"`) {
		t.Fatalf("gpu work after the drain: runner line %s", line)
	}
	time.Sleep(2 * time.Second) // sweeps pass: it still waits
	if tk := c.task(after); tk.Status != "queued" {
		t.Fatalf("gpu work with no gpu runner is %s, want queued", tk.Status)
	}
	c.post("/api/organization/runners/"+gpuID+"/status", `{"status":"enabled"}`, 200)
	c.waitAll([]string{after}, time.Minute, "done")
	if got := c.ranOn(after); !slices.Equal(got, onGPU) {
		t.Fatalf("gpu work after the drain ran on %v, want the gpu runner", got)
	}

	// Disable: the disabled runner takes no new work.
	c.post("/api/organization/runners/"+cpuID+"/status", `{"status":"disabled"}`, 200)
	var linux []string
	for i := 0; i < 3; i++ {
		linux = append(linux, c.labelledTask(s.project, "true", "linux"))
	}
	c.waitAll(linux, time.Minute, "done")
	for _, id := range linux {
		if got := c.ranOn(id); !slices.Equal(got, onGPU) {
			t.Fatalf("with the cpu runner disabled, linux work ran on %v", got)
		}
	}

	// Rotate-token: the old token is refused at once, and the runner using
	// it stops; started again with the new token, it serves again.
	var rotated struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(c.post("/api/organization/runners/"+cpuID+"/rotate-token", "", 200)), &rotated); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", hub+"/api/runner/v1/heartbeat", strings.NewReader(`{"version":"x","backend":"process","slots":1}`))
	req.Header.Set("Authorization", "Bearer "+cpuTok)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("the old token after rotation: %v %v", resp, err)
	}
	if code := cpu.wait(t); code != 1 || !strings.Contains(cpu.logs(), "the hub refuses this runner's token") {
		t.Fatalf("the runner with the rotated token exited %d:\n%s", code, cpu.logs())
	}
	cpu = startRunner(t, filepath.Join(dir, "cpu"), hub, rotated.Token, "SERVICE_RUNNER_LABELS=linux", "SERVICE_RUNNER_SLOTS=2")
	c.post("/api/organization/runners/"+cpuID+"/status", `{"status":"enabled"}`, 200)

	// kill -9 of a runner mid-task: its started work fails with the reason
	// (never run twice, no agent left behind); queued work runs on the other.
	c.post("/api/organization/runners/"+cpuID+"/status", `{"status":"disabled"}`, 200)
	marker := fmt.Sprintf("runner-crash-%d", time.Now().UnixNano())
	started := []string{
		c.labelledTask(s.project, "echo started; sleep 60 # "+marker, "linux"),
		c.labelledTask(s.project, "echo started; sleep 60 # "+marker, "linux"),
	}
	eventually(t, 20*time.Second, "two tasks run on the gpu runner", func() bool {
		for _, id := range started {
			if !strings.Contains(eventsText(c.events(id)), "started") {
				return false
			}
		}
		return true
	})
	queued := []string{c.labelledTask(s.project, "echo queued > q1.txt", "linux"), c.labelledTask(s.project, "echo queued > q2.txt", "linux")}
	time.Sleep(500 * time.Millisecond) // the gpu runner's slots are full: they wait
	for _, id := range queued {
		if st := c.task(id).Status; st != "queued" {
			t.Fatalf("a task with both runners busy or disabled is %s", st)
		}
	}
	if err := gpu.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	gpu.wait(t)
	eventually(t, 10*time.Second, "the killed runner's agents die", func() bool { return len(agenttest.Processes(marker)) == 0 })
	c.post("/api/organization/runners/"+cpuID+"/status", `{"status":"enabled"}`, 200)
	c.waitAll(queued, time.Minute, "done")
	for _, id := range queued {
		if got := c.ranOn(id); !slices.Equal(got, onCPU) {
			t.Fatalf("queued work ran on %v, want the other runner", got)
		}
	}
	c.waitAll(started, time.Minute, "failed")
	for _, id := range started {
		tk := c.task(id)
		if !strings.Contains(tk.Error, "runner running this task went offline") {
			t.Fatalf("a started task on the killed runner failed with %q", tk.Error)
		}
		if got := c.ranOn(id); !slices.Equal(got, onGPU) {
			t.Fatalf("a started task on the killed runner ran on %v (never twice)", got)
		}
	}
	if strings.Contains(s.p.logs(), "panic") {
		t.Fatalf("the hub panicked:\n%s", s.p.logs())
	}
	// No runner token reaches a log line, the hub's or a runner's.
	for _, secret := range []string{gpuTok, cpuTok, rotated.Token} {
		for _, logs := range []string{s.p.logs(), gpu.logs(), cpu.logs()} {
			if strings.Contains(logs, secret) {
				t.Fatal("a runner token reached a log")
			}
		}
	}
}

// runOnce runs `slipway runner` to its end (a runner that cannot start) and
// returns its exit code and output; it is killed after within.
func runOnce(t *testing.T, dir string, within time.Duration, env ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "runner")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestRunnerEnrollment: a runner enrols with a single-use token, keeps its
// JWT in a 0600 file and refreshes it, comes back after a restart on the
// kept token (no second redeem), and refuses a kept token readable by
// others, after which the used enrollment token is refused.
func TestRunnerEnrollment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, db.SQLite, dir, "SERVICE_HUB_MODE=true", "SERVICE_AGENT_BACKEND=process")
	c := s.c
	var en struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(c.post("/api/organization/runners/enrollment-tokens", `{"name":"enrolled","allowed_labels":["linux"]}`, 201)), &en); err != nil {
		t.Fatal(err)
	}
	rdir := filepath.Join(dir, "enrolled")
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"SERVICE_HUB_URL=" + s.p.url(""), "SERVICE_RUNNER_ALLOW_INSECURE_TRANSPORT=true", "SERVICE_RUNNER_ENROLLMENT_TOKEN=" + en.Token,
		"SERVICE_RUNNER_EXECUTION_BACKEND=process", "SERVICE_RUNNER_ALLOW_UNSANDBOXED=true", "SERVICE_RUNNER_HEARTBEAT_SECS=1",
		"SERVICE_RUNNER_POLL_SECS=1", "SERVICE_RUNNER_TOKEN_REFRESH_SECS=1", "SERVICE_RUNNER_LABELS=linux"}
	r := spawn(t, rdir, "runner", runnerReady, env...)
	tokenFile := filepath.Join(rdir, "data", "runner-token")
	st, err := os.Stat(tokenFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	first, _ := os.ReadFile(tokenFile)
	if !strings.HasPrefix(string(first), "scrnj_") {
		t.Fatalf("token file holds %q", first)
	}
	eventually(t, 10*time.Second, "the runner refreshes its JWT and keeps the new one", func() bool {
		now, _ := os.ReadFile(tokenFile)
		return len(now) > 0 && string(now) != string(first)
	})
	eventually(t, 10*time.Second, "the enrolled runner is online", func() bool { return c.runners()["enrolled"].Status == "online" })
	id := c.labelledTask(s.project, "echo enrolled > e.txt", "linux")
	c.waitAll([]string{id}, time.Minute, "done")
	if got := c.ranOn(id); len(got) != 1 || !strings.HasPrefix(got[0], "runner@") {
		t.Fatalf("ran on %v", got)
	}

	// A graceful stop says goodbye: the runner is offline at once, not
	// after the stale window (90 s here); then a restart on the kept token.
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, r.logs())
	}
	if st := c.runners()["enrolled"]; st.Status != "offline" || st.Eligible {
		t.Fatalf("a runner stopped cleanly is %+v, want offline at once", st)
	}
	r = spawn(t, rdir, "runner", runnerReady, env...)
	eventually(t, 5*time.Second, "the restarted runner heartbeats", func() bool { return strings.Contains(r.logs(), "runner status") })
	if strings.Contains(r.logs(), "enrolled with the hub") {
		t.Fatalf("the restarted runner enrolled again instead of using its kept token:\n%s", r.logs())
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r.wait(t)

	// A kept token readable by others is discarded; enrolling again with the
	// used token is refused: single use.
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runOnce(t, rdir, 30*time.Second, env...)
	if code != 1 || !strings.Contains(out, "readable by others") || !strings.Contains(out, "already redeemed") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Fatalf("the readable token file was kept: %v", err)
	}
}

// TestRunnerMutualTLS: with a client CA configured the runner API needs a
// client certificate: a runner without one is refused with a message that
// says so; with one it runs work; a runner pinned to another CA never
// talks to the hub.
func TestRunnerMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "slipway-test-ca")
	cert, key := ca.Issue(t, "hub", true)
	clientCert, clientKey := ca.Issue(t, "runner-1", false)
	rogue := tlstest.NewCA(t, "rogue")
	files := filepath.Join(dir, "tls")
	if err := os.MkdirAll(files, 0o700); err != nil {
		t.Fatal(err)
	}
	caPath := tlstest.WriteFile(t, files, "ca.pem", ca.PEM)
	serverDir := filepath.Join(dir, "server")
	if err := os.MkdirAll(serverDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := start(t, serverDir, "SERVICE_INITIAL_ADMIN_EMAILS=root@example.test", "SERVICE_ARGON2_MEMORY_KIB=64", "SERVICE_ARGON2_TIME=1",
		"SERVICE_SHUTDOWN_LB_DELAY_SECS=0", "SERVICE_HUB_MODE=true", "SERVICE_AGENT_BACKEND=process",
		"SERVICE_TLS_CERT_PATH="+tlstest.WriteFile(t, files, "cert.pem", cert), "SERVICE_TLS_KEY_PATH="+tlstest.WriteFile(t, files, "key.pem", key),
		"SERVICE_TLS_CLIENT_CA_PATH="+caPath)
	hub := "https://" + p.addr
	c := newAPIClient(t, p)
	c.base = hub
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	c.http.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	eventually(t, 30*time.Second, "the hub is ready over HTTPS", func() bool {
		resp, err := c.http.Get(hub + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	c.post("/api/auth/register", `{"email":"root@example.test","password":"correct-horse-battery","display_name":"Root"}`, 202)
	c.post("/api/auth/login", `{"email":"root@example.test","password":"correct-horse-battery"}`, 200)
	project := c.id(c.post("/api/projects", `{"name":"demo","repo_url":"`+bareRepo(t, dir)+`"}`, 201))
	_, token := c.createRunner("mtls")
	base := []string{"SERVICE_HUB_URL=" + hub, "SERVICE_RUNNER_TOKEN=" + token, "SERVICE_RUNNER_EXECUTION_BACKEND=process",
		"SERVICE_RUNNER_ALLOW_UNSANDBOXED=true", "SERVICE_RUNNER_HEARTBEAT_SECS=1", "SERVICE_RUNNER_POLL_SECS=1"}

	noCert := filepath.Join(dir, "no-cert")
	if err := os.MkdirAll(noCert, 0o755); err != nil {
		t.Fatal(err)
	}
	code, out := runOnce(t, noCert, 30*time.Second, append(base, "SERVICE_RUNNER_TLS_CA_PATH="+caPath)...)
	if code != 1 || !strings.Contains(out, "requires a client certificate") {
		t.Fatalf("a runner without a client certificate: exit %d\n%s", code, out)
	}

	pinned := filepath.Join(dir, "rogue")
	if err := os.MkdirAll(pinned, 0o755); err != nil {
		t.Fatal(err)
	}
	_, out = runOnce(t, pinned, 3*time.Second, append(base, "SERVICE_RUNNER_TLS_CA_PATH="+tlstest.WriteFile(t, files, "rogue.pem", rogue.PEM),
		"SERVICE_RUNNER_TLS_CLIENT_CERT_PATH="+tlstest.WriteFile(t, files, "client.pem", clientCert),
		"SERVICE_RUNNER_TLS_CLIENT_KEY_PATH="+tlstest.WriteFile(t, files, "client-key.pem", clientKey))...)
	if !strings.Contains(out, "certificate signed by unknown authority") || strings.Contains(out, "worker starting") {
		t.Fatalf("a runner pinned to another CA:\n%s", out)
	}

	withCert := filepath.Join(dir, "with-cert")
	if err := os.MkdirAll(withCert, 0o755); err != nil {
		t.Fatal(err)
	}
	spawn(t, withCert, "runner", runnerReady, append(base, "SERVICE_RUNNER_TLS_CA_PATH="+caPath,
		"SERVICE_RUNNER_TLS_CLIENT_CERT_PATH="+filepath.Join(files, "client.pem"), "SERVICE_RUNNER_TLS_CLIENT_KEY_PATH="+filepath.Join(files, "client-key.pem"))...)
	id := c.createTask(project, "echo over mutual tls > m.txt")
	c.waitAll([]string{id}, time.Minute, "done")
	if got := c.ranOn(id); len(got) != 1 || !strings.HasPrefix(got[0], "runner@") {
		t.Fatalf("ran on %v", got)
	}
}

// TestRunnerDocker: a runner on the docker backend runs agents in
// containers labelled service.instance=runner@<id>; killed with SIGKILL,
// its container stops with it; started again, it cleans up only its own.
func TestRunnerDocker(t *testing.T) {
	t.Parallel()
	host := agenttest.DockerHost(t)
	dir := t.TempDir()
	s := startServer(t, db.SQLite, dir, "SERVICE_HUB_MODE=true", "SERVICE_AGENT_BACKEND=process", "SERVICE_WORKER_LEASE_SECS=5",
		"SERVICE_AGENT_IMAGE="+agenttest.TestImage)
	c := s.c
	id, token := c.createRunner("docker")
	rdir := filepath.Join(dir, "runner")
	env := []string{"DOCKER_HOST=" + host, "SERVICE_AGENT_BINARY=" + agenttest.Binary(t), "AGENT_NETWORK=slipway-test-agents",
		"AGENT_MEMORY_BYTES=134217728", "AGENT_NANO_CPUS=500000000", "SERVICE_RUNNER_EXECUTION_BACKEND=docker"}
	r := startRunner(t, rdir, s.p.url(""), token, env...)
	dk, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	defer dk.Close()
	label := executor.InstanceLabel + "=runner@" + id
	containers := func(all bool) int {
		list, err := dk.ContainerList(context.Background(), client.ContainerListOptions{All: all, Filters: make(client.Filters).Add("label", label)})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}

	done := c.createTask(s.project, "echo from a container > d.txt")
	c.waitAll([]string{done}, time.Minute, "done")
	if got := c.ranOn(done); !slices.Equal(got, []string{"runner@" + id}) || !strings.Contains(eventsText(c.events(done)), `"backend":"docker"`) {
		t.Fatalf("ran on %v:\n%s", got, eventsText(c.events(done)))
	}

	c.checkSecretEnv(t, s.project, "docker runner")

	// A neighbour's container on the same engine (another instance's label).
	neighbour := "slipway-neighbour-" + fmt.Sprint(time.Now().UnixNano())
	if out, err := exec.Command("docker", "-H", host, "run", "-d", "--name", neighbour, "--label", executor.InstanceLabel+"=hub@someone-else",
		agenttest.TestImage, "sleep", "60").CombinedOutput(); err != nil {
		t.Skipf("docker CLI not usable here (%v): %s", err, out)
	}
	defer exec.Command("docker", "-H", host, "rm", "-f", neighbour).Run()

	long := c.createTask(s.project, "echo started; sleep 60")
	eventually(t, 30*time.Second, "the long task starts in a container", func() bool {
		return strings.Contains(eventsText(c.events(long)), "started") && containers(false) == 1
	})
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.wait(t)
	eventually(t, 20*time.Second, "the killed runner's container stops", func() bool { return containers(false) == 0 })
	c.waitAll([]string{long}, time.Minute, "failed")
	startRunner(t, rdir, s.p.url(""), token, env...)
	eventually(t, 20*time.Second, "the restarted runner removes what its previous process left", func() bool { return containers(true) == 0 })
	out, err := exec.Command("docker", "-H", host, "inspect", "-f", "{{.State.Running}}", neighbour).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Fatalf("the neighbour's container was touched: %s %v", out, err)
	}
}

// TestHubCrashWithRunnerWorking: the hub is killed with SIGKILL while a
// runner works and comes back within the lease: the runner's work goes on,
// its events and result arrive once, nothing runs twice.
func TestHubCrashWithRunnerWorking(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		dir := t.TempDir()
		port := freePort(t)
		s := startServer(t, e, dir, "SERVICE_HUB_MODE=true", "SERVICE_WORKER_LEASE_SECS=20", "SERVICE_AGENT_BACKEND=process", "SERVER_PORT="+port)
		_, token := s.c.createRunner("steady")
		startRunner(t, filepath.Join(dir, "runner"), s.p.url(""), token)
		eventually(t, 10*time.Second, "the runner is online", func() bool { return s.c.runners()["steady"].Status == "online" })
		id := s.c.createTask(s.project, "echo started; sleep 4; echo after the crash; echo kept > kept.txt")
		eventually(t, 20*time.Second, "the task starts on the runner", func() bool { return strings.Contains(eventsText(s.c.events(id)), "started") })
		if err := s.p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		s.p.wait(t)
		s.restart(t)
		s.c.waitAll([]string{id}, time.Minute, "done")
		evs := s.c.events(id)
		if got := s.c.ranOn(id); len(got) != 1 || !strings.HasPrefix(got[0], "runner@") {
			t.Fatalf("ran on %v:\n%s", got, eventsText(evs))
		}
		if n := successfulResults(evs); n != 1 {
			t.Fatalf("%d successful results:\n%s", n, eventsText(evs))
		}
		if n := strings.Count(eventsText(evs), "after the crash"); n != 1 {
			t.Fatalf("the line written after the crash is in the log %d times:\n%s", n, eventsText(evs))
		}
	})
}

// TestRunnersAcrossReplicas: two hub replicas on one PostgreSQL behave as
// one to a runner: it talks to one of them, work created on the other
// reaches its long poll, and a cancel sent to the other stops its agent.
func TestRunnersAcrossReplicas(t *testing.T) {
	t.Parallel()
	dbtest.RequirePostgres(t)
	dir := t.TempDir()
	bare := bareRepo(t, dir)
	common := replicaEnv(t, "SERVICE_HUB_MODE=true", "SERVICE_AGENT_EXECUTION=fleet_only")
	a, b := startReplica(t, dir, "replica-a", common), startReplica(t, dir, "replica-b", common)
	ca, cb := signIn(t, a, true), signIn(t, b, false)
	project := ca.id(ca.post("/api/projects", `{"name":"demo","repo_url":"`+bare+`"}`, 201))
	// Enrolled through b, runs against a.
	var en struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(cb.post("/api/organization/runners/enrollment-tokens", `{"name":"shared"}`, 201)), &en); err != nil {
		t.Fatal(err)
	}
	rdir := filepath.Join(dir, "runner")
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		t.Fatal(err)
	}
	spawn(t, rdir, "runner", runnerReady, "SERVICE_HUB_URL="+a.url(""), "SERVICE_RUNNER_ALLOW_INSECURE_TRANSPORT=true",
		"SERVICE_RUNNER_ENROLLMENT_TOKEN="+en.Token, "SERVICE_RUNNER_EXECUTION_BACKEND=process", "SERVICE_RUNNER_ALLOW_UNSANDBOXED=true",
		"SERVICE_RUNNER_HEARTBEAT_SECS=1", "SERVICE_RUNNER_POLL_SECS=1", "SERVICE_RUNNER_SLOTS=8")
	eventually(t, 10*time.Second, "b sees the runner online", func() bool { return cb.runners()["shared"].Status == "online" })

	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, cb.createTask(project, fmt.Sprintf("echo %d > f-%d.txt", i, i)))
	}
	cb.waitAll(ids, time.Minute, "done")
	for _, id := range ids {
		if got := cb.ranOn(id); len(got) != 1 || !strings.HasPrefix(got[0], "runner@") {
			t.Fatalf("a task created on b ran on %v", got)
		}
	}
	marker := fmt.Sprintf("replica-runner-cancel-%d", time.Now().UnixNano())
	long := cb.createTask(project, "echo started; sleep 300 # "+marker)
	eventually(t, 20*time.Second, "the agent starts on the runner", func() bool { return strings.Contains(eventsText(ca.events(long)), "started") })
	cb.post("/api/tasks/"+long+"/cancel", "", 200)
	eventually(t, 15*time.Second, "the runner's agent stops", func() bool { return len(agenttest.Processes(marker)) == 0 })
	cb.waitAll([]string{long}, 30*time.Second, "cancelled")
}

// TestRunnerSSHBackends: tasks run end to end through `slipway runner` on
// the SSH backends against a real sshd on loopback: raw-ssh-exec (the
// agent a process on the host, its worktree copied there and back) and
// ssh-docker (the engine reached through ssh, the worktree copied into the
// container and back); both publish the agent's change.
func TestRunnerSSHBackends(t *testing.T) {
	t.Parallel()
	host := agenttest.DockerHost(t)
	srv := sshtest.Start(t, "DOCKER_HOST="+host)
	dir := t.TempDir()
	repoDir := filepath.Join(dir, "ssh-repo")
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bare := bareRepo(t, repoDir)
	s := startServer(t, db.SQLite, dir, "SERVICE_HUB_MODE=true", "SERVICE_AGENT_EXECUTION=fleet_only", "SERVICE_AGENT_BACKEND=process",
		"SERVICE_AGENT_IMAGE="+agenttest.TestImage)
	project := s.c.id(s.c.post("/api/projects", `{"name":"ssh","repo_url":"`+bare+`","autodev":true}`, 201))
	for _, backend := range []struct {
		name string
		env  []string
	}{
		{"raw-ssh-exec", []string{"SERVICE_RUNNER_EXECUTION_BACKEND=raw-ssh-exec", "SERVICE_RUNNER_ALLOW_UNSANDBOXED=true",
			"SERVICE_SSH_KEY_PATH=" + srv.KeyPath, `SERVICE_SSH_EXEC_AGENT_CMD=eval "$SLIPWAY_COMMAND"`}},
		{"ssh-docker", []string{"SERVICE_RUNNER_EXECUTION_BACKEND=ssh-docker", "SERVICE_SSH_DOCKER_HOSTKEY_DELEGATED=true",
			"SERVICE_SSH_KEY_PATH=" + srv.KeyPath, "SERVICE_AGENT_BINARY=" + agenttest.Binary(t), "AGENT_NETWORK=slipway-test-agents",
			"AGENT_MEMORY_BYTES=134217728"}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			id, token := s.c.createRunner(backend.name)
			env := append([]string{"SERVICE_SSH_HOST=" + srv.Host, "SERVICE_SSH_KNOWN_HOSTS=" + srv.KnownHosts,
				"SERVICE_RUNNER_LABELS=" + backend.name}, backend.env...)
			r := startRunner(t, filepath.Join(dir, backend.name), s.p.url(""), token, env...)
			defer r.cmd.Process.Kill()
			task := s.c.labelledTask(project, "echo from "+backend.name+" > "+backend.name+".txt; rm README.md", backend.name)
			s.c.waitAll([]string{task}, 2*time.Minute, "done_pr", "failed")
			tk := s.c.task(task)
			if tk.Status != "done_pr" {
				t.Fatalf("task %s %q:\n%s\n%s", tk.Status, tk.Error, eventsText(s.c.events(task)), r.logs())
			}
			if got := s.c.ranOn(task); !slices.Equal(got, []string{"runner@" + id}) {
				t.Fatalf("ran on %v", got)
			}
			out, err := exec.Command("git", "-C", bare, "show", tk.Branch+":"+backend.name+".txt").CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "from "+backend.name {
				t.Fatalf("the file on the branch: %q, %v", out, err)
			}
			if out, err := exec.Command("git", "-C", bare, "show", tk.Branch+":README.md").CombinedOutput(); err == nil {
				t.Fatalf("the file the agent deleted is still on the branch: %q", out)
			}
		})
	}
}

// TestRevokedRunnerStopsItsWork: rotating a working runner's token stops
// its agent at once (its next lease renewal is refused), the runner exits,
// and the task fails with the reason after the lease: never a zombie.
func TestRevokedRunnerStopsItsWork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, db.SQLite, dir, "SERVICE_HUB_MODE=true", "SERVICE_WORKER_LEASE_SECS=5", "SERVICE_AGENT_BACKEND=process")
	id, token := s.c.createRunner("revoked")
	r := startRunner(t, filepath.Join(dir, "runner"), s.p.url(""), token)
	eventually(t, 10*time.Second, "the runner is online", func() bool { return s.c.runners()["revoked"].Status == "online" })
	marker := fmt.Sprintf("revoked-%d", time.Now().UnixNano())
	task := s.c.createTask(s.project, "echo started; sleep 60 # "+marker)
	eventually(t, 20*time.Second, "the agent starts", func() bool { return strings.Contains(eventsText(s.c.events(task)), "started") })
	s.c.post("/api/organization/runners/"+id+"/rotate-token", "", 200)
	eventually(t, 15*time.Second, "the revoked runner's agent stops", func() bool { return len(agenttest.Processes(marker)) == 0 })
	if code := r.wait(t); code != 1 {
		t.Fatalf("the revoked runner exited %d:\n%s", code, r.logs())
	}
	s.c.waitAll([]string{task}, time.Minute, "failed")
	if tk := s.c.task(task); !strings.Contains(tk.Error, "went offline") {
		t.Fatalf("task error %q", tk.Error)
	}
}

// TestRunnerBackendHealth: a docker runner whose engine does not answer
// registers but says so in its heartbeats: it is online, unhealthy and not
// eligible, so work does not wait for it (it runs on the server) and no
// task fails with a missing engine.
func TestRunnerBackendHealth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, db.SQLite, dir, "SERVICE_HUB_MODE=true", "SERVICE_AGENT_BACKEND=process")
	c := s.c
	_, tok := c.createRunner("engineless")
	r := startRunner(t, filepath.Join(dir, "engineless"), s.p.url(""), tok, "SERVICE_RUNNER_EXECUTION_BACKEND=docker",
		"DOCKER_HOST=unix://"+filepath.Join(dir, "no-engine.sock"))
	eventually(t, 10*time.Second, "the runner reports its engine missing", func() bool {
		st := c.runners()["engineless"]
		return st.Status == "online" && !st.Healthy && !st.Eligible && strings.Contains(st.HealthError, "no container engine")
	})
	if !strings.Contains(r.logs(), "the execution backend cannot run work") {
		t.Fatalf("the runner's log does not say why it takes no work:\n%s", r.logs())
	}
	id := c.createTask(s.project, "echo served > served.txt")
	c.waitAll([]string{id}, time.Minute, "done")
	if got := c.ranOn(id); len(got) != 1 || !strings.HasPrefix(got[0], "hub@") {
		t.Fatalf("work with only an unhealthy runner ran on %v, want the hub", got)
	}
	if rt := routing(c.events(id)); rt.To != "server" || rt.Eligible != 0 {
		t.Fatalf("routing = %+v", rt)
	}
}
