package main

// Real processes: one hub and two runners with different labels, on both
// databases: routing by labels, drain, disable, rotate-token, and kill -9 of
// a runner mid-task.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/agenttest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
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
	ID       string `json:"id"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	Eligible bool   `json:"eligible"`
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

func TestRunners(t *testing.T) {
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

	// Drain: running work finishes, no new work; gpu work falls back to the
	// hub (no fleet_only).
	long := c.labelledTask(s.project, "echo started; sleep 2; echo finished > long.txt", "gpu")
	eventually(t, 20*time.Second, "the long task starts on the gpu runner", func() bool {
		return strings.Contains(eventsText(c.events(long)), "started")
	})
	c.post("/api/organization/runners/"+gpuID+"/drain", "", 200)
	after := c.labelledTask(s.project, "echo after > after.txt", "gpu")
	c.waitAll([]string{long, after}, time.Minute, "done")
	if got := c.ranOn(long); !slices.Equal(got, onGPU) {
		t.Fatalf("the long task ran on %v", got)
	}
	if got := c.ranOn(after); len(got) != 1 || !strings.HasPrefix(got[0], "hub@") {
		t.Fatalf("gpu work after the drain ran on %v, want the hub", got)
	}
	c.post("/api/organization/runners/"+gpuID+"/status", `{"status":"enabled"}`, 200)

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
}
