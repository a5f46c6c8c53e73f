package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"slipway/internal/platform/expression"
	"slipway/internal/platform/outbound"
	"slipway/internal/platform/redact"
)

// outcome is what running a node gave.
type outcome struct {
	status    string // NodeSucceeded, NodeFailed or NodeWaiting
	handle    string
	output    any
	err       string
	state     any
	waitEvent string
	timeout   time.Duration
	// endRun ends the run (an end node): with failure != "" it fails.
	endRun  bool
	failure string
	taskID  string
}

func succeed(handle string, output any) outcome {
	return outcome{status: NodeSucceeded, handle: handle, output: output}
}

func failed(format string, args ...any) outcome {
	return outcome{status: NodeFailed, err: fmt.Sprintf(format, args...)}
}

// step is one node to run with what it sees.
type step struct {
	node *Node
	nr   *nodeRun
	env  map[string]any
	run  *runRow
	red  *redact.Redactor // the run's secrets: redact what goes out in notifications and prompts
}

// inline reports the kinds run inside the transition that readies their
// successors' transition (no I/O); the others run outside any transaction.
func inline(kind string) bool {
	switch kind {
	case "http_request", "notify_webhook":
		return false
	}
	return !usesResource(kind)
}

// maxOutputBytes caps what one node may record as its output.
const maxOutputBytes = 1 << 20

// exprCache holds compiled expressions and templates: graphs are immutable
// per run and the same few sources are evaluated over and over.
type exprCache struct {
	mu    sync.Mutex
	progs map[string]*expression.Program
	tmpls map[string]*expression.Tmpl
}

const exprCacheMax = 4096

func (c *exprCache) program(src string) (*expression.Program, error) {
	c.mu.Lock()
	p, ok := c.progs[src]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := expression.Compile(src)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.progs == nil || len(c.progs) >= exprCacheMax {
		c.progs = map[string]*expression.Program{}
	}
	c.progs[src] = p
	c.mu.Unlock()
	return p, nil
}

func (c *exprCache) template(src string) (*expression.Tmpl, error) {
	c.mu.Lock()
	t, ok := c.tmpls[src]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := expression.Template(src)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.tmpls == nil || len(c.tmpls) >= exprCacheMax {
		c.tmpls = map[string]*expression.Tmpl{}
	}
	c.tmpls[src] = t
	c.mu.Unlock()
	return t, nil
}

func (c *exprCache) eval(ctx context.Context, src string, env map[string]any) (any, error) {
	p, err := c.program(src)
	if err != nil {
		return nil, err
	}
	return p.Eval(ctx, env)
}

func (c *exprCache) render(ctx context.Context, src string, env map[string]any) (string, error) {
	if !strings.Contains(src, "{{") {
		return src, nil
	}
	t, err := c.template(src)
	if err != nil {
		return "", err
	}
	return t.Render(ctx, env)
}

// execute runs one node and says how it went. Waiting kinds return
// NodeWaiting with what they wait on.
func (e *Engine) execute(ctx context.Context, s step) outcome {
	ctx, done := observeNode(ctx, s)
	o := e.executeNode(ctx, s)
	done(o)
	return o
}

func (e *Engine) executeNode(ctx context.Context, s step) outcome {
	switch s.node.Kind {
	case "transform":
		return e.transform(ctx, s)
	case "gate":
		return e.gate(ctx, s)
	case "end":
		return e.end(ctx, s)
	case "human":
		c, err := decodeConfig[HumanConfig](s.node.Config)
		if err != nil {
			return failed("config: %v", err)
		}
		msg, err := e.exprs.render(ctx, c.Message, s.env)
		if err != nil {
			return failed("message: %v", err)
		}
		return outcome{status: NodeWaiting, state: humanState{Message: msg}}
	case "wait_event":
		return e.waitEvent(ctx, s)
	case "loop":
		return e.loop(ctx, s)
	case "http_request":
		return e.httpRequest(ctx, s)
	case "notify_webhook":
		return e.notifyWebhook(ctx, s)
	case "notify_telegram":
		return e.notifyTelegram(ctx, s)
	case "notify_discord":
		return e.notifyDiscord(ctx, s)
	case "notify_email":
		return e.notifyEmail(ctx, s)
	case "imap_ack":
		return e.imapAck(ctx, s)
	case "connector":
		return e.connector(ctx, s)
	case "app":
		return e.appCall(ctx, s)
	case "llm_classify":
		return e.llmClassify(ctx, s)
	case "db_query":
		return e.dbStatement(ctx, s, false)
	case "db_execute":
		return e.dbStatement(ctx, s, true)
	case "agent":
		if e.agents != nil {
			return outcome{status: NodeWaiting} // the transition creates the task
		}
	case "code":
		return outcome{status: NodeWaiting} // the transition queues the script
	}
	return failed("node kind %q is not available yet", s.node.Kind)
}

