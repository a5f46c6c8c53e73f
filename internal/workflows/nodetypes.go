package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// NodeTypeCreate is the body of a user node type: a saved script and the
// JSON Schema of the params a code node gives it.
type NodeTypeCreate struct {
	Slug         string          `json:"slug" minLength:"1" maxLength:"63" doc:"Lowercase letters, digits, _ and -, starting with a letter; not a built-in kind"`
	Name         string          `json:"name" minLength:"1" maxLength:"200"`
	Description  string          `json:"description,omitempty" maxLength:"2000"`
	Category     string          `json:"category,omitempty" maxLength:"64" doc:"Default custom"`
	ScriptID     string          `json:"script_id" format:"uuid" doc:"The saved script the node runs"`
	ConfigSchema json.RawMessage `json:"config_schema" doc:"JSON Schema (an object schema) of the node's params"`
}

var nodeTypeSlug = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// maxSchemaBytes caps a node type's config schema.
const maxSchemaBytes = 64 << 10

// ListNodeTypes lists the built-in kinds and then the workspace's own node
// types, by slug.
func (s *Service) ListNodeTypes(ctx context.Context, ws *actor.Workspace) ([]NodeType, error) {
	own, err := queryNodeTypes(ctx, s.db.R, "workspace_id = $1 ORDER BY slug", ws.ID)
	if err != nil {
		return nil, err
	}
	return append(NodeTypes(), own...), nil
}

// GetNodeType reads one of the workspace's node types.
func (s *Service) GetNodeType(ctx context.Context, ws *actor.Workspace, id string) (*NodeType, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("node type")
	}
	return getNodeType(ctx, s.db.R, "workspace_id = $1 AND id = $2", ws.ID, id)
}

// CreateNodeType adds a node type: a saved script of the workspace and the
// JSON Schema its params must meet. A slug taken by a built-in kind or
// another node type is a 400.
func (s *Service) CreateNodeType(ctx context.Context, ws *actor.Workspace, u *actor.User, in NodeTypeCreate) (*NodeType, error) {
	var t *NodeType
	err := s.db.Tx(ctx, func(tx *db.Tx) (err error) {
		t, err = s.InstallNodeTypeTx(ctx, tx, ws, u, "", in)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// checkNodeType validates a node type's definition: the node type it
// would be (without id and times).
func checkNodeType(in NodeTypeCreate) (*NodeType, error) {
	switch {
	case !nodeTypeSlug.MatchString(in.Slug):
		return nil, apperr.BadRequest("slug must be lowercase letters, digits, _ and -, starting with a letter")
	case KindOf(in.Slug) != nil:
		return nil, apperr.BadRequest("slug %q is a built-in node kind", in.Slug)
	}
	name, err := text.Name("name", in.Name, 200)
	if err != nil {
		return nil, err
	}
	category := in.Category
	if category == "" {
		category = "custom"
	}
	for field, v := range map[string]string{"description": in.Description, "category": category} {
		if text.StripControls(strings.ReplaceAll(v, "\n", " ")) != strings.ReplaceAll(v, "\n", " ") {
			return nil, apperr.BadRequest("%s must not contain control or bidirectional-override characters", field)
		}
	}
	if _, err := paramsSchema(in.ConfigSchema); err != nil {
		return nil, err
	}
	if !ids.Valid(in.ScriptID) {
		return nil, apperr.BadRequest("script_id: no such script in this workspace")
	}
	return &NodeType{Slug: in.Slug, Name: name, Description: in.Description, Category: category, Available: true, ConfigSchema: in.ConfigSchema,
		Handles: append([]string{}, outError...), ScriptID: &in.ScriptID}, nil
}

// InstallNodeTypeTx writes a node type in tx: a new one (id ""), or the
// one of that id (a marketplace install's, from an earlier version)
// changed to the definition given.
func (s *Service) InstallNodeTypeTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, id string, in NodeTypeCreate) (*NodeType, error) {
	t, err := checkNodeType(in)
	if err != nil {
		return nil, err
	}
	if s.scripts == nil {
		return nil, apperr.BadRequest("script_id: no such script in this workspace")
	}
	if _, _, err := s.scripts.Current(ctx, tx, ws.ID, in.ScriptID); errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.BadRequest("script_id: no such script in this workspace")
	} else if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	t.CreatedAt = &now
	if id != "" {
		cur, err := getNodeType(ctx, tx, "workspace_id = $1 AND id = $2", ws.ID, id)
		if err != nil {
			return nil, err
		}
		if cur.Slug != t.Slug {
			if taken, err := nodeTypeSlugTaken(ctx, tx, ws.ID, t.Slug); err != nil {
				return nil, err
			} else if taken {
				return nil, apperr.BadRequest("slug %q is already a node type of this workspace", t.Slug)
			}
		}
		t.ID, t.CreatedAt = cur.ID, cur.CreatedAt
		return t, updateNodeType(ctx, tx, ws.ID, id, t, now)
	}
	taken, err := nodeTypeSlugTaken(ctx, tx, ws.ID, t.Slug)
	if err != nil {
		return nil, err
	}
	if taken {
		return nil, apperr.BadRequest("slug %q is already a node type of this workspace", t.Slug)
	}
	newID := ids.New()
	t.ID = &newID
	var createdBy *string
	if u != nil {
		createdBy = &u.ID
	}
	return t, insertNodeType(ctx, tx, ws.ID, newID, t, createdBy, now)
}

// paramsSchema reads a node type's config schema: a JSON object schema
// of type object, without references (it stands alone).
func paramsSchema(raw json.RawMessage) (s *huma.Schema, err error) {
	bad := func(format string, args ...any) error {
		return apperr.BadRequest("config_schema: "+format, args...)
	}
	if len(raw) == 0 {
		return nil, bad("required")
	}
	if len(raw) > maxSchemaBytes {
		return nil, bad("larger than %d bytes", maxSchemaBytes)
	}
	var probe map[string]any
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, bad("must be a JSON object")
	}
	if strings.Contains(string(raw), `"$ref"`) {
		return nil, bad("must not use $ref")
	}
	s = &huma.Schema{}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, bad("%v", err)
	}
	if s.Type != "object" {
		return nil, bad(`type must be "object"`)
	}
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, bad("not usable: %v", p) // e.g. a pattern that is no regular expression
		}
	}()
	s.PrecomputeMessages()
	return s, nil
}

