package workflows_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"mime"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/runs"
	"slipway/internal/workflows"
)

// These tests drive the real server over HTTP (fixture.NewAPI) on both
// engines. The server's own workflow engine runs the runs; no test here
// starts an agent node (agents cannot run in API tests).

// apiNodeKinds is the spec's NodeKind enum, in the spec's order.
var apiNodeKinds = []string{"agent", "gate", "human", "end", "code", "db_query", "db_execute", "http_request", "transform", "notify_telegram",
	"notify_email", "notify_webhook", "notify_discord", "loop", "wait_event", "llm_classify", "imap_ack", "app", "connector"}

// apiWorkflowSchema is the spec's Workflow object (overview, "### Workflow")
// as a JSON Schema: Workflow, Node, Edge, Step and Position allow no extra
// properties; required lists follow the "Required" columns (Edge and Step:
// all required); every integer is within ±9007199254740991.
var apiWorkflowSchema = apiMustJSON(`{
  "$defs": {
    "Integer": {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991},
    "NodeKind": {"type": "string", "enum": ` + apiMustMarshal(apiNodeKinds) + `},
    "Position": {
      "type": "object", "additionalProperties": false, "required": ["x", "y"],
      "properties": {"x": {"type": "number"}, "y": {"type": "number"}}
    },
    "Node": {
      "type": "object", "additionalProperties": false,
      "required": ["id", "key", "kind", "ordinal", "config", "position"],
      "properties": {
        "id": {"type": "string", "format": "uuid"},
        "key": {"type": "string"},
        "kind": {"$ref": "#/$defs/NodeKind"},
        "ordinal": {"$ref": "#/$defs/Integer"},
        "config": {"type": "object"},
        "position": {"$ref": "#/$defs/Position"},
        "parent_node_key": {"type": ["string", "null"]}
      }
    },
    "Edge": {
      "type": "object", "additionalProperties": false,
      "required": ["id", "source", "source_handle", "target"],
      "properties": {
        "id": {"type": "string", "format": "uuid"},
        "source": {"type": "string"},
        "source_handle": {"type": "string"},
        "target": {"type": "string"}
      }
    },
    "Step": {
      "type": "object", "additionalProperties": false,
      "required": ["id", "step_key", "kind", "agent_type", "prompt_template", "on_failure", "ordinal", "depends_on"],
      "properties": {
        "id": {"type": "string", "format": "uuid"},
        "step_key": {"type": "string"},
        "kind": {"$ref": "#/$defs/NodeKind"},
        "agent_type": {"type": "string"},
        "prompt_template": {"type": "string"},
        "on_failure": {"type": "string"},
        "ordinal": {"$ref": "#/$defs/Integer"},
        "depends_on": {"type": "array", "items": {"type": "string"}}
      }
    }
  },
  "type": "object", "additionalProperties": false,
  "required": ["id", "project_id", "name", "created_at", "nodes", "edges", "steps"],
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "project_id": {"type": "string", "format": "uuid"},
    "name": {"type": "string"},
    "created_at": {"type": "string", "format": "date-time"},
    "max_concurrent_runs": {"type": ["integer", "null"], "minimum": -9007199254740991, "maximum": 9007199254740991},
    "nodes": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
    "edges": {"type": "array", "items": {"$ref": "#/$defs/Edge"}},
    "steps": {"type": "array", "items": {"$ref": "#/$defs/Step"}}
  }
}`)

func apiMustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// apiMustJSON decodes JSON keeping numbers as json.Number.
func apiMustJSON(s string) map[string]any {
	v, err := apiDecodeNumbers([]byte(s))
	if err != nil {
		panic(err)
	}
	return v.(map[string]any)
}

func apiDecodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

var (
	apiUUIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	apiMaxSafeInt  = big.NewRat(9007199254740991, 1)
)

// apiSchemaErrors checks v against the JSON Schema subset the Workflow schema
// uses ($ref into $defs, type, format uuid and date-time, enum, minimum,
// maximum, properties, required, additionalProperties, items) and returns
// every violation with its path. It also checks the spec's rule that every
// integer in the object is within ±9007199254740991.
func apiSchemaErrors(root map[string]any, v any) []string {
	var errs []string
	var walk func(path string, s map[string]any, v any)
	walk = func(path string, s map[string]any, v any) {
		if ref, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			def, ok := root["$defs"].(map[string]any)[name].(map[string]any)
			if !ok {
				errs = append(errs, path+": unresolvable $ref "+ref)
				return
			}
			walk(path, def, v)
			return
		}
		bad := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
		if t, ok := s["type"]; ok {
			var types []string
			switch t := t.(type) {
			case string:
				types = []string{t}
			case []any:
				for _, x := range t {
					types = append(types, x.(string))
				}
			}
			if !slices.ContainsFunc(types, func(ty string) bool { return apiHasType(ty, v) }) {
				bad("%s is not of type %v", apiShort(v), types)
				return
			}
		}
		if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
			bad("%s is not one of %v", apiShort(v), enum)
		}
		switch v := v.(type) {
		case string:
			switch s["format"] {
			case "uuid":
				if !apiUUIDPattern.MatchString(v) {
					bad("%q is not a uuid", v)
				}
			case "date-time":
				if _, err := time.Parse(time.RFC3339Nano, v); err != nil || !strings.HasSuffix(v, "Z") {
					bad("%q is not an ISO 8601 UTC date-time with a trailing Z", v)
				}
			}
		case json.Number:
			r, ok := new(big.Rat).SetString(v.String())
			if !ok {
				bad("%s is not a number", v)
				return
			}
			if m, ok := s["minimum"].(json.Number); ok {
				if min, _ := new(big.Rat).SetString(m.String()); r.Cmp(min) < 0 {
					bad("%s is below the minimum %s", v, m)
				}
			}
			if m, ok := s["maximum"].(json.Number); ok {
				if max, _ := new(big.Rat).SetString(m.String()); r.Cmp(max) > 0 {
					bad("%s is above the maximum %s", v, m)
				}
			}
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			if req, ok := s["required"].([]any); ok {
				for _, k := range req {
					if _, ok := v[k.(string)]; !ok {
						bad("required property %q is missing", k)
					}
				}
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if ps, ok := props[k].(map[string]any); ok {
					walk(path+"."+k, ps, v[k])
					continue
				}
				switch ap := s["additionalProperties"].(type) {
				case bool:
					if !ap {
						bad("extra property %q", k)
					}
				case map[string]any:
					walk(path+"."+k, ap, v[k])
				}
			}
		case []any:
			if items, ok := s["items"].(map[string]any); ok {
				for i, x := range v {
					walk(fmt.Sprintf("%s[%d]", path, i), items, x)
				}
			}
		}
	}
	walk("$", root, v)
	// "All integers in this object are within plus or minus
	// 9007199254740991", config values included.
	var ints func(path string, v any)
	ints = func(path string, v any) {
		switch v := v.(type) {
		case json.Number:
			if r, ok := new(big.Rat).SetString(v.String()); ok && r.IsInt() && new(big.Rat).Abs(r).Cmp(apiMaxSafeInt) > 0 {
				errs = append(errs, path+": integer "+v.String()+" is outside ±9007199254740991")
			}
		case map[string]any:
			for k, x := range v {
				ints(path+"."+k, x)
			}
		case []any:
			for i, x := range v {
				ints(fmt.Sprintf("%s[%d]", path, i), x)
			}
		}
	}
	ints("$", v)
	return errs
}

func apiHasType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		r, ok := new(big.Rat).SetString(n.String())
		return ok && r.IsInt()
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}

func apiShort(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// apiCheckWorkflowJSON fails the test unless raw is a Workflow object exactly
// as the spec has it.
func apiCheckWorkflowJSON(t *testing.T, raw []byte) {
	t.Helper()
	v, err := apiDecodeNumbers(raw)
	if err != nil {
		t.Fatalf("not JSON (%v): %s", err, raw)
	}
	if errs := apiSchemaErrors(apiWorkflowSchema, v); len(errs) > 0 {
		t.Fatalf("the Workflow object breaks the spec's schema:\n  %s\nbody: %s", strings.Join(errs, "\n  "), raw)
	}
}

// apiCheckWorkflowArray checks every element of a JSON array of Workflow
// objects and returns the elements.
func apiCheckWorkflowArray(t *testing.T, raw []byte) []json.RawMessage {
	t.Helper()
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || elems == nil {
		t.Fatalf("not a JSON array: %s", raw)
	}
	for _, e := range elems {
		apiCheckWorkflowJSON(t, e)
	}
	return elems
}

func apiDecodeWorkflow(t *testing.T, raw []byte) workflows.Workflow {
	t.Helper()
	var w workflows.Workflow
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("not a workflow (%v): %s", err, raw)
	}
	return w
}

// apiSameJSON reports whether two JSON documents hold the same value.
func apiSameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	va, err := apiDecodeNumbers(a)
	if err != nil {
		t.Fatalf("not JSON: %s", a)
	}
	vb, err := apiDecodeNumbers(b)
	if err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return reflect.DeepEqual(va, vb)
}

