package n8nimport

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"slipway/internal/workflows"
)

// IF and Switch conditions become gate conditions. n8n has two forms: the
// older typed lists (IF 1, Switch 1 to 3: value1, operation, value2 per
// data type) and the filter conditions of IF 2 and Switch 3
// ({leftValue, rightValue, operator: {type, operation}} joined by a
// combinator).

func (x *nodeCtx) ifNode() *built {
	p := x.n.params
	var cond string
	var err error
	if x.n.version >= 2 {
		cond, err = x.filter("its conditions", obj(p, "conditions"), boolean(obj(p, "options"), "ignoreCase"))
	} else {
		cond, err = x.typedConditions(obj(p, "conditions"), str(p, "combineOperation", "all"))
	}
	return x.single("gate", map[string]any{"condition": x.condition(cond, err, p["conditions"])})
}

// condition checks a built condition; one that cannot be built or does not
// compile becomes a string, which fails the gate when it runs, and a
// warning.
func (x *nodeCtx) condition(cond string, err error, raw any) string {
	if err == nil {
		err = x.c.checkExpr(cond)
	}
	if err == nil {
		return cond
	}
	text, _ := json.Marshal(raw)
	x.warn("its condition could not be translated (%s), so the gate fails until it is rewritten: %s", reason(err), snippet(string(text)))
	return quoteExpr("n8n condition: " + string(text))
}

// typedConditions reads IF 1's conditions: lists per data type, all or any
// of which must hold.
func (x *nodeCtx) typedConditions(conds map[string]any, combine string) (string, error) {
	var parts []string
	for _, typ := range []string{"boolean", "dateTime", "number", "string"} {
		for _, c := range list(conds, typ) {
			e, err := x.typedCondition(typ, c["value1"], str(c, "operation", defaultOperation(typ)), c["value2"])
			if err != nil {
				return "", err
			}
			parts = append(parts, e)
		}
	}
	for _, typ := range sortedKeys(conds) {
		switch typ {
		case "boolean", "dateTime", "number", "string":
		default:
			return "", untranslatable("conditions of type %s", typ)
		}
	}
	return join(parts, combine == "any"), nil
}

func defaultOperation(typ string) string {
	switch typ {
	case "number":
		return "smaller"
	case "dateTime":
		return "after"
	}
	return "equal"
}

func defaultValue(typ string) any {
	switch typ {
	case "number":
		return 0.0
	case "boolean":
		return false
	}
	return ""
}

// join combines conditions with && (or || when any).
func join(parts []string, any bool) string {
	if len(parts) == 0 {
		return "true"
	}
	if len(parts) == 1 {
		return parts[0]
	}
	op := " && "
	if any {
		op = " || "
	}
	return "(" + strings.Join(parts, op) + ")"
}

// typedCondition is one condition of the older form.
func (x *nodeCtx) typedCondition(typ string, v1 any, op string, v2 any) (string, error) {
	if v1 == nil {
		v1 = defaultValue(typ)
	}
	if v2 == nil {
		v2 = defaultValue(typ)
	}
	a := x.typedExpr("a condition's first value", v1, typ)
	b := x.typedExpr("a condition's second value", v2, typ)
	switch op {
	case "equal":
		return "(" + a + " == " + b + ")", nil
	case "notEqual":
		return "(" + a + " != " + b + ")", nil
	case "isEmpty":
		if typ == "string" {
			return "(" + a + ` == nil || ` + a + ` == "")`, nil
		}
		return "(" + a + " == nil)", nil
	case "isNotEmpty":
		if typ == "string" {
			return "!(" + a + ` == nil || ` + a + ` == "")`, nil
		}
		return "(" + a + " != nil)", nil
	}
	switch typ {
	case "string":
		switch op {
		case "contains":
			return "(" + asString(a) + " contains " + asString(b) + ")", nil
		case "notContains":
			return "!(" + asString(a) + " contains " + asString(b) + ")", nil
		case "startsWith", "endsWith":
			return "(" + asString(a) + " " + op + " " + asString(b) + ")", nil
		case "notStartsWith", "notEndsWith":
			return "!(" + asString(a) + " " + lowerFirst(strings.TrimPrefix(op, "not")) + " " + asString(b) + ")", nil
		case "regex", "notRegex":
			re, err := x.regex(v2, b)
			if err != nil {
				return "", err
			}
			e := "(" + asString(a) + " matches " + re + ")"
			if op == "notRegex" {
				e = "!" + e
			}
			return e, nil
		}
	case "number":
		if cmp, ok := map[string]string{"smaller": "<", "smallerEqual": "<=", "larger": ">", "largerEqual": ">="}[op]; ok {
			return "(" + a + " " + cmp + " " + b + ")", nil
		}
	case "dateTime":
		switch op {
		case "after":
			return "(date(" + a + ") > date(" + b + "))", nil
		case "before":
			return "(date(" + a + ") < date(" + b + "))", nil
		}
	}
	return "", untranslatable("the %s operation %s", typ, quoted(op))
}

