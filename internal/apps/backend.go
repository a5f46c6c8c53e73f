package apps

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"slipway/internal/apps/manifest"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
	"slipway/internal/resources"
	"slipway/internal/scripts"
)

// BackendCall is a call of a backend function: its positional arguments
// only (the statement is the manifest's).
type BackendCall struct {
	Args []json.RawMessage `json:"args" maxItems:"32" doc:"Positional arguments, checked against the function's declared types"`
}

// BackendResult is what a function answered.
type BackendResult struct {
	Function string `json:"function"`
	Result   any    `json:"result" doc:"query: {rows, row_count, columns, truncated}; execute: {rows_affected}; script: the last line the script printed, as JSON (a string when it was not JSON)"`
}

// errBadToken answers an App token that is not the app's (or no app's).
var errBadToken = apperr.New(apperr.CodeUnauthorized, "unknown or expired App token, or not this app's")

// backendEntry is what a backend call needs of an app with a
// deployment, read once and kept until the app's deployment or token
// changes (or backendTTL).
type backendEntry struct {
	found       bool // the app has a deployment
	workspaceID string
	tokenHash   string
	status      string
	manifest    *manifest.Manifest // the deployment's release's; nil when it does not read
}

// backendTTL bounds what a lost invalidation leaves: a revoked App token
// is refused at once on this server and, through the bus, on the others.
const backendTTL = 10 * time.Second

func (s *Service) backendOf(ctx context.Context, appID string) (*backendEntry, error) {
	now := time.Now()
	if e, ok := s.routes.backends.Get(appID, now); ok {
		return e, nil
	}
	epoch := s.routes.backends.Epoch()
	e, y, err := backendByApp(ctx, s.DB.R, appID)
	if err != nil {
		return nil, err
	}
	if e.found {
		if e.manifest, err = manifest.Parse(y); err != nil {
			e.manifest = nil
		}
	}
	s.routes.backends.Put(appID, e, now, time.Time{}, epoch)
	return e, nil
}

// caller is who calls an app's backend: the app's App token, or a member
// of the app's workspace with a session. Anyone else gets the answer an
// unknown app gets.
func (s *Service) caller(ctx context.Context, appID string) (workspaceID string, entry *backendEntry, userID string, err error) {
	if !ids.Valid(appID) {
		if _, ok := actor.AppTokenFrom(ctx); ok {
			return "", nil, "", errBadToken
		}
		return "", nil, "", notFound
	}
	e, err := s.backendOf(ctx, appID)
	if err != nil {
		return "", nil, "", err
	}
	var u *actor.User
	if tok, ok := actor.AppTokenFrom(ctx); ok {
		if !strings.HasPrefix(tok, ViewTokenPrefix) {
			if !e.found || e.tokenHash == "" || subtle.ConstantTimeCompare([]byte(e.tokenHash), []byte(hashToken(tok))) != 1 {
				return "", nil, "", errBadToken
			}
			return e.workspaceID, e, "", nil
		}
		// A page's view token: its viewer, who must still be a member.
		id := s.viewer(tok, appID, s.Clock.Now())
		if id == "" || !e.found {
			return "", nil, "", errBadToken
		}
		u = &actor.User{ID: id, Approved: true}
	} else if u, err = actor.RequireApproved(ctx); err != nil {
		return "", nil, "", err
	}
	ws := e.workspaceID
	if !e.found {
		if ws, err = appWorkspace(ctx, s.DB.R, appID); err != nil {
			return "", nil, "", err
		}
	}
	if ok, err := s.member(ctx, u, ws); err != nil || !ok {
		if err == nil {
			err = notFound
		}
		return "", nil, "", err
	}
	return ws, e, u.ID, nil
}

