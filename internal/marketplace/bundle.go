package marketplace

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"slipway/internal/codefiles"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/workflows"
)

// A bundle is workflows with what they use: the scripts their code nodes
// run, the node types they use (each with its script) and their code
// nodes' files. Its files are the workflows' YAML documents (what export
// writes), the scripts' and node types' JSON, and the code files as they
// are. What the workflows read from the workspace — resources, apps — is
// not in the bundle: each becomes a need ("need:<key>" where the id was),
// which the installer binds to one of its own. A saved script becomes
// "script:<slug>", the key of the script object the install makes.

// Object types of a bundle.
const (
	ObjectScript   = "script"
	ObjectNodeType = "node_type"
	ObjectWorkflow = "workflow"
	ObjectCodeFile = "code_file"
)

const (
	needPrefix      = "need:"
	MaxBundleFlows  = 20
	maxBundleNeeds  = 50
	maxBundleFiles  = 1000
	maxBundleBytes  = 16 << 20
	maxWorkflowSlug = 50
)

// PublishBundle publishes workflows of the workspace, with the scripts,
// node types and code files they use, as a version of a bundle item.
type PublishBundle struct {
	WorkflowIDs []string `json:"workflow_ids" minItems:"1" maxItems:"20" doc:"The workflows, with what they use"`
	Listing
}

// BundleGraph is a bundle version's workflows as graphs (the console
// draws them on the canvas).
type BundleGraph struct {
	Version   string           `json:"version"`
	Workflows []BundleWorkflow `json:"workflows"`
	Needs     []Need           `json:"needs"`
}

// BundleWorkflow is one workflow of a bundle.
type BundleWorkflow struct {
	Key   string                `json:"key"`
	Name  string                `json:"name"`
	Nodes []workflows.NodeInput `json:"nodes"`
	Edges []workflows.EdgeInput `json:"edges"`
}

// bundler gathers a bundle's objects and files while it reads workflows.
type bundler struct {
	s        *Service
	ctx      context.Context
	ws       *actor.Workspace
	scripts  []Object
	types    []Object
	flows    []Object
	code     []Object
	files    map[string][]byte
	keys     map[string]bool   // workflow keys taken
	byScript map[string]string // script id → object key
	byType   map[string]string // node type slug → object key
	needs    []Need
	byRef    map[string]string // resource or app id → need key
	userType map[string]*workflows.NodeType
	size     int
}

func (b *bundler) add(path string, content []byte) error {
	b.size += len(content)
	if len(b.files) >= maxBundleFiles || b.size > maxBundleBytes {
		return apperr.BadRequest("a bundle holds at most %d files and %d bytes", maxBundleFiles, maxBundleBytes)
	}
	b.files[path] = content
	return nil
}

var notSlug = regexp.MustCompile(`[^a-z0-9]+`)

// keyOf turns a name into a key: lower-case letters, digits and dashes,
// starting with a letter, not one of taken.
func keyOf(name string, taken func(string) bool) string {
	k := strings.Trim(notSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(k) > maxWorkflowSlug {
		k = strings.TrimRight(k[:maxWorkflowSlug], "-")
	}
	if k == "" || k[0] < 'a' || k[0] > 'z' {
		k = "w-" + k
	}
	k = strings.TrimRight(k, "-")
	out := k
	for i := 2; taken(out); i++ {
		out = fmt.Sprintf("%s-%d", k, i)
	}
	return out
}

// script adds a saved script of the workspace; its key.
func (b *bundler) script(id string) (string, error) {
	if k, ok := b.byScript[id]; ok {
		return k, nil
	}
	sc, err := b.s.Scripts.Get(b.ctx, b.ws, id)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return "", apperr.BadRequest("a code node runs script %s, which this workspace does not have", id)
	}
	if err != nil {
		return "", err
	}
	key, path := "script:"+sc.Slug, "scripts/"+sc.Slug+".json"
	file, _ := json.MarshalIndent(ScriptContent{Slug: sc.Slug, Name: sc.Name, Language: sc.Language, Description: sc.Description, Source: sc.Source}, "", "  ")
	if err := b.add(path, file); err != nil {
		return "", err
	}
	b.scripts = append(b.scripts, Object{Type: ObjectScript, Key: key, Path: path})
	b.byScript[id] = key
	return key, nil
}