func (e *Engine) transform(ctx context.Context, s step) outcome {
	c, err := decodeConfig[TransformConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	if c.Expression != "" {
		v, err := e.exprs.eval(ctx, c.Expression, s.env)
		if err != nil {
			return failed("expression: %v", err)
		}
		return succeed(HandleOut, v)
	}
	out := make(map[string]any, len(c.Mapping))
	for k, src := range c.Mapping {
		v, err := e.exprs.eval(ctx, src, s.env)
		if err != nil {
			return failed("mapping %q: %v", k, err)
		}
		out[k] = v
	}
	return succeed(HandleOut, out)
}

func (e *Engine) gate(ctx context.Context, s step) outcome {
	c, err := decodeConfig[GateConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	p, err := e.exprs.program(c.Condition)
	if err != nil {
		return failed("condition: %v", err)
	}
	ok, err := p.Bool(ctx, s.env)
	if err != nil {
		return failed("condition: %v", err)
	}
	if ok {
		return succeed(HandleTrue, map[string]any{"result": true})
	}
	return succeed(HandleFalse, map[string]any{"result": false})
}

func (e *Engine) end(ctx context.Context, s step) outcome {
	c, err := decodeConfig[EndConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	var out any
	if c.Output != "" {
		if out, err = e.exprs.eval(ctx, c.Output, s.env); err != nil {
			return failed("output: %v", err)
		}
	}
	o := succeed("", out)
	if c.Status == RunFailed {
		msg := "the run ended at node " + strconv.Quote(s.node.Key)
		if c.Message != "" {
			if msg, err = e.exprs.render(ctx, c.Message, s.env); err != nil {
				return failed("message: %v", err)
			}
		}
		o.endRun, o.failure = true, msg
	}
	return o
}

func (e *Engine) waitEvent(ctx context.Context, s step) outcome {
	c, err := decodeConfig[WaitEventConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	name, err := e.exprs.render(ctx, c.Event, s.env)
	if err != nil {
		return failed("event: %v", err)
	}
	if name == "" || len(name) > 200 {
		return failed("event: the name must be 1 to 200 characters, got %d", len(name))
	}
	return outcome{status: NodeWaiting, waitEvent: name, timeout: time.Duration(c.TimeoutSeconds) * time.Second}
}

// maxLoopItems caps one loop's items (each iteration is rows).
const maxLoopItems = 1000

func (e *Engine) loop(ctx context.Context, s step) outcome {
	c, err := decodeConfig[LoopConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	v, err := e.exprs.eval(ctx, c.Items, s.env)
	if err != nil {
		return failed("items: %v", err)
	}
	list, ok := v.([]any)
	if v == nil {
		list, ok = []any{}, true
	}
	if !ok {
		return failed("items must be a list, got %T", v)
	}
	if len(list) > maxLoopItems {
		return failed("items: %d items, at most %d", len(list), maxLoopItems)
	}
	ls := loopState{Items: make([]json.RawMessage, len(list)), Parallelism: 1}
	for i, it := range list {
		if ls.Items[i], err = json.Marshal(it); err != nil {
			return failed("item %d: %v", i, err)
		}
	}
	if c.Mode == "parallel" {
		ls.Parallelism = 10
		if c.Parallelism > 0 {
			ls.Parallelism = int(c.Parallelism)
		}
	}
	return outcome{status: NodeWaiting, state: ls}
}

func (e *Engine) httpRequest(ctx context.Context, s step) outcome {
	c, err := decodeConfig[HTTPRequestConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	req, err := e.request(ctx, s, c.Method, c.URL, c.Headers, c.Body)
	if err != nil {
		return failed("%v", err)
	}
	p := e.cfg.HTTP
	if c.TimeoutSeconds > 0 {
		p.Timeout = time.Duration(c.TimeoutSeconds) * time.Second
	}
	if c.MaxResponseBytes > 0 {
		p.MaxResponseBytes = c.MaxResponseBytes
	}
	resp, err := outbound.New(p, e.cfg.Own...).Do(ctx, req)
	if err != nil {
		return failed("%v", err)
	}
	out := map[string]any{"status": resp.Status, "headers": resp.Headers, "body": string(resp.Body)}
	var parsed any
	if json.Unmarshal(resp.Body, &parsed) == nil {
		out["json"] = parsed
	}
	if resp.Status >= 400 && (c.FailOnStatus == nil || *c.FailOnStatus) {
		o := failed("HTTP %d from %s", resp.Status, req.Method+" "+redactURL(req.URL))
		o.output = out
		return o
	}
	return succeed(HandleOut, out)
}

func (e *Engine) notifyWebhook(ctx context.Context, s step) outcome {
	c, err := decodeConfig[NotifyWebhookConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	var payload any = map[string]any{"run_id": s.run.ID, "workflow_id": s.run.WorkflowID, "node": s.node.Key, "input": s.env["input"]}
	if c.Payload != "" {
		if payload, err = e.exprs.eval(ctx, c.Payload, s.env); err != nil {
			return failed("payload: %v", err)
		}
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return failed("payload: %v", err)
	}
	body = s.red.JSON(body) // a notification carries no secret of the run
	headers := map[string]string{"Content-Type": "application/json"}
	for k, v := range c.Headers {
		headers[k] = v
	}
	req, err := e.request(ctx, s, "POST", c.URL, headers, "")
	if err != nil {
		return failed("%v", err)
	}
	req.Body = body
	p := e.cfg.HTTP
	p.Timeout = 10 * time.Second
	if c.TimeoutSeconds > 0 {
		p.Timeout = time.Duration(c.TimeoutSeconds) * time.Second
	}
	resp, err := outbound.New(p, e.cfg.Own...).Do(ctx, req)
	if err != nil {
		return failed("%v", err)
	}
	if resp.Status >= 300 {
		return failed("HTTP %d from the webhook", resp.Status)
	}
	return succeed(HandleOut, map[string]any{"status": resp.Status})
}

// request renders a request's templates. Every request carries an
// Idempotency-Key naming the node run, so a receiver can tell a repeat (a
// request in flight when the server stopped is sent again) from new work.
func (e *Engine) request(ctx context.Context, s step, method, rawURL string, headers map[string]string, body string) (outbound.Request, error) {
	if method == "" {
		method = "GET"
	}
	u, err := e.exprs.render(ctx, rawURL, s.env)
	if err != nil {
		return outbound.Request{}, fmt.Errorf("url: %w", err)
	}
	h := make(map[string]string, len(headers)+1)
	for k, v := range headers {
		if h[k], err = e.exprs.render(ctx, v, s.env); err != nil {
			return outbound.Request{}, fmt.Errorf("header %s: %w", k, err)
		}
	}
	h["Idempotency-Key"] = s.nr.ID
	b, err := e.exprs.render(ctx, body, s.env)
	if err != nil {
		return outbound.Request{}, fmt.Errorf("body: %w", err)
	}
	req := outbound.Request{Method: method, URL: u, Headers: h}
	if b != "" {
		req.Body = []byte(b)
	}
	return req, nil
}

// redactURL drops credentials and the query from a URL shown in an error.
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.IndexByte(u[i+3:], '@'); at >= 0 {
			u = u[:i+3] + u[i+3+at+1:]
		}
	}
	return u
}

// env is what expressions of a node in a frame see: input, trigger, run,
// env, nodes.<key> (its frame's node runs over the enclosing frames') and,
// in a loop body, item and index.
func (st *runState) env(frame string) map[string]any {
	var chain []string // outermost first, so inner frames override
	for f := frame; f != ""; f = parentFrame(f) {
		chain = append([]string{f}, chain...)
	}
	nodes := map[string]any{}
	for _, f := range append([]string{""}, chain...) {
		for _, nr := range st.nodes {
			if nr.Frame == f {
				nodes[nr.Key] = map[string]any{"output": decode(nr.Output), "status": nr.Status, "handle": nr.Handle, "error": nr.Error}
			}
		}
	}
	env := map[string]any{
		"input":   decode(st.run.Input),
		"trigger": st.run.triggerValue(),
		"nodes":   nodes,
		"run":     map[string]any{"id": st.run.ID, "workflow_id": st.run.WorkflowID, "project_id": st.run.ProjectID, "created_at": st.run.CreatedAt.Format(time.RFC3339)},
		"env":     st.envVars(),
	}
	if frame != "" {
		if loop := st.node(parentFrame(frame), frameLoop(frame)); loop != nil {
			if ls, err := st.loopProgress(loop); err == nil {
				i, _ := strconv.Atoi(frame[strings.LastIndexByte(frame, '[')+1 : len(frame)-1])
				if i < len(ls.Items) {
					env["item"], env["index"] = decode(ls.Items[i]), i
				}
			}
		}
	}
	return env
}

func decode(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	if n, err := expression.Normalize(v); err == nil {
		return n
	}
	return v
}

// apply records a node's outcome on the state, with the run's secrets
// redacted from its output and errors.
func (st *runState) apply(nr *nodeRun, o outcome) error {
	var out json.RawMessage
	if o.output != nil {
		b, err := json.Marshal(o.output)
		if err != nil {
			o = failed("output is not JSON: %v", err)
		} else if len(b) > maxOutputBytes {
			o = failed("output is larger than %d bytes", maxOutputBytes)
		} else {
			out = st.red.JSON(b)
		}
	}
	o.err, o.failure = st.red.Text(o.err), st.red.Text(o.failure)
	if nr.StartedAt == nil {
		nr.StartedAt = &st.now
	}
	if nr.Attempt == 0 {
		nr.Attempt = 1
	}
	switch o.status {
	case NodeWaiting:
		if o.state != nil {
			b, err := json.Marshal(o.state)
			if err != nil {
				return err
			}
			nr.State = b
		}
		if o.waitEvent != "" {
			nr.WaitEvent = &o.waitEvent
		}
		if o.timeout > 0 {
			st.timers = append(st.timers, timer{node: nr, at: st.now.Add(o.timeout)})
		}
		st.set(nr, NodeWaiting)
	case NodeFailed:
		st.fail(nr, o.err)
		if out != nil {
			nr.Output = out
		}
	default:
		nr.Output, nr.Handle = out, o.handle
		st.set(nr, NodeSucceeded)
		if o.endRun {
			st.finish(RunFailed, nil, o.failure)
		}
	}
	return nil
}
