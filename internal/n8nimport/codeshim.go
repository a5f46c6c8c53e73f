package n8nimport

import (
	"regexp"
	"slices"
	"strings"
)

// An n8n Code (or Function) node's JavaScript works on items:
// $input.all(), items, $json, $('Node').item.json, and returns items. Our
// code nodes run a script that reads what expressions see from the JSON
// file at $SLIPWAY_INPUT and whose last line of output is the node's
// result. The shim around the imported source gives it the item API (the
// previous node's output is the only item) and prints what it returns.

var refStep = regexp.MustCompile(`\??\.`)

// jsPath turns a data reference (nodes.k.output?.json) into JavaScript
// reading the input file (__in?.["nodes"]?.["k"]?.["output"]?.["json"]).
func jsPath(ref string) string {
	var b strings.Builder
	b.WriteString("__in")
	for _, step := range refStep.Split(ref, -1) {
		b.WriteString("?.[" + quoteExpr(step) + "]")
	}
	return b.String()
}

var nodeNameRefs = regexp.MustCompile(`\$(?:\(\s*|node\[\s*|items\(\s*)(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)')`)

const shimHead = `// Imported from the n8n node %NAME%. The lines down to the marker emulate
// n8n's item API from $SLIPWAY_INPUT: the previous node's output is the only
// item, and what the code returns is printed as the node's result.
const __in = JSON.parse(require("fs").readFileSync(process.env.SLIPWAY_INPUT, "utf8"));
const __item = (json) => ({ json: json ?? {} });
const __nodes = {%NODES%};
const __prev = %PREV%;
const $input = { all: () => [__item(__prev)], first: () => __item(__prev), last: () => __item(__prev), item: __item(__prev) };
const items = $input.all();
const $json = $input.item.json;
%ITEM%const $ = (name) => {
  if (!(name in __nodes)) throw new Error("the imported workflow has no node " + JSON.stringify(name));
  const it = __item(__nodes[name]());
  return { item: it, first: () => it, last: () => it, all: () => [it] };
};
const $items = (name) => (name === undefined ? items : $(name).all());
const $node = new Proxy({}, { get: (_, name) => ({ json: $(String(name)).item.json }) });
// ---- the n8n node's code ----
const __result = (async () => {
`

const shimTail = `
})();
// ---- end of the n8n node's code ----
__result.then((out) => {
  const json = (x) => (x !== null && typeof x === "object" && "json" in x ? x.json : x);
  let value = Array.isArray(out) ? out.map(json) : json(out);
  if (Array.isArray(value) && value.length === 1) value = value[0];
  process.stdout.write("\n" + JSON.stringify(value === undefined ? null : value) + "\n");
}, (err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
`

// shim wraps an n8n node's JavaScript.
func (x *nodeCtx) shim(src string, perItem bool) string {
	var names []string
	for _, m := range nodeNameRefs.FindAllStringSubmatch(src, 100) {
		q := m[0][len(m[0])-1:] // the closing quote
		name, _, err := jsString(q + m[1] + m[2] + q)
		if err != nil {
			continue
		}
		if x.c.byName[name] != nil && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	var nodes []string
	for _, name := range names {
		ref, err := x.c.ref(x.c.byName[name])
		if err != nil {
			continue
		}
		nodes = append(nodes, quoteExpr(name)+": () => "+jsPath(ref))
	}
	item := ""
	if perItem {
		item = "const item = $json;\n"
	}
	head := strings.NewReplacer("%NAME%", quoteExpr(x.n.name), "%NODES%", strings.Join(nodes, ", "),
		"%PREV%", jsPath(x.sc.json), "%ITEM%", item).Replace(shimHead)
	return head + src + shimTail
}