// nodeType adds a node type of the workspace (a built-in kind needs
// nothing) with its script.
func (b *bundler) nodeType(slug string) error {
	if _, ok := b.byType[slug]; ok {
		return nil
	}
	nt := b.userType[slug]
	if nt == nil || nt.ScriptID == nil {
		return apperr.BadRequest("a code node uses node type %s, which this workspace does not have", slug)
	}
	sk, err := b.script(*nt.ScriptID)
	if err != nil {
		return err
	}
	key, path := "node_type:"+slug, "node_types/"+slug+".json"
	file, _ := json.MarshalIndent(NodeTypeContent{Slug: nt.Slug, Name: nt.Name, Description: nt.Description, Category: nt.Category,
		ConfigSchema: nt.ConfigSchema, Script: sk}, "", "  ")
	if err := b.add(path, file); err != nil {
		return err
	}
	b.types = append(b.types, Object{Type: ObjectNodeType, Key: key, Path: path})
	b.byType[slug] = key
	return nil
}

// need turns the id of a resource (or an app) into a need; the
// placeholder that replaces it.
func (b *bundler) need(typ, id string) (string, error) {
	if k, ok := b.byRef[id]; ok {
		return needPrefix + k, nil
	}
	var kind, name string
	var err error
	if typ == "app" {
		kind = "app"
		name, err = b.s.Refs.AppRef(b.ctx, b.ws, id)
	} else {
		kind, name, err = b.s.Refs.ResourceRef(b.ctx, b.ws, id)
	}
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return "", apperr.BadRequest("a node reads %s %s, which this workspace does not have", typ, id)
	}
	if err != nil {
		return "", err
	}
	if len(b.needs) >= maxBundleNeeds {
		return "", apperr.BadRequest("a bundle reads at most %d resources and apps", maxBundleNeeds)
	}
	key := keyOf(name, func(k string) bool { return slices.ContainsFunc(b.needs, func(n Need) bool { return n.Key == k }) })
	b.needs = append(b.needs, Need{Key: key, Type: typ, Kind: kind, Name: name})
	b.byRef[id] = key
	return needPrefix + key, nil
}

// config copies a node's config with what it references turned into the
// bundle's keys and needs.
func (b *bundler) config(n workflows.Node) (map[string]any, error) {
	var c map[string]any
	raw, _ := json.Marshal(n.Config)
	if err := json.Unmarshal(raw, &c); err != nil || c == nil {
		return nil, fmt.Errorf("node %s: config: %v", n.Key, err)
	}
	str := func(k string) string { v, _ := c[k].(string); return v }
	var err error
	switch n.Kind {
	case "code":
		if id := str("script_id"); id != "" {
			if c["script_id"], err = b.script(id); err != nil {
				return nil, err
			}
		}
		if slug := str("node_type"); slug != "" {
			if err := b.nodeType(slug); err != nil {
				return nil, err
			}
		}
		if res, ok := c["resources"].(map[string]any); ok {
			for name, v := range res {
				if id, _ := v.(string); id != "" {
					if res[name], err = b.need("resource", id); err != nil {
						return nil, err
					}
				}
			}
		}
	case "app":
		if id := str("app_id"); id != "" {
			if c["app_id"], err = b.need("app", id); err != nil {
				return nil, err
			}
		}
	}
	if id := str("resource_id"); id != "" {
		if c["resource_id"], err = b.need("resource", id); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// workflow adds a workflow, its code nodes' files and what it uses.
func (b *bundler) workflow(w *workflows.Workflow) error {
	key := keyOf(w.Name, func(k string) bool { return b.keys[k] })
	b.keys[key] = true
	cp := *w
	cp.Nodes = slices.Clone(w.Nodes)
	for i, n := range cp.Nodes {
		c, err := b.config(n)
		if err != nil {
			return err
		}
		cp.Nodes[i].Config = c
		if n.Kind != "code" {
			continue
		}
		files, err := codefiles.Contents{}.Files(b.ctx, b.s.DB.R, b.ws.ID, w.ID, n.Key)
		if err != nil {
			return err
		}
		for _, f := range files {
			rel := key + "/" + n.Key + "/" + f.Path
			if err := b.add("code/"+rel, f.Content); err != nil {
				return err
			}
			b.code = append(b.code, Object{Type: ObjectCodeFile, Key: "code:" + rel, Path: "code/" + rel})
		}
	}
	doc, err := workflows.ExportYAML(&cp)
	if err != nil {
		return apperr.BadRequest("workflow %s cannot be exported: %v", w.Name, err)
	}
	path := "workflows/" + key + ".yaml"
	if err := b.add(path, doc); err != nil {
		return err
	}
	b.flows = append(b.flows, Object{Type: ObjectWorkflow, Key: "workflow:" + key, Path: path})
	return nil
}

// PublishBundle publishes workflows of the workspace with what they use as
// a new version of a bundle item (the workspace's admins). The node kinds
// of its node types and the kinds of the resources it reads join its
// capabilities.
func (s *Service) PublishBundle(ctx context.Context, ws *actor.Workspace, u *actor.User, in PublishBundle) (*Published, error) {
	if err := wsAdmin(ws, "publishing to the marketplace"); err != nil {
		return nil, err
	}
	if len(in.WorkflowIDs) == 0 || len(in.WorkflowIDs) > MaxBundleFlows {
		return nil, apperr.BadRequest("workflow_ids: 1 to %d workflows", MaxBundleFlows)
	}
	types, err := s.Workflows.ListNodeTypes(ctx, ws)
	if err != nil {
		return nil, err
	}
	b := &bundler{s: s, ctx: ctx, ws: ws, files: map[string][]byte{}, keys: map[string]bool{}, byScript: map[string]string{},
		byType: map[string]string{}, byRef: map[string]string{}, userType: map[string]*workflows.NodeType{}}
	for i := range types {
		if types[i].ID != nil {
			b.userType[types[i].Slug] = &types[i]
		}
	}
	var first *workflows.Workflow
	for i, id := range in.WorkflowIDs {
		if slices.Contains(in.WorkflowIDs[:i], id) {
			return nil, apperr.BadRequest("workflow_ids[%d]: %s is named twice", i, id)
		}
		w, err := s.Workflows.Get(ctx, ws, id)
		if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
			return nil, apperr.BadRequest("workflow_ids[%d]: no such workflow in this workspace", i)
		}
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = w
		}
		if err := b.workflow(w); err != nil {
			return nil, err
		}
	}
	caps := in.Capabilities
	caps.NodeKinds = append(slices.Clone(caps.NodeKinds), slices.Sorted(maps.Keys(b.byType))...)
	caps.ResourceKinds = slices.Clone(caps.ResourceKinds)
	for _, n := range b.needs {
		caps.ResourceKinds = append(caps.ResourceKinds, n.Kind)
	}
	objects := slices.Concat(b.scripts, b.types, b.flows, b.code)
	firstKey := strings.TrimPrefix(b.flows[0].Key, "workflow:")
	return s.publish(ctx, ws, u, KindBundle, cmpOr(in.Slug, firstKey), cmpOr(in.Name, first.Name), in.Summary, in.Tags, in.Version, in.Changelog, caps,
		in.Price, objects, b.needs, b.files)
}