// asString makes an operand a string for a string operation; literals
// already are.
func asString(e string) string {
	if stringLiteral.MatchString(e) {
		return e
	}
	return "string(" + e + ` ?? "")`
}

var stringLiteral = regexp.MustCompile(`^"(?:[^"\\]|\\.)*"$`)

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// regex is the pattern of a regex condition: JavaScript's /pattern/flags
// becomes an RE2 pattern with the flags inline.
func (x *nodeCtx) regex(raw any, e string) (string, error) {
	s, ok := raw.(string)
	if !ok {
		return e, nil
	}
	if _, expr := expressionMode(raw); expr {
		return e, nil // computed at run time, as it is
	}
	pattern, flags := s, ""
	if strings.HasPrefix(s, "/") {
		if end := strings.LastIndex(s, "/"); end > 0 {
			pattern, flags = s[1:end], s[end+1:]
		}
	}
	prefix := ""
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's':
			prefix += string(f)
		case 'g', 'u', 'y', 'd':
		default:
			return "", untranslatable("the regular expression flag %q", f)
		}
	}
	if prefix != "" {
		pattern = "(?" + prefix + ")" + pattern
	}
	return quoteExpr(pattern), nil
}

// filter reads filter conditions (IF 2, Switch 3): all (and) or any (or)
// of them must hold.
func (x *nodeCtx) filter(field string, conds map[string]any, ignoreCase bool) (string, error) {
	opts := obj(conds, "options")
	fold := ignoreCase || opts["caseSensitive"] == false
	var parts []string
	for _, c := range list(conds, "conditions") {
		op := obj(c, "operator")
		e, err := x.filterCondition(str(op, "type", "string"), str(op, "operation", "equals"), c["leftValue"], c["rightValue"], fold)
		if err != nil {
			return "", err
		}
		parts = append(parts, e)
	}
	return join(parts, str(conds, "combinator", "and") == "or"), nil
}

// filterCondition is one filter condition.
func (x *nodeCtx) filterCondition(typ, op string, left, right any, fold bool) (string, error) {
	if left == nil {
		left = ""
	}
	a := x.typedExpr("a condition's left value", left, typ)
	b := func() string { return x.typedExpr("a condition's right value", right, typ) }
	switch op {
	case "exists":
		return "(" + a + " != nil)", nil
	case "notExists":
		return "(" + a + " == nil)", nil
	case "empty", "notEmpty":
		var e string
		switch typ {
		case "string":
			e = "(" + a + ` == nil || ` + a + ` == "")`
		case "array", "object":
			e = "(" + a + " == nil || len(" + a + ") == 0)"
		default:
			e = "(" + a + " == nil)"
		}
		if op == "notEmpty" {
			e = "!" + e
		}
		return e, nil
	}
	switch typ {
	case "string":
		l, r := asString(a), asString(b())
		if fold {
			l, r = "lower("+l+")", "lower("+r+")"
		}
		switch op {
		case "equals":
			return "(" + l + " == " + r + ")", nil
		case "notEquals":
			return "(" + l + " != " + r + ")", nil
		case "contains", "startsWith", "endsWith":
			return "(" + l + " " + op + " " + r + ")", nil
		case "notContains", "notStartsWith", "notEndsWith":
			return "!(" + l + " " + lowerFirst(strings.TrimPrefix(op, "not")) + " " + r + ")", nil
		case "regex", "notRegex":
			re, err := x.regex(right, r)
			if err != nil {
				return "", err
			}
			if fold && !strings.HasPrefix(re, `"(?`) {
				re = `"(?i)" + ` + re
			}
			e := "(" + asString(a) + " matches " + re + ")"
			if op == "notRegex" {
				e = "!" + e
			}
			return e, nil
		}
	case "number", "boolean":
		cmp := map[string]string{"equals": "==", "notEquals": "!=", "gt": ">", "lt": "<", "gte": ">=", "lte": "<="}
		if typ == "boolean" {
			switch op {
			case "true":
				return "(" + a + " == true)", nil
			case "false":
				return "(" + a + " == false)", nil
			}
			cmp = map[string]string{"equals": "==", "notEquals": "!="}
		}
		if c, ok := cmp[op]; ok {
			return "(" + a + " " + c + " " + b() + ")", nil
		}
	case "dateTime":
		cmp := map[string]string{"equals": "==", "notEquals": "!=", "after": ">", "before": "<", "afterOrEquals": ">=", "beforeOrEquals": "<="}
		if c, ok := cmp[op]; ok {
			return "(date(" + a + ") " + c + " date(" + b() + "))", nil
		}
	case "array":
		lengths := map[string]string{"lengthEquals": "==", "lengthNotEquals": "!=", "lengthGt": ">", "lengthLt": "<", "lengthGte": ">=", "lengthLte": "<="}
		if c, ok := lengths[op]; ok {
			return "(len(" + a + ") " + c + " " + x.typedExpr("a condition's right value", right, "number") + ")", nil
		}
		switch op {
		case "contains":
			return "(" + x.expr("a condition's right value", right) + " in " + a + ")", nil
		case "notContains":
			return "!(" + x.expr("a condition's right value", right) + " in " + a + ")", nil
		}
	}
	return "", untranslatable("the %s operation %s", typ, quoted(op))
}

