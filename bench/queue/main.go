// Command queue measures Slipway's job queue (internal/platform/jobs) and
// River (github.com/riverqueue/river) side by side, on SQLite and on
// PostgreSQL, on this machine (bench/README.md, docs/decisions.md):
//
//   - throughput: N jobs inserted up front (not timed), then worked with a
//     no-op until the queue is drained, in jobs/s; two shapes: "one at a
//     time" (a worker of W slots, each slot working one job: Slipway's
//     internal/worker, River's MaxWorkers) and "batches" (400 jobs in
//     flight: 2 Slipway claimers of up to 200 jobs each completing them
//     together, River with MaxWorkers 400);
//   - pickup: enqueue → the worker's code starts, with every worker idle and
//     waiting, median and p90 over S jobs enqueued one at a time (on
//     PostgreSQL from a second pool, as another replica would; on SQLite in
//     the same process, the only way SQLite is shared).
//
// Every run gets a fresh database (a new SQLite file, or a new PostgreSQL
// database created and dropped here). River runs with its defaults
// (FetchCooldown 100 ms, FetchPollInterval 1 s), with the settings of its
// own benchmark, `river bench` (2 ms, 20 ms), and, for "one at a time",
// with those settings and each job completed in the worker's transaction
// (JobCompleteTx). Slipway's queue runs as the hub runs it: woken by its bus
// (NOTIFY on PostgreSQL, in-process on SQLite), polling each second only as
// a fallback. -rounds repeats everything and reports medians and ranges.
//
//	go run ./bench/queue                     # both engines
//	go run ./bench/queue -rounds 3           # the figures in bench/README.md
//	go run ./bench/queue -engines sqlite     # no PostgreSQL needed
//	go run ./bench/queue -pg 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
package main

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/migrations"
)

type config struct {
	pgAdmin    string
	workers    int           // "one at a time": workers, one job each
	claimers   int           // "batches": claimers
	batch      int           // "batches": jobs per claim
	jobsSingle int           // jobs of a "one at a time" run
	jobsBatch  int           // jobs of a "batches" run
	samples    int           // pickup samples
	gapMin     time.Duration // pickup: pause between two enqueues, at least
	gapMax     time.Duration // and at most
	timeout    time.Duration // per run
	rounds     int
	verbose    bool
}

// result is one row of the report: one run, or the runs of every round.
type result struct {
	engine, queue, figure string
	jobs                  int
	rates                 []float64       // jobs/s of each run (throughput rows)
	lat                   []time.Duration // pickup samples of every run (pickup rows)
	medians               []time.Duration // the pickup median of each run
	err                   error
}

func (r result) key() string { return r.engine + "\x00" + r.queue + "\x00" + r.figure }

func main() {
	var c config
	engines := flag.String("engines", "sqlite,postgres", "engines to measure (sqlite, postgres)")
	flag.StringVar(&c.pgAdmin, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"PostgreSQL URL of a user that may create databases (one is created and dropped per run)")
	flag.IntVar(&c.workers, "workers", 8, "\"one at a time\": workers, each holding one job")
	flag.IntVar(&c.claimers, "claimers", 2, "\"batches\": Slipway claimers (River gets claimers×batch workers)")
	flag.IntVar(&c.batch, "batch", 200, "\"batches\": jobs per claim")
	flag.IntVar(&c.jobsSingle, "jobs-single", 2000, "jobs per \"one at a time\" run")
	flag.IntVar(&c.jobsBatch, "jobs-batch", 10000, "jobs per \"batches\" run")
	flag.IntVar(&c.samples, "samples", 60, "pickup: jobs enqueued one at a time")
	flag.DurationVar(&c.gapMin, "gap-min", 105*time.Millisecond, "pickup: least pause between enqueues (above River's default FetchCooldown, so that every enqueue may notify)")
	flag.DurationVar(&c.gapMax, "gap-max", 125*time.Millisecond, "pickup: most pause between enqueues")
	flag.DurationVar(&c.timeout, "timeout", 2*time.Minute, "give up a run after this long")
	flag.IntVar(&c.rounds, "rounds", 1, "repeat everything this many times (the report gives medians and ranges)")
	flag.BoolVar(&c.verbose, "v", false, "River's warnings and errors on stderr")
	flag.Parse()

	var results []result
	index := map[string]int{}
	for round := 0; round < c.rounds; round++ {
		for _, e := range strings.Split(*engines, ",") {
			engine := db.Engine(strings.TrimSpace(e))
			if engine != db.SQLite && engine != db.Postgres {
				fmt.Fprintf(os.Stderr, "unknown engine %q\n", e)
				os.Exit(2)
			}
			for _, r := range runEngine(c, engine) {
				i, ok := index[r.key()]
				if !ok {
					index[r.key()] = len(results)
					results = append(results, r)
					continue
				}
				a := &results[i]
				a.rates = append(a.rates, r.rates...)
				a.lat = append(a.lat, r.lat...)
				a.medians = append(a.medians, r.medians...)
				a.err = errors.Join(a.err, r.err)
			}
		}
	}
	report(c, results)
	for _, r := range results {
		if r.err != nil {
			os.Exit(1)
		}
	}
}

