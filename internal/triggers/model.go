// Package triggers holds what starts a workflow by itself: webhooks
// (token-addressed receivers, optionally signed, answering at once or with
// the run's output) and schedules (cron expressions in a time zone, or a
// fixed interval, fired once per tick by one replica).
package triggers

import (
	"encoding/json"
	"time"
)

// Trigger kinds.
const (
	KindWebhook  = "webhook"
	KindSchedule = "schedule"
)

// Webhook response modes.
const (
	ModeAsync = "async" // 202 with the run id at once
	ModeSync  = "sync"  // wait for the run and answer with its output
)

// SignatureHeader carries a signed delivery's signature: "sha256=" and the
// hex HMAC-SHA256 of the raw body under the trigger's secret (the header
// GitHub sends, so its webhooks work as they are).
const SignatureHeader = "X-Hub-Signature-256"

// Replay protection. A delivery id (DeliveryHeader, or GitHub's) that a
// trigger received within DeliveryMemory is refused with 409. A signed
// delivery may carry TimestampHeader (Unix seconds): its signature then
// covers "<timestamp>.<body>", and it is refused outside TimestampTolerance
// of the server's clock.
const (
	DeliveryHeader       = "X-Slipway-Delivery"
	GitHubDeliveryHeader = "X-GitHub-Delivery"
	TimestampHeader      = "X-Slipway-Timestamp"
	DeliveryMemory       = 24 * time.Hour
	TimestampTolerance   = 5 * time.Minute
)

// Trigger as the API shows it.
type Trigger struct {
	ID          string  `json:"id" format:"uuid"`
	WorkflowID  string  `json:"workflow_id" format:"uuid"`
	Kind        string  `json:"kind" enum:"webhook,schedule,intercom,helpscout,email,email_plus_address"`
	Enabled     bool    `json:"enabled"`
	Config      Config  `json:"config"`
	HasSecret   bool    `json:"has_secret" doc:"Webhook: deliveries must carry X-Hub-Signature-256"`
	Token       *string `json:"token,omitempty" doc:"Webhook: the receiver secret, only in the answers that create or rotate it"`
	ReceiverURL *string `json:"receiver_url,omitempty" doc:"Webhook, conversation: where to deliver (POST), only in the answers that create or rotate the token"`
	// SigningSecret is shown once, in the answer that creates a
	// conversation trigger.
	SigningSecret *string `json:"signing_secret,omitempty" doc:"Conversation (intercom, helpscout): the secret deliveries are signed with, only in the answer that creates the trigger"`
	// EmailAddress is where mail starts the workflow (email_plus_address).
	EmailAddress *string    `json:"email_address,omitempty" doc:"email_plus_address: the plus address that starts the workflow (inbox+alias@domain)"`
	NextFireAt   *time.Time `json:"next_fire_at" nullable:"true" doc:"Schedule: the next tick"`
	LastFiredAt  *time.Time `json:"last_fired_at" nullable:"true"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`

	workspaceID  string
	createdBy    *string
	tokenHash    *string
	sealedSecret *string
}

// Config is a trigger's configuration; each kind uses its own fields.
type Config struct {
	ResponseMode       string          `json:"response_mode,omitempty" enum:"async,sync" doc:"Webhook: async (default) or sync"`
	SyncTimeoutSeconds int64           `json:"sync_timeout_seconds,omitempty" minimum:"1" maximum:"300" doc:"Webhook, sync: how long to wait for the run (default 30); then 202"`
	Cron               string          `json:"cron,omitempty" maxLength:"200" doc:"Schedule: a five-field cron expression or @hourly, @daily, …"`
	Timezone           string          `json:"timezone,omitempty" maxLength:"100" doc:"Schedule: the IANA time zone of the cron expression (default UTC)"`
	IntervalSeconds    int64           `json:"interval_seconds,omitempty" minimum:"1" maximum:"31622400" doc:"Schedule: fire every this many seconds instead of a cron expression"`
	Input              json.RawMessage `json:"input,omitempty" doc:"Schedule: the runs' input"`
	ResourceID         string          `json:"resource_id,omitempty" maxLength:"36" doc:"email, email_plus_address: the imap resource whose mailbox is read"`
	Alias              string          `json:"alias,omitempty" maxLength:"63" doc:"email_plus_address: the alias (mail to inbox+alias@domain starts the workflow); one is made from the workflow's name when none is given"`
}

// CreateInput creates a trigger.
type CreateInput struct {
	Kind    string `json:"kind" maxLength:"32" doc:"webhook, schedule, intercom, helpscout, email_plus_address or email (legacy: every message of the mailbox that no alias takes)"`
	Enabled *bool  `json:"enabled,omitempty" doc:"Default true"`
	Config  Config `json:"config,omitempty"`
	Secret  string `json:"secret,omitempty" maxLength:"256" doc:"Webhook: the HMAC signing secret deliveries must be signed with (never shown again). Intercom: the app's client secret (Intercom signs with it); Help Scout: the secret you paste there (one is made when none is given, and shown once)"`
}

// UpdateInput changes a trigger; absent fields stay.
type UpdateInput struct {
	Enabled      *bool   `json:"enabled,omitempty"`
	Config       *Config `json:"config,omitempty" doc:"Replaces the whole configuration"`
	Secret       string  `json:"secret,omitempty" maxLength:"256" doc:"Webhook: a new signing secret"`
	RemoveSecret bool    `json:"remove_secret,omitempty" doc:"Webhook: deliveries need no signature any more"`
}

// Delivery answers a webhook delivery: the run it started and, for a sync
// webhook whose run ended in time, the run.
type Delivery struct {
	Sync   bool // the trigger answers with the run
	RunID  string
	Status string          // the run's status when answered
	Output json.RawMessage // a succeeded run's output
	Error  string          // a failed run's error
}
