package resources

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync"

	"slipway/internal/platform/configschema"
)

// The configuration of each kind. Their JSON Schemas, generated from these
// types so that the published schema is the one enforced, are what
// GET /api/resource-kinds shows and what the console draws as a form. No
// config holds a secret: the one secret of a resource (a password, a token,
// a key) is its `secret`, kept in the vault.

// PostgreSQLConfig connects to a PostgreSQL database; the secret is the password.
type PostgreSQLConfig struct {
	Host     string `json:"host" minLength:"1" maxLength:"253" doc:"Host name or address"`
	Port     int    `json:"port,omitempty" minimum:"1" maximum:"65535" doc:"Default 5432"`
	Database string `json:"database" minLength:"1" maxLength:"63"`
	User     string `json:"user" minLength:"1" maxLength:"63"`
	SSLMode  string `json:"sslmode,omitempty" enum:"disable,require,verify-ca,verify-full" doc:"Default require"`
	// RLSSchema is where rls_managed finds the shared tables.
	RLSSchema string `json:"rls_schema,omitempty" maxLength:"63" pattern:"^[a-z_][a-z0-9_]*$" doc:"rls_managed: the schema whose tables with a workspace_id column get a policy per workspace (default public)"`
}

// HTTPConfig calls an HTTP API; the secret is the bearer token, the basic
// password or the header's value.
type HTTPConfig struct {
	BaseURL    string `json:"base_url" minLength:"1" maxLength:"2048" format:"uri" doc:"Requests go to paths below it"`
	Auth       string `json:"auth,omitempty" enum:"none,bearer,basic,header" doc:"Default bearer when a secret is set, else none"`
	Username   string `json:"username,omitempty" maxLength:"200" doc:"basic: the user name"`
	HeaderName string `json:"header_name,omitempty" maxLength:"100" pattern:"^[A-Za-z0-9-]+$" doc:"header: the header that carries the secret"`
}

// APIKeyConfig calls an API that takes a key; the secret is the key.
type APIKeyConfig struct {
	BaseURL    string `json:"base_url" minLength:"1" maxLength:"2048" format:"uri"`
	Auth       string `json:"auth,omitempty" enum:"bearer,basic,header" doc:"Default header"`
	Username   string `json:"username,omitempty" maxLength:"200" doc:"basic: the user name (the key is the password)"`
	HeaderName string `json:"header_name,omitempty" maxLength:"100" pattern:"^[A-Za-z0-9-]+$" doc:"header: default X-API-Key"`
}

// SMTPConfig sends mail; the secret is the password.
type SMTPConfig struct {
	Host     string `json:"host" minLength:"1" maxLength:"253"`
	Port     int    `json:"port,omitempty" minimum:"1" maximum:"65535" doc:"Default 587 (starttls), 465 (tls) or 25 (none)"`
	Security string `json:"security,omitempty" enum:"starttls,tls,none" doc:"Default starttls"`
	Username string `json:"username,omitempty" maxLength:"320"`
	From     string `json:"from" minLength:"3" maxLength:"320" format:"email" doc:"The sender address"`
}

// IMAPConfig reads a mailbox; the secret is the password.
type IMAPConfig struct {
	Host     string `json:"host" minLength:"1" maxLength:"253"`
	Port     int    `json:"port,omitempty" minimum:"1" maximum:"65535" doc:"Default 993 (tls) or 143 (starttls, none)"`
	Security string `json:"security,omitempty" enum:"tls,starttls,none" doc:"Default tls"`
	Username string `json:"username" minLength:"1" maxLength:"320"`
	Mailbox  string `json:"mailbox,omitempty" maxLength:"200" doc:"Default INBOX"`
	// Address is the mailbox's email address; email triggers give each
	// workflow a plus address on it (inbox+alias@domain).
	Address         string `json:"address,omitempty" maxLength:"320" format:"email" doc:"The mailbox's address, for email triggers' plus addresses (default: the username when it is an address)"`
	UnroutedMailbox string `json:"unrouted_mailbox,omitempty" maxLength:"200" doc:"Where email triggers move mail no alias matches (default Unrouted)"`
}

// DiscordConfig posts as a bot; the secret is the bot token.
type DiscordConfig struct {
	APIBase        string `json:"api_base,omitempty" maxLength:"2048" format:"uri" doc:"Default https://discord.com/api/v10"`
	DefaultChannel string `json:"default_channel_id,omitempty" maxLength:"32" pattern:"^[0-9]+$"`
}

