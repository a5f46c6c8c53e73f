// Package executortest is the conformance suite every execution backend
// runs (Woodpecker's split of backends, River's one suite for every
// driver): what the worker relies on — separate stdout and stderr, exit
// codes, stdin, mounts and the working directory, environment, stopping an
// agent, and finding what a crashed process left behind — behaves the same
// on each.
package executortest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"slipway/internal/executor"
)

// Factory makes backends for the suite.
type Factory struct {
	// New returns a backend for a fresh instance identity (nothing of any
	// other test is visible to it).
	New func(t *testing.T) executor.Backend
	// Restarted returns a second backend of b's instance, as the next
	// process after a crash would make it: what b started is a leftover to it.
	Restarted func(t *testing.T, b executor.Backend) executor.Backend
	// Spec runs script with /bin/sh -c on the backend.
	Spec func(t *testing.T, script string) executor.Spec
	// Alive reports whether an agent whose command line holds marker still
	// runs anywhere on the backend.
	Alive func(t *testing.T, b executor.Backend, marker string) bool
}

// timeout bounds each step; nothing here is a timing assertion.
const timeout = 2 * time.Minute

type output struct {
	stdout, stderr string
	err            error // reading either stream failed
}

func collect(h executor.Handle) <-chan output {
	ch := make(chan output, 1)
	go func() {
		stderr := readAll("stderr", h.Stderr())
		out := <-readAll("stdout", h.Stdout())
		e := <-stderr
		ch <- output{stdout: out.s, stderr: e.s, err: errors.Join(out.err, e.err)}
	}()
	return ch
}

// text is what a stream carried, and the error that ended it early.
type text struct {
	s   string
	err error
}

// readAll reads r, the agent's stream name, to its end in the background.
func readAll(name string, r io.Reader) <-chan text {
	ch := make(chan text, 1)
	go func() {
		b, err := io.ReadAll(r)
		if err != nil {
			err = fmt.Errorf("reading %s: %w", name, err)
		}
		ch <- text{string(b), err}
	}()
	return ch
}

func start(t *testing.T, b executor.Backend, spec executor.Spec) executor.Handle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	h, err := b.Start(ctx, spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Kill(context.Background()); err != nil {
			t.Errorf("kill: %v", err)
		}
	})
	return h
}

