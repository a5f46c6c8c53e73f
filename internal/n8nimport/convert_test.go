package n8nimport

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"slipway/internal/triggers"
	"slipway/internal/workflows"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	doc, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func convertFixture(t *testing.T, name string) (workflows.Input, []TriggerSpec, []string) {
	t.Helper()
	in, specs, warnings, err := Convert(fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateInput(in); err != nil {
		t.Fatalf("%s does not validate: %v", name, err)
	}
	if err := validateSpecs(specs); err != nil {
		t.Fatalf("%s triggers: %v", name, err)
	}
	return in, specs, warnings
}

func node(t *testing.T, in workflows.Input, key string) workflows.NodeInput {
	t.Helper()
	for _, n := range in.Nodes {
		if n.Key == key {
			return n
		}
	}
	t.Fatalf("no node %q in %+v", key, in.Nodes)
	return workflows.NodeInput{}
}

func edges(in workflows.Input) []string {
	out := make([]string, 0, len(in.Edges))
	for _, e := range in.Edges {
		out = append(out, e.Source+":"+e.SourceHandle+"->"+e.Target)
	}
	slices.Sort(out)
	return out
}

func wantWarning(t *testing.T, warnings []string, fragments ...string) {
	t.Helper()
	for _, w := range warnings {
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(w, f)
		}
		if ok {
			return
		}
	}
	t.Errorf("no warning with %q in:\n%s", fragments, strings.Join(warnings, "\n"))
}

func TestConvertBench(t *testing.T) {
	in, specs, warnings := convertFixture(t, "bench.json")
	if in.Name != "Bench: double n" || len(in.Nodes) != 2 || len(warnings) != 0 {
		t.Fatalf("%+v %q", in, warnings)
	}
	set := node(t, in, "Set")
	if set.Kind != "transform" || set.Config["mapping"].(map[string]any)["n"] != "(trigger.body.n * 2)" ||
		set.Config["mapping"].(map[string]any)["ok"] != "true" || set.Position.X != 220 {
		t.Fatalf("set %+v", set)
	}
	if end := node(t, in, "Respond_to_Webhook"); end.Kind != "end" || end.Config["output"] != "nodes.Set.output" {
		t.Fatalf("respond %+v", end)
	}
	if got := edges(in); !slices.Equal(got, []string{"Set:out->Respond_to_Webhook"}) {
		t.Fatalf("edges %v", got)
	}
	if len(specs) != 1 || specs[0].Node != "Webhook" || specs[0].Input.Kind != triggers.KindWebhook || specs[0].Input.Config.ResponseMode != triggers.ModeSync {
		t.Fatalf("specs %+v", specs)
	}
}

