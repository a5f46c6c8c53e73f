package triggers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	tokens "slipway/internal/platform/token"
	"slipway/internal/platform/vault"
	"slipway/internal/workflows"
)

// Limits.
const (
	defaultSyncTimeout = 30 * time.Second
	maxInputBytes      = 64 << 10 // a schedule's input
	MaxBodyBytes       = 1 << 20  // a webhook delivery
	tokenPrefix        = "whk_"
	ReceiverPath       = "/api/workflows/triggers/webhook/"
)

// Service manages triggers and receives what they deliver.
type Service struct {
	db        *db.DB
	clock     clock.Clock
	sealer    *vault.Sealer
	workflows *workflows.Service
	backlog   Backlog   // conversation triggers' cards (nil: they refuse deliveries)
	mail      Mailboxes // email triggers' mailboxes (nil: no email triggers)
	holder    string    // this replica, as it holds mailbox pollers
	mailLease atomic.Int64
	log       *slog.Logger
	publicURL string // receiver URLs are absolute when set
}

// NewService returns the triggers service; bl takes conversation
// triggers' messages onto their project's backlog, mail opens email
// triggers' mailboxes.
func NewService(d *db.DB, clk clock.Clock, sealer *vault.Sealer, wf *workflows.Service, bl Backlog, mail Mailboxes, log *slog.Logger,
	publicURL string) *Service {
	return &Service{db: d, clock: clk, sealer: sealer, workflows: wf, backlog: bl, mail: mail, holder: ids.New(), log: log,
		publicURL: strings.TrimSuffix(publicURL, "/")}
}

func printable(field, s string) error {
	if text.StripControls(s) != s {
		return apperr.BadRequest("%s must not contain control or bidirectional-override characters", field)
	}
	return nil
}

// ValidateConfig checks a trigger's kind and configuration the way a
// create does (for importers and their fuzzers); it fills the defaults.
func ValidateConfig(kind string, c *Config) error {
	_, err := checkConfig(kind, c)
	return err
}

// checkConfig validates a kind's configuration and fills its defaults.
func checkConfig(kind string, c *Config) (*schedule, error) {
	switch kind {
	case KindWebhook:
		switch {
		case c.Cron != "" || c.Timezone != "" || c.IntervalSeconds != 0 || len(c.Input) > 0:
			return nil, apperr.BadRequest("config: cron, timezone, interval_seconds and input apply to schedule triggers")
		case c.ResponseMode == "":
			c.ResponseMode = ModeAsync
		}
		if c.ResponseMode == ModeSync && c.SyncTimeoutSeconds == 0 {
			c.SyncTimeoutSeconds = int64(defaultSyncTimeout / time.Second)
		}
		if c.ResponseMode == ModeAsync && c.SyncTimeoutSeconds != 0 {
			return nil, apperr.BadRequest("config.sync_timeout_seconds applies to sync webhooks")
		}
		return nil, nil
	case KindEmail, KindEmailPlus:
		return nil, checkEmailConfig(kind, c)
	case KindIntercom, KindHelpScout:
		if c.ResponseMode != "" || c.SyncTimeoutSeconds != 0 || c.Cron != "" || c.Timezone != "" || c.IntervalSeconds != 0 || len(c.Input) > 0 {
			return nil, apperr.BadRequest("config: a %s trigger takes no configuration", kind)
		}
		return nil, nil
	case KindSchedule:
		if c.ResponseMode != "" || c.SyncTimeoutSeconds != 0 {
			return nil, apperr.BadRequest("config: response_mode and sync_timeout_seconds apply to webhook triggers")
		}
		if len(c.Input) > maxInputBytes {
			return nil, apperr.BadRequest("config.input is larger than %d bytes", maxInputBytes)
		}
		if len(c.Input) > 0 && !json.Valid(c.Input) {
			return nil, apperr.BadRequest("config.input must be JSON")
		}
		sched, err := parseSchedule(*c)
		if err != nil {
			return nil, err
		}
		if sched.cron != nil && c.Timezone == "" {
			c.Timezone = "UTC"
		}
		return sched, nil
	}
	return nil, apperr.BadRequest("unknown trigger kind %q: webhook, schedule, intercom, helpscout, email_plus_address or email", kind)
}

