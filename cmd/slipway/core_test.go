package main

// Real-process tests of the execution core: two replicas on one PostgreSQL,
// and kill -9 with tasks running, on both databases and both backends.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"slipway/internal/agenttest"
	"slipway/internal/executor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// bareRepo makes a bare repository with one commit on main.
func bareRepo(t *testing.T, dir string) string {
	t.Helper()
	bare := filepath.Join(dir, "origin.git")
	seed := filepath.Join(dir, "seed")
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", bare}, {"init", "-q", "-b", "main", seed}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}, {"push", "-q", bare, "main"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = seed
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return bare
}

// signIn registers (the first time) and signs in the admin account.
func signIn(t *testing.T, p *proc, register bool) *apiClient {
	t.Helper()
	c := newAPIClient(t, p)
	if register {
		c.post("/api/auth/register", `{"email":"root@example.test","password":"correct-horse-battery","display_name":"Root"}`, 202)
	}
	c.post("/api/auth/login", `{"email":"root@example.test","password":"correct-horse-battery"}`, 200)
	return c
}

type apiTask struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error"`
	Branch string `json:"branch"`
}

func (c *apiClient) task(id string) apiTask {
	c.t.Helper()
	var tk apiTask
	if err := json.Unmarshal([]byte(c.get("/api/tasks/"+id)), &tk); err != nil {
		c.t.Fatal(err)
	}
	return tk
}

type apiEvent struct {
	Type    string          `json:"event_type"`
	Payload json.RawMessage `json:"payload"`
}

func (c *apiClient) events(id string) []apiEvent {
	c.t.Helper()
	var evs []apiEvent
	if err := json.Unmarshal([]byte(c.get("/api/tasks/"+id+"/events?limit=1000")), &evs); err != nil {
		c.t.Fatal(err)
	}
	return evs
}

func (c *apiClient) createTask(project, prompt string) string {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"project_id": project, "prompt": prompt})
	return c.id(c.post("/api/tasks", string(body), 201))
}

// waitAll polls until every task is in one of the statuses.
func (c *apiClient) waitAll(ids []string, within time.Duration, statuses ...string) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		pending := 0
		var last apiTask
		for _, id := range ids {
			tk := c.task(id)
			ok := false
			for _, s := range statuses {
				ok = ok || tk.Status == s
			}
			if !ok {
				pending++
				last = tk
			}
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%d task(s) not %v after %s, e.g. %+v\n%s", pending, statuses, within, last, eventsText(c.events(last.ID)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func eventsText(evs []apiEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s\n", e.Type, e.Payload)
	}
	return b.String()
}

// claimedBy is the worker that claimed each run of the task, in order.
func claimedBy(evs []apiEvent) []string {
	var out []string
	for _, e := range evs {
		var p struct{ Reason string }
		if e.Type == "status" && json.Unmarshal(e.Payload, &p) == nil && strings.HasPrefix(p.Reason, "claimed by ") {
			out = append(out, strings.TrimPrefix(p.Reason, "claimed by "))
		}
	}
	return out
}

// successfulResults counts the task's agent results that reported success.
func successfulResults(evs []apiEvent) int {
	n := 0
	for _, e := range evs {
		var p struct{ Status string }
		if e.Type == "result" && json.Unmarshal(e.Payload, &p) == nil && p.Status == "success" {
			n++
		}
	}
	return n
}