func TestConvertOrders(t *testing.T) {
	in, specs, warnings := convertFixture(t, "orders.json")
	// The schedule's two rules, in the workflow's time zone.
	if len(specs) != 2 || specs[0].Input.Config.Cron != "*/15 * * * *" || specs[1].Input.Config.Cron != "30 9 * * 1-5" ||
		specs[1].Input.Config.Timezone != "Europe/Berlin" {
		t.Fatalf("specs %+v", specs)
	}
	fetch := node(t, in, "Fetch_Orders")
	if fetch.Kind != "http_request" || fetch.Config["url"] != "https://api.example.com/orders?since={{ trigger.timestamp }}" ||
		fetch.Config["fail_on_status"] != false || fetch.Config["timeout_seconds"] != int64(10) {
		t.Fatalf("fetch %+v", fetch)
	}
	if c := node(t, in, "Has_Orders").Config["condition"]; c != "(len(nodes.Fetch_Orders.output?.json.orders) > 0)" {
		t.Fatalf("if %v", c)
	}
	if c := node(t, in, "Route_by_Region").Config["condition"]; c != `(lower(string(nodes.Fetch_Orders.output?.json.region ?? "")) == lower("eu"))` {
		t.Fatalf("switch rule 1 %v", c)
	}
	eu := node(t, in, "EU_Pricing").Config["mapping"].(map[string]any)
	if eu["total"] != "(nodes.Fetch_Orders.output?.json.total * 0.92)" || eu["currency"] != `"EUR"` ||
		!strings.HasPrefix(eu["label"].(string), `"Orders for " + (let _v = upper(nodes.Fetch_Orders.output?.json.region);`) {
		t.Fatalf("eu %+v", eu)
	}
	us := node(t, in, "US_Pricing")
	if us.Kind != "code" || us.Config["language"] != "javascript" || !strings.Contains(us.Config["source"].(string), "out.push({ json: { currency: 'USD'") {
		t.Fatalf("us %+v", us)
	}
	if e := node(t, in, "Merge_Prices").Config["expression"]; e != "[nodes.EU_Pricing.output, nodes.US_Pricing.output?.result]" {
		t.Fatalf("merge %v", e)
	}
	if b := node(t, in, "Notify").Config["body"]; b != `{{ toJSON({"prices": nodes.Merge_Prices.output, "source": "n8n"}) }}` {
		t.Fatalf("notify %v", b)
	}
	if c := node(t, in, "Cool_Down").Config; c["timeout_seconds"] != int64(300) {
		t.Fatalf("cool down %v", c)
	}
	if c := node(t, in, "Wait_for_Approval").Config; c["event"] != "Wait_for_Approval" || c["timeout_seconds"] != int64(7200) {
		t.Fatalf("approval %v", c)
	}
	got := edges(in)
	for _, e := range []string{
		"Fetch_Orders:out->Has_Orders", "Has_Orders:true->Route_by_Region", "Has_Orders:false->No_Orders",
		"Route_by_Region:true->EU_Pricing", "Route_by_Region:false->Route_by_Region_rule2", "Route_by_Region_rule2:true->US_Pricing",
		"Route_by_Region_rule2:false->Other_Region", "EU_Pricing:out->Merge_Prices", "US_Pricing:out->Merge_Prices",
		"Merge_Prices:out->Notify", "Notify:out->Cool_Down", "Cool_Down:timeout->Wait_for_Approval",
	} {
		if !slices.Contains(got, e) {
			t.Errorf("no edge %s in %v", e, got)
		}
	}
	if len(got) != 12 {
		t.Errorf("edges %v", got)
	}
	wantWarning(t, warnings, `"US Pricing"`, "n8n-nodes-base.code", "$input")
	wantWarning(t, warnings, `"Cool Down"`, "300 second timeout")
	wantWarning(t, warnings, `"Wait for Approval"`, `event "Wait_for_Approval"`, "7200 seconds")
	wantWarning(t, warnings, `"Route by Region"`, "chain of gates")
	wantWarning(t, warnings, `"Schedule Trigger"`, "trigger.fired_at")
}

