package resources

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/outbound"
	"slipway/internal/platform/redact"
)

// What workflow nodes do with a resource. Every method opens the resource
// in the run's workspace (an id of another workspace is "not found", like
// an unknown one), talks to the far end through the SSRF-guarded client,
// and returns an output or an error whose text holds no secret: the
// resource's secret is redacted from everything that comes back.

// NodeError is a node's failure: a message safe to store.
type NodeError struct{ Message string }

func (e *NodeError) Error() string { return e.Message }

// use opens a resource of the workspace for a node, checking its kind.
func (s *Service) use(ctx context.Context, workspaceID, id string, kinds ...string) (*Connection, *redact.Redactor, error) {
	c, err := s.openCached(ctx, workspaceID, id)
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code == apperr.CodeNotFound {
			return nil, nil, &NodeError{Message: fmt.Sprintf("resource %s not found in this workspace", id)}
		}
		return nil, nil, err
	}
	ok := false
	for _, k := range kinds {
		ok = ok || c.Resource.Kind == k
	}
	if !ok {
		return nil, nil, &NodeError{Message: fmt.Sprintf("resource %q is a %s resource; this node needs %s", c.Resource.Name, c.Resource.Kind, strings.Join(kinds, " or "))}
	}
	return c, redact.New(c.Secret, url.PathEscape(c.Secret)), nil
}

// openCached is Open through the nodes' cache.
func (s *Service) openCached(ctx context.Context, workspaceID, id string) (*Connection, error) {
	key := workspaceID + "/" + id
	now := time.Now()
	if c, ok := s.conns.Get(key, now); ok {
		return &c, nil
	}
	epoch := s.conns.Epoch()
	c, err := s.Open(ctx, &actor.Workspace{ID: workspaceID}, id)
	if err != nil {
		return nil, err
	}
	if c.Resource.Kind == "postgresql" && c.Resource.RLSManaged {
		if c, err = s.asWorkspaceRole(ctx, workspaceID, c); err != nil {
			return nil, err
		}
	}
	s.conns.Put(key, *c, now, time.Time{}, epoch)
	return c, nil
}

// failure turns a transport error or a message into a NodeError with the
// secret redacted.
func failure(red *redact.Redactor, format string, args ...any) error {
	return &NodeError{Message: red.Text(fmt.Sprintf(format, args...))}
}

