package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"slipway/internal/fixture"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/telemetry"
	"slipway/internal/server"
)

type obj = map[string]any

const metricsToken = "a-metrics-token-0123456789"

// serveMetrics serves the app's metrics listener on a loopback port, as
// Run does on SERVICE_METRICS_ADDR.
func serveMetrics(t *testing.T, s *server.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeMetrics(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics listener: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// scrape fetches /metrics and parses it with Prometheus's own text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	status, body := get(t, base+"/metrics", "Authorization", "Bearer "+metricsToken)
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	return fams
}

// sample finds the sample of a family whose labels include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			if labels[k] != v {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// webhookWorkflow creates a workflow and a webhook trigger for it and
// returns the trigger's receiver token.
func webhookWorkflow(t *testing.T, f *fixture.API, nodes, edges []obj, mode string) string {
	t.Helper()
	project := f.Project(t, f.Owner, "Observed")
	r := f.Owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": "wf", "nodes": nodes, "edges": edges})
	fixture.Want(t, r, http.StatusCreated)
	wf := r.Map(t)["id"].(string)
	r = f.Owner.Do("POST", "/api/workflows/"+wf+"/triggers", obj{"kind": "webhook", "config": obj{"response_mode": mode}})
	fixture.Want(t, r, http.StatusCreated)
	token := r.Map(t)["token"].(string)
	f.App.Remember(token)
	return token
}

// TestMetrics scrapes /metrics from the metrics listener after real
// requests and checks what an operator's dashboards need: requests by
// route pattern (never the path) and status, runs, workflow nodes, queue
// depth, runners, database pools and live connections; the token guards
// it, pprof is there when enabled, and the API's listener serves none of it.
func TestMetrics(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_METRICS_TOKEN", metricsToken, "SERVICE_PPROF", "true")
		base := serveMetrics(t, f.App.Server)

		fixture.Want(t, f.Owner.Do("GET", "/api/me", nil), http.StatusOK)
		fixture.Want(t, f.Owner.Do("GET", "/api/no-such-route", nil), http.StatusNotFound)
		token := webhookWorkflow(t, f, []obj{
			{"key": "double", "kind": "transform", "config": obj{"mapping": obj{"n": "input.n * 2"}}},
			{"key": "respond", "kind": "end", "config": obj{"output": "nodes.double.output"}},
		}, []obj{{"source": "double", "target": "respond"}}, "sync")
		r := f.App.Anonymous().Do("POST", "/api/workflows/triggers/webhook/"+token, `{"n": 21}`)
		fixture.Want(t, r, http.StatusOK)
		// A job due in an hour shows in the queue's depth.
		q := jobs.New(f.App.DB, f.App.Server.Bus(), clock.System{}, nil)
		if err := f.App.DB.Tx(context.Background(), func(tx *db.Tx) error {
			_, err := q.Enqueue(context.Background(), tx, jobs.NewJob{Kind: "metrics_probe", RunAt: time.Now().Add(time.Hour)})
			return err
		}); err != nil {
			t.Fatal(err)
		}

		if status, _ := get(t, base+"/metrics"); status != http.StatusUnauthorized {
			t.Fatalf("GET /metrics without the token: %d", status)
		}
		if status, _ := get(t, base+"/metrics", "Authorization", "Bearer wrong-token-0123456789"); status != http.StatusUnauthorized {
			t.Fatalf("GET /metrics with a wrong token: %d", status)
		}
		if status, body := get(t, base+"/debug/pprof/", "Authorization", "Bearer "+metricsToken); status != http.StatusOK ||
			!strings.Contains(string(body), "goroutine") {
			t.Fatalf("GET /debug/pprof/: %d", status)
		}
		if _, body := get(t, f.App.URL+"/metrics"); strings.Contains(string(body), "slipway_http_request_duration_seconds") {
			t.Fatal("the API's listener serves the metrics")
		}

		fams := scrape(t, base)
		const requests = "slipway_http_request_duration_seconds"
		if fams[requests].GetType() != dto.MetricType_HISTOGRAM {
			t.Fatalf("%s is %v, want a histogram", requests, fams[requests].GetType())
		}
		for _, want := range []map[string]string{
			{"method": "GET", "route": "GET /api/me", "status": "200"},
			{"method": "GET", "route": "unmatched", "status": "404"},
			{"method": "POST", "route": "POST /api/auth/login", "status": "200"},
			{"method": "POST", "route": "POST /api/workflows/triggers/webhook/{token}", "status": "200"},
		} {
			m := sample(fams, requests, want)
			if m == nil || m.GetHistogram().GetSampleCount() < 1 || len(m.GetHistogram().GetBucket()) < 10 {
				t.Errorf("%s%v: %v", requests, want, m)
			}
		}
		for _, m := range fams[requests].GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), token) || strings.Contains(l.GetValue(), "no-such-route") {
					t.Fatalf("a label holds a path: %s=%q", l.GetName(), l.GetValue())
				}
			}
		}
		checks := []struct {
			name   string
			labels map[string]string
			min    float64
		}{
			{"slipway_runs_started_total", map[string]string{"kind": "workflow"}, 1},
			{"slipway_runs_finished_total", map[string]string{"kind": "workflow", "status": "succeeded"}, 1},
			{"slipway_workflow_node_duration_seconds", map[string]string{"kind": "transform", "status": "succeeded"}, 1},
			{"slipway_workflow_node_duration_seconds", map[string]string{"kind": "end", "status": "succeeded"}, 1},
			{"slipway_queue_jobs", map[string]string{"kind": "metrics_probe", "state": "scheduled"}, 1},
			{"slipway_queue_enqueued_total", map[string]string{"kind": "metrics_probe"}, 1},
			{"slipway_runners", map[string]string{"status": "online"}, 0},
			{"slipway_runners", map[string]string{"status": "disabled"}, 0},
			{"slipway_realtime_connections", nil, 0},
			{"slipway_build_info", nil, 1},
			{"go_goroutines", nil, 1},
		}
		pools := []string{"postgres"}
		if e == db.SQLite {
			pools = []string{"sqlite_writer", "sqlite_reader"}
		}
		for _, p := range pools {
			checks = append(checks, struct {
				name   string
				labels map[string]string
				min    float64
			}{"go_sql_max_open_connections", map[string]string{"db_name": p}, 1})
		}
		for _, c := range checks {
			m := sample(fams, c.name, c.labels)
			if m == nil || value(m) < c.min {
				t.Errorf("%s%v: %v, want at least %v", c.name, c.labels, m, c.min)
			}
		}
	})
}

