// Command runsize measures what one stored webhook run costs in the
// database (bench/README.md, "Storage per run"): it starts a real slipway
// binary on a fresh SQLite file or PostgreSQL database, creates through the
// HTTP API the sync webhook -> transform -> end workflow of bench/webhook.sh,
// fires warm-up deliveries, stops the server and measures the database, then
// fires N deliveries, stops it again and measures again. The figure is
// (size after - size before) / (runs after - runs before), with the growth
// of each table (indexes and TOAST included) beside it.
//
// SQLite: the server is stopped (its last connection checkpoints the WAL);
// the file is checkpointed again with wal_checkpoint(TRUNCATE), and the size
// is the file plus its WAL; the pages in use (page_count - freelist_count)
// and dbstat's per-table pages are shown beside it. PostgreSQL: VACUUM, then
// pg_database_size, and pg_total_relation_size per table.
//
//	go build -o /tmp/slipway ./cmd/slipway
//	go run ./bench/runsize -bin /tmp/slipway -n 20000
//	go run ./bench/runsize -bin /tmp/slipway -engines sqlite -n 5000 -c 4
//	go run ./bench/runsize -bin /tmp/slipway -n 5000 -pad 4000   # a 4 KB body
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

func main() {
	bin := flag.String("bin", "", "slipway binary to measure")
	n := flag.Int("n", 20000, "deliveries measured")
	warm := flag.Int("warm", 200, "deliveries before the first measurement")
	conns := flag.Int("c", 8, "deliveries in flight at once")
	engines := flag.String("engines", "sqlite postgres", "databases to measure")
	pgServer := flag.String("pg", "postgres://postgres@127.0.0.1:5432", "PostgreSQL server (a database is created and dropped)")
	flag.IntVar(&pad, "pad", 0, "bytes of padding in each delivery's body (a real webhook's body is kilobytes)")
	flag.BoolVar(&keep, "keep", false, "keep the SQLite data directory and the PostgreSQL database for a look")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: runsize -bin PATH [-n 20000] [-c 8] [-engines 'sqlite postgres']")
		os.Exit(2)
	}
	for _, e := range strings.Fields(*engines) {
		if err := measure(e, *bin, *pgServer, *n, *warm, *conns); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", e, err)
			os.Exit(1)
		}
	}
}

var (
	keep bool
	pad  int
)

// sizes is a database's size in bytes: total, and per table.
type sizes struct {
	total, used int64 // used: SQLite's pages in use (total minus free pages)
	tables      map[string]int64
	runs        int64
}

func measure(engine, bin, pgServer string, n, warm, conns int) error {
	dir, err := os.MkdirTemp("", "slipway-runsize-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("kept:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SERVICE_DATA_DIR=" + filepath.Join(dir, "data"), "SERVICE_LOG_LEVEL=warn",
		"SERVICE_INITIAL_ADMIN_EMAILS=bench@example.test", "SERVICE_AGENT_BACKEND=process", "SERVICE_SHUTDOWN_LB_DELAY_SECS=0"}
	var dbURL, adminURL string
	switch engine {
	case "sqlite":
		dbURL = "sqlite:" + filepath.Join(dir, "data", "slipway.db")
	case "postgres":
		name := fmt.Sprintf("slipway_bench_runsize_%d", os.Getpid())
		adminURL = pgServer + "/postgres?sslmode=disable"
		admin, err := sql.Open("pgx", adminURL)
		if err != nil {
			return err
		}
		defer admin.Close()
		if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
			return err
		}
		if keep {
			fmt.Println("kept database:", name)
		} else {
			defer admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		}
		dbURL = pgServer + "/" + name + "?sslmode=disable"
	default:
		return fmt.Errorf("unknown engine %q", engine)
	}
	env = append(env, "DATABASE_URL="+dbURL)

	srv, err := start(bin, env, dir)
	if err != nil {
		return err
	}
	c, err := signIn(srv.url)
	if err != nil {
		srv.stop()
		return err
	}
	repo := filepath.Join(dir, "repo.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", repo).CombinedOutput(); err != nil {
		srv.stop()
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	hook, err := setUp(c, srv.url, repo)
	if err != nil {
		srv.stop()
		return err
	}
	if _, err := fire(srv.url+hook, warm, conns); err != nil {
		srv.stop()
		return err
	}
	srv.stop()
	before, err := size(engine, dbURL)
	if err != nil {
		return err
	}

	srv, err = start(bin, env, dir)
	if err != nil {
		return err
	}
	took, err := fire(srv.url+hook, n, conns)
	srv.stop()
	if err != nil {
		return err
	}
	after, err := size(engine, dbURL)
	if err != nil {
		return err
	}

	runs := after.runs - before.runs
	fmt.Printf("== %s: %d webhook runs stored (%d deliveries of %d bytes at %d in flight, %.0f/s)\n", engine, runs, n, len(body()), conns,
		float64(n)/took.Seconds())
	fmt.Printf("bytes per run: %.0f (database %d -> %d bytes)\n", float64(after.total-before.total)/float64(runs), before.total, after.total)
	if engine == "sqlite" {
		fmt.Printf("pages in use per run: %.0f bytes\n", float64(after.used-before.used)/float64(runs))
	}
	type growth struct {
		name string
		d    int64
	}
	var gs []growth
	for t, s := range after.tables {
		if d := s - before.tables[t]; d != 0 {
			gs = append(gs, growth{t, d})
		}
	}
	slices.SortFunc(gs, func(a, b growth) int { return int(b.d - a.d) })
	for _, g := range gs {
		fmt.Printf("  %-24s %7.0f bytes per run\n", g.name, float64(g.d)/float64(runs))
	}
	return nil
}