func checkSecret(secret string) error {
	if len(secret) < 16 {
		return apperr.BadRequest("secret must be at least 16 characters")
	}
	return printable("secret", secret)
}

func secretContext(id string) string { return "trigger:" + id + ":secret" }

// withToken puts a fresh token on a webhook or conversation trigger and
// shows it.
func (s *Service) withToken(t *Trigger) {
	token, hash := tokens.New(tokenPrefix)
	t.tokenHash = &hash
	u := s.publicURL + "/api/workflows/triggers/" + t.Kind + "/" + token
	t.Token, t.ReceiverURL = &token, &u
}

// List lists a workflow's triggers, oldest first.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, workflowID string) ([]Trigger, error) {
	if _, err := s.workflows.Get(ctx, ws, workflowID); err != nil {
		return nil, err
	}
	ts, err := list(ctx, s.db.R, "workspace_id = $1 AND workflow_id = $2 ORDER BY created_at, id", ws.ID, workflowID)
	if err != nil {
		return nil, err
	}
	return ts, s.withAddresses(ctx, s.db.R, ws.ID, ts)
}

// Get reads a trigger of the workspace.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Trigger, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("trigger")
	}
	t, err := getTrigger(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	one := []Trigger{*t}
	if err := s.withAddresses(ctx, s.db.R, ws.ID, one); err != nil {
		return nil, err
	}
	return &one[0], nil
}