// TelegramConfig sends as a bot; the secret is the bot token.
type TelegramConfig struct {
	APIBase     string `json:"api_base,omitempty" maxLength:"2048" format:"uri" doc:"Default https://api.telegram.org"`
	DefaultChat string `json:"default_chat_id,omitempty" maxLength:"100"`
}

// SeafileWebDAVConfig reaches a WebDAV share (Seafile's SeafDAV or any
// WebDAV server); the secret is the password.
type SeafileWebDAVConfig struct {
	URL      string `json:"url" minLength:"1" maxLength:"2048" format:"uri" doc:"The share's WebDAV root, e.g. https://seafile.example.com/seafdav"`
	Username string `json:"username" minLength:"1" maxLength:"320"`
}

// OpenAICompatibleConfig calls a chat-completions API; the secret is the API key.
type OpenAICompatibleConfig struct {
	BaseURL string `json:"base_url" minLength:"1" maxLength:"2048" format:"uri" doc:"e.g. https://api.openai.com/v1"`
	Model   string `json:"model,omitempty" maxLength:"200" doc:"The default model"`
}

// S3Config reaches an S3-compatible bucket; the secret is the secret access key.
type S3Config struct {
	Endpoint    string `json:"endpoint,omitempty" maxLength:"2048" format:"uri" doc:"Default https://s3.<region>.amazonaws.com"`
	Region      string `json:"region" minLength:"1" maxLength:"64" pattern:"^[a-z0-9-]+$"`
	Bucket      string `json:"bucket" minLength:"3" maxLength:"63" pattern:"^[a-z0-9][a-z0-9.-]+[a-z0-9]$"`
	AccessKeyID string `json:"access_key_id" minLength:"1" maxLength:"128"`
	PathStyle   bool   `json:"path_style,omitempty" doc:"Address the bucket in the path (MinIO and most self-hosted stores)"`
}

// ForgeConfig reaches GitHub or GitLab; the secret is an access token
// (repositories, pull requests, issues and webhooks: read and write).
type ForgeConfig struct {
	BaseURL  string `json:"base_url,omitempty" maxLength:"2048" format:"uri" doc:"Default https://api.github.com (GitHub) or https://gitlab.com (GitLab); set it for GitHub Enterprise or a self-managed GitLab"`
	Username string `json:"username,omitempty" maxLength:"200" doc:"The user name git sends with the token over https (default x-access-token on GitHub, oauth2 on GitLab)"`
}

// SelfHostedForgeConfig reaches Gitea or Forgejo; the secret is an access
// token.
type SelfHostedForgeConfig struct {
	BaseURL  string `json:"base_url" minLength:"1" maxLength:"2048" format:"uri" doc:"The instance's address, e.g. https://codeberg.org"`
	Username string `json:"username,omitempty" maxLength:"200" doc:"The user name git sends with the token over https (default oauth2)"`
}

// Kind describes a resource kind.
type Kind struct {
	Slug        string
	Name        string
	Description string
	// Secret says what the resource's secret is ("password", "bot token").
	Secret string
	// Address lists the config fields that say where the secret is sent:
	// changing one requires sending the secret again.
	Address []string
	config  reflect.Type
}