// PreviewGraph is a bundle's workflows at its latest (or a given) version,
// as graphs.
func (s *Service) PreviewGraph(ctx context.Context, ws *actor.Workspace, id, version string) (*BundleGraph, error) {
	it, v, files, err := s.versionFiles(ctx, ws, id, version)
	if err != nil {
		return nil, err
	}
	if it.Kind != KindBundle {
		return nil, apperr.BadRequest("item %s is a %s, not a bundle", it.Slug, it.Kind)
	}
	out := &BundleGraph{Version: v.Version, Workflows: []BundleWorkflow{}, Needs: v.Needs}
	for _, o := range v.Objects {
		if o.Type != ObjectWorkflow {
			continue
		}
		in, err := workflows.ParseYAML(files[o.Path])
		if err != nil {
			return nil, apperr.New(apperr.CodeConflict, "workflow %s of the bundle does not read: %v", o.Key, err)
		}
		bw := BundleWorkflow{Key: strings.TrimPrefix(o.Key, "workflow:"), Name: in.Name, Nodes: in.Nodes, Edges: in.Edges}
		if bw.Nodes == nil {
			bw.Nodes = []workflows.NodeInput{}
		}
		if bw.Edges == nil {
			bw.Edges = []workflows.EdgeInput{}
		}
		out.Workflows = append(out.Workflows, bw)
	}
	return out, nil
}

// bindings checks an install's bindings against a version's needs: each
// need bound to a resource of its kind (or an app) of the workspace.
// given are the request's; kept an earlier install's, used for needs the
// request does not bind. It answers the bindings the install keeps.
func (s *Service) bindings(ctx context.Context, ws *actor.Workspace, needs []Need, given, kept map[string]string) (map[string]string, error) {
	for k := range given {
		if !slices.ContainsFunc(needs, func(n Need) bool { return n.Key == k }) {
			return nil, apperr.BadRequest("bindings.%s: the version has no such need", clip(k, 64))
		}
	}
	out := map[string]string{}
	for _, n := range needs {
		id, ok := given[n.Key]
		if !ok {
			id, ok = kept[n.Key]
		}
		if !ok || id == "" {
			return nil, apperr.BadRequest("bindings.%s: bind a %s of this workspace (the publisher's was %q)", n.Key, needWhat(n), n.Name)
		}
		if n.Type == "app" {
			if _, err := s.Refs.AppRef(ctx, ws, id); err != nil {
				if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
					return nil, apperr.BadRequest("bindings.%s: no such app in this workspace", n.Key)
				}
				return nil, err
			}
		} else {
			kind, _, err := s.Refs.ResourceRef(ctx, ws, id)
			if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
				return nil, apperr.BadRequest("bindings.%s: no such resource in this workspace", n.Key)
			}
			if err != nil {
				return nil, err
			}
			if kind != n.Kind {
				return nil, apperr.BadRequest("bindings.%s: the resource is a %s, and the need is a %s", n.Key, kind, n.Kind)
			}
		}
		out[n.Key] = id
	}
	return out, nil
}

