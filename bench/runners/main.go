// Command runners measures the runner API against a real hub
// (bench/README.md, "Remote runners"):
//
//   - pickup: a task created over the API → a runner's long-poll claim
//     answering with it (the runner's own HTTP client, as `slipway
//     runner` uses it), median, p90 and p99;
//
//   - steering: a message sent to a task a runner works on
//     (POST /api/tasks/{id}/intervene) → the line in the runner's hands
//     (its control long poll nudged, its lease renewal carrying the line),
//     median, p90 and p99;
//
//   - heartbeats: N simulated runners, each with its own connection and
//     static token, heartbeating every interval for a while: p50 and p99
//     heartbeat latency and the hub's CPU (from /proc).
//
//     go build -o /tmp/slipway ./cmd/slipway
//     go run ./bench/runners -bin /tmp/slipway -engine sqlite
//     go run ./bench/runners -bin /tmp/slipway -engine postgres
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"slipway/internal/runner"
	"slipway/internal/runnerapi"
	"slipway/internal/runners"
	"slipway/internal/workport"
)

func main() {
	bin := flag.String("bin", "", "slipway binary (required)")
	engine := flag.String("engine", "sqlite", "sqlite or postgres")
	pgServer := flag.String("pg", "postgres://postgres@127.0.0.1:5432", "PostgreSQL server for -engine postgres")
	pickups := flag.Int("pickups", 200, "tasks for the pickup figure")
	messages := flag.Int("messages", 200, "messages for the steering figure")
	herd := flag.Int("herd", 0, "more runners long-polling during the pickup figure (all woken by every enqueue)")
	n := flag.Int("runners", 1000, "simulated runners heartbeating")
	interval := flag.Duration("interval", time.Second, "heartbeat interval of each simulated runner")
	duration := flag.Duration("duration", 20*time.Second, "how long the runners heartbeat")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "runners: -bin is required")
		os.Exit(2)
	}
	if err := run(*bin, *engine, *pgServer, *pickups, *messages, *herd, *n, *interval, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "runners:", err)
		os.Exit(1)
	}
}

type hub struct {
	url  string
	pid  int
	http *http.Client
	csrf string
}

