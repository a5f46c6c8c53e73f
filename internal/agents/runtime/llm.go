package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"slipway/internal/agents/protocol"
)

// Defaults of the llm agent's limits.
const (
	defaultMaxIterations  = 30        // model calls
	defaultMaxTokensTotal = 1_000_000 // total_tokens summed over all model calls
	maxIdleReplies        = 3         // replies in a row without a tool call
)

const basePrompt = `You are Slipway's coding agent. You work on one task, on your own, in a git repository checked out at %s (the workspace). Nobody answers questions during the run; a human may occasionally send a message, which arrives as a user message.

How to work:
- Explore before changing anything: list_dir, read_file, and bash (grep, find) to locate the relevant code.
- Make focused changes with edit_file (exact, unique text replacement) or write_file (whole files). File paths are relative to the workspace; you cannot leave it.
- Verify your work: build and run the relevant tests with bash, and fix what fails.
- Follow the repository's style and conventions; do not reformat unrelated code.
- Do not commit, push or switch branches: the platform commits your changes after you finish.
- Never print, write or commit secrets.
- Every reply must call at least one tool. When the task is done, call finish with a short summary of what you changed and how you verified it.`

const nudge = "You replied without calling a tool. Continue the task with the tools; when it is done, call finish with a summary."

// systemPrompt is the built-in instructions plus the profile's.
func systemPrompt(workdir, instructions string) string {
	p := fmt.Sprintf(basePrompt, workdir)
	if s := strings.TrimSpace(instructions); s != "" {
		p += "\n\nInstructions for this project:\n" + s
	}
	return p
}

// llmAgent is the built-in coding agent: a chat-completions loop with tools.
type llmAgent struct {
	start     protocol.Start
	client    *chatClient
	pw        *protocol.Writer
	log       *slog.Logger
	maxIter   int
	maxTokens int

	ask map[string]bool // tools that need a human's approval

	mu          sync.Mutex
	inbox       []string          // interventions not yet sent to the model
	inboxSeq    int64             // the last inbox line among them (0: unnumbered)
	verdicts    map[string]string // approval verdicts by tool call id
	interrupted bool              // an interrupt stopped (or will stop) the current step
	stepCancel  context.CancelFunc
	wake        chan struct{} // a message, verdict or interrupt arrived
}

func newLLMAgent(s protocol.Start, pw *protocol.Writer, log *slog.Logger) (*llmAgent, error) {
	a := &llmAgent{start: s, client: newChatClient(s.BaseURL, s.APIKey, s.Redact...), pw: pw, log: log,
		maxIter: s.MaxIterations, maxTokens: s.MaxTokensTotal, ask: map[string]bool{},
		verdicts: map[string]string{}, wake: make(chan struct{}, 1)}
	for _, t := range s.AskTools {
		a.ask[t] = true
	}
	if a.maxIter <= 0 {
		a.maxIter = defaultMaxIterations
	}
	if a.maxTokens <= 0 {
		a.maxTokens = defaultMaxTokensTotal
	}
	return a, nil
}

func (a *llmAgent) intervene(text string, seq int64) {
	a.mu.Lock()
	a.inbox = append(a.inbox, text)
	a.inboxSeq = max(a.inboxSeq, seq)
	a.mu.Unlock()
	a.signal()
}

func (a *llmAgent) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// interrupt stops the current step (a model call, a tool, a wait for an
// approval); the agent then waits for a message.
func (a *llmAgent) interrupt() {
	a.mu.Lock()
	a.interrupted = true
	if a.stepCancel != nil {
		a.stepCancel()
	}
	a.mu.Unlock()
	a.signal()
}

func (a *llmAgent) approval(ap protocol.Approval) {
	a.mu.Lock()
	a.verdicts[ap.ID] = ap.Verdict
	a.mu.Unlock()
	a.signal()
}

// step is the context of one step: an interrupt cancels it.
func (a *llmAgent) step(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	a.stepCancel = cancel
	if a.interrupted {
		cancel()
	}
	a.mu.Unlock()
	return sctx, cancel
}

func (a *llmAgent) isInterrupted() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.interrupted
}

