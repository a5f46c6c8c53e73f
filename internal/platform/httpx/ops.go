package httpx

import (
	"context"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
)

// PathIDs is a middleware of every operation: the identifiers in its path
// (id and *_id, all UUIDs but provider_id, a provider's name) are checked
// once a caller is known (an anonymous one gets the operation's own 401):
// one that is not a UUID (a NUL byte, say) is not found, like an unknown
// one, and never reaches a database (PostgreSQL refuses a NUL with a 500).
// Runner operations check their job ids themselves.
func PathIDs(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		if _, ok := actor.UserFrom(hctx.Context()); ok {
			if op := hctx.Operation(); op != nil {
				for _, p := range op.Parameters {
					if p.In != "path" || p.Name == "provider_id" || (p.Name != "id" && !strings.HasSuffix(p.Name, "_id")) {
						continue
					}
					if !ids.Valid(hctx.Param(p.Name)) {
						e := FromError(hctx.Context(), apperr.New(apperr.CodeNotFound, "not found"))
						_ = huma.WriteErr(api, hctx, e.GetStatus(), e.Message, e)
						return
					}
				}
			}
		}
		next(hctx)
	}
}

// Operations declares the operations of one area of the API with the tags,
// security and middlewares they share, so a domain's http.go only says what
// differs: id, method, path, summary.
type Operations struct {
	Tags        []string
	Security    []map[string][]string
	Middlewares huma.Middlewares
}

// Op is one operation of the area.
func (o Operations) Op(id, method, path, summary string) huma.Operation {
	return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Tags: o.Tags,
		Security: o.Security, Middlewares: o.Middlewares}
}

// BodyLimit lets op take bodies of up to n bytes, n included: Huma refuses a
// body of exactly its MaxBodyBytes (it cannot tell one from a longer body).
func BodyLimit(op huma.Operation, n int64) huma.Operation {
	op.MaxBodyBytes = n + 1
	return op
}

// Created is op answering 201 Created.
func Created(op huma.Operation) huma.Operation {
	op.DefaultStatus = http.StatusCreated
	return op
}

// Out is an operation's answer with a JSON body.
type Out[T any] struct{ Body T }

// Reply turns a service's (value, error) into an operation's answer.
func Reply[T any](v T, err error) (*Out[T], error) {
	if err != nil {
		return nil, err
	}
	return &Out[T]{Body: v}, nil
}

// SessionSecurity marks an operation that needs a signed-in user (OpenAPI).
var SessionSecurity = []map[string][]string{{"session": {}}}

// DeletedOutput is the spec's delete acknowledgement: {deleted: boolean}.
type DeletedOutput struct {
	Body struct {
		Deleted bool `json:"deleted" doc:"False only when the row was already gone"`
	}
}

// Deleted acknowledges a delete that removed the row.
func Deleted() *DeletedOutput {
	o := &DeletedOutput{}
	o.Body.Deleted = true
	return o
}

// SignedIn is the middleware of operations for any signed-in user, approved
// or not (accepting an invite): it authenticates before anything else.
func SignedIn(api huma.API) func(huma.Context, func(huma.Context)) {
	return gate(api, actor.RequireUser)
}

// Approved is the middleware of operations for signed-in, approved users:
// it authenticates before anything else, so a body is validated only for a
// caller who may send it (an anonymous or unapproved caller gets 401 or 403
// whatever the body).
func Approved(api huma.API) func(huma.Context, func(huma.Context)) {
	return gate(api, actor.RequireApproved)
}

// Admin is the middleware of instance admin operations (the admin layer
// guards the tree too).
func Admin(api huma.API) func(huma.Context, func(huma.Context)) {
	return gate(api, actor.RequireAdmin)
}

func gate(api huma.API, require func(context.Context) (*actor.User, error)) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		if _, err := require(hctx.Context()); err != nil {
			e := FromError(hctx.Context(), err)
			_ = huma.WriteErr(api, hctx, e.GetStatus(), e.Message, e)
			return
		}
		next(hctx)
	}
}
