package workflows

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"slipway/internal/platform/configschema"
	"slipway/internal/platform/expression"
)

// Output handles of the node kinds. Most kinds fire out when they succeed
// and error when they fail (an unwired error fails the run).
const (
	HandleOut      = "out"
	HandleError    = "error"
	HandleTrue     = "true"
	HandleFalse    = "false"
	HandleApproved = "approved"
	HandleRejected = "rejected"
	HandleEvent    = "event"
	HandleTimeout  = "timeout"
)

// The configuration of each kind. Their JSON Schemas (generated from these
// types, so the published schema is the one enforced) are what
// GET /api/workflow-node-types shows. Strings tagged expr:"template" (and
// the string values of such maps and lists) may hold {{ expression }}
// placeholders; those tagged expr:"expression" are expressions over
// {input, trigger, nodes.<key>.output, run, env}. Both are compiled when
// the workflow is saved (checkExpressions).

// AgentConfig runs a task through the tasks machinery.
type AgentConfig struct {
	Prompt    string `json:"prompt" expr:"template" minLength:"1" maxLength:"65536" doc:"Template: the task's prompt (for shell agents, the script)"`
	Title     string `json:"title,omitempty" expr:"template" maxLength:"200" doc:"Template: the task's title (default: the node key)"`
	AgentType string `json:"agent_type,omitempty" maxLength:"100" doc:"The agent profile (by name) that runs the task; default shell"`
	OnFailure string `json:"on_failure,omitempty" enum:"fail,continue" doc:"continue: a failed task fires out with its result instead of failing the node"`
}

// GateConfig branches on a condition.
type GateConfig struct {
	Condition string `json:"condition" expr:"expression" minLength:"1" maxLength:"4096" doc:"Expression: true fires the true handle, false the false handle"`
}

// HumanConfig waits for a person's decision.
type HumanConfig struct {
	Message string `json:"message,omitempty" expr:"template" maxLength:"8192" doc:"Template: what the approver is asked"`
}

// EndConfig ends a branch; a failed end fails the run at once.
type EndConfig struct {
	Status  string `json:"status,omitempty" enum:"succeeded,failed" doc:"Default succeeded"`
	Output  string `json:"output,omitempty" expr:"expression" maxLength:"4096" doc:"Expression: the run's output"`
	Message string `json:"message,omitempty" expr:"template" maxLength:"2000" doc:"Template: the run's error when status is failed"`
}

// CodeConfig runs a script in a container through the worker port.
type CodeConfig struct {
	Language       string         `json:"language,omitempty" enum:"sh,bash,python,javascript,node" doc:"Default sh; node is another name for javascript"`
	Source         string         `json:"source,omitempty" maxLength:"262144" doc:"The script (or script_id)"`
	ScriptID       string         `json:"script_id,omitempty" format:"uuid" doc:"A saved script instead of source"`
	NodeType       string         `json:"node_type,omitempty" maxLength:"63" doc:"A node type of the workspace (its script) instead of source"`
	Params         map[string]any `json:"params,omitempty" doc:"The node type's params, checked against its config schema; the script reads them as params"`
	Image          string         `json:"image,omitempty" maxLength:"500" doc:"Container image; default the instance's agent image"`
	TimeoutSeconds int64          `json:"timeout_seconds,omitempty" minimum:"1" maximum:"86400"`
	// Resources hands the script resources of the workspace, each as an
	// environment variable holding its JSON: kind, name, config and secret.
	Resources map[string]string `json:"resources,omitempty" maxProperties:"20" doc:"Environment variable name (A-Z, 0-9, _; not SLIPWAY_…) → resource id: the script gets the resource as JSON ({kind, name, config, secret}) in that variable; the secret is redacted from its output"`
}

// DBConfig queries or changes a database resource: one statement with
// positional parameters ($1, $2, …), never text pasted into SQL.
type DBConfig struct {
	ResourceID     string `json:"resource_id" format:"uuid" doc:"A postgresql resource of the workspace"`
	SQL            string `json:"sql" minLength:"1" maxLength:"65536" doc:"One statement; parameters as $1, $2, …"`
	Params         []any  `json:"params,omitempty" expr:"template" maxItems:"100" doc:"Positional parameters; strings are templates"`
	MaxRows        int64  `json:"max_rows,omitempty" minimum:"1" maximum:"10000" doc:"db_query: rows returned at most (default 1000); more are cut off and truncated is true"`
	TimeoutSeconds int64  `json:"timeout_seconds,omitempty" minimum:"1" maximum:"300" doc:"The statement's time limit (default 30)"`
}

