package n8nimport

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"slipway/internal/workflows"
)

// build converts one n8n node.
func (x *nodeCtx) build() *built {
	n := x.n
	if n.disabled {
		x.warn("it is disabled in n8n, so it was imported as a pass-through")
		b := x.passThrough()
		b.allOut = true
		return b
	}
	switch n.typ {
	case typeSet:
		return x.set()
	case typeIf:
		return x.ifNode()
	case typeSwitch:
		return x.switchNode()
	case typeHTTP:
		return x.http()
	case typeCode, typeFunction, typeFuncItem:
		return x.code()
	case typeMerge:
		return x.merge()
	case typeWait:
		return x.wait()
	case typeRespond:
		return x.respond()
	case typeNoOp:
		return x.passThrough()
	}
	if isTriggerType(n.typ) {
		x.warn("this trigger has no equivalent here; it was imported as a pass-through placeholder, so what follows it runs when the workflow is started another way (the API, a webhook or a schedule)")
	} else {
		x.warn("this node type has no equivalent here; it was imported as a pass-through placeholder that hands its input on, so rebuild what it did")
	}
	b := x.passThrough()
	b.allOut = true
	return b
}

// single is a conversion to one node whose n8n output 0 is its success
// handle (out, or a gate's true) and, for kinds with an error handle, whose
// failures follow n8n's "on error" setting.
func (x *nodeCtx) single(kind string, config map[string]any) *built {
	pos := x.n.pos
	b := &built{entry: x.n.key, outs: map[int][]endpoint{},
		nodes: []workflows.NodeInput{{Key: x.n.key, Kind: kind, Config: config, Position: &pos}}}
	switch kind {
	case "gate":
		b.outs[0] = []endpoint{{x.n.key, workflows.HandleTrue}}
		b.outs[1] = []endpoint{{x.n.key, workflows.HandleFalse}}
	case "end":
		b.through = true
	default:
		b.outs[0] = []endpoint{{x.n.key, workflows.HandleOut}}
		x.errorOutput(b, x.n.key, 1)
	}
	return b
}

// errorOutput wires failures as n8n's "on error" setting says: to the
// regular output, or to an extra error output at index errIndex.
func (x *nodeCtx) errorOutput(b *built, key string, errIndex int) {
	switch x.n.onError {
	case "continueRegularOutput":
		b.outs[0] = append(b.outs[0], endpoint{key, workflows.HandleError})
	case "continueErrorOutput":
		b.outs[errIndex] = append(b.outs[errIndex], endpoint{key, workflows.HandleError})
	}
}

// passThrough is a transform whose output is its input.
func (x *nodeCtx) passThrough() *built {
	return x.single("transform", map[string]any{"expression": x.sc.json})
}

// ---- Set ----

type assignment struct{ name, expr string }

func (x *nodeCtx) set() *built {
	p := x.n.params
	var fields []assignment
	index := map[string]int{}
	add := func(name string, value any, typ string) {
		e := x.typedExpr(fmt.Sprintf("the field %s", quoted(name)), value, typ)
		if i, ok := index[name]; ok {
			fields[i].expr = e // a later assignment wins, as in n8n
			return
		}
		index[name] = len(fields)
		fields = append(fields, assignment{name, e})
	}
	includeOther := false
	options := obj(p, "options")
	if x.n.version >= 3 {
		if str(p, "mode", "manual") == "raw" {
			e := x.jsonExpr("the JSON output", p["jsonOutput"])
			if x.setInclude(p) {
				e = fmt.Sprintf("fromPairs(concat(toPairs(%s ?? {}), toPairs(%s ?? {})))", x.sc.json, e)
				if x.c.checkExpr(e) != nil {
					x.warn("its input fields could not be kept beside the JSON output")
					e = x.jsonExpr("the JSON output", p["jsonOutput"])
				}
			}
			return x.single("transform", map[string]any{"expression": e})
		}
		for _, a := range list(obj(p, "assignments"), "assignments") {
			add(str(a, "name", ""), a["value"], str(a, "type", "string"))
		}
		// 3.0 to 3.2 kept typed values under fields.values.
		for _, f := range list(obj(p, "fields"), "values") {
			typ := str(f, "type", "stringValue")
			add(str(f, "name", ""), f[typ], strings.TrimSuffix(typ, "Value"))
		}
		includeOther = x.setInclude(p)
	} else {
		values := obj(p, "values")
		for _, typ := range []string{"string", "number", "boolean"} {
			for _, v := range list(values, typ) {
				add(str(v, "name", ""), v["value"], typ)
			}
		}
		includeOther = !boolean(p, "keepOnlySet")
	}
	if options["dotNotation"] != false {
		for _, f := range fields {
			if strings.Contains(f.name, ".") {
				x.warn("the field %s is set under that literal name, not as a nested path", quoted(f.name))
				break
			}
		}
	}
	if includeOther {
		pairs := make([]string, len(fields))
		for i, f := range fields {
			pairs[i] = "[" + quoteExpr(f.name) + ", " + f.expr + "]"
		}
		e := fmt.Sprintf("fromPairs(concat(toPairs(%s ?? {}), [%s]))", x.sc.json, strings.Join(pairs, ", "))
		if x.c.checkExpr(e) == nil {
			return x.single("transform", map[string]any{"expression": e})
		}
		x.warn("it keeps its input's other fields in n8n; that expression would be too long, so only the fields it sets are output")
	}
	mapping := map[string]any{}
	for _, f := range fields {
		mapping[f.name] = f.expr
	}
	return x.single("transform", map[string]any{"mapping": mapping})
}

