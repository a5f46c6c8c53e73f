package expression

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func testEnv() map[string]any {
	return map[string]any{
		"input": map[string]any{"name": "Ann", "count": 3, "tags": []any{"a", "b"}},
		"nodes": map[string]any{
			"fetch":  map[string]any{"output": map[string]any{"items": []any{1, 2, 3}}},
			"my-key": map[string]any{"output": "dashed"},
		},
		"item":  map[string]any{"id": 7},
		"index": 2,
	}
}

func eval(t *testing.T, src string, b Budget, env map[string]any) (any, error) {
	t.Helper()
	p, err := Compile(src)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	return p.WithBudget(b).Eval(context.Background(), env)
}

func TestEval(t *testing.T) {
	tests := []struct {
		src  string
		want any
	}{
		{"1 + 2 * 3", int64(7)},
		{"7 / 2", 3.5},
		{"2.0 * 3", int64(6)},
		{"7 % 3 - 2 ** 3", int64(-7)},
		{"0.1 + 0.2", 0.30000000000000004},
		{"9007199254740991", int64(9007199254740991)},
		{"9007199254740993", float64(9007199254740992)},
		{`"Hello " + input.name`, "Hello Ann"},
		{"input.count > 2 && len(input.tags) == 2", true},
		{"nodes.fetch.output.items", []any{int64(1), int64(2), int64(3)}},
		{"nodes.fetch.output.items[-1]", int64(3)},
		{`nodes["my-key"].output`, "dashed"},
		{`nodes["my-key"]`, map[string]any{"output": "dashed"}},
		{"len(nodes.fetch.output.items)", int64(3)},
		{"item.id * index", int64(14)},
		{"map(nodes.fetch.output.items, # * 10)", []any{int64(10), int64(20), int64(30)}},
		{"let n = input.count; n * n", int64(9)},
		{`input.count > 2 ? "many" : "few"`, "many"},
		// Missing keys are nil rather than errors, so optional inputs can be
		// tested with == nil or defaulted with ??.
		{"input.missing", nil},
		{"unknownVariable", nil},
		{"input.missing == nil", true},
		{`input.missing ?? "default"`, "default"},
		{`nodes.nope?.output ?? "default"`, "default"},
		// expr returns maps with non-string keys; they must still be JSON.
		{"groupBy(1..5, # % 2)", map[string]any{"0": []any{int64(2), int64(4)}, "1": []any{int64(1), int64(3), int64(5)}}},
		{"fromPairs([[1, true]])", map[string]any{"1": true}},
		{`{"a": [1, nil]}`, map[string]any{"a": []any{int64(1), nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := eval(t, tt.src, Budget{}, testEnv())
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, src string
		compile   bool // the error comes from Compile rather than Eval
		want      string
	}{
		{"syntax", "a +", true, `expression "a +": unexpected token EOF (1:3)`},
		{"type", `"a" && true`, true, `expression "\"a\" && true": invalid operation: && (mismatched types string and bool) (1:5)`},
		{"empty", "  ", true, "expression is empty"},
		{"too long", strings.Repeat("1", MaxSourceBytes+1), true, "is 4097 bytes long, the limit is 4096"},
		{"member of missing", "nodes.nope.output", false, `expression "nodes.nope.output": cannot fetch output from <nil> (1:12)`},
		{"index out of range", "nodes.fetch.output.items[5]", false, "index out of range: 5 (array length is 3)"},
		{"not JSON", "1 / 0", false, "expression result cannot be represented as JSON: json: unsupported value: +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.src)
			if !tt.compile {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				_, err = p.Eval(context.Background(), testEnv())
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
			if tt.compile != (Check(tt.src) != nil) {
				t.Errorf("Check(%q) disagrees with Compile", tt.src)
			}
		})
	}
	if _, err := Compile(strings.Repeat("1+", MaxSourceBytes/2-1) + "1 "); err != nil {
		t.Errorf("source of exactly MaxSourceBytes: %v", err)
	}
}

func TestBool(t *testing.T) {
	tests := []struct {
		src     string
		want    bool
		wantErr string
	}{
		{"input.count == 3", true, ""},
		{`input.name startsWith "B"`, false, ""},
		{`"b" in input.tags and not (index > 5)`, true, ""},
		{"input.name", false, "condition must be true or false, got string"},
		{"input.count", false, "condition must be true or false, got number"},
		{"input.missing", false, "condition must be true or false, got null"},
		{"input.tags", false, "condition must be true or false, got array"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, err := Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Bool(context.Background(), testEnv())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Bool: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	xs := make([]any, 1000)
	for i := range xs {
		xs[i] = i
	}
	tests := []struct {
		name, src string
		budget    Budget
		want      string
	}{
		{"time, nested loops over a range", "let r = 1..1000; sum(r, sum(r, sum(r, #)))", Budget{Time: 50 * time.Millisecond}, "time budget of 50ms exceeded"},
		{"time, nested loops over input", "sum(xs, sum(xs, sum(xs, #)))", Budget{Time: 50 * time.Millisecond}, "time budget of 50ms exceeded"},
		{"memory, huge range", "map(1..100000000, # * 2)", Budget{}, "memory budget exceeded"},
		{"memory, huge array", "1..100000000", Budget{}, "memory budget exceeded"},
		{"memory, custom limit", "1..2000", Budget{MaxMemory: 1000}, "memory budget exceeded"},
		{"memory, doubling string", `reduce(1..40, #acc + #acc, "x")`, Budget{}, "memory budget exceeded (1:20)"},
		{"memory, doubling array", "reduce(1..40, concat(#acc, #acc), [1])", Budget{MaxMemory: 10000}, "memory budget exceeded"},
		{"memory, doubling let", `let a = repeat("x", 1000); let b = a + a; let c = b + b; let d = c + c; d`, Budget{MaxMemory: 5000}, "memory budget exceeded (1:68)"},
		{"output", `repeat("x", 200)`, Budget{MaxOutputBytes: 100}, "expression result is larger than 100 bytes"},
		// 40 arrays in memory, 2^40 leaves once encoded.
		{"output, shared values", "reduce(1..40, [#acc, #acc], 1)", Budget{}, "expression result is larger than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := eval(t, tt.src, tt.budget, map[string]any{"xs": xs})
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("took %v", elapsed)
			}
			if !errors.Is(err, ErrBudgetExceeded) {
				t.Fatalf("error %v is not ErrBudgetExceeded", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}

	// The limits above are the budget's, not fixed ones.
	for _, src := range []string{"1..2000", `repeat("x", 200)`} {
		if _, err := eval(t, src, Budget{}, nil); err != nil {
			t.Errorf("%s under the default budget: %v", src, err)
		}
	}
}

func TestTimedOutEvaluationStops(t *testing.T) {
	before := runtime.NumGoroutine()
	// Unguarded, this takes minutes.
	_, err := eval(t, "let r = 1..1000; sum(r, sum(r, sum(r, #)))", Budget{Time: 20 * time.Millisecond}, nil)
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("error %v is not ErrBudgetExceeded", err)
	}
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still running, %d before", runtime.NumGoroutine(), before)
		}
	}
}

func TestCancelledContext(t *testing.T) {
	p, err := Compile("1 + 1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Eval(ctx, nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("error %v, want context.Canceled only", err)
	}
}

func TestNormalize(t *testing.T) {
	type record struct {
		Name string `json:"name"`
		N    uint8  `json:"n"`
	}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"int", 42, int64(42)},
		{"integral float", 2.0, int64(2)},
		{"fraction", 2.5, 2.5},
		{"largest exact int", -(1<<53 - 1), int64(-(1<<53 - 1))},
		{"beyond exact ints", int64(1 << 60), float64(1 << 60)},
		{"large float", 1e300, 1e300},
		{"typed slice", []int{1, 2}, []any{int64(1), int64(2)}},
		{"interface keys", map[any]any{1: "a", true: []string{"b"}}, map[string]any{"1": "a", "true": []any{"b"}}},
		{"struct", record{"x", 3}, map[string]any{"name": "x", "n": int64(3)}},
		{"bytes", []byte("hi"), "aGk="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
	if _, err := Normalize(math.NaN()); err == nil {
		t.Error("NaN normalized without error")
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{"", ""},
		{"no placeholders, {single} braces } {", "no placeholders, {single} braces } {"},
		{"Hello {{ input.name }}, you have {{ len(nodes.fetch.output.items) }} items", "Hello Ann, you have 3 items"},
		{"{{input.count}}|{{ 7 / 2 }}|{{ 2.0 * 3 }}|{{ 1e21 }}", "3|3.5|6|1e+21"},
		{"[{{ true }}|{{ false }}|{{ input.missing }}]", "[true|false|]"},
		{"{{ input.tags }} {{ nodes.fetch.output }}", `["a","b"] {"items":[1,2,3]}`},
		{`{{ "<b>&</b>" }} {{ ["<b>"] }}`, `<b>&</b> ["<b>"]`},
		{"{{ item.id }}{{ index }}", "72"},
		// Braces inside string literals and map literals.
		{`{{"{{"}} literal`, "{{ literal"},
		{`{{ "}}" }}`, "}}"},
		{`{{ '}}' + "}" }}`, "}}}"},
		{"{{ `}}\\` }}", "}}\\"},
		{`{{ "a\"}}" }}`, `a"}}`},
		{`{{ 'it\'s }}' }}`, `it's }}`},
		{`{{ {"a": {"b": "}}"}} }}`, `{"a":{"b":"}}"}}`},
		{"{{{a: 1}}}", `{"a":1}`},
		{"ünï {{ input.name }} cödé", "ünï Ann cödé"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			tmpl, err := Template(tt.src)
			if err != nil {
				t.Fatalf("Template: %v", err)
			}
			got, err := tmpl.Render(context.Background(), testEnv())
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"Hello {{ input.name", []string{"{{ at 1:7 is never closed"}},
		{"ab\ncdé {{ x }} {{ y", []string{"{{ at 2:13 is never closed"}},
		{`{{ "}} }}`, []string{"{{ at 1:1 is never closed"}},
		{"{{ {a: 1} }", []string{"{{ at 1:1 is never closed"}},
		{"ok {{ a + }}", []string{"placeholder at 1:4", `expression " a + ": unexpected token EOF`}},
		{"{{}}", []string{"placeholder at 1:1", "expression is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := Template(tt.src)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if CheckTemplate(tt.src) == nil {
				t.Error("CheckTemplate accepted it")
			}
		})
	}
	if err := CheckTemplate("{{ input.name }}"); err != nil {
		t.Errorf("CheckTemplate: %v", err)
	}
}

func TestRenderBudget(t *testing.T) {
	tmpl, err := Template(`{{ repeat("x", 60) }}-{{ repeat("y", 60) }}`)
	if err != nil {
		t.Fatal(err)
	}
	small := tmpl.WithBudget(Budget{MaxOutputBytes: 100})
	if _, err := small.Render(context.Background(), nil); !errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "template result is larger than 100 bytes") {
		t.Errorf("error %v, want the template size budget", err)
	}
	got, err := tmpl.Render(context.Background(), nil)
	if err != nil || len(got) != 121 {
		t.Errorf("default budget: %d bytes, %v", len(got), err)
	}

	slow, err := Template("a {{ let r = 1..1000; sum(r, sum(r, sum(r, #))) }}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = slow.WithBudget(Budget{Time: 20 * time.Millisecond}).Render(context.Background(), nil)
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("error %v, want the time budget", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	p, err := Compile(`map(input.xs, # * input.k)`)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Template(`{{ input.k }}:{{ sum(input.xs) }}`)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 32 {
		wg.Go(func() {
			for i := range 20 {
				k := g*100 + i
				env := map[string]any{"input": map[string]any{"xs": []any{1, 2}, "k": k}}
				got, err := p.Eval(context.Background(), env)
				if want := []any{int64(k), int64(2 * k)}; err != nil || !reflect.DeepEqual(got, want) {
					errs <- fmt.Errorf("Eval with k=%d: %v, %v", k, got, err)
					return
				}
				s, err := tmpl.Render(context.Background(), env)
				if want := fmt.Sprintf("%d:3", k); err != nil || s != want {
					errs <- fmt.Errorf("Render with k=%d: %q, %v", k, s, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestFields(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string
	}{
		{`nodes.fetch.output.items`, []string{"fetch"}},
		{`nodes["my-key"].output + nodes.a.output + nodes.fetch.x`, []string{"my-key", "a", "fetch"}},
		{`nodes?.b?.output ?? nodes.c`, []string{"b", "c"}},
		{`map(input.items, nodes.d.output[#])`, []string{"d"}},
		{`nodes[input.key]`, nil},     // computed at run time
		{`input.nodes.e`, nil},        // not the root variable
		{`let nodes = 1; nodes`, nil}, // shadowed
	} {
		p, err := Compile(c.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Fields("nodes"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Fields(%q) = %q, want %q", c.src, got, c.want)
		}
	}
	tm, err := Template(`{{ nodes.a.output }} and {{ nodes.b.output }} and {{ nodes.a.x }}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.Fields("nodes"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("template fields %q", got)
	}
}
