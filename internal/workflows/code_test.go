package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"slipway/internal/agenttest"
	"slipway/internal/executor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/runs"
	"slipway/internal/workflows"
)

// scriptRuns returns the script runs under a workflow run.
func (g *engine) scriptRuns(t *testing.T, runID string) []runs.RunTree {
	t.Helper()
	tree, err := g.Runs.Tree(context.Background(), g.WS, runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []runs.RunTree
	for _, c := range tree.Children {
		if c.Kind == runs.KindScript {
			out = append(out, c)
		}
	}
	return out
}

func (g *engine) runLog(t *testing.T, runID string) string {
	t.Helper()
	evs, err := g.Runs.Events(context.Background(), g.WS, runID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s\n", e.EventType, e.Payload)
	}
	return b.String()
}

// A code node runs its script through the worker port (a script run, a
// child of the workflow run, with its output lines as events); the script
// reads its input from $SLIPWAY_INPUT, may write in its working directory,
// and its last line is its result. A failing script fires error with its
// exit code; a script over its time limit is stopped; scripts in a loop
// body see their item.
func TestEngineCodeNode(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		ctx := context.Background()
		w := g.workflow(t, []n{
			node("prep", "transform", map[string]any{"mapping": map[string]any{"n": "input.n + 1"}}),
			node("calc", "code", map[string]any{"source": strings.Join([]string{
				`n=$(tr -d ' \n' < "$SLIPWAY_INPUT" | sed -n 's/.*"output":{"n":\([0-9]*\)}.*/\1/p')`,
				`echo "working on $n"`,
				`echo scratch > note.txt && cat note.txt`,
				`echo "{\"double\": $((n * 2)), \"node\": \"$SLIPWAY_NODE\"}"`,
			}, "\n")}),
			node("report", "transform", map[string]any{"expression": "nodes.calc.output.result.double"}),
		}, []e{edge("prep", "", "calc"), edge("calc", "", "report")})
		runID := g.run(t, w, `{"n": 20}`)
		v := g.finished(t, runID)
		if v.Status != workflows.RunSucceeded {
			b, _ := json.MarshalIndent(v, "", " ")
			t.Fatalf("run %s: %s\n%s\n%s", v.Status, v.Error, b, g.runLog(t, runID))
		}
		jsonEq(t, v.Output, `42`)
		var out struct {
			ExitCode    int             `json:"exit_code"`
			Result      json.RawMessage `json:"result"`
			ScriptRunID string          `json:"script_run_id"`
		}
		for _, nr := range v.Nodes {
			if nr.Key == "calc" {
				if err := json.Unmarshal(nr.Output, &out); err != nil {
					t.Fatal(err)
				}
			}
		}
		jsonEq(t, out.Result, `{"double": 42, "node": "calc"}`)
		scripts := g.scriptRuns(t, runID)
		if len(scripts) != 1 || scripts[0].ID != out.ScriptRunID || scripts[0].Status != runs.Succeeded || scripts[0].ExitCode == nil || *scripts[0].ExitCode != 0 {
			t.Fatalf("script runs %+v (node output names %s)", scripts, out.ScriptRunID)
		}
		log := g.runLog(t, out.ScriptRunID)
		for _, want := range []string{`"working on 21"`, `"scratch"`, `"stdout"`} {
			if !strings.Contains(log, want) {
				t.Fatalf("script run's events lack %s:\n%s", want, log)
			}
		}

		// A failing script: its error handle, with its exit code and last line.
		w = g.workflow(t, []n{
			node("bad", "code", map[string]any{"language": "bash", "source": "echo '{\"partial\": true}'\necho oops >&2\nexit 3"}),
			node("handle", "transform", map[string]any{"expression": "[nodes.bad.output.exit_code, nodes.bad.output.result.partial]"}),
		}, []e{edge("bad", "error", "handle")})
		runID = g.run(t, w, `{}`)
		v = g.finished(t, runID)
		jsonEq(t, v.Output, `[3, true]`)
		wantStates(t, v, map[string]string{"bad": "failed:error", "handle": "succeeded:out"})
		if s := g.scriptRuns(t, runID); len(s) != 1 || s[0].Status != runs.Failed || !strings.Contains(s[0].Error, "exited with code 3") {
			t.Fatalf("failed script run %+v", s)
		}
		if log := g.runLog(t, g.scriptRuns(t, runID)[0].ID); !strings.Contains(log, `"stderr"`) || !strings.Contains(log, "oops") {
			t.Fatalf("stderr not in the script's events:\n%s", log)
		}

		// Over its time limit: stopped, and the run fails saying so.
		w = g.workflow(t, []n{node("slow", "code", map[string]any{"source": "sleep 30", "timeout_seconds": 1})}, nil)
		start := time.Now()
		v = g.finished(t, g.run(t, w, `{}`))
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, "timed out after 1s") || time.Since(start) > 10*time.Second {
			t.Fatalf("timed-out script: run %s %q after %s", v.Status, v.Error, time.Since(start))
		}

		// In a loop body (parallel), each iteration's script sees its item;
		// python runs too.
		w = g.workflow(t, []n{
			node("each", "loop", map[string]any{"items": "input.items", "mode": "parallel", "parallelism": 2}),
			node("py", "code", map[string]any{"language": "python", "source": "import json, os\nenv = json.load(open(os.environ['SLIPWAY_INPUT']))\nprint(json.dumps(env['item'] * 10 + env['index']))"}, "each"),
		}, nil)
		v = g.finished(t, g.run(t, w, `{"items": [1, 2, 3]}`))
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("loop of scripts: %s %s", v.Status, v.Error)
		}
		var results []int
		for _, nr := range v.Nodes {
			if nr.Key == "py" {
				var o struct{ Result int }
				if err := json.Unmarshal(nr.Output, &o); err != nil {
					t.Fatal(err)
				}
				results = append(results, o.Result)
			}
		}
		if fmt.Sprint(results) != "[10 21 32]" {
			t.Fatalf("loop results %v", results)
		}

		// javascript (node) reads the same input.
		w = g.workflow(t, []n{node("js", "code", map[string]any{"language": "javascript",
			"source": "const env = JSON.parse(require('fs').readFileSync(process.env.SLIPWAY_INPUT))\nconsole.log(JSON.stringify({sum: env.input.a + env.input.b}))"})}, nil)
		v = g.finished(t, g.run(t, w, `{"a": 2, "b": 3}`))
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("javascript: %s %s", v.Status, v.Error)
		}
		jsonEq(t, v.Output, `{"exit_code": 0, "result": {"sum": 5}, "script_run_id": `+string(mustJSON(t, v.Nodes[0].Output, "script_run_id"))+`}`)

		// A saved script the workspace does not have: refused when the
		// workflow is saved, never a run that fails later (or a fake success).
		_, err := g.Workflows.Create(ctx, g.WS, workflows.Input{ProjectID: g.project, Name: "unknown script",
			Nodes: []n{node("saved", "code", map[string]any{"script_id": "01930000-0000-7000-8000-000000000001"})}})
		if e, ok := apperr.As(err); !ok || e.Code != apperr.CodeBadRequest || !strings.Contains(err.Error(), "no script 01930000-0000-7000-8000-000000000001") {
			t.Fatalf("unknown script_id: %v", err)
		}
		_ = ctx
	})
}

