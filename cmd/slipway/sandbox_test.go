package main

// Real-process test of tenant containment: a tenant's script, code node and
// shell task try to reach what is the server's (its data directory, its
// database, its signing secret, its environment, another job's worktree)
// on the process backend as root and as an unprivileged user, and on
// Docker. Every attempt must fail, and the server's log must say what
// contains them. Where nothing can contain them, a non-admin's code is
// refused and an admin's runs.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"slipway/internal/agenttest"
)

// probes try to reach what is the server's; each prints "held NAME" when
// the attempt failed and "LEAK NAME" when it worked. The last line counts
// the held ones as JSON.
const probes = `D=%q; P=%d; O=%q
n=0
probe() { if sh -c "$2" >/dev/null 2>&1; then echo "LEAK $1"; else n=$((n+1)); echo "held $1"; fi; }
probe list-data-dir "ls -A '$D' | grep -q ."
probe read-database "head -c 16 '$D/slipway.db' | grep -q SQLite"
probe read-secret "test -n \"\$(cat '$D/jwt-secret')\""
probe read-environ "tr '\0' '\n' < /proc/$P/environ | grep -q ."
probe list-other-worktree "ls -A '$O' | grep -q README"
probe write-database ": >> '$D/slipway.db'"
echo "{\"held\": $n}"`

const allProbes = 6

// hostile is a server with an admin (running a long task of their own) and
// a tenant in a workspace of their own.
type hostile struct {
	p       *proc
	admin   *apiClient
	tenant  *apiClient
	dataDir string
	other   string // the admin's task's worktree
	project string // the tenant's project
}

func startHostile(t *testing.T, cred *syscall.Credential, env ...string) *hostile {
	t.Helper()
	// A directory every user may enter (t.TempDir's parent is root's only).
	dir, err := os.MkdirTemp("", "slipway-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := binary
	if cred != nil {
		bin = filepath.Join(dir, "slipway")
		copyFile(t, binary, bin)
	}
	serverDir := filepath.Join(dir, "server")
	if err := os.MkdirAll(serverDir, 0o755); err != nil {
		t.Fatal(err)
	}
	adminRepo, tenantRepo := bareRepo(t, filepath.Join(dir, "a")), bareRepo(t, filepath.Join(dir, "b"))
	if cred != nil {
		if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", cred.Uid, cred.Gid), dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	env = append([]string{"HOME=" + dir, "SERVICE_INITIAL_ADMIN_EMAILS=root@example.test", "SERVICE_ARGON2_MEMORY_KIB=64",
		"SERVICE_ARGON2_TIME=1", "SERVICE_SHUTDOWN_LB_DELAY_SECS=0"}, env...)

	// The tenant's account, made offline like an admin would.
	create := exec.Command(bin, "users", "create", "--email", "tenant@example.test")
	create.Dir, create.Env = serverDir, append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	create.Stdin = strings.NewReader("tenant-password-long\n")
	if cred != nil {
		create.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("users create: %v %s", err, out)
	}

	h := &hostile{dataDir: filepath.Join(serverDir, "data")}
	h.p = spawnAs(t, cred, bin, serverDir, "serve", listenRe, env...)
	h.p.waitReady(t)
	h.admin = signIn(t, h.p, true)
	h.tenant = newAPIClient(t, h.p)
	h.tenant.post("/api/auth/login", `{"email":"tenant@example.test","password":"tenant-password-long"}`, 200)
	h.project = h.tenant.id(h.tenant.post("/api/projects", `{"name":"mine","repo_url":"`+tenantRepo+`"}`, 201))

	adminProject := h.admin.id(h.admin.post("/api/projects", `{"name":"admin's","repo_url":"`+adminRepo+`"}`, 201))
	long := h.admin.createTask(adminProject, "echo started; sleep 300")
	h.admin.waitAll([]string{long}, 2*time.Minute, "running")
	h.other = filepath.Join(h.dataDir, "git", "worktrees", long)
	eventually(t, time.Minute, "the admin's task has its worktree", func() bool {
		_, err := os.Stat(filepath.Join(h.other, "README.md"))
		return err == nil
	})
	return h
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// probe is the probe script for this server.
func (h *hostile) probe() string {
	return fmt.Sprintf(probes, h.dataDir, h.p.cmd.Process.Pid, h.other)
}

// runScript saves the probe as a script of c's and runs it; it returns the
// run's status, how many probes it says held, and its log.
func (h *hostile) runScript(t *testing.T, c *apiClient, slug string) (status string, held int, log string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": slug, "slug": slug, "language": "sh", "source": h.probe()})
	script := c.id(c.post("/api/scripts", string(body), 201))
	var started struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(c.post("/api/scripts/"+script+"/run", `{}`, 202)), &started); err != nil {
		t.Fatal(err)
	}
	var run struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	eventually(t, 2*time.Minute, "the script run ends", func() bool {
		// Not found until a worker takes it.
		if json.Unmarshal([]byte(c.do("GET", "/api/runs/"+started.RunID, "", 0)), &run) != nil {
			return false
		}
		return run.Status != "" && run.Status != "queued" && run.Status != "running"
	})
	log = c.get("/api/runs/"+started.RunID+"/events?limit=1000") + run.Error
	return run.Status, strings.Count(log, `"line":"held `), log
}

