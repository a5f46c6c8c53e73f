package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const fullYAML = `
name: Orders
description: |
  Track orders.
  Second line.
entry: app.html
routes:
  - path: /orders/*
    file: app.html
  - path: /about
    file: pages/about.html
build:
  image: node:22-alpine
  command: npm ci && npm run build
  output: dist
functions:
  - name: list_orders
    operation: query
    sql: SELECT id, total FROM orders WHERE customer = $1 LIMIT 50
    resource: warehouse_db
    args:
      - name: customer
        type: string
  - name: set_total
    operation: execute
    sql: |
      UPDATE orders
      	SET total = $2 -- tab-indented
      WHERE id = $1
    args:
      - {name: id, type: integer}
      - {name: total, type: number, required: false}
    timeout_ms: 1000
  - name: report
    operation: script
    script: monthly-report
    args:
      - {name: month, type: string}
      - {name: options, type: json, required: false}
      - {name: dry_run, type: boolean}
  - name: top
    operation: query
    sql: SELECT * FROM orders LIMIT 5
    max_rows: 5
resources: [warehouse_db]
env:
  REGION: eu
  API_BASE: https://api.example.com
csp: "default-src 'self'"
`

func fullManifest() *Manifest {
	return &Manifest{
		Name:        "Orders",
		Description: "Track orders.\nSecond line.\n",
		Entry:       "app.html",
		Routes: []Route{
			{Path: "/orders/*", File: "app.html"},
			{Path: "/about", File: "pages/about.html"},
		},
		Build: &Build{Image: "node:22-alpine", Command: "npm ci && npm run build", Output: "dist"},
		Functions: []Function{
			{
				Name: "list_orders", Operation: OpQuery, Resource: "warehouse_db",
				SQL:       "SELECT id, total FROM orders WHERE customer = $1 LIMIT 50",
				Args:      []Arg{{Name: "customer", Type: TypeString, Required: true}},
				TimeoutMS: 5000, MaxRows: 1000,
			},
			{
				Name: "set_total", Operation: OpExecute,
				SQL: "UPDATE orders\n\tSET total = $2 -- tab-indented\nWHERE id = $1\n",
				Args: []Arg{
					{Name: "id", Type: TypeInteger, Required: true},
					{Name: "total", Type: TypeNumber, Required: false},
				},
				TimeoutMS: 1000,
			},
			{
				Name: "report", Operation: OpScript, Script: "monthly-report",
				Args: []Arg{
					{Name: "month", Type: TypeString, Required: true},
					{Name: "options", Type: TypeJSON, Required: false},
					{Name: "dry_run", Type: TypeBoolean, Required: true},
				},
				TimeoutMS: 5000,
			},
			{
				Name: "top", Operation: OpQuery, SQL: "SELECT * FROM orders LIMIT 5",
				Args: []Arg{}, TimeoutMS: 5000, MaxRows: 5,
			},
		},
		Resources: []string{"warehouse_db"},
		Env:       map[string]string{"REGION": "eu", "API_BASE": "https://api.example.com"},
		CSP:       "default-src 'self'",
	}
}

