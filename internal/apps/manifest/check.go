package manifest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// check applies the rules the schema cannot express to a schema-valid
// manifest. Each problem is "path: message".
func check(m *rawManifest) []string {
	var problems []string
	add := func(path, format string, a ...any) {
		problems = append(problems, path+": "+fmt.Sprintf(format, a...))
	}

	if strings.TrimSpace(m.Name) == "" {
		add("name", "must not be blank")
	}
	if m.Entry != "" {
		if msg := relPathProblem(m.Entry); msg != "" {
			add("entry", "%s", msg)
		}
	}
	routes := map[string]int{}
	for i, r := range m.Routes {
		at := fmt.Sprintf("routes[%d]", i)
		if slices.ContainsFunc(strings.Split(r.Path, "/"), func(s string) bool { return s == "." || s == ".." }) {
			add(at+".path", "must not contain . or .. segments")
		}
		if j, dup := routes[r.Path]; dup {
			add(at+".path", "%s is also routes[%d].path", clip(r.Path), j)
		} else {
			routes[r.Path] = i
		}
		if msg := relPathProblem(r.File); msg != "" {
			add(at+".file", "%s", msg)
		}
	}
	if m.Build != nil {
		if msg := relPathProblem(m.Build.Output); msg != "" {
			add("build.output", "%s", msg)
		}
	}

	resources := map[string]int{}
	for i, r := range m.Resources {
		if j, dup := resources[r]; dup {
			add(fmt.Sprintf("resources[%d]", i), "%s is listed twice (also resources[%d])", clip(strconv.Quote(r)), j)
		} else {
			resources[r] = i
		}
	}

	functions := map[string]int{}
	for i, f := range m.Functions {
		at := fmt.Sprintf("functions[%d]", i)
		if j, dup := functions[f.Name]; dup {
			add(at+".name", "%s is also the name of functions[%d]", f.Name, j)
		} else {
			functions[f.Name] = i
		}
		args := map[string]int{}
		for k, a := range f.Args {
			if j, dup := args[a.Name]; dup {
				add(fmt.Sprintf("%s.args[%d].name", at, k), "%s is also the name of args[%d]", a.Name, j)
			} else {
				args[a.Name] = k
			}
		}
		switch f.Operation {
		case OpQuery, OpExecute:
			if f.SQL == nil {
				add(at+".sql", "is required for operation %s", f.Operation)
			}
			if f.Script != nil {
				add(at+".script", "is only allowed for operation script")
			}
		case OpScript:
			if f.Script == nil {
				add(at+".script", "is required for operation script")
			}
			if f.SQL != nil {
				add(at+".sql", "is not allowed for operation script")
			}
		}
		if f.MaxRows != nil && f.Operation != OpQuery {
			add(at+".max_rows", "is only allowed for operation query")
		}
		if f.Resource != "" {
			if _, ok := resources[f.Resource]; !ok {
				add(at+".resource", "%s is not listed under resources", clip(strconv.Quote(f.Resource)))
			}
		}
		if f.SQL != nil {
			for _, msg := range placeholderProblems(*f.SQL, f.Args) {
				add(at+".sql", "%s", msg)
			}
		}
	}
	return problems
}

// placeholderProblems checks that the SQL's placeholders are exactly
// $1..$n for n declared arguments, each used.
func placeholderProblems(sql string, args []rawArg) []string {
	used, err := placeholders(sql)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	seen := make([]bool, len(args))
	for _, n := range used {
		switch {
		case n == 0:
			problems = append(problems, "$0 is not a placeholder: they start at $1")
		case n > len(args):
			num := "$" + strconv.Itoa(n)
			if n == math.MaxInt {
				num = "a $ number too large"
			}
			problems = append(problems, fmt.Sprintf("uses %s but the function declares %s", num, countArgs(len(args))))
		default:
			seen[n-1] = true
		}
	}
	for i, ok := range seen {
		if !ok {
			problems = append(problems, fmt.Sprintf("never uses $%d, args[%d] (%s)", i+1, i, args[i].Name))
		}
	}
	return problems
}

// countArgs words a number of arguments: "no args", "1 arg", "2 args".
func countArgs(n int) string {
	switch n {
	case 0:
		return "no args"
	case 1:
		return "1 arg"
	}
	return strconv.Itoa(n) + " args"
}

// relPathProblem says what makes p not a relative, normalised,
// slash-separated path, or "".
func relPathProblem(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return "must be a relative path (no leading /)"
	case strings.Contains(p, `\`):
		return `must separate its segments with /, not \`
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return "must not have empty segments (// or a trailing /)"
		case ".", "..":
			return "must not contain . or .. segments"
		}
	}
	return ""
}

// build makes the manifest of a checked raw one, filling in defaults.
func build(m *rawManifest) *Manifest {
	out := &Manifest{
		Name:        strings.TrimSpace(m.Name),
		Description: m.Description,
		Entry:       m.Entry,
		Routes:      m.Routes,
		Build:       m.Build,
		Functions:   make([]Function, 0, len(m.Functions)),
		Resources:   m.Resources,
		Env:         m.Env,
		CSP:         m.CSP,
	}
	if out.Entry == "" {
		out.Entry = DefaultEntry
	}
	if out.Routes == nil {
		out.Routes = []Route{}
	}
	if out.Resources == nil {
		out.Resources = []string{}
	}
	if out.Env == nil {
		out.Env = map[string]string{}
	}
	for _, f := range m.Functions {
		fn := Function{
			Name:      f.Name,
			Operation: f.Operation,
			Resource:  f.Resource,
			Args:      make([]Arg, 0, len(f.Args)),
			TimeoutMS: DefaultTimeoutMS,
		}
		if f.SQL != nil {
			fn.SQL = *f.SQL
		}
		if f.Script != nil {
			fn.Script = *f.Script
		}
		if f.TimeoutMS != nil {
			fn.TimeoutMS = *f.TimeoutMS
		}
		if f.Operation == OpQuery {
			fn.MaxRows = DefaultMaxRows
			if f.MaxRows != nil {
				fn.MaxRows = *f.MaxRows
			}
		}
		for _, a := range f.Args {
			fn.Args = append(fn.Args, Arg{Name: a.Name, Type: a.Type, Required: a.Required == nil || *a.Required})
		}
		out.Functions = append(out.Functions, fn)
	}
	return out
}