// queues under test: Slipway's, River with its defaults, River with the
// settings of `river bench`, and those settings with each job completed in
// the worker's own transaction (JobCompleteTx), as Slipway completes a job
// with the writes of its result.
type variant struct {
	name              string
	river             bool
	fetchCooldown     time.Duration
	fetchPollInterval time.Duration
	completeTx        bool // River: JobCompleteTx in the worker
	onlySingle        bool // only the "one at a time" figure
}

var variants = []variant{
	{name: "Slipway"},
	{name: "River, defaults (cooldown 100ms, poll 1s)", river: true, fetchCooldown: river.FetchCooldownDefault, fetchPollInterval: river.FetchPollIntervalDefault},
	{name: "River, river bench's (cooldown 2ms, poll 20ms)", river: true, fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond},
	{name: "River, same, JobCompleteTx per job", river: true, fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond,
		completeTx: true, onlySingle: true},
}

func runEngine(c config, engine db.Engine) []result {
	var out []result
	shapes := []struct {
		name string
		jobs int
	}{
		{fmt.Sprintf("throughput, one at a time, %d workers", c.workers), c.jobsSingle},
		{fmt.Sprintf("throughput, batches, %d×%d in flight", c.claimers, c.batch), c.jobsBatch},
	}
	for si, s := range shapes {
		for _, v := range variants {
			if v.onlySingle && si != 0 {
				continue
			}
			n := s.jobs
			if v.river && v.fetchCooldown >= 50*time.Millisecond && si == 0 {
				// With its default 100 ms cooldown River fetches at most
				// W jobs per cooldown: a tenth of the jobs tells the rate.
				n = max(n/10, 10*c.workers)
			}
			r := result{engine: string(engine), queue: v.name, figure: s.name, jobs: n}
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			batched := si == 1
			var rate float64
			if v.river {
				rate, r.err = riverThroughput(ctx, c, engine, v, n, batched)
			} else {
				rate, r.err = slipwayThroughput(ctx, c, engine, n, batched)
			}
			cancel()
			if r.err == nil {
				r.rates = []float64{rate}
			}
			progress(r)
			out = append(out, r)
		}
	}
	for _, v := range variants {
		if v.onlySingle {
			continue
		}
		r := result{engine: string(engine), queue: v.name, figure: fmt.Sprintf("pickup, %d idle worker slots", c.workers), jobs: c.samples}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		var lat []time.Duration
		if v.river {
			lat, r.err = riverPickup(ctx, c, engine, v)
		} else {
			lat, r.err = slipwayPickup(ctx, c, engine)
		}
		cancel()
		if r.err == nil {
			median, _ := quantiles(lat)
			r.lat, r.medians = lat, []time.Duration{median}
		}
		progress(r)
		out = append(out, r)
	}
	return out
}

func quantiles(lat []time.Duration) (median, p90 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*9/10]
}

func progress(r result) {
	fmt.Fprintf(os.Stderr, "%-8s %-48s %-38s %s\n", r.engine, r.queue, r.figure, r.summary())
}

