// Command flood measures what one tenant's output flood costs everyone else
// (bench/README.md, "Output floods"): tenant A's shell task prints -mb
// megabytes of 100-byte lines while tenant B, in another workspace, starts
// workflow runs (POST /api/workflows/{id}/runs) at -rate per second. It
// reports B's latency (median, p99, max), the server's resident memory
// (idle before the flood, peak during it), how long the flood took and
// what A's task stored of it.
//
//	go build -o /tmp/slipway ./cmd/slipway
//	go run ./bench/flood -bin /tmp/slipway -engine sqlite
//	go run ./bench/flood -bin /tmp/slipway -engine postgres
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "", "slipway binary (required)")
	engine := flag.String("engine", "sqlite", "sqlite or postgres")
	mb := flag.Int("mb", 100, "megabytes tenant A's task prints")
	rate := flag.Int("rate", 20, "workflow runs tenant B starts per second")
	pg := flag.String("pgserver", "postgres://postgres@127.0.0.1:5432", "PostgreSQL server for -engine postgres")
	extra := flag.String("env", "", "more settings for the server, comma-separated NAME=value")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "flood: -bin is required")
		os.Exit(2)
	}
	var more []string
	if *extra != "" {
		more = strings.Split(*extra, ",")
	}
	if err := run(*bin, *engine, *mb, *rate, *pg, more); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

type client struct {
	base string
	http *http.Client
	csrf string
}

