// Package manifest reads an app's manifest: YAML that declares the app's
// name, entry page, routes, build step, backend functions (name,
// operation, typed positional arguments), the resources they may use, and
// environment.
//
// Parse checks the YAML against the published JSON Schema (Schema), then
// the rules a schema cannot express: unique names, which fields go with
// which operation, that each SQL statement's placeholders $1..$n match the
// declared arguments, normalised relative paths. Every problem names its
// field's path, as in functions[2].args[0].type.
//
//	name: Orders
//	entry: index.html
//	routes:
//	  - {path: /orders/*, file: index.html}
//	functions:
//	  - name: list_orders
//	    operation: query
//	    sql: SELECT id, total FROM orders WHERE customer = $1 LIMIT 50
//	    args:
//	      - {name: customer, type: string}
//	resources: [warehouse_db]
//	env: {REGION: eu}
package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// MaxBytes is the largest manifest Parse reads.
const MaxBytes = 64 << 10

// Defaults filled in by Parse.
const (
	DefaultEntry     = "index.html"
	DefaultTimeoutMS = 5000
	DefaultMaxRows   = 1000
)

// Operations of a function.
const (
	OpQuery   = "query"   // runs sql, returns rows
	OpExecute = "execute" // runs sql, returns the number of rows affected
	OpScript  = "script"  // runs a saved script
)

// Types of a function's argument.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeJSON    = "json" // any JSON value, bound as its text
)

// Manifest is a parsed, valid manifest, its defaults filled in.
type Manifest struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Entry       string            `json:"entry" doc:"The page served at the app's root"`
	Routes      []Route           `json:"routes"`
	Build       *Build            `json:"build,omitempty"`
	Functions   []Function        `json:"functions"`
	Resources   []string          `json:"resources" doc:"Workspace resources the functions may use, by name"`
	Env         map[string]string `json:"env" doc:"Non-secret environment given to the app"`
	CSP         string            `json:"csp,omitempty" doc:"Extra Content-Security-Policy for the served pages"`
}

// Route serves a file at extra paths (a single-page app's deep links).
// A path ending in /* matches everything below it.
type Route struct {
	Path string `json:"path"`
	File string `json:"file"`
}

// Build is a front-end build step run in a container: the command runs in
// the source directory and leaves the files to serve in Output.
type Build struct {
	Image   string `json:"image"`
	Command string `json:"command"`
	Output  string `json:"output"`
}

// Function is a backend function the app's pages may call. Query and
// execute run SQL on Resource (empty: the app's own database) with Args as
// $1..$n; script runs the saved script whose slug is Script. MaxRows is
// set for query only.
type Function struct {
	Name      string `json:"name"`
	Operation string `json:"operation" enum:"query,execute,script"`
	SQL       string `json:"sql,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Script    string `json:"script,omitempty"`
	Args      []Arg  `json:"args"`
	TimeoutMS int    `json:"timeout_ms"`
	MaxRows   int    `json:"max_rows,omitempty"`
}

// Arg is a function's positional argument.
type Arg struct {
	Name     string `json:"name"`
	Type     string `json:"type" enum:"string,integer,number,boolean,json"`
	Required bool   `json:"required"`
}

// FunctionInfo is what callers may see of a function: never its SQL or
// script.
type FunctionInfo struct {
	Name      string `json:"name"`
	Operation string `json:"operation"`
	Args      []Arg  `json:"args"`
}

// Error lists what is wrong with a manifest (or with arguments sent to a
// function). It is the caller's fault: a bad request.
type Error struct {
	Problems []string
}

func (e *Error) Error() string { return strings.Join(e.Problems, "; ") }

// An Error's message stays under maxMessage bytes: each problem is cut
// to maxProblemChars characters, and the ones that do not fit are counted.
const (
	maxMessage      = 1000
	maxProblemChars = 200
)

// newError keeps the problems that fit, each shortened, and counts the
// rest.
func newError(problems []string) *Error {
	const reserve = len("; and 9999 more problems")
	var out []string
	size := 0
	for i, p := range problems {
		if r := []rune(p); len(r) > maxProblemChars {
			p = string(r[:maxProblemChars-1]) + "…"
		}
		need := len(p)
		if i < len(problems)-1 {
			need += reserve // room to say what is left out
		}
		if size+need > maxMessage {
			if left := len(problems) - i; left == 1 {
				out = append(out, "and 1 more problem")
			} else {
				out = append(out, fmt.Sprintf("and %d more problems", left))
			}
			break
		}
		out = append(out, p)
		size += len(p) + len("; ")
	}
	return &Error{Problems: out}
}

// Parse reads and checks a manifest. Its error is an *Error listing the
// problems found.
func Parse(yamlText string) (*Manifest, error) {
	if len(yamlText) > MaxBytes {
		return nil, newError([]string{fmt.Sprintf("manifest: too large: %d bytes, at most %d (64 KiB)", len(yamlText), MaxBytes)})
	}
	v, t := parseTree(yamlText)
	if len(t.problems) > 0 {
		return nil, newError(t.problems)
	}
	if problems := validate(v, t); len(problems) > 0 {
		return nil, newError(problems)
	}
	raw, err := decodeRaw(v)
	if err != nil {
		return nil, newError([]string{"manifest: " + err.Error()})
	}
	if problems := check(raw); len(problems) > 0 {
		return nil, newError(problems)
	}
	return build(raw), nil
}

// Function finds a function by name.
func (m *Manifest) Function(name string) (*Function, bool) {
	for i := range m.Functions {
		if m.Functions[i].Name == name {
			return &m.Functions[i], true
		}
	}
	return nil, false
}

// Public is what callers may see of the function.
func (f *Function) Public() FunctionInfo {
	args := make([]Arg, len(f.Args))
	copy(args, f.Args)
	return FunctionInfo{Name: f.Name, Operation: f.Operation, Args: args}
}

// rawManifest is the manifest as written: a nil pointer is a field left
// out, to be defaulted.
type rawManifest struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Entry       string            `json:"entry"`
	Routes      []Route           `json:"routes"`
	Build       *Build            `json:"build"`
	Functions   []rawFunction     `json:"functions"`
	Resources   []string          `json:"resources"`
	Env         map[string]string `json:"env"`
	CSP         string            `json:"csp"`
}

type rawFunction struct {
	Name      string   `json:"name"`
	Operation string   `json:"operation"`
	SQL       *string  `json:"sql"`
	Resource  string   `json:"resource"`
	Script    *string  `json:"script"`
	Args      []rawArg `json:"args"`
	TimeoutMS *int     `json:"timeout_ms"`
	MaxRows   *int     `json:"max_rows"`
}

type rawArg struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required *bool  `json:"required"`
}

// decodeRaw decodes the schema-valid values (through JSON, so numbers
// are read as the schema read them).
func decodeRaw(v map[string]any) (*rawManifest, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var raw rawManifest
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	return &raw, nil
}
