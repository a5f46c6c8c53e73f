package httpx

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
)

// PathIDs is a middleware of every operation: it keeps path parameters
// that no row can match (a NUL or another control character, bytes that are
// not UTF-8) from reaching a database, where PostgreSQL refuses them with a
// 500. An identifier (id, *_id) reaches the operation as the nil UUID, which
// no row has, so the caller gets exactly the answer of an unknown id (after
// the operation's own authentication); any other parameter is a 400.
func PathIDs(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		if op := hctx.Operation(); op != nil {
			var bad []string
			for _, p := range op.Parameters {
				if p.In != "path" {
					continue
				}
				v := hctx.Param(p.Name)
				if utf8.ValidString(v) && !strings.ContainsFunc(v, unicode.IsControl) {
					continue
				}
				if p.Name != "id" && !strings.HasSuffix(p.Name, "_id") {
					e := NewError(apperr.CodeBadRequest, p.Name+" must be text without control characters")
					_ = huma.WriteErr(api, hctx, e.GetStatus(), e.Message, e)
					return
				}
				bad = append(bad, p.Name)
			}
			if len(bad) > 0 {
				hctx = unknownIDs{humaContext: hctx, names: bad}
			}
		}
		next(hctx)
	}
}

// unknownIDs answers the nil UUID for the path parameters it names.
type unknownIDs struct {
	humaContext
	names []string
}

// humaContext names the embedded context (its Context method would clash
// with a field of that name).
type humaContext = huma.Context

// NilID is the UUID no row has.
const NilID = "00000000-0000-0000-0000-000000000000"

func (c unknownIDs) Param(name string) string {
	if slices.Contains(c.names, name) {
		return NilID
	}
	return c.humaContext.Param(name)
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

// OrgSelector reads the headers that choose the organization a request
// acts on: one definition for every organization route. Huma reads the
// fields of exported embedded structs only, so domains embed it.
type OrgSelector struct {
	OrganizationID string `header:"X-Organization-Id" doc:"Organization to act on; default: the active workspace's organization"`
	WorkspaceID    string `header:"X-Workspace-Id" doc:"Active workspace; default: your default joined workspace"`
}