// Create adds a trigger to a workflow. A webhook's answer carries its
// token and receiver URL, shown this once.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, u *actor.User, workflowID string, in CreateInput) (*Trigger, error) {
	var t *Trigger
	err := s.db.Tx(ctx, func(tx *db.Tx) (err error) {
		t, err = s.CreateTx(ctx, tx, ws, u, workflowID, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// CreateTx is Create in tx, for callers that create the workflow in the
// same transaction (a template's workflow with its triggers).
func (s *Service) CreateTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, workflowID string, in CreateInput) (*Trigger, error) {
	w, err := s.workflows.GetTx(ctx, tx, ws, workflowID)
	if err != nil {
		return nil, err
	}
	sched, err := checkConfig(in.Kind, &in.Config)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC()
	t := &Trigger{ID: ids.New(), WorkflowID: workflowID, Kind: in.Kind, Enabled: in.Enabled == nil || *in.Enabled, Config: in.Config,
		CreatedAt: now, UpdatedAt: now, workspaceID: ws.ID}
	if u != nil {
		t.createdBy = &u.ID
	}
	switch in.Kind {
	case KindWebhook:
		if in.Secret != "" {
			if err := checkSecret(in.Secret); err != nil {
				return nil, err
			}
			sealed := s.sealer.Seal(in.Secret, secretContext(t.ID))
			t.sealedSecret, t.HasSecret = &sealed, true
		}
		s.withToken(t)
	case KindIntercom, KindHelpScout:
		// Signed always: Intercom signs with the app's client secret (give
		// it); Help Scout with the one you paste there (one is made if you
		// give none, shown this once).
		secret := in.Secret
		if secret == "" {
			secret = newSigningSecret()
		} else if err := checkSecret(secret); err != nil {
			return nil, err
		}
		sealed := s.sealer.Seal(secret, secretContext(t.ID))
		t.sealedSecret, t.HasSecret, t.SigningSecret = &sealed, true, &secret
		s.withToken(t)
	case KindSchedule:
		if in.Secret != "" {
			return nil, apperr.BadRequest("secret applies to webhook triggers")
		}
		next := sched.first(now)
		t.NextFireAt = &next
	case KindEmail, KindEmailPlus:
		if in.Secret != "" {
			return nil, apperr.BadRequest("secret applies to webhook and conversation triggers")
		}
	}
	if err := insert(ctx, tx, t); err != nil {
		return nil, err
	}
	if emailKind(t.Kind) {
		if err := s.bindMailbox(ctx, tx, t, w.Name); err != nil {
			return nil, err
		}
		if err := update(ctx, tx, t); err != nil { // the alias made
			return nil, err
		}
	}
	return t, nil
}

// Update enables, disables or reconfigures a trigger. A schedule that is
// enabled or changed starts from its next tick after now.
func (s *Service) Update(ctx context.Context, ws *actor.Workspace, id string, in UpdateInput) (*Trigger, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("trigger")
	}
	var out *Trigger
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTrigger(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		wasEnabled, reschedule := t.Enabled, false
		if in.Config != nil {
			t.Config, reschedule = *in.Config, true
		}
		sched, err := checkConfig(t.Kind, &t.Config)
		if err != nil {
			return err
		}
		if in.Enabled != nil {
			t.Enabled = *in.Enabled
		}
		switch {
		case in.RemoveSecret && conversational(t.Kind):
			return apperr.BadRequest("a %s trigger is always signed: give a new secret instead", t.Kind)
		case (in.Secret != "" || in.RemoveSecret) && t.Kind != KindWebhook && !conversational(t.Kind):
			return apperr.BadRequest("secret applies to webhook triggers")
		case in.Secret != "" && in.RemoveSecret:
			return apperr.BadRequest("give secret or remove_secret, not both")
		case in.Secret != "":
			if err := checkSecret(in.Secret); err != nil {
				return err
			}
			sealed := s.sealer.Seal(in.Secret, secretContext(t.ID))
			t.sealedSecret = &sealed
		case in.RemoveSecret:
			t.sealedSecret = nil
		}
		t.HasSecret = t.sealedSecret != nil
		now := s.clock.Now().UTC()
		if sched != nil && (reschedule || (t.Enabled && !wasEnabled)) {
			next := sched.first(now)
			t.NextFireAt = &next
		}
		t.UpdatedAt = now
		if emailKind(t.Kind) && in.Config != nil {
			w, err := s.workflows.GetTx(ctx, tx, ws, t.WorkflowID)
			if err != nil {
				return err
			}
			if err := s.bindMailbox(ctx, tx, t, w.Name); err != nil {
				return err
			}
		}
		out = t
		return update(ctx, tx, t)
	})
	if err == nil && out.Kind == KindEmailPlus && out.EmailAddress == nil {
		one := []Trigger{*out}
		err = s.withAddresses(ctx, s.db.R, ws.ID, one)
		out = &one[0]
	}
	return out, err
}

// Delete removes a trigger.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, apperr.NotFound("trigger")
	}
	ok, err := remove(ctx, s.db.W, ws.ID, id)
	if err == nil && !ok {
		err = apperr.NotFound("trigger")
	}
	return ok, err
}

// RotateToken gives a webhook a new token, shown this once; the old one
// stops working at once.
func (s *Service) RotateToken(ctx context.Context, ws *actor.Workspace, id string) (*Trigger, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("trigger")
	}
	var out *Trigger
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTrigger(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if t.Kind != KindWebhook && !conversational(t.Kind) {
			return apperr.BadRequest("only webhook and conversation triggers have a token")
		}
		s.withToken(t)
		t.UpdatedAt = s.clock.Now().UTC()
		out = t
		return update(ctx, tx, t)
	})
	return out, err
}