// heldIn reads the probes' count from a script's or code node's output
// ({"result": <last line>, ...}).
func heldIn(output json.RawMessage) int {
	var out struct {
		Result struct {
			Held int `json:"held"`
		} `json:"result"`
	}
	json.Unmarshal(output, &out)
	return out.Result.Held
}

// assertContained runs the probes as the tenant's script, code node and
// shell task: every probe is held.
func (h *hostile) assertContained(t *testing.T) {
	t.Helper()
	c := h.tenant
	status, held, log := h.runScript(t, c, "probe")
	if status != "succeeded" || held != allProbes || strings.Contains(log, "LEAK") {
		t.Errorf("script: %s, %d of %d held:\n%s", status, held, allProbes, log)
	}

	wf, _ := json.Marshal(map[string]any{"project_id": h.project, "name": "probe",
		"nodes": []map[string]any{{"key": "c", "kind": "code", "config": map[string]any{"language": "sh", "source": h.probe()}}}})
	workflow := c.id(c.post("/api/workflows", string(wf), 201))
	var started struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(c.post("/api/workflows/"+workflow+"/runs", `{}`, 201)), &started); err != nil {
		t.Fatal(err)
	}
	var run apiRun
	eventually(t, 2*time.Minute, "the workflow run ends", func() bool {
		run = c.workflowRun(started.RunID)
		return run.Status != "queued" && run.Status != "running"
	})
	held = 0
	if len(run.Nodes) == 1 {
		held = heldIn(run.Nodes[0].Output)
	}
	if run.Status != "succeeded" || held != allProbes {
		t.Errorf("code node: %s, %d of %d held: %s %+v", run.Status, held, allProbes, run.Error, run.Nodes)
	}

	task := c.createTask(h.project, h.probe())
	c.waitAll([]string{task}, 2*time.Minute, "done", "failed")
	text := eventsText(c.events(task))
	if got := strings.Count(text, "held "); got != allProbes || strings.Contains(text, "LEAK") || c.task(task).Status != "done" {
		t.Errorf("shell task: %s, %d of %d held:\n%s", c.task(task).Status, got, allProbes, text)
	}
}