type server struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

func start(bin string, env []string, dir string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	logf, err := os.OpenFile(filepath.Join(dir, "serve.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(slices.Clone(env), "SERVER_PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(s.done) }()
	for begin := time.Now(); time.Since(begin) < 60*time.Second; time.Sleep(50 * time.Millisecond) {
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			return nil, fmt.Errorf("the server ended: %s", log)
		default:
		}
		if resp, err := http.Get(s.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
	}
	s.stop()
	return nil, fmt.Errorf("not ready within a minute")
}

// stop ends the server the way an operator does (SIGTERM: it drains and
// closes its databases), and waits for it.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// client is a signed-in API client.
type client struct {
	http         *http.Client
	cookie, csrf string
	url          string
}

func signIn(url string) (*client, error) {
	c := &client{http: &http.Client{Timeout: 30 * time.Second}, url: url}
	body := `{"email":"bench@example.test","password":"bench-password-42","display_name":"Bench"}`
	if _, err := c.do("POST", "/api/auth/register", body, nil); err != nil {
		return nil, err
	}
	resp, err := c.http.Post(url+"/api/auth/login", "application/json", strings.NewReader(`{"email":"bench@example.test","password":"bench-password-42"}`))
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	var session string
	for _, ck := range resp.Cookies() {
		switch ck.Name {
		case "service_session":
			session = ck.Value
		case "service_csrf":
			c.csrf = ck.Value
		}
	}
	if session == "" {
		return nil, fmt.Errorf("login failed: %s", resp.Status)
	}
	c.cookie = "service_session=" + session + "; service_csrf=" + c.csrf
	return c, nil
}

func (c *client) do(method, path, body string, out any) ([]byte, error) {
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cookie != "" {
		req.Header.Set("Cookie", c.cookie)
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		return b, json.Unmarshal(b, out)
	}
	return b, nil
}

// setUp creates the project, the workflow of bench/webhook.sh and its sync
// webhook, and returns the webhook's path.
func setUp(c *client, url, repo string) (string, error) {
	var project, workflow struct {
		ID string `json:"id"`
	}
	if _, err := c.do("POST", "/api/projects", fmt.Sprintf(`{"name":"bench","repo_url":%q}`, repo), &project); err != nil {
		return "", err
	}
	wf := `{"project_id":"` + project.ID + `","name":"double",
	  "nodes":[{"key":"double","kind":"transform","config":{"mapping":{"ok":"true","n":"input.n * 2"}}},
	           {"key":"respond","kind":"end","config":{"output":"nodes.double.output"}}],
	  "edges":[{"source":"double","target":"respond"}]}`
	if _, err := c.do("POST", "/api/workflows", wf, &workflow); err != nil {
		return "", err
	}
	var trigger struct {
		ReceiverURL string `json:"receiver_url"`
	}
	if _, err := c.do("POST", "/api/workflows/"+workflow.ID+"/triggers", `{"kind":"webhook","config":{"response_mode":"sync"}}`, &trigger); err != nil {
		return "", err
	}
	if trigger.ReceiverURL == "" {
		return "", fmt.Errorf("no receiver_url")
	}
	return strings.TrimPrefix(trigger.ReceiverURL, url), nil
}

// body is each delivery's body: {"n":21}, padded with -pad bytes of hex.
func body() []byte {
	if pad == 0 {
		return []byte(`{"n":21}`)
	}
	// Hex of pseudo-random bytes: PostgreSQL compresses a value over
	// 2 KB, and a run of one letter would compress to nothing.
	r := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, (pad+1)/2)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	return []byte(`{"n":21,"pad":"` + hex.EncodeToString(raw)[:pad] + `"}`)
}

// fire posts n deliveries, conns at a time, each answered {"n":42,"ok":true}.
func fire(hook string, n, conns int) (time.Duration, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	b := body()
	begin := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				resp, err := hc.Post(hook, "application/json", bytes.NewReader(b))
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"n":42,"ok":true}` {
						err = fmt.Errorf("delivery: %s: %s", resp.Status, b)
					}
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(begin), firstErr
}

func size(engine, dbURL string) (*sizes, error) {
	ctx := context.Background()
	s := &sizes{tables: map[string]int64{}}
	if engine == "sqlite" {
		path := strings.TrimPrefix(dbURL, "sqlite:")
		d, err := sql.Open("sqlite", path)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		d.SetMaxOpenConns(1)
		if _, err := d.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return nil, err
		}
		for _, f := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(f); err == nil {
				s.total += fi.Size()
			}
		}
		var pages, free, pageSize int64
		if err := d.QueryRowContext(ctx, "SELECT page_count, freelist_count, page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size").
			Scan(&pages, &free, &pageSize); err != nil {
			return nil, err
		}
		s.used = (pages - free) * pageSize
		return s, tables(ctx, d, s, `SELECT COALESCE(m.tbl_name, d.name), SUM(d.pgsize) FROM dbstat d
			LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1`)
	}
	d, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if _, err := d.ExecContext(ctx, "VACUUM (ANALYZE)"); err != nil {
		return nil, err
	}
	if err := d.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&s.total); err != nil {
		return nil, err
	}
	return s, tables(ctx, d, s, `SELECT relname, pg_total_relation_size(oid) FROM pg_class
		WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace`)
}

// tables adds what query says each table (indexes included) takes to s,
// and counts the runs stored.
func tables(ctx context.Context, d *sql.DB, s *sizes, query string) error {
	rows, err := d.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return err
		}
		s.tables[name] += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return d.QueryRowContext(ctx, "SELECT COUNT(*) FROM workflow_runs").Scan(&s.runs)
}
