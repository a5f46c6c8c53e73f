package n8nimport

import (
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzConvert: Convert never panics, refuses only with ErrInvalid, is
// deterministic, and whatever it accepts passes the workflows validation.
func FuzzConvert(f *testing.F) {
	for _, name := range []string{"bench.json", "orders.json", "unknown.json"} {
		f.Add(fixture(f, name))
	}
	for _, doc := range []string{
		`{"nodes": [{"name": "If", "type": "n8n-nodes-base.if", "parameters": {"conditions": {"number": [{"value1": "={{ $json.n }}", "operation": "larger", "value2": 3}],
			"string": [{"value1": "={{ $json.s }}", "operation": "notContains", "value2": "x"}], "boolean": [{}]}, "combineOperation": "any"}},
			{"name": "Sw", "type": "n8n-nodes-base.switch", "typeVersion": 3, "parameters": {"mode": "expression", "numberOutputs": 2, "output": "={{ $json.n % 2 }}"}},
			{"name": "W", "type": "n8n-nodes-base.wait", "parameters": {"resume": "specificTime", "dateTime": "2030-01-01"}},
			{"name": "M", "type": "n8n-nodes-base.merge", "typeVersion": 2, "parameters": {"mode": "chooseBranch", "output": "input2"}}],
			"connections": {"If": {"main": [[{"node": "Sw", "type": "main", "index": 0}], [{"node": "M", "type": "main", "index": 1}]]},
			"Sw": {"main": [[{"node": "W", "type": "main", "index": 0}], [{"node": "M", "type": "main", "index": 0}]]}}}`,
		`{"nodes": [{"name": "Cron", "type": "n8n-nodes-base.cron", "parameters": {"triggerTimes": {"item": [{"mode": "everyWeek", "hour": 9, "weekday": 7}, {"mode": "custom", "cronExpression": "*/5 * * * * *"}, {"mode": "everyX", "value": 3, "unit": "minutes"}]}}},
			{"name": "H", "type": "n8n-nodes-base.httpRequest", "typeVersion": 1, "parameters": {"requestMethod": "POST", "url": "=https://x/{{ $json.id }}", "jsonParameters": true,
			"bodyParametersJson": "={{ JSON.stringify($json) }}", "options": {"ignoreResponseCode": true}}, "onError": "continueErrorOutput"},
			{"name": "C", "type": "n8n-nodes-base.code", "parameters": {"language": "python", "pythonCode": "return _input.all()"}}],
			"connections": {"Cron": {"main": [[{"node": "H", "type": "main", "index": 0}]]}, "H": {"main": [[], [{"node": "C", "type": "main", "index": 0}]]}},
			"settings": {"timezone": "Mars/Olympus"}}`,
		`{"nodes": [{"name": "S", "type": "n8n-nodes-base.scheduleTrigger", "parameters": {"rule": {"interval": [{"field": "weeks", "weeksInterval": 2, "triggerAtDay": [1, 5], "triggerAtHour": 7},
			{"field": "months", "monthsInterval": 3, "triggerAtDayOfMonth": 15}, {"field": "hours", "hoursInterval": 30}, {"field": "cronExpression", "expression": "bad"}]}}},
			{"name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3.2, "parameters": {"mode": "raw", "jsonOutput": "={\"a\": {{ $json.x }}}", "include": "all"}}],
			"connections": {"S": {"main": [[{"node": "Set", "type": "main", "index": 0}]]}}}`,
		`{"nodes": [{"name": "a", "type": "x", "parameters": {"p": "\u0000={{ {{ }}"}, "position": ["x", null]}]}`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		in, specs, warnings, err := Convert(doc)
		if errors.Is(err, errPanic) {
			t.Fatalf("panic: %v\n%q", err, doc)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if err := validateInput(in); err != nil {
			t.Fatalf("accepted a document whose conversion does not validate: %v\n%q", err, doc)
		}
		if err := validateSpecs(specs); err != nil {
			t.Fatalf("trigger: %v\n%q", err, doc)
		}
		for _, w := range warnings {
			if w == "" || !utf8.ValidString(w) {
				t.Fatalf("warning %q", w)
			}
		}
		in2, specs2, warnings2, err := Convert(doc)
		if err != nil || !reflect.DeepEqual(in, in2) || !reflect.DeepEqual(specs, specs2) || !reflect.DeepEqual(warnings, warnings2) {
			t.Fatalf("not deterministic: %v\n%q", err, doc)
		}
	})
}

// FuzzTranslateJS: the JavaScript reader never panics, refuses with
// errUntranslatable, and what it writes is one expression (it compiles
// unless expr's own type checks object, as for "a" - 1).
func FuzzTranslateJS(f *testing.F) {
	for _, js := range []string{`$json.body.n * 2`, `$('Webhook').item.json.body.x`, `$node["HTTP"].json.id ?? 'none'`,
		`$input.first().json.tags.includes("x") ? 1 : -2.5e3`, `JSON.stringify({a: [1, true, null], 'b': $json.s.slice(1, -1)})`,
		"`raw ${x}`", `Math.max(0x1F, .5) ** 2 !== 3`, `"\u00e9\x41\n" + $json["a b"]?.c`, `$items("HTTP")[0].json.id.toString().length`} {
		f.Add(js)
	}
	sc := jsScope{json: "nodes.prev.output", node: func(name string) (string, error) {
		if name == "Webhook" {
			return "trigger", nil
		}
		return "nodes.HTTP.output?.json", nil
	}}
	f.Fuzz(func(t *testing.T, js string) {
		out, err := translateJS(js, sc)
		if err != nil {
			if !errors.Is(err, errUntranslatable) {
				t.Fatalf("%q: error %v", js, err)
			}
			return
		}
		if out == "" || !utf8.ValidString(out) {
			t.Fatalf("%q: translated to %q", js, out)
		}
	})
}
