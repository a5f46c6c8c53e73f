package apitest

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"slipway/internal/platform/ids"
)

// Scenario is one row of an API test table: a request and what must come
// back.
type Scenario struct {
	Name   string
	Client *Client // nil: anonymous
	Method string
	Path   string
	Body   any
	Header []string // name, value pairs ("X-CSRF-Token", "" drops CSRF)

	WantStatus      int
	WantCode        string   // error code, for error responses
	WantContains    []string // body fragments
	WantNotContains []string
	Check           func(t *testing.T, r *Response)
}

// Run executes each scenario as a subtest; app serves the anonymous ones.
func Run(t *testing.T, app *App, scenarios []Scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			c := sc.Client
			if c == nil {
				c = app.Anonymous()
			}
			r := c.Do(sc.Method, sc.Path, sc.Body, sc.Header...)
			if r.Status != sc.WantStatus {
				t.Fatalf("%s %s = %d, want %d: %s", sc.Method, sc.Path, r.Status, sc.WantStatus, r.Body)
			}
			if sc.WantCode != "" {
				var e struct {
					Code  string `json:"code"`
					Error string `json:"error"`
				}
				if err := json.Unmarshal(r.Body, &e); err != nil || e.Code != sc.WantCode || e.Error == "" {
					t.Fatalf("error body = %s, want code %s", r.Body, sc.WantCode)
				}
			}
			for _, s := range sc.WantContains {
				if !strings.Contains(string(r.Body), s) {
					t.Errorf("body lacks %q: %s", s, r.Body)
				}
			}
			for _, s := range sc.WantNotContains {
				if strings.Contains(string(r.Body), s) {
					t.Errorf("body contains %q: %s", s, r.Body)
				}
			}
			if sc.Check != nil {
				sc.Check(t, r)
			}
		})
	}
}

// TenancyCase is one workspace-scoped endpoint in the tenancy table.
type TenancyCase struct {
	Name   string
	Method string
	Path   string // with {id} where the resource id goes
	Body   any
	// Create makes the resource as its owner (acting in workspace A) and
	// returns its id.
	Create func(t *testing.T, owner *Client) string
}

// CheckTenancy is the tenancy harness: for each case, a resource created in
// workspace A, requested by a caller acting in workspace B, must get exactly
// the response (status and body) that a random unknown id gets. owner and
// outsider act in different workspaces.
func CheckTenancy(t *testing.T, owner, outsider *Client, cases []TenancyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			id := tc.Create(t, owner)
			unknown := ids.New()
			foreign := outsider.Do(tc.Method, strings.ReplaceAll(tc.Path, "{id}", id), tc.Body)
			missing := outsider.Do(tc.Method, strings.ReplaceAll(tc.Path, "{id}", unknown), tc.Body)
			if foreign.Status != missing.Status {
				t.Fatalf("another workspace's id answers %d, an unknown id %d:\n%s\n%s", foreign.Status, missing.Status, foreign.Body, missing.Body)
			}
			fb := strings.ReplaceAll(string(foreign.Body), id, "{id}")
			mb := strings.ReplaceAll(string(missing.Body), unknown, "{id}")
			if fb != mb {
				t.Fatalf("another workspace's id and an unknown id answer differently:\n%s\n%s", fb, mb)
			}
			if foreign.Status != 404 {
				t.Fatalf("another workspace's id answers %d, want 404: %s", foreign.Status, foreign.Body)
			}
			// The resource is still there for its owner: the outsider's
			// request changed nothing.
			if r := owner.Do(tc.Method, strings.ReplaceAll(tc.Path, "{id}", id), tc.Body); r.Status == 404 {
				t.Fatalf("the owner lost the resource after the outsider's request: %s", r.Body)
			}
		})
	}
}

// Race runs do n times at once and returns how many answered won; an
// answer other than won or lost fails the test.
func Race(t *testing.T, n, won, lost int, do func() int) int {
	t.Helper()
	var wg sync.WaitGroup
	statuses := make([]int, n)
	start := make(chan struct{})
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = do()
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for _, s := range statuses {
		switch s {
		case won:
			wins++
		case lost:
		default:
			t.Fatalf("a racer got %d (%v)", s, statuses)
		}
	}
	return wins
}
