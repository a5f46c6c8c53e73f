package triggers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
	"slipway/internal/workflows"
)

type workflowIDInput struct {
	ID string `path:"id" doc:"Workflow id"`
}

type createInput struct {
	ID   string `path:"id" doc:"Workflow id"`
	Body CreateInput
}

type triggerIDInput struct {
	TriggerID string `path:"trigger_id" doc:"Trigger id"`
}

type updateInput struct {
	TriggerID string `path:"trigger_id" doc:"Trigger id"`
	Body      UpdateInput
}

type deliveryInput struct {
	Token     string `path:"token" maxLength:"200" doc:"The trigger's receiver token"`
	Signature string `header:"X-Hub-Signature-256" doc:"sha256=<hex HMAC-SHA256 of the body>, when the trigger has a secret"`
	RawBody   []byte `contentType:"application/json"`
	header    http.Header
	query     url.Values
}

// Resolve keeps the request's headers and query (huma hands over only
// declared ones) for the run's trigger.
func (in *deliveryInput) Resolve(ctx huma.Context) []error {
	in.header = http.Header{}
	ctx.EachHeader(func(name, value string) { in.header.Add(name, value) })
	u := ctx.URL()
	in.query = u.Query()
	return nil
}

type conversationInput struct {
	Token   string `path:"token" maxLength:"200" doc:"The trigger's receiver token"`
	RawBody []byte `contentType:"application/json"`
	header  http.Header
}

// Resolve keeps the request's headers (the provider's signature and
// event headers, the content type).
func (in *conversationInput) Resolve(ctx huma.Context) []error {
	in.header = http.Header{}
	ctx.EachHeader(func(name, value string) { in.header.Add(name, value) })
	return nil
}

// DeliveryOutput answers a delivery: 202 with the run id, or for a sync
// webhook whose run ended, 200 with its output (422 when it failed).
type DeliveryOutput struct {
	Status int
	Body   json.RawMessage
}

// Register mounts the trigger operations; the receiver needs no session
// (its token and signature authenticate it).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Workflow triggers"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}

	huma.Register(api, ops.Op("get_api_workflows_id_triggers", http.MethodGet, "/api/workflows/{id}/triggers", "A workflow's triggers, oldest first"),
		func(ctx context.Context, in *workflowIDInput) (*httpx.Out[[]Trigger], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_workflows_id_triggers", http.MethodPost, "/api/workflows/{id}/triggers",
		"Add a trigger (a webhook's answer shows its token and receiver URL once)")),
		func(ctx context.Context, in *createInput) (*httpx.Out[*Trigger], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.Create(ctx, ws(ctx), u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("patch_api_workflows_triggers_trigger_id", http.MethodPatch, "/api/workflows/triggers/{trigger_id}",
		"Enable, disable or reconfigure a trigger"),
		func(ctx context.Context, in *updateInput) (*httpx.Out[*Trigger], error) {
			return httpx.Reply(s.Update(ctx, ws(ctx), in.TriggerID, in.Body))
		})
	huma.Register(api, ops.Op("delete_api_workflows_triggers_trigger_id", http.MethodDelete, "/api/workflows/triggers/{trigger_id}", "Delete a trigger"),
		func(ctx context.Context, in *triggerIDInput) (*httpx.DeletedOutput, error) {
			if _, err := s.Delete(ctx, ws(ctx), in.TriggerID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
		})
	huma.Register(api, ops.Op("post_api_workflows_triggers_trigger_id_rotate_token", http.MethodPost, "/api/workflows/triggers/{trigger_id}/rotate-token",
		"A new receiver token, shown once; the old one stops working at once"),
		func(ctx context.Context, in *triggerIDInput) (*httpx.Out[*Trigger], error) {
			return httpx.Reply(s.RotateToken(ctx, ws(ctx), in.TriggerID))
		})

	registerEmail(api, s, ops, ws)

	for _, provider := range []struct{ kind, name, headers string }{
		{KindIntercom, "Intercom", "`X-Hub-Signature: sha1=<hex HMAC-SHA1 of the body>` (Intercom signs with the app's client secret)"},
		{KindHelpScout, "Help Scout", "`X-HelpScout-Signature: <base64 HMAC-SHA1 of the body>` as Help Scout sends it, or `X-Hub-Signature: sha1=<hex>`; " +
			"the event in `X-HelpScout-Event`"},
	} {
		op := httpx.Operations{Tags: []string{"Workflow triggers"}}.Op("post_api_workflows_triggers_"+provider.kind+"_token", http.MethodPost,
			"/api/workflows/triggers/"+provider.kind+"/{token}", "Deliver "+provider.name+"'s conversation webhook: a customer's message starts work")
		op.Description = "Signed with " + provider.headers + ". A customer's message (topics `conversation.user.created` and " +
			"`conversation.user.replied`) becomes a gated card on the workflow's project's backlog (the inbox column) and starts a run with the " +
			"body verbatim as its input and, in code nodes, `SC_TRIGGER_CONTEXT`: `{status: enqueued, backlog_item_id, reason: null}`. Other topics, " +
			"notifications that carry no customer message, stale replays (a message older than 6 h) and duplicates (by the provider's message id) " +
			"are acknowledged `{status: skipped, backlog_item_id: null, reason}`. A body that is not a JSON object of the provider's shape, or " +
			"another content type, is 400; a missing or wrong signature 401; an unknown token 404."
		op = httpx.BodyLimit(op, MaxBodyBytes)
		op.SkipValidateBody = true // the raw body is checked after the signature
		op.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound}
		kind := provider.kind
		huma.Register(api, op, func(ctx context.Context, in *conversationInput) (*httpx.Out[*ConversationAck], error) {
			return httpx.Reply(s.DeliverConversation(ctx, kind, in.Token, in.header, in.RawBody))
		})
	}

	receive := httpx.Operations{Tags: []string{"Workflow triggers"}}.Op("post_api_workflows_triggers_webhook_token", http.MethodPost,
		"/api/workflows/triggers/webhook/{token}", "Deliver to a webhook trigger: its JSON body starts a run")
	receive = httpx.BodyLimit(receive, MaxBodyBytes)
	receive.SkipValidateBody = true // the raw body is the run's, checked by Deliver after the signature
	receive.DefaultStatus = http.StatusAccepted
	huma.Register(api, receive, func(ctx context.Context, in *deliveryInput) (*DeliveryOutput, error) {
		d, err := s.Deliver(ctx, in.Token, in.header, in.query, in.RawBody)
		if err != nil {
			return nil, err
		}
		switch {
		case !d.Sync:
		case d.Status == workflows.RunSucceeded:
			out := d.Output
			if len(out) == 0 {
				out = json.RawMessage("null")
			}
			return &DeliveryOutput{Status: http.StatusOK, Body: out}, nil
		case d.Status == workflows.RunFailed || d.Status == workflows.RunCancelled:
			return nil, apperr.New(apperr.CodeUnprocessable, "run %s %s: %s", d.RunID, d.Status, d.Error)
		}
		body, _ := json.Marshal(map[string]string{"run_id": d.RunID, "status": d.Status})
		return &DeliveryOutput{Status: http.StatusAccepted, Body: body}, nil
	})
}

