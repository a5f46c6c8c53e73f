package apps_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/apps"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// stepManifest asks for a build step: the command turns src/ into dist/.
func stepManifest(command string) string {
	return "name: Built\nentry: index.html\nbuild:\n  image: " + agenttest.TestImage + "\n  command: " + command + "\n  output: dist\n"
}

// waitBuild polls the app's build until it is no longer queued or
// running.
func waitBuild(t *testing.T, c *apitest.Client, appID, buildID string) apps.AppBuild {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := c.Do("GET", "/api/apps/"+appID+"/releases", nil)
		fixture.Want(t, r, http.StatusOK)
		var bs []apps.AppBuild
		r.JSON(t, &bs)
		for _, b := range bs {
			if b.ID == buildID && b.Status != "queued" && b.Status != "running" {
				return b
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("build %s did not end: %s", buildID, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// buildWith sets the app's manifest, asks for a build (queued, 201) and
// waits for it to end.
func buildWith(t *testing.T, c *apitest.Client, appID, manifest string) apps.AppBuild {
	t.Helper()
	fixture.Want(t, c.Do("PUT", "/api/apps/"+appID, obj{"manifest_yaml": manifest}), http.StatusOK)
	r := c.Do("POST", "/api/apps/"+appID+"/builds", nil)
	fixture.Want(t, r, http.StatusCreated)
	var b apps.AppBuild
	r.JSON(t, &b)
	if b.Status != "queued" || b.FinishedAt != nil {
		t.Fatalf("a build with a step answers queued: %+v", b)
	}
	return waitBuild(t, c, appID, b.ID)
}

// TestBuildStep: a manifest's build step runs as a job through the worker
// port (here the process backend's sandbox): the command runs over a copy
// of the source, the files it leaves in the output directory become the
// release, its output lines are its run's events, and the release deploys
// and serves. A build that fails, leaves no output, leaves no entry page
// or leaves a symlink out of its directory makes no release and says why;
// the same source built again after a failure runs again.
func TestBuildStep(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		a := create(t, owner, "Built")
		fixture.Want(t, put(t, owner, a.ID, "src/index.html", "<h1>SOURCE</h1>"), http.StatusCreated)

		b := buildWith(t, owner, a.ID, stepManifest(`"mkdir -p dist && sed s/SOURCE/BUILT/ src/index.html > dist/index.html && echo step done"`))
		if b.Status != "succeeded" || b.Files != 1 || b.RunID == nil || b.Error != nil || b.FinishedAt == nil {
			t.Fatalf("the build: %+v", b)
		}
		if r := owner.Do("GET", "/api/runs/"+*b.RunID+"/events", nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "step done") {
			t.Fatalf("the build's log: %d %s", r.Status, r.Body)
		}
		// The same source is the same build.
		r := owner.Do("POST", "/api/apps/"+a.ID+"/builds", nil)
		fixture.Want(t, r, http.StatusOK)
		if again := r.Map(t); again["id"] != b.ID {
			t.Fatalf("built twice: %v", again)
		}
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": "/built"}), http.StatusOK)
		if r := page(t, owner, "/a/built/"); r.Status != http.StatusOK || body(r) != "<h1>BUILT</h1>" {
			t.Fatalf("served: %d %s", r.Status, r.Body)
		}
		if r := page(t, owner, "/a/built/src/index.html"); r.Status != http.StatusNotFound {
			t.Fatalf("the source is served: %d %s", r.Status, r.Body)
		}

		for _, c := range []struct{ name, command, want string }{
			{"exits non-zero", `"echo broken >&2; exit 3"`, "exited with code 3"},
			{"no output", `"true"`, "left no directory dist"},
			{"no entry page", `"mkdir -p dist && echo x > dist/other.html"`, "entry page index.html is not among the files"},
			{"a symlink out", `"mkdir -p dist && cp src/index.html dist/ && ln -s /etc/passwd dist/leak"`, "not a regular file"},
			{"output out of its directory", `"ln -s / dist"`, "no directory dist"},
		} {
			t.Run(c.name, func(t *testing.T) {
				b := buildWith(t, owner, a.ID, stepManifest(c.command))
				if b.Status != "failed" || b.Error == nil || !strings.Contains(*b.Error, c.want) || strings.Contains(*b.Error, "root:") {
					t.Fatalf("want failed with %q: %+v (%v)", c.want, b, deref(b.Error))
				}
				// Nothing to deploy: the served release stays.
				fixture.WantError(t, owner.Do("PATCH", "/api/apps/"+a.ID+"/deployment", obj{"build_id": b.ID}), http.StatusBadRequest, "bad_request", "no such succeeded build")
			})
		}
		// A failed source asked again runs again (and fails again).
		r = owner.Do("POST", "/api/apps/"+a.ID+"/builds", nil)
		fixture.Want(t, r, http.StatusCreated)
		var again apps.AppBuild
		r.JSON(t, &again)
		if again.Status != "queued" || again.Error != nil {
			t.Fatalf("a failed build asked again: %+v", again)
		}
		if b := waitBuild(t, owner, a.ID, again.ID); b.Status != "failed" || b.RunID == nil {
			t.Fatalf("ran again: %+v", b)
		}
		if r := page(t, owner, "/a/built/"); body(r) != "<h1>BUILT</h1>" {
			t.Fatalf("a failed build changed what is served: %s", r.Body)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestBuildStepDocker: the same step in a container of the manifest's
// image on the Docker engine.
func TestBuildStepDocker(t *testing.T) {
	host := agenttest.DockerHost(t)
	app := apitest.New(t, db.SQLite, "SERVICE_AGENT_BACKEND", "docker", "DOCKER_HOST", host)
	admin := app.Admin()
	owner := app.Approved(admin, "Olivia Owner")
	a := create(t, owner, "Built")
	fixture.Want(t, put(t, owner, a.ID, "src/index.html", "<h1>SOURCE</h1>"), http.StatusCreated)
	b := buildWith(t, owner, a.ID, stepManifest(`"mkdir -p dist/js && sed s/SOURCE/CONTAINED/ src/index.html > dist/index.html && echo 1 > dist/js/a.js"`))
	if b.Status != "succeeded" || b.Files != 2 {
		t.Fatalf("the build: %+v (%s)", b, deref(b.Error))
	}
	fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": "/built"}), http.StatusOK)
	if r := page(t, owner, "/a/built/"); r.Status != http.StatusOK || body(r) != "<h1>CONTAINED</h1>" {
		t.Fatalf("served: %d %s", r.Status, r.Body)
	}
	b = buildWith(t, owner, a.ID, stepManifest(`"mkdir -p dist && cp src/index.html dist/ && ln -s /etc/shadow dist/leak"`))
	if b.Status != "failed" || !strings.Contains(deref(b.Error), "not a regular file") {
		t.Fatalf("a symlink out of the container: %+v (%s)", b, deref(b.Error))
	}
}

const scriptManifest = `name: Calc
functions:
  - name: double
    operation: script
    script: doubler
    args:
      - name: n
        type: integer
  - name: slow
    operation: script
    script: sleeper
    timeout_ms: 300
  - name: broken
    operation: script
    script: breaker
  - name: missing
    operation: script
    script: nowhere
`

// TestScriptFunction: a script function runs the workspace's saved script
// through the worker port with the call's arguments and answers its last
// printed line; a failing script, one past the function's time (its run
// cancelled) and a script the workspace does not have answer clearly.
func TestScriptFunction(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		for _, s := range []obj{
			{"name": "Doubler", "slug": "doubler", "language": "python",
				"source": "import json, os\nenv = json.load(open(os.environ['SLIPWAY_INPUT']))\nprint('thinking')\nprint(json.dumps({'n': env['input']['args'][0] * 2, 'fn': env['input']['function']}))"},
			{"name": "Sleeper", "slug": "sleeper", "language": "sh", "source": "sleep 30"},
			{"name": "Breaker", "slug": "breaker", "language": "sh", "source": "echo no good >&2; exit 4"},
		} {
			fixture.Want(t, owner.Do("POST", "/api/scripts", s), http.StatusCreated)
		}
		r := owner.Do("POST", "/api/apps", obj{"name": "Calc", "manifest_yaml": scriptManifest})
		fixture.Want(t, r, http.StatusCreated)
		id := r.Map(t)["id"].(string)
		fixture.Want(t, put(t, owner, id, "index.html", "calc"), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/builds", nil), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/deploy", obj{"route_path": "/calc"}), http.StatusOK)
		r = owner.Do("POST", "/api/apps/"+id+"/deployment/token", nil)
		fixture.Want(t, r, http.StatusCreated)
		tok := r.Map(t)["token"].(string)
		f.App.Remember(tok)
		bearer := []string{"Authorization", "Bearer " + tok, "X-CSRF-Token", ""}
		anon := f.App.Anonymous()

		r = anon.Do("POST", "/api/apps/"+id+"/backend/double", obj{"args": []any{21}}, bearer...)
		fixture.Want(t, r, http.StatusOK)
		if res, _ := r.Map(t)["result"].(map[string]any); res["n"] != float64(42) || res["fn"] != "double" {
			t.Fatalf("double: %s", r.Body)
		}
		fixture.WantError(t, anon.Do("POST", "/api/apps/"+id+"/backend/double", obj{"args": []any{"x"}}, bearer...), http.StatusBadRequest, "bad_request", "n")
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+id+"/backend/broken", obj{"args": []any{}}), http.StatusUnprocessableEntity, "unprocessable", "broken failed", "exited with code 4", "no good")
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+id+"/backend/missing", obj{"args": []any{}}), http.StatusConflict, "conflict", "nowhere")
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+id+"/backend/slow", obj{"args": []any{}}), http.StatusUnprocessableEntity, "unprocessable", "ran past its 300 ms")
		// The timed-out run is cancelled, not left running.
		deadline := time.Now().Add(30 * time.Second)
		for f.App.Count(t, "SELECT COUNT(*) FROM jobs WHERE kind = 'script_run' AND state IN ('available', 'running')") > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the slow script's job is still unfinished")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