// ---- Switch ----

// rule is one way out of a switch: its condition and the n8n output it
// sends to.
type rule struct {
	cond   string
	output int
}

func (x *nodeCtx) switchNode() *built {
	p := x.n.params
	var rules []rule
	fallback := -1
	options := obj(p, "options")
	rulesObj := obj(p, "rules")
	switch {
	case str(p, "mode", "rules") == "expression":
		outputs := int(num(p, "numberOutputs", num(p, "outputsAmount", 4)))
		outputs = min(max(outputs, 1), 64)
		e := x.expr("the output index", p["output"])
		for i := range outputs {
			rules = append(rules, rule{x.condition(fmt.Sprintf("((%s) == %d)", e, i), nil, p["output"]), i})
		}
	case rulesObj["values"] != nil:
		// Switch 3: filter conditions, one output per rule.
		values := list(rulesObj, "values")
		for i, r := range values {
			cond, err := x.filter(fmt.Sprintf("rule %d", i+1), obj(r, "conditions"), boolean(options, "ignoreCase"))
			rules = append(rules, rule{x.condition(cond, err, r["conditions"]), i})
		}
		switch fb := options["fallbackOutput"].(type) {
		case string:
			if fb == "extra" {
				fallback = len(values)
			}
		case float64:
			fallback = int(fb)
		}
		if boolean(options, "allMatchingOutputs") {
			x.warn("it sends items to all matching outputs in n8n; here only the first matching rule's output fires")
		}
	default:
		// Switch 1 and 2: one value compared by each rule.
		typ := str(p, "dataType", "number")
		for i, r := range list(rulesObj, "rules") {
			out := i
			if x.n.version < 3 {
				out = int(num(r, "output", float64(i)))
			}
			cond, err := x.typedCondition(typ, p["value1"], str(r, "operation", defaultOperation(typ)), r["value2"])
			rules = append(rules, rule{x.condition(cond, err, r), out})
		}
		if x.n.version < 3 {
			fallback = int(num(p, "fallbackOutput", -1))
		} else {
			switch fb := options["fallbackOutput"].(type) {
			case string:
				if fb == "last" {
					fallback = len(rules)
				}
			case float64:
				fallback = int(fb)
			}
		}
	}
	if len(rules) == 0 {
		x.warn("it has no rules; it was imported as a pass-through to its fallback output")
		b := x.passThrough()
		b.outs = map[int][]endpoint{}
		if fallback >= 0 {
			b.outs[fallback] = []endpoint{{x.n.key, workflows.HandleOut}}
		}
		return b
	}
	if len(rules) > 1 {
		x.warn("its %d rules became a chain of gates: each rule's gate goes to its output when true and to the next rule when false", len(rules))
	}

	b := &built{entry: x.n.key, outs: map[int][]endpoint{}}
	for i, r := range rules {
		key := x.n.key
		if i > 0 {
			key = x.c.uniqueKey(fmt.Sprintf("%s_rule%d", x.n.key, i+1), x.n)
		}
		pos := workflows.Position{X: x.n.pos.X, Y: clampCoord(x.n.pos.Y + float64(i)*100)}
		b.nodes = append(b.nodes, workflows.NodeInput{Key: key, Kind: "gate", Config: map[string]any{"condition": r.cond}, Position: &pos})
		if r.output >= 0 {
			b.outs[r.output] = append(b.outs[r.output], endpoint{key, workflows.HandleTrue})
		}
		if i > 0 {
			b.edges = append(b.edges, workflows.EdgeInput{Source: b.nodes[i-1].Key, SourceHandle: workflows.HandleFalse, Target: key})
		}
	}
	if fallback >= 0 {
		last := b.nodes[len(b.nodes)-1].Key
		b.outs[fallback] = append(b.outs[fallback], endpoint{last, workflows.HandleFalse})
	}
	return b
}