func eventually(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func databaseEnv(t *testing.T, e db.Engine) []string {
	if e != db.Postgres {
		return nil
	}
	return []string{"DATABASE_URL=" + dbtest.EmptyTarget(t, db.Postgres).URL}
}

const sharedSecret = "a-shared-signing-secret-of-32-bytes-at-least"

// replicaEnv is what every replica of one PostgreSQL database shares
// (a database, a signing secret), plus extra settings.
func replicaEnv(t *testing.T, extra ...string) []string {
	return append(append(databaseEnv(t, db.Postgres), "SERVICE_AGENT_BACKEND=process", "SERVICE_INITIAL_ADMIN_EMAILS=root@example.test",
		"SERVICE_ARGON2_MEMORY_KIB=64", "SERVICE_ARGON2_TIME=1", "SERVICE_SHUTDOWN_LB_DELAY_SECS=0", "SERVICE_JWT_SECRET="+sharedSecret), extra...)
}

// startReplica starts one replica named name (its instance id and its data
// directory under dir) and waits until it is ready.
func startReplica(t *testing.T, dir, name string, env []string) *proc {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	p := start(t, d, append(env, "SERVICE_INSTANCE_ID="+name)...)
	p.waitReady(t)
	return p
}

// TestTwoReplicas: two slipway serve processes on one PostgreSQL claim 200
// tasks exactly once between them, a cancel sent to either stops the agent
// wherever it runs, and when one is killed with SIGKILL the other takes over
// its running work after the lease, with nothing lost, stuck or run twice.
func TestTwoReplicas(t *testing.T) {
	t.Parallel()
	dbtest.RequirePostgres(t)
	dir := t.TempDir()
	bare := bareRepo(t, dir)
	common := replicaEnv(t, "SERVICE_WORKER_LEASE_SECS=10", "SERVICE_WORKER_SLOTS=8", "MAX_PARALLEL_TASKS_PER_WORKSPACE=40")
	a := startReplica(t, dir, "replica-a", common)
	b := startReplica(t, dir, "replica-b", common)
	ca := signIn(t, a, true)
	cb := signIn(t, b, false)
	project := ca.id(ca.post("/api/projects", `{"name":"demo","repo_url":"`+bare+`","autodev":true}`, 201))

	// 200 tasks, created through both: each is claimed exactly once.
	var ids []string
	for i := 0; i < 200; i++ {
		c := ca
		if i%2 == 1 {
			c = cb
		}
		ids = append(ids, c.createTask(project, "true"))
	}
	ca.waitAll(ids, 3*time.Minute, "done")
	byReplica := map[string]int{}
	for _, id := range ids {
		evs := ca.events(id)
		claims := claimedBy(evs)
		if len(claims) != 1 || successfulResults(evs) != 1 {
			t.Fatalf("task %s was claimed %d times (%v):\n%s", id, len(claims), claims, eventsText(evs))
		}
		byReplica[claims[0]]++
	}
	if byReplica["hub@replica-a"] == 0 || byReplica["hub@replica-b"] == 0 || len(byReplica) != 2 {
		t.Fatalf("claims per replica = %v: both must have taken part", byReplica)
	}
	t.Logf("claims per replica: %v", byReplica)

	// Cancel through the replica that does not run the agent.
	marker := fmt.Sprintf("replica-cancel-%d", time.Now().UnixNano())
	long := ca.createTask(project, "echo started; sleep 301 # "+marker)
	eventually(t, time.Minute, "the agent starts", func() bool { return strings.Contains(eventsText(ca.events(long)), "started") })
	runner := claimedBy(ca.events(long))[0]
	other, otherName := cb, "replica-b"
	if runner == "hub@replica-b" {
		other, otherName = ca, "replica-a"
	}
	if len(agenttest.Processes(marker)) == 0 {
		t.Fatal("the agent's process is not there: the check proves nothing")
	}
	sent := time.Now()
	other.post("/api/tasks/"+long+"/cancel", "", 200)
	eventually(t, 30*time.Second, "the agent stops after a cancel sent to "+otherName, func() bool { return len(agenttest.Processes(marker)) == 0 })
	t.Logf("cancel through %s stopped the agent on %s in %s", otherName, runner, time.Since(sent).Round(time.Millisecond))
	if tk := ca.task(long); tk.Status != "cancelled" {
		t.Fatalf("cancelled task = %+v", tk)
	}

	// SIGKILL one replica with work running on it: the survivor takes it over.
	var slow []string
	for i := 0; i < 8; i++ {
		slow = append(slow, ca.createTask(project, fmt.Sprintf("echo go; sleep 3; echo %d > slow-%d.txt # slow-%d-%s", i, i, i, marker)))
	}
	var onA []int
	eventually(t, time.Minute, "replica-a runs some of the slow tasks", func() bool {
		onA = onA[:0]
		for i, id := range slow {
			evs := ca.events(id)
			if ca.task(id).Status == "running" && strings.Contains(eventsText(evs), `"line":"go"`) && claimedBy(evs)[0] == "hub@replica-a" {
				onA = append(onA, i)
			}
		}
		return len(onA) >= 2
	})
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.wait(t)
	killed := time.Now()
	// The dead replica's agents died with it (well before the survivor can
	// take their work over, after the 10 s lease).
	eventually(t, 3*time.Second, "the killed replica's agents die with it", func() bool {
		for _, i := range onA {
			if len(agenttest.Processes(fmt.Sprintf("slow-%d-%s", i, marker))) > 0 {
				return false
			}
		}
		return true
	})
	cb.waitAll(slow, 2*time.Minute, "done_pr")
	t.Logf("the survivor finished the killed replica's %d running tasks %s after the kill", len(onA), time.Since(killed).Round(time.Millisecond))
	for _, id := range slow {
		evs := cb.events(id)
		if successfulResults(evs) != 1 {
			t.Fatalf("task %s reported success %d times:\n%s", id, successfulResults(evs), eventsText(evs))
		}
	}
	for _, i := range onA {
		id := slow[i]
		evs := cb.events(id)
		claims := claimedBy(evs)
		if len(claims) != 2 || claims[0] != "hub@replica-a" || claims[1] != "hub@replica-b" ||
			!strings.Contains(eventsText(evs), "the server running this task stopped; it runs again") {
			t.Fatalf("task %s taken over from the killed replica: claims %v\n%s", id, claims, eventsText(evs))
		}
	}
	commitsOnce(t, bare, slow)
}

// commitsOnce checks that each task has exactly one commit in the
// repository (commit messages name their task).
func commitsOnce(t *testing.T, bare string, ids []string) {
	t.Helper()
	out, err := exec.Command("git", "-C", bare, "log", "--all", "--format=%B").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if n := strings.Count(string(out), "Task: "+id); n != 1 {
			t.Fatalf("task %s has %d commits in the repository, want 1", id, n)
		}
	}
}