// setInclude reports a Set node (3.x) that keeps its input's other fields.
func (x *nodeCtx) setInclude(p map[string]any) bool {
	include := ""
	if x.n.version >= 3.3 {
		if !boolean(p, "includeOtherFields") {
			return false
		}
		include = str(p, "include", "all")
	} else {
		include = str(p, "include", "none")
	}
	switch include {
	case "none":
		return false
	case "all":
		return true
	}
	x.warn("it keeps only some of its input's fields (%s) in n8n; here it outputs only the fields it sets", include)
	return false
}

// ---- HTTP Request ----

func fullResponse(n *srcNode) bool {
	options := obj(n.params, "options")
	return boolean(obj(obj(options, "response"), "response"), "fullResponse") || boolean(options, "fullResponse")
}

var bodyMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

func (x *nodeCtx) http() *built {
	p := x.n.params
	v3 := x.n.version >= 3
	options := obj(p, "options")
	config := map[string]any{}

	method := "GET"
	rawMethod, ok := p["method"]
	if !ok {
		rawMethod = p["requestMethod"]
	}
	if m, ok := rawMethod.(string); ok {
		m = strings.ToUpper(m)
		if slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}, m) {
			method = m
		} else {
			x.warn("its method %s is not supported; it was imported as GET", snippet(m))
		}
	}
	if method != "GET" {
		config["method"] = method
	}

	u := x.template("the URL", p["url"])
	if strings.TrimSpace(u) == "" {
		x.warn("it has no URL; set one before running it")
		u = "https://example.invalid/"
	}

	// Query parameters go into the URL.
	var query []map[string]any
	if v3 {
		if boolean(p, "sendQuery") {
			if str(p, "specifyQuery", "keypair") == "json" {
				x.warn("its query parameters given as JSON were left out; add them to the URL")
			}
			query = list(obj(p, "queryParameters"), "parameters")
		}
	} else if boolean(p, "jsonParameters") {
		if _, ok := p["queryParametersJson"]; ok {
			x.warn("its query parameters given as JSON were left out; add them to the URL")
		}
	} else {
		query = list(obj(p, "queryParametersUi"), "parameter")
	}
	for _, q := range query {
		name := literalText(q["name"])
		if _, ok := expressionMode(q["name"]); ok {
			x.warn("a query parameter with a computed name was left out")
			continue
		}
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + escapeTemplate(url.QueryEscape(name)) + "=" + x.queryValue(q["value"])
	}
	config["url"] = u

	// Headers.
	headers := map[string]any{}
	var pairs []map[string]any
	if v3 {
		if boolean(p, "sendHeaders") {
			if str(p, "specifyHeaders", "keypair") == "json" {
				x.jsonHeaders(headers, p["jsonHeaders"])
			} else {
				pairs = list(obj(p, "headerParameters"), "parameters")
			}
		}
	} else if boolean(p, "jsonParameters") {
		x.jsonHeaders(headers, p["headerParametersJson"])
	} else {
		pairs = list(obj(p, "headerParametersUi"), "parameter")
	}
	for _, h := range pairs {
		if _, ok := expressionMode(h["name"]); ok {
			x.warn("a header with a computed name was left out")
			continue
		}
		if name := strings.TrimSpace(literalText(h["name"])); name != "" {
			headers[name] = x.template(fmt.Sprintf("the header %s", quoted(name)), h["value"])
		}
	}

	// Body.
	body, contentType := x.httpBody(p, v3, method)
	if body != "" {
		config["body"] = body
		if contentType != "" && !hasHeader(headers, "Content-Type") {
			headers["Content-Type"] = contentType
		}
	}
	if len(headers) > 0 {
		config["headers"] = headers
	}

	if t := num(options, "timeout", 0); t > 0 {
		config["timeout_seconds"] = int64(math.Min(300, math.Max(1, math.Ceil(t/1000))))
	}
	if boolean(obj(obj(options, "response"), "response"), "neverError") || boolean(options, "ignoreResponseCode") {
		config["fail_on_status"] = false
	}
	if auth := str(p, "authentication", "none"); auth != "none" {
		x.warn("its credentials (%s) are not imported; add the header they set (such as Authorization) to the node", auth)
	}
	if _, ok := options["pagination"]; ok {
		x.warn("pagination is not supported; it makes one request")
	}
	if format := str(obj(obj(options, "response"), "response"), "responseFormat", ""); format == "file" {
		x.warn("it downloads a file in n8n; here the body is kept as text")
	}
	return x.single("http_request", config)
}

