package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"slipway/internal/platform/db"
)

// Resources performs the nodes that use a workspace's resources (the
// resources service, at wiring time). A resource of another workspace is
// "not found"; every error text is safe to store (no secret).
type Resources interface {
	Telegram(ctx context.Context, workspaceID, resourceID, chatID, text string) (any, error)
	Discord(ctx context.Context, workspaceID, resourceID, channelID, content string) (any, error)
	Connect(ctx context.Context, workspaceID, resourceID string, r ConnectorCall) (any, error)
	Classify(ctx context.Context, workspaceID, resourceID, model, prompt string, categories []string) (label string, output any, err error)
	Statement(ctx context.Context, workspaceID, resourceID string, q DBStatement) (any, error)
	Email(ctx context.Context, workspaceID, resourceID string, to []string, subject, body string) (any, error)
	// AckMail marks, flags or moves the message a run came from.
	AckMail(ctx context.Context, workspaceID, resourceID string, a MailAck) (any, error)
	// Materialize is a resource of the workspace as a script gets it: its
	// JSON (kind, name, config, secret) and its secret, read through q.
	Materialize(ctx context.Context, q db.Queryer, workspaceID, resourceID string) (value, secret string, found bool, err error)
}

// DBStatement is a db_query's or db_execute's statement, its parameters
// rendered.
type DBStatement struct {
	SQL     string
	Params  []any
	Write   bool
	MaxRows int
	Timeout time.Duration
}

// ConnectorCall is a connector node's request, rendered.
type ConnectorCall struct {
	Method  string
	Path    string
	Query   map[string]string
	Headers map[string]string
	Body    []byte
	Timeout time.Duration
}

// usesResource reports the kinds that call a resource: they run outside
// any transaction, like the other kinds that do I/O.
func usesResource(kind string) bool {
	switch kind {
	case "notify_telegram", "notify_discord", "notify_email", "connector", "llm_classify", "db_query", "db_execute", "imap_ack":
		return true
	}
	return false
}

// resourceFailed is a node failure from a resource call, with its output
// (a connector's error response) when there is one.
func resourceFailed(out any, err error) outcome {
	o := failed("%s", err.Error())
	o.output = out
	return o
}

var errNoResources = errors.New("resources are not available on this server")