// HTTPRequestConfig calls a URL.
type HTTPRequestConfig struct {
	Method           string            `json:"method,omitempty" enum:"GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS" doc:"Default GET"`
	URL              string            `json:"url" expr:"template" minLength:"1" maxLength:"4096" doc:"Template"`
	Headers          map[string]string `json:"headers,omitempty" expr:"template" doc:"Values are templates"`
	Body             string            `json:"body,omitempty" expr:"template" maxLength:"1048576" doc:"Template: the request body"`
	TimeoutSeconds   int64             `json:"timeout_seconds,omitempty" minimum:"1" maximum:"300" doc:"Default 30"`
	MaxResponseBytes int64             `json:"max_response_bytes,omitempty" minimum:"1" maximum:"10485760" doc:"Default 1 MiB"`
	FailOnStatus     *bool             `json:"fail_on_status,omitempty" doc:"Default true: a 4xx or 5xx response fails the node"`
}

// TransformConfig computes an output from expressions.
type TransformConfig struct {
	Expression string            `json:"expression,omitempty" expr:"expression" maxLength:"4096" doc:"Expression: the output (or mapping)"`
	Mapping    map[string]string `json:"mapping,omitempty" expr:"expression" doc:"Expressions: the output is an object of their values"`
}

// NotifyTelegramConfig sends a Telegram message.
type NotifyTelegramConfig struct {
	ResourceID string `json:"resource_id" format:"uuid" doc:"A telegram resource (its bot)"`
	ChatID     string `json:"chat_id,omitempty" expr:"template" maxLength:"100" doc:"Template; default the resource's default_chat_id"`
	Text       string `json:"text" expr:"template" minLength:"1" maxLength:"4096" doc:"Template"`
}

// NotifyEmailConfig sends an email.
type NotifyEmailConfig struct {
	ResourceID string   `json:"resource_id,omitempty" format:"uuid" doc:"An smtp resource; default the instance's mailer"`
	To         []string `json:"to" minItems:"1" maxItems:"50" expr:"template" doc:"Addresses; each a template. Without resource_id, members of the workspace only"`
	Subject    string   `json:"subject" expr:"template" maxLength:"500" doc:"Template"`
	Body       string   `json:"body" expr:"template" maxLength:"65536" doc:"Template"`
}

// NotifyWebhookConfig posts a JSON payload to a URL.
type NotifyWebhookConfig struct {
	URL            string            `json:"url" expr:"template" minLength:"1" maxLength:"4096" doc:"Template"`
	Headers        map[string]string `json:"headers,omitempty" expr:"template" doc:"Values are templates"`
	Payload        string            `json:"payload,omitempty" expr:"expression" maxLength:"4096" doc:"Expression: the JSON body (default: the run's id, workflow and input)"`
	TimeoutSeconds int64             `json:"timeout_seconds,omitempty" minimum:"1" maximum:"60" doc:"Default 10"`
}

// NotifyDiscordConfig posts to a Discord channel.
type NotifyDiscordConfig struct {
	ResourceID string `json:"resource_id" format:"uuid" doc:"A discord resource (its bot)"`
	ChannelID  string `json:"channel_id,omitempty" maxLength:"32" pattern:"^[0-9]*$" doc:"Default the resource's default_channel_id"`
	Content    string `json:"content" expr:"template" minLength:"1" maxLength:"2000" doc:"Template"`
}

// LoopConfig runs its frame (the nodes whose parent_node_key names the
// loop) once per item.
type LoopConfig struct {
	Items       string `json:"items" expr:"expression" minLength:"1" maxLength:"4096" doc:"Expression: the list; the body sees item and index"`
	Mode        string `json:"mode,omitempty" enum:"sequential,parallel" doc:"Default sequential"`
	Parallelism int64  `json:"parallelism,omitempty" minimum:"1" maximum:"100" doc:"Iterations at once in parallel mode; default 10"`
}