// queryValue is a query parameter's value in the URL template: literals
// are escaped now, computed values go in as they are.
func (x *nodeCtx) queryValue(v any) string {
	if _, ok := expressionMode(v); ok {
		return x.template("a query parameter", v)
	}
	return escapeTemplate(url.QueryEscape(literalText(v)))
}

func hasHeader(h map[string]any, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// jsonHeaders takes headers given as a literal JSON object.
func (x *nodeCtx) jsonHeaders(headers map[string]any, v any) {
	if v == nil {
		return
	}
	s, _ := v.(string)
	var m map[string]any
	if _, expr := expressionMode(v); expr || json.Unmarshal([]byte(s), &m) != nil {
		x.warn("its headers given as computed JSON were left out; add them to the node")
		return
	}
	for k, val := range m {
		headers[k] = escapeTemplate(literalText(val))
	}
}

// httpBody is the request body template and its content type.
func (x *nodeCtx) httpBody(p map[string]any, v3 bool, method string) (body, contentType string) {
	if v3 {
		if !boolean(p, "sendBody") {
			return "", ""
		}
		switch ct := str(p, "contentType", "json"); ct {
		case "json":
			if str(p, "specifyBody", "keypair") == "json" {
				return x.template("the JSON body", p["jsonBody"]), "application/json"
			}
			return x.jsonBody(list(obj(p, "bodyParameters"), "parameters")), "application/json"
		case "form-urlencoded":
			if str(p, "specifyBody", "keypair") == "string" {
				return x.template("the body", p["body"]), "application/x-www-form-urlencoded"
			}
			return x.formBody(list(obj(p, "bodyParameters"), "parameters")), "application/x-www-form-urlencoded"
		case "raw":
			return x.template("the body", p["body"]), literalText(p["rawContentType"])
		default:
			x.warn("its %s body is not supported and was left out", ct)
			return "", ""
		}
	}
	if !slices.Contains(bodyMethods, method) {
		return "", ""
	}
	ct := str(obj(p, "options"), "bodyContentType", "json")
	if boolean(p, "jsonParameters") {
		if p["bodyParametersJson"] == nil {
			return "", ""
		}
		return x.template("the JSON body", p["bodyParametersJson"]), "application/json"
	}
	params := list(obj(p, "bodyParametersUi"), "parameter")
	if len(params) == 0 {
		return "", ""
	}
	switch ct {
	case "form-urlencoded":
		return x.formBody(params), "application/x-www-form-urlencoded"
	case "json":
		return x.jsonBody(params), "application/json"
	}
	x.warn("its %s body is not supported and was left out", ct)
	return "", ""
}

// jsonBody is a JSON object body from name/value pairs.
func (x *nodeCtx) jsonBody(params []map[string]any) string {
	if len(params) == 0 {
		return ""
	}
	pairs := make([]string, 0, len(params))
	for _, q := range params {
		name := literalText(q["name"])
		pairs = append(pairs, quoteExpr(name)+": "+x.expr(fmt.Sprintf("the body field %s", quoted(name)), q["value"]))
	}
	t := "{{ toJSON({" + strings.Join(pairs, ", ") + "}) }}"
	if x.c.checkTemplate(t) != nil {
		x.warn("its body fields make an expression too long to import; the body was left out")
		return ""
	}
	return t
}

// formBody is a form-encoded body from name/value pairs.
func (x *nodeCtx) formBody(params []map[string]any) string {
	parts := make([]string, 0, len(params))
	for _, q := range params {
		parts = append(parts, escapeTemplate(url.QueryEscape(literalText(q["name"])))+"="+x.queryValue(q["value"]))
	}
	return strings.Join(parts, "&")
}

// ---- Code ----

func (x *nodeCtx) code() *built {
	p := x.n.params
	lang, src, perItem := "javascript", "", false
	switch x.n.typ {
	case typeCode:
		if strings.HasPrefix(str(p, "language", "javaScript"), "python") {
			lang, src = "python", str(p, "pythonCode", "")
		} else {
			src = str(p, "jsCode", "")
		}
		perItem = str(p, "mode", "runOnceForAllItems") == "runOnceForEachItem"
	case typeFunction:
		src = str(p, "functionCode", "")
	case typeFuncItem:
		src, perItem = str(p, "functionCode", ""), true
	}
	if strings.TrimSpace(src) == "" {
		x.warn("it has no code, so it was imported as a pass-through")
		return x.passThrough()
	}
	if lang == "python" {
		x.warn("its Python code is kept as it is, and n8n's item API (_input, _json, items) must be adapted: the script reads what it needs from the JSON file at $SLIPWAY_INPUT and prints its result as its last line")
		return x.single("code", map[string]any{"language": "python", "source": src})
	}
	x.warn("its JavaScript runs with node in a container; n8n's item API ($input, items, $json, $('Node')) is emulated with the previous node's output as the only item, and what it returns becomes the node's result, so check anything else it relies on ($helpers, binary data, libraries) and adapt it")
	return x.single("code", map[string]any{"language": "javascript", "source": x.shim(src, perItem)})
}

// ---- Merge ----

func (x *nodeCtx) merge() *built {
	p := x.n.params
	count := 2
	for _, cn := range x.n.ins {
		count = max(count, cn.in+1)
	}
	if n := int(num(p, "numberInputs", 0)); n > count && n <= 10 {
		count = n
	}
	inputs := make([]string, count)
	for i := range inputs {
		inputs[i] = "nil"
		for _, cn := range x.n.ins {
			if cn.in == i {
				if r, err := x.c.ref(cn.from); err == nil {
					inputs[i] = r
				}
				break
			}
		}
	}
	mode := str(p, "mode", "append")
	e := "[" + strings.Join(inputs, ", ") + "]"
	switch mode {
	case "append":
	case "chooseBranch", "passThrough":
		switch str(p, "output", "input1") {
		case "input1":
			e = inputs[0]
		case "input2":
			e = inputs[1]
		case "empty":
			e = "{}"
		}
	default:
		x.warn("its mode %s (combining items by key or position) is not reproduced: its output is the list of its inputs' outputs", quoted(mode))
	}
	return x.single("transform", map[string]any{"expression": e})
}

// ---- Wait ----

var unitSeconds = map[string]float64{"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}

const maxWaitSeconds = 31536000

func waitSeconds(amount float64, unit string) int64 {
	s := amount * unitSeconds[unit]
	if unitSeconds[unit] == 0 {
		s = amount * 3600
	}
	return int64(math.Min(maxWaitSeconds, math.Max(1, math.Ceil(s))))
}

func (x *nodeCtx) wait() *built {
	p := x.n.params
	key := x.n.key
	switch resume := str(p, "resume", "timeInterval"); resume {
	case "timeInterval":
		secs := waitSeconds(num(p, "amount", 1), str(p, "unit", "hours"))
		x.warn("its pause became a wait for an event that never comes, with a %d second timeout on which the run goes on", secs)
		b := x.single("wait_event", map[string]any{"event": "n8n-pause-" + key, "timeout_seconds": secs})
		b.outs = map[int][]endpoint{0: {{key, workflows.HandleTimeout}}}
		return b
	default:
		config := map[string]any{"event": key}
		b := x.single("wait_event", config)
		b.outs = map[int][]endpoint{0: {{key, workflows.HandleEvent}}}
		how := "a call of its resume URL"
		switch resume {
		case "form":
			how = "a form submission"
		case "specificTime":
			how = "a point in time"
		}
		msg := fmt.Sprintf("it waited for %s in n8n; here it waits for the event %s, which must be emitted to resume the run (its payload becomes the node's output)", how, quoted(key))
		if resume != "specificTime" && boolean(p, "limitWaitTime") {
			if str(p, "limitType", "afterTimeInterval") == "afterTimeInterval" {
				secs := waitSeconds(num(p, "resumeAmount", 1), str(p, "resumeUnit", "hours"))
				config["timeout_seconds"] = secs
				b.outs[0] = append(b.outs[0], endpoint{key, workflows.HandleTimeout})
				msg += fmt.Sprintf(", or goes on after %d seconds", secs)
			} else {
				msg += "; its time limit at a fixed date was left out"
			}
		}
		x.warn("%s", msg)
		return b
	}
}

// ---- Respond to Webhook ----

func (x *nodeCtx) respond() *built {
	p := x.n.params
	config := map[string]any{}
	switch with := str(p, "respondWith", "firstIncomingItem"); with {
	case "firstIncomingItem":
		config["output"] = x.sc.json
	case "allIncomingItems":
		config["output"] = "[" + x.sc.json + "]"
	case "json":
		config["output"] = x.jsonExpr("the response body", p["responseBody"])
	case "text":
		config["output"] = x.expr("the response body", p["responseBody"])
	case "noData":
	default:
		x.warn("it answers with %s in n8n; here it answers with its input", with)
		config["output"] = x.sc.json
	}
	options := obj(p, "options")
	if code := num(options, "responseCode", 200); code != 200 {
		x.warn("its status code %s is not carried over: a sync webhook answers 200 with the run's output", formatNumber(code))
	}
	if _, ok := options["responseHeaders"]; ok {
		x.warn("its response headers are not carried over")
	}
	if len(x.n.outs) > 0 {
		x.warn("the run's output is its answer once the whole run has ended (the webhook answers then); the nodes after it follow the node before it")
	}
	return x.single("end", config)
}

// ---- limits ----

const (
	maxExprBytes     = 4096
	maxURLBytes      = 4096
	maxSourceBytes   = 262144
	maxConfigBytes   = 512 << 10
	maxEventBytes    = 200
	maxHTTPBodyBytes = 1 << 20
)

// fit keeps a node within what its kind's config accepts: an expression
// that is too long becomes a shortened string, and a node whose config is
// still too large becomes an empty transform (same handles).
func (c *converter) fit(n *workflows.NodeInput) {
	cfg := n.Config
	src := c.keyNode[n.Key]
	fitField := func(field string, max int) {
		if s, ok := cfg[field].(string); ok && len(s) > max {
			cfg[field] = fitExpr(s, max)
			c.warnf("%s: an expression was too long to import and was cut to a string", label(src))
		}
	}
	switch n.Kind {
	case "gate":
		fitField("condition", maxExprBytes)
	case "end":
		fitField("output", maxExprBytes)
	case "transform":
		fitField("expression", maxExprBytes)
		if m, ok := cfg["mapping"].(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				if s, ok := m[k].(string); ok && len(s) > maxExprBytes {
					m[k] = fitExpr(s, maxExprBytes)
					c.warnf("%s: the field %s was too long to import and was cut to a string", label(src), quoted(k))
				}
			}
		}
	case "http_request":
		if s, _ := cfg["url"].(string); len(s) > maxURLBytes {
			cfg["url"] = escapeTemplate(cutBytes(s, maxURLBytes/4)) // each {{ grows fourfold
			c.warnf("%s: its URL was too long to import and was cut", label(src))
		}
		if s, _ := cfg["body"].(string); len(s) > maxHTTPBodyBytes {
			delete(cfg, "body")
			c.warnf("%s: its body was too long to import and was left out", label(src))
		}
	case "code":
		if s, _ := cfg["source"].(string); len(s) > maxSourceBytes {
			n.Kind, n.Config = "transform", map[string]any{}
			c.warnf("%s: its code was too long to import; the node is an empty placeholder", label(src))
			return
		}
	}
	if raw, err := json.Marshal(n.Config); err != nil || len(raw) > maxConfigBytes {
		switch n.Kind {
		case "http_request", "code", "transform":
			n.Kind, n.Config = "transform", map[string]any{}
			c.warnf("%s: its configuration was too large to import; the node is an empty placeholder", label(src))
		}
	}
}

// fitExpr turns an over-long expression into a string literal of its
// beginning that fits in max bytes.
func fitExpr(s string, max int) string {
	for cut := max / 2; cut > 0; cut /= 2 {
		if q := quoteExpr(cutBytes(s, cut) + "…"); len(q) <= max {
			return q
		}
	}
	return `""`
}

// cutBytes cuts s to at most n bytes on a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
