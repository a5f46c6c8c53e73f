package main

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"slipway/internal/mailbox/mailtest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestCrashWhileMailArrives: mail keeps arriving at a workflow's plus
// address while the server is killed with SIGKILL mid-stream and started
// again: every message starts exactly one run (none lost, none twice),
// the ones that came while it was down included.
func TestCrashWhileMailArrives(t *testing.T) {
	t.Parallel()
	for _, engine := range []db.Engine{db.SQLite, db.Postgres} {
		t.Run(string(engine), func(t *testing.T) {
			if engine == db.Postgres {
				dbtest.RequirePostgres(t)
			}
			crashWhileMailArrives(t, engine)
		})
	}
}

func crashWhileMailArrives(t *testing.T, engine db.Engine) {
	const messages = 90
	mail := mailtest.Start(t, "desk@example.test", "imap-crash-pw", engine == db.Postgres)
	s := startServer(t, engine, t.TempDir(), "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE=true")
	c := s.c
	host, port, _ := net.SplitHostPort(mail.IMAPAddr)
	p, _ := strconv.Atoi(port)
	res, _ := json.Marshal(map[string]any{"kind": "imap", "name": "Desk", "secret": mail.Password,
		"config": map[string]any{"host": host, "port": p, "security": "none", "username": mail.User}})
	box := c.id(c.post("/api/resources", string(res), 201))
	wf, _ := json.Marshal(map[string]any{"project_id": s.project, "name": "Mail crash",
		"nodes": []map[string]any{{"key": "end", "kind": "end", "config": map[string]any{"output": "input.subject"}}}})
	workflow := c.id(c.post("/api/workflows", string(wf), 201))
	c.post("/api/workflows/"+workflow+"/triggers", `{"kind":"email_plus_address","config":{"resource_id":"`+box+`","alias":"crash"}}`, 201)

	runs := func() []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} {
		var out []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(c.get("/api/workflows/"+workflow+"/runs?limit=100")), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The mail keeps coming, whatever the server does.
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range messages {
			mail.Send("c@customer.test", []string{"desk+crash@example.test"},
				mailtest.Mail("c@customer.test", "desk+crash@example.test", fmt.Sprintf("m%03d", i), fmt.Sprintf("m%03d@customer.test", i), "hello"))
			time.Sleep(15 * time.Millisecond)
		}
	}()
	eventually(t, time.Minute, "twenty runs", func() bool { return len(runs()) >= 20 })
	if err := s.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.p.wait(t)
	<-sent
	s.restart(t)
	eventually(t, 2*time.Minute, "a run per message", func() bool { return len(runs()) >= messages })
	time.Sleep(2 * time.Second) // a message handled twice would show now
	got := runs()
	if len(got) != messages {
		t.Fatalf("%d runs for %d messages", len(got), messages)
	}
	seen := map[string]bool{}
	for _, r := range got {
		var v struct {
			Output string `json:"output"`
		}
		eventually(t, time.Minute, "run "+r.ID+" ends", func() bool {
			if err := json.Unmarshal([]byte(c.get("/api/workflows/runs/"+r.ID)), &v); err != nil {
				t.Fatal(err)
			}
			return v.Output != ""
		})
		if seen[v.Output] {
			t.Fatalf("message %s started two runs", v.Output)
		}
		seen[v.Output] = true
	}
}