func (h *hub) do(method, path string, body any, out any) error {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.url+path, r)
	req.Header.Set("Content-Type", "application/json")
	if h.csrf != "" {
		req.Header.Set("X-CSRF-Token", h.csrf)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "service_csrf" {
			h.csrf = c.Value
		}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

var listening = regexp.MustCompile(`msg=listening addr=\S*:(\d+)`)

// start runs the hub on a fresh database and signs an admin in.
func start(bin, engine, pgServer, dir string) (*hub, func(), error) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SERVER_PORT=0", "SERVICE_DATA_DIR=" + filepath.Join(dir, "data"),
		"SERVICE_HUB_MODE=true", "SERVICE_AGENT_BACKEND=process", "SERVICE_INITIAL_ADMIN_EMAILS=bench@example.test", "SERVICE_LOG_LEVEL=info",
		"MAX_PARALLEL_TASKS_PER_WORKSPACE=1000"}
	cleanup := func() {}
	if engine == "postgres" {
		name := fmt.Sprintf("slipway_bench_runners_%d", os.Getpid())
		admin := pgServer + "/postgres?sslmode=disable"
		if out, err := exec.Command("psql", "-q", admin, "-c", "CREATE DATABASE "+name).CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("creating the database: %v %s", err, out)
		}
		env = append(env, "DATABASE_URL="+pgServer+"/"+name+"?sslmode=disable")
		cleanup = func() { exec.Command("psql", "-q", admin, "-c", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)").Run() }
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	cmd.Dir = dir
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		cleanup()
		return nil, nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait(); cleanup() }
	port := make(chan string, 1)
	go func() {
		buf := make([]byte, 64<<10)
		var all []byte
		for {
			k, err := stderr.Read(buf)
			all = append(all, buf[:k]...)
			if m := listening.FindSubmatch(all); m != nil {
				select {
				case port <- string(m[1]):
				default:
				}
			}
			if err != nil {
				return
			}
			if len(all) > 1<<20 {
				all = all[len(all)-4096:]
			}
		}
	}()
	var p string
	select {
	case p = <-port:
	case <-time.After(30 * time.Second):
		stop()
		return nil, nil, fmt.Errorf("the hub did not listen")
	}
	jar, _ := cookiejar.New(nil)
	h := &hub{url: "http://127.0.0.1:" + p, pid: cmd.Process.Pid, http: &http.Client{Jar: jar, Timeout: time.Minute}}
	for i := 0; ; i++ {
		if resp, err := http.Get(h.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if i > 300 {
			stop()
			return nil, nil, fmt.Errorf("the hub is not ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
	pw := map[string]string{"email": "bench@example.test", "password": "bench-password-42", "display_name": "Bench"}
	if err := h.do("POST", "/api/auth/register", pw, nil); err != nil {
		stop()
		return nil, nil, err
	}
	if err := h.do("POST", "/api/auth/login", map[string]string{"email": pw["email"], "password": pw["password"]}, nil); err != nil {
		stop()
		return nil, nil, err
	}
	return h, stop, nil
}

func run(bin, engine, pgServer string, pickups, messages, herd, n int, interval, duration time.Duration) error {
	dir, err := os.MkdirTemp("", "slipway-bench-runners-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	h, stop, err := start(bin, engine, pgServer, dir)
	if err != nil {
		return err
	}
	defer stop()
	bare := filepath.Join(dir, "repo.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v %s", err, out)
	}
	var project struct{ ID string }
	if err := h.do("POST", "/api/projects", map[string]any{"name": "bench", "repo_url": bare}, &project); err != nil {
		return err
	}
	fmt.Printf("engine %s, hub pid %d\n", engine, h.pid)
	if err := pickup(h, project.ID, pickups, herd); err != nil {
		return err
	}
	if messages > 0 {
		if err := steering(h, project.ID, messages); err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	return heartbeats(h, n, interval, duration)
}

func newRunner(h *hub, name string) (*runner.Client, string, error) {
	var created runners.CreatedRunner
	if err := h.do("POST", "/api/organization/runners", map[string]any{"name": name}, &created); err != nil {
		return nil, "", err
	}
	c, err := runner.NewClient(h.url, runner.TLSFiles{}, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, "", err
	}
	c.SetToken(created.Token)
	return c, created.Runner.ID, nil
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + " ms"
}

// pickup: runners (1 + herd) long-poll; each task is created while they
// wait; the figure is from sending the create to a claim answering with it
// (with a herd, every enqueue wakes all of them and one wins).
func pickup(h *hub, project string, count, herd int) error {
	type claimed struct {
		c  *runner.Client
		as []workport.Assignment
		at time.Time
	}
	got := make(chan claimed, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hb := runnerapi.Heartbeat{Version: "bench", Backend: "process", Slots: 1}
	for i := 0; i <= herd; i++ {
		c, id, err := newRunner(h, fmt.Sprintf("pickup-%d", i))
		if err != nil {
			return err
		}
		if _, err := c.Heartbeat(ctx, hb); err != nil {
			return err
		}
		go func() {
			beat := time.NewTicker(20 * time.Second)
			defer beat.Stop()
			for ctx.Err() == nil {
				select {
				case <-beat.C:
					c.Heartbeat(ctx, hb)
				default:
				}
				as, err := c.Claim(ctx, workport.ClaimRequest{Worker: runnerapi.Owner(id), Backend: "process", Max: 1, Wait: 25 * time.Second})
				if err != nil || len(as) == 0 {
					continue
				}
				got <- claimed{c: c, as: as, at: time.Now()}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // every claim is waiting at the hub
	var lat []time.Duration
	for i := 0; i < count; i++ {
		sent := time.Now()
		if err := h.do("POST", "/api/tasks", map[string]any{"project_id": project, "prompt": "true"}, nil); err != nil {
			return err
		}
		var cl claimed
		select {
		case cl = <-got:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("task %d was not claimed", i)
		}
		lat = append(lat, cl.at.Sub(sent))
		if err := cl.c.Finish(context.Background(), cl.as[0].Lease, workport.Result{Outcome: workport.Failed, Error: "benchmark"}); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond) // the winner is back in its long poll
	}
	fmt.Printf("pickup (create task → runner claim answered), %d tasks, %d runners waiting: median %s, p90 %s, p99 %s, max %s\n",
		count, herd+1, ms(percentile(lat, 0.5)), ms(percentile(lat, 0.9)), ms(percentile(lat, 0.99)), ms(percentile(lat, 1)))
	// What the waiting runners cost the hub while nothing happens.
	cpu0, err := cpu(h.pid)
	if err != nil {
		return err
	}
	const idle = 10 * time.Second
	time.Sleep(idle)
	cpu1, err := cpu(h.pid)
	if err != nil {
		return err
	}
	fmt.Printf("idle with %d runners in long polls: hub CPU %.1f%% of one core\n", herd+1, 100*float64(cpu1-cpu0)/float64(idle))
	return nil
}

// cpu is the process's user+system time.
func cpu(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ
}

func heartbeats(h *hub, n int, interval, duration time.Duration) error {
	clients := make([]*runner.Client, n)
	labels := []string{"linux", "amd64"}
	for i := range clients {
		c, _, err := newRunner(h, fmt.Sprintf("sim-%d", i))
		if err != nil {
			return err
		}
		clients[i] = c
	}
	var mu sync.Mutex
	var lat []time.Duration
	errors := 0
	cpu0, err := cpu(h.pid)
	if err != nil {
		return err
	}
	start := time.Now()
	end := start.Add(duration)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.Int64N(int64(interval)))) // spread, as runners started at different times are
			t := time.NewTicker(interval)
			defer t.Stop()
			for time.Now().Before(end) {
				began := time.Now()
				_, err := c.Heartbeat(context.Background(), runnerapi.Heartbeat{Labels: labels, Version: "bench", Backend: "docker", Slots: 4})
				d := time.Since(began)
				mu.Lock()
				if err != nil {
					errors++
				} else {
					lat = append(lat, d)
				}
				mu.Unlock()
				<-t.C
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu1, err := cpu(h.pid)
	if err != nil {
		return err
	}
	fmt.Printf("heartbeats: %d runners every %s for %s: %d heartbeats (%.0f/s), %d errors; latency p50 %s, p99 %s, max %s; hub CPU %.1f%% of one core\n",
		n, interval, duration, len(lat), float64(len(lat))/wall.Seconds(), errors, ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)),
		ms(percentile(lat, 1)), 100*float64(cpu1-cpu0)/float64(wall))
	return nil
}

// steering: a runner holds a task; each message sent to it is timed from
// the send to the line arriving with the runner's lease renewal, which its
// control long poll's deliver nudge asks for.
func steering(h *hub, project string, count int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, id, err := newRunner(h, "steered")
	if err != nil {
		return err
	}
	if _, err := c.Heartbeat(ctx, runnerapi.Heartbeat{Version: "bench", Backend: "process", Slots: 1}); err != nil {
		return err
	}
	var task struct{ ID string }
	if err := h.do("POST", "/api/tasks", map[string]any{"project_id": project, "prompt": "true"}, &task); err != nil {
		return err
	}
	as, err := c.Claim(ctx, workport.ClaimRequest{Worker: runnerapi.Owner(id), Backend: "process", Max: 1, Wait: 25 * time.Second})
	if err != nil || len(as) != 1 {
		return fmt.Errorf("claiming the steered task: %v (%d)", err, len(as))
	}
	lease := as[0].Lease
	defer c.Finish(context.Background(), lease, workport.Result{Outcome: workport.Failed, Error: "benchmark"})
	if _, err := c.Extend(ctx, lease, 0); err != nil { // started
		return err
	}
	ctrl, err := c.Control(ctx, runnerapi.Owner(id))
	if err != nil {
		return err
	}
	arrived := make(chan time.Time, 16)
	go func() {
		var after int64
		for ctl := range ctrl {
			if ctl.Action != workport.ActionDeliver || ctl.JobID != lease.JobID {
				continue
			}
			d, err := c.Extend(ctx, lease, after)
			if err != nil {
				continue
			}
			for _, l := range d.Inbox {
				after = l.Seq
				arrived <- time.Now()
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // the control long poll is waiting at the hub
	var lat, posted []time.Duration
	for i := 0; i < count; i++ {
		sent := time.Now()
		if err := h.do("POST", "/api/tasks/"+task.ID+"/intervene", map[string]any{"text": fmt.Sprintf("message %d", i)}, nil); err != nil {
			return err
		}
		posted = append(posted, time.Since(sent))
		select {
		case at := <-arrived:
			lat = append(lat, at.Sub(sent))
		case <-time.After(30 * time.Second):
			return fmt.Errorf("message %d never reached the runner", i)
		}
		time.Sleep(5 * time.Millisecond) // the control stream is back in its long poll
	}
	fmt.Printf("steering (intervene → the line in the runner's hands), %d messages: median %s, p90 %s, p99 %s, max %s (the POST answered: median %s)\n",
		count, ms(percentile(lat, 0.5)), ms(percentile(lat, 0.9)), ms(percentile(lat, 0.99)), ms(percentile(lat, 1)), ms(percentile(posted, 0.5)))
	return nil
}
