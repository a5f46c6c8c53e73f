package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/redact"
)

// Client settings for the chat-completions endpoint.
const (
	modelRetries      = 2                // extra attempts after a 429, a 5xx or a transport error
	modelCallTimeout  = 10 * time.Minute // one attempt; a long completion can be slow
	modelResponseMax  = 16 << 20         // bytes of one response body
	modelErrorSnippet = 500              // bytes of an error body quoted in a result
)

// retryDelay is the pause before retry n (1-based); tests shorten it.
var retryDelay = func(n int) time.Duration { return time.Duration(n) * time.Second }

// chatClient speaks the OpenAI chat-completions API.
type chatClient struct {
	url    string // {base_url}/chat/completions
	apiKey string
	http   *http.Client
	red    *redact.Redactor // what never reaches the model
}

func newChatClient(baseURL, apiKey string, redactions ...string) *chatClient {
	return &chatClient{
		url:    strings.TrimRight(baseURL, "/") + "/chat/completions",
		apiKey: apiKey,
		http:   &http.Client{Timeout: modelCallTimeout},
		red:    redact.New(redactions...),
	}
}

type chatRequest struct {
	Model           string        `json:"model"`
	Messages        []chatMessage `json:"messages"`
	Tools           []toolDef     `json:"tools"`
	ToolChoice      string        `json:"tool_choice"`
	ReasoningEffort string        `json:"reasoning_effort,omitempty"`
}

// chatMessage is one message of the conversation as sent.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // "function"
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // a JSON object, as a string
	} `json:"function"`
}

// chatResponse is the part of a completion the agent reads.
type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"` // a string, null, or text parts
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"` // a string holding JSON, or (some servers) an object
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int      `json:"prompt_tokens"`
		CompletionTokens int      `json:"completion_tokens"`
		TotalTokens      int      `json:"total_tokens"`
		Cost             *float64 `json:"cost"` // OpenRouter and some proxies report a price
	} `json:"usage"`
	Error *apiError `json:"error"`
}

type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

// errModel marks a model endpoint failure (as opposed to an interrupt).
var errModel = errors.New("model call failed")

// complete posts one request, retrying 429, 5xx and transport errors a
// couple of times; other 4xx fail at once. ctx ends it at any point.
func (c *chatClient) complete(ctx context.Context, req chatRequest) (*chatResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding the request: %v", errModel, err)
	}
	// The run's secrets and well-known token shapes never reach the
	// model, whatever a tool printed or a file held.
	body = c.red.JSON(body)
	var lastErr error
	for attempt := 0; attempt <= modelRetries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(retryDelay(attempt))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, context.Cause(ctx)
			case <-t.C:
			}
		}
		resp, retry, err := c.post(ctx, body)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		lastErr = err
		if !retry {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w (gave up after %d attempts)", lastErr, modelRetries+1)
}

// post makes one attempt; retry says whether another may succeed.
func (c *chatClient) post(ctx context.Context, body []byte) (resp *chatResponse, retry bool, err error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", errModel, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	res, err := c.http.Do(hr)
	if err != nil {
		return nil, true, fmt.Errorf("%w: %v", errModel, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, modelResponseMax+1))
	if err != nil {
		return nil, true, fmt.Errorf("%w: reading the response: %v", errModel, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		retry := res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500
		return nil, retry, fmt.Errorf("%w: the endpoint answered HTTP %d: %s", errModel, res.StatusCode, errorSnippet(data))
	}
	if len(data) > modelResponseMax {
		return nil, false, fmt.Errorf("%w: the response is larger than %d bytes", errModel, modelResponseMax)
	}
	var r chatResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, false, fmt.Errorf("%w: the response is not valid JSON (%v): %s", errModel, err, snippet(data))
	}
	if len(r.Choices) == 0 {
		if r.Error != nil && r.Error.Message != "" {
			return nil, false, fmt.Errorf("%w: the endpoint returned an error: %s", errModel, r.Error.Message)
		}
		return nil, false, fmt.Errorf("%w: the response has no choices: %s", errModel, snippet(data))
	}
	return &r, false, nil
}

// errorSnippet is an error body's message, or its start.
func errorSnippet(data []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 {
		var ae apiError
		if json.Unmarshal(e.Error, &ae) == nil && ae.Message != "" {
			return truncate(ae.Message, modelErrorSnippet)
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return truncate(s, modelErrorSnippet)
		}
	}
	return snippet(data)
}

func snippet(data []byte) string {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "(empty body)"
	}
	return strconv.Quote(truncate(s, modelErrorSnippet))
}

// messageText reads a message's content: a string, null, or a list of
// {type:"text", text} parts.
func messageText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// toolArguments normalises a tool call's arguments to a JSON object: a
// string holding JSON (the OpenAI form) or an object; empty means {}.
func toolArguments(raw json.RawMessage) (json.RawMessage, error) {
	args := bytes.TrimSpace(raw)
	if len(args) > 0 && args[0] == '"' {
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return nil, err
		}
		args = bytes.TrimSpace([]byte(s))
	}
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(args) {
		var v any
		err := json.Unmarshal(args, &v)
		return nil, fmt.Errorf("not valid JSON (%v): %s", err, strconv.Quote(truncate(string(args), 200)))
	}
	if args[0] != '{' {
		return nil, fmt.Errorf("not a JSON object: %s", truncate(string(args), 200))
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}