// await waits for a message after an interrupt: the run goes on with it.
func (a *llmAgent) await(ctx context.Context) error {
	a.log.Info("interrupted; waiting for a message")
	a.send(protocol.Waiting{Type: protocol.OutWaiting, Reason: "interrupted"})
	for {
		a.mu.Lock()
		a.interrupted = false
		n := len(a.inbox)
		a.mu.Unlock()
		if n > 0 {
			return nil
		}
		select {
		case <-a.wake:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// verdict asks a human whether the call may run and waits for the answer
// (interrupted: the step was interrupted meanwhile).
func (a *llmAgent) verdict(ctx context.Context, c pendingCall) (verdict string, interrupted bool, err error) {
	a.send(protocol.ApprovalRequest{Type: protocol.OutApprovalRequest, ID: c.id, Tool: c.name, Arguments: c.args,
		Reason: "the workspace's autonomy level asks before " + c.name})
	a.log.Info("waiting for approval", "tool", c.name, "id", c.id)
	for {
		a.mu.Lock()
		v, ok := a.verdicts[c.id]
		delete(a.verdicts, c.id)
		intr := a.interrupted
		a.mu.Unlock()
		switch {
		case ok:
			return v, false, nil
		case intr:
			return "", true, nil
		}
		select {
		case <-a.wake:
		case <-ctx.Done():
			return "", false, context.Cause(ctx)
		}
	}
}

func (a *llmAgent) hasInbox() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.inbox) > 0
}

// takeInbox hands the waiting messages to the next model call, with the
// last inbox line among them.
func (a *llmAgent) takeInbox() ([]string, int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	in, seq := a.inbox, a.inboxSeq
	a.inbox, a.inboxSeq = nil, 0
	return in, seq
}

func (a *llmAgent) send(v any) {
	if err := a.pw.Send(v); err != nil {
		a.log.Warn("writing a protocol line", "err", err)
	}
}

// pendingCall is a checked tool call from one completion.
type pendingCall struct {
	id, name string
	args     []byte // a compact JSON object
}

func (a *llmAgent) run(ctx context.Context) (string, error) {
	ws, err := openWorkspace(a.start.WorkDir)
	if err != nil {
		return "", err
	}
	defer ws.close()
	tools := &toolbox{ws: ws, env: scrubbedEnv(os.Environ(), a.start)}

	msgs := []chatMessage{
		{Role: "system", Content: systemPrompt(ws.dir, a.start.Instructions)},
		{Role: "user", Content: a.start.Prompt},
	}
	var (
		tokens  int
		costUSD float64
		idle    int
		unseen  int64 // the last inbox line in msgs that no answered call carried yet
	)
	for call := 1; ; call++ {
		switch {
		case call > a.maxIter:
			return "", fmt.Errorf("iteration limit reached: %d model calls without finish (max_iterations)", a.maxIter)
		case tokens >= a.maxTokens:
			return "", fmt.Errorf("token budget exhausted: %d tokens used, max_tokens_total is %d, and the model has not called finish", tokens, a.maxTokens)
		case a.start.MaxCostUSD > 0 && costUSD >= a.start.MaxCostUSD:
			return "", fmt.Errorf("cost budget exhausted: $%.4f reported, max_cost_usd is $%.4f, and the model has not called finish", costUSD, a.start.MaxCostUSD)
		}
		if a.isInterrupted() {
			if err := a.await(ctx); err != nil {
				return "", err
			}
		}
		texts, seq := a.takeInbox()
		for _, text := range texts {
			msgs = append(msgs, chatMessage{Role: "user", Content: text})
		}
		unseen = max(unseen, seq)

		a.log.Info("model call", "n", call, "messages", len(msgs), "tokens_so_far", tokens)
		sctx, done := a.step(ctx)
		resp, err := a.client.complete(sctx, chatRequest{
			Model: a.start.Model, Messages: msgs, Tools: toolDefs, ToolChoice: "auto", ReasoningEffort: a.start.Effort,
		})
		done()
		if err != nil && ctx.Err() == nil && a.isInterrupted() {
			continue // the model call was interrupted: wait for a message, then ask again
		}
		if err != nil {
			return "", err
		}
		if unseen > 0 {
			// The model answered a call that carried the messages: read.
			a.send(protocol.Seen{Type: protocol.OutSeen, Seq: unseen})
			unseen = 0
		}
		if u := resp.Usage; u != nil {
			total := u.TotalTokens
			if total == 0 {
				total = u.PromptTokens + u.CompletionTokens
			}
			model := resp.Model
			if model == "" {
				model = a.start.Model
			}
			c := protocol.Cost{Type: protocol.OutCost, Model: model, PromptTokens: u.PromptTokens,
				CompletionTokens: u.CompletionTokens, TotalTokens: total}
			if u.Cost != nil {
				c.CostUSD = *u.Cost
				costUSD += *u.Cost
			}
			tokens += total
			a.send(c)
		} else {
			a.log.Warn("the completion reports no usage; the token budget cannot count it")
		}

		msg := resp.Choices[0].Message
		text := messageText(msg.Content)
		if strings.TrimSpace(text) != "" {
			a.send(protocol.Message{Type: protocol.OutMessage, Role: protocol.RoleAssistant, Text: text})
		}

		calls := make([]pendingCall, 0, len(msg.ToolCalls))
		assistant := chatMessage{Role: "assistant", Content: text}
		for i, tc := range msg.ToolCalls {
			id := tc.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", call, i+1)
			}
			name := tc.Function.Name
			args, err := toolArguments(tc.Function.Arguments)
			if err != nil {
				return "", fmt.Errorf("malformed model output: the arguments of tool call %s (%s) are %v", id, name, err)
			}
			if !knownTool(name) {
				return "", fmt.Errorf("malformed model output: the model called unknown tool %q (call %s); the tools are bash, read_file, write_file, edit_file, list_dir, delegate, propose and finish", name, id)
			}
			calls = append(calls, pendingCall{id: id, name: name, args: args})
			wc := chatToolCall{ID: id, Type: "function"}
			wc.Function.Name, wc.Function.Arguments = name, string(args)
			assistant.ToolCalls = append(assistant.ToolCalls, wc)
		}
		if assistant.Content == "" && len(assistant.ToolCalls) == 0 {
			assistant.Content = "(no reply)"
		}
		msgs = append(msgs, assistant)

		if len(calls) == 0 {
			idle++
			if idle >= maxIdleReplies {
				return "", fmt.Errorf("the model replied %d times in a row without calling a tool; it must call finish to end the run", idle)
			}
			msgs = append(msgs, chatMessage{Role: "user", Content: nudge})
			continue
		}
		idle = 0

		for i, c := range calls {
			if a.isInterrupted() {
				// Every call of the reply needs an answer in the conversation.
				for _, rest := range calls[i:] {
					msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: rest.id, Content: "not run: the user interrupted"})
				}
				break
			}
			a.send(protocol.ToolCall{Type: protocol.OutToolCall, ID: c.id, Name: c.name, Arguments: c.args})
			if a.ask[c.name] {
				v, intr, err := a.verdict(ctx, c)
				if err != nil {
					return "", err
				}
				if intr {
					msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: c.id, Content: "not run: the user interrupted"})
					continue // the calls after it get the same answer above
				}
				if v != protocol.VerdictApproved {
					why := fmt.Sprintf("not run: the user did not approve this call (%s)", v)
					a.send(protocol.ToolResult{Type: protocol.OutToolResult, ID: c.id, Name: c.name, OK: false, Output: why})
					msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: c.id, Content: why})
					continue
				}
			}
			if c.name == toolFinish && a.hasInbox() {
				// A message arrived while the model worked: it is answered
				// before the run may end (the next call carries it).
				const why = "not finished: the user sent a message while you worked (it follows). Read it, act on it, then call finish again."
				a.log.Info("finish held back: a message waits for the model")
				a.send(protocol.ToolResult{Type: protocol.OutToolResult, ID: c.id, Name: c.name, OK: false, Output: why})
				msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: c.id, Content: why})
				for _, rest := range calls[i+1:] {
					msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: rest.id, Content: "not run: the call before it did not finish"})
				}
				break
			}
			if c.name == toolDelegate || c.name == toolPropose {
				var out toolOutcome
				if c.name == toolDelegate {
					out = a.delegate(c.args)
				} else {
					out = a.propose(c.id, c.args)
				}
				a.send(protocol.ToolResult{Type: protocol.OutToolResult, ID: c.id, Name: c.name, OK: out.ok, Output: out.output})
				msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: c.id, Content: out.output})
				continue
			}
			sctx, done := a.step(ctx)
			out, err := tools.call(sctx, c.name, c.args)
			done()
			if err != nil && ctx.Err() == nil && a.isInterrupted() {
				a.send(protocol.ToolResult{Type: protocol.OutToolResult, ID: c.id, Name: c.name, OK: false, Output: "interrupted by the user"})
				msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: c.id, Content: "interrupted by the user"})
				continue
			}
			if err != nil {
				return "", err
			}
			ev := protocol.ToolResult{Type: protocol.OutToolResult, ID: c.id, Name: c.name, OK: out.ok, Output: out.output}
			if len(ev.Output) > eventOutputLimit {
				ev.Output, ev.Truncated = truncate(ev.Output, eventOutputLimit), true
			}
			a.send(ev)
			if out.finished {
				if rest := len(calls) - i - 1; rest > 0 {
					a.log.Info("finish called; skipping the tool calls after it", "skipped", rest)
				}
				return out.output, nil
			}
			content := out.output
			if content == "" {
				content = "(no output)"
			}
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: c.id, Content: content})
		}
	}
}

