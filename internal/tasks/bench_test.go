package tasks_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// discardWriter is the cheapest ResponseWriter: the benchmark measures the
// server's own work, not a network's.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// BenchmarkTasksList measures GET /api/tasks?limit=20 (20 held tasks, the
// page bench/http.sh drives with wrk) next to an authenticated GET /api/me,
// through the server's whole handler stack, in process, on each engine
// (PostgreSQL when SERVICE_TEST_POSTGRES_URL is set). The ratio of the two
// is issue 23's acceptance figure (bench/README.md):
//
//	go test -run XXX -bench TasksList -benchmem ./internal/tasks
func BenchmarkTasksList(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			if e == db.Postgres {
				dbtest.RequirePostgres(b)
			}
			app := apitest.New(b, e, "SERVICE_LOG_LEVEL", "warn")
			owner := app.Admin()
			r := owner.Do("POST", "/api/projects", map[string]any{"name": "bench", "repo_url": agenttest.BareRepo(b, nil)})
			if r.Status != http.StatusCreated {
				b.Fatalf("project: %d %s", r.Status, r.Body)
			}
			project := r.Map(b)["id"].(string)
			for i := range 20 {
				r := owner.Do("POST", "/api/tasks", map[string]any{"project_id": project, "prompt": fmt.Sprintf("echo task %d", i+1), "hold": true})
				if r.Status != http.StatusCreated {
					b.Fatalf("task: %d %s", r.Status, r.Body)
				}
			}
			var page struct {
				Tasks []json.RawMessage `json:"tasks"`
				Total int               `json:"total"`
			}
			owner.Do("GET", "/api/tasks?limit=20", nil).JSON(b, &page)
			if len(page.Tasks) != 20 || page.Total != 20 {
				b.Fatalf("the page holds %d tasks of %d, want 20 of 20", len(page.Tasks), page.Total)
			}
			h, cookie := app.Server.Handler(), owner.CookieHeader()
			for _, c := range []struct{ name, path string }{{"me", "/api/me"}, {"tasks", "/api/tasks?limit=20"}} {
				b.Run(c.name, func(b *testing.B) {
					req, _ := http.NewRequest(http.MethodGet, c.path, nil)
					req.Header.Set("Cookie", cookie)
					var n int
					b.ReportAllocs()
					for b.Loop() {
						w := &discardWriter{h: http.Header{}}
						h.ServeHTTP(w, req)
						if w.status != http.StatusOK {
							b.Fatalf("GET %s: %d", c.path, w.status)
						}
						n = w.n
					}
					b.ReportMetric(float64(n), "B/resp")
				})
			}
			// The two in turn, each request timed on its own: the median of
			// each and their ratio hold even when other work shares the
			// machine.
			b.Run("paired", func(b *testing.B) {
				reqs := [2]*http.Request{}
				for i, path := range []string{"/api/me", "/api/tasks?limit=20"} {
					reqs[i], _ = http.NewRequest(http.MethodGet, path, nil)
					reqs[i].Header.Set("Cookie", cookie)
				}
				var took [2][]time.Duration
				for i := 0; i < b.N; i++ {
					w := &discardWriter{h: http.Header{}}
					start := time.Now()
					h.ServeHTTP(w, reqs[i%2])
					took[i%2] = append(took[i%2], time.Since(start))
					if w.status != http.StatusOK {
						b.Fatalf("GET %s: %d", reqs[i%2].URL, w.status)
					}
				}
				if len(took[1]) == 0 {
					return
				}
				me, list := float64(median(took[0])), float64(median(took[1]))
				b.ReportMetric(me, "me-ns")
				b.ReportMetric(list, "tasks-ns")
				b.ReportMetric(me/list, "tasks/me")
			})
		})
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