// checkParams validates a code node's params against its node type's
// schema.
func checkParams(t *NodeType, params map[string]any) error {
	s, err := paramsSchema(t.ConfigSchema)
	if err != nil {
		return err
	}
	if params == nil {
		params = map[string]any{}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	res := &huma.ValidateResult{}
	huma.Validate(huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer), s, huma.NewPathBuffer(make([]byte, 0, 64), 0),
		huma.ModeWriteToServer, v, res)
	if len(res.Errors) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(res.Errors))
	for _, e := range res.Errors {
		if d, ok := e.(*huma.ErrorDetail); ok && d.Location != "" {
			msgs = append(msgs, d.Message+" (config.params."+strings.TrimPrefix(d.Location, ".")+")")
			continue
		}
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// checkNodeTypes checks the code nodes of a graph that name a saved script
// or a node type: it must be the workspace's, and their params must meet
// the type's schema.
func (s *Service) checkNodeTypes(ctx context.Context, q db.Queryer, workspaceID string, g *Graph) error {
	for i, n := range g.Nodes {
		if n.Kind != "code" {
			continue
		}
		c, err := decodeConfig[CodeConfig](n.Config)
		if err != nil {
			continue
		}
		name := graphNodeName(i, n.Key)
		if c.ScriptID != "" && s.scripts != nil {
			if _, _, err := s.scripts.Current(ctx, q, workspaceID, c.ScriptID); errors.Is(err, apperr.ErrNotFound) {
				return apperr.BadRequest("%s: config.script_id: no script %s in this workspace", name, c.ScriptID)
			} else if err != nil {
				return err
			}
		}
		if c.NodeType == "" {
			continue
		}
		t, err := getNodeType(ctx, q, "workspace_id = $1 AND slug = $2", workspaceID, c.NodeType)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.BadRequest("%s: config.node_type: no node type %q in this workspace", name, c.NodeType)
		}
		if err != nil {
			return err
		}
		if err := checkParams(t, c.Params); err != nil {
			return apperr.BadRequest("%s: %v", name, err)
		}
	}
	return nil
}
