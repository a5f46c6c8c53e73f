// Package stripetest runs stripe-mock for tests: Stripe's API answered
// from its OpenAPI description and fixtures, refusing a request whose
// shape the description does not allow.
package stripetest

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// listen is stripe-mock's line naming its HTTP address.
var listen = regexp.MustCompile(`Listening for HTTP at address: (\S+)`)

// Mock runs stripe-mock (a tool of this module: go.mod's tool line pins
// it) on a loopback port of its choosing until the test ends, and returns
// its base URL.
func Mock(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "tool", "-n", "stripe-mock").Output()
	if err != nil {
		t.Fatalf("building stripe-mock (go tool -n stripe-mock): %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, strings.TrimSpace(string(out)), "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting stripe-mock: %v", err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listen.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not listen within 30 s")
	}
	return ""
}
