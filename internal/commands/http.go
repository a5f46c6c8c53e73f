package commands

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type optionsInput struct {
	ProviderID string `path:"provider_id" maxLength:"60"`
	Q          string `query:"q" maxLength:"200" doc:"Case-insensitive substring of the value or label; empty: the whole (capped) list"`
}

type wordInput struct {
	Word string `path:"word" maxLength:"60" doc:"A command word or alias"`
	Body *struct {
		Args Args `json:"args,omitempty" doc:"Parameter values by name: strings (numbers for int_range)"`
	}
}

// Register mounts the command protocol (active workspace).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Commands"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	args := func(in *wordInput) Args {
		if in.Body == nil {
			return nil
		}
		return in.Body.Args
	}
	huma.Register(api, ops.Op("get_api_commands", http.MethodGet, "/api/commands", "The commands your workspace role may run"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]Descriptor], error) {
			return httpx.Reply(s.List(ws(ctx)), nil)
		})
	options := ops.Op("get_api_commands_options_provider_id", http.MethodGet, "/api/commands/options/{provider_id}", "Choices of a dynamic parameter")
	options.Description = "Providers: recent_tasks, models, efforts, projects, agents, workflows, pending_approvals. At most 20 choices; an unregistered provider is 404."
	huma.Register(api, options, func(ctx context.Context, in *optionsInput) (*httpx.Out[[]Choice], error) {
		u, _ := actor.UserFrom(ctx)
		return httpx.Reply(s.Options(ctx, ws(ctx), u, in.ProviderID, in.Q))
	})
	resolve := ops.Op("post_api_commands_word_resolve", http.MethodPost, "/api/commands/{word}/resolve", "Check a command's input: ready, need_param or invalid")
	resolve.Description = "Changes nothing. An unknown word, or one your role may not run, is 404."
	huma.Register(api, resolve, func(ctx context.Context, in *wordInput) (*httpx.Out[*Outcome], error) {
		u, _ := actor.UserFrom(ctx)
		return httpx.Reply(s.Resolve(ctx, ws(ctx), u, in.Word, args(in)))
	})
	invoke := ops.Op("post_api_commands_word_invoke", http.MethodPost, "/api/commands/{word}/invoke", "Run a command whose input is ready")
	invoke.Description = "An under-specified or invalid input gets the need_param or invalid guidance and runs nothing; a ready one runs and answers executed with the invocation and a plan."
	huma.Register(api, invoke, func(ctx context.Context, in *wordInput) (*httpx.Out[*Outcome], error) {
		u, _ := actor.UserFrom(ctx)
		return httpx.Reply(s.Invoke(ctx, ws(ctx), u, in.Word, args(in)))
	})
}