// summary is a row's figure: the median rate of its runs (with their range),
// or the median and p90 of every pickup sample (with the range of the runs'
// medians).
func (r result) summary() string {
	switch {
	case r.err != nil:
		return "error: " + r.err.Error()
	case len(r.rates) > 0:
		s := slices.Clone(r.rates)
		slices.Sort(s)
		out := fmt.Sprintf("%.0f jobs/s", s[len(s)/2])
		if len(s) > 1 {
			out += fmt.Sprintf(" (%.0f–%.0f)", s[0], s[len(s)-1])
		}
		return out
	case len(r.lat) > 0:
		median, p90 := quantiles(r.lat)
		out := fmt.Sprintf("median %s, p90 %s", ms(median), ms(p90))
		if len(r.medians) > 1 {
			s := slices.Clone(r.medians)
			slices.Sort(s)
			out += fmt.Sprintf(" (medians %s–%s)", ms(s[0]), ms(s[len(s)-1]))
		}
		return out
	}
	return "nothing measured"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func report(c config, results []result) {
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "engine\tqueue\tfigure\tjobs per run\tresult")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.engine, r.queue, r.figure, r.jobs, r.summary())
	}
	tw.Flush()
	fmt.Printf("\n%d round(s); pickup: one job at a time, %s–%s apart, enqueued on PostgreSQL through a second pool "+
		"(another replica's), on SQLite in the same process\n", c.rounds, c.gapMin, c.gapMax)
}

// ---- databases ----

// fresh is a new empty database of the engine and a function that removes it.
func fresh(ctx context.Context, c config, engine db.Engine) (db.Target, func(), error) {
	if engine == db.SQLite {
		dir, err := os.MkdirTemp("", "slipway-queue-bench-")
		if err != nil {
			return db.Target{}, nil, err
		}
		return db.Target{Engine: db.SQLite, Path: filepath.Join(dir, "queue.db")}, func() { os.RemoveAll(dir) }, nil
	}
	admin, err := sql.Open("pgx", c.pgAdmin)
	if err != nil {
		return db.Target{}, nil, err
	}
	b := make([]byte, 6)
	crand.Read(b)
	name := "slipway_queue_bench_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return db.Target{}, nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(c.pgAdmin)
	if err != nil {
		admin.Close()
		return db.Target{}, nil, err
	}
	u.Path = "/" + name
	drop := func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "dropping %s: %v\n", name, err)
		}
		admin.Close()
	}
	return db.Target{Engine: db.Postgres, URL: u.String()}, drop, nil
}

// ---- Slipway ----

type slipway struct {
	d   *db.DB
	bus *pubsub.Bus
	q   *jobs.Queue
}

func openSlipway(ctx context.Context, t db.Target) (*slipway, error) {
	d, err := db.Open(ctx, t)
	if err != nil {
		return nil, err
	}
	bus := pubsub.New(d, slog.New(slog.DiscardHandler))
	if err := bus.Listening(ctx); err != nil {
		bus.Close()
		d.Close()
		return nil, err
	}
	return &slipway{d: d, bus: bus, q: jobs.New(d, bus, clock.System{}, nil)}, nil
}

func (s *slipway) close() {
	s.bus.Close()
	s.d.Close()
}

const kind = "bench"

func slipwayThroughput(ctx context.Context, c config, engine db.Engine, n int, batched bool) (float64, error) {
	t, drop, err := fresh(ctx, c, engine)
	if err != nil {
		return 0, err
	}
	defer drop()
	s, err := openSlipway(ctx, t)
	if err != nil {
		return 0, err
	}
	defer s.close()
	if _, err := s.d.NewMigrations(migrations.FS, nil).Up(ctx); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	batch := make([]jobs.NewJob, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, jobs.NewJob{Kind: kind, Payload: map[string]int{"n": i}})
		if len(batch) == cap(batch) || i == n-1 {
			if err := s.q.EnqueueMany(ctx, batch); err != nil {
				return 0, err
			}
			batch = batch[:0]
		}
	}

	start := time.Now()
	var done int
	if batched {
		done, err = s.claimBatches(ctx, c.claimers, c.batch)
	} else {
		done, err = s.work(ctx, c.workers, false, nil)
	}
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if done != n {
		return 0, fmt.Errorf("%d of %d jobs done", done, n)
	}
	return float64(n) / elapsed.Seconds(), nil
}

