package apps

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"time"

	"slipway/internal/apps/manifest"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
	"slipway/internal/resources"
)

// BackendCall is a call of a backend function: its positional arguments
// only (the statement is the manifest's).
type BackendCall struct {
	Args []json.RawMessage `json:"args" maxItems:"32" doc:"Positional arguments, checked against the function's declared types"`
}

// BackendResult is what a function answered.
type BackendResult struct {
	Function string `json:"function"`
	Result   any    `json:"result" doc:"query: {rows, row_count, columns, truncated}; execute: {rows_affected}"`
}

// errBadToken answers an App token that is not the app's (or no app's).
var errBadToken = apperr.New(apperr.CodeUnauthorized, "unknown or expired App token, or not this app's")

// caller is who calls an app's backend: the app's App token, or a member
// of the app's workspace with a session. Anyone else gets the answer an
// unknown app gets.
func (s *Service) caller(ctx context.Context, appID string) (workspaceID string, err error) {
	if tok, ok := actor.AppTokenFrom(ctx); ok {
		ws, hash, err := appToken(ctx, s.DB.R, appID)
		if err != nil {
			return "", err
		}
		if hash == "" || subtle.ConstantTimeCompare([]byte(hash), []byte(hashToken(tok))) != 1 {
			return "", errBadToken
		}
		return ws, nil
	}
	u, err := actor.RequireApproved(ctx)
	if err != nil {
		return "", err
	}
	if !ids.Valid(appID) {
		return "", notFound
	}
	ws, err := appWorkspace(ctx, s.DB.R, appID)
	if err != nil {
		return "", err
	}
	ok, err := s.Members.CanAccess(ctx, u.ID, ws)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", notFound
	}
	return ws, nil
}

// served is the manifest backend calls follow: the deployed release's
// (what runs), or the app's own before its first deploy (for listing).
func (s *Service) served(ctx context.Context, workspaceID, appID string) (*manifest.Manifest, bool, error) {
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
	ws, err := s.caller(ctx, appID)
	if err != nil {
		return nil, err
	}
	m, _, err := s.served(ctx, ws, appID)
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
	ws, err := s.caller(ctx, appID)
	if err != nil {
		return nil, err
	}
	m, deployed, err := s.served(ctx, ws, appID)
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
	m, deployed, err := s.served(ctx, workspaceID, appID)
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
		return nil, apperr.New(apperr.CodeUnprocessable, "function %s is a script: scripts do not run from app backends yet", name)
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