// WaitEventConfig waits for a named event or a timeout.
type WaitEventConfig struct {
	Event          string `json:"event" expr:"template" minLength:"1" maxLength:"200" doc:"Template: the event's name"`
	TimeoutSeconds int64  `json:"timeout_seconds,omitempty" minimum:"1" maximum:"31536000" doc:"Fire timeout after this long; default never"`
}

// LLMClassifyConfig asks a model to pick a category; each category is a
// handle.
type LLMClassifyConfig struct {
	Prompt     string   `json:"prompt" expr:"template" minLength:"1" maxLength:"65536" doc:"Template: the text to classify"`
	Categories []string `json:"categories" minItems:"2" maxItems:"50"`
	ResourceID string   `json:"resource_id,omitempty" format:"uuid" doc:"An openai_compatible resource; default LLM_PROVIDER_API_KEY with the built-in profile's provider"`
	Model      string   `json:"model,omitempty" maxLength:"200" doc:"Default the resource's model"`
}

// ImapAckConfig acknowledges the message that triggered the run (an
// email trigger's): marks it read, flags it or moves it to a folder.
type ImapAckConfig struct {
	ResourceID string `json:"resource_id,omitempty" format:"uuid" doc:"The imap resource; default the mailbox the run's message came from (another one fails the node)"`
	Action     string `json:"action,omitempty" enum:"seen,flag,move" doc:"seen (default): mark it read; flag: add \\Flagged; move: move it to folder"`
	Folder     string `json:"folder,omitempty" maxLength:"200" expr:"template" doc:"move: the folder (created when missing); a template"`
}

// AppConfig calls a backend function of a hosted app of the workspace.
type AppConfig struct {
	AppID  string         `json:"app_id" format:"uuid" doc:"An app of the workspace, deployed"`
	Action string         `json:"action" minLength:"1" maxLength:"200" doc:"The backend function's name"`
	Params map[string]any `json:"params,omitempty" doc:"The function's arguments by name; string values are templates"`
}

// ConnectorConfig calls an HTTP resource (http, api_key,
// openai_compatible) below its base URL with its auth.
type ConnectorConfig struct {
	ResourceID     string            `json:"resource_id" format:"uuid" doc:"An http, api_key or openai_compatible resource"`
	Method         string            `json:"method,omitempty" enum:"GET,POST,PUT,PATCH,DELETE,HEAD" doc:"Default GET"`
	Path           string            `json:"path,omitempty" expr:"template" maxLength:"4096" doc:"Template: below the resource's base URL (no .., no other host)"`
	Query          map[string]string `json:"query,omitempty" expr:"template" doc:"Values are templates"`
	Headers        map[string]string `json:"headers,omitempty" expr:"template" doc:"Values are templates; the resource's auth header wins"`
	Body           string            `json:"body,omitempty" expr:"template" maxLength:"1048576" doc:"Template: the request body (JSON by default)"`
	TimeoutSeconds int64             `json:"timeout_seconds,omitempty" minimum:"1" maximum:"300" doc:"Default 30"`
}

// Kind describes a node kind.
type Kind struct {
	Slug        string
	Name        string
	Category    string
	Description string
	// Handles are the output handles; llm_classify's come from its config.
	Handles []string
	// Runs reports whether this build can run the kind; the others
	// validate and fail at run time with "not available yet".
	Runs   bool
	config reflect.Type
}

var outError = []string{HandleOut, HandleError}

