// Command realtime measures the realtime hub (bench/README.md, "Console and
// realtime"): an event appended to a task's log (one transaction through
// the runs service, as a worker's batch is) → the event in the hands of a
// browser socket subscribed to the task, with idle sockets connected
// besides (each subscribed to its workspace's topics), median, p90 and p99.
// Beside it, the same events as a client polling the events endpoint (what
// the console had to do before) sees them.
//
// It boots a real server in this process on a fresh database and talks to
// it over loopback with real WebSocket and HTTP clients.
//
//	go run ./bench/realtime -engine sqlite
//	go run ./bench/realtime -engine postgres           # relay off
//	go run ./bench/realtime -engine postgres -relay    # through LISTEN/NOTIFY
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"slipway/internal/config"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/realtime"
	"slipway/internal/runs"
	"slipway/internal/server"

	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	engine := flag.String("engine", "sqlite", "sqlite or postgres")
	pgServer := flag.String("pg", "postgres://postgres@127.0.0.1:5432", "PostgreSQL server for -engine postgres")
	relay := flag.Bool("relay", false, "SERVICE_HUB_EVENT_RELAY=true (notes through LISTEN/NOTIFY)")
	idle := flag.Int("idle", 1000, "idle sockets connected besides the measuring one")
	events := flag.Int("events", 500, "events appended, one transaction each")
	gap := flag.Duration("gap", 5*time.Millisecond, "pause between appends")
	poll := flag.Duration("poll", time.Second, "the polling client's interval")
	flag.Parse()
	if err := run(*engine, *pgServer, *relay, *idle, *events, *gap, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "realtime:", err)
		os.Exit(1)
	}
}