// TestCrashWithTasksRunning: 18 tasks (six at a time), SIGKILL of the server while some
// run, a restart: every task ends once (one successful result, one commit),
// no agent outlives the server, no container is left, and a second server
// on the same Docker engine keeps its agent through the other's crash and
// restart. On both databases and both backends.
func TestCrashWithTasksRunning(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"process", "docker"} {
		for _, engine := range []db.Engine{db.SQLite, db.Postgres} {
			t.Run(backend+"/"+string(engine), func(t *testing.T) {
				if engine == db.Postgres {
					dbtest.RequirePostgres(t)
				}
				crashWithTasksRunning(t, backend, engine)
			})
		}
	}
}

func crashWithTasksRunning(t *testing.T, backend string, engine db.Engine) {
	dir := t.TempDir()
	bare := bareRepo(t, dir)
	env := append(databaseEnv(t, engine), "SERVICE_AGENT_BACKEND="+backend, "SERVICE_INITIAL_ADMIN_EMAILS=root@example.test",
		"SERVICE_ARGON2_MEMORY_KIB=64", "SERVICE_ARGON2_TIME=1", "SERVICE_SHUTDOWN_LB_DELAY_SECS=0", "MAX_PARALLEL_TASKS_PER_WORKSPACE=6")
	var docker *client.Client
	if backend == "docker" {
		host := agenttest.DockerHost(t)
		env = append(env, "DOCKER_HOST="+host, "SERVICE_AGENT_IMAGE="+agenttest.TestImage, "SERVICE_AGENT_BINARY="+agenttest.Binary(t),
			"AGENT_NETWORK=slipway-test-agents", "AGENT_MEMORY_BYTES=134217728", "AGENT_NANO_CPUS=500000000")
		var err error
		if docker, err = client.New(client.WithHost(host)); err != nil {
			t.Fatal(err)
		}
		defer docker.Close()
	}
	serverDir := filepath.Join(dir, "server")
	if err := os.MkdirAll(serverDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := start(t, serverDir, env...)
	p.waitReady(t)
	idBytes, err := os.ReadFile(filepath.Join(serverDir, "data", "instance-id"))
	if err != nil {
		t.Fatal(err)
	}
	instance := "hub@" + strings.TrimSpace(string(idBytes))
	c := signIn(t, p, true)
	project := c.id(c.post("/api/projects", `{"name":"demo","repo_url":"`+bare+`","autodev":true}`, 201))

	// A neighbour: another server on the same Docker engine (its own data
	// dir, so its own identity) with an agent running through the crash.
	var neighbour *apiClient
	var neighbourTask string
	if backend == "docker" {
		nd := filepath.Join(dir, "neighbour")
		if err := os.MkdirAll(nd, 0o755); err != nil {
			t.Fatal(err)
		}
		nbare := bareRepo(t, nd)
		// Its own database too (SQLite in its data dir).
		var nenv []string
		for _, e := range env {
			if !strings.HasPrefix(e, "DATABASE_URL=") {
				nenv = append(nenv, e)
			}
		}
		np := start(t, nd, nenv...)
		np.waitReady(t)
		neighbour = signIn(t, np, true)
		nproject := neighbour.id(neighbour.post("/api/projects", `{"name":"n","repo_url":"`+nbare+`","autodev":true}`, 201))
		neighbourTask = neighbour.createTask(nproject, "echo started; sleep 12; echo neighbour > n.txt")
		eventually(t, time.Minute, "the neighbour's agent starts", func() bool {
			return strings.Contains(eventsText(neighbour.events(neighbourTask)), "started")
		})
	}

	marker := fmt.Sprintf("crash-%d", time.Now().UnixNano())
	var ids []string
	for i := 0; i < 18; i++ {
		ids = append(ids, c.createTask(project, fmt.Sprintf("echo %d > out-%d.txt; sleep 1.5; echo wrote # %s", i, i, marker)))
	}
	// Mid-way: some done, some running.
	eventually(t, 2*time.Minute, "a third of the tasks finish", func() bool {
		done := 0
		for _, id := range ids {
			if c.task(id).Status == "done_pr" {
				done++
			}
		}
		return done >= len(ids)/3
	})
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t)

	// No agent outlives its server: process agents die at once; a container
	// agent stops when its stdin (the server's attach) goes.
	eventually(t, 15*time.Second, "the killed server's agents die", func() bool {
		if backend == "process" {
			return len(agenttest.Processes(marker)) == 0
		}
		list, err := docker.ContainerList(context.Background(), client.ContainerListOptions{
			Filters: make(client.Filters).Add("label", executor.InstanceLabel+"="+instance)})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items) == 0 // running ones only
	})

	p = start(t, serverDir, env...)
	p.waitReady(t)
	c.base = p.url("")
	c.waitAll(ids, 3*time.Minute, "done_pr")
	for i, id := range ids {
		evs := c.events(id)
		if n := successfulResults(evs); n != 1 {
			t.Fatalf("task %d reported success %d times:\n%s", i, n, eventsText(evs))
		}
		if got, err := exec.Command("git", "-C", bare, "show", c.task(id).Branch+":out-"+fmt.Sprint(i)+".txt").CombinedOutput(); err != nil ||
			strings.TrimSpace(string(got)) != fmt.Sprint(i) {
			t.Fatalf("task %d's file on its branch: %q, %v", i, got, err)
		}
	}
	commitsOnce(t, bare, ids)
	if !strings.Contains(p.logs(), "worker starting") || !strings.Contains(p.logs(), "backend="+backend) {
		t.Fatalf("the boot log does not say which backend runs agents:\n%s", p.logs())
	}
	if backend == "docker" {
		// Nothing of this server's is left on the engine, running or not.
		eventually(t, 15*time.Second, "no container of the server is left", func() bool {
			list, err := docker.ContainerList(context.Background(), client.ContainerListOptions{All: true,
				Filters: make(client.Filters).Add("label", executor.InstanceLabel+"="+instance)})
			if err != nil {
				t.Fatal(err)
			}
			return len(list.Items) == 0
		})
		// The neighbour's agent was left alone through the crash and restart.
		neighbour.waitAll([]string{neighbourTask}, 2*time.Minute, "done_pr", "failed")
		if tk := neighbour.task(neighbourTask); tk.Status != "done_pr" {
			t.Fatalf("the neighbour's task = %+v\n%s", tk, eventsText(neighbour.events(neighbourTask)))
		}
	} else if left := agenttest.Processes(marker); len(left) > 0 {
		t.Fatalf("agent processes outlived their run: %v", left)
	}
}