var kindList = []*Kind{
	{Slug: "agent", Name: "Agent", Category: "agents", Description: "Runs a task with an AI coding agent and waits for its result.", Handles: outError, Runs: true, config: reflect.TypeFor[AgentConfig]()},
	{Slug: "gate", Name: "Gate", Category: "flow", Description: "Branches on a condition.", Handles: []string{HandleTrue, HandleFalse}, Runs: true, config: reflect.TypeFor[GateConfig]()},
	{Slug: "human", Name: "Human approval", Category: "flow", Description: "Waits for the run's owner to approve or reject.", Handles: []string{HandleApproved, HandleRejected}, Runs: true, config: reflect.TypeFor[HumanConfig]()},
	{Slug: "end", Name: "End", Category: "flow", Description: "Ends a branch with the run's output, or fails the run.", Runs: true, config: reflect.TypeFor[EndConfig]()},
	{Slug: "code", Name: "Code", Category: "code", Description: "Runs a script in a container.", Handles: outError, Runs: true, config: reflect.TypeFor[CodeConfig]()},
	{Slug: "db_query", Name: "Database query", Category: "data", Description: "Reads rows from a database resource.", Handles: outError, Runs: true, config: reflect.TypeFor[DBConfig]()},
	{Slug: "db_execute", Name: "Database statement", Category: "data", Description: "Changes a database resource.", Handles: outError, Runs: true, config: reflect.TypeFor[DBConfig]()},
	{Slug: "http_request", Name: "HTTP request", Category: "data", Description: "Calls a URL and returns status, headers and body.", Handles: outError, Runs: true, config: reflect.TypeFor[HTTPRequestConfig]()},
	{Slug: "transform", Name: "Transform", Category: "data", Description: "Computes an output from expressions.", Handles: outError, Runs: true, config: reflect.TypeFor[TransformConfig]()},
	{Slug: "notify_telegram", Name: "Telegram message", Category: "notify", Description: "Sends a Telegram message.", Handles: outError, Runs: true, config: reflect.TypeFor[NotifyTelegramConfig]()},
	{Slug: "notify_email", Name: "Email", Category: "notify", Description: "Sends an email.", Handles: outError, Runs: true, config: reflect.TypeFor[NotifyEmailConfig]()},
	{Slug: "notify_webhook", Name: "Webhook", Category: "notify", Description: "Posts a JSON payload to a URL.", Handles: outError, Runs: true, config: reflect.TypeFor[NotifyWebhookConfig]()},
	{Slug: "notify_discord", Name: "Discord message", Category: "notify", Description: "Posts to a Discord channel.", Handles: outError, Runs: true, config: reflect.TypeFor[NotifyDiscordConfig]()},
	{Slug: "loop", Name: "Loop", Category: "flow", Description: "Runs its frame once per item, in sequence or in parallel.", Handles: outError, Runs: true, config: reflect.TypeFor[LoopConfig]()},
	{Slug: "wait_event", Name: "Wait for event", Category: "flow", Description: "Waits for a named event, or a timeout.", Handles: []string{HandleEvent, HandleTimeout}, Runs: true, config: reflect.TypeFor[WaitEventConfig]()},
	{Slug: "llm_classify", Name: "Classify", Category: "agents", Description: "Asks a model to pick one of the categories; each category is a handle.", Runs: true, config: reflect.TypeFor[LLMClassifyConfig]()},
	{Slug: "imap_ack", Name: "Acknowledge email", Category: "notify", Description: "Marks read, flags or moves the email that started the run.", Handles: outError, Runs: true, config: reflect.TypeFor[ImapAckConfig]()},
	{Slug: "app", Name: "App action", Category: "apps", Description: "Calls a backend function of a hosted app.", Handles: outError, Runs: true, config: reflect.TypeFor[AppConfig]()},
	{Slug: "connector", Name: "Connector", Category: "apps", Description: "Calls an HTTP resource with its auth.", Handles: outError, Runs: true, config: reflect.TypeFor[ConnectorConfig]()},
}

var (
	kindsOnce sync.Once
	kinds     map[string]*Kind
	// schemas are the kinds' config schemas, generated from their types.
	schemas = configschema.NewSet(configTypes())
)

func configTypes() map[string]reflect.Type {
	out := make(map[string]reflect.Type, len(kindList))
	for _, k := range kindList {
		out[k.Slug] = k.config
	}
	return out
}

func kindTable() map[string]*Kind {
	kindsOnce.Do(func() {
		kinds = make(map[string]*Kind, len(kindList))
		for _, k := range kindList {
			kinds[k.Slug] = k
		}
	})
	return kinds
}

// KindOf returns the kind of a slug, or nil.
func KindOf(slug string) *Kind { return kindTable()[slug] }