func TestParseFull(t *testing.T) {
	m, err := Parse(fullYAML)
	if err != nil {
		t.Fatal(err)
	}
	if want := fullManifest(); !reflect.DeepEqual(m, want) {
		got, _ := json.MarshalIndent(m, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("got\n%s\nwant\n%s", got, exp)
	}
}

func TestParseDefaults(t *testing.T) {
	m, err := Parse("name: '  Orders  '\nfunctions:\n  - {name: f, operation: query, sql: SELECT 1}\n  - {name: g, operation: execute, sql: 'DELETE FROM t WHERE x = $1', args: [{name: a, type: json}], timeout_ms: 5000.0}\n  - {name: h, operation: script, script: s}\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"Orders","entry":"index.html","routes":[],"functions":[` +
		`{"name":"f","operation":"query","sql":"SELECT 1","args":[],"timeout_ms":5000,"max_rows":1000},` +
		`{"name":"g","operation":"execute","sql":"DELETE FROM t WHERE x = $1","args":[{"name":"a","type":"json","required":true}],"timeout_ms":5000},` +
		`{"name":"h","operation":"script","script":"s","args":[],"timeout_ms":5000}` +
		`],"resources":[],"env":{}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestParseCRLF(t *testing.T) {
	src := "name: Orders\r\nfunctions:\r\n  - name: f\r\n    operation: query\r\n    sql: |\r\n      SELECT $1\r\n      FROM t\r\n    args: [{name: a, type: string}]\r\n"
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Functions[0].SQL; got != "SELECT $1\nFROM t\n" {
		t.Fatalf("sql = %q", got)
	}
}

func TestParseSizeCap(t *testing.T) {
	base := "name: Orders\n"
	exact := base + "#" + strings.Repeat("x", MaxBytes-len(base)-1)
	if len(exact) != MaxBytes {
		t.Fatalf("len = %d", len(exact))
	}
	if _, err := Parse(exact); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	_, err := Parse(exact + "x")
	wantProblem(t, err, "manifest: too large: 65537 bytes, at most 65536 (64 KiB)")
}

func TestParseBillionLaughs(t *testing.T) {
	src := "name: lol\n" +
		"a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" +
		"b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n" +
		"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n" +
		"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n" +
		"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n" +
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n" +
		"h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n" +
		"i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
	_, err := Parse(src)
	wantProblem(t, err, "a: YAML anchors (&a) are not allowed (line 2)")
	if strings.Contains(err.Error(), "lol") && len(err.Error()) > maxMessage {
		t.Fatalf("message too long: %d", len(err.Error()))
	}
}

// TestParseRefused: each manifest fails with a problem containing want.
func TestParseRefused(t *testing.T) {
	fn := func(body string) string { return "name: Orders\nfunctions:\n  - " + body + "\n" }
	q := func(extra string) string {
		return fn("{name: f, operation: query, sql: 'SELECT $1', args: [{name: a, type: string}]" + extra + "}")
	}
	many := func(n int, item string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, item, i)
		}
		return b.String()
	}
	tests := []struct {
		name, yaml, want string
	}{
		// YAML itself.
		{"empty", "", "manifest: is empty"},
		{"comments only", "# nothing\n", "manifest: is empty"},
		{"syntax", "name: [Orders\n", "manifest: invalid YAML: line 1: did not find expected"},
		{"list document", "- name: Orders\n", "manifest: must be a YAML mapping of fields"},
		{"scalar document", "Orders\n", "manifest: must be a YAML mapping of fields"},
		{"two documents", "name: A\n---\nname: B\n", "manifest: must be one YAML document (found ---)"},
		{"syntax in second document", "name: A\n---\nname: [\n", "invalid YAML"},
		{"anchor", "name: &n Orders\n", "name: YAML anchors (&n) are not allowed (line 1)"},
		{"alias", "name: Orders\nfunctions:\n  - &f {name: f, operation: query, sql: SELECT 1}\n  - *f\n", "functions[1]: YAML aliases (*f) are not allowed (line 4)"},
		{"anchored root", "&r {name: Orders}\n", "manifest: YAML anchors (&r) are not allowed"},
		{"merge key", "name: Orders\nbuild:\n  <<: {image: node, command: x, output: dist}\n", "build: YAML merge keys (<<) are not allowed (line 3)"},
		{"custom tag", "name: !shout Orders\n", "name: YAML tag !shout is not allowed"},
		{"binary tag", "name: !!binary T3JkZXJz\n", "name: YAML tag !!binary is not allowed"},
		{"complex key", "name: Orders\nenv:\n  ? [A]\n  : x\n", "env: a key must be plain text (line 3)"},
		{"duplicate key", "name: A\ndescription: x\nname: B\n", "name: duplicate key (line 3)"},
		{"duplicate nested key", fn("{name: f, operation: query, sql: SELECT 1, name: g}"), "functions[0].name: duplicate key (line 3)"},
		{"duplicate env key", "name: A\nenv:\n  REGION: eu\n  REGION: us\n", "env.REGION: duplicate key (line 4)"},
		{"infinite number", q(", timeout_ms: .inf"), "functions[0].timeout_ms: .inf is not a finite number"},
		{"integer overflow", q(", timeout_ms: !!int 99999999999999999999"), "functions[0].timeout_ms: 99999999999999999999 is out of range (line 3)"},
		{"large number", q(", timeout_ms: 99999999999999999999"), "functions[0].timeout_ms: must be at most 30000"},
		{"invalid UTF-8", "name: \xff\n", "invalid YAML"},

		// Control characters.
		{"control in name", "name: \"Ord\\aers\"\n", "name: must not contain control or bidirectional-override characters (found U+0007)"},
		{"newline in name", "name: \"Ord\\ners\"\n", "name: must not contain control or bidirectional-override characters (found U+000A)"},
		{"bidi override in env", "name: A\nenv: {REGION: \"eu\\u202E\"}\n", "env.REGION: must not contain control or bidirectional-override characters (found U+202E)"},
		{"C1 control in csp", "name: A\ncsp: \"a\\u0085b\"\n", "csp: must not contain control or bidirectional-override characters (found U+0085)"},
		{"tab in csp", "name: A\ncsp: \"default-src\\t'self'\"\n", "csp: must not contain control or bidirectional-override characters (found U+0009)"},
		{"carriage return in description", "name: A\ndescription: \"a\\r\\nb\"\n", "description: must not contain control or bidirectional-override characters (found U+000D)"},
		{"NUL in sql", fn(`{name: f, operation: query, sql: "SELECT 1\0"}`), "functions[0].sql: must not contain control or bidirectional-override characters (found U+0000)"},
		{"control in command", "name: A\nbuild: {image: node, command: \"make\\x1b\", output: dist}\n", "build.command: must not contain control"},
		{"control in a list item", "name: A\nresources: [\"db\\x01\"]\n", "resources[0]: must not contain control"},
		{"control in a key", "name: A\nenv: {\"A\\x07\": x}\n", `env["A\a"]: the key must not contain control or bidirectional-override characters (found U+0007)`},

		// Schema: fields, types, sizes.
		{"missing name", "description: x\n", "name: is required"},
		{"empty name", "name: ''\n", "name: must not be empty"},
		{"null name", "name:\n", "name: must be a string (it has no value)"},
		{"number name", "name: 2024\n", "name: must be a string, not a number (put the value in quotes)"},
		{"long name", "name: " + strings.Repeat("é", 101) + "\n", "name: must be at most 100 characters (it has 101)"},
		{"long description", "name: A\ndescription: " + strings.Repeat("x", 1001) + "\n", "description: must be at most 1000 characters (it has 1001)"},
		{"unknown top-level field", "name: A\nnmae: B\n", "nmae: unknown field"},
		{"unknown odd field", "name: A\n\"my field\": B\n", `["my field"]: unknown field`},
		{"unknown function field", q(", sqll: x"), "functions[0].sqll: unknown field"},
		{"unknown arg field", fn("{name: f, operation: query, sql: 'SELECT $1', args: [{name: a, type: string, requird: true}]}"), "functions[0].args[0].requird: unknown field"},
		{"unknown route field", "name: A\nroutes: [{path: /a, file: a.html, fiel: b}]\n", "routes[0].fiel: unknown field"},
		{"unknown build field", "name: A\nbuild: {image: node, command: x, output: dist, cache: true}\n", "build.cache: unknown field"},
		{"functions not a list", "name: A\nfunctions: {name: f}\n", "functions: must be a list, not a mapping"},
		{"build null", "name: A\nbuild:\n", "build: must be a mapping (it has no value)"},
		{"bad arg type", fn("{name: f, operation: query, sql: 'SELECT $1', args: [{name: a, type: text}]}"), "functions[0].args[0].type: must be one of string, integer, number, boolean, json"},
		{"bad operation", fn("{name: f, operation: select, sql: SELECT 1}"), "functions[0].operation: must be one of query, execute, script"},
		{"missing operation", fn("{name: f, sql: SELECT 1}"), "functions[0].operation: is required"},
		{"missing arg type", fn("{name: f, operation: query, sql: 'SELECT $1', args: [{name: a}]}"), "functions[0].args[0].type: is required"},
		{"bad function name", fn("{name: ListOrders, operation: query, sql: SELECT 1}"), "functions[0].name: must be a lowercase letter followed by at most 62"},
		{"long function name", fn("{name: " + strings.Repeat("a", 64) + ", operation: query, sql: SELECT 1}"), "functions[0].name: must be a lowercase letter"},
		{"bad arg name", fn("{name: f, operation: query, sql: 'SELECT $1', args: [{name: 1a, type: string}]}"), "functions[0].args[0].name: must be a lowercase letter"},
		{"required not boolean", fn("{name: f, operation: query, sql: 'SELECT $1', args: [{name: a, type: string, required: 'yes'}]}"), "functions[0].args[0].required: must be true or false, not a string"},
		{"bad script slug", fn("{name: f, operation: script, script: My_Script}"), "functions[0].script: must be a script's slug"},
		{"timeout zero", q(", timeout_ms: 0"), "functions[0].timeout_ms: must be at least 1"},
		{"timeout too long", q(", timeout_ms: 30001"), "functions[0].timeout_ms: must be at most 30000"},
		{"timeout fraction", q(", timeout_ms: 1.5"), "functions[0].timeout_ms: must be an integer, not a number"},
		{"timeout text", q(", timeout_ms: '5000'"), "functions[0].timeout_ms: must be an integer, not a string"},
		{"max_rows too many", q(", max_rows: 10001"), "functions[0].max_rows: must be at most 10000"},
		{"empty sql", fn("{name: f, operation: query, sql: ''}"), "functions[0].sql: must not be empty"},
		{"long sql", fn("{name: f, operation: query, sql: '" + strings.Repeat("x", 20001) + "'}"), "functions[0].sql: must be at most 20000 characters"},
		{"too many functions", "name: A\nfunctions:\n" + many(101, "  - {name: f%d, operation: query, sql: SELECT 1}\n"), "functions: must have at most 100 items (it has 101)"},
		{"too many args", fn("{name: f, operation: script, script: s, args: [" + strings.TrimSuffix(many(33, "{name: a%d, type: json},"), ",") + "]}"), "functions[0].args: must have at most 32 items (it has 33)"},
		{"too many routes", "name: A\nroutes:\n" + many(101, "  - {path: /p%d, file: index.html}\n"), "routes: must have at most 100 items (it has 101)"},
		{"too many resources", "name: A\nresources: [" + strings.TrimSuffix(many(51, "r%d,"), ",") + "]\n", "resources: must have at most 50 items (it has 51)"},
		{"empty resource", "name: A\nresources: ['']\n", "resources[0]: must not be empty"},
		{"route path relative", "name: A\nroutes: [{path: orders, file: index.html}]\n", "routes[0].path: must start with / and have segments"},
		{"route path trailing slash", "name: A\nroutes: [{path: /orders/, file: index.html}]\n", "routes[0].path: must start with /"},
		{"route path star inside", "name: A\nroutes: [{path: /a/*/b, file: index.html}]\n", "routes[0].path: must start with /"},
		{"route path root", "name: A\nroutes: [{path: /, file: index.html}]\n", "routes[0].path: must start with /"},
		{"route missing file", "name: A\nroutes: [{path: /a}]\n", "routes[0].file: is required"},
		{"build missing command", "name: A\nbuild: {image: node, output: dist}\n", "build.command: is required"},
		{"build missing output", "name: A\nbuild: {image: node, command: make}\n", "build.output: is required"},
		{"build bad image", "name: A\nbuild: {image: 'node 22', command: make, output: dist}\n", "build.image: must be a container image reference, such as node:22-alpine"},
		{"build long command", "name: A\nbuild: {image: node, command: '" + strings.Repeat("x", 4001) + "', output: dist}\n", "build.command: must be at most 4000 characters"},
		{"env lower-case key", "name: A\nenv: {region: eu}\nbuild: {image: node, command: make, output: dist}\n", `env: key "region" must be upper-case letters, digits and _, not starting with a digit`},
		{"env key starts with digit", "name: A\nenv: {1X: eu}\n", `env: key "1X" must be upper-case`},
		{"env number value", "name: A\nenv: {PORT: 8080}\n", "env.PORT: must be a string, not a number (put the value in quotes)"},
		{"env boolean value", "name: A\nenv: {DEBUG: true}\n", "env.DEBUG: must be a string, not true or false (put the value in quotes)"},
		{"env long value", "name: A\nenv: {A: '" + strings.Repeat("x", 4001) + "'}\n", "env.A: must be at most 4000 characters"},
		{"env too many", "name: A\nenv:\n" + many(101, "  K%d: x\n"), "env: must have at most 100 entries (it has 101)"},
		{"env not a mapping", "name: A\nenv: [A]\n", "env: must be a mapping, not a list"},
		{"long csp", "name: A\ncsp: '" + strings.Repeat("x", 2001) + "'\n", "csp: must be at most 2000 characters"},

		// Rules beyond the schema.
		{"blank name", "name: '   '\n", "name: must not be blank"},
		{"duplicate function", "name: A\nfunctions:\n  - {name: f, operation: query, sql: SELECT 1}\n  - {name: f, operation: query, sql: SELECT 2}\n", "functions[1].name: f is also the name of functions[0]"},
		{"duplicate arg", fn("{name: f, operation: query, sql: 'SELECT $1, $2', args: [{name: a, type: string}, {name: a, type: integer}]}"), "functions[0].args[1].name: a is also the name of args[0]"},
		{"query without sql", fn("{name: f, operation: query}"), "functions[0].sql: is required for operation query"},
		{"execute without sql", fn("{name: f, operation: execute}"), "functions[0].sql: is required for operation execute"},
		{"script with sql", fn("{name: f, operation: script, script: s, sql: SELECT 1}"), "functions[0].sql: is not allowed for operation script"},
		{"script without script", fn("{name: f, operation: script}"), "functions[0].script: is required for operation script"},
		{"query with script", fn("{name: f, operation: query, sql: SELECT 1, script: s}"), "functions[0].script: is only allowed for operation script"},
		{"max_rows on execute", fn("{name: f, operation: execute, sql: DELETE FROM t, max_rows: 5}"), "functions[0].max_rows: is only allowed for operation query"},
		{"max_rows on script", fn("{name: f, operation: script, script: s, max_rows: 5}"), "functions[0].max_rows: is only allowed for operation query"},
		{"resource not listed", fn("{name: f, operation: query, sql: SELECT 1, resource: other}") + "resources: [db]\n", `functions[0].resource: "other" is not listed under resources`},
		{"resource without resources", fn("{name: f, operation: query, sql: SELECT 1, resource: db}"), `functions[0].resource: "db" is not listed under resources`},
		{"duplicate resource", "name: A\nresources: [db, wh, db]\n", `resources[2]: "db" is listed twice (also resources[0])`},
		{"placeholder above args", fn("{name: f, operation: query, sql: 'SELECT $1, $2', args: [{name: a, type: string}]}"), "functions[0].sql: uses $2 but the function declares 1 arg"},
		{"placeholder without args", fn("{name: f, operation: query, sql: 'SELECT $1'}"), "functions[0].sql: uses $1 but the function declares no args"},
		{"huge placeholder", fn("{name: f, operation: query, sql: 'SELECT $99999999999999999999999'}"), "functions[0].sql: uses a $ number too large but the function declares no args"},
		{"placeholder zero", fn("{name: f, operation: query, sql: 'SELECT $0, $1', args: [{name: a, type: string}]}"), "functions[0].sql: $0 is not a placeholder: they start at $1"},
		{"arg unused", fn("{name: f, operation: query, sql: 'SELECT $2', args: [{name: a, type: string}, {name: b, type: string}]}"), "functions[0].sql: never uses $1, args[0] (a)"},
		{"arg used only in a string", fn("{name: f, operation: query, sql: \"SELECT '$1'\", args: [{name: a, type: string}]}"), "functions[0].sql: never uses $1, args[0] (a)"},
		{"arg used only in a comment", fn("{name: f, operation: query, sql: \"SELECT 1 -- $1\", args: [{name: a, type: string}]}"), "functions[0].sql: never uses $1, args[0] (a)"},
		{"arg used only in a block comment", fn("{name: f, operation: query, sql: \"SELECT /* $1 */ 1\", args: [{name: a, type: string}]}"), "functions[0].sql: never uses $1, args[0] (a)"},
		{"arg used only in an identifier", fn("{name: f, operation: query, sql: 'SELECT \"$1\" FROM t', args: [{name: a, type: string}]}"), "functions[0].sql: never uses $1, args[0] (a)"},
		{"unterminated string", fn("{name: f, operation: query, sql: \"SELECT 'abc\"}"), "functions[0].sql: has an unterminated quoted string"},
		{"entry absolute", "name: A\nentry: /index.html\n", "entry: must be a relative path (no leading /)"},
		{"entry backslash", "name: A\nentry: 'pages\\index.html'\n", `entry: must separate its segments with /, not \`},
		{"entry empty segment", "name: A\nentry: pages//index.html\n", "entry: must not have empty segments"},
		{"entry trailing slash", "name: A\nentry: pages/\n", "entry: must not have empty segments"},
		{"entry dot dot", "name: A\nentry: ../index.html\n", "entry: must not contain . or .. segments"},
		{"entry dot", "name: A\nentry: ./index.html\n", "entry: must not contain . or .. segments"},
		{"entry empty", "name: A\nentry: ''\n", "entry: must not be empty"},
		{"route file outside", "name: A\nroutes: [{path: /a, file: a/../../x.html}]\n", "routes[0].file: must not contain . or .. segments"},
		{"route file absolute", "name: A\nroutes: [{path: /a, file: /etc/passwd}]\n", "routes[0].file: must be a relative path"},
		{"route path dot dot", "name: A\nroutes: [{path: /a/../b, file: a.html}]\n", "routes[0].path: must not contain . or .. segments"},
		{"duplicate route", "name: A\nroutes: [{path: /a, file: a.html}, {path: /a, file: b.html}]\n", "routes[1].path: /a is also routes[0].path"},
		{"build output dot", "name: A\nbuild: {image: node, command: make, output: .}\n", "build.output: must not contain . or .. segments"},
		{"build output absolute", "name: A\nbuild: {image: node, command: make, output: /dist}\n", "build.output: must be a relative path"},
		{"build output up", "name: A\nbuild: {image: node, command: make, output: ../dist}\n", "build.output: must not contain . or .. segments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.yaml)
			wantProblem(t, err, tc.want)
		})
	}
}

// wantProblem asserts err is an *Error with a problem containing want.
func wantProblem(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %q", want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *Error", err, err)
	}
	for _, p := range e.Problems {
		if strings.Contains(p, want) {
			return
		}
	}
	t.Fatalf("problems %q\nhave none containing %q", e.Problems, want)
}

func TestParseAccepts(t *testing.T) {
	fn := func(body string) string { return "name: Orders\nfunctions:\n  - " + body + "\n" }
	tests := []struct{ name, yaml string }{
		{"route catch-all", "name: A\nroutes: [{path: /*, file: index.html}]\n"},
		{"route path characters", "name: A\nroutes: [{path: /a.b/c_d/e~f-g/*, file: index.html}]\n"},
		{"dot files are files", "name: A\nentry: .well-known/index.html\n"},
		{"image with registry and digest", "name: A\nbuild: {image: 'ghcr.io/acme/node:22@sha256:0123abcd', command: make, output: build/out}\n"},
		{"timestamp-like text", "name: 2024-01-01\n"},
		{"tab and newline in multi-line fields", "name: A\ndescription: \"a\\tb\\nc\"\nbuild: {image: node, command: \"a\\tb\\nc\", output: dist}\n"},
		{"max sizes", "name: " + strings.Repeat("é", 100) + "\ndescription: " + strings.Repeat("x", 1000) + "\n"},
		{"placeholder reused", fn("{name: f, operation: query, sql: 'SELECT $1 WHERE $1 > 0', args: [{name: a, type: integer}]}")},
		{"placeholders out of order", fn("{name: f, operation: query, sql: 'SELECT $2::int, $1', args: [{name: a, type: string}, {name: b, type: integer}]}")},
		{"placeholders in strings and comments ignored", fn("{name: f, operation: query, sql: \"SELECT $1, '$2 it''s', \\\"$3\\\" -- $4\\n /* $5 /* $6 */ */ $$ $7 $$, $t$ $8 $t$, E'\\\\' $9', a$1\", args: [{name: a, type: string}]}")},
		{"script with args and resource", fn("{name: f, operation: script, script: s, resource: db, args: [{name: a, type: json}]}") + "resources: [db]\n"},
		{"empty lists", "name: A\nroutes: []\nfunctions: []\nresources: []\nenv: {}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(tc.yaml); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseSeveralProblems(t *testing.T) {
	// Reported in document order, not alphabetically.
	_, err := Parse("zeta: 1\nname: A\nalpha: 2\nfunctions:\n  - {name: f, operation: query}\n")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v", err)
	}
	want := []string{"zeta: unknown field", "alpha: unknown field"}
	if !reflect.DeepEqual(e.Problems, want) {
		t.Fatalf("problems = %q, want %q", e.Problems, want)
	}
	if got := e.Error(); got != "zeta: unknown field; alpha: unknown field" {
		t.Fatalf("Error() = %q", got)
	}

	// Rules beyond the schema are reported together too.
	_, err = Parse("name: A\nentry: /x\nfunctions:\n  - {name: f, operation: query}\n  - {name: f, operation: script, script: s}\n")
	if !errors.As(err, &e) {
		t.Fatalf("err = %v", err)
	}
	want = []string{"entry: must be a relative path (no leading /)", "functions[0].sql: is required for operation query", "functions[1].name: f is also the name of functions[0]"}
	if !reflect.DeepEqual(e.Problems, want) {
		t.Fatalf("problems = %q, want %q", e.Problems, want)
	}
}

func TestErrorStaysShort(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: A\nfunctions:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  - {name: function_with_a_rather_long_name_%d, operation: query, sql: 'SELECT $3', args: [{name: first_argument, type: string}, {name: second_argument, type: string}]}\n", i)
	}
	_, err := Parse(b.String())
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v", err)
	}
	msg := e.Error()
	if len(msg) > maxMessage {
		t.Fatalf("message is %d bytes: %s", len(msg), msg)
	}
	last := e.Problems[len(e.Problems)-1]
	if !strings.HasPrefix(last, "and ") || !strings.HasSuffix(last, " more problems") {
		t.Fatalf("last problem = %q", last)
	}
	if !strings.HasPrefix(e.Problems[0], "functions[0].sql: uses $3") {
		t.Fatalf("first problem = %q", e.Problems[0])
	}

	// A last problem needs no room to count the rest.
	of190 := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat(string(rune('a'+i)), 190)
		}
		return out
	}
	for n, last := range map[int]string{5: strings.Repeat("e", 190), 6: "and 1 more problem", 7: "and 2 more problems"} {
		e := newError(of190(n))
		if got := e.Problems[len(e.Problems)-1]; got != last || len(e.Problems) != 6 && n > 5 {
			t.Errorf("%d problems: %d kept, last %q", n, len(e.Problems), got)
		}
		if len(e.Error()) > maxMessage {
			t.Errorf("%d problems: message of %d bytes", n, len(e.Error()))
		}
	}

	long := newError([]string{strings.Repeat("é", 500)})
	if n := len([]rune(long.Problems[0])); n != maxProblemChars {
		t.Fatalf("a long problem has %d characters", n)
	}
}

func TestFunctionLookup(t *testing.T) {
	m := fullManifest()
	f, ok := m.Function("set_total")
	if !ok || f != &m.Functions[1] {
		t.Fatalf("Function(set_total) = %v, %v", f, ok)
	}
	if f, ok := m.Function("nope"); ok || f != nil {
		t.Fatalf("Function(nope) = %v, %v", f, ok)
	}
}

func TestPublic(t *testing.T) {
	m := fullManifest()
	for i := range m.Functions {
		f := &m.Functions[i]
		info := f.Public()
		b, err := json.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"sql", "script", "resource", "timeout_ms", "max_rows"} {
			if _, ok := fields[k]; ok {
				t.Fatalf("%s: Public shows %s: %s", f.Name, k, b)
			}
		}
		if info.Name != f.Name || info.Operation != f.Operation || !reflect.DeepEqual(info.Args, f.Args) {
			t.Fatalf("%s: Public() = %+v", f.Name, info)
		}
	}
	f := &m.Functions[2]
	b, _ := json.Marshal(f.Public())
	want := `{"name":"report","operation":"script","args":[{"name":"month","type":"string","required":true},{"name":"options","type":"json","required":false},{"name":"dry_run","type":"boolean","required":true}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	info := f.Public()
	info.Args[0].Name = "changed"
	if f.Args[0].Name != "month" {
		t.Fatal("Public shares the function's args")
	}
}