func newClient(base string) *client {
	jar, _ := cookiejar.New(nil)
	return &client{base: base, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (c *client) do(method, path string, body any, want int) ([]byte, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, c.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if c.csrf != "" {
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	for _, ck := range resp.Cookies() {
		if ck.Name == "service_csrf" {
			c.csrf = ck.Value
		}
	}
	if resp.StatusCode != want {
		return out, fmt.Errorf("%s %s = %d: %s", method, path, resp.StatusCode, out)
	}
	return out, nil
}

func (c *client) id(method, path string, body any, want int) (string, error) {
	out, err := c.do(method, path, body, want)
	if err != nil {
		return "", err
	}
	var v struct {
		ID string `json:"id"`
	}
	json.Unmarshal(out, &v)
	return v.ID, nil
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v %s", args, err, out)
	}
	return nil
}

func bareRepo(dir string) (string, error) {
	bare, seed := filepath.Join(dir, "origin.git"), filepath.Join(dir, "seed")
	if err := git("", "init", "-q", "--bare", "-b", "main", bare); err != nil {
		return "", err
	}
	if err := git("", "init", "-q", "-b", "main", seed); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("hello\n"), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"}, {"push", "-q", bare, "main"}} {
		if err := git(seed, args...); err != nil {
			return "", err
		}
	}
	return bare, nil
}

func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

func run(bin, engine string, mb, rate int, pg string, more []string) error {
	dir, err := os.MkdirTemp("", "slipway-flood-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SERVICE_DATA_DIR=" + filepath.Join(dir, "data"), "SERVER_PORT=0",
		"SERVICE_LOG_LEVEL=info", "SERVICE_AGENT_BACKEND=process", "SERVICE_INITIAL_ADMIN_EMAILS=a@bench.test",
		"SERVICE_ARGON2_MEMORY_KIB=64", "SERVICE_ARGON2_TIME=1", "MAX_PARALLEL_TASKS_PER_WORKSPACE=100"}
	env = append(env, more...)
	if engine == "postgres" {
		name := fmt.Sprintf("slipway_bench_flood_%d", os.Getpid())
		psql := func(sql string) error {
			out, err := exec.Command("psql", "-q", pg+"/postgres?sslmode=disable", "-c", sql).CombinedOutput()
			if err != nil {
				return fmt.Errorf("psql: %v %s", err, out)
			}
			return nil
		}
		if err := psql("CREATE DATABASE " + name); err != nil {
			return err
		}
		defer psql("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		env = append(env, "DATABASE_URL="+pg+"/"+name+"?sslmode=disable")
	}
	create := exec.Command(bin, "users", "create", "--email", "b@bench.test")
	create.Env, create.Stdin = env, strings.NewReader("tenant-b-password\n")
	if out, err := create.CombinedOutput(); err != nil {
		return fmt.Errorf("users create: %v %s", err, out)
	}
	srv := exec.Command(bin, "serve")
	srv.Env = env
	logs, _ := os.Create(filepath.Join(dir, "serve.log"))
	if keep := os.Getenv("FLOOD_SERVER_LOG"); keep != "" {
		defer func() { b, _ := os.ReadFile(filepath.Join(dir, "serve.log")); os.WriteFile(keep, b, 0o644) }()
	}
	srv.Stderr = logs
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	var base string
	for i := 0; i < 300 && base == ""; i++ {
		time.Sleep(50 * time.Millisecond)
		b, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		if m := regexp.MustCompile(`msg=listening addr=\S*:(\d+)`).FindSubmatch(b); m != nil {
			base = "http://127.0.0.1:" + string(m[1])
		}
	}
	if base == "" {
		return fmt.Errorf("the server did not start")
	}
	a, b := newClient(base), newClient(base)
	if _, err := a.do("POST", "/api/auth/register", map[string]string{"email": "a@bench.test", "password": "tenant-a-password", "display_name": "A"}, 202); err != nil {
		return err
	}
	if _, err := a.do("POST", "/api/auth/login", map[string]string{"email": "a@bench.test", "password": "tenant-a-password"}, 200); err != nil {
		return err
	}
	if _, err := b.do("POST", "/api/auth/login", map[string]string{"email": "b@bench.test", "password": "tenant-b-password"}, 200); err != nil {
		return err
	}
	repoA, err := bareRepo(filepath.Join(dir, "a"))
	if err != nil {
		return err
	}
	repoB, err := bareRepo(filepath.Join(dir, "b"))
	if err != nil {
		return err
	}
	projA, err := a.id("POST", "/api/projects", map[string]string{"name": "a", "repo_url": repoA}, 201)
	if err != nil {
		return err
	}
	projB, err := b.id("POST", "/api/projects", map[string]string{"name": "b", "repo_url": repoB}, 201)
	if err != nil {
		return err
	}
	wf, err := b.id("POST", "/api/workflows", map[string]any{"project_id": projB, "name": "b",
		"nodes": []map[string]any{{"key": "t", "kind": "transform", "config": map[string]any{"mapping": map[string]string{"ok": "true"}}},
			{"key": "e", "kind": "end", "config": map[string]any{"output": "nodes.t.output"}}},
		"edges": []map[string]string{{"source": "t", "target": "e"}}}, 201)
	if err != nil {
		return err
	}
	pid := srv.Process.Pid
	// B's runs before the flood, then idle memory.
	var quiet []time.Duration
	for i := 0; i < 5*rate; i++ {
		start := time.Now()
		if _, err := b.do("POST", "/api/workflows/"+wf+"/runs", map[string]any{}, 201); err != nil {
			return err
		}
		quiet = append(quiet, time.Since(start))
		time.Sleep(time.Second / time.Duration(rate))
	}
	time.Sleep(2 * time.Second)
	idle := rss(pid)

	prompt := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x | fold -w 99\necho flood over >> README.md", mb<<20)
	task, err := a.id("POST", "/api/tasks", map[string]string{"project_id": projA, "prompt": prompt}, 201)
	if err != nil {
		return err
	}
	began := time.Now()
	peak := idle
	var lat []time.Duration
	status := ""
	for !slices.Contains([]string{"done", "done_pr", "failed", "cancelled"}, status) {
		start := time.Now()
		if _, err := b.do("POST", "/api/workflows/"+wf+"/runs", map[string]any{}, 201); err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
		if r := rss(pid); r > peak {
			peak = r
		}
		out, err := a.do("GET", "/api/tasks/"+task, nil, 200)
		if err != nil {
			return err
		}
		var t struct {
			Status string `json:"status"`
		}
		json.Unmarshal(out, &t)
		status = t.Status
		if time.Since(began) > 10*time.Minute {
			return fmt.Errorf("the flood did not end in 10 minutes")
		}
		time.Sleep(time.Second / time.Duration(rate))
	}
	took := time.Since(began)
	var events, logBytes int
	truncated := false
	for after := 0; ; {
		out, err := a.do("GET", fmt.Sprintf("/api/tasks/%s/events?after_sequence=%d&limit=1000", task, after), nil, 200)
		if err != nil {
			return err
		}
		var evs []struct {
			Seq     int             `json:"sequence_num"`
			Type    string          `json:"event_type"`
			Payload json.RawMessage `json:"payload"`
		}
		json.Unmarshal(out, &evs)
		for _, e := range evs {
			events++
			if e.Type == "log" {
				logBytes += len(e.Payload)
			}
			truncated = truncated || e.Type == "output_truncated"
			after = e.Seq
		}
		if len(evs) < 1000 {
			break
		}
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[min(len(s)-1, int(float64(len(s))*p))]
	}
	fmt.Printf("engine %s: %d MB printed by A's task in %s (status %s); stored %d events, %.1f MB of log, output_truncated=%v\n",
		engine, mb, took.Round(time.Millisecond), status, events, float64(logBytes)/(1<<20), truncated)
	fmt.Printf("B's POST /api/workflows/{id}/runs: quiet median %s p99 %s (%d); during the flood median %s p99 %s max %s (%d)\n",
		pct(quiet, 0.5).Round(time.Microsecond), pct(quiet, 0.99).Round(time.Microsecond), len(quiet),
		pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond), pct(lat, 1).Round(time.Microsecond), len(lat))
	fmt.Printf("server RSS: idle %.1f MiB, peak during the flood %.1f MiB (+%.1f MiB)\n",
		float64(idle)/(1<<20), float64(peak)/(1<<20), float64(peak-idle)/(1<<20))
	return nil
}