// call makes one request and decodes a JSON answer (when out is not nil).
func (s *Service) call(ctx context.Context, red *redact.Redactor, what string, req outbound.Request, out any) (*outbound.Response, error) {
	req.NoRedirects = true // a redirect to another host would carry the secret's header along
	resp, err := s.Outbound.Do(ctx, req)
	if err != nil {
		return nil, failure(red, "%s: %v", what, err)
	}
	if out != nil && len(resp.Body) > 0 {
		_ = json.Unmarshal(resp.Body, out)
	}
	return resp, nil
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Telegram sends a text message through the Bot API's sendMessage.
func (s *Service) Telegram(ctx context.Context, workspaceID, resourceID, chatID, text string) (any, error) {
	c, red, err := s.use(ctx, workspaceID, resourceID, "telegram")
	if err != nil {
		return nil, err
	}
	cfg, _ := decode[TelegramConfig](configMap(c.Resource))
	if chatID == "" {
		chatID = cfg.DefaultChat
	}
	if chatID == "" {
		return nil, &NodeError{Message: "no chat_id: set one on the node or a default_chat_id on the resource"}
	}
	var answer struct {
		OK          bool   `json:"ok"`
		Description string `json:"description"`
		Result      struct {
			MessageID int64 `json:"message_id"`
		} `json:"result"`
	}
	resp, err := s.call(ctx, red, "telegram", outbound.Request{Method: "POST", URL: telegramURL(cfg.APIBase, c.Secret, "sendMessage"),
		Headers: map[string]string{"Content-Type": "application/json"}, Body: jsonBody(map[string]any{"chat_id": chatID, "text": text})}, &answer)
	if err != nil {
		return nil, err
	}
	if !answer.OK || resp.Status/100 != 2 {
		return nil, failure(red, "telegram: HTTP %d: %s", resp.Status, clip(answer.Description, 300))
	}
	return map[string]any{"message_id": answer.Result.MessageID, "chat_id": chatID}, nil
}

// telegramURL is a Bot API method's address; the token is in the path.
func telegramURL(base, token, method string) string {
	if base == "" {
		base = defaultTelegramAPI
	}
	return joinURL(base, "/bot"+url.PathEscape(token)+"/"+method)
}

// discordBase is the Discord API's address.
func discordBase(base string) string {
	if base == "" {
		base = defaultDiscordAPI
	}
	return strings.TrimRight(base, "/")
}

var snowflake = func(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// Discord posts a message to a channel as the bot.
func (s *Service) Discord(ctx context.Context, workspaceID, resourceID, channelID, content string) (any, error) {
	c, red, err := s.use(ctx, workspaceID, resourceID, "discord")
	if err != nil {
		return nil, err
	}
	cfg, _ := decode[DiscordConfig](configMap(c.Resource))
	if channelID == "" {
		channelID = cfg.DefaultChannel
	}
	if !snowflake(channelID) {
		return nil, &NodeError{Message: "no channel: set channel_id on the node or default_channel_id on the resource (a numeric Discord id)"}
	}
	var answer struct {
		ID      string `json:"id"`
		Message string `json:"message"`
	}
	resp, err := s.call(ctx, red, "discord", outbound.Request{Method: "POST", URL: discordBase(cfg.APIBase) + "/channels/" + channelID + "/messages",
		Headers: map[string]string{"Authorization": "Bot " + c.Secret, "Content-Type": "application/json"},
		Body:    jsonBody(map[string]any{"content": content, "allowed_mentions": map[string]any{"parse": []string{}}})}, &answer)
	if err != nil {
		return nil, err
	}
	if resp.Status/100 != 2 {
		return nil, failure(red, "discord: HTTP %d: %s", resp.Status, clip(answer.Message, 300))
	}
	return map[string]any{"message_id": answer.ID, "channel_id": channelID}, nil
}

// ConnectorRequest is one call of a connector node, relative to the
// resource's base URL.
type ConnectorRequest struct {
	Method  string
	Path    string
	Query   map[string]string
	Headers map[string]string
	Body    []byte
}

// Call makes a request to an http, api_key or openai_compatible
// resource's base URL with its auth: the connector node.
func (s *Service) Call(ctx context.Context, workspaceID, resourceID string, r ConnectorRequest) (any, error) {
	c, red, err := s.use(ctx, workspaceID, resourceID, "http", "api_key", "openai_compatible")
	if err != nil {
		return nil, err
	}
	base, auth, err := s.httpAuth(c)
	if err != nil {
		return nil, err
	}
	u, err := joinPath(base, r.Path, r.Query)
	if err != nil {
		return nil, &NodeError{Message: err.Error()}
	}
	headers := map[string]string{}
	for k, v := range r.Headers {
		headers[k] = v
	}
	for k, v := range auth {
		headers[k] = v // the resource's auth wins over a node's header of the same name
	}
	if len(r.Body) > 0 && headers["Content-Type"] == "" {
		headers["Content-Type"] = "application/json"
	}
	resp, err := s.call(ctx, red, c.Resource.Name, outbound.Request{Method: r.Method, URL: u, Headers: headers, Body: r.Body}, nil)
	if err != nil {
		return nil, err
	}
	body := red.Text(string(resp.Body))
	out := map[string]any{"status": resp.Status, "headers": redactHeaders(red, resp.Headers), "body": body}
	var parsed any
	if json.Unmarshal([]byte(body), &parsed) == nil {
		out["json"] = parsed
	}
	if resp.Status >= 400 {
		return out, failure(red, "HTTP %d from %s %s", resp.Status, r.Method, c.Resource.Name)
	}
	return out, nil
}

func redactHeaders(red *redact.Redactor, h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = red.Text(v)
	}
	return out
}

// httpAuth is the base URL of an HTTP-like resource and the headers its
// auth adds: the connection test's (target.httpAuth), its refusals as the
// node's failure; an openai_compatible resource sends its key as a bearer
// token, or nothing (a local model server may need none).
func (s *Service) httpAuth(c *Connection) (string, map[string]string, error) {
	if c.Resource.Kind == "openai_compatible" {
		cfg, _ := decode[OpenAICompatibleConfig](configMap(c.Resource))
		if c.Secret == "" {
			return cfg.BaseURL, map[string]string{}, nil
		}
		return cfg.BaseURL, map[string]string{"Authorization": "Bearer " + c.Secret}, nil
	}
	base, headers, err := s.target(c).httpAuth()
	if ae, ok := apperr.As(err); ok {
		return "", nil, &NodeError{Message: fmt.Sprintf("resource %q: %s", c.Resource.Name, ae.Message)}
	}
	return base, headers, err
}

// joinPath puts a node's path and query below a base URL; the path may
// not climb out of it.
func joinPath(base, path string, query map[string]string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("the resource's base URL does not parse")
	}
	if strings.Contains(path, "://") || strings.HasPrefix(path, "//") {
		return "", fmt.Errorf("path must be relative to the resource's base URL")
	}
	p, err := url.Parse(path)
	if err != nil {
		return "", fmt.Errorf("path does not parse")
	}
	for _, seg := range strings.Split(p.Path, "/") {
		if seg == ".." {
			return "", fmt.Errorf("path must not contain a .. segment")
		}
	}
	if p.Path != "" {
		b.Path = strings.TrimRight(b.Path, "/") + "/" + strings.TrimLeft(p.Path, "/")
		b.RawPath = ""
	}
	q := b.Query()
	for k, v := range p.Query() {
		q[k] = v
	}
	for k, v := range query {
		q.Set(k, v)
	}
	b.RawQuery = q.Encode()
	return b.String(), nil
}