func (e *Engine) notifyTelegram(ctx context.Context, s step) outcome {
	c, err := decodeConfig[NotifyTelegramConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	chat, err := e.exprs.render(ctx, c.ChatID, s.env)
	if err != nil {
		return failed("chat_id: %v", err)
	}
	text, err := e.exprs.render(ctx, c.Text, s.env)
	if err != nil {
		return failed("text: %v", err)
	}
	if e.resources == nil {
		return failed("%v", errNoResources)
	}
	out, err := e.resources.Telegram(ctx, s.run.WorkspaceID, c.ResourceID, strings.TrimSpace(chat), s.red.Text(text))
	if err != nil {
		return resourceFailed(nil, err)
	}
	return succeed(HandleOut, out)
}

func (e *Engine) notifyDiscord(ctx context.Context, s step) outcome {
	c, err := decodeConfig[NotifyDiscordConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	content, err := e.exprs.render(ctx, c.Content, s.env)
	if err != nil {
		return failed("content: %v", err)
	}
	if e.resources == nil {
		return failed("%v", errNoResources)
	}
	out, err := e.resources.Discord(ctx, s.run.WorkspaceID, c.ResourceID, c.ChannelID, s.red.Text(content))
	if err != nil {
		return resourceFailed(nil, err)
	}
	return succeed(HandleOut, out)
}

func (e *Engine) connector(ctx context.Context, s step) outcome {
	c, err := decodeConfig[ConnectorConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	call := ConnectorCall{Method: c.Method, Timeout: time.Duration(c.TimeoutSeconds) * time.Second}
	if call.Method == "" {
		call.Method = "GET"
	}
	if call.Path, err = e.exprs.render(ctx, c.Path, s.env); err != nil {
		return failed("path: %v", err)
	}
	render := func(field string, m map[string]string) (map[string]string, error) {
		out := make(map[string]string, len(m))
		for k, v := range m {
			r, err := e.exprs.render(ctx, v, s.env)
			if err != nil {
				return nil, errors.New(field + " " + k + ": " + err.Error())
			}
			out[k] = r
		}
		return out, nil
	}
	if call.Query, err = render("query", c.Query); err != nil {
		return failed("%v", err)
	}
	if call.Headers, err = render("header", c.Headers); err != nil {
		return failed("%v", err)
	}
	call.Headers["Idempotency-Key"] = s.nr.ID
	body, err := e.exprs.render(ctx, c.Body, s.env)
	if err != nil {
		return failed("body: %v", err)
	}
	if body != "" {
		call.Body = []byte(body)
	}
	if e.resources == nil {
		return failed("%v", errNoResources)
	}
	out, err := e.resources.Connect(ctx, s.run.WorkspaceID, c.ResourceID, call)
	if err != nil {
		return resourceFailed(out, err)
	}
	return succeed(HandleOut, out)
}

func (e *Engine) llmClassify(ctx context.Context, s step) outcome {
	c, err := decodeConfig[LLMClassifyConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	prompt, err := e.exprs.render(ctx, c.Prompt, s.env)
	if err != nil {
		return failed("prompt: %v", err)
	}
	if e.resources == nil {
		return failed("%v", errNoResources)
	}
	label, out, err := e.resources.Classify(ctx, s.run.WorkspaceID, c.ResourceID, c.Model, s.red.Text(prompt), c.Categories)
	if err != nil {
		return resourceFailed(nil, err)
	}
	return succeed(label, out)
}

func (e *Engine) dbStatement(ctx context.Context, s step, write bool) outcome {
	c, err := decodeConfig[DBConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	params := make([]any, len(c.Params))
	for i, p := range c.Params {
		if str, ok := p.(string); ok {
			if p, err = e.exprs.render(ctx, str, s.env); err != nil {
				return failed("params[%d]: %v", i, err)
			}
		}
		params[i] = p
	}
	if e.resources == nil {
		return failed("%v", errNoResources)
	}
	out, err := e.resources.Statement(ctx, s.run.WorkspaceID, c.ResourceID, DBStatement{SQL: c.SQL, Params: params, Write: write,
		MaxRows: int(c.MaxRows), Timeout: time.Duration(c.TimeoutSeconds) * time.Second})
	if err != nil {
		return resourceFailed(nil, err)
	}
	return succeed(HandleOut, out)
}

func (e *Engine) notifyEmail(ctx context.Context, s step) outcome {
	c, err := decodeConfig[NotifyEmailConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	subject, err := e.exprs.render(ctx, c.Subject, s.env)
	if err != nil {
		return failed("subject: %v", err)
	}
	body, err := e.exprs.render(ctx, c.Body, s.env)
	if err != nil {
		return failed("body: %v", err)
	}
	to := make([]string, len(c.To))
	for i, t := range c.To {
		if to[i], err = e.exprs.render(ctx, t, s.env); err != nil {
			return failed("to[%d]: %v", i, err)
		}
	}
	if e.resources == nil {
		return failed("%v", errNoResources)
	}
	out, err := e.resources.Email(ctx, s.run.WorkspaceID, c.ResourceID, to, s.red.Text(subject), s.red.Text(body))
	if err != nil {
		return resourceFailed(nil, err)
	}
	return succeed(HandleOut, out)
}

// MailAck is an imap_ack node's acknowledgement of the run's message.
type MailAck struct {
	Folder      string // where the message is (the trigger's inbox)
	UIDValidity uint32
	UID         uint32
	Action      string // seen, flag or move
	Target      string // move: the folder
}

// imapAck acknowledges the message of an email-triggered run.
func (e *Engine) imapAck(ctx context.Context, s step) outcome {
	c, err := decodeConfig[ImapAckConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	var trig struct {
		Kind        string `json:"kind"`
		ResourceID  string `json:"resource_id"`
		Mailbox     string `json:"mailbox"`
		UIDValidity uint32 `json:"uid_validity"`
		UID         uint32 `json:"uid"`
	}
	if err := json.Unmarshal(s.run.Trigger, &trig); err != nil || (trig.Kind != "email" && trig.Kind != "email_plus_address") || trig.UID == 0 {
		return failed("imap_ack acknowledges the email that started the run; this run was not started by an email trigger")
	}
	if c.ResourceID != "" && c.ResourceID != trig.ResourceID {
		return failed("resource_id: the run's email came from another mailbox (resource %s)", trig.ResourceID)
	}
	a := MailAck{Folder: trig.Mailbox, UIDValidity: trig.UIDValidity, UID: trig.UID, Action: c.Action}
	if a.Action == "" {
		a.Action = "seen"
	}
	if a.Action == "move" {
		if a.Target, err = e.exprs.render(ctx, c.Folder, s.env); err != nil {
			return failed("folder: %v", err)
		}
		if a.Target = strings.TrimSpace(a.Target); a.Target == "" {
			return failed("folder: move needs the folder to move the message to")
		}
	}
	if e.resources == nil {
		return failed("%v", errNoResources)
	}
	out, err := e.resources.AckMail(ctx, s.run.WorkspaceID, trig.ResourceID, a)
	if err != nil {
		return resourceFailed(nil, err)
	}
	return succeed(HandleOut, out)
}
