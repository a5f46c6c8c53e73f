package github

import (
	"net/url"
	"testing"

	"slipway/internal/forge"
)

func TestGraphQLURL(t *testing.T) {
	for root, want := range map[string]string{
		"https://api.github.com/":           "https://api.github.com/graphql",
		"https://ghe.example.com/api/v3/":   "https://ghe.example.com/api/graphql",
		"http://127.0.0.1:8080/":            "http://127.0.0.1:8080/graphql",
		"https://proxy.example.com/github/": "https://proxy.example.com/github/graphql",
	} {
		u, _ := url.Parse(root)
		if got := graphQLURL(u); got != want {
			t.Errorf("%s: %s, want %s", root, got, want)
		}
	}
}

func TestStates(t *testing.T) {
	for _, c := range []struct{ status, conclusion, want string }{
		{"queued", "", forge.CheckPending}, {"in_progress", "", forge.CheckPending}, {"waiting", "", forge.CheckPending},
		{"completed", "success", forge.CheckSuccess}, {"completed", "neutral", forge.CheckSuccess}, {"completed", "skipped", forge.CheckSuccess},
		{"completed", "failure", forge.CheckFailure}, {"completed", "cancelled", forge.CheckFailure}, {"completed", "timed_out", forge.CheckFailure},
		{"completed", "action_required", forge.CheckFailure}, {"completed", "stale", forge.CheckFailure},
	} {
		if got := runState(c.status, c.conclusion); got != c.want {
			t.Errorf("run %s/%s: %s", c.status, c.conclusion, got)
		}
	}
	for s, want := range map[string]string{"success": forge.CheckSuccess, "pending": forge.CheckPending, "failure": forge.CheckFailure, "error": forge.CheckFailure} {
		if got := statusState(s); got != want {
			t.Errorf("status %s: %s", s, got)
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abc", 2, "ab"}, {"aé", 2, "a"}, {"日本", 4, "日"}, {"日本", 6, "日本"}, {"日", 0, ""}} {
		if got := cut(c.s, c.n); got != c.want {
			t.Errorf("cut(%q, %d) = %q", c.s, c.n, got)
		}
	}
}