// TestHostileTenant: on the process backend as root (a per-job uid, private
// mounts, Landlock), as an unprivileged user (Landlock) and on Docker, none
// of the tenant's probes reaches the server.
func TestHostileTenant(t *testing.T) {
	t.Parallel()
	t.Run("process as root", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("needs root")
		}
		h := startHostile(t, nil, "SERVICE_AGENT_BACKEND=process")
		if !strings.Contains(h.p.logs(), "contained by: a per-job uid with private mounts") {
			t.Errorf("the log does not say what contains the jobs:\n%s", h.p.logs())
		}
		h.assertContained(t)
	})
	t.Run("process as an unprivileged user", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("needs root to become another user")
		}
		h := startHostile(t, &syscall.Credential{Uid: 65534, Gid: 65534}, "SERVICE_AGENT_BACKEND=process")
		if !strings.Contains(h.p.logs(), "contained by: Landlock ABI") {
			t.Skipf("this host has no Landlock: nothing contains an unprivileged server's jobs\n%s", h.p.logs())
		}
		// CI installs bubblewrap: then it is a layer too.
		if _, err := exec.LookPath("bwrap"); err == nil && !strings.Contains(h.p.logs(), ", bubblewrap") {
			t.Errorf("bubblewrap is installed but not a layer:\n%s", h.p.logs())
		}
		h.assertContained(t)
	})
	t.Run("docker", func(t *testing.T) {
		t.Parallel()
		host := agenttest.DockerHost(t)
		h := startHostile(t, nil, "SERVICE_AGENT_BACKEND=docker", "DOCKER_HOST="+host, "SERVICE_AGENT_IMAGE="+agenttest.TestImage,
			"SERVICE_AGENT_BINARY="+agenttest.Binary(t), "AGENT_NETWORK=slipway-test-agents")
		if !strings.Contains(h.p.logs(), "sandbox=docker") {
			t.Errorf("the log does not say what contains the jobs:\n%s", h.p.logs())
		}
		h.assertContained(t)
	})
}

// TestUncontainedRunsAdminsOnly: with no layer (SERVICE_PROCESS_SANDBOX=off
// stands for a host that has none), a non-admin's code is refused with the
// reason and the fix, at the API and at the worker; an admin's runs (and
// its probes reach everything: the probes can tell).
func TestUncontainedRunsAdminsOnly(t *testing.T) {
	t.Parallel()
	h := startHostile(t, nil, "SERVICE_AGENT_BACKEND=process", "SERVICE_PROCESS_SANDBOX=off")
	if !strings.Contains(h.p.logs(), "NOTHING CONTAINS") {
		t.Errorf("the log does not warn:\n%s", h.p.logs())
	}
	body, _ := json.Marshal(map[string]string{"name": "probe", "slug": "probe", "language": "sh", "source": h.probe()})
	script := h.tenant.id(h.tenant.post("/api/scripts", string(body), 201))
	refusal := h.tenant.post("/api/scripts/"+script+"/run", `{}`, 403)
	var e struct {
		Code  string `json:"code"`
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(refusal), &e) != nil || e.Code != "forbidden" || !strings.Contains(e.Error, "install Docker") {
		t.Errorf("refusal %s", refusal)
	}
	h.tenant.post("/api/tasks", `{"project_id":"`+h.project+`","prompt":"true"}`, 403)

	// Work that arrives another way (a webhook) is refused by the worker with
	// the same reason.
	wf, _ := json.Marshal(map[string]any{"project_id": h.project, "name": "hooked",
		"nodes": []map[string]any{{"key": "c", "kind": "code", "config": map[string]any{"language": "sh", "source": h.probe()}}}})
	workflow := h.tenant.id(h.tenant.post("/api/workflows", string(wf), 201))
	var trigger struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(h.tenant.post("/api/workflows/"+workflow+"/triggers", `{"kind":"webhook"}`, 201)), &trigger); err != nil {
		t.Fatal(err)
	}
	var delivered struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(newAPIClient(t, h.p).post("/api/workflows/triggers/webhook/"+trigger.Token, `{}`, 202)), &delivered); err != nil {
		t.Fatal(err)
	}
	var run apiRun
	eventually(t, time.Minute, "the webhook's run ends", func() bool {
		run = h.tenant.workflowRun(delivered.RunID)
		return run.Status != "queued" && run.Status != "running"
	})
	if run.Status != "failed" || !strings.Contains(run.Error, "install Docker") {
		t.Errorf("a webhook's code on an uncontained server: %s %q", run.Status, run.Error)
	}

	status, held, log := h.runScript(t, h.admin, "admin-probe")
	if status != "succeeded" || held == allProbes || !strings.Contains(log, "LEAK read-database") {
		t.Errorf("admin's script: %s, %d held (the probes must see an uncontained job reach the database):\n%s", status, held, log)
	}
}