// run starts spec, writes stdin (then closes it) and returns the output and
// exit code.
func run(t *testing.T, b executor.Backend, spec executor.Spec, stdin string) (output, int) {
	t.Helper()
	h := start(t, b, spec)
	out := collect(h)
	if stdin != "" {
		if _, err := io.WriteString(h.Stdin(), stdin); err != nil {
			t.Fatalf("stdin: %v", err)
		}
	}
	if err := h.Stdin().Close(); err != nil {
		t.Fatalf("close stdin: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	code, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	select {
	case o := <-out:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o, code
	case <-time.After(timeout):
		t.Fatal("output did not end after the agent exited")
	}
	return output{}, 0
}

// Run runs the suite.
func Run(t *testing.T, f Factory) {
	t.Run("stdout and stderr arrive separately, in order", func(t *testing.T) {
		t.Parallel()
		b := f.New(t)
		o, code := run(t, b, f.Spec(t, `for i in 1 2 3; do echo out$i; echo err$i >&2; done`), "")
		if code != 0 || o.stdout != "out1\nout2\nout3\n" || o.stderr != "err1\nerr2\nerr3\n" {
			t.Fatalf("code %d, stdout %q, stderr %q", code, o.stdout, o.stderr)
		}
	})
	t.Run("exit codes", func(t *testing.T) {
		t.Parallel()
		b := f.New(t)
		for _, c := range []struct {
			script string
			code   int
		}{{"true", 0}, {"exit 3", 3}, {"exit 255", 255}, {"kill -KILL $$", 137}} {
			if _, code := run(t, b, f.Spec(t, c.script), ""); code != c.code {
				t.Errorf("%s: exit code %d, want %d", c.script, code, c.code)
			}
		}
	})
	t.Run("stdin is streamed to the agent and its end ends it", func(t *testing.T) {
		t.Parallel()
		b := f.New(t)
		h := start(t, b, f.Spec(t, `while read -r line; do echo "got $line"; done; echo "eof"`))
		errOut := readAll("stderr", h.Stderr())
		lines := bufio.NewScanner(h.Stdout())
		for _, word := range []string{"alpha", "beta"} {
			// One line in, one line out: stdin is streamed, not buffered to EOF
			// (the worker talks to a running agent this way).
			if _, err := io.WriteString(h.Stdin(), word+"\n"); err != nil {
				t.Fatalf("write stdin: %v", err)
			}
			if !lines.Scan() {
				t.Fatalf("stdout ended early: %v", lines.Err())
			}
			if got, want := lines.Text(), "got "+word; got != want {
				t.Fatalf("stdout line %q, want %q", got, want)
			}
		}
		if err := h.Stdin().Close(); err != nil {
			t.Fatalf("close stdin: %v", err)
		}
		if !lines.Scan() || lines.Text() != "eof" {
			t.Fatalf("after EOF: %q, %v", lines.Text(), lines.Err())
		}
		if lines.Scan() {
			t.Errorf("unexpected stdout line %q", lines.Text())
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if code, err := h.Wait(ctx); err != nil || code != 0 {
			t.Fatalf("wait: %d, %v", code, err)
		}
		if e := <-errOut; e.s != "" || e.err != nil {
			t.Errorf("stderr %q, %v", e.s, e.err)
		}
		// Waiting again and killing after the end are harmless.
		if code, err := h.Wait(ctx); code != 0 || err != nil {
			t.Errorf("second Wait: %d, %v", code, err)
		}
		if err := h.Kill(ctx); err != nil {
			t.Errorf("Kill after Wait: %v", err)
		}
	})
	t.Run("environment, working directory and a writable mount", func(t *testing.T) {
		t.Parallel()
		b := f.New(t)
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o777); err != nil { // whoever the agent runs as
			t.Fatal(err)
		}
		spec := f.Spec(t, `echo "$GREETING" > made-here.txt && cat /workspace/made-here.txt`)
		spec.Env = map[string]string{"GREETING": "hello from the agent"}
		spec.Mounts = append(spec.Mounts, executor.Mount{Source: dir, Target: "/workspace"})
		spec.WorkDir = "/workspace"
		if pm, ok := b.(executor.PathMapper); ok {
			spec.Command[len(spec.Command)-1] = strings.ReplaceAll(spec.Command[len(spec.Command)-1], "/workspace", pm.AgentPath(spec, "/workspace"))
		}
		o, code := run(t, b, spec, "")
		if code != 0 || o.stdout != "hello from the agent\n" {
			t.Fatalf("code %d, stdout %q, stderr %q", code, o.stdout, o.stderr)
		}
		got, err := os.ReadFile(filepath.Join(dir, "made-here.txt"))
		if err != nil || string(got) != "hello from the agent\n" {
			t.Fatalf("the file on the host: %q, %v", got, err)
		}
	})
	t.Run("kill stops the agent and everything it started", func(t *testing.T) {
		t.Parallel()
		b := f.New(t)
		marker := "executortest-kill-" + randomHex(t)
		h := startedAgent(t, b, f.Spec(t, `sleep 300 & echo started; sleep 301 # `+marker))
		if !f.Alive(t, b, marker) {
			t.Fatal("the agent does not look alive: the check proves nothing")
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := h.Kill(ctx); err != nil {
			t.Fatalf("kill: %v", err)
		}
		if _, err := h.Wait(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("wait after kill: %v", err)
		}
		eventually(t, "the agent is gone", func() bool { return !f.Alive(t, b, marker) })
		// Killing again, even with a context already cancelled, is harmless.
		done, stop := context.WithCancel(context.Background())
		stop()
		if err := h.Kill(done); err != nil {
			t.Fatalf("second kill: %v", err)
		}
	})
	t.Run("leftovers of a crashed process are listed once and removable", func(t *testing.T) {
		t.Parallel()
		b := f.New(t)
		marker := "executortest-left-" + randomHex(t)
		spec := f.Spec(t, `echo started; sleep 302 # `+marker)
		spec.Labels = map[string]string{"service.run": "run-" + marker}
		startedAgent(t, b, spec)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		// The live process sees none of its own agents as leftovers.
		if ls, err := b.Leftovers(ctx); err != nil || len(ls) != 0 {
			t.Fatalf("the running backend lists leftovers %v, %v", ls, err)
		}
		// Another instance sees nothing of it.
		if ls, err := f.New(t).Leftovers(ctx); err != nil || len(ls) != 0 {
			t.Fatalf("another instance lists %v, %v", ls, err)
		}
		again := f.Restarted(t, b)
		ls, err := again.Leftovers(ctx)
		if err != nil || len(ls) != 1 {
			t.Fatalf("after a restart: leftovers %v, %v; want the running agent", ls, err)
		}
		if l := ls[0].Labels(); l != nil && l["service.run"] != "run-"+marker {
			t.Errorf("leftover labels = %v", l)
		}
		if _, exited := ls[0].Exited(); exited {
			t.Error("a running agent reads as exited")
		}
		if err := ls[0].Remove(ctx); err != nil {
			t.Fatalf("remove: %v", err)
		}
		eventually(t, "the leftover agent is gone", func() bool { return !f.Alive(t, b, marker) })
		if ls, err := f.Restarted(t, b).Leftovers(ctx); err != nil || len(ls) != 0 {
			t.Fatalf("after the removal: leftovers %v, %v", ls, err)
		}
	})
}

// startedAgent starts spec, waits for its first stdout line ("started")
// and drains the rest of its output in the background.
func startedAgent(t *testing.T, b executor.Backend, spec executor.Spec) executor.Handle {
	t.Helper()
	h := start(t, b, spec)
	r := bufio.NewReader(h.Stdout())
	first := make(chan text, 1)
	go func() {
		line, err := r.ReadString('\n')
		first <- text{line, err}
		// Draining only, so the agent never blocks on a full pipe: the test
		// kills it, and how the stream then ends does not matter.
		_, _ = io.Copy(io.Discard, r)
	}()
	go func() { _, _ = io.Copy(io.Discard, h.Stderr()) }() // draining only, as above
	select {
	case line := <-first:
		if line.s != "started\n" {
			t.Fatalf("first line %q (%v), want started", line.s, line.err)
		}
	case <-time.After(timeout):
		t.Fatal("the agent did not start")
	}
	return h
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