// HandlesFor lists the handles a node of the kind has with this config.
func (k *Kind) HandlesFor(config map[string]any) []string {
	if k.Slug != "llm_classify" {
		return k.Handles
	}
	var out []string
	if cats, ok := config["categories"].([]any); ok {
		for _, c := range cats {
			if s, ok := c.(string); ok {
				out = append(out, s)
			}
		}
	}
	return append(out, HandleError)
}

// DefaultHandle is the handle an edge gets when it names none: out, for
// the kinds that have it.
func (k *Kind) DefaultHandle() string {
	if slices.Contains(k.Handles, HandleOut) {
		return HandleOut
	}
	return ""
}

// checkConfig validates a node's config against its kind's schema.
func (k *Kind) checkConfig(config map[string]any) error {
	return schemas.Check(k.Slug, config, maxConfigBytes)
}

// checkExpressions compiles a (schema-valid) config's expressions and
// templates, so a typo fails the save rather than the run, and checks that
// every nodes.<key> they read names a node of the workflow (known).
func (k *Kind) checkExpressions(config map[string]any, known func(key string) bool) error {
	for i := 0; i < k.config.NumField(); i++ {
		f := k.config.Field(i)
		mode := f.Tag.Get("expr")
		if mode == "" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		var err error
		switch v := config[name].(type) {
		case string:
			err = checkSource(mode, "config."+name, v, known)
		case map[string]any:
			for _, key := range slices.Sorted(maps.Keys(v)) {
				if s, ok := v[key].(string); ok && err == nil {
					err = checkSource(mode, fmt.Sprintf("config.%s.%s", name, key), s, known)
				}
			}
		case []any:
			for j, x := range v {
				if s, ok := x.(string); ok && err == nil {
					err = checkSource(mode, fmt.Sprintf("config.%s[%d]", name, j), s, known)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSource compiles one expression or template (empty ones are unset
// fields) and checks the nodes it reads.
func checkSource(mode, field, src string, known func(string) bool) error {
	if src == "" {
		return nil
	}
	var refs []string
	if mode == "template" {
		t, err := expression.Template(src)
		if err != nil {
			return fmt.Errorf("%s: %v", field, err)
		}
		refs = t.Fields("nodes")
	} else {
		p, err := expression.Compile(src)
		if err != nil {
			return fmt.Errorf("%s: %v", field, err)
		}
		refs = p.Fields("nodes")
	}
	for _, key := range refs {
		if !known(key) {
			return fmt.Errorf("%s reads nodes.%s, and the workflow has no node %s", field, key, graphQuote(key))
		}
	}
	return nil
}

// decodeConfig reads a node's config into its kind's type.
func decodeConfig[T any](config map[string]any) (T, error) {
	var out T
	raw, err := json.Marshal(config)
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	return out, err
}

const maxConfigBytes = 512 << 10

// NodeType is a node kind as GET /api/workflow-node-types shows it.
type NodeType struct {
	ID           *string         `json:"id" nullable:"true" format:"uuid" doc:"A user node type's id; null for built-in kinds"`
	Slug         string          `json:"slug"`
	Name         string          `json:"name"`
	Category     string          `json:"category"`
	Description  string          `json:"description"`
	Builtin      bool            `json:"builtin"`
	Available    bool            `json:"available" doc:"false: the kind validates but fails at run time (not available yet)"`
	Handles      []string        `json:"handles" doc:"Output handles; llm_classify's are its categories plus error"`
	ConfigSchema json.RawMessage `json:"config_schema" doc:"JSON Schema of the node's config (a user node type's: of its params)"`
	ScriptID     *string         `json:"script_id" nullable:"true" format:"uuid" doc:"A user node type's script"`
	CreatedAt    *time.Time      `json:"created_at" nullable:"true"`
}

// NodeTypes lists the built-in kinds in the spec's order.
func NodeTypes() []NodeType {
	kindTable()
	out := make([]NodeType, 0, len(kindList))
	for _, k := range kindList {
		out = append(out, NodeType{Slug: k.Slug, Name: k.Name, Category: k.Category, Description: k.Description, Builtin: true,
			Available: k.Runs, Handles: append([]string{}, k.Handles...), ConfigSchema: schemas.Schema(k.Slug)})
	}
	return out
}
