package codefiles

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

// maxBody lets a file of the largest size through even when JSON escapes
// most of its characters (a control character takes six bytes escaped).
const maxBody = 2 << 20

type libGetInput struct {
	Path string `query:"path" doc:"A file's path: answer that file with its content instead of the list"`
}

type libPutInput struct {
	IfMatch string `header:"If-Match" doc:"Replace only if the file's sha256 is this (or, for *, if the file exists); else 412"`
	Body    FileInput
}

type libDeleteInput struct {
	Path string `query:"path" required:"true" doc:"The file's path"`
}

type nodeGetInput struct {
	ID      string `path:"id" doc:"Workflow id"`
	NodeKey string `path:"node_key" maxLength:"64" doc:"Key of a code node of the workflow"`
	Path    string `query:"path" doc:"A file's path: answer that file with its content instead of the list"`
}

type nodePutInput struct {
	ID      string `path:"id" doc:"Workflow id"`
	NodeKey string `path:"node_key" maxLength:"64" doc:"Key of a code node of the workflow"`
	IfMatch string `header:"If-Match" doc:"Replace only if the file's sha256 is this (or, for *, if the file exists); else 412"`
	Body    FileInput
}

type nodeDeleteInput struct {
	ID      string `path:"id" doc:"Workflow id"`
	NodeKey string `path:"node_key" maxLength:"64" doc:"Key of a code node of the workflow"`
	Path    string `query:"path" required:"true" doc:"The file's path"`
}

func nodeSet(id, key string) Set { return Set{WorkflowID: id, NodeKey: key} }

// Listing is the answer of a GET of files: the list (no path asked) or one
// file with its content.
type Listing struct {
	files []FileInfo
	file  *File
}

// MarshalJSON writes the list or the file.
func (l Listing) MarshalJSON() ([]byte, error) {
	if l.file != nil {
		return json.Marshal(l.file)
	}
	return json.Marshal(l.files)
}

// Schema documents both shapes.
func (Listing) Schema(r huma.Registry) *huma.Schema {
	list := r.Schema(reflect.TypeFor[[]FileInfo](), true, "")
	list.Description = "Without ?path=: the files, by path, without their contents"
	file := r.Schema(reflect.TypeFor[File](), true, "")
	return &huma.Schema{OneOf: []*huma.Schema{list, {Ref: file.Ref, Description: "With ?path=: that file with its content"}}}
}

// GetOutput answers a GET of files; ETag is the file's quoted sha256 when
// one file is asked for.
type GetOutput struct {
	ETag string `header:"ETag"`
	Body Listing
}

func (s *Service) get(ctx context.Context, ws *actor.Workspace, set Set, path string) (*GetOutput, error) {
	if path == "" {
		fs, err := s.List(ctx, ws, set)
		if err != nil {
			return nil, err
		}
		return &GetOutput{Body: Listing{files: fs}}, nil
	}
	f, err := s.Get(ctx, ws, set, path)
	if err != nil {
		return nil, err
	}
	return &GetOutput{ETag: `"` + f.SHA256 + `"`, Body: Listing{file: f}}, nil
}

func deleted(ok bool, err error) (*httpx.DeletedOutput, error) {
	if err != nil {
		return nil, err
	}
	out := httpx.Deleted()
	out.Body.Deleted = ok
	return out, nil
}

// Register mounts the code library and code node file operations; scoped
// resolves the active workspace.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Code files"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	put := func(op huma.Operation) huma.Operation {
		return httpx.BodyLimit(op, maxBody)
	}

	huma.Register(api, ops.Op("get_api_code_lib_files", http.MethodGet, "/api/code-lib/files",
		"The workspace's code library (mounted read-only at $SLIPWAY_LIB in code runs): its files by path, or with ?path= one file with its content"),
		func(ctx context.Context, in *libGetInput) (*GetOutput, error) {
			return s.get(ctx, ws(ctx), Set{}, in.Path)
		})
	huma.Register(api, put(ops.Op("put_api_code_lib_files", http.MethodPut, "/api/code-lib/files",
		"Create or replace a file of the code library (at most 256 KiB; 200 files and 4 MiB in all)")),
		func(ctx context.Context, in *libPutInput) (*httpx.Out[*FileInfo], error) {
			return httpx.Reply(s.Put(ctx, ws(ctx), Set{}, in.Body, in.IfMatch))
		})
	huma.Register(api, ops.Op("delete_api_code_lib_files", http.MethodDelete, "/api/code-lib/files", "Delete a file of the code library"),
		func(ctx context.Context, in *libDeleteInput) (*httpx.DeletedOutput, error) {
			return deleted(s.Delete(ctx, ws(ctx), Set{}, in.Path))
		})

	huma.Register(api, ops.Op("get_api_workflows_id_nodes_node_key_files", http.MethodGet, "/api/workflows/{id}/nodes/{node_key}/files",
		"A code node's files (mounted read-only at $SLIPWAY_FILES in its runs): by path, or with ?path= one file with its content"),
		func(ctx context.Context, in *nodeGetInput) (*GetOutput, error) {
			return s.get(ctx, ws(ctx), nodeSet(in.ID, in.NodeKey), in.Path)
		})
	huma.Register(api, put(ops.Op("put_api_workflows_id_nodes_node_key_files", http.MethodPut, "/api/workflows/{id}/nodes/{node_key}/files",
		"Create or replace a file of a code node (at most 256 KiB; 200 files and 4 MiB per node)")),
		func(ctx context.Context, in *nodePutInput) (*httpx.Out[*FileInfo], error) {
			return httpx.Reply(s.Put(ctx, ws(ctx), nodeSet(in.ID, in.NodeKey), in.Body, in.IfMatch))
		})
	huma.Register(api, ops.Op("delete_api_workflows_id_nodes_node_key_files", http.MethodDelete, "/api/workflows/{id}/nodes/{node_key}/files",
		"Delete a file of a code node"),
		func(ctx context.Context, in *nodeDeleteInput) (*httpx.DeletedOutput, error) {
			return deleted(s.Delete(ctx, ws(ctx), nodeSet(in.ID, in.NodeKey), in.Path))
		})
}
