package resources_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/workflows"
)

// TestMaxConcurrentUses: runs that use a resource are admitted by the
// queue within its max_concurrent_uses; unlimited, they overlap.
func TestMaxConcurrentUses(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		var inFlight, peak atomic.Int64
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(300 * time.Millisecond)
			inFlight.Add(-1)
			w.Write([]byte(`{"ok": true}`))
		}))
		t.Cleanup(slow.Close)
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		c := f.Owner
		res := create(t, c, obj{"name": "Slow API", "kind": "http", "config": obj{"base_url": slow.URL, "auth": "none"}})
		fixture.Want(t, c.Do("PATCH", "/api/resources/"+res.ID+"/concurrency", obj{"max_concurrent_uses": 1}), http.StatusOK)
		r := c.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, c, "P"), "name": "Calls",
			"nodes": []obj{{"key": "call", "kind": "connector", "config": obj{"resource_id": res.ID, "path": "/slow"}}}})
		fixture.Want(t, r, http.StatusCreated)
		wf := r.Map(t)["id"].(string)

		burst := func() {
			t.Helper()
			var wg sync.WaitGroup
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if v := f.RunWorkflow(t, c, wf, obj{}); v.Status != workflows.RunSucceeded {
						t.Errorf("run %s: %s", v.Status, v.Error)
					}
				}()
			}
			wg.Wait()
		}
		burst()
		if p := peak.Load(); p != 1 {
			t.Fatalf("with max_concurrent_uses 1, %d calls overlapped", p)
		}
		fixture.Want(t, c.Do("PATCH", "/api/resources/"+res.ID+"/concurrency", obj{"max_concurrent_uses": nil}), http.StatusOK)
		peak.Store(0)
		burst()
		if p := peak.Load(); p < 2 {
			t.Fatalf("unlimited, the calls never overlapped (peak %d)", p)
		}
	})
}
