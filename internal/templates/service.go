package templates

import (
	"context"
	"fmt"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/triggers"
)

// Service lists the shipped templates and instantiates them.
type Service struct {
	triggers *triggers.Service
}

// NewService returns the templates service.
func NewService(tr *triggers.Service) *Service {
	return &Service{triggers: tr}
}

// InstantiateInput is the body of POST /api/workflows/templates/{slug}.
type InstantiateInput struct {
	ProjectID string `json:"project_id" format:"uuid" doc:"The project the workflow joins"`
	Name      string `json:"name,omitempty" maxLength:"200" doc:"The workflow's name; default: the template's"`
}

// Instance answers an instantiation: the new workflow and its triggers (a
// webhook's token and receiver URL are shown this once).
type Instance struct {
	WorkflowID string             `json:"workflow_id" format:"uuid"`
	Triggers   []triggers.Trigger `json:"triggers"`
}

// List lists the shipped templates, by slug.
func (s *Service) List() ([]Template, error) {
	all, err := catalog()
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	out := make([]Template, 0, len(all))
	for _, e := range all {
		t := e.Template
		t.Triggers = append([]string{}, e.Triggers...)
		out = append(out, t)
	}
	return out, nil
}

// Instantiate creates a template's workflow in a project of the workspace
// with the template's triggers, in one transaction: a failure leaves
// neither. u owns the triggers (the runs they start, and their human gates).
func (s *Service) Instantiate(ctx context.Context, ws *actor.Workspace, u *actor.User, slug string, in InstantiateInput) (*Instance, error) {
	all, err := catalog()
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	e := find(all, slug)
	if e == nil {
		return nil, apperr.NotFound("template")
	}
	wf, err := e.input()
	if err != nil {
		return nil, fmt.Errorf("templates: %s: %w", slug, err) // checked when loaded: cannot happen
	}
	wf.ProjectID = in.ProjectID
	if in.Name != "" {
		wf.Name = in.Name
	}
	w, ts, err := s.triggers.CreateWithWorkflow(ctx, ws, u, wf, e.triggers, nil)
	if err != nil {
		return nil, err
	}
	out := &Instance{WorkflowID: w.ID, Triggers: ts}
	return out, nil
}

// Document is a shipped template's workflow document (its YAML, without
// the template: header) with what the catalog says of it.
type Document struct {
	Template
	YAML []byte
}

// Documents are the shipped templates' workflow documents, by slug (the
// marketplace's official source lists them as bundles).
func Documents() ([]Document, error) {
	all, err := catalog()
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	out := make([]Document, 0, len(all))
	for _, e := range all {
		out = append(out, Document{Template: e.Template, YAML: e.doc})
	}
	return out, nil
}
