package templates

import (
	"strings"
	"testing"
	"testing/fstest"

	"slipway/internal/triggers"
)

func TestShippedCatalog(t *testing.T) {
	all, err := catalog()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		nodes    int
		triggers []triggers.Config
	}{
		"http-health-check":  {6, []triggers.Config{{Cron: "*/5 * * * *", Timezone: "UTC"}}},
		"issue-triage":       {5, []triggers.Config{{ResponseMode: triggers.ModeAsync}}},
		"loop-over-list":     {3, []triggers.Config{{ResponseMode: triggers.ModeSync}}},
		"nightly-agent-task": {2, []triggers.Config{{Cron: "0 2 * * *", Timezone: "UTC"}}},
		"webhook-respond":    {2, []triggers.Config{{ResponseMode: triggers.ModeSync}}},
	}
	if len(all) != len(want) {
		t.Fatalf("%d templates, want %d", len(all), len(want))
	}
	for i, e := range all {
		w, ok := want[e.Slug]
		if !ok {
			t.Fatalf("unexpected template %s", e.Slug)
		}
		if i > 0 && all[i-1].Slug >= e.Slug {
			t.Fatalf("not sorted by slug: %s before %s", all[i-1].Slug, e.Slug)
		}
		if e.NodeCount != w.nodes || len(e.triggers) != len(w.triggers) || e.Name == "" || e.Description == "" || e.Category == "" {
			t.Fatalf("%s: %+v", e.Slug, e.Template)
		}
		for j, c := range w.triggers {
			if got := e.triggers[j].Config; got.Cron != c.Cron || got.Timezone != c.Timezone || got.ResponseMode != c.ResponseMode {
				t.Errorf("%s: trigger %d config %+v, want %+v", e.Slug, j, got, c)
			}
		}
		// Each instance parses afresh: no config map is shared.
		a, err := e.input()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := e.input()
		a.Nodes[0].Config["mutated"] = true
		if _, shared := b.Nodes[0].Config["mutated"]; shared {
			t.Fatalf("%s: instances share config maps", e.Slug)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	const body = "version: 1\nname: W\nnodes:\n  - {key: a, kind: end}\n"
	const head = "template:\n  slug: s\n  name: N\n  description: D\n  category: c\n"
	for name, c := range map[string]struct{ slug, doc, want string }{
		"no header":            {"s", body, "no template: header"},
		"slug not the file":    {"t", head + body, `must be the file's name`},
		"bad slug":             {"S_1", strings.Replace(head, "slug: s", "slug: S_1", 1) + body, "lower-case"},
		"no description":       {"s", strings.Replace(head, "  description: D\n", "", 1) + body, "required"},
		"unknown header field": {"s", head + "  colour: red\n" + body, "colour"},
		"misspelt trigger":     {"s", head + "  triggers:\n    - kind: schedule\n      config: {crom: '* * * * *'}\n" + body, "crom"},
		"unknown trigger kind": {"s", head + "  triggers:\n    - kind: email\n" + body, `kind "email"`},
		"unknown workflow key": {"s", head + "colour: red\n" + body, `unknown field "colour"`},
		"no workflow name":     {"s", head + strings.Replace(body, "name: W\n", "", 1), "no name"},
		"not a mapping":        {"s", "- a\n", "mapping"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(c.slug, []byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	// A good one, with a schedule's input carried as JSON.
	fsys := fstest.MapFS{"x/s.yaml": {Data: []byte(head + "  triggers:\n    - kind: schedule\n      config: {interval_seconds: 60, input: {url: 'https://a'}}\n" + body)}}
	all, err := load(fsys, "x")
	if err != nil || len(all) != 1 {
		t.Fatalf("load: %v", err)
	}
	if e := all[0]; e.NodeCount != 1 || string(e.triggers[0].Config.Input) != `{"url":"https://a"}` || e.triggers[0].Config.IntervalSeconds != 60 {
		t.Fatalf("loaded %+v %+v", e.Template, e.triggers)
	}
}