func run(engine, pgServer string, relay bool, idle, events int, gap, poll time.Duration) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "slipway-bench-realtime-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := map[string]string{"SERVICE_DATA_DIR": dir, "SERVICE_INITIAL_ADMIN_EMAILS": "bench@example.com",
		"SERVICE_SHUTDOWN_LB_DELAY_SECS": "0", "SERVICE_LOG_LEVEL": "error", "SERVICE_HUB_EVENT_RELAY": fmt.Sprint(relay)}
	if engine == "postgres" {
		name := "slipway_bench_" + strings.ReplaceAll(ids.New()[:8], "-", "")
		admin, err := sql.Open("pgx", pgServer+"/postgres?sslmode=disable")
		if err != nil {
			return err
		}
		if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
			return err
		}
		defer func() {
			admin.Exec("DROP DATABASE " + name + " WITH (FORCE)")
			admin.Close()
		}()
		env["DATABASE_URL"] = pgServer + "/" + name + "?sslmode=disable"
	}
	cfg, err := config.Load(config.MapLookup(env))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := server.Boot(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()
	srv, err := server.New(cfg, log, d)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln, nil, nil) }()
	defer func() { stop(); <-done }()
	base := "http://" + ln.Addr().String()

	// An account, a project on a local repository, a held task.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	call := func(method, path, body string, out any) error {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		u, _ := url.Parse(base)
		for _, c := range jar.Cookies(u) {
			if c.Name == "service_csrf" {
				req.Header.Set("X-CSRF-Token", c.Value)
			}
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if out != nil {
			return json.Unmarshal(b, out)
		}
		return nil
	}
	repo := filepath.Join(dir, "repo.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", repo).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v %s", err, out)
	}
	if err := call("POST", "/api/auth/register", `{"email":"bench@example.com","password":"a-long-passphrase","display_name":"Bench"}`, nil); err != nil {
		return err
	}
	if err := call("POST", "/api/auth/login", `{"email":"bench@example.com","password":"a-long-passphrase"}`, nil); err != nil {
		return err
	}
	var project struct{ ID string }
	if err := call("POST", "/api/projects", `{"name":"bench","repo_url":"`+repo+`"}`, &project); err != nil {
		return err
	}
	var task struct {
		ID          string `json:"id"`
		WorkspaceID string `json:"workspace_id"`
	}
	if err := call("POST", "/api/tasks", `{"project_id":"`+project.ID+`","prompt":"true","hold":true}`, &task); err != nil {
		return err
	}
	u, _ := url.Parse(base)
	var cookie []string
	for _, c := range jar.Cookies(u) {
		cookie = append(cookie, c.Name+"="+c.Value)
	}
	header := http.Header{"Cookie": {strings.Join(cookie, "; ")}}
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/api/realtime"

	// Idle sockets, each watching its workspace's topics.
	start := time.Now()
	var sockets []*websocket.Conn
	for i := 0; i < idle; i++ {
		c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: header})
		if err != nil {
			return fmt.Errorf("idle socket %d: %w", i, err)
		}
		for _, topic := range []string{"tasks", "approvals"} {
			b, _ := json.Marshal(realtime.Command{Op: "subscribe", Sub: topic, Stream: topic})
			c.Write(ctx, websocket.MessageText, b)
		}
		go func() { // read (and drop) what comes: the acknowledgements
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
		sockets = append(sockets, c)
	}
	defer func() {
		for _, c := range sockets {
			c.CloseNow()
		}
	}()
	fmt.Printf("%d idle sockets connected in %s (hub: %d connections)\n", idle, time.Since(start).Round(time.Millisecond), srv.Services.Realtime.Connections())

	// The measuring socket.
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		return err
	}
	defer c.CloseNow()
	var existing []runs.TaskEvent
	if err := call("GET", "/api/tasks/"+task.ID+"/events?limit=1000", "", &existing); err != nil || len(existing) == 0 {
		return fmt.Errorf("the task's log: %v", err)
	}
	last := existing[len(existing)-1].SequenceNum
	b, _ := json.Marshal(realtime.Command{Op: "subscribe", Sub: "t", Stream: "task", ID: task.ID, After: int64(last)})
	c.Write(ctx, websocket.MessageText, b)
	if _, _, err := c.Read(ctx); err != nil { // subscribed
		return err
	}

	var mu sync.Mutex
	sent := map[string]time.Time{}
	var wsLat, pollLat []time.Duration
	got := make(chan struct{}, events)
	go func() {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			at := time.Now()
			var m realtime.Message
			var e runs.TaskEvent
			if json.Unmarshal(b, &m) != nil || m.Type != "event" || json.Unmarshal(m.Event, &e) != nil {
				continue
			}
			var p struct{ Mark string }
			json.Unmarshal(e.Payload, &p)
			mu.Lock()
			if t0, ok := sent[p.Mark]; ok {
				wsLat = append(wsLat, at.Sub(t0))
			}
			mu.Unlock()
			got <- struct{}{}
		}
	}()

	// The poller, as the console polled before: every interval, the events after the last seen.
	pollDone := make(chan struct{})
	go func() {
		after := last
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-pollDone:
				return
			case <-t.C:
			}
			var evs []runs.TaskEvent
			if err := call("GET", fmt.Sprintf("/api/tasks/%s/events?after_sequence=%d&limit=1000", task.ID, after), "", &evs); err != nil {
				continue
			}
			at := time.Now()
			mu.Lock()
			for _, e := range evs {
				var p struct{ Mark string }
				json.Unmarshal(e.Payload, &p)
				if t0, ok := sent[p.Mark]; ok {
					pollLat = append(pollLat, at.Sub(t0))
				}
				after = e.SequenceNum
			}
			mu.Unlock()
		}
	}()

	var txTimes []time.Duration
	for i := 0; i < events; i++ {
		mark := fmt.Sprintf("m%d", i)
		t0 := time.Now()
		mu.Lock()
		sent[mark] = t0
		mu.Unlock()
		err := d.Tx(ctx, func(tx *db.Tx) error {
			return srv.Services.Runs.Append(ctx, tx, task.WorkspaceID, task.ID, "",
				runs.NewEvent{Type: "output", Payload: json.RawMessage(`{"mark":"` + mark + `","line":"hello from the agent"}`)})
		})
		if err != nil {
			return err
		}
		txTimes = append(txTimes, time.Since(t0))
		time.Sleep(gap)
	}
	deadline := time.After(30 * time.Second)
	for i := 0; i < events; i++ {
		select {
		case <-got:
		case <-deadline:
			return fmt.Errorf("%d of %d events arrived", i, events)
		}
	}
	time.Sleep(poll + 200*time.Millisecond)
	close(pollDone)
	mu.Lock()
	defer mu.Unlock()
	mode := engine
	if relay {
		mode += " with the relay (LISTEN/NOTIFY)"
	}
	fmt.Printf("engine %s, %d events, %d idle sockets\n", mode, events, idle)
	fmt.Printf("append transaction:            %s\n", summary(txTimes))
	fmt.Printf("appended → socket:             %s\n", summary(wsLat))
	fmt.Printf("appended → poller (every %s): %s\n", poll, summary(pollLat))
	return nil
}

func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("median %s, p90 %s, p99 %s (n=%d)", round(q(0.5)), round(q(0.9)), round(q(0.99)), len(s))
}

func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
