package conversations

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type idInput struct {
	ID string `path:"id"`
}

type conversationInput struct {
	ID    string `path:"id" doc:"The conversation: a task id"`
	Limit int    `query:"limit" minimum:"0" maximum:"500" doc:"Page size (default 100)"`
}

type listInput struct {
	TaskID string `query:"task_id" doc:"Only this task's messages"`
	Role   string `query:"role" enum:"user,assistant," doc:"Only messages of this role"`
	Limit  int    `query:"limit" minimum:"0" maximum:"500" doc:"Page size (default 100)"`
}

type sendInput struct {
	Body struct {
		TaskID string `json:"task_id" format:"uuid" doc:"The task whose agent gets the message"`
		Text   string `json:"text" maxLength:"20000"`
	}
}

type interveneInput struct {
	ID   string `path:"id" doc:"Task id"`
	Body struct {
		Text string `json:"text" maxLength:"20000"`
	}
}

// Register mounts the agent message endpoints and the task's intervene
// action (active workspace).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Agent messages"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	user := func(ctx context.Context) *actor.User {
		u, _ := actor.UserFrom(ctx)
		return u
	}

	huma.Register(api, ops.Op("get_api_agent_conversations_id_messages", http.MethodGet, "/api/agent/conversations/{id}/messages",
		"A task's conversation with its agent, oldest first"),
		func(ctx context.Context, in *conversationInput) (*httpx.Out[[]AgentMessage], error) {
			return httpx.Reply(s.Conversation(ctx, ws(ctx), in.ID, in.Limit))
		})
	huma.Register(api, ops.Op("get_api_agent_messages", http.MethodGet, "/api/agent/messages", "Messages of the active workspace, newest first"),
		func(ctx context.Context, in *listInput) (*httpx.Out[[]AgentMessage], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), in.TaskID, in.Role, in.Limit))
		})
	send := httpx.Created(ops.Op("post_api_agent_messages", http.MethodPost, "/api/agent/messages", "Send a message to the agent working on a task"))
	send.Description = "Queued until the agent's model has read it (then delivered: the agent says so once a model call that carried it answered); " +
		"a queued task's agent gets it when it starts; one the model never read is cancelled when the task ends. 409 for a task no agent works on."
	huma.Register(api, send, func(ctx context.Context, in *sendInput) (*httpx.Out[*AgentMessage], error) {
		return httpx.Reply(s.Send(ctx, ws(ctx), user(ctx), in.Body.TaskID, in.Body.Text))
	})
	huma.Register(api, ops.Op("get_api_agent_messages_id", http.MethodGet, "/api/agent/messages/{id}", "A message"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*AgentMessage], error) {
			return httpx.Reply(s.Get(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("post_api_agent_messages_id_cancel", http.MethodPost, "/api/agent/messages/{id}/cancel", "Withdraw a message the agent has not been handed yet"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*AgentMessage], error) {
			return httpx.Reply(s.Cancel(ctx, ws(ctx), in.ID))
		})
	intervene := httpx.Created(ops.Op("post_api_tasks_id_intervene", http.MethodPost, "/api/tasks/{id}/intervene", "Send the running agent a message (an intervention)"))
	intervene.Description = "The same as POST /api/agent/messages for this task; recorded as an intervention event on the task."
	huma.Register(api, intervene, func(ctx context.Context, in *interveneInput) (*httpx.Out[*AgentMessage], error) {
		return httpx.Reply(s.Send(ctx, ws(ctx), user(ctx), in.ID, in.Body.Text))
	})
}