var kindList = []*Kind{
	{Slug: "postgresql", Name: "PostgreSQL", Description: "A PostgreSQL database: db_query and db_execute nodes; with rls_managed, a role and schema per workspace.", Secret: "password", Address: []string{"host", "port"}, config: reflect.TypeFor[PostgreSQLConfig]()},
	{Slug: "http", Name: "HTTP API", Description: "An HTTP API with bearer, basic or header auth: connector and http_request nodes.", Secret: "token or password", Address: []string{"base_url"}, config: reflect.TypeFor[HTTPConfig]()},
	{Slug: "api_key", Name: "API key", Description: "An API that takes a key in a header.", Secret: "API key", Address: []string{"base_url"}, config: reflect.TypeFor[APIKeyConfig]()},
	{Slug: "smtp", Name: "SMTP", Description: "A mail server to send through: notify_email nodes.", Secret: "password", Address: []string{"host", "port"}, config: reflect.TypeFor[SMTPConfig]()},
	{Slug: "imap", Name: "IMAP", Description: "A mailbox to read.", Secret: "password", Address: []string{"host", "port"}, config: reflect.TypeFor[IMAPConfig]()},
	{Slug: "discord", Name: "Discord bot", Description: "A Discord bot: notify_discord nodes.", Secret: "bot token", Address: []string{"api_base"}, config: reflect.TypeFor[DiscordConfig]()},
	{Slug: "telegram", Name: "Telegram bot", Description: "A Telegram bot: notify_telegram nodes.", Secret: "bot token", Address: []string{"api_base"}, config: reflect.TypeFor[TelegramConfig]()},
	{Slug: "seafile_webdav", Name: "Seafile / WebDAV", Description: "A WebDAV share (Seafile's SeafDAV): browse folders, read and write files.", Secret: "password", Address: []string{"url"}, config: reflect.TypeFor[SeafileWebDAVConfig]()},
	{Slug: "openai_compatible", Name: "OpenAI-compatible model", Description: "A chat-completions API: llm_classify and connector nodes.", Secret: "API key", Address: []string{"base_url"}, config: reflect.TypeFor[OpenAICompatibleConfig]()},
	{Slug: "github", Name: "GitHub", Description: "GitHub or GitHub Enterprise: projects imported from it, pull requests, checks, issues for the backlog.", Secret: "access token", Address: []string{"base_url"}, config: reflect.TypeFor[ForgeConfig]()},
	{Slug: "gitlab", Name: "GitLab", Description: "GitLab.com or a self-managed GitLab: projects, merge requests, pipelines, issues.", Secret: "access token", Address: []string{"base_url"}, config: reflect.TypeFor[ForgeConfig]()},
	{Slug: "gitea", Name: "Gitea", Description: "A Gitea instance: projects, pull requests, statuses, issues.", Secret: "access token", Address: []string{"base_url"}, config: reflect.TypeFor[SelfHostedForgeConfig]()},
	{Slug: "forgejo", Name: "Forgejo", Description: "A Forgejo instance (Codeberg): projects, pull requests, statuses, issues.", Secret: "access token", Address: []string{"base_url"}, config: reflect.TypeFor[SelfHostedForgeConfig]()},
	{Slug: "s3", Name: "S3 bucket", Description: "An S3-compatible bucket.", Secret: "secret access key", Address: []string{"endpoint", "region", "bucket"}, config: reflect.TypeFor[S3Config]()},
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

// KindSlugs lists the kinds, in the order the console shows them.
func KindSlugs() []string {
	out := make([]string, len(kindList))
	for i, k := range kindList {
		out[i] = k.Slug
	}
	return out
}

// ResourceKind is a kind as GET /api/resource-kinds shows it.
type ResourceKind struct {
	Slug         string          `json:"slug"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Secret       string          `json:"secret" doc:"What the resource's secret is (a password, a bot token)"`
	ConfigSchema json.RawMessage `json:"config_schema" doc:"JSON Schema of the resource's config"`
}

// Kinds lists every kind with its schema.
func Kinds() []ResourceKind {
	kindTable()
	out := make([]ResourceKind, 0, len(kindList))
	for _, k := range kindList {
		out = append(out, ResourceKind{Slug: k.Slug, Name: k.Name, Description: k.Description, Secret: k.Secret, ConfigSchema: schemas.Schema(k.Slug)})
	}
	return out
}

const maxConfigBytes = 16 << 10

// checkConfig validates a config against its kind's schema.
func (k *Kind) checkConfig(config map[string]any) error {
	if err := schemas.Check(k.Slug, config, maxConfigBytes); err != nil {
		return err
	}
	return k.checkURLs(config)
}

// checkURLs refuses URL fields that are not plain http(s) addresses
// without credentials (format:"uri" admits any scheme): a secret belongs
// in the vault, not in a URL the API shows.
func (k *Kind) checkURLs(config map[string]any) error {
	for i := 0; i < k.config.NumField(); i++ {
		f := k.config.Field(i)
		if f.Tag.Get("format") != "uri" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		s, _ := config[name].(string)
		if s == "" {
			continue
		}
		if err := plainURL(s); err != nil {
			return fmt.Errorf("config.%s: %v", name, err)
		}
	}
	return nil
}

// decode reads a (checked) config into its kind's type.
func decode[T any](config map[string]any) (T, error) {
	var out T
	raw, err := json.Marshal(config)
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	return out, err
}

// plainURL accepts an absolute http(s) URL with a host and no user info.
func plainURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an http or https URL")
	case u.Host == "":
		return fmt.Errorf("must name a host")
	case u.User != nil:
		return fmt.Errorf("must not hold a user name or password (the secret goes in the resource's secret)")
	}
	return nil
}