// Deliver receives a webhook delivery: the token names the trigger, the
// signature (when the trigger has a secret) must match the raw body, and
// the body must be JSON; then the run starts with the body as its input
// and {kind, trigger_id, body, query, headers} as its trigger. A sync
// webhook waits for the run (up to its timeout) and answers with it.
func (s *Service) Deliver(ctx context.Context, token string, header http.Header, query url.Values, body []byte) (*Delivery, error) {
	// Authenticate before anything is read from the body.
	if !strings.HasPrefix(token, tokenPrefix) || len(token) > 100 {
		return nil, apperr.NotFound("trigger")
	}
	t, err := byTokenHash(ctx, s.db, tokens.Hash(token))
	if err != nil {
		return nil, err
	}
	if t.Kind != KindWebhook {
		return nil, apperr.NotFound("trigger")
	}
	if !t.Enabled {
		return nil, apperr.New(apperr.CodeForbidden, "this trigger is disabled")
	}
	if t.sealedSecret != nil {
		secret, err := s.sealer.Open(*t.sealedSecret, secretContext(t.ID))
		if err != nil {
			return nil, err
		}
		signed := body
		if ts := header.Get(TimestampHeader); ts != "" {
			if err := s.fresh(ts); err != nil {
				return nil, err
			}
			signed = append([]byte(ts+"."), body...)
		}
		if err := verify(secret, header.Get(SignatureHeader), signed); err != nil {
			return nil, err
		}
	}
	deliveryID, err := deliveryID(header)
	if err != nil {
		return nil, err
	}
	input, trigger, err := parseDelivery(t.ID, header, query, body)
	if err != nil {
		return nil, err
	}
	var started *workflows.Started
	// Concurrent deliveries share commits (each in its own savepoint).
	err = s.db.Batch(ctx, func(tx *db.Tx) (err error) {
		if deliveryID != "" {
			// In the run's transaction: a delivery that started nothing
			// (it failed) may be sent again.
			first, err := recordDelivery(ctx, tx, t.ID, deliveryID, s.clock.Now().UTC())
			if err != nil {
				return err
			}
			if !first {
				return apperr.New(apperr.CodeConflict, "delivery %q was received already", deliveryID)
			}
		}
		started, err = s.workflows.StartRunTx(ctx, tx, t.workspaceID, t.createdBy, t.WorkflowID, input, trigger)
		return err
	})
	if err != nil {
		return nil, err
	}
	d := &Delivery{RunID: started.ID, Status: started.Status, Output: started.Output, Error: started.Error, Sync: t.Config.ResponseMode == ModeSync}
	if t.Config.ResponseMode != ModeSync || runEnded(d.Status) {
		return d, nil // a run of inline nodes only has ended already
	}
	v, err := s.workflows.WaitRun(ctx, t.workspaceID, d.RunID, time.Duration(t.Config.SyncTimeoutSeconds)*time.Second)
	if err != nil {
		return nil, err
	}
	d.Status, d.Output, d.Error = v.Status, v.Output, v.Error
	return d, nil
}

// deliveryID is a delivery's id (ours, else GitHub's), "" when it has none.
func deliveryID(header http.Header) (string, error) {
	id := header.Get(DeliveryHeader)
	if id == "" {
		id = header.Get(GitHubDeliveryHeader)
	}
	if len(id) > 200 || text.StripControls(id) != id {
		return "", apperr.BadRequest("a delivery id has at most 200 characters and no control characters")
	}
	return id, nil
}

// fresh checks a signed delivery's timestamp against the clock.
func (s *Service) fresh(ts string) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return apperr.New(apperr.CodeUnauthorized, "%s must be Unix seconds", TimestampHeader)
	}
	if d := s.clock.Now().Sub(time.Unix(sec, 0)); d > TimestampTolerance || d < -TimestampTolerance {
		return apperr.New(apperr.CodeUnauthorized, "%s is more than %s away from the server's clock: a replay, or a clock to set right",
			TimestampHeader, TimestampTolerance)
	}
	return nil
}

// Prune forgets delivery ids older than DeliveryMemory (every replica,
// hourly).
func (s *Service) Prune(ctx context.Context) (int, error) {
	now := s.clock.Now().UTC()
	n, err := pruneDeliveries(ctx, s.db.W, now.Add(-DeliveryMemory))
	if err != nil {
		return n, err
	}
	m, err := pruneMessages(ctx, s.db.W, now.Add(-MailMemory))
	return n + m, err
}

func runEnded(status string) bool {
	return status == workflows.RunSucceeded || status == workflows.RunFailed || status == workflows.RunCancelled
}

