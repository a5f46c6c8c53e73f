package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestCrashDuringAppBuild: the server is killed with SIGKILL while an
// app's build step runs, and started again: the build runs once more
// (a build step is at least once, like a script) and ends succeeded as one
// release, its first run failed as interrupted and its second succeeded;
// nothing is built twice into two releases.
func TestCrashDuringAppBuild(t *testing.T) {
	t.Parallel()
	for _, engine := range []db.Engine{db.SQLite, db.Postgres} {
		t.Run(string(engine), func(t *testing.T) {
			if engine == db.Postgres {
				dbtest.RequirePostgres(t)
			}
			crashDuringAppBuild(t, engine)
		})
	}
}

func crashDuringAppBuild(t *testing.T, engine db.Engine) {
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	if err := os.MkdirAll(marks, 0o777); err != nil {
		t.Fatal(err)
	}
	// The step leaves a mark outside its directory, which a sandbox
	// forbids: no sandbox (the admin's own workspace may run code then).
	s := startServer(t, engine, dir, "SERVICE_AGENT_BACKEND=process", "SERVICE_PROCESS_SANDBOX=off")
	p, c := s.p, s.c
	command := `echo $SLIPWAY_BUILD_ID >> ` + marks + `/started && sleep 1.5 && mkdir -p dist && cp src/index.html dist/`
	manifest := "name: Crash\nentry: index.html\nbuild:\n  image: busybox\n  command: '" + command + "'\n  output: dist\n"
	body, _ := json.Marshal(map[string]string{"name": "Crash", "manifest_yaml": manifest})
	app := c.id(c.post("/api/apps", string(body), 201))
	c.do("PUT", "/api/apps/"+app+"/files/src/index.html", `{"content": "<h1>survived</h1>"}`, 201)
	build := c.id(c.post("/api/apps/"+app+"/builds", "", 201))
	started := func() []string {
		b, _ := os.ReadFile(filepath.Join(marks, "started"))
		return strings.Fields(string(b))
	}
	eventually(t, time.Minute, "the build step starts", func() bool { return len(started()) == 1 })
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t)

	p = s.restart(t)
	type release struct {
		ID, Status string
		Number     int
		Files      int
		Error      *string
		RunID      *string `json:"run_id"`
	}
	var rels []release
	eventually(t, time.Minute, "the build ends", func() bool {
		rels = nil
		if err := json.Unmarshal([]byte(c.get("/api/apps/"+app+"/releases")), &rels); err != nil {
			t.Fatal(err)
		}
		return len(rels) == 1 && rels[0].Status != "queued" && rels[0].Status != "running"
	})
	if r := rels[0]; r.ID != build || r.Status != "succeeded" || r.Number != 1 || r.Files != 1 || r.RunID == nil {
		t.Fatalf("the build after the restart: %+v (%v)", r, r.Error)
	}
	if got := started(); len(got) != 2 || got[0] != build || got[1] != build {
		t.Fatalf("the step started %v, want twice for build %s", got, build)
	}
	var list struct {
		Runs []struct{ Status, Error string }
	}
	if err := json.Unmarshal([]byte(c.get("/api/runs?kind=script")), &list); err != nil {
		t.Fatal(err)
	}
	runs := list.Runs
	var statuses []string
	for _, r := range runs {
		statuses = append(statuses, r.Status)
	}
	if strings.Join(statuses, " ") != "succeeded failed" {
		t.Fatalf("the build's runs, newest first: %v", runs)
	}
	c.post("/api/apps/"+app+"/deploy", `{"route_path": "/crash"}`, 200)
	if page := c.get("/a/crash/"); !strings.Contains(page, "<h1>survived</h1>") {
		t.Fatalf("served: %s", page)
	}
	if strings.Contains(p.logs(), "level=ERROR") {
		t.Fatalf("errors after the restart:\n%s", p.logs())
	}
}
