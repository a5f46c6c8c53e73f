// Command slipway is the whole product in one binary: the hub (serve), its
// database tools and the OpenAPI export. Subcommands are dispatched here;
// everything else lives in internal/.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"slipway/internal/agents/runtime"
	"slipway/internal/auth"
	"slipway/internal/buildinfo"
	"slipway/internal/config"
	"slipway/internal/executor/sandbox"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/runner"
	"slipway/internal/server"
	"slipway/migrations"
)

const usage = `slipway: AI coding agents and workflows on your own git repositories.

Usage:
  slipway <command> [flags]

Commands:
  serve            run the hub: API, dispatcher, local executor (configured by environment; see README)
  runner           run a remote runner: enrol with a hub, take its work, run it here (configured by environment; see README)
  agent            run the built-in coding agent (inside an agent container; speaks the stdio protocol)
  migrate up       apply pending database migrations
  migrate status   list applied, pending and newer-than-binary migrations
  openapi          write the public and management OpenAPI documents (--out DIR)
  users create     create an approved account offline (--email, [--name], [--admin]); password on stdin
  version          print the version

Run 'slipway <command> --help' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve":
		return serve(args[1:], stderr)
	case "runner":
		return runnerCmd(args[1:], stderr)
	case sandbox.HelperCommand:
		// Not in the usage: the process backend starts it to contain a job.
		return sandbox.Main(args[1:], stderr)
	case "agent":
		ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer cancel()
		return runtime.Main(ctx, os.Stdin, os.Stdout, os.Stderr)
	case "migrate":
		return migrate(args[1:], stdout, stderr)
	case "openapi":
		return openapi(args[1:], stdout, stderr)
	case "users":
		return users(args[1:], os.Stdin, stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "slipway %s (%s)\n", buildinfo.Version, buildinfo.GoVersion())
		return 0
	}
	fmt.Fprintf(stderr, "slipway: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func newFlags(name, help string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: slipway %s\n\n%s\n", name, help)
		fs.PrintDefaults()
	}
	return fs
}

// parse returns -1 to continue, or an exit code.
func parse(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	return -1
}

// configError prints one line per problem, each naming its variable.
func configError(stderr io.Writer, err error) int {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "slipway: configuration: %s\n", line)
	}
	return 1
}

func serve(args []string, stderr io.Writer) int {
	fs := newFlags("serve", "Runs the hub. All settings come from the environment (see README).", stderr)
	if code := parse(fs, args); code >= 0 {
		return code
	}
	cfg, err := config.Load(config.OSLookup)
	if err != nil {
		return configError(stderr, err)
	}
	log := server.NewLogger(cfg, os.Stderr)
	tuneGC()

	// First SIGTERM/SIGINT starts the graceful shutdown; a second one skips
	// the remaining waits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hard := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-sigs
		log.Info("signal received", "signal", sig.String())
		cancel()
		<-sigs
		close(hard)
	}()

	if err := server.Run(ctx, cfg, log, hard); err != nil {
		log.Error("serve failed", "err", err)
		return 1
	}
	return 0
}

func runnerCmd(args []string, stderr io.Writer) int {
	fs := newFlags("runner", "Runs a remote runner. All settings come from the environment (see README).", stderr)
	if code := parse(fs, args); code >= 0 {
		return code
	}
	cfg, err := config.LoadRunner(config.OSLookup)
	if err != nil {
		return configError(stderr, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The first SIGTERM/SIGINT stops the runner gracefully: its agents stop
	// and their work goes back to the hub to run again.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if err := runner.Run(ctx, cfg, log); err != nil {
		log.Error("runner stopped", "err", err)
		return 1
	}
	return 0
}

func migrate(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "up" && args[0] != "status") {
		fmt.Fprintln(stderr, "Usage: slipway migrate up|status")
		return 2
	}
	fs := newFlags("migrate "+args[0], "Uses DATABASE_URL and SERVICE_DATA_DIR.", stderr)
	if code := parse(fs, args[1:]); code >= 0 {
		return code
	}
	target, err := config.LoadDatabase(config.OSLookup)
	if err != nil {
		return configError(stderr, err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if target.Engine == db.SQLite {
		if _, err := os.Stat(target.Path); errors.Is(err, os.ErrNotExist) && args[0] == "status" {
			fmt.Fprintf(stdout, "database: %s (does not exist yet)\n", target)
		}
	}
	d, err := db.Open(ctx, target)
	if err != nil {
		fmt.Fprintf(stderr, "slipway: %v\n", err)
		return 1
	}
	defer d.Close()
	m := d.NewMigrations(migrations.FS, nil)

	if args[0] == "up" {
		applied, err := m.Up(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "slipway: %v\n", err)
			return 1
		}
		for _, a := range applied {
			fmt.Fprintf(stdout, "applied  %05d  %s\n", a.Version, a.Name)
		}
		fmt.Fprintf(stdout, "%d migration(s) applied to %s\n", len(applied), target)
		return 0
	}

	st, err := m.Status(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "slipway: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "database: %s\n", target)
	for _, a := range st.Applied {
		fmt.Fprintf(stdout, "applied  %05d  %-40s %s\n", a.Version, a.Name, a.AppliedAt.Format(time.RFC3339))
	}
	for _, p := range st.Pending {
		fmt.Fprintf(stdout, "pending  %05d  %s\n", p.Version, p.Name)
	}
	for _, v := range st.Newer {
		fmt.Fprintf(stdout, "newer    %05d  (applied by a newer binary)\n", v)
	}
	fmt.Fprintf(stdout, "%d applied, %d pending, %d newer than this binary\n", len(st.Applied), len(st.Pending), len(st.Newer))
	return 0
}

func openapi(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("openapi", "Writes public.json and management.json without listening.", stderr)
	out := fs.String("out", "docs/api", "directory to write the documents into")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	if err := server.WriteSpecs(*out); err != nil {
		fmt.Fprintf(stderr, "slipway: openapi: %v\n", err)
		return 1
	}
	for _, name := range server.SpecFiles {
		fmt.Fprintf(stdout, "wrote %s/%s\n", strings.TrimRight(*out, "/"), name)
	}
	return 0
}

func users(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "Usage: slipway users create --email EMAIL [--name NAME] [--admin] < password")
		return 2
	}
	fs := newFlags("users create", "Creates an approved account (with its own organization and workspace) without a running server.\n"+
		"Reads the password from the first line of standard input. Uses the serve configuration (DATABASE_URL, ...).", stderr)
	email := fs.String("email", "", "account email (required)")
	name := fs.String("name", "", "display name (default: the email's local part)")
	admin := fs.Bool("admin", false, "make the account an instance admin")
	if code := parse(fs, args[1:]); code >= 0 {
		return code
	}
	if *email == "" {
		fmt.Fprintln(stderr, "slipway: users create: --email is required")
		return 2
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "slipway: users create: reading the password: %v\n", err)
		return 1
	}
	password := strings.TrimRight(line, "\r\n")
	cfg, err := config.Load(config.OSLookup)
	if err != nil {
		return configError(stderr, err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err := server.Boot(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "slipway: %v\n", err)
		return 1
	}
	defer d.Close()
	s, err := server.New(cfg, log, d)
	if err != nil {
		fmt.Fprintf(stderr, "slipway: %v\n", err)
		return 1
	}
	p, err := s.Services.Auth.CreateUser(ctx, auth.RegisterInput{Email: *email, Password: password, DisplayName: *name}, *admin)
	if err != nil {
		if ae, ok := apperr.As(err); ok {
			fmt.Fprintf(stderr, "slipway: users create: %s\n", ae.Message)
		} else {
			fmt.Fprintf(stderr, "slipway: users create: %v\n", err)
		}
		return 1
	}
	fmt.Fprintf(stdout, "created %s (%s), approved, admin=%v\n", p.Email, p.ID, p.IsAdmin)
	return 0
}

// tuneGC makes the collector run a quarter as often as Go's default
// (GOGC=400 instead of 100) unless GOGC is set. The hub's live heap is a
// few MiB, so at the default a busy server collects every few hundred
// requests and hands memory back to the system in between: measured on a
// list endpoint, a fifth of the server's CPU went to marking and to the
// scavenger's madvise calls, and PostgreSQL served 4,200 list requests/s
// instead of 5,100. The price is a larger heap under load (see
// docs/decisions.md); GOGC=100 or GOMEMLIMIT restore the usual trade.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
}