// verify checks a delivery's signature in constant time.
func verify(secret, signature string, body []byte) error {
	if signature == "" {
		return apperr.New(apperr.CodeUnauthorized, "this trigger takes signed deliveries: send %s: sha256=<hex HMAC-SHA256 of the body>", SignatureHeader)
	}
	got, err := hex.DecodeString(strings.TrimPrefix(signature, "sha256="))
	if err != nil || !strings.HasPrefix(signature, "sha256=") {
		return apperr.New(apperr.CodeUnauthorized, "%s must be sha256=<hex>", SignatureHeader)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return apperr.New(apperr.CodeUnauthorized, "the signature does not match the body")
	}
	return nil
}

// forwardedHeaders are the request headers a run's trigger shows.
var forwardedHeaders = []string{"Content-Type", "User-Agent", "X-GitHub-Event", "X-GitHub-Delivery", "X-Gitlab-Event", "X-Request-Id"}

// parseDelivery reads a delivery's body (JSON, or nothing) into the run's
// input and trigger.
func parseDelivery(triggerID string, header http.Header, query url.Values, body []byte) (input, trigger json.RawMessage, err error) {
	if len(body) > MaxBodyBytes {
		return nil, nil, apperr.BadRequest("the body is larger than %d bytes", MaxBodyBytes)
	}
	input = json.RawMessage("null")
	if len(strings.TrimSpace(string(body))) > 0 {
		if !json.Valid(body) {
			return nil, nil, apperr.BadRequest("the body must be JSON")
		}
		// Runs keep it as JSON, which cannot hold NUL (PostgreSQL's jsonb).
		if strings.Contains(string(body), `\u0000`) {
			var v any
			if err := json.Unmarshal(body, &v); err != nil || hasNUL(v) {
				return nil, nil, apperr.BadRequest("the body must not contain NUL characters")
			}
		}
		input = body
	}
	q := map[string]any{}
	for k, vs := range query {
		if strings.ContainsRune(k, 0) || slices.ContainsFunc(vs, func(v string) bool { return strings.ContainsRune(v, 0) }) {
			return nil, nil, apperr.BadRequest("the query must not contain NUL characters")
		}
		if len(vs) == 1 {
			q[k] = vs[0]
		} else {
			q[k] = vs
		}
	}
	h := map[string]string{}
	for _, name := range forwardedHeaders {
		if v := header.Get(name); v != "" && text.StripControls(v) == v {
			h[name] = v
		}
	}
	trigger, err = json.Marshal(map[string]any{"kind": KindWebhook, "trigger_id": triggerID, "body": input, "query": q, "headers": h})
	if err != nil {
		// Query strings and headers that are not valid UTF-8 still encode
		// (replaced); nothing else can fail.
		return nil, nil, apperr.BadRequest("the request cannot be recorded: %v", err)
	}
	return input, trigger, nil
}

// hasNUL reports a NUL in any string or key of a decoded JSON value.
func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		return slices.ContainsFunc(v, hasNUL)
	case map[string]any:
		for k, x := range v {
			if strings.ContainsRune(k, 0) || hasNUL(x) {
				return true
			}
		}
	}
	return false
}

// CreateWithWorkflow creates a workflow and its triggers in one transaction
// (templates, imports): a trigger that cannot be created leaves no
// workflow behind. u owns the triggers; reword (may be nil) rewrites the
// error of the i-th trigger.
func (s *Service) CreateWithWorkflow(ctx context.Context, ws *actor.Workspace, u *actor.User, in workflows.Input, specs []CreateInput,
	reword func(i int, err error) error) (*workflows.Workflow, []Trigger, error) {
	var w *workflows.Workflow
	var ts []Trigger
	err := s.db.Tx(ctx, func(tx *db.Tx) (err error) {
		if w, err = s.workflows.CreateTx(ctx, tx, ws, in); err != nil {
			return err
		}
		ts = make([]Trigger, 0, len(specs))
		for i, spec := range specs {
			t, err := s.CreateTx(ctx, tx, ws, u, w.ID, spec)
			if err != nil {
				if reword != nil {
					err = reword(i, err)
				}
				return err
			}
			ts = append(ts, *t)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return w, ts, nil
}
