package app

import (
	"context"
	"errors"
	"net/http"
	"regexp"

	"slipway/internal/executor/sandbox"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
	"slipway/internal/tenancy"
)

// uncontained is the refusal where the process backend contains nothing:
// tenant code would run with the server's rights, so only code of
// workspaces whose members are all instance admins runs.
const uncontained = "this server runs code as plain processes and " + sandbox.Remedy +
	" (only workspaces whose members are all instance admins may run code here)"

// CodeGate keeps tenant code off a server that cannot contain it: the
// worker asks it before running any work, and the API asks it before
// accepting a request that starts code, so the caller gets the reason at
// once.
type CodeGate struct{ ten *tenancy.Service }

// Admit is the worker's check.
func (g *CodeGate) Admit(ctx context.Context, workspaceID string) error {
	ok, err := g.ten.OnlyAdmins(ctx, workspaceID)
	if err != nil {
		return errors.New("checking who may run code on this server failed; try again")
	}
	if !ok {
		return errors.New(uncontained)
	}
	return nil
}

// startsCode are the operations whose purpose is to start tenant code
// (others that may, such as a command's invocation, are refused by the
// worker's check when their work runs).
var startsCode = regexp.MustCompile(`^/api/(tasks|tasks/group|tasks/group/[^/]+/launch|tasks/[^/]+/(launch|rerun|restart|subtasks)|` +
	`scripts/[^/]+/run|workflows/[^/]+/runs)$`)

// Middleware refuses a request that starts code unless the caller is an
// instance admin in a workspace of instance admins only.
func (g *CodeGate) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !startsCode.MatchString(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		u, ok := actor.UserFrom(r.Context())
		if !ok || !u.Approved {
			next.ServeHTTP(w, r) // the operation answers 401 or 403 itself
			return
		}
		ws, err := g.ten.ResolveWorkspace(r.Context(), u, r.Header.Get(tenancy.WorkspaceHeader))
		if err != nil {
			next.ServeHTTP(w, r) // the operation answers for the workspace
			return
		}
		if !u.Admin {
			httpx.WriteError(w, r, apperr.New(apperr.CodeForbidden, "%s", uncontained))
			return
		}
		if err := g.Admit(r.Context(), ws.ID); err != nil {
			httpx.WriteError(w, r, apperr.New(apperr.CodeForbidden, "%s", err.Error()))
			return
		}
		next.ServeHTTP(w, r)
	})
}
