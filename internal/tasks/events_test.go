package tasks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

func TestRedactor(t *testing.T) {
	key := "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----"
	r := NewRedactor([]string{"ghp_abcdef123456", `pa"ss\word-xyz`, "short", key})
	in := map[string]string{
		"raw":     "token ghp_abcdef123456 here",
		"escaped": `pw pa"ss\word-xyz end`,
		"keyline": "leaked MIIEvQIBADANBgkqhkiG9w0BAQEFAASC line",
		"short":   "short stays",
	}
	b, _ := json.Marshal(in)
	out := string(r.Payload(b))
	for _, leak := range []string{"ghp_abcdef123456", `pa\"ss\\word-xyz`, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"} {
		if strings.Contains(out, leak) {
			t.Fatalf("%q survived: %s", leak, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatalf("redaction broke the JSON: %v: %s", err, out)
	}
	if back["raw"] != "token [REDACTED] here" || back["short"] != "short stays" {
		t.Fatalf("redacted = %v", back)
	}
	if got := r.Text("err: ghp_abcdef123456"); got != "err: [REDACTED]" {
		t.Fatalf("Text = %q", got)
	}
	// NUL characters (refused by PostgreSQL jsonb) are replaced.
	nul, _ := json.Marshal(map[string]string{"line": "a\x00b"})
	if got := string(NewRedactor(nil).Payload(nul)); strings.Contains(got, `\u0000`) || !strings.Contains(got, "a\ufffdb") {
		t.Fatalf("NUL payload = %q", got)
	}
}

// newTestTask inserts a task row (and its project and workspace) directly.
func newTestTask(t testing.TB, d *db.DB) string {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	org, ws, proj, task := ids.New(), ids.New(), ids.New(), ids.New()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)", []any{org, now}},
		{"INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, 'w', $3)", []any{ws, org, now}},
		{"INSERT INTO projects (id, workspace_id, name, repo_url, default_branch, provider, created_at, updated_at) VALUES ($1, $2, 'p', '/r', 'main', 'local', $3, $3)", []any{proj, ws, now}},
	} {
		if _, err := d.W.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	tk := &Task{ID: task, WorkspaceID: ws, ProjectID: proj, Title: "t", Prompt: "p", AgentProfile: "shell", Status: StatusQueued, Held: true}
	if err := insertTask(ctx, d.W, tk, now); err != nil {
		t.Fatal(err)
	}
	return task
}

// The event log numbers events 1..n in order across batches, on both
// engines, including events added concurrently.
func TestEventLogSequences(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		d := dbtest.New(t, e)
		taskID := newTestTask(t, d)
		l := newEventLog(d, clock.System{}, taskID, nil, NewRedactor([]string{"secret-value-1"}))
		const n = 1234
		done := make(chan struct{})
		go func() {
			for i := 0; i < n/2; i++ {
				l.AddValue("log", map[string]any{"line": "a", "i": i})
			}
			close(done)
		}()
		for i := 0; i < n-n/2; i++ {
			l.AddValue("log", map[string]any{"line": "b secret-value-1", "i": i})
		}
		<-done
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		evs, err := listEvents(context.Background(), d.R, "task_id", taskID, 0, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != n {
			t.Fatalf("%d events stored, want %d", len(evs), n)
		}
		for i, ev := range evs {
			if ev.SequenceNum != int32(i+1) {
				t.Fatalf("event %d has sequence %d", i, ev.SequenceNum)
			}
			if strings.Contains(string(ev.Payload), "secret-value-1") {
				t.Fatal("a secret reached a stored event")
			}
		}
		var seq int
		d.R.QueryRow("SELECT event_seq FROM tasks WHERE id = $1", taskID).Scan(&seq)
		if seq != n {
			t.Fatalf("task event_seq = %d", seq)
		}
		// Paging: after_sequence and limit.
		page, _ := listEvents(context.Background(), d.R, "task_id", taskID, 1000, 10)
		if len(page) != 10 || page[0].SequenceNum != 1001 || page[9].SequenceNum != 1010 {
			t.Fatalf("page = %d events from %d", len(page), page[0].SequenceNum)
		}
	})
}

// BenchmarkEventAppend measures batched appends (bench/README.md).
func BenchmarkEventAppend(b *testing.B) {
	d := dbtest.New(b, db.SQLite)
	taskID := newTestTask(b, d)
	payload := []byte(`{"type":"log","line":"compiling package slipway/internal/tasks (step 12 of 40)"}`)
	l := newEventLog(d, clock.System{}, taskID, nil, NewRedactor([]string{"a-secret-to-redact"}))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		l.Add("log", payload)
	}
	// Timed until everything is committed.
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkEventPage measures reading one page of 500 events.
func BenchmarkEventPage(b *testing.B) {
	d := dbtest.New(b, db.SQLite)
	taskID := newTestTask(b, d)
	l := newEventLog(d, clock.System{}, taskID, nil, NewRedactor(nil))
	for i := 0; i < 5000; i++ {
		l.Add("log", []byte(`{"type":"log","line":"some output line of moderate length, as agents print"}`))
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		evs, err := listEvents(ctx, d.R, "task_id", taskID, int32(i%9)*500, 500)
		if err != nil || len(evs) != 500 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
	}
}