func TestConvertUnknown(t *testing.T) {
	in, specs, warnings := convertFixture(t, "unknown.json")
	if len(specs) != 0 {
		t.Fatalf("specs %+v", specs)
	}
	for _, n := range in.Nodes {
		if strings.Contains(n.Key, "Sticky") || strings.Contains(n.Key, "When_clicking") {
			t.Fatalf("node %s should have been dropped", n.Key)
		}
	}
	if n := node(t, in, "Google_Sheets"); n.Kind != "transform" || n.Config["expression"] != "input" {
		t.Fatalf("placeholder %+v", n)
	}
	sum := node(t, in, "Summarise").Config["expression"].(string)
	for _, part := range []string{`toPairs(nodes.Loop_Over_Items.output ?? {})`, `nodes.Google_Sheets.output.sheet`, `["count", 3]`,
		`["ids", "{{ $json.items.map(i => i.id).join(',') }}"]`} {
		if !strings.Contains(sum, part) {
			t.Errorf("summarise lacks %s: %s", part, sum)
		}
	}
	if c := node(t, in, "Status_OK").Config["condition"]; c != `(string(nodes.Count_Rows.output?.result.status ?? "") matches "(?i)^OK$")` {
		t.Fatalf("regex %v", c)
	}
	if src := node(t, in, "Count_Rows").Config["source"].(string); !strings.Contains(src, `"Google Sheets": () => __in?.["nodes"]?.["Google_Sheets"]?.["output"]`) {
		t.Fatalf("shim %s", src)
	}
	got := edges(in)
	for _, e := range []string{"Gmail_Trigger:out->Google_Sheets", "Loop_Over_Items:out->Slack", "Loop_Over_Items:out->Summarise"} {
		if !slices.Contains(got, e) {
			t.Errorf("no edge %s in %v", e, got)
		}
	}
	if slices.Contains(got, "Slack:out->Loop_Over_Items") {
		t.Errorf("the loop back edge stayed: %v", got)
	}
	wantWarning(t, warnings, `"Google Sheets"`, "n8n-nodes-base.googleSheets", "placeholder")
	wantWarning(t, warnings, `"Slack"`, "n8n-nodes-base.slack", "placeholder")
	wantWarning(t, warnings, `"Gmail Trigger"`, "trigger has no equivalent")
	wantWarning(t, warnings, `"Slack"`, `"Loop Over Items"`, "closes a loop")
	wantWarning(t, warnings, `"Summarise"`, `"ids"`, "arrow functions")
	wantWarning(t, warnings, `"Orphan"`, "disabled")
	for _, w := range warnings {
		if strings.Contains(w, "Sticky") {
			t.Errorf("a sticky note was warned about: %s", w)
		}
	}
}