// apiWantError checks a structured error body: {code, error} with the code and
// an error naming every fragment.
func apiWantError(t *testing.T, r *apitest.Response, status int, code string, fragments ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var e struct {
		Code  string `json:"code"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code != code || e.Error == "" {
		t.Fatalf("error body = %s, want code %s", r.Body, code)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Error, f) {
			t.Errorf("error %q does not name %q", e.Error, f)
		}
	}
}

// apiCreate posts a workflow, checks the answer against the schema and returns
// it.
func apiCreate(t *testing.T, c *apitest.Client, body any) (workflows.Workflow, []byte) {
	t.Helper()
	r := c.Do("POST", "/api/workflows", body)
	fixture.Want(t, r, http.StatusCreated)
	apiCheckWorkflowJSON(t, r.Body)
	return apiDecodeWorkflow(t, r.Body), r.Body
}

func apiGet(t *testing.T, c *apitest.Client, id string) (workflows.Workflow, []byte) {
	t.Helper()
	r := c.Do("GET", "/api/workflows/"+id, nil)
	fixture.Want(t, r, http.StatusOK)
	apiCheckWorkflowJSON(t, r.Body)
	return apiDecodeWorkflow(t, r.Body), r.Body
}

type apiObj = map[string]any

func apiNode(key, kind string, config apiObj, extra ...any) apiObj {
	n := apiObj{"key": key, "kind": kind}
	if config != nil {
		n["config"] = config
	}
	for i := 0; i+1 < len(extra); i += 2 {
		n[extra[i].(string)] = extra[i+1]
	}
	return n
}

func apiEdge(source, handle, target string) apiObj {
	e := apiObj{"source": source, "target": target}
	if handle != "" {
		e["source_handle"] = handle
	}
	return e
}

func apiWfBody(project, name string, nodes []apiObj, edges []apiObj) apiObj {
	b := apiObj{"name": name, "nodes": nodes}
	if project != "" {
		b["project_id"] = project
	}
	if edges != nil {
		b["edges"] = edges
	}
	return b
}

// apiKitchenSink is a workflow with a transform chain, a gate with both
// branches, a loop with a two-node body and two agent nodes.
func apiKitchenSink(project string) apiObj {
	b := apiWfBody(project, "Kitchen sink", []apiObj{
		apiNode("start", "transform", apiObj{"expression": "input.x * 2"}, "position", apiObj{"x": 120.5, "y": -40}),
		apiNode("double", "transform", apiObj{"mapping": apiObj{"y": "nodes.start.output + 1"}}),
		apiNode("check", "gate", apiObj{"condition": "nodes.double.output.y > 3"}),
		apiNode("each", "loop", apiObj{"items": "[1, 2, 3]", "mode": "parallel", "parallelism": 2}),
		apiNode("body", "transform", apiObj{"expression": "item * 10"}, "parent_node_key", "each"),
		apiNode("body2", "transform", apiObj{"expression": "nodes.body.output + index"}, "parent_node_key", "each", "position", apiObj{"x": 0, "y": 80}),
		apiNode("review", "agent", apiObj{"prompt": "Review {{ input.x }}", "agent_type": "shell", "on_failure": "continue"}, "ordinal", 5),
		apiNode("summary", "agent", apiObj{"prompt": "Summarise"}, "ordinal", -9007199254740991),
		apiNode("done", "end", apiObj{"output": "nodes.double.output"}, "ordinal", 9007199254740991),
	}, []apiObj{
		apiEdge("start", "", "double"),
		apiEdge("double", "out", "check"),
		apiEdge("check", "true", "each"),
		apiEdge("check", "false", "review"),
		apiEdge("body", "", "body2"),
		apiEdge("each", "out", "review"),
		apiEdge("review", "out", "done"),
		apiEdge("summary", "", "done"),
	})
	b["max_concurrent_runs"] = 5
	return b
}

func TestWorkflowsSchemaChecker(t *testing.T) {
	// The checker must refuse what the spec refuses, or the API tests
	// prove nothing.
	valid := func() apiObj {
		return apiObj{"id": ids.New(), "project_id": ids.New(), "name": "w", "created_at": "2025-01-02T03:04:05.123456Z", "max_concurrent_runs": nil,
			"nodes": []any{apiObj{"id": ids.New(), "key": "a", "kind": "agent", "ordinal": 0, "config": apiObj{"prompt": "p"},
				"position": apiObj{"x": 1.5, "y": 0}, "parent_node_key": nil}},
			"edges": []any{},
			"steps": []any{apiObj{"id": ids.New(), "step_key": "a", "kind": "agent", "agent_type": "", "prompt_template": "p",
				"on_failure": "", "ordinal": 0, "depends_on": []any{}}}}
	}
	check := func(v apiObj) []string {
		b, _ := json.Marshal(v)
		d, err := apiDecodeNumbers(b)
		if err != nil {
			t.Fatal(err)
		}
		return apiSchemaErrors(apiWorkflowSchema, d)
	}
	if errs := check(valid()); len(errs) > 0 {
		t.Fatalf("a valid workflow is refused: %v", errs)
	}
	at := func(v apiObj, field string) apiObj { return v[field].([]any)[0].(apiObj) }
	for name, mutate := range map[string]func(apiObj){
		"extra top-level property": func(v apiObj) { v["workspace_id"] = ids.New() },
		"extra node property":      func(v apiObj) { at(v, "nodes")["frame"] = "" },
		"extra position property":  func(v apiObj) { at(v, "nodes")["position"].(apiObj)["z"] = 1 },
		"extra step property":      func(v apiObj) { at(v, "steps")["agent_profile"] = "" },
		"extra edge property": func(v apiObj) {
			v["edges"] = []any{apiObj{"id": ids.New(), "source": "a", "source_handle": "out", "target": "b", "label": ""}}
		},
		"missing steps":              func(v apiObj) { delete(v, "steps") },
		"missing node position":      func(v apiObj) { delete(at(v, "nodes"), "position") },
		"missing position y":         func(v apiObj) { delete(at(v, "nodes")["position"].(apiObj), "y") },
		"missing step depends_on":    func(v apiObj) { delete(at(v, "steps"), "depends_on") },
		"missing edge source_handle": func(v apiObj) { v["edges"] = []any{apiObj{"id": ids.New(), "source": "a", "target": "b"}} },
		"unknown kind":               func(v apiObj) { at(v, "nodes")["kind"] = "teleport" },
		"fractional ordinal":         func(v apiObj) { at(v, "nodes")["ordinal"] = 1.5 },
		"ordinal out of range":       func(v apiObj) { at(v, "nodes")["ordinal"] = json.Number("9007199254740992") },
		"big config integer":         func(v apiObj) { at(v, "nodes")["config"].(apiObj)["n"] = json.Number("-9007199254740992") },
		"cap as a string":            func(v apiObj) { v["max_concurrent_runs"] = "2" },
		"created_at not UTC":         func(v apiObj) { v["created_at"] = "2025-01-02T03:04:05+02:00" },
		"id not a uuid":              func(v apiObj) { v["id"] = "42" },
		"config not an object":       func(v apiObj) { at(v, "nodes")["config"] = nil },
		"parent_node_key a number":   func(v apiObj) { at(v, "nodes")["parent_node_key"] = 1 },
		"depends_on of numbers":      func(v apiObj) { at(v, "steps")["depends_on"] = []any{1} },
	} {
		v := valid()
		mutate(v)
		if errs := check(v); len(errs) == 0 {
			t.Errorf("%s: the checker accepts it", name)
		}
	}
}

func TestWorkflowsCreateAndRead(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		alpha := f.Project(t, owner, "Alpha")
		bravo := f.Project(t, owner, "Bravo")

		w, created := apiCreate(t, owner, apiKitchenSink(alpha))
		if w.ProjectID != alpha || w.Name != "Kitchen sink" || w.MaxConcurrentRuns == nil || *w.MaxConcurrentRuns != 5 ||
			time.Since(w.CreatedAt) > time.Minute || time.Until(w.CreatedAt) > time.Second {
			t.Fatalf("workflow = %s", created)
		}
		// Nodes come back in the order given, with defaults filled in.
		type want struct {
			key, kind string
			ordinal   int64
			pos       workflows.Position
			parent    string
		}
		wantNodes := []want{
			{"start", "transform", 0, workflows.Position{X: 120.5, Y: -40}, ""},
			{"double", "transform", 1, workflows.Position{}, ""},
			{"check", "gate", 2, workflows.Position{}, ""},
			{"each", "loop", 3, workflows.Position{}, ""},
			{"body", "transform", 4, workflows.Position{}, "each"},
			{"body2", "transform", 5, workflows.Position{Y: 80}, "each"},
			{"review", "agent", 5, workflows.Position{}, ""},
			{"summary", "agent", -9007199254740991, workflows.Position{}, ""},
			{"done", "end", 9007199254740991, workflows.Position{}, ""},
		}
		if len(w.Nodes) != len(wantNodes) {
			t.Fatalf("nodes = %s", created)
		}
		nodeIDs := map[string]string{}
		seen := map[string]bool{}
		inNodes := apiKitchenSink(alpha)["nodes"].([]apiObj)
		for i, n := range w.Nodes {
			wn := wantNodes[i]
			parent := ""
			if n.ParentNodeKey != nil {
				parent = *n.ParentNodeKey
			}
			if n.Key != wn.key || n.Kind != wn.kind || n.Ordinal != wn.ordinal || n.Position != wn.pos || parent != wn.parent || seen[n.ID] {
				t.Fatalf("node %d = %+v, want %+v", i, n, wn)
			}
			cfgIn, _ := json.Marshal(inNodes[i]["config"])
			cfgOut, _ := json.Marshal(n.Config)
			if !apiSameJSON(t, cfgIn, cfgOut) {
				t.Fatalf("node %s config = %s, want %s", n.Key, cfgOut, cfgIn)
			}
			seen[n.ID] = true
			nodeIDs[n.Key] = n.ID
		}
		// A node outside any loop shows parent_node_key as null.
		if !strings.Contains(string(created), `"parent_node_key":null`) || !strings.Contains(string(created), `"parent_node_key":"each"`) {
			t.Fatalf("parent_node_key: %s", created)
		}
		wantEdges := [][3]string{{"start", "out", "double"}, {"double", "out", "check"}, {"check", "true", "each"}, {"check", "false", "review"},
			{"body", "out", "body2"}, {"each", "out", "review"}, {"review", "out", "done"}, {"summary", "out", "done"}}
		if len(w.Edges) != len(wantEdges) {
			t.Fatalf("edges = %s", created)
		}
		for i, ed := range w.Edges {
			if [3]string{ed.Source, ed.SourceHandle, ed.Target} != wantEdges[i] || seen[ed.ID] {
				t.Fatalf("edge %d = %+v, want %v", i, ed, wantEdges[i])
			}
			seen[ed.ID] = true
		}
		// Steps: the agent nodes by ordinal, depends_on rebuilt from the
		// incoming edges (sorted), [] when there are none.
		wantSteps := []workflows.Step{
			{ID: nodeIDs["summary"], StepKey: "summary", Kind: "agent", PromptTemplate: "Summarise", Ordinal: -9007199254740991, DependsOn: []string{}},
			{ID: nodeIDs["review"], StepKey: "review", Kind: "agent", AgentType: "shell", PromptTemplate: "Review {{ input.x }}", OnFailure: "continue",
				Ordinal: 5, DependsOn: []string{"check", "each"}},
		}
		if !reflect.DeepEqual(w.Steps, wantSteps) {
			t.Fatalf("steps = %+v, want %+v", w.Steps, wantSteps)
		}
		if !strings.Contains(string(created), `"depends_on":[]`) {
			t.Fatalf("a step without dependencies must show depends_on []: %s", created)
		}

		// GET shows exactly what POST answered.
		if _, got := apiGet(t, owner, w.ID); !apiSameJSON(t, got, created) {
			t.Fatalf("GET = %s\nPOST = %s", got, created)
		}

		// A second workflow, in another project, without a cap.
		w2, created2 := apiCreate(t, owner, apiWfBody(bravo, "Second", []apiObj{apiNode("only", "transform", apiObj{"expression": "1"})}, nil))
		if w2.MaxConcurrentRuns != nil || len(w2.Edges) != 0 || len(w2.Steps) != 0 || w2.ProjectID != bravo {
			t.Fatalf("second = %s", created2)
		}
		if !strings.Contains(string(created2), `"max_concurrent_runs":null`) || !strings.Contains(string(created2), `"edges":[]`) ||
			!strings.Contains(string(created2), `"steps":[]`) {
			t.Fatalf("empty lists must be [] and a missing cap null: %s", created2)
		}

		listIDs := func(path string) []string {
			r := owner.Do("GET", path, nil)
			fixture.Want(t, r, http.StatusOK)
			var out []string
			for _, e := range apiCheckWorkflowArray(t, r.Body) {
				out = append(out, apiDecodeWorkflow(t, e).ID)
			}
			return out
		}
		for path, want := range map[string][]string{
			"/api/workflows?project_id=" + alpha:     {w.ID},
			"/api/workflows?project_id=" + bravo:     {w2.ID},
			"/api/workflows?project_id=" + ids.New(): nil,
			"/api/workflows":                         {w2.ID, w.ID},
			"/api/workflows/all":                     {w2.ID, w.ID},
		} {
			if got := listIDs(path); !slices.Equal(got, want) {
				t.Errorf("%s = %v, want %v", path, got, want)
			}
		}
		apiWantError(t, owner.Do("GET", "/api/workflows?project_id=x", nil), 400, "bad_request", "project_id")

		// The project facet counts under every filter but project_id.
		board := func(query string, wantIDs []string, total int, facet map[string]int) {
			t.Helper()
			r := owner.Do("GET", "/api/workflows/board"+query, nil)
			fixture.Want(t, r, http.StatusOK)
			if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"rows", "total", "page", "page_size", "facets"}) {
				t.Fatalf("board fields = %v", got)
			}
			var b struct {
				Rows   []json.RawMessage `json:"rows"`
				Total  int               `json:"total"`
				Facets map[string][]struct {
					Value string `json:"value"`
					Count int    `json:"count"`
				} `json:"facets"`
			}
			r.JSON(t, &b)
			var got []string
			for _, row := range b.Rows {
				apiCheckWorkflowJSON(t, row)
				got = append(got, apiDecodeWorkflow(t, row).ID)
			}
			if !slices.Equal(got, wantIDs) || b.Total != total {
				t.Fatalf("board%s = %v total %d, want %v total %d", query, got, b.Total, wantIDs, total)
			}
			counts := map[string]int{}
			for _, c := range b.Facets["project_id"] {
				counts[c.Value] = c.Count
			}
			if !reflect.DeepEqual(counts, facet) {
				t.Fatalf("board%s project facet = %s", query, r.Body)
			}
		}
		both := map[string]int{alpha: 1, bravo: 1}
		board("?project_id="+alpha, []string{w.ID}, 1, both)
		board("?project_id="+bravo, []string{w2.ID}, 1, both)
		board("", []string{w2.ID, w.ID}, 2, both)
		board("?sort=name&order=asc", []string{w.ID, w2.ID}, 2, both)
		board("?q=kitchen", []string{w.ID}, 1, map[string]int{alpha: 1})
		board("?q=kitchen&project_id="+bravo, nil, 0, map[string]int{alpha: 1})
		board("?page=2&page_size=1", []string{w.ID}, 2, both)
		apiWantError(t, owner.Do("GET", "/api/workflows/board?project_id=x", nil), 400, "bad_request")
		apiWantError(t, owner.Do("GET", "/api/workflows/board?sort=kind", nil), 400, "bad_request")

		apiWantError(t, owner.Do("GET", "/api/workflows/"+ids.New(), nil), 404, "not_found")
		apiWantError(t, owner.Do("GET", "/api/workflows/x", nil), 404, "not_found")
	})
}

func TestWorkflowsValidation(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		p := f.Project(t, owner, "Alpha")
		tf := func(key string) apiObj { return apiNode(key, "transform", apiObj{"expression": "1"}) }
		gate := apiNode("g", "gate", apiObj{"condition": "true"})
		loop := apiNode("l", "loop", apiObj{"items": "[1]"})
		cases := []struct {
			name      string
			body      any
			fragments []string
		}{
			{"unknown kind", apiWfBody(p, "w", []apiObj{tf("a"), apiNode("b", "teleport", nil)}, nil), []string{`node "b"`, `unknown kind "teleport"`}},
			{"duplicate key", apiWfBody(p, "w", []apiObj{tf("a"), tf("a")}, nil), []string{`node "a"`, `duplicate node key "a"`}},
			{"edge to an unknown node", apiWfBody(p, "w", []apiObj{tf("a")}, []apiObj{apiEdge("a", "", "zz")}), []string{"edge a -> zz", `unknown target node "zz"`}},
			{"edge from an unknown node", apiWfBody(p, "w", []apiObj{tf("a")}, []apiObj{apiEdge("zz", "out", "a")}), []string{"edge zz -> a", `unknown source node "zz"`}},
			{"out handle on a gate", apiWfBody(p, "w", []apiObj{gate, tf("a")}, []apiObj{apiEdge("g", "out", "a")}),
				[]string{"edge g -> a", `source_handle "out"`, "true, false"}},
			{"no handle on a gate", apiWfBody(p, "w", []apiObj{gate, tf("a")}, []apiObj{apiEdge("g", "", "a")}), []string{"edge g -> a", "source_handle", "true, false"}},
			{"unknown handle on a transform", apiWfBody(p, "w", []apiObj{tf("a"), tf("b")}, []apiObj{apiEdge("a", "approved", "b")}),
				[]string{"edge a -> b", `source_handle "approved"`}},
			{"edge out of an end", apiWfBody(p, "w", []apiObj{apiNode("e", "end", nil), tf("a")}, []apiObj{apiEdge("e", "out", "a")}), []string{"edge e -> a", "end"}},
			{"self edge", apiWfBody(p, "w", []apiObj{tf("a")}, []apiObj{apiEdge("a", "", "a")}), []string{"edge a -> a"}},
			{"duplicate edge", apiWfBody(p, "w", []apiObj{tf("a"), tf("b")}, []apiObj{apiEdge("a", "", "b"), apiEdge("a", "out", "b")}), []string{"edge a -> b", "duplicate"}},
			{"cycle", apiWfBody(p, "w", []apiObj{tf("a"), tf("b"), tf("c")}, []apiObj{apiEdge("a", "", "b"), apiEdge("b", "", "c"), apiEdge("c", "", "b")}),
				[]string{"cycle", `"b"`, "b -> c -> b"}},
			{"parent not a loop", apiWfBody(p, "w", []apiObj{tf("a"), apiNode("b", "transform", apiObj{"expression": "1"}, "parent_node_key", "a")}, nil),
				[]string{`node "b"`, `parent node "a"`, "not a loop"}},
			{"unknown parent", apiWfBody(p, "w", []apiObj{apiNode("b", "transform", apiObj{"expression": "1"}, "parent_node_key", "zz")}, nil),
				[]string{`node "b"`, `"zz"`}},
			{"edge crossing a frame", apiWfBody(p, "w", []apiObj{loop, apiNode("b", "transform", apiObj{"expression": "item"}, "parent_node_key", "l"), tf("t")},
				[]apiObj{apiEdge("b", "", "t")}), []string{"edge b -> t", "frame"}},
			{"edge into a loop body", apiWfBody(p, "w", []apiObj{tf("t"), loop, apiNode("b", "transform", apiObj{"expression": "item"}, "parent_node_key", "l")},
				[]apiObj{apiEdge("t", "", "b")}), []string{"edge t -> b", "frame"}},
			{"config: missing condition", apiWfBody(p, "w", []apiObj{apiNode("g", "gate", apiObj{})}, nil), []string{`node "g"`, "condition"}},
			{"config: wrong type", apiWfBody(p, "w", []apiObj{apiNode("a", "transform", apiObj{"expression": 5})}, nil), []string{`node "a"`, "expression"}},
			{"config: unknown field", apiWfBody(p, "w", []apiObj{apiNode("h", "human", apiObj{"mesage": "typo"})}, nil), []string{`node "h"`, "mesage"}},
			{"config: enum", apiWfBody(p, "w", []apiObj{apiNode("l", "loop", apiObj{"items": "[1]", "mode": "sometimes"})}, nil), []string{`node "l"`, "mode"}},
			{"config: maximum", apiWfBody(p, "w", []apiObj{apiNode("l", "loop", apiObj{"items": "[1]", "parallelism": 101})}, nil), []string{`node "l"`, "parallelism"}},
			{"config: expression", apiWfBody(p, "w", []apiObj{apiNode("g", "gate", apiObj{"condition": "nodes.nope.output =="})}, nil), []string{`node "g"`, "config.condition"}},
			{"config: unknown node", apiWfBody(p, "w", []apiObj{apiNode("g", "gate", apiObj{"condition": "nodes.nope.output == 1"})}, nil), []string{`node "g"`, `no node "nope"`}},
			{"bad key", apiWfBody(p, "w", []apiObj{tf("1st")}, nil), []string{`node "1st"`, "key"}},
			{"no nodes", apiWfBody(p, "w", []apiObj{}, nil), []string{"node"}},
			{"nodes and steps", apiObj{"project_id": p, "name": "w", "nodes": []apiObj{tf("a")}, "steps": []apiObj{{"step_key": "s", "prompt_template": "x"}}},
				[]string{"steps"}},
			{"ordinal out of range", apiWfBody(p, "w", []apiObj{apiNode("a", "transform", apiObj{"expression": "1"}, "ordinal", json.Number("9007199254740992"))}, nil),
				[]string{"ordinal"}},
			{"unknown top-level field", apiObj{"project_id": p, "name": "w", "nodes": []apiObj{tf("a")}, "colour": "red"}, []string{"colour"}},
			{"unknown node field", apiWfBody(p, "w", []apiObj{apiNode("a", "transform", apiObj{"expression": "1"}, "colour", "red")}, nil), []string{"colour"}},
			{"unknown edge field", apiWfBody(p, "w", []apiObj{tf("a"), tf("b")}, []apiObj{{"source": "a", "target": "b", "weight": 1}}), []string{"weight"}},
			{"missing name", apiObj{"project_id": p, "nodes": []apiObj{tf("a")}}, []string{"name"}},
			{"missing project", apiWfBody("", "w", []apiObj{tf("a")}, nil), []string{"project_id"}},
			{"unknown project", apiWfBody(ids.New(), "w", []apiObj{tf("a")}, nil), []string{"project"}},
			{"cap 0", apiObj{"project_id": p, "name": "w", "nodes": []apiObj{tf("a")}, "max_concurrent_runs": 0}, []string{"max_concurrent_runs"}},
			{"not JSON", `{"name": "w", "nodes": [`, nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				apiWantError(t, owner.Do("POST", "/api/workflows", c.body), http.StatusBadRequest, "bad_request", c.fragments...)
			})
		}
		// None of them made a workflow.
		if r := owner.Do("GET", "/api/workflows/all", nil); strings.TrimSpace(string(r.Body)) != "[]" {
			t.Fatalf("refused creates left workflows: %s", r.Body)
		}

		// A replace with an invalid graph changes nothing.
		w, before := apiCreate(t, owner, apiWfBody(p, "Valid", []apiObj{tf("a"), tf("b")}, []apiObj{apiEdge("a", "", "b")}))
		for _, c := range []struct {
			name      string
			body      any
			fragments []string
		}{
			{"cycle", apiObj{"name": "Renamed", "nodes": []apiObj{tf("a"), tf("b")}, "edges": []apiObj{apiEdge("a", "", "b"), apiEdge("b", "", "a")}}, []string{"cycle"}},
			{"unknown kind", apiObj{"nodes": []apiObj{tf("a"), apiNode("b", "teleport", nil)}}, []string{`node "b"`, "teleport"}},
			{"bad gate handle", apiObj{"nodes": []apiObj{gate, tf("a")}, "edges": []apiObj{apiEdge("g", "approved", "a")}}, []string{"edge g -> a", "approved"}},
			{"config violation", apiObj{"name": "Renamed", "nodes": []apiObj{apiNode("g", "gate", apiObj{"condition": ""})}}, []string{`node "g"`, "condition"}},
			{"no nodes", apiObj{"name": "Renamed"}, []string{"node"}},
			{"project change", apiObj{"project_id": f.Project(t, owner, "Other"), "nodes": []apiObj{tf("a")}}, []string{"project_id"}},
			{"unknown field", apiObj{"nodes": []apiObj{tf("a")}, "colour": "red"}, []string{"colour"}},
		} {
			t.Run("PUT "+c.name, func(t *testing.T) {
				apiWantError(t, owner.Do("PUT", "/api/workflows/"+w.ID, c.body), http.StatusBadRequest, "bad_request", c.fragments...)
				if _, after := apiGet(t, owner, w.ID); !bytes.Equal(after, before) {
					t.Fatalf("a refused replace changed the workflow:\n%s\n%s", before, after)
				}
			})
		}
		apiWantError(t, owner.Do("PUT", "/api/workflows/"+ids.New(), apiObj{"nodes": []apiObj{tf("a")}}), 404, "not_found")
	})
}

func TestWorkflowsReplaceAndConcurrency(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		p := f.Project(t, owner, "Alpha")
		w, _ := apiCreate(t, owner, apiWfBody(p, "Original", []apiObj{
			apiNode("a", "transform", apiObj{"expression": "1"}),
			apiNode("b", "agent", apiObj{"prompt": "build"}),
		}, []apiObj{apiEdge("a", "", "b")}))
		id := func(w workflows.Workflow, key string) string {
			for _, n := range w.Nodes {
				if n.Key == key {
					return n.ID
				}
			}
			t.Fatalf("no node %s in %+v", key, w.Nodes)
			return ""
		}

		// A full replace keeps the ids of the nodes (and edges) it keeps.
		r := owner.Do("PUT", "/api/workflows/"+w.ID, apiObj{"name": "Renamed", "nodes": []apiObj{
			apiNode("b", "agent", apiObj{"prompt": "build it"}),
			apiNode("a", "transform", apiObj{"expression": "2"}),
			apiNode("c", "end", nil),
		}, "edges": []apiObj{apiEdge("a", "", "b"), apiEdge("b", "out", "c")}})
		fixture.Want(t, r, http.StatusOK)
		apiCheckWorkflowJSON(t, r.Body)
		w2 := apiDecodeWorkflow(t, r.Body)
		if w2.ID != w.ID || w2.ProjectID != p || w2.Name != "Renamed" || !w2.CreatedAt.Equal(w.CreatedAt) || len(w2.Nodes) != 3 {
			t.Fatalf("replaced = %s", r.Body)
		}
		if id(w2, "a") != id(w, "a") || id(w2, "b") != id(w, "b") || id(w2, "c") == id(w, "a") || id(w2, "c") == id(w, "b") {
			t.Fatalf("node ids not kept by key: before %+v after %+v", w.Nodes, w2.Nodes)
		}
		if w2.Nodes[0].Key != "b" || w2.Nodes[0].Ordinal != 0 || w2.Nodes[0].Config["prompt"] != "build it" || w2.Nodes[1].Config["expression"] != "2" {
			t.Fatalf("replaced nodes = %+v", w2.Nodes)
		}
		if len(w2.Edges) != 2 || w2.Edges[0].ID != w.Edges[0].ID || w2.Edges[1].ID == w.Edges[0].ID ||
			w2.Edges[1] != (workflows.Edge{ID: w2.Edges[1].ID, Source: "b", SourceHandle: "out", Target: "c"}) {
			t.Fatalf("replaced edges = %+v (before %+v)", w2.Edges, w.Edges)
		}
		if len(w2.Steps) != 1 || w2.Steps[0].StepKey != "b" || w2.Steps[0].PromptTemplate != "build it" || !slices.Equal(w2.Steps[0].DependsOn, []string{"a"}) {
			t.Fatalf("steps = %+v", w2.Steps)
		}
		if _, got := apiGet(t, owner, w.ID); !apiSameJSON(t, got, r.Body) {
			t.Fatalf("GET after PUT = %s, PUT answered %s", got, r.Body)
		}

		// A replace without a name keeps the name.
		r = owner.Do("PUT", "/api/workflows/"+w.ID, apiObj{"nodes": []apiObj{apiNode("a", "transform", apiObj{"expression": "3"}), apiNode("b", "agent", apiObj{"prompt": "x"})}})
		fixture.Want(t, r, http.StatusOK)
		w3 := apiDecodeWorkflow(t, r.Body)
		if w3.Name != "Renamed" || len(w3.Edges) != 0 || id(w3, "a") != id(w, "a") || len(w3.Steps) != 1 || len(w3.Steps[0].DependsOn) != 0 {
			t.Fatalf("replace without name = %s", r.Body)
		}

		// The older step shape alone rebuilds the graph: agent nodes chained
		// by depends_on (repeats count once).
		r = owner.Do("PUT", "/api/workflows/"+w.ID, apiObj{"steps": []apiObj{
			{"step_key": "b", "prompt_template": "build", "agent_type": "shell"},
			{"step_key": "d", "prompt_template": "deploy", "depends_on": []string{"b", "b"}, "on_failure": "continue"},
		}})
		fixture.Want(t, r, http.StatusOK)
		apiCheckWorkflowJSON(t, r.Body)
		w4 := apiDecodeWorkflow(t, r.Body)
		if len(w4.Nodes) != 2 || w4.Nodes[0].Key != "b" || w4.Nodes[0].Kind != "agent" || w4.Nodes[1].Key != "d" || w4.Nodes[1].Kind != "agent" ||
			id(w4, "b") != id(w, "b") || w4.Nodes[0].Ordinal != 0 || w4.Nodes[1].Ordinal != 1 {
			t.Fatalf("nodes from steps = %s", r.Body)
		}
		if !reflect.DeepEqual(w4.Nodes[0].Config, map[string]any{"prompt": "build", "agent_type": "shell"}) ||
			!reflect.DeepEqual(w4.Nodes[1].Config, map[string]any{"prompt": "deploy", "on_failure": "continue"}) {
			t.Fatalf("configs from steps = %+v / %+v", w4.Nodes[0].Config, w4.Nodes[1].Config)
		}
		if len(w4.Edges) != 1 || w4.Edges[0].Source != "b" || w4.Edges[0].SourceHandle != "out" || w4.Edges[0].Target != "d" {
			t.Fatalf("edges from steps = %+v", w4.Edges)
		}
		wantSteps := []workflows.Step{
			{ID: id(w4, "b"), StepKey: "b", Kind: "agent", AgentType: "shell", PromptTemplate: "build", Ordinal: 0, DependsOn: []string{}},
			{ID: id(w4, "d"), StepKey: "d", Kind: "agent", PromptTemplate: "deploy", OnFailure: "continue", Ordinal: 1, DependsOn: []string{"b"}},
		}
		if !reflect.DeepEqual(w4.Steps, wantSteps) {
			t.Fatalf("steps = %+v, want %+v", w4.Steps, wantSteps)
		}
		if _, got := apiGet(t, owner, w.ID); !apiSameJSON(t, got, r.Body) {
			t.Fatalf("GET after steps PUT = %s, PUT answered %s", got, r.Body)
		}
		for name, body := range map[string]apiObj{
			"step of another kind": {"steps": []apiObj{{"step_key": "g", "kind": "gate", "prompt_template": "x"}}},
			"steps with edges":     {"steps": []apiObj{{"step_key": "s", "prompt_template": "x"}}, "edges": []apiObj{apiEdge("s", "", "s")}},
			"step depends on none": {"steps": []apiObj{{"step_key": "s", "prompt_template": "x", "depends_on": []string{"zz"}}}},
			"step cycle": {"steps": []apiObj{{"step_key": "s", "prompt_template": "x", "depends_on": []string{"t"}},
				{"step_key": "t", "prompt_template": "y", "depends_on": []string{"s"}}}},
		} {
			apiWantError(t, owner.Do("PUT", "/api/workflows/"+w.ID, body), http.StatusBadRequest, "bad_request")
			if _, got := apiGet(t, owner, w.ID); !apiSameJSON(t, got, r.Body) {
				t.Fatalf("%s: a refused replace changed the workflow: %s", name, got)
			}
		}

		// The cap: set, clear, refuse 0.
		conc := func(body any, status int) workflows.Workflow {
			t.Helper()
			r := owner.Do("PATCH", "/api/workflows/"+w.ID+"/concurrency", body)
			if status != http.StatusOK {
				apiWantError(t, r, status, "bad_request")
				return workflows.Workflow{}
			}
			fixture.Want(t, r, http.StatusOK)
			apiCheckWorkflowJSON(t, r.Body)
			return apiDecodeWorkflow(t, r.Body)
		}
		if got := conc(apiObj{"max_concurrent_runs": 2}, 200); got.MaxConcurrentRuns == nil || *got.MaxConcurrentRuns != 2 || len(got.Nodes) != 2 {
			t.Fatalf("cap 2 = %+v", got)
		}
		if got, raw := apiGet(t, owner, w.ID); got.MaxConcurrentRuns == nil || *got.MaxConcurrentRuns != 2 || !strings.Contains(string(raw), `"max_concurrent_runs":2`) {
			t.Fatalf("GET after cap 2 = %s", raw)
		}
		if got := conc(apiObj{"max_concurrent_runs": nil}, 200); got.MaxConcurrentRuns != nil {
			t.Fatalf("cap null = %+v", got.MaxConcurrentRuns)
		}
		if _, raw := apiGet(t, owner, w.ID); !strings.Contains(string(raw), `"max_concurrent_runs":null`) {
			t.Fatalf("GET after cap null = %s", raw)
		}
		conc(apiObj{"max_concurrent_runs": 0}, 400)
		conc(apiObj{"max_concurrent_runs": -1}, 400)
		conc(apiObj{"max_concurrent_runs": json.Number("9007199254740992")}, 400)
		conc(apiObj{"max_concurrent_runs": "2"}, 400)
		conc(apiObj{}, 400)
		if got, _ := apiGet(t, owner, w.ID); got.MaxConcurrentRuns != nil {
			t.Fatalf("refused cap changes changed it: %v", *got.MaxConcurrentRuns)
		}
		apiWantError(t, owner.Do("PATCH", "/api/workflows/"+ids.New()+"/concurrency", apiObj{"max_concurrent_runs": 2}), 404, "not_found")
	})
}

func TestWorkflowsNodeTypes(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		r := f.Owner.Do("GET", "/api/workflow-node-types", nil)
		fixture.Want(t, r, http.StatusOK)
		var types []struct {
			Slug         string          `json:"slug"`
			Name         string          `json:"name"`
			Available    *bool           `json:"available"`
			Handles      []string        `json:"handles"`
			ConfigSchema json.RawMessage `json:"config_schema"`
		}
		r.JSON(t, &types)
		var slugs []string
		for _, nt := range types {
			slugs = append(slugs, nt.Slug)
		}
		if !slices.Equal(slugs, apiNodeKinds) {
			t.Fatalf("slugs = %v, want the 19 NodeKind values %v", slugs, apiNodeKinds)
		}
		available := []string{"agent", "gate", "human", "end", "code", "transform", "http_request", "loop", "wait_event", "notify_webhook",
			"db_query", "db_execute", "notify_telegram", "notify_email", "notify_discord", "llm_classify", "connector", "app", "imap_ack"}
		wantHandles := map[string][]string{
			"agent": {"out", "error"}, "gate": {"true", "false"}, "human": {"approved", "rejected"}, "end": {},
			"transform": {"out", "error"}, "loop": {"out", "error"}, "wait_event": {"event", "timeout"}, "http_request": {"out", "error"},
		}
		wantProps := map[string]string{"agent": "prompt", "gate": "condition", "human": "message", "end": "output", "transform": "expression",
			"loop": "items", "wait_event": "event", "http_request": "url", "notify_webhook": "url", "llm_classify": "categories"}
		for _, nt := range types {
			if nt.Name == "" || nt.Available == nil || nt.Handles == nil {
				t.Errorf("%s: name, available and handles are required: %s", nt.Slug, r.Body)
				continue
			}
			if *nt.Available != slices.Contains(available, nt.Slug) {
				t.Errorf("%s: available = %v", nt.Slug, *nt.Available)
			}
			if want, ok := wantHandles[nt.Slug]; ok && !slices.Equal(nt.Handles, want) {
				t.Errorf("%s: handles = %v, want %v", nt.Slug, nt.Handles, want)
			}
			var schema struct {
				Type       string          `json:"type"`
				Properties map[string]any  `json:"properties"`
				Extra      json.RawMessage `json:"additionalProperties"`
			}
			if err := json.Unmarshal(nt.ConfigSchema, &schema); err != nil || schema.Type != "object" {
				t.Errorf("%s: config_schema = %s", nt.Slug, nt.ConfigSchema)
				continue
			}
			if p, ok := wantProps[nt.Slug]; ok {
				if _, ok := schema.Properties[p]; !ok {
					t.Errorf("%s: config_schema lacks %s: %s", nt.Slug, p, nt.ConfigSchema)
				}
			}
		}
		if got := fixture.ElementKeys(t, r.Body); len(got) != 19 || !slices.Contains(got[0], "config_schema") {
			t.Fatalf("node type fields = %v", got)
		}
	})
}

func TestWorkflowsExportImport(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		alpha := f.Project(t, owner, "Alpha")
		bravo := f.Project(t, owner, "Bravo")
		w, _ := apiCreate(t, owner, apiKitchenSink(alpha))

		export := func(id string) []byte {
			t.Helper()
			r := owner.Do("GET", "/api/workflows/"+id+"/export", nil)
			fixture.Want(t, r, http.StatusOK)
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/yaml" {
				t.Fatalf("export Content-Type = %q", r.Header.Get("Content-Type"))
			}
			return r.Body
		}
		importYAML := func(project string, doc []byte) *apitest.Response {
			return owner.Do("POST", "/api/workflows/import?project_id="+project, string(doc), "Content-Type", "application/yaml")
		}
		doc := export(w.ID)
		for _, frag := range []string{"version: 1", "name: Kitchen sink", "max_concurrent_runs: 5", "key: start", "parent: each", "9007199254740991"} {
			if !strings.Contains(string(doc), frag) {
				t.Errorf("export lacks %q:\n%s", frag, doc)
			}
		}
		if strings.Contains(string(doc), w.ID) || strings.Contains(string(doc), alpha) || strings.Contains(string(doc), w.Nodes[0].ID) {
			t.Fatalf("the export holds ids:\n%s", doc)
		}

		r := importYAML(bravo, doc)
		fixture.Want(t, r, http.StatusCreated)
		apiCheckWorkflowJSON(t, r.Body)
		imported := apiDecodeWorkflow(t, r.Body)
		if imported.ID == w.ID || imported.ProjectID != bravo || imported.Name != w.Name || imported.MaxConcurrentRuns == nil ||
			*imported.MaxConcurrentRuns != 5 || len(imported.Nodes) != len(w.Nodes) || len(imported.Edges) != len(w.Edges) || len(imported.Steps) != 2 {
			t.Fatalf("imported = %s", r.Body)
		}
		for i, n := range imported.Nodes {
			o := w.Nodes[i]
			if n.ID == o.ID || n.Key != o.Key || n.Kind != o.Kind || n.Ordinal != o.Ordinal || n.Position != o.Position ||
				!reflect.DeepEqual(n.Config, o.Config) || !reflect.DeepEqual(n.ParentNodeKey, o.ParentNodeKey) {
				t.Fatalf("imported node %d = %+v, exported %+v", i, n, o)
			}
		}
		if _, got := apiGet(t, owner, imported.ID); !apiSameJSON(t, got, r.Body) {
			t.Fatalf("GET imported = %s, import answered %s", got, r.Body)
		}
		if again := export(imported.ID); !bytes.Equal(again, doc) {
			t.Fatalf("export -> import -> export changed the document:\n%s\n---\n%s", doc, again)
		}

		// A hand-written document with the defaults left out.
		r = importYAML(alpha, []byte("version: 1\nname: Hand written\nnodes:\n  - key: a\n    kind: transform\n    config: {expression: input.x}\n"+
			"  - key: b\n    kind: end\nedges:\n  - {source: a, target: b}\n"))
		fixture.Want(t, r, http.StatusCreated)
		apiCheckWorkflowJSON(t, r.Body)
		hw := apiDecodeWorkflow(t, r.Body)
		if hw.MaxConcurrentRuns != nil || len(hw.Nodes) != 2 || hw.Nodes[1].Ordinal != 1 || len(hw.Edges) != 1 || hw.Edges[0].SourceHandle != "out" {
			t.Fatalf("hand-written import = %s", r.Body)
		}

		before := owner.Do("GET", "/api/workflows/all", nil).Body
		for name, c := range map[string]struct {
			project, doc string
			fragments    []string
		}{
			"malformed YAML":  {alpha, "version: 1\nname: [unclosed\nnodes:\n", nil},
			"not a mapping":   {alpha, "- just\n- a list\n", nil},
			"unknown field":   {alpha, "version: 1\nname: x\ncolour: red\nnodes:\n  - {key: a, kind: end}\n", []string{"colour"}},
			"unknown version": {alpha, "version: 2\nname: x\nnodes:\n  - {key: a, kind: end}\n", []string{"version"}},
			"invalid graph":   {alpha, "version: 1\nname: x\nnodes:\n  - {key: a, kind: teleport}\n", []string{`node "a"`, "teleport"}},
			"cycle":           {alpha, "version: 1\nname: x\nnodes:\n  - {key: a, kind: transform, config: {expression: '1'}}\n  - {key: b, kind: transform, config: {expression: '1'}}\n  - {key: c, kind: transform, config: {expression: '1'}}\nedges:\n  - {source: a, target: b}\n  - {source: b, target: c}\n  - {source: c, target: b}\n", []string{"cycle"}},
			"empty document":  {alpha, "", nil},
			// The cap has the same rule on import as on create and PATCH:
			// at least 1 (and an integer within ±9007199254740991).
			"cap 0":             {alpha, "version: 1\nname: x\nmax_concurrent_runs: 0\nnodes:\n  - {key: a, kind: end}\n", []string{"max_concurrent_runs"}},
			"negative cap":      {alpha, "version: 1\nname: x\nmax_concurrent_runs: -3\nnodes:\n  - {key: a, kind: end}\n", []string{"max_concurrent_runs"}},
			"cap too large":     {alpha, "version: 1\nname: x\nmax_concurrent_runs: 9007199254740992\nnodes:\n  - {key: a, kind: end}\n", []string{"max_concurrent_runs"}},
			"unknown project":   {ids.New(), string(doc), []string{"project"}},
			"malformed project": {"x", string(doc), []string{"project"}},
		} {
			t.Run(name, func(t *testing.T) {
				apiWantError(t, importYAML(c.project, []byte(c.doc)), http.StatusBadRequest, "bad_request", c.fragments...)
			})
		}
		apiWantError(t, owner.Do("POST", "/api/workflows/import", string(doc), "Content-Type", "application/yaml"), http.StatusBadRequest, "bad_request")
		if after := owner.Do("GET", "/api/workflows/all", nil).Body; !bytes.Equal(after, before) {
			t.Fatalf("refused imports changed the workflows:\n%s\n%s", before, after)
		}
		apiWantError(t, owner.Do("GET", "/api/workflows/"+ids.New()+"/export", nil), 404, "not_found")
	})
}

// apiWaitRun polls a run until ok holds (10 s at most).
func apiWaitRun(t *testing.T, c *apitest.Client, runID, what string, ok func(v *workflows.RunView) bool) *workflows.RunView {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.Do("GET", "/api/workflows/runs/"+runID, nil)
		fixture.Want(t, r, http.StatusOK)
		var v workflows.RunView
		r.JSON(t, &v)
		if ok(&v) {
			return &v
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s within 10 s: %s", runID, what, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func apiFinished(v *workflows.RunView) bool {
	return v.Status == workflows.RunSucceeded || v.Status == workflows.RunFailed || v.Status == workflows.RunCancelled
}

func apiWaitFinished(t *testing.T, c *apitest.Client, runID string) *workflows.RunView {
	t.Helper()
	return apiWaitRun(t, c, runID, "finishing", apiFinished)
}

// apiWaitHuman polls until the run's human node key waits for a decision.
func apiWaitHuman(t *testing.T, c *apitest.Client, runID, key string) *workflows.RunView {
	t.Helper()
	v := apiWaitRun(t, c, runID, key+" waiting", func(v *workflows.RunView) bool {
		return slices.Contains(v.WaitingOn, key) || apiFinished(v)
	})
	if v.Status != workflows.RunRunning || apiNodeRun(v, "", key) == nil || apiNodeRun(v, "", key).Status != workflows.NodeWaiting {
		t.Fatalf("run %s should wait at %s: %+v", runID, key, v)
	}
	return v
}

func apiNodeRun(v *workflows.RunView, frame, key string) *workflows.NodeRunView {
	for i := range v.Nodes {
		if v.Nodes[i].Frame == frame && v.Nodes[i].Key == key {
			return &v.Nodes[i]
		}
	}
	return nil
}

// apiNodeStates maps frame/key to status (and handle when set).
func apiNodeStates(v *workflows.RunView) map[string]string {
	out := map[string]string{}
	for _, n := range v.Nodes {
		k := n.Key
		if n.Frame != "" {
			k = n.Frame + "/" + n.Key
		}
		s := n.Status
		if n.Handle != "" {
			s += ":" + n.Handle
		}
		out[k] = s
	}
	return out
}

func apiJSONValue(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	if raw == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %s", raw)
	}
	return v
}

func apiStartRun(t *testing.T, c *apitest.Client, workflowID string, body any) string {
	t.Helper()
	r := c.Do("POST", "/api/workflows/"+workflowID+"/runs", body)
	fixture.Want(t, r, http.StatusCreated)
	if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"run_id"}) {
		t.Fatalf("run answer fields = %v: %s", got, r.Body)
	}
	var s workflows.RunStarted
	r.JSON(t, &s)
	if !ids.Valid(s.RunID) {
		t.Fatalf("run_id = %q", s.RunID)
	}
	return s.RunID
}

// apiChainWorkflow computes from its input: a transform chain, a gate, a loop
// over [1, 2, 3] whose body multiplies by input.x, and an end whose output
// gathers them.
func apiChainWorkflow(project, name string) apiObj {
	return apiWfBody(project, name, []apiObj{
		apiNode("a", "transform", apiObj{"expression": "input.x * 3"}),
		apiNode("b", "transform", apiObj{"mapping": apiObj{"sum": "nodes.a.output + input.x"}}),
		apiNode("g", "gate", apiObj{"condition": "nodes.b.output.sum > 5"}),
		apiNode("each", "loop", apiObj{"items": "[1, 2, 3]"}),
		apiNode("body", "transform", apiObj{"expression": "item * input.x"}, "parent_node_key", "each"),
		apiNode("small", "transform", apiObj{"expression": "0"}),
		apiNode("fin", "end", apiObj{"output": `{"total": nodes.b.output.sum * 10, "items": nodes.each.output}`}),
	}, []apiObj{
		apiEdge("a", "", "b"), apiEdge("b", "", "g"), apiEdge("g", "true", "each"), apiEdge("g", "false", "small"), apiEdge("each", "", "fin"), apiEdge("small", "", "fin"),
	})
}

// apiApprovalWorkflow waits for a person: approved doubles the input into the
// run's output; rejected fails the run.
func apiApprovalWorkflow(project string) apiObj {
	return apiWfBody(project, "Approval", []apiObj{
		apiNode("prep", "transform", apiObj{"expression": "input.x + 1"}),
		apiNode("ask", "human", apiObj{"message": "Approve {{ input.x }}?"}),
		apiNode("yes", "transform", apiObj{"expression": "nodes.prep.output * 100"}),
		apiNode("no", "transform", apiObj{"expression": `"rejected"`}),
		apiNode("fin", "end", apiObj{"output": "nodes.yes.output"}),
		apiNode("nope", "end", apiObj{"status": "failed", "message": "rejected by {{ nodes.ask.output.decided_by }}"}),
	}, []apiObj{
		apiEdge("prep", "", "ask"), apiEdge("ask", "approved", "yes"), apiEdge("ask", "rejected", "no"), apiEdge("yes", "", "fin"), apiEdge("no", "", "nope"),
	})
}

func TestWorkflowsRuns(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		ws := owner.DefaultWorkspace()
		alpha := f.Project(t, owner, "Alpha")
		bravo := f.Project(t, owner, "Bravo")
		// A second account in the owner's workspace.
		second := f.App.Approved(f.Admin, "Sam Second")
		f.Exec(t, "INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'member', $3)", ws, second.ID, time.Now().UTC())
		second.Workspace = ws

		stats := func(query string) (map[string]any, []byte) {
			t.Helper()
			r := owner.Do("GET", "/api/workflows/stats"+query, nil)
			fixture.Want(t, r, http.StatusOK)
			if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"active_runs", "workflows", "success_rate_24h", "failed_24h", "avg_duration_seconds"}) {
				t.Fatalf("stats fields = %v", got)
			}
			return r.Map(t), r.Body
		}
		if s, raw := stats(""); s["active_runs"] != 0.0 || s["workflows"] != 0.0 || s["success_rate_24h"] != nil || s["failed_24h"] != 0.0 || s["avg_duration_seconds"] != nil {
			t.Fatalf("stats without workflows = %s", raw)
		}

		chain, _ := apiCreate(t, owner, apiChainWorkflow(alpha, "Chain"))
		approval, _ := apiCreate(t, owner, apiApprovalWorkflow(alpha))
		chainB, _ := apiCreate(t, owner, apiChainWorkflow(bravo, "Chain B"))
		var done []*workflows.RunView // succeeded and failed runs, for the stats

		// 1. The chain computes from its input.
		run1 := apiStartRun(t, owner, chain.ID, apiObj{"input": apiObj{"x": 2}})
		v := apiWaitFinished(t, owner, run1)
		if v.Status != workflows.RunSucceeded || v.ID != run1 || v.RunID != run1 || v.WorkflowID != chain.ID || v.ProjectID != alpha || v.Error != "" ||
			v.StartedAt == nil || v.FinishedAt == nil || v.CreatedBy == nil || *v.CreatedBy != owner.ID || len(v.WaitingOn) != 0 {
			t.Fatalf("chain run = %+v", v)
		}
		if got := apiJSONValue(t, v.Input); !reflect.DeepEqual(got, map[string]any{"x": 2.0}) {
			t.Fatalf("input = %s", v.Input)
		}
		if got := apiJSONValue(t, v.Output); !reflect.DeepEqual(got, map[string]any{"total": 80.0, "items": []any{2.0, 4.0, 6.0}}) {
			t.Fatalf("output = %s", v.Output)
		}
		wantStates := map[string]string{"a": "succeeded:out", "b": "succeeded:out", "g": "succeeded:true", "each": "succeeded:out",
			"each[0]/body": "succeeded:out", "each[1]/body": "succeeded:out", "each[2]/body": "succeeded:out", "small": "skipped", "fin": "succeeded"}
		if got := apiNodeStates(v); !reflect.DeepEqual(got, wantStates) {
			t.Fatalf("node states = %v, want %v", got, wantStates)
		}
		for key, want := range map[string]any{"a": 6.0, "b": map[string]any{"sum": 8.0}, "each": []any{2.0, 4.0, 6.0}} {
			if got := apiJSONValue(t, apiNodeRun(v, "", key).Output); !reflect.DeepEqual(got, want) {
				t.Errorf("node %s output = %v, want %v", key, got, want)
			}
		}
		for i, want := range []float64{2, 4, 6} {
			if got := apiJSONValue(t, apiNodeRun(v, fmt.Sprintf("each[%d]", i), "body").Output); got != want {
				t.Errorf("body of iteration %d = %v, want %v", i, got, want)
			}
		}
		done = append(done, v)

		// 2. An input the chain cannot compute with fails the run at a.
		run2 := apiStartRun(t, owner, chain.ID, apiObj{"input": apiObj{"x": "abc"}})
		v = apiWaitFinished(t, owner, run2)
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, `"a"`) || apiNodeRun(v, "", "a").Status != workflows.NodeFailed ||
			apiNodeRun(v, "", "a").Error == "" || v.FinishedAt == nil {
			t.Fatalf("failed run = %+v", v)
		}
		done = append(done, v)
		apiWantError(t, owner.Do("POST", "/api/workflows/"+chain.ID+"/runs", `{"input": {"x": 1}, "extra": true}`), 400, "bad_request")
		apiWantError(t, owner.Do("POST", "/api/workflows/"+ids.New()+"/runs", apiObj{"input": 1}), 404, "not_found")

		// 3. A human gate: approve by run id.
		run3 := apiStartRun(t, owner, approval.ID, apiObj{"input": apiObj{"x": 2}})
		v = apiWaitHuman(t, owner, run3, "ask")
		if !slices.Equal(v.WaitingOn, []string{"ask"}) || apiNodeRun(v, "", "prep").Status != workflows.NodeSucceeded {
			t.Fatalf("waiting run = %+v", v)
		}
		r := owner.Do("GET", "/api/workflows/pending-approvals", nil)
		fixture.Want(t, r, http.StatusOK)
		var approvals []workflows.Approval
		r.JSON(t, &approvals)
		if len(approvals) != 1 || approvals[0].RunID != run3 || approvals[0].NodeKey != "ask" || approvals[0].WorkflowID != approval.ID ||
			approvals[0].WorkflowName != "Approval" || approvals[0].ProjectID != alpha || approvals[0].WorkspaceID != ws ||
			approvals[0].Message != "Approve 2?" || approvals[0].WaitingSince.IsZero() {
			t.Fatalf("pending approvals = %s", r.Body)
		}
		// The other member of the workspace sees the run but may not decide.
		if r := second.Do("GET", "/api/workflows/runs/"+run3, nil); r.Status != http.StatusOK {
			t.Fatalf("a workspace member cannot read the run: %d %s", r.Status, r.Body)
		}
		if r := second.Do("GET", "/api/workflows/pending-approvals", nil); strings.TrimSpace(string(r.Body)) != "[]" {
			t.Fatalf("another member's pending approvals = %s", r.Body)
		}
		unknownRun := ids.New()
		for _, path := range []string{"/api/workflows/pending-approvals/{id}/decision", "/api/workflows/runs/{id}/nodes/ask/decision"} {
			foreign := second.Do("POST", strings.ReplaceAll(path, "{id}", run3), apiObj{"decision": "approve"})
			missing := second.Do("POST", strings.ReplaceAll(path, "{id}", unknownRun), apiObj{"decision": "approve"})
			apiWantError(t, foreign, http.StatusNotFound, "not_found")
			if strings.ReplaceAll(string(foreign.Body), run3, "{id}") != strings.ReplaceAll(string(missing.Body), unknownRun, "{id}") || missing.Status != 404 {
				t.Fatalf("another user's decision %s answers unlike an unknown run:\n%s\n%s", path, foreign.Body, missing.Body)
			}
		}
		apiWantError(t, owner.Do("POST", "/api/workflows/pending-approvals/"+run3+"/decision", apiObj{"decision": "maybe"}), 400, "bad_request", "decision")
		apiWantError(t, owner.Do("POST", "/api/workflows/pending-approvals/"+run3+"/decision", apiObj{}), 400, "bad_request")
		apiWantError(t, owner.Do("POST", "/api/workflows/runs/"+run3+"/nodes/prep/decision", apiObj{"decision": "approve"}), 404, "not_found")
		apiWantError(t, owner.Do("POST", "/api/workflows/runs/"+run3+"/nodes/zz/decision", apiObj{"decision": "approve"}), 404, "not_found")
		apiWaitHuman(t, owner, run3, "ask") // still waiting after all that
		r = owner.Do("POST", "/api/workflows/pending-approvals/"+run3+"/decision", apiObj{"decision": "approve", "comment": "ship it"})
		fixture.Want(t, r, http.StatusOK)
		var decided workflows.RunView
		r.JSON(t, &decided)
		ask := apiNodeRun(&decided, "", "ask")
		if decided.ID != run3 || ask == nil || ask.Status != workflows.NodeSucceeded || ask.Handle != "approved" {
			t.Fatalf("decision answer = %s", r.Body)
		}
		if out, _ := apiJSONValue(t, ask.Output).(map[string]any); out["decision"] != "approve" || out["decided_by"] != owner.ID || out["comment"] != "ship it" {
			t.Fatalf("decision output = %s", ask.Output)
		}
		v = apiWaitFinished(t, owner, run3)
		if v.Status != workflows.RunSucceeded || apiJSONValue(t, v.Output) != 300.0 {
			t.Fatalf("approved run = %+v (output %s)", v, v.Output)
		}
		if got, want := apiNodeStates(v), map[string]string{"prep": "succeeded:out", "ask": "succeeded:approved", "yes": "succeeded:out", "no": "skipped",
			"fin": "succeeded", "nope": "skipped"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("approved run nodes = %v, want %v", got, want)
		}
		done = append(done, v)
		apiWantError(t, owner.Do("POST", "/api/workflows/pending-approvals/"+run3+"/decision", apiObj{"decision": "approve"}), 400, "bad_request")
		apiWantError(t, owner.Do("POST", "/api/workflows/runs/"+run3+"/nodes/ask/decision", apiObj{"decision": "reject"}), 400, "bad_request")
		if r := owner.Do("GET", "/api/workflows/pending-approvals", nil); strings.TrimSpace(string(r.Body)) != "[]" {
			t.Fatalf("a decided gate is still pending: %s", r.Body)
		}

		// 4. Reject by run and node key: the rejected branch fails the run.
		run4 := apiStartRun(t, owner, approval.ID, apiObj{"input": apiObj{"x": 5}})
		apiWaitHuman(t, owner, run4, "ask")
		apiWantError(t, second.Do("POST", "/api/workflows/runs/"+run4+"/nodes/ask/decision", apiObj{"decision": "reject"}), 404, "not_found")
		apiWantError(t, owner.Do("POST", "/api/workflows/runs/"+run4+"/nodes/ask/decision", apiObj{"decision": "nope"}), 400, "bad_request")
		r = owner.Do("POST", "/api/workflows/runs/"+run4+"/nodes/ask/decision", apiObj{"decision": "reject"})
		fixture.Want(t, r, http.StatusOK)
		v = apiWaitFinished(t, owner, run4)
		if v.Status != workflows.RunFailed || v.Error != "rejected by "+owner.ID {
			t.Fatalf("rejected run = %+v", v)
		}
		if got, want := apiNodeStates(v), map[string]string{"prep": "succeeded:out", "ask": "succeeded:rejected", "yes": "skipped", "no": "succeeded:out",
			"fin": "skipped", "nope": "succeeded"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("rejected run nodes = %v, want %v", got, want)
		}
		done = append(done, v)
		apiWantError(t, owner.Do("POST", "/api/workflows/runs/"+run4+"/nodes/ask/decision", apiObj{"decision": "approve"}), 400, "bad_request")

		// 5. Cancel a run waiting at its human node; again is a no-op.
		run5 := apiStartRun(t, owner, approval.ID, apiObj{"input": apiObj{"x": 1}})
		apiWaitHuman(t, owner, run5, "ask")
		r = owner.Do("POST", "/api/workflows/runs/"+run5+"/cancel", nil)
		fixture.Want(t, r, http.StatusOK)
		var cancelled workflows.RunView
		r.JSON(t, &cancelled)
		if cancelled.Status != workflows.RunCancelled || cancelled.FinishedAt == nil || apiNodeRun(&cancelled, "", "ask").Status != workflows.NodeCancelled ||
			len(cancelled.WaitingOn) != 0 {
			t.Fatalf("cancel = %s", r.Body)
		}
		r = owner.Do("POST", "/api/workflows/runs/"+run5+"/cancel", nil)
		fixture.Want(t, r, http.StatusOK)
		var again workflows.RunView
		r.JSON(t, &again)
		if again.Status != workflows.RunCancelled || again.FinishedAt == nil || !again.FinishedAt.Equal(*cancelled.FinishedAt) {
			t.Fatalf("second cancel = %s", r.Body)
		}
		if v = apiWaitFinished(t, owner, run5); v.Status != workflows.RunCancelled || apiNodeRun(v, "", "yes").Status != "pending" {
			t.Fatalf("cancelled run = %+v", v)
		}
		apiWantError(t, owner.Do("POST", "/api/workflows/pending-approvals/"+run5+"/decision", apiObj{"decision": "approve"}), 400, "bad_request")
		// Cancelling a finished run leaves it as it is.
		r = owner.Do("POST", "/api/workflows/runs/"+run1+"/cancel", nil)
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["status"] != workflows.RunSucceeded {
			t.Fatalf("cancel of a succeeded run = %s", r.Body)
		}
		// A task's run is not a workflow run; an unknown id is 404.
		task := f.Task(t, owner, alpha, "echo hi", nil)
		f.Run(t, ws, alpha, task.ID, "", runs.Running, 1, time.Now().UTC())
		r = owner.Do("GET", "/api/runs?kind=task&task_id="+task.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		var taskRuns runs.RunList
		r.JSON(t, &taskRuns)
		if len(taskRuns.Runs) != 1 {
			t.Fatalf("task runs = %s", r.Body)
		}
		taskRun := taskRuns.Runs[0].ID
		apiWantError(t, owner.Do("POST", "/api/workflows/runs/"+taskRun+"/cancel", nil), 400, "bad_request", "not a workflow run")
		if r := owner.Do("GET", "/api/runs/"+taskRun, nil); r.Map(t)["status"] != runs.Running {
			t.Fatalf("the refused cancel changed the task's run: %s", r.Body)
		}
		apiWantError(t, owner.Do("GET", "/api/workflows/runs/"+taskRun, nil), 404, "not_found")
		apiWantError(t, owner.Do("POST", "/api/workflows/runs/"+ids.New()+"/cancel", nil), 404, "not_found")
		apiWantError(t, owner.Do("POST", "/api/workflows/runs/x/cancel", nil), 404, "not_found")
		apiWantError(t, owner.Do("GET", "/api/workflows/runs/"+ids.New(), nil), 404, "not_found")

		// 6. One run left waiting; 7. one run in the other project.
		run6 := apiStartRun(t, owner, approval.ID, apiObj{"input": apiObj{"x": 3}})
		apiWaitHuman(t, owner, run6, "ask")
		run7 := apiStartRun(t, owner, chainB.ID, apiObj{"input": apiObj{"x": 1}})
		v = apiWaitFinished(t, owner, run7)
		if v.Status != workflows.RunSucceeded || apiNodeStates(v)["small"] != "succeeded:out" || apiNodeStates(v)["each"] != "skipped" {
			t.Fatalf("chain B run = %+v", v)
		}
		done = append(done, v)

		// Stats follow the runs: succeeded and failed ones count (the
		// cancelled one does not), the waiting one is active.
		checkStats := func(query string, nWorkflows, active int, project string) {
			t.Helper()
			s, raw := stats(query)
			var succeeded, failed int
			var total time.Duration
			for _, d := range done {
				if project != "" && d.ProjectID != project {
					continue
				}
				if d.Status == "succeeded" {
					succeeded++
				} else {
					failed++
				}
				total += d.FinishedAt.Sub(*d.StartedAt)
			}
			if s["workflows"] != float64(nWorkflows) || s["active_runs"] != float64(active) || s["failed_24h"] != float64(failed) {
				t.Fatalf("stats%s = %s; want %d workflows, %d active, %d failed", query, raw, nWorkflows, active, failed)
			}
			rate, _ := s["success_rate_24h"].(float64)
			if want := float64(succeeded) * 100 / float64(succeeded+failed); math.Abs(rate-want) > 1e-9 {
				t.Fatalf("stats%s success_rate_24h = %v, want %v", query, s["success_rate_24h"], want)
			}
			avg, _ := s["avg_duration_seconds"].(float64)
			if want := total.Seconds() / float64(succeeded+failed); math.Abs(avg-want) > 1e-6 || avg < 0 {
				t.Fatalf("stats%s avg_duration_seconds = %v, want %v", query, s["avg_duration_seconds"], want)
			}
		}
		checkStats("", 3, 1, "")
		checkStats("?project_id="+alpha, 2, 1, alpha)
		checkStats("?project_id="+bravo, 1, 0, bravo)
		if s, raw := stats("?project_id=" + ids.New()); s["workflows"] != 0.0 || s["active_runs"] != 0.0 || s["success_rate_24h"] != nil ||
			s["avg_duration_seconds"] != nil || s["failed_24h"] != 0.0 {
			t.Fatalf("stats of an unknown project = %s", raw)
		}
		apiWantError(t, owner.Do("GET", "/api/workflows/stats?project_id=x", nil), 400, "bad_request")

		// 8. Delete takes the runs with it, the waiting one included.
		r = owner.Do("DELETE", "/api/workflows/"+approval.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.TrimSpace(string(r.Body)) != `{"deleted":true}` {
			t.Fatalf("delete = %s", r.Body)
		}
		r = owner.Do("DELETE", "/api/workflows/"+approval.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.TrimSpace(string(r.Body)) != `{"deleted":false}` {
			t.Fatalf("second delete = %s", r.Body)
		}
		apiWantError(t, owner.Do("GET", "/api/workflows/"+approval.ID, nil), 404, "not_found")
		for _, id := range []string{run3, run4, run5, run6} {
			apiWantError(t, owner.Do("GET", "/api/workflows/runs/"+id, nil), 404, "not_found")
			apiWantError(t, owner.Do("GET", "/api/runs/"+id, nil), 404, "not_found")
			apiWantError(t, owner.Do("POST", "/api/workflows/runs/"+id+"/cancel", nil), 404, "not_found")
		}
		if r := owner.Do("GET", "/api/workflows/pending-approvals", nil); strings.TrimSpace(string(r.Body)) != "[]" {
			t.Fatalf("a deleted workflow's gate is still pending: %s", r.Body)
		}
		if r := owner.Do("GET", "/api/workflows/runs/"+run1, nil); r.Status != http.StatusOK {
			t.Fatalf("deleting one workflow took another's run: %d %s", r.Status, r.Body)
		}
		done = slices.DeleteFunc(done, func(d *workflows.RunView) bool { return d.WorkflowID == approval.ID })
		checkStats("", 2, 0, "")
		checkStats("?project_id="+alpha, 1, 0, alpha)
		r = owner.Do("DELETE", "/api/workflows/"+ids.New(), nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.TrimSpace(string(r.Body)) != `{"deleted":false}` {
			t.Fatalf("delete of an unknown workflow = %s", r.Body)
		}
	})
}

func TestWorkflowsTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		ownerWS := owner.DefaultWorkspace()
		p := f.Project(t, owner, "Alpha")
		theirs := f.Project(t, outsider, "Theirs")
		simple := func(t *testing.T, c *apitest.Client) string {
			w, _ := apiCreate(t, c, apiWfBody(p, "Simple", []apiObj{apiNode("a", "transform", apiObj{"expression": "input"})}, nil))
			return w.ID
		}
		approvalRun := func(t *testing.T, c *apitest.Client) string {
			w, _ := apiCreate(t, c, apiApprovalWorkflow(p))
			id := apiStartRun(t, c, w.ID, apiObj{"input": apiObj{"x": 1}})
			apiWaitHuman(t, c, id, "ask")
			return id
		}
		taskRun := func(t *testing.T, c *apitest.Client) string {
			task := f.Task(t, c, p, "echo tenancy", nil)
			return f.Run(t, ownerWS, p, task.ID, "", runs.Running, 1, time.Now().UTC())
		}
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "GET workflow", Method: "GET", Path: "/api/workflows/{id}", Create: simple},
			{Name: "PUT workflow", Method: "PUT", Path: "/api/workflows/{id}", Body: apiObj{"nodes": []apiObj{apiNode("b", "transform", apiObj{"expression": "2"})}}, Create: simple},
			{Name: "PATCH concurrency", Method: "PATCH", Path: "/api/workflows/{id}/concurrency", Body: apiObj{"max_concurrent_runs": 3}, Create: simple},
			{Name: "export", Method: "GET", Path: "/api/workflows/{id}/export", Create: simple},
			{Name: "start a run", Method: "POST", Path: "/api/workflows/{id}/runs", Body: apiObj{"input": apiObj{"x": 1}}, Create: simple},
			{Name: "recent runs", Method: "GET", Path: "/api/workflows/{id}/runs", Create: simple},
			{Name: "test a node", Method: "POST", Path: "/api/workflows/{id}/test-node", Body: apiObj{"node": apiNode("t", "transform", apiObj{"expression": "1"})}, Create: simple},
			{Name: "GET run", Method: "GET", Path: "/api/workflows/runs/{id}", Create: approvalRun},
			{Name: "cancel run", Method: "POST", Path: "/api/workflows/runs/{id}/cancel", Create: approvalRun},
			{Name: "cancel a task's run", Method: "POST", Path: "/api/workflows/runs/{id}/cancel", Create: taskRun},
			{Name: "decision by run", Method: "POST", Path: "/api/workflows/pending-approvals/{id}/decision", Body: apiObj{"decision": "approve"}, Create: approvalRun},
			{Name: "decision by node", Method: "POST", Path: "/api/workflows/runs/{id}/nodes/ask/decision", Body: apiObj{"decision": "reject"}, Create: approvalRun},
		})

		// The outsider's requests change nothing.
		victim := simple(t, owner)
		waiting := approvalRun(t, owner)
		snapshot := func() string {
			var sb strings.Builder
			for _, path := range []string{"/api/workflows/" + victim, "/api/workflows/runs/" + waiting, "/api/workflows/all", "/api/workflows/pending-approvals"} {
				r := owner.Do("GET", path, nil)
				fixture.Want(t, r, http.StatusOK)
				sb.Write(r.Body)
			}
			return sb.String()
		}
		before := snapshot()
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{"PUT", "/api/workflows/" + victim, apiObj{"name": "pwned", "nodes": []apiObj{apiNode("x", "end", nil)}}},
			{"PATCH", "/api/workflows/" + victim + "/concurrency", apiObj{"max_concurrent_runs": 1}},
			{"POST", "/api/workflows/" + victim + "/runs", apiObj{"input": 1}},
			{"POST", "/api/workflows/runs/" + waiting + "/cancel", nil},
			{"POST", "/api/workflows/pending-approvals/" + waiting + "/decision", apiObj{"decision": "approve"}},
			{"POST", "/api/workflows/runs/" + waiting + "/nodes/ask/decision", apiObj{"decision": "reject"}},
		} {
			apiWantError(t, outsider.Do(req.method, req.path, req.body), http.StatusNotFound, "not_found")
		}
		// DELETE of another workspace's workflow answers as for an unknown
		// id ({deleted: false}) and deletes nothing.
		unknown := ids.New()
		foreign := outsider.Do("DELETE", "/api/workflows/"+victim, nil)
		missing := outsider.Do("DELETE", "/api/workflows/"+unknown, nil)
		if foreign.Status != missing.Status || !bytes.Equal(foreign.Body, missing.Body) || strings.TrimSpace(string(foreign.Body)) != `{"deleted":false}` {
			t.Fatalf("DELETE of a foreign workflow = %d %s; of an unknown one %d %s", foreign.Status, foreign.Body, missing.Status, missing.Body)
		}
		if after := snapshot(); after != before {
			t.Fatalf("the outsider's requests changed the owner's workflows:\n%s\n%s", before, after)
		}

		// Lists, boards, stats and approvals never show another workspace.
		for _, path := range []string{"/api/workflows", "/api/workflows/all", "/api/workflows?project_id=" + p, "/api/workflows/pending-approvals"} {
			if r := outsider.Do("GET", path, nil); r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != "[]" {
				t.Fatalf("outsider GET %s = %d %s", path, r.Status, r.Body)
			}
		}
		r := outsider.Do("GET", "/api/workflows/board?project_id="+p, nil)
		fixture.Want(t, r, http.StatusOK)
		if b := r.Map(t); b["total"] != 0.0 || len(b["rows"].([]any)) != 0 || strings.Contains(string(r.Body), p) {
			t.Fatalf("outsider board = %s", r.Body)
		}
		r = outsider.Do("GET", "/api/workflows/stats?project_id="+p, nil)
		fixture.Want(t, r, http.StatusOK)
		if s := r.Map(t); s["workflows"] != 0.0 || s["active_runs"] != 0.0 || s["success_rate_24h"] != nil {
			t.Fatalf("outsider stats = %s", r.Body)
		}
		r = outsider.Do("GET", "/api/workflows/stats", nil)
		fixture.Want(t, r, http.StatusOK)
		if s := r.Map(t); s["workflows"] != 0.0 || s["active_runs"] != 0.0 {
			t.Fatalf("outsider workspace stats = %s", r.Body)
		}

		// Creating or importing into another workspace's project answers as
		// for an unknown project.
		unknownProject := ids.New()
		doc := owner.Do("GET", "/api/workflows/"+victim+"/export", nil).Body
		for name, send := range map[string]func(project string) *apitest.Response{
			"create": func(project string) *apitest.Response {
				return outsider.Do("POST", "/api/workflows", apiWfBody(project, "Sneaky", []apiObj{apiNode("a", "end", nil)}, nil))
			},
			"import": func(project string) *apitest.Response {
				return outsider.Do("POST", "/api/workflows/import?project_id="+project, string(doc), "Content-Type", "application/yaml")
			},
		} {
			foreign, missing := send(p), send(unknownProject)
			apiWantError(t, foreign, http.StatusBadRequest, "bad_request", "project")
			if foreign.Status != missing.Status ||
				strings.ReplaceAll(string(foreign.Body), p, "{id}") != strings.ReplaceAll(string(missing.Body), unknownProject, "{id}") {
				t.Fatalf("%s into a foreign project %s, into an unknown one %s", name, foreign.Body, missing.Body)
			}
		}
		// The outsider's own project still works for them.
		if r := outsider.Do("POST", "/api/workflows", apiWfBody(theirs, "Mine", []apiObj{apiNode("a", "end", nil)}, nil)); r.Status != http.StatusCreated {
			t.Fatalf("outsider create in own project = %d %s", r.Status, r.Body)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM workflows WHERE project_id = $1 AND name = $2", p, "Sneaky"); n != 0 {
			t.Fatalf("the outsider made %d workflow(s) in the owner's project", n)
		}
	})
}

// apiStatus reads a run's status.
func apiStatus(t *testing.T, c *apitest.Client, runID string) *workflows.RunView {
	t.Helper()
	r := c.Do("GET", "/api/workflows/runs/"+runID, nil)
	fixture.Want(t, r, http.StatusOK)
	var v workflows.RunView
	r.JSON(t, &v)
	return &v
}

// apiWantQueued checks that a run is held back by a cap: queued, not
// started, no node run.
func apiWantQueued(t *testing.T, c *apitest.Client, runID string) {
	t.Helper()
	v := apiStatus(t, c, runID)
	if v.Status != workflows.RunQueued || v.StartedAt != nil {
		t.Fatalf("run %s should be queued: %+v", runID, v)
	}
	for _, n := range v.Nodes {
		if n.Status != "pending" {
			t.Fatalf("a queued run has a node run: %+v", v.Nodes)
		}
	}
}

func TestWorkflowsConcurrencyCap(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		p := f.Project(t, owner, "Alpha")
		w, _ := apiCreate(t, owner, apiApprovalWorkflow(p))
		other, _ := apiCreate(t, owner, apiChainWorkflow(p, "Uncapped"))
		setCap := func(v any) {
			t.Helper()
			fixture.Want(t, owner.Do("PATCH", "/api/workflows/"+w.ID+"/concurrency", apiObj{"max_concurrent_runs": v}), http.StatusOK)
		}
		input := apiObj{"input": apiObj{"x": 1}}
		active := func(want int) {
			t.Helper()
			r := owner.Do("GET", "/api/workflows/stats?project_id="+p, nil)
			fixture.Want(t, r, http.StatusOK)
			if got := r.Map(t)["active_runs"]; got != float64(want) {
				t.Fatalf("active_runs = %v, want %d", got, want)
			}
		}

		setCap(1)
		a := apiStartRun(t, owner, w.ID, input)
		apiWaitHuman(t, owner, a, "ask")
		b := apiStartRun(t, owner, w.ID, input)
		apiWantQueued(t, owner, b)
		// The cap is the workflow's: another workflow's runs go through.
		if v := apiWaitFinished(t, owner, apiStartRun(t, owner, other.ID, apiObj{"input": apiObj{"x": 2}})); v.Status != workflows.RunSucceeded {
			t.Fatalf("uncapped workflow run = %+v", v)
		}
		apiWantQueued(t, owner, b)
		active(2)
		r := owner.Do("GET", "/api/workflows/pending-approvals", nil)
		var approvals []workflows.Approval
		r.JSON(t, &approvals)
		if len(approvals) != 1 || approvals[0].RunID != a {
			t.Fatalf("pending approvals = %s", r.Body)
		}
		// Raising the cap lets the queued run through.
		setCap(2)
		apiWaitHuman(t, owner, b, "ask")
		c := apiStartRun(t, owner, w.ID, input)
		apiWantQueued(t, owner, c)
		// Clearing it too.
		setCap(nil)
		apiWaitHuman(t, owner, c, "ask")
		// Pending approvals are oldest first.
		r = owner.Do("GET", "/api/workflows/pending-approvals", nil)
		approvals = nil
		r.JSON(t, &approvals)
		if len(approvals) != 3 || approvals[0].RunID != a || approvals[1].RunID != b || approvals[2].RunID != c {
			t.Fatalf("pending approvals = %s (want %s, %s, %s)", r.Body, a, b, c)
		}

		// Cap 1 with three in flight: a new run waits until none is left,
		// whichever way they end.
		setCap(1)
		d := apiStartRun(t, owner, w.ID, input)
		apiWantQueued(t, owner, d)
		fixture.Want(t, owner.Do("POST", "/api/workflows/pending-approvals/"+a+"/decision", apiObj{"decision": "approve"}), http.StatusOK)
		apiWaitFinished(t, owner, a)
		apiWantQueued(t, owner, d)
		fixture.Want(t, owner.Do("POST", "/api/workflows/runs/"+b+"/nodes/ask/decision", apiObj{"decision": "reject"}), http.StatusOK)
		apiWaitFinished(t, owner, b)
		apiWantQueued(t, owner, d)
		fixture.Want(t, owner.Do("POST", "/api/workflows/runs/"+c+"/cancel", nil), http.StatusOK)
		apiWaitHuman(t, owner, d, "ask")
		// A queued run can be cancelled; it never starts.
		q := apiStartRun(t, owner, w.ID, input)
		apiWantQueued(t, owner, q)
		r = owner.Do("POST", "/api/workflows/runs/"+q+"/cancel", nil)
		fixture.Want(t, r, http.StatusOK)
		if v := apiStatus(t, owner, q); v.Status != workflows.RunCancelled || v.FinishedAt == nil {
			t.Fatalf("cancelled queued run = %+v", v)
		}
		fixture.Want(t, owner.Do("POST", "/api/workflows/runs/"+d+"/cancel", nil), http.StatusOK)
		if v := apiStatus(t, owner, q); v.Status != workflows.RunCancelled || v.StartedAt != nil {
			t.Fatalf("a cancelled queued run started when the slot freed: %+v", v)
		}
		active(0)

		t.Run("cap raised by a replace", func(t *testing.T) {
			setCap(1)
			first := apiStartRun(t, owner, w.ID, input)
			apiWaitHuman(t, owner, first, "ask")
			second := apiStartRun(t, owner, w.ID, input)
			apiWantQueued(t, owner, second)
			// A replace may set the cap too (max_concurrent_runs in the
			// body); raising it must let the queued run start, as PATCH
			// .../concurrency does.
			body := apiApprovalWorkflow("")
			body["max_concurrent_runs"] = 5
			r := owner.Do("PUT", "/api/workflows/"+w.ID, body)
			fixture.Want(t, r, http.StatusOK)
			if got := apiDecodeWorkflow(t, r.Body).MaxConcurrentRuns; got == nil || *got != 5 {
				t.Fatalf("cap after the replace = %v", got)
			}
			apiWaitHuman(t, owner, second, "ask")
		})
		t.Run("project cap lifted", func(t *testing.T) {
			p2 := f.Project(t, owner, "Bravo")
			w2, _ := apiCreate(t, owner, apiApprovalWorkflow(p2))
			fixture.Want(t, owner.Do("PATCH", "/api/projects/"+p2+"/concurrency", apiObj{"max_concurrent_runs": 1}), http.StatusOK)
			first := apiStartRun(t, owner, w2.ID, input)
			apiWaitHuman(t, owner, first, "ask")
			second := apiStartRun(t, owner, w2.ID, input)
			apiWantQueued(t, owner, second)
			// Lifting the project's cap must let the queued run start, as
			// lifting a workflow's cap does.
			fixture.Want(t, owner.Do("PATCH", "/api/projects/"+p2+"/concurrency", apiObj{"max_concurrent_runs": nil}), http.StatusOK)
			apiWaitHuman(t, owner, second, "ask")
		})
	})
}

func TestWorkflowsRunKeepsItsGraph(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		p := f.Project(t, owner, "Alpha")
		w, _ := apiCreate(t, owner, apiApprovalWorkflow(p))
		run := apiStartRun(t, owner, w.ID, apiObj{"input": apiObj{"x": 2}})
		apiWaitHuman(t, owner, run, "ask")

		// A replace while the run waits: the run keeps the graph it started
		// with; a new run takes the new one.
		changed := apiApprovalWorkflow("")
		delete(changed, "name")
		for _, n := range changed["nodes"].([]apiObj) {
			if n["key"] == "yes" {
				n["config"] = apiObj{"expression": "nodes.prep.output * 7"}
			}
		}
		fixture.Want(t, owner.Do("PUT", "/api/workflows/"+w.ID, changed), http.StatusOK)
		fixture.Want(t, owner.Do("POST", "/api/workflows/pending-approvals/"+run+"/decision", apiObj{"decision": "approve"}), http.StatusOK)
		if v := apiWaitFinished(t, owner, run); v.Status != workflows.RunSucceeded || apiJSONValue(t, v.Output) != 300.0 {
			t.Fatalf("the run in flight took the new graph: %+v (output %s)", v, v.Output)
		}
		next := apiStartRun(t, owner, w.ID, apiObj{"input": apiObj{"x": 2}})
		apiWaitHuman(t, owner, next, "ask")
		fixture.Want(t, owner.Do("POST", "/api/workflows/pending-approvals/"+next+"/decision", apiObj{"decision": "approve"}), http.StatusOK)
		if v := apiWaitFinished(t, owner, next); v.Status != workflows.RunSucceeded || apiJSONValue(t, v.Output) != 21.0 {
			t.Fatalf("a new run = %+v (output %s), want 21", v, v.Output)
		}

		// A run without a body has input null; expressions see null.
		simple, _ := apiCreate(t, owner, apiWfBody(p, "Echo", []apiObj{apiNode("a", "transform", apiObj{"expression": "input == nil ? 'none' : input"})}, nil))
		for body, want := range map[string]any{"": "none", `{}`: "none", `{"input": null}`: "none", `{"input": [1, "two"]}`: []any{1.0, "two"}} {
			var r *apitest.Response
			if body == "" {
				r = owner.Do("POST", "/api/workflows/"+simple.ID+"/runs", nil)
			} else {
				r = owner.Do("POST", "/api/workflows/"+simple.ID+"/runs", body)
			}
			fixture.Want(t, r, http.StatusCreated)
			var s workflows.RunStarted
			r.JSON(t, &s)
			v := apiWaitFinished(t, owner, s.RunID)
			if v.Status != workflows.RunSucceeded || !reflect.DeepEqual(apiJSONValue(t, v.Output), want) {
				t.Fatalf("run with body %q = %+v (input %s, output %s), want output %v", body, v, v.Input, v.Output, want)
			}
			if body == "" || body == "{}" || body == `{"input": null}` {
				if string(v.Input) != "null" {
					t.Fatalf("run with body %q: input = %s, want null", body, v.Input)
				}
			}
		}
		apiWantError(t, owner.Do("POST", "/api/workflows/"+simple.ID+"/runs", `{"input": `), http.StatusBadRequest, "bad_request")
	})
}

// A run of inline nodes starts and ends in one transaction and is written
// once, its events packed in its row: read through the API they are the
// events a run written as it goes has (numbered from 1, with ids that are
// UUIDs, distinct and the same on every read, paged by after_sequence and
// limit), and no run_events row is stored for it. A run that waits (a
// human gate) keeps its events as rows.
func TestWorkflowsRecordedRunEvents(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		alpha := f.Project(t, owner, "Alpha")
		chain, _ := apiCreate(t, owner, apiChainWorkflow(alpha, "Chain"))
		run := apiStartRun(t, owner, chain.ID, apiObj{"input": apiObj{"x": 2}})
		v := apiWaitFinished(t, owner, run)
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("run = %+v", v)
		}
		events := func(query string) []runs.TaskEvent {
			t.Helper()
			r := owner.Do("GET", "/api/runs/"+run+"/events"+query, nil)
			fixture.Want(t, r, http.StatusOK)
			var evs []runs.TaskEvent
			r.JSON(t, &evs)
			return evs
		}
		all := events("")
		if len(all) < 5 {
			t.Fatalf("%d events, want the run's queued, running, node and succeeded events", len(all))
		}
		seen := map[string]bool{}
		for i, ev := range all {
			if ev.SequenceNum != int32(i+1) || !ids.Valid(ev.EventID) || seen[ev.EventID] || ev.EventID == run || ev.Timestamp.IsZero() ||
				!json.Valid(ev.Payload) {
				t.Fatalf("event %d = %+v", i, ev)
			}
			seen[ev.EventID] = true
			if i > 0 && ev.Timestamp.Before(all[i-1].Timestamp) {
				t.Fatalf("event %d at %s, before event %d at %s", i, ev.Timestamp, i-1, all[i-1].Timestamp)
			}
		}
		// Times are kept to the microsecond: the queued event is the run's
		// creation.
		if !all[0].Timestamp.Equal(v.CreatedAt) {
			t.Fatalf("queued event at %s, run created at %s", all[0].Timestamp, v.CreatedAt)
		}
		status := func(ev runs.TaskEvent) string {
			var p struct{ Status string }
			_ = json.Unmarshal(ev.Payload, &p)
			return ev.EventType + ":" + p.Status
		}
		if first, second, last := status(all[0]), status(all[1]), status(all[len(all)-1]); first != "run:queued" || second != "run:running" ||
			last != "run:succeeded" {
			t.Fatalf("events run %s, %s … %s", first, second, last)
		}
		if again := events(""); !reflect.DeepEqual(again, all) {
			t.Fatalf("a second read differs:\n%+v\n%+v", again, all)
		}
		if page := events("?after_sequence=2&limit=2"); len(page) != 2 || !reflect.DeepEqual(page, all[2:4]) {
			t.Fatalf("page after 2, limit 2 = %+v", page)
		}
		if page := events(fmt.Sprintf("?after_sequence=%d", len(all))); len(page) != 0 {
			t.Fatalf("page after the last = %+v", page)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM run_events WHERE run_id = $1", run); n != 0 {
			t.Fatalf("%d run_events rows for a run written once", n)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM runs WHERE id = $1 AND events IS NOT NULL AND event_seq = $2", run, len(all)); n != 1 {
			t.Fatal("the run's row does not keep its events packed, numbered to the last")
		}
		// Its node runs too: none in node_runs, and the view shows them with
		// their times, to the microsecond, inside the run's.
		if n := f.App.Count(t, "SELECT COUNT(*) FROM node_runs WHERE run_id = $1", run); n != 0 {
			t.Fatalf("%d node_runs rows for a run written once", n)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM workflow_runs WHERE id = $1 AND nodes IS NOT NULL", run); n != 1 {
			t.Fatal("the workflow run's row does not keep its node runs packed")
		}
		for _, n := range v.Nodes {
			if n.Status == "skipped" {
				continue
			}
			if n.StartedAt == nil || n.FinishedAt == nil || n.StartedAt.Before(*v.StartedAt) || n.FinishedAt.After(*v.FinishedAt) ||
				n.FinishedAt.Before(*n.StartedAt) || n.Attempt != 1 {
				t.Fatalf("node %s[%s] = %+v in run %s–%s", n.Key, n.Frame, n, v.StartedAt, v.FinishedAt)
			}
		}
		if again := apiWaitFinished(t, owner, run); !reflect.DeepEqual(again.Nodes, v.Nodes) {
			t.Fatalf("a second read of the run differs:\n%+v\n%+v", again.Nodes, v.Nodes)
		}

		approval, _ := apiCreate(t, owner, apiApprovalWorkflow(alpha))
		waiting := apiStartRun(t, owner, approval.ID, apiObj{"input": apiObj{"x": 2}})
		apiWaitHuman(t, owner, waiting, "ask")
		if n := f.App.Count(t, "SELECT COUNT(*) FROM run_events WHERE run_id = $1", waiting); n < 2 {
			t.Fatalf("%d run_events rows for a run that waits, want its events as rows", n)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM node_runs WHERE run_id = $1", waiting); n < 2 {
			t.Fatalf("%d node_runs rows for a run that waits, want its node runs as rows", n)
		}
	})
}

// A workflow's history: its newest runs first, bounded by limit (its
// tenancy is in TestWorkflowsTenancy's table).
func TestWorkflowsRunHistory(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		project := f.Project(t, f.Owner, "p")
		wf, _ := apiCreate(t, f.Owner, apiChainWorkflow(project, "history"))
		var started []string
		for x := range 3 {
			id := apiStartRun(t, f.Owner, wf.ID, apiObj{"input": apiObj{"x": x + 1}})
			apiWaitFinished(t, f.Owner, id)
			started = append(started, id)
		}
		r := f.Owner.Do("GET", "/api/workflows/"+wf.ID+"/runs?limit=2", nil)
		fixture.Want(t, r, http.StatusOK)
		var got []workflows.RunSummary
		r.JSON(t, &got)
		if len(got) != 2 || got[0].ID != started[2] || got[1].ID != started[1] || got[0].Status != workflows.RunSucceeded || got[0].FinishedAt == nil {
			t.Fatalf("history = %+v (started %v)", got, started)
		}
		fixture.Want(t, f.Owner.Do("GET", "/api/workflows/"+wf.ID+"/runs?limit=101", nil), http.StatusBadRequest)
	})
}

// TestWorkflowsTestNode: one node run alone with sample data, the way a run
// runs it (a real request for http_request), storing nothing; waiting kinds
// say what they would wait on; a bad config is the save's 400; another
// workspace's workflow is an unknown one.
func TestWorkflowsTestNode(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		project := f.Project(t, f.Owner, "p")
		wf, _ := apiCreate(t, f.Owner, apiChainWorkflow(project, "tested"))
		var got []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got = append(got, r.Method+" "+r.URL.RequestURI()+" "+string(b))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"greeting":"hello"}`)
		}))
		defer srv.Close()
		try := func(body apiObj, status int) workflows.NodeTestResult {
			t.Helper()
			r := f.Owner.Do("POST", "/api/workflows/"+wf.ID+"/test-node", body)
			fixture.Want(t, r, status)
			var res workflows.NodeTestResult
			if status == http.StatusOK {
				r.JSON(t, &res)
			}
			return res
		}
		runs := func() int {
			var n int
			if err := f.App.DB.R.QueryRow("SELECT COUNT(*) FROM workflow_runs").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		// A transform sees the sample input and another node's sample output.
		res := try(apiObj{"node": apiNode("b", "transform", apiObj{"mapping": apiObj{"sum": "nodes.a.output + input.x"}}),
			"input": apiObj{"x": 2}, "nodes": apiObj{"a": 6}}, http.StatusOK)
		if res.Status != "succeeded" || res.Handle != "out" || string(res.Output) != `{"sum":8}` {
			t.Fatalf("transform = %+v", res)
		}
		// A gate says which way it goes.
		res = try(apiObj{"node": apiNode("g", "gate", apiObj{"condition": "nodes.b.output.sum > 5"}), "nodes": apiObj{"b": apiObj{"sum": 3}}}, http.StatusOK)
		if res.Status != "succeeded" || res.Handle != "false" {
			t.Fatalf("gate = %+v", res)
		}
		// An expression error is the node failing, as in a run.
		res = try(apiObj{"node": apiNode("t", "transform", apiObj{"expression": "input.x.y.z"})}, http.StatusOK)
		if res.Status != "failed" || res.Error == "" {
			t.Fatalf("failing transform = %+v", res)
		}
		// An http_request really goes out, rendered from the samples.
		res = try(apiObj{"node": apiNode("call", "http_request", apiObj{"method": "POST", "url": srv.URL + "/hook?n={{ input.n }}", "body": `{{ trigger.who }}`}),
			"input": apiObj{"n": 7}, "trigger": apiObj{"who": "ann"}}, http.StatusOK)
		if res.Status != "succeeded" || len(got) != 1 || got[0] != "POST /hook?n=7 ann" || !strings.Contains(string(res.Output), `"greeting":"hello"`) {
			t.Fatalf("http_request = %+v, the server saw %q", res, got)
		}
		// Waiting kinds say what they would wait on, and start nothing.
		res = try(apiObj{"node": apiNode("ask", "human", apiObj{"message": "Ship {{ input.v }}?"}), "input": apiObj{"v": "1.2"}}, http.StatusOK)
		if res.Status != "waiting" || !strings.Contains(res.Waits, "Ship 1.2?") {
			t.Fatalf("human = %+v", res)
		}
		res = try(apiObj{"node": apiNode("each", "loop", apiObj{"items": "input.list", "mode": "parallel", "parallelism": 2}), "input": apiObj{"list": []int{1, 2, 3}}}, http.StatusOK)
		if res.Status != "waiting" || string(res.Output) != `[1,2,3]` || !strings.Contains(res.Waits, "3 iterations") {
			t.Fatalf("loop = %+v", res)
		}
		res = try(apiObj{"node": apiNode("fix", "agent", apiObj{"prompt": "Fix issue {{ input.issue }}"}), "input": apiObj{"issue": 42}}, http.StatusOK)
		if res.Status != "waiting" || !strings.Contains(res.Waits, "Fix issue 42") {
			t.Fatalf("agent = %+v", res)
		}
		res = try(apiObj{"node": apiNode("body", "transform", apiObj{"expression": "item * 10"}), "item": 4}, http.StatusOK)
		if string(res.Output) != `40` {
			t.Fatalf("loop body = %+v", res)
		}
		var tasks int
		if err := f.App.DB.R.QueryRow("SELECT COUNT(*) FROM tasks").Scan(&tasks); err != nil || tasks != 0 {
			t.Fatalf("a test started %d tasks (%v)", tasks, err)
		}
		if n := runs(); n != 0 {
			t.Fatalf("tests stored %d runs", n)
		}

		// Refused as the save refuses it, naming the field.
		r := f.Owner.Do("POST", "/api/workflows/"+wf.ID+"/test-node", apiObj{"node": apiNode("g", "gate", apiObj{})})
		fixture.Want(t, r, http.StatusBadRequest)
		if !strings.Contains(string(r.Body), "condition") {
			t.Fatalf("the refusal does not name the field: %s", r.Body)
		}
		fixture.Want(t, f.Owner.Do("POST", "/api/workflows/"+wf.ID+"/test-node", apiObj{"node": apiNode("t", "transform", apiObj{"expression": "1"}),
			"input": strings.Repeat("x", 1<<20+10)}), http.StatusBadRequest)

		// A code node's test is a job: queued, then run sandboxed like a run's
		// script, with the samples as its input; its logs are its run's events.
		r = f.Owner.Do("POST", "/api/workflows/"+wf.ID+"/test-node", apiObj{"node": apiNode("calc", "code", apiObj{"source": strings.Join([]string{
			`echo "working"`,
			`n=$(sed -n 's/.*"input":{"n":\([0-9]*\)}.*/\1/p' "$SLIPWAY_INPUT")`,
			`echo "{\"double\": $((n * 2)), \"node\": \"$SLIPWAY_NODE\"}"`,
		}, "\n")}), "input": apiObj{"n": 21}})
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &res)
		if res.Status != "queued" || !ids.Valid(res.TestID) {
			t.Fatalf("code test = %+v", res)
		}
		testURL := "/api/workflows/" + wf.ID + "/node-tests/" + res.TestID
		deadline := time.Now().Add(time.Minute)
		for res.Status == "queued" || res.Status == "running" {
			if time.Now().After(deadline) {
				t.Fatalf("the code test did not end: %+v", res)
			}
			time.Sleep(100 * time.Millisecond)
			r = f.Owner.Do("GET", testURL, nil)
			fixture.Want(t, r, http.StatusOK)
			r.JSON(t, &res)
		}
		var out struct {
			ExitCode    int             `json:"exit_code"`
			Result      json.RawMessage `json:"result"`
			ScriptRunID string          `json:"script_run_id"`
		}
		if err := json.Unmarshal(res.Output, &out); err != nil || res.Status != "succeeded" || res.Handle != "out" || out.ScriptRunID != res.TestID {
			t.Fatalf("code test ended %+v (%v)", res, err)
		}
		var result any
		if json.Unmarshal(out.Result, &result); fmt.Sprint(result) != "map[double:42 node:calc]" {
			t.Fatalf("the script's result: %s", out.Result)
		}
		r = f.Owner.Do("GET", "/api/runs/"+res.TestID+"/events", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), "working") {
			t.Fatalf("the test's log: %s", r.Body)
		}
		// Another workspace's test, or a test id under another workflow, is
		// exactly an unknown one.
		same := func(a, b *apitest.Response) {
			t.Helper()
			if a.Status != http.StatusNotFound || a.Status != b.Status || string(a.Body) != string(b.Body) {
				t.Fatalf("%d %s, and for an unknown id %d %s", a.Status, a.Body, b.Status, b.Body)
			}
		}
		same(f.Outsider.Do("GET", testURL, nil), f.Outsider.Do("GET", "/api/workflows/"+ids.New()+"/node-tests/"+res.TestID, nil))
		other, _ := apiCreate(t, f.Owner, apiChainWorkflow(project, "other"))
		same(f.Owner.Do("GET", "/api/workflows/"+other.ID+"/node-tests/"+res.TestID, nil),
			f.Owner.Do("GET", "/api/workflows/"+other.ID+"/node-tests/"+ids.New(), nil))
		theirs, _ := apiCreate(t, f.Outsider, apiChainWorkflow(f.Project(t, f.Outsider, "theirs"), "theirs"))
		same(f.Outsider.Do("GET", "/api/workflows/"+theirs.ID+"/node-tests/"+res.TestID, nil),
			f.Outsider.Do("GET", "/api/workflows/"+theirs.ID+"/node-tests/"+ids.New(), nil))

		// At most four code tests queued or running per workspace.
		slow := apiObj{"node": apiNode("slow", "code", apiObj{"source": "sleep 20", "timeout_seconds": 2})}
		for range 4 {
			fixture.Want(t, f.Owner.Do("POST", "/api/workflows/"+other.ID+"/test-node", slow), http.StatusOK)
		}
		fixture.Want(t, f.Owner.Do("POST", "/api/workflows/"+other.ID+"/test-node", slow), http.StatusTooManyRequests)

		// Deleting the workflow deletes its tests with their logs.
		fixture.Want(t, f.Owner.Do("DELETE", "/api/workflows/"+wf.ID, nil), http.StatusOK)
		var logs int
		if err := f.App.DB.R.QueryRow("SELECT COUNT(*) FROM runs WHERE id = $1", res.TestID).Scan(&logs); err != nil || logs != 0 {
			t.Fatalf("the deleted workflow's test run is left (%d, %v)", logs, err)
		}

		// Another workspace's workflow is an unknown one.
		foreign := f.Outsider.Do("POST", "/api/workflows/"+wf.ID+"/test-node", apiObj{"node": apiNode("t", "transform", apiObj{"expression": "1"})})
		unknown := f.Outsider.Do("POST", "/api/workflows/"+ids.New()+"/test-node", apiObj{"node": apiNode("t", "transform", apiObj{"expression": "1"})})
		if foreign.Status != http.StatusNotFound || string(foreign.Body) != string(unknown.Body) {
			t.Fatalf("foreign = %d %s, unknown = %d %s", foreign.Status, foreign.Body, unknown.Status, unknown.Body)
		}
	})
}