type aliasTriggerInput struct {
	TriggerID string `path:"tid" doc:"Trigger id"`
}

type aliasesInput struct {
	WorkspaceID string `path:"wid" doc:"Workspace id: the active workspace"`
	Limit       int    `query:"limit" minimum:"0" doc:"Default 50, at most 200"`
	Offset      int    `query:"offset" minimum:"0"`
}

type unroutedInput struct {
	UID        uint32 `path:"uid" minimum:"1" doc:"The message's UID in the mailbox's unrouted folder"`
	ResourceID string `query:"resource_id" maxLength:"36" doc:"The mailbox (needed when the workspace reads more than one)"`
}

type createAliasInput struct {
	UID  uint32 `path:"uid" minimum:"1" doc:"The message's UID in the mailbox's unrouted folder"`
	Body CreateAliasInput
}

// registerEmail mounts the email trigger operations.
func registerEmail(api huma.API, s *Service, ops httpx.Operations, ws func(context.Context) *actor.Workspace) {
	huma.Register(api, ops.Op("get_api_workflow_triggers_tid_email_alias", http.MethodGet, "/api/workflow_triggers/{tid}/email_alias",
		"An email_plus_address trigger's alias and address (404 when the trigger is missing, another workspace's, or of another kind)"),
		func(ctx context.Context, in *aliasTriggerInput) (*httpx.Out[*EmailAlias], error) {
			return httpx.Reply(s.EmailAlias(ctx, ws(ctx), in.TriggerID))
		})
	huma.Register(api, ops.Op("get_api_workspaces_wid_email_aliases", http.MethodGet, "/api/workspaces/{wid}/email_aliases",
		"The workspace's email aliases, newest first (another workspace's id is 403)"),
		func(ctx context.Context, in *aliasesInput) (*httpx.Out[*EmailAliasPage], error) {
			return httpx.Reply(s.EmailAliases(ctx, ws(ctx), in.WorkspaceID, in.Limit, in.Offset))
		})
	huma.Register(api, ops.Op("get_api_workflows_email_unrouted", http.MethodGet, "/api/workflows/email-unrouted",
		"Mail no email trigger took, from the unrouted folders of the workspace's mailboxes, newest first (workspace admins)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[*UnroutedList], error) {
			return httpx.Reply(s.Unrouted(ctx, ws(ctx)))
		})
	huma.Register(api, ops.Op("delete_api_workflows_email_unrouted_uid", http.MethodDelete, "/api/workflows/email-unrouted/{uid}",
		"Delete an unrouted message from the mail server (workspace admins)"),
		func(ctx context.Context, in *unroutedInput) (*httpx.DeletedOutput, error) {
			ok, err := s.DeleteUnrouted(ctx, ws(ctx), in.UID, in.ResourceID)
			if err != nil {
				return nil, err
			}
			out := httpx.Deleted()
			out.Body.Deleted = ok
			return out, nil
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_workflows_email_unrouted_uid_create_alias", http.MethodPost,
		"/api/workflows/email-unrouted/{uid}/create-alias",
		"Mint an alias for a workflow (a new email_plus_address trigger) and move the message back to the inbox, where it is routed to it (workspace admins)")),
		func(ctx context.Context, in *createAliasInput) (*httpx.Out[*AliasCreated], error) {
			u, _ := actor.UserFrom(ctx)
			return httpx.Reply(s.CreateAlias(ctx, ws(ctx), u, in.UID, in.Body))
		})
	huma.Register(api, ops.Op("post_api_workflows_triggers_trigger_id_migrate_email", http.MethodPost, "/api/workflows/triggers/{trigger_id}/migrate-email",
		"Turn a legacy email trigger into an email_plus_address trigger with an alias of its own (workspace admins)"),
		func(ctx context.Context, in *triggerIDInput) (*httpx.Out[*Trigger], error) {
			return httpx.Reply(s.MigrateEmail(ctx, ws(ctx), in.TriggerID))
		})
}
