// Package templates holds the shipped workflow templates: ready-made
// workflows a user instantiates into a project, with the triggers that start
// them (a webhook's receiver, a schedule) provisioned in the same
// transaction.
package templates

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"slipway/internal/triggers"
	"slipway/internal/workflows"
)

// A template is one YAML file of shipped/, named after its slug: the
// workflow's YAML document (what workflows.ParseYAML reads and
// workflows.ExportYAML writes) with one more top-level key, template, which
// is stripped before the document is parsed (ParseYAML refuses unknown
// keys):
//
//	template:
//	  slug: webhook-respond          # the file's name without .yaml
//	  name: Webhook → transform → respond
//	  description: …
//	  category: webhooks
//	  triggers:                      # provisioned with each instance
//	    - kind: webhook              # or schedule
//	      config: {response_mode: sync}
//	version: 1
//	name: Webhook respond            # the workflow's default name
//	nodes: […]
//	edges: […]
//
//go:embed shipped/*.yaml
var shipped embed.FS

// headerKey is the top-level key of a template's header.
const headerKey = "template"

// Template is a shipped template as GET /api/workflows/templates lists it.
type Template struct {
	Slug        string   `json:"slug"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Category    string   `json:"category"`
	NodeCount   int      `json:"node_count"`
	Triggers    []string `json:"triggers" doc:"The kinds of the triggers an instance gets (webhook, schedule), in the order they are created"`
}

// header is a template's template: key.
type header struct {
	Slug        string          `yaml:"slug"`
	Name        string          `yaml:"name"`
	Description string          `yaml:"description"`
	Category    string          `yaml:"category"`
	Triggers    []triggerHeader `yaml:"triggers"`
}

type triggerHeader struct {
	Kind   string        `yaml:"kind"`
	Config triggerConfig `yaml:"config"`
}

// triggerConfig is triggers.Config as a header spells it; a schedule's
// input is any YAML value, stored as its JSON.
type triggerConfig struct {
	ResponseMode       string `yaml:"response_mode"`
	SyncTimeoutSeconds int64  `yaml:"sync_timeout_seconds"`
	Cron               string `yaml:"cron"`
	Timezone           string `yaml:"timezone"`
	IntervalSeconds    int64  `yaml:"interval_seconds"`
	Input              any    `yaml:"input"`
}

// entry is a loaded template.
type entry struct {
	Template
	// doc is the workflow's document without the header, parsed afresh
	// for each instance so no two share a config map.
	doc      []byte
	triggers []triggers.CreateInput
}

// input is the create body of an instance, without its project.
func (e *entry) input() (workflows.Input, error) {
	return workflows.ParseYAML(e.doc)
}

var slugPattern = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// catalog is the shipped templates, sorted by slug, loaded once.
var catalog = sync.OnceValues(func() ([]*entry, error) { return load(shipped, "shipped") })

// load reads every .yaml file of dir.
func load(fsys fs.FS, dir string) ([]*entry, error) {
	files, err := fs.Glob(fsys, dir+"/*.yaml")
	if err != nil {
		return nil, err
	}
	out := make([]*entry, 0, len(files))
	for _, file := range files {
		raw, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		e, err := parse(strings.TrimSuffix(path.Base(file), ".yaml"), raw)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", file, err)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *entry) int { return strings.Compare(a.Slug, b.Slug) })
	return out, nil
}

// parse reads one template: its header, then the workflow document without
// it, which must parse as a workflow.
func parse(slug string, raw []byte) (*entry, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the document must be a mapping")
	}
	root := doc.Content[0]
	var head *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == headerKey {
			head = root.Content[i+1]
			root.Content = slices.Delete(root.Content, i, i+2)
			break
		}
	}
	if head == nil {
		return nil, fmt.Errorf("no %s: header", headerKey)
	}
	h, err := decodeHeader(head)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", headerKey, err)
	}
	switch {
	case h.Slug != slug:
		return nil, fmt.Errorf("%s.slug %q must be the file's name, %q", headerKey, h.Slug, slug)
	case !slugPattern.MatchString(h.Slug):
		return nil, fmt.Errorf("%s.slug %q: lower-case letters, digits and dashes", headerKey, h.Slug)
	case h.Name == "" || h.Description == "" || h.Category == "":
		return nil, fmt.Errorf("%s: name, description and category are required", headerKey)
	}
	body, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, err
	}
	e := &entry{Template: Template{Slug: h.Slug, Name: h.Name, Description: strings.TrimSpace(h.Description), Category: h.Category,
		Triggers: []string{}}, doc: body}
	in, err := e.input()
	if err != nil {
		return nil, err
	}
	if in.Name == "" {
		return nil, errors.New("the workflow has no name")
	}
	e.NodeCount = len(in.Nodes)
	for i, t := range h.Triggers {
		if t.Kind != triggers.KindWebhook && t.Kind != triggers.KindSchedule {
			return nil, fmt.Errorf("%s.triggers[%d]: kind %q: webhook or schedule", headerKey, i, t.Kind)
		}
		c := triggers.Config{ResponseMode: t.Config.ResponseMode, SyncTimeoutSeconds: t.Config.SyncTimeoutSeconds, Cron: t.Config.Cron,
			Timezone: t.Config.Timezone, IntervalSeconds: t.Config.IntervalSeconds}
		if t.Config.Input != nil {
			if c.Input, err = json.Marshal(t.Config.Input); err != nil {
				return nil, fmt.Errorf("%s.triggers[%d].config.input: %w", headerKey, i, err)
			}
		}
		e.triggers = append(e.triggers, triggers.CreateInput{Kind: t.Kind, Config: c})
		e.Triggers = append(e.Triggers, t.Kind)
	}
	return e, nil
}

// decodeHeader decodes the header strictly: an unknown or misspelt field is
// an error, not a silently missing trigger setting.
func decodeHeader(n *yaml.Node) (*header, error) {
	raw, err := yaml.Marshal(n)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var h header
	if err := dec.Decode(&h); err != nil {
		return nil, err
	}
	return &h, nil
}

// find returns the template of a slug, or nil.
func find(all []*entry, slug string) *entry {
	for _, e := range all {
		if e.Slug == slug {
			return e
		}
	}
	return nil
}
