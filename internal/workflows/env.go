package workflows

import (
	"context"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/redact"
	"slipway/internal/platform/ttlcache"
)

// EnvSource resolves the env vars of a run in a project of a workspace
// (the env vars service): the values, and which of them are secrets.
type EnvSource interface {
	// Resolve reads through q (the caller's transaction).
	Resolve(ctx context.Context, q db.Queryer, workspaceID, projectID string) (map[string]string, []string, error)
}

// resolvedEnv is what a run's expressions see as env, and its redactor.
type resolvedEnv struct {
	vars map[string]any
	red  *redact.Redactor
}

// envTTL bounds how long a resolved environment is reused: a changed env
// var reaches runs within it. Resolving reads the database and the vault,
// so doing it on every transition would cost the hot path a query per
// node.
const envTTL = 5 * time.Second

func newEnvCache() *ttlcache.Cache[resolvedEnv] { return ttlcache.New[resolvedEnv](envTTL, 4096) }

// state is a run's state with its environment attached, read through q
// (the transition's transaction: a second connection could wait for ever on
// a pool the transitions hold).
func (e *Engine) state(ctx context.Context, q db.Queryer, run *runRow, g *Graph, nodes []*nodeRun, now time.Time) (*runState, error) {
	st := newRunState(run, g, nodes, now)
	env, err := e.environment(ctx, q, run.WorkspaceID, run.ProjectID)
	if err != nil {
		return nil, err
	}
	st.vars, st.red = env.vars, env.red
	return st, nil
}

// environment resolves (or reuses) a project's env.
func (e *Engine) environment(ctx context.Context, q db.Queryer, workspaceID, projectID string) (resolvedEnv, error) {
	if e.env == nil {
		return resolvedEnv{}, nil
	}
	key := workspaceID + "/" + projectID
	now := time.Now()
	if v, ok := e.envs.Get(key, now); ok {
		return v, nil
	}
	epoch := e.envs.Epoch()
	vars, secrets, err := e.env.Resolve(ctx, q, workspaceID, projectID)
	if err != nil {
		return resolvedEnv{}, err
	}
	out := resolvedEnv{vars: make(map[string]any, len(vars))}
	for k, v := range vars {
		out.vars[k] = v
	}
	if len(secrets) > 0 {
		out.red = redact.New(secrets...)
	}
	e.envs.Put(key, out, now, time.Time{}, epoch)
	return out, nil
}

// envVars is the env expressions see (a fresh map: expressions cannot
// change the cached one).
func (st *runState) envVars() map[string]any {
	out := make(map[string]any, len(st.vars))
	for k, v := range st.vars {
		out[k] = v
	}
	return out
}