func TestConvertRefuses(t *testing.T) {
	for _, doc := range []string{
		``, `{`, `[]`, `"x"`, `{"nodes": 3}`, `{"name": "x"}`, `{"nodes": [{"type": "n8n-nodes-base.set"}]}`,
		`{"nodes": [{"name": "a", "type": "n8n-nodes-base.noOp"}, {"name": "a", "type": "n8n-nodes-base.noOp"}]}`,
		`{"nodes": [{"name": "Hook", "type": "n8n-nodes-base.webhook"}]}`,
		`{"nodes": []} {}`,
	} {
		if _, _, _, err := Convert([]byte(doc)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

func TestConvertEdgeCases(t *testing.T) {
	doc := `[{"name": "  ", "nodes": [
		{"name": "1. Start!", "type": "n8n-nodes-base.noOp", "position": [1e300, -5]},
		{"name": "1. Start?", "type": "n8n-nodes-base.noOp"},
		{"name": "Respond", "type": "n8n-nodes-base.respondToWebhook", "parameters": {"respondWith": "json", "responseBody": "={ \"a\": {{ $json.n }} }"}},
		{"name": "After", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "parameters": {"assignments": {"assignments": [{"name": "x", "value": "={{ $json.n }}"}]}}},
		{"name": "Sw", "type": "n8n-nodes-base.switch", "typeVersion": 2, "parameters": {"dataType": "string", "value1": "={{ $json.kind }}",
			"rules": {"rules": [{"operation": "equal", "value2": "a", "output": 1}, {"operation": "startsWith", "value2": "b"}]}, "fallbackOutput": 3}},
		{"name": "Self", "type": "n8n-nodes-base.noOp"}
	], "connections": {
		"1. Start!": {"main": [[{"node": "Respond", "type": "main", "index": 0}, {"node": "Sw", "type": "main", "index": 0}]]},
		"Respond": {"main": [[{"node": "After", "type": "main", "index": 0}]]},
		"Sw": {"main": [[], [{"node": "After", "type": "main", "index": 0}], [], [{"node": "Self", "type": "main", "index": 0}]]},
		"Self": {"main": [[{"node": "Self", "type": "main", "index": 0}, {"node": "Nowhere", "type": "main", "index": 0}]]}
	}}]`
	in, _, warnings, err := Convert([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateInput(in); err != nil {
		t.Fatal(err)
	}
	if in.Name != "Imported n8n workflow" || in.Nodes[0].Key != "n1_Start" || in.Nodes[1].Key != "n1_Start_2" || in.Nodes[0].Position.X != 1e9 {
		t.Fatalf("%+v", in)
	}
	if out := node(t, in, "Respond").Config["output"]; out != `fromJSON("{ \"a\": " + (let _v = nodes.n1_Start.output.n; type(_v) in ["map", "array"] ? toJSON(_v) : string(_v ?? "")) + " }")` {
		t.Fatalf("respond %v", out)
	}
	got := edges(in)
	for _, e := range []string{"n1_Start:out->Respond", "n1_Start:out->After", "Sw:true->After", "Sw_rule2:false->Self", "Sw:false->Sw_rule2"} {
		if !slices.Contains(got, e) {
			t.Errorf("no edge %s in %v", e, got)
		}
	}
	wantWarning(t, warnings, `"Self"`, "closes a loop")
	wantWarning(t, warnings, `"Self"`, `unknown node "Nowhere"`)
	wantWarning(t, warnings, `"1. Start?"`, "no input")
	wantWarning(t, warnings, `"Respond"`, "follow the node before it")
}

func TestTranslateJS(t *testing.T) {
	sc := jsScope{json: "nodes.prev.output", node: func(name string) (string, error) {
		switch name {
		case "Webhook":
			return "trigger", nil
		case "HTTP":
			return "nodes.HTTP.output?.json", nil
		}
		return "", untranslatable("no node %s", name)
	}}
	for _, c := range []struct{ js, want string }{
		{`$json.body.n * 2`, `(nodes.prev.output.body.n * 2)`},
		{`$json["a b"]`, `nodes.prev.output["a b"]`},
		{`$json.in`, `nodes.prev.output["in"]`},
		{`$('Webhook').item.json.body.x`, `trigger.body.x`},
		{`$("HTTP").first().json.id`, `nodes.HTTP.output?.json.id`},
		{`$node["HTTP"].json.id`, `nodes.HTTP.output?.json.id`},
		{`$node.Webhook.json.query.q`, `trigger.query.q`},
		{`$items("HTTP")[0].json.id`, `nodes.HTTP.output?.json.id`},
		{`$input.item.json.a === 'x' && !$json.b`, `((nodes.prev.output.a == "x") && !(nodes.prev.output.b))`},
		{`$input.first().json.a !== null ? 1 : -2.5`, `((nodes.prev.output.a != nil) ? 1 : -(2.5))`},
		{`items[0].json.list.length`, `len(nodes.prev.output.list)`},
		{`$json.name.toUpperCase().trim()`, `trim(upper(nodes.prev.output.name))`},
		{`$json.tags.includes("x")`, `(type(nodes.prev.output.tags) == "string" ? nodes.prev.output.tags contains "x" : "x" in nodes.prev.output.tags)`},
		{`JSON.stringify({a: $json.a, "b": [1, true, null]})`, `toJSON({"a": nodes.prev.output.a, "b": [1, true, nil]})`},
		{`Math.max($json.a, 3) ?? 0x10`, `(max(nodes.prev.output.a, 3) ?? 16)`},
		{`$json?.a?.["b"]`, `nodes.prev.output?.a?.["b"]`},
		{`$execution.id + $workflow.id`, `(run.id + run.workflow_id)`},
		{`$env.TOKEN`, `env.TOKEN`},
		{`'it\'s' + "\u00e9\n"`, `("it's" + "é\n")`},
		{`2 ** 3 ** 2`, `(2 ** (3 ** 2))`},
		{`$json.s.slice(1, -1)`, `nodes.prev.output.s[1:-(1)]`},
		{`$now`, `now()`},
	} {
		got, err := translateJS(c.js, sc)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.js, got, err, c.want)
		}
	}
	for _, js := range []string{
		`$json.items.map(i => i.id)`, `$json.a = 1`, `typeof $json`, `$('Nope').item.json`, `$('HTTP')`, `foo`, `$input.all()`,
		"`a ${b}`", `/re/.test($json.a)`, `$json.a.replace('a', 'b')`, `new Date()`, `$now.toISO()`, `a, b`, `{[k]: 1}`, `$json.a // c`,
		strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500), `"unterminated`, `1n`, `$json.a.b(`, `$vars.x`, `$binary.data`,
	} {
		if got, err := translateJS(js, sc); !errors.Is(err, errUntranslatable) {
			t.Errorf("%s: got %q, %v; want untranslatable", js, got, err)
		}
	}
}

func TestValues(t *testing.T) {
	c := &converter{keys: map[string]bool{"prev": true}, byName: map[string]*srcNode{}}
	n := &srcNode{name: "N", typ: "t"}
	x := &nodeCtx{c: c, n: n, sc: jsScope{json: "nodes.prev.output", node: func(string) (string, error) { return "", untranslatable("none") }}}
	for _, cs := range []struct {
		v        any
		template string
		expr     string
	}{
		{"plain {{ text }}", `plain {{"{{"}} text }}`, `"plain {{ text }}"`},
		{"={{ $json.a }}", "{{ nodes.prev.output.a }}", "nodes.prev.output.a"},
		{"=id-{{ $json.id }}!", "id-{{ nodes.prev.output.id }}!", `"id-" + (let _v = nodes.prev.output.id; type(_v) in ["map", "array"] ? toJSON(_v) : string(_v ?? "")) + "!"`},
		{"=no placeholders", "no placeholders", `"no placeholders"`},
		{"={{ $json.a.map(x => x) }}", `{{"{{"}} $json.a.map(x => x) }}`, `"{{ $json.a.map(x => x) }}"`},
		{"={{ $json.a", `{{"{{"}} $json.a`, `"{{ $json.a"`},
		{"={{ }}", `{{"{{"}} }}`, `"{{ }}"`},
		{3.5, "3.5", "3.5"},
		{true, "true", "true"},
		{nil, "", "nil"},
	} {
		if got := x.template("f", cs.v); got != cs.template {
			t.Errorf("template(%v) = %q, want %q", cs.v, got, cs.template)
		}
		if got := x.expr("f", cs.v); got != cs.expr {
			t.Errorf("expr(%v) = %q, want %q", cs.v, got, cs.expr)
		}
	}
	if len(c.warnings) != 6 { // the three untranslatable values, twice each
		t.Errorf("warnings %q", c.warnings)
	}
	if got := x.typedExpr("f", "42", "number"); got != "42" {
		t.Errorf("typed number %q", got)
	}
	if got := x.typedExpr("f", `{"a": 1}`, "object"); got != `fromJSON("{\"a\": 1}")` {
		t.Errorf("typed object %q", got)
	}
}

// TestCodeShim runs converted Code and Function nodes with node, when it is
// installed, on the input file a worker would give them.
func TestCodeShim(t *testing.T) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	input := `{"input": null, "trigger": {"kind": "schedule"}, "run": {}, "env": {},
		"nodes": {"Fetch_Orders": {"output": {"status": 200, "json": {"total": 10, "region": "us"}}},
			"Summarise": {"output": {"msg": "hi", "count": 3}}, "Google_Sheets": {"output": {"sheet": "S1"}}}}`
	dir := t.TempDir()
	inputPath := filepath.Join(dir, "input.json")
	if err := os.WriteFile(inputPath, []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ fixture, key, want string }{
		{"orders.json", "US_Pricing", `{"currency":"USD","total":10}`},
		{"unknown.json", "Count_Rows", `{"rows":1,"first":{"sheet":"S1"}}`},
	} {
		in, _, _, err := Convert(fixture(t, c.fixture))
		if err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(dir, c.key+".js")
		if err := os.WriteFile(script, []byte(node(t, in, c.key).Config["source"].(string)), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(nodeBin, script)
		cmd.Env = append(os.Environ(), "SLIPWAY_INPUT="+inputPath)
		out, err := cmd.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err != nil || lines[len(lines)-1] != c.want {
			t.Errorf("%s: %v\n%s", c.key, err, out)
		}
	}
}