// member reports whether u is a member of the workspace (the cached
// resolution the API's X-Workspace-Id goes through).
func (s *Service) member(ctx context.Context, u *actor.User, workspaceID string) (bool, error) {
	_, err := s.Viewers.ResolveWorkspace(ctx, u, workspaceID)
	if errors.Is(err, apperr.ErrForbidden) || errors.Is(err, apperr.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// served is the manifest backend calls follow: the deployed release's
// (what runs), or the app's own before its first deploy (for listing).
func (s *Service) served(ctx context.Context, workspaceID, appID string, e *backendEntry) (*manifest.Manifest, bool, error) {
	if e != nil && e.found {
		if e.manifest == nil {
			return nil, false, apperr.New(apperr.CodeInternal, "the deployed release's manifest does not read")
		}
		return e.manifest, e.status == "deployed", nil
	}
	y, deployed, err := servedManifest(ctx, s.DB.R, workspaceID, appID)
	if err != nil {
		return nil, false, err
	}
	m, err := parseManifest(y)
	if err != nil {
		return nil, false, apperr.Wrap(apperr.CodeInternal, err, "the app's manifest does not read")
	}
	return m, deployed, nil
}

// Backend lists the app's backend functions: name, operation and
// arguments, never their SQL.
func (s *Service) Backend(ctx context.Context, appID string) ([]manifest.FunctionInfo, error) {
	ws, e, _, err := s.caller(ctx, appID)
	if err != nil {
		return nil, err
	}
	m, _, err := s.served(ctx, ws, appID, e)
	if err != nil {
		return nil, err
	}
	out := make([]manifest.FunctionInfo, 0, len(m.Functions))
	for i := range m.Functions {
		out = append(out, m.Functions[i].Public())
	}
	return out, nil
}

// Call runs a backend function of the deployed release with the given
// arguments: its statement against the app's database or a resource the
// manifest declares, within the function's time and row limits.
func (s *Service) Call(ctx context.Context, appID, name string, in BackendCall) (*BackendResult, error) {
	ws, e, _, err := s.caller(ctx, appID)
	if err != nil {
		return nil, err
	}
	m, deployed, err := s.served(ctx, ws, appID, e)
	if err != nil {
		return nil, err
	}
	if !deployed {
		return nil, apperr.New(apperr.CodeConflict, "the app is not deployed: its backend runs from a deployment")
	}
	f, ok := m.Function(name)
	if !ok {
		return nil, apperr.NotFound("function")
	}
	out, err := s.run(ctx, ws, appID, f, in.Args)
	if err != nil {
		return nil, err
	}
	return &BackendResult{Function: name, Result: out}, nil
}

// CallFunction runs a function of a deployed app of the workspace for a
// workflow's app node: arguments by name, bound in the declared order.
func (s *Service) CallFunction(ctx context.Context, workspaceID, appID, function string, params map[string]any) (any, error) {
	if !ids.Valid(appID) {
		return nil, notFound
	}
	e, err := s.backendOf(ctx, appID)
	if err != nil {
		return nil, err
	}
	if e.found && e.workspaceID != workspaceID {
		return nil, notFound
	}
	m, deployed, err := s.served(ctx, workspaceID, appID, e)
	if err != nil {
		return nil, err
	}
	if !deployed {
		return nil, apperr.New(apperr.CodeConflict, "the app is not deployed: its backend runs from a deployment")
	}
	f, ok := m.Function(function)
	if !ok {
		return nil, apperr.New(apperr.CodeNotFound, "the app has no backend function %q", function)
	}
	args := make([]json.RawMessage, 0, len(f.Args))
	known := map[string]bool{}
	for _, a := range f.Args {
		known[a.Name] = true
	}
	for k := range params {
		if !known[k] {
			return nil, apperr.BadRequest("params.%s: function %s takes no argument %s", k, function, k)
		}
	}
	for _, a := range f.Args {
		v, ok := params[a.Name]
		if !ok {
			args = append(args, json.RawMessage("null"))
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, apperr.BadRequest("params.%s: %v", a.Name, err)
		}
		args = append(args, raw)
	}
	res, err := s.run(ctx, workspaceID, appID, f, args)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// run binds a function's arguments and runs its statement against the
// app's database or a resource the manifest declares.
func (s *Service) run(ctx context.Context, ws, appID string, f *manifest.Function, raw []json.RawMessage) (any, error) {
	name := f.Name
	args, err := f.Bind(raw)
	if err != nil {
		return nil, apperr.BadRequest("%v", err)
	}
	timeout := time.Duration(f.TimeoutMS) * time.Millisecond
	var out any
	switch {
	case f.Operation == manifest.OpScript:
		return s.callScript(ctx, ws, appID, f, raw, timeout)
	case f.Resource != "":
		rid, err := s.Resources.IDByName(ctx, ws, f.Resource)
		if err != nil {
			return nil, err
		}
		if rid == "" {
			return nil, apperr.New(apperr.CodeConflict, "function %s uses resource %s, which the workspace does not have", name, f.Resource)
		}
		out, err = s.Resources.Statement(ctx, ws, rid, resources.Statement{SQL: f.SQL, Params: args, Write: f.Operation == manifest.OpExecute,
			MaxRows: f.MaxRows, Timeout: timeout})
		if err != nil {
			return nil, err
		}
	default:
		out, err = s.dbs.run(ctx, appID, Statement{SQL: f.SQL, Args: args, Write: f.Operation == manifest.OpExecute, MaxRows: f.MaxRows, Timeout: timeout})
		if err != nil {
			var ae *apperr.Error
			if errors.As(err, &ae) {
				return nil, err
			}
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == nil && errors.Is(err, context.Canceled) {
				return nil, apperr.New(apperr.CodeUnprocessable, "function %s ran past its %d ms", name, f.TimeoutMS)
			}
			// The tenant's SQL failed: the database's words, as theirs.
			return nil, apperr.New(apperr.CodeUnprocessable, "function %s failed: %v", name, err)
		}
	}
	return out, nil
}

// callScript runs a script function: the workspace's saved script with
// the function's slug, through the worker port, waited for up to the
// function's time. The script reads {input: {app_id, function, args},
// script} from $SLIPWAY_INPUT (args positional, as sent); its last line
// printed is the answer.
func (s *Service) callScript(ctx context.Context, ws, appID string, f *manifest.Function, raw []json.RawMessage, timeout time.Duration) (any, error) {
	if s.Scripts == nil {
		return nil, apperr.New(apperr.CodeUnprocessable, "function %s is a script: this server runs no scripts for apps", f.Name)
	}
	args := raw
	if args == nil {
		args = []json.RawMessage{}
	}
	input, err := json.Marshal(map[string]any{"app_id": appID, "function": f.Name, "args": args})
	if err != nil {
		return nil, err
	}
	out, err := s.Scripts.Call(ctx, ws, f.Script, input, timeout)
	var failed *scripts.CallFailed
	switch {
	case errors.Is(err, apperr.ErrNotFound):
		return nil, apperr.New(apperr.CodeConflict, "function %s runs script %s, which the workspace does not have", f.Name, f.Script)
	case errors.Is(err, scripts.ErrCallTimeout):
		return nil, apperr.New(apperr.CodeUnprocessable, "function %s ran past its %d ms", f.Name, f.TimeoutMS)
	case errors.As(err, &failed):
		return nil, apperr.New(apperr.CodeUnprocessable, "function %s failed: %s", f.Name, failed.Reason)
	case err != nil:
		return nil, err
	}
	if out == nil {
		return nil, nil
	}
	return out, nil
}