// TestTraces runs a webhook-triggered workflow with a span recorder in
// place of an exporter: its one trace holds the HTTP request, the API
// operation, its SQL, the run's job queued, the job worked by the engine,
// and the nodes, in order.
func TestTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	telemetry.Use(tp)
	t.Cleanup(func() { telemetry.Use(nil); tp.Shutdown(context.Background()) })
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"pong": true}`)
	}))
	t.Cleanup(upstream.Close)

	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		token := webhookWorkflow(t, f, []obj{
			{"key": "double", "kind": "transform", "config": obj{"mapping": obj{"n": "input.n * 2"}}},
			{"key": "call", "kind": "http_request", "config": obj{"url": upstream.URL + "/ping"}},
			{"key": "respond", "kind": "end", "config": obj{"output": "nodes.call.output"}},
		}, []obj{{"source": "double", "target": "call"}, {"source": "call", "target": "respond"}}, "async")
		r := f.App.Anonymous().Do("POST", "/api/workflows/triggers/webhook/"+token, `{"n": 21}`)
		fixture.Want(t, r, http.StatusAccepted)
		runID := r.Map(t)["run_id"].(string)

		const route = "POST /api/workflows/triggers/webhook/{token}"
		var root sdktrace.ReadOnlySpan
		var spans []sdktrace.ReadOnlySpan
		deadline := time.Now().Add(15 * time.Second)
		for {
			root, spans = nil, nil
			for _, s := range rec.Ended() {
				if s.Name() == route && s.SpanKind() == trace.SpanKindServer && hasAttr(s, "http.response.status_code", "202") {
					root = s
				}
			}
			if root != nil {
				for _, s := range rec.Ended() {
					if s.SpanContext().TraceID() == root.SpanContext().TraceID() {
						spans = append(spans, s)
					}
				}
				if slices.ContainsFunc(spans, func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "jobs.work workflow_run" }) {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no finished trace of the delivery; spans: %v", names(rec.Ended()))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if m := f.Owner.Do("GET", "/api/workflows/runs/"+runID, nil).Map(t); m["status"] != "succeeded" {
			t.Fatalf("run %v", m)
		}
		slices.SortFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		byName := func(name string) sdktrace.ReadOnlySpan {
			for _, s := range spans {
				if s.Name() == name {
					return s
				}
			}
			t.Fatalf("the trace has no %q span: %v", name, names(spans))
			return nil
		}
		op := byName("post_api_workflows_triggers_webhook_token") // the API operation: the service call
		enqueue, work := byName("jobs.enqueue workflow_run"), byName("jobs.work workflow_run")
		transform, call, end := byName("workflow.node transform"), byName("workflow.node http_request"), byName("workflow.node end")
		if root.Parent().IsValid() || spans[0].SpanContext().SpanID() != root.SpanContext().SpanID() {
			t.Fatalf("the request's span is not the trace's root and first: %v", names(spans))
		}
		// The request's SQL is under the request's span (its session, its
		// operation); the job's under the job's; the job continues the trace
		// from the span that queued it.
		var requestSQL, operationSQL, jobSQL int
		for _, s := range spans {
			if !strings.HasPrefix(s.Name(), "db.") {
				continue
			}
			if !hasAttrKey(s, "db.query.text") || !hasAttrKey(s, "db.system.name") {
				t.Fatalf("SQL span %s lacks its attributes: %v", s.Name(), s.Attributes())
			}
			switch s.Parent().SpanID() {
			case root.SpanContext().SpanID():
				requestSQL++
			case op.SpanContext().SpanID():
				operationSQL++
			case work.SpanContext().SpanID():
				jobSQL++
			}
		}
		if operationSQL == 0 || jobSQL == 0 {
			t.Fatalf("SQL spans under the request %d, its operation %d, the job %d: %v", requestSQL, operationSQL, jobSQL, names(spans))
		}
		for _, c := range []struct {
			child, parent sdktrace.ReadOnlySpan
		}{{op, root}, {enqueue, op}, {transform, op}, {work, enqueue}, {call, work}, {end, work}} {
			if c.child.Parent().SpanID() != c.parent.SpanContext().SpanID() {
				t.Errorf("%s's parent is not %s", c.child.Name(), c.parent.Name())
			}
		}
		order := []sdktrace.ReadOnlySpan{root, op, transform, enqueue, work, call, end}
		for i := 1; i < len(order); i++ {
			if order[i].StartTime().Before(order[i-1].StartTime()) {
				t.Errorf("%s started before %s", order[i].Name(), order[i-1].Name())
			}
		}
		if work.SpanKind() != trace.SpanKindConsumer || enqueue.SpanKind() != trace.SpanKindProducer {
			t.Errorf("queue span kinds: enqueue %v, work %v", enqueue.SpanKind(), work.SpanKind())
		}
		for _, s := range spans {
			for _, a := range s.Attributes() {
				if strings.Contains(a.Value.Emit(), token) {
					t.Fatalf("span %s holds the receiver token in %s", s.Name(), a.Key)
				}
			}
		}

		// A task's job: the hub's claim of it (starting the task's run)
		// and the worker's run of it continue the trace of the request that
		// created the task, and what the worker reports (its events, its
		// result) is written under the worker's span.
		task := f.Task(t, f.Owner, f.Project(t, f.Owner, "Traced tasks"), "true", obj{"hold": false})
		deadline = time.Now().Add(30 * time.Second)
		for {
			var request sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "POST /api/tasks" && hasAttr(s, "http.response.status_code", "201") {
					request = s
				}
			}
			var enqueued, claimed, worked sdktrace.ReadOnlySpan
			var reportSQL int
			if request != nil {
				for _, s := range rec.Ended() {
					if s.SpanContext().TraceID() != request.SpanContext().TraceID() {
						continue
					}
					switch s.Name() {
					case "jobs.enqueue task":
						enqueued = s
					case "jobs.claim task":
						claimed = s
					case "worker.run agent":
						worked = s
					}
				}
			}
			if enqueued != nil && claimed != nil && worked != nil {
				if claimed.Parent().SpanID() != enqueued.SpanContext().SpanID() {
					t.Fatalf("the task's claim is not under its enqueue")
				}
				// The worker's span: a child of the span that queued the job,
				// started after it, for this task and its run.
				if worked.Parent().SpanID() != enqueued.SpanContext().SpanID() || !worked.Parent().IsRemote() {
					t.Fatalf("the worker's span has the parent %v, want the enqueue %v (carried through the job)", worked.Parent(), enqueued.SpanContext())
				}
				if worked.StartTime().Before(enqueued.StartTime()) {
					t.Errorf("the worker's span started before the task was queued")
				}
				if !hasAttr(worked, "slipway.task.id", task.ID) || !hasAttrKey(worked, "slipway.run.id") || !hasAttr(worked, "slipway.outcome", "succeeded") {
					t.Errorf("the worker's span lacks the task, the run or the outcome: %v", worked.Attributes())
				}
				for _, s := range rec.Ended() {
					if strings.HasPrefix(s.Name(), "db.") && s.Parent().SpanID() == worked.SpanContext().SpanID() {
						reportSQL++
					}
				}
				if reportSQL == 0 {
					t.Fatalf("no SQL under the worker's span (its appends and finish): %v", names(rec.Ended()))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no claim and run of the task's job in its request's trace; spans: %v", names(rec.Ended()))
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func hasAttr(s sdktrace.ReadOnlySpan, key, value string) bool {
	for _, a := range s.Attributes() {
		if string(a.Key) == key && a.Value.Emit() == value {
			return true
		}
	}
	return false
}

func hasAttrKey(s sdktrace.ReadOnlySpan, key string) bool {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return true
		}
	}
	return false
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