// claimBatches is BenchmarkClaimComplete's loop: claimers take up to batch
// jobs a claim and complete them in one transaction (CompleteMany), until
// the queue is empty.
func (s *slipway) claimBatches(ctx context.Context, claimers, batch int) (int, error) {
	var done atomic.Int64
	errs := make(chan error, claimers)
	var wg sync.WaitGroup
	for w := 0; w < claimers; w++ {
		wg.Add(1)
		go func(owner string) {
			defer wg.Done()
			for ctx.Err() == nil {
				js, err := s.q.Claim(ctx, jobs.ClaimRequest{Kinds: []string{kind}, Owner: owner, Max: batch, Lease: time.Minute}, nil)
				if err != nil {
					errs <- err
					return
				}
				if len(js) == 0 {
					return // everything was queued up front: drained
				}
				ls := make([]jobs.Lease, len(js))
				for i, j := range js {
					ls[i] = j.Lease()
				}
				k, err := s.q.CompleteMany(ctx, ls)
				if err != nil || k != len(ls) {
					errs <- fmt.Errorf("completed %d of %d: %v", k, len(ls), err)
					return
				}
				done.Add(int64(k))
			}
		}(fmt.Sprintf("bench-%d", w))
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return int(done.Load()), ctx.Err()
}

// work runs a worker as the hub's is (internal/worker): slots jobs at a
// time, one claim loop taking up to the free slots, each job in a goroutine
// of its own that completes it in its own transaction (as the hub completes
// a job with the writes of its result) and frees its slot. wait=false
// returns once the queue is empty (all jobs were queued up front); wait=true
// waits for work as the dispatcher's claim does (woken by the bus, polling
// each second as a fallback) until ctx ends. started, when set, is called as
// each job starts.
func (s *slipway) work(ctx context.Context, slots int, wait bool, started func(*jobs.Job) error) (int, error) {
	sub := s.bus.Subscribe(jobs.TopicQueued)
	defer sub.Close()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	freed := make(chan struct{}, 1) // a slot was freed since the loop last looked
	errs := make(chan error, slots)
	var active, done atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case err := <-errs:
			return int(done.Load()), err
		default:
		}
		if ctx.Err() != nil {
			return int(done.Load()), nil
		}
		free := slots - int(active.Load())
		var js []*jobs.Job
		if free > 0 {
			var err error
			js, err = s.q.Claim(ctx, jobs.ClaimRequest{Kinds: []string{kind}, Owner: "bench", Max: free, Lease: time.Minute}, nil)
			if err != nil {
				if ctx.Err() != nil {
					return int(done.Load()), nil
				}
				return int(done.Load()), err
			}
		}
		for _, j := range js {
			active.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					active.Add(-1)
					select {
					case freed <- struct{}{}:
					default:
					}
				}()
				if started != nil {
					if err := started(j); err != nil {
						errs <- err
						return
					}
				}
				if err := s.d.Tx(ctx, func(tx *db.Tx) error {
					_, err := s.q.Complete(ctx, tx, j.Lease())
					return err
				}); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				done.Add(1)
			}()
		}
		if len(js) > 0 {
			continue
		}
		if free > 0 && !wait && active.Load() == 0 {
			return int(done.Load()), nil // drained
		}
		if free == 0 || !wait {
			select {
			case <-freed:
			case <-ctx.Done():
			}
			continue
		}
		select {
		case <-sub.C:
		case <-poll.C:
		case <-freed:
		case <-ctx.Done():
		}
	}
}

// slipwayPickup: a worker of c.workers slots waits for work (work with
// wait=true) while jobs are enqueued one at a time.
func slipwayPickup(ctx context.Context, c config, engine db.Engine) ([]time.Duration, error) {
	t, drop, err := fresh(ctx, c, engine)
	if err != nil {
		return nil, err
	}
	defer drop()
	worker, err := openSlipway(ctx, t)
	if err != nil {
		return nil, err
	}
	defer worker.close()
	if _, err := worker.d.NewMigrations(migrations.FS, nil).Up(ctx); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	from := worker
	if engine == db.Postgres {
		// Another replica: its own pool and its own listener.
		if from, err = openSlipway(ctx, t); err != nil {
			return nil, err
		}
		defer from.close()
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	waited := make(chan time.Duration, c.samples)
	errs := make(chan error, 1)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_, err := worker.work(wctx, c.workers, true, func(j *jobs.Job) error {
			var p struct{ At int64 }
			if err := json.Unmarshal(j.Payload, &p); err != nil {
				return err
			}
			waited <- time.Since(time.Unix(0, p.At))
			return nil
		})
		if err != nil {
			errs <- err
		}
	}()
	time.Sleep(200 * time.Millisecond) // the worker waiting
	enqueue := func() error {
		return from.d.Tx(ctx, func(tx *db.Tx) error {
			_, err := from.q.Enqueue(ctx, tx, jobs.NewJob{Kind: kind, Payload: map[string]int64{"at": time.Now().UnixNano()}})
			return err
		})
	}
	lat, err := collect(ctx, c, enqueue, waited, errs)
	stop()
	<-stopped
	return lat, err
}