func configMap(r *Resource) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Config, &m)
	return m
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Classification is what a model answered for an llm_classify node.
type Classification struct {
	Label      string  `json:"label"`
	Confidence float64 `json:"confidence"`
	Model      string  `json:"model"`
}

// defaultLLMModel is the model of the built-in profile (projects'
// "coder"), used without a resource or a model.
const defaultLLMModel = "gpt-4o-mini"

// Classify asks a chat-completions model to put text in one of the
// categories: an openai_compatible resource of the workspace, or, with no
// resource, the instance's LLM_PROVIDER_API_KEY against its provider
// (LLM_PROVIDER_BASE_URL). The prompt comes already rendered and redacted.
func (s *Service) Classify(ctx context.Context, workspaceID, resourceID, model, prompt string, categories []string) (*Classification, error) {
	base, key := cmp.Or(s.LLMBase, protocol.DefaultBaseURL), s.LLMKey
	red := redact.New(s.LLMKey)
	if resourceID != "" {
		c, r, err := s.use(ctx, workspaceID, resourceID, "openai_compatible")
		if err != nil {
			return nil, err
		}
		cfg, _ := decode[OpenAICompatibleConfig](configMap(c.Resource))
		base, key, red = cfg.BaseURL, c.Secret, r
		if model == "" {
			model = cfg.Model
		}
	} else if key == "" {
		return nil, &NodeError{Message: "no model: give the node an openai_compatible resource, or set LLM_PROVIDER_API_KEY"}
	}
	if model == "" {
		model = defaultLLMModel
	}
	list, _ := json.Marshal(categories)
	req := map[string]any{
		"model":       model,
		"temperature": 0,
		"messages": []map[string]string{
			{"role": "system", "content": "Classify the user's text into exactly one of these categories: " + string(list) +
				`. Answer with only a JSON object: {"label": "<one category, exactly as written>", "confidence": <a number from 0 to 1>}.`},
			{"role": "user", "content": prompt},
		},
		"response_format": map[string]string{"type": "json_object"},
	}
	headers := map[string]string{"Content-Type": "application/json"}
	if key != "" {
		headers["Authorization"] = "Bearer " + key
	}
	var answer struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	resp, err := s.call(ctx, red, "model", outbound.Request{Method: "POST", URL: strings.TrimRight(base, "/") + "/chat/completions",
		Headers: headers, Body: jsonBody(req)}, &answer)
	if err != nil {
		return nil, err
	}
	if resp.Status/100 != 2 {
		return nil, failure(red, "model: HTTP %d: %s", resp.Status, clip(answer.Error.Message, 300))
	}
	if len(answer.Choices) == 0 {
		return nil, &NodeError{Message: "model: the answer has no choices"}
	}
	content := strings.TrimSpace(answer.Choices[0].Message.Content)
	content = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(content, "```json"), "```"), "```")
	var got struct {
		Label      string  `json:"label"`
		Confidence float64 `json:"confidence"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(content)), &got); err != nil {
		return nil, failure(red, "model: the answer is not the JSON asked for: %s", clip(content, 200))
	}
	for _, c := range categories {
		if strings.EqualFold(strings.TrimSpace(got.Label), c) {
			return &Classification{Label: c, Confidence: min(max(got.Confidence, 0), 1), Model: model}, nil
		}
	}
	return nil, failure(red, "model: %q is none of the categories", clip(got.Label, 100))
}
