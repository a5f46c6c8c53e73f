package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestREADMEWalkthroughPeople: the README's walkthrough signs in as one
// person and invites another. It once signed up as "You" and invited its
// own address, so the invite mail read "You invited you to You's
// organization".
func TestREADMEWalkthroughPeople(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	admins := regexp.MustCompile(`SERVICE_INITIAL_ADMIN_EMAILS=(\S+)`).FindAllStringSubmatch(readme, -1)
	invited := regexp.MustCompile(`"email":"([^"]+)","role"`).FindAllStringSubmatch(readme, -1)
	names := regexp.MustCompile(`"display_name":"([^"]+)"`).FindAllStringSubmatch(readme, -1)
	if len(admins) == 0 || len(invited) == 0 || len(names) == 0 {
		t.Fatalf("the walkthrough's people not found: admins %v, invited %v, names %v", admins, invited, names)
	}
	for _, a := range admins {
		for _, i := range invited {
			if strings.EqualFold(a[1], i[1]) {
				t.Errorf("the walkthrough invites its own admin %s", i[1])
			}
		}
	}
	for _, n := range names {
		if p := strings.ToLower(n[1]); p == "you" || p == "me" || p == "admin" {
			t.Errorf("a display name %q reads badly in mails (%q invited you to %q's organization)", n[1], n[1], n[1])
		}
	}
}

// TestREADMEWalkthroughRuns runs the README's main walkthrough as written
// (its build replaced by the test's binary, port 8080 by a free one), twice
// in one directory with the server stopped in between, as a newcomer who
// pastes it again after a restart: the second time used to stop on the
// project's name (409) and go on with an error for an id.
func TestREADMEWalkthroughRuns(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "git", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s: %v", tool, err)
		}
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "## The main job")
	if i < 0 {
		t.Fatal("README has no main job section")
	}
	start := strings.Index(readme[i:], "```sh\n")
	end := strings.Index(readme[i+start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("the main job has no sh block")
	}
	block := readme[i+start+6 : i+start+6+end]
	const build = "go build -o ./slipway ./cmd/slipway"
	if !strings.Contains(block, build) || !strings.Contains(block, "localhost:8080") {
		t.Fatalf("the walkthrough changed shape (no %q or localhost:8080):\n%s", build, block)
	}
	port := freePort(t)
	script := strings.ReplaceAll(strings.Replace(block, build, "cp "+binary+" ./slipway", 1), "localhost:8080", "localhost:"+port)
	script += "\nkill $SERVER; wait $SERVER\n"
	dir := t.TempDir()
	for round := 1; round <= 2; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		// On a timeout the whole group goes, the server started in the
		// background too (it would hold the output open).
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SERVER_PORT="+port, "SERVICE_LOG_LEVEL=warn")
		out, _ := cmd.CombinedOutput()
		cancel()
		got := string(out)
		for _, want := range []string{`"status":"done_pr"`, "slipway/task-", `"event_type":"git"`} {
			if !strings.Contains(got, want) {
				t.Fatalf("round %d: the walkthrough's output lacks %s:\n%s", round, want, got)
			}
		}
		for _, bad := range []string{"jq: error", "not ready after", "not finished after"} {
			if strings.Contains(got, bad) {
				t.Fatalf("round %d: the walkthrough said %q:\n%s", round, bad, got)
			}
		}
	}
}
