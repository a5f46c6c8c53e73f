package workflows

import (
	"context"
	"errors"
)

// Apps calls hosted apps' backend functions for app nodes.
type Apps interface {
	// CallFunction runs a function of a deployed app of the workspace with
	// its arguments by name, and answers its result.
	CallFunction(ctx context.Context, workspaceID, appID, function string, params map[string]any) (any, error)
}

var errNoApps = errors.New("apps are not available on this server")

// appCall runs an app node: its params' string values rendered as
// templates, then the app's function; its result is the node's output.
func (e *Engine) appCall(ctx context.Context, s step) outcome {
	c, err := decodeConfig[AppConfig](s.node.Config)
	if err != nil {
		return failed("config: %v", err)
	}
	params := make(map[string]any, len(c.Params))
	for k, v := range c.Params {
		if str, ok := v.(string); ok {
			if v, err = e.exprs.render(ctx, str, s.env); err != nil {
				return failed("params.%s: %v", k, err)
			}
		}
		params[k] = v
	}
	if e.apps == nil {
		return failed("%v", errNoApps)
	}
	out, err := e.apps.CallFunction(ctx, s.run.WorkspaceID, c.AppID, c.Action, params)
	if err != nil {
		return resourceFailed(nil, err)
	}
	return succeed(HandleOut, out)
}