func needWhat(n Need) string {
	if n.Type == "app" {
		return "app"
	}
	return n.Kind + " resource"
}

// unbound are the needs a set of bindings does not cover.
func unbound(needs []Need, b map[string]string) []string {
	out := []string{}
	for _, n := range needs {
		if b[n.Key] == "" {
			out = append(out, n.Key)
		}
	}
	return out
}

// bind turns a bundle workflow's keys and needs back into the workspace's
// ids: scripts the install made, the resources and apps bound.
func bind(in *workflows.Input, made, bindings map[string]string) error {
	resolve := func(v any) (any, error) {
		s, _ := v.(string)
		switch {
		case strings.HasPrefix(s, needPrefix):
			id, ok := bindings[strings.TrimPrefix(s, needPrefix)]
			if !ok {
				return nil, apperr.BadRequest("bindings.%s: not bound", strings.TrimPrefix(s, needPrefix))
			}
			return id, nil
		case strings.HasPrefix(s, "script:"):
			id, ok := made[s]
			if !ok {
				return nil, apperr.New(apperr.CodeConflict, "a workflow of the bundle runs %s, which the version does not have", s)
			}
			return id, nil
		}
		return v, nil
	}
	var err error
	for i := range in.Nodes {
		c := in.Nodes[i].Config
		if c == nil {
			continue
		}
		for _, k := range []string{"script_id", "resource_id", "app_id"} {
			if v, ok := c[k]; ok {
				if c[k], err = resolve(v); err != nil {
					return err
				}
			}
		}
		if res, ok := c["resources"].(map[string]any); ok {
			for name, v := range res {
				if res[name], err = resolve(v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// installWorkflows makes or replaces a version's workflows and their code
// files, in tx, after its scripts and node types (made holds their ids).
func (s *Service) installWorkflows(ctx context.Context, tx *db.Tx, ws *actor.Workspace, v *ItemVersion, files map[string][]byte,
	prev, made map[string]string, projectID *string, bindings map[string]string) error {
	code := map[string]map[string]string{} // workflow key/node key → path → content
	for _, o := range v.Objects {
		if o.Type != ObjectCodeFile {
			continue
		}
		rest := strings.TrimPrefix(o.Key, "code:")
		wf, rest, ok1 := strings.Cut(rest, "/")
		node, path, ok2 := strings.Cut(rest, "/")
		if !ok1 || !ok2 {
			return apperr.New(apperr.CodeConflict, "code file %s of the bundle names no workflow and node", o.Key)
		}
		set := code[wf+"/"+node]
		if set == nil {
			set = map[string]string{}
			code[wf+"/"+node] = set
		}
		set[path] = string(files[o.Path])
		made[o.Key] = "" // set to its workflow's id below
	}
	for _, o := range v.Objects {
		if o.Type != ObjectWorkflow {
			continue
		}
		in, err := workflows.ParseYAML(files[o.Path])
		if err != nil {
			return apperr.New(apperr.CodeConflict, "workflow %s of the bundle does not read: %v", o.Key, err)
		}
		if err := bind(&in, made, bindings); err != nil {
			return err
		}
		var w *workflows.Workflow
		if id := prev[o.Key]; id != "" {
			w, err = s.Workflows.ReplaceTx(ctx, tx, ws, id, in)
		}
		if e, ok := apperr.As(err); w == nil && (err == nil || (ok && e.Code == apperr.CodeNotFound)) {
			if projectID == nil {
				return apperr.New(apperr.CodeConflict, "the install's project was deleted: install the bundle again into a project")
			}
			in.ProjectID = *projectID
			w, err = s.Workflows.CreateTx(ctx, tx, ws, in)
		}
		if err != nil {
			return err
		}
		made[o.Key] = w.ID
		key := strings.TrimPrefix(o.Key, "workflow:")
		for k := range made {
			if strings.HasPrefix(k, "code:"+key+"/") {
				made[k] = w.ID
			}
		}
		for _, n := range in.Nodes {
			if n.Kind != "code" {
				continue
			}
			set := code[key+"/"+n.Key]
			if set == nil && prev[o.Key] == "" {
				continue
			}
			if err := codefiles.ReplaceNodeTx(ctx, tx, s.Clock, ws.ID, w.ID, n.Key, set); err != nil {
				return err
			}
		}
	}
	return nil
}