// Cancelling a run stops its running script.
func TestEngineCancelCodeNode(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		marker := fmt.Sprintf("marker-%d", time.Now().UnixNano())
		w := g.workflow(t, []n{node("long", "code", map[string]any{"source": "echo started\nsleep 60 && echo " + marker})}, nil)
		runID := g.run(t, w, `{}`)
		g.wait(t, runID, "the script running", func(v *workflows.RunView) bool {
			s := g.scriptRuns(t, runID)
			return len(s) == 1 && strings.Contains(g.runLog(t, s[0].ID), "started")
		})
		if _, err := g.Workflows.CancelRun(context.Background(), g.WS, g.user, runID); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := g.scriptRuns(t, runID)
			if len(s) == 1 && s[0].Status == runs.Cancelled && len(agenttest.Processes("sleep 60 && echo "+marker)) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the script was not stopped: %+v, processes %v", s, agenttest.Processes(marker))
			}
			time.Sleep(50 * time.Millisecond)
		}
		v, err := g.Workflows.GetRun(context.Background(), g.WS, runID)
		if err != nil {
			t.Fatal(err)
		}
		wantStates(t, v, map[string]string{"long": "cancelled"})
	})
}

// In a container: the script and its input are read-only, its working
// directory is writable, and the image is the instance's.
func TestEngineCodeNodeDocker(t *testing.T) {
	g := newEngineOn(t, db.SQLite, "docker")
	w := g.workflow(t, []n{node("c", "code", map[string]any{"source": strings.Join([]string{
		`touch /slipway/x 2>/dev/null && echo "script dir writable"`,
		`echo hi > out.txt && test "$(pwd)" = /work`,
		`test -r "$SLIPWAY_INPUT" && echo "{\"ok\": true, \"pwd\": \"$(pwd)\", \"wrote\": \"$(cat out.txt)\"}"`,
	}, "\n")})}, nil)
	runID := g.run(t, w, `{}`)
	deadline := time.Now().Add(90 * time.Second)
	var v *workflows.RunView
	for {
		var err error
		if v, err = g.Workflows.GetRun(context.Background(), g.WS, runID); err != nil {
			t.Fatal(err)
		}
		if v.Status != workflows.RunQueued && v.Status != workflows.RunRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %s", v.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s := g.scriptRuns(t, runID)
	if v.Status != workflows.RunSucceeded || len(s) != 1 || s[0].Backend != "docker" {
		t.Fatalf("run %s %q; script runs %+v\n%s", v.Status, v.Error, s, g.runLog(t, runID))
	}
	if log := g.runLog(t, s[0].ID); strings.Contains(log, "script dir writable") {
		t.Fatalf("the script's directory is writable:\n%s", log)
	}
	jsonEq(t, v.Output, `{"exit_code": 0, "result": {"ok": true, "pwd": "/work", "wrote": "hi"}, "script_run_id": "`+s[0].ID+`"}`)
}

// Cancelling a run stops its running containers: an agent node's task and
// a code node's script, each in its own container.
func TestEngineCancelContainers(t *testing.T) {
	g := newEngineOn(t, db.SQLite, "docker")
	ctx := context.Background()
	docker, err := client.New(client.WithHost(agenttest.DockerHost(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	running := func() int {
		list, err := docker.ContainerList(ctx, client.ContainerListOptions{
			Filters: make(client.Filters).Add("label", executor.InstanceLabel+"="+g.Cfg.Worker.ID)})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	w := g.workflow(t, []n{
		node("agent", "agent", map[string]any{"prompt": "echo started; sleep 60"}),
		node("script", "code", map[string]any{"source": "echo started; sleep 60"}),
	}, nil)
	runID := g.run(t, w, `{}`)
	var task string
	g.wait(t, runID, "both containers running", func(v *workflows.RunView) bool {
		for _, nr := range v.Nodes {
			if nr.Key == "agent" && nr.TaskID != nil {
				task = *nr.TaskID
			}
		}
		s := g.scriptRuns(t, runID)
		return task != "" && len(s) == 1 && strings.Contains(g.runLog(t, s[0].ID), "started") && running() == 2
	})
	if _, err := g.Workflows.CancelRun(ctx, g.WS, g.user, runID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for running() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d container(s) still running after the cancel", running())
		}
		time.Sleep(100 * time.Millisecond)
	}
	g.wait(t, runID, "the task and the script cancelled", func(*workflows.RunView) bool {
		tk, err := g.Tasks.Get(ctx, g.WS, task)
		if err != nil {
			t.Fatal(err)
		}
		s := g.scriptRuns(t, runID)
		return tk.Status == "cancelled" && len(s) == 1 && s[0].Status == runs.Cancelled
	})
	v, err := g.Workflows.GetRun(ctx, g.WS, runID)
	if err != nil {
		t.Fatal(err)
	}
	wantStates(t, v, map[string]string{"agent": "cancelled", "script": "cancelled"})
}

// mustJSON returns one field of a JSON object.
func mustJSON(t *testing.T, raw json.RawMessage, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m[field]
}