// propose writes a "proposal" line (named by the tool call's id): the hub
// records it for a person to approve or reject.
func (a *llmAgent) propose(callID string, args []byte) toolOutcome {
	var in struct {
		Kind     string          `json:"kind"`
		Title    string          `json:"title"`
		Summary  string          `json:"summary"`
		TargetID string          `json:"target_id"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return failed("invalid arguments: %v", err)
	}
	if strings.TrimSpace(in.Title) == "" || len(in.Payload) == 0 {
		return failed("title and payload are required")
	}
	a.send(protocol.Proposal{Type: protocol.OutProposal, ID: callID, Kind: in.Kind, Title: in.Title, Summary: in.Summary, TargetID: in.TargetID,
		Payload: in.Payload})
	return toolOutcome{ok: true, output: "proposed: a person of the workspace approves or rejects it; go on with your task"}
}

// delegate hands work to a subtask: a "subtask" line the hub turns into a
// child task.
func (a *llmAgent) delegate(args []byte) toolOutcome {
	var in struct {
		Prompt       string `json:"prompt"`
		AgentProfile string `json:"agent_profile"`
		Title        string `json:"title"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return failed("invalid arguments: %v", err)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return failed("prompt is required")
	}
	a.send(protocol.Subtask{Type: protocol.OutSubtask, Prompt: in.Prompt, AgentProfile: in.AgentProfile, Title: in.Title})
	return toolOutcome{ok: true, output: "delegated: the subtask is queued; a message will tell you when it ends"}
}