// collect enqueues c.samples jobs one at a time, each once the previous one
// started and a pause passed, and gathers how long each waited.
func collect(ctx context.Context, c config, enqueue func() error, waited <-chan time.Duration, errs <-chan error) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < c.samples; i++ {
		gap := c.gapMin + time.Duration(rand.Int64N(int64(c.gapMax-c.gapMin)+1))
		time.Sleep(gap)
		if err := enqueue(); err != nil {
			return nil, err
		}
		select {
		case d := <-waited:
			out = append(out, d)
		case err := <-errs:
			return nil, err
		case <-time.After(10 * time.Second):
			return nil, errors.New("a job did not start within 10 s")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// ---- River ----

type benchArgs struct {
	N  int   `json:"n"`
	At int64 `json:"at,omitempty"` // pickup: when it was enqueued (Unix ns)
}

func (benchArgs) Kind() string { return kind }

type benchWorker struct {
	river.WorkerDefaults[benchArgs]
	waited chan<- time.Duration // pickup only
	// complete, when set, completes the job in a transaction of its own
	// (JobCompleteTx) before Work returns.
	complete func(ctx context.Context, j *river.Job[benchArgs]) error
}

func (w *benchWorker) Work(ctx context.Context, j *river.Job[benchArgs]) error {
	if w.waited != nil {
		w.waited <- time.Since(time.Unix(0, j.Args.At))
	}
	if w.complete != nil {
		return w.complete(ctx, j)
	}
	return nil
}

func riverLogger(c config) *slog.Logger {
	if c.verbose {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

type pgxTx = pgx.Tx

// riverDB is River's side of one database: a driver for the workers' client
// and one for the inserting client (the same on SQLite, a second pool on
// PostgreSQL).
type riverDB[TTx any] struct {
	work, insert riverdriver.Driver[TTx]
	// complete completes a job in a transaction of the workers' pool.
	complete func(ctx context.Context, j *river.Job[benchArgs]) error
	close    func()
}

func openRiverSQLite(ctx context.Context, t db.Target) (*riverDB[*sql.Tx], error) {
	// River's advice for SQLite: WAL and one connection (its background
	// services would otherwise meet SQLITE_BUSY); the other pragmas are
	// Slipway's (db.sqlitePragmas), so that both commit as durably.
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "synchronous(NORMAL)", "temp_store(MEMORY)"} {
		q.Add("_pragma", p)
	}
	pool, err := sql.Open("sqlite", "file:"+t.Path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(1)
	if err := pool.PingContext(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	d := riversqlite.New(pool)
	complete := func(ctx context.Context, j *river.Job[benchArgs]) error {
		tx, err := pool.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := river.JobCompleteTx[*riversqlite.Driver](ctx, tx, j); err != nil {
			return err
		}
		return tx.Commit()
	}
	return &riverDB[*sql.Tx]{work: d, insert: d, complete: complete, close: func() { pool.Close() }}, nil
}

func openRiverPostgres(ctx context.Context, t db.Target) (*riverDB[pgxTx], error) {
	pools := make([]*pgxpool.Pool, 2)
	for i := range pools {
		cfg, err := pgxpool.ParseConfig(t.URL)
		if err != nil {
			return nil, err
		}
		cfg.MaxConns = int32(db.DefaultPoolSize()) // as many connections as Slipway's pool
		if pools[i], err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, err
		}
	}
	complete := func(ctx context.Context, j *river.Job[benchArgs]) error {
		tx, err := pools[0].Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.Background())
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, j); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	return &riverDB[pgxTx]{work: riverpgxv5.New(pools[0]), insert: riverpgxv5.New(pools[1]), complete: complete, close: func() {
		pools[0].Close()
		pools[1].Close()
	}}, nil
}

func riverThroughput(ctx context.Context, c config, engine db.Engine, v variant, n int, batched bool) (float64, error) {
	t, drop, err := fresh(ctx, c, engine)
	if err != nil {
		return 0, err
	}
	defer drop()
	if engine == db.SQLite {
		rdb, err := openRiverSQLite(ctx, t)
		if err != nil {
			return 0, err
		}
		defer rdb.close()
		return riverDrain(ctx, c, rdb, v, n, batched)
	}
	rdb, err := openRiverPostgres(ctx, t)
	if err != nil {
		return 0, err
	}
	defer rdb.close()
	return riverDrain(ctx, c, rdb, v, n, batched)
}

func migrateRiver[TTx any](ctx context.Context, c config, d riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(d, &rivermigrate.Config{Logger: riverLogger(c)})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	return nil
}

func newRiverClient[TTx any](c config, d riverdriver.Driver[TTx], v variant, maxWorkers int, w *benchWorker) (*river.Client[TTx], error) {
	cfg := &river.Config{
		FetchCooldown:     v.fetchCooldown,
		FetchPollInterval: v.fetchPollInterval,
		Logger:            riverLogger(c),
	}
	if w != nil {
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}}
	}
	return river.NewClient(d, cfg)
}

// riverDrain: N jobs inserted, then the client started; the run ends when
// the N completions were reported (River completes in batches after the
// worker returned: the completion event says it is stored, as in `river
// bench`).
func riverDrain[TTx any](ctx context.Context, c config, rdb *riverDB[TTx], v variant, n int, batched bool) (float64, error) {
	if err := migrateRiver(ctx, c, rdb.work); err != nil {
		return 0, err
	}
	maxWorkers := c.workers
	if batched {
		maxWorkers = c.claimers * c.batch
	}
	w := &benchWorker{}
	if v.completeTx {
		w.complete = rdb.complete
	}
	client, err := newRiverClient(c, rdb.work, v, maxWorkers, w)
	if err != nil {
		return 0, err
	}
	params := make([]river.InsertManyParams, 0, 1000)
	for i := 0; i < n; i++ {
		params = append(params, river.InsertManyParams{Args: benchArgs{N: i}})
		if len(params) == cap(params) || i == n-1 {
			if _, err := client.InsertManyFast(ctx, params); err != nil {
				return 0, fmt.Errorf("insert: %w", err)
			}
			params = params[:0]
		}
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 100, Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}})
	defer cancel()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		client.Stop(sctx)
	}()
	for done := 0; done < n; {
		select {
		case ev := <-events:
			if ev.Kind != river.EventKindJobCompleted {
				return 0, fmt.Errorf("job %d: %s", ev.Job.ID, ev.Kind)
			}
			done++
		case <-ctx.Done():
			return 0, fmt.Errorf("%d of %d jobs done: %w", done, n, ctx.Err())
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func riverPickup(ctx context.Context, c config, engine db.Engine, v variant) ([]time.Duration, error) {
	t, drop, err := fresh(ctx, c, engine)
	if err != nil {
		return nil, err
	}
	defer drop()
	if engine == db.SQLite {
		rdb, err := openRiverSQLite(ctx, t)
		if err != nil {
			return nil, err
		}
		defer rdb.close()
		return riverWait(ctx, c, rdb, v)
	}
	rdb, err := openRiverPostgres(ctx, t)
	if err != nil {
		return nil, err
	}
	defer rdb.close()
	return riverWait(ctx, c, rdb, v)
}

func riverWait[TTx any](ctx context.Context, c config, rdb *riverDB[TTx], v variant) ([]time.Duration, error) {
	if err := migrateRiver(ctx, c, rdb.work); err != nil {
		return nil, err
	}
	waited := make(chan time.Duration, c.samples)
	work, err := newRiverClient(c, rdb.work, v, c.workers, &benchWorker{waited: waited})
	if err != nil {
		return nil, err
	}
	insert := work
	if rdb.insert != rdb.work {
		// Another replica: an insert-only client on its own pool.
		if insert, err = newRiverClient(c, rdb.insert, v, 0, nil); err != nil {
			return nil, err
		}
	}
	if err := work.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		work.Stop(sctx)
	}()
	// Started: its producer fetched once (finding nothing) and listens.
	time.Sleep(500 * time.Millisecond)
	enqueue := func() error {
		_, err := insert.Insert(ctx, benchArgs{At: time.Now().UnixNano()}, nil)
		return err
	}
	return collect(ctx, c, enqueue, waited, nil)
}
