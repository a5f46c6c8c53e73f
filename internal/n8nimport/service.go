package n8nimport

import (
	"context"
	"errors"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/triggers"
)

// Service imports n8n workflows.
type Service struct {
	triggers *triggers.Service
}

// NewService returns the import service.
func NewService(tr *triggers.Service) *Service {
	return &Service{triggers: tr}
}

// N8nImport answers an import: the new workflow, the triggers made from n8n's
// trigger nodes (a webhook's token and receiver URL are shown this once)
// and what did not carry over.
type N8nImport struct {
	WorkflowID string             `json:"workflow_id" format:"uuid"`
	Triggers   []triggers.Trigger `json:"triggers"`
	Warnings   []string           `json:"warnings" doc:"Conversion warnings, each naming the n8n node"`
}

// Import converts an n8n export and creates the workflow in a project of
// the workspace with its triggers, in one transaction: a trigger that
// cannot be created leaves no workflow behind. u owns the triggers.
func (s *Service) Import(ctx context.Context, ws *actor.Workspace, u *actor.User, projectID string, doc []byte) (*N8nImport, error) {
	in, specs, warnings, err := Convert(doc)
	if errors.Is(err, errPanic) {
		return nil, apperr.Wrap(apperr.CodeInternal, err, "the n8n workflow could not be converted")
	}
	if err != nil {
		return nil, apperr.BadRequest("%s", err.Error())
	}
	in.ProjectID = projectID
	inputs := make([]triggers.CreateInput, len(specs))
	for i, spec := range specs {
		inputs[i] = spec.Input
	}
	w, ts, err := s.triggers.CreateWithWorkflow(ctx, ws, u, in, inputs, func(i int, err error) error {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code == apperr.CodeBadRequest {
			return apperr.BadRequest("the trigger of n8n node %q: %s", specs[i].Node, ae.Message)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &N8nImport{WorkflowID: w.ID, Triggers: ts, Warnings: warnings}
	return out, nil
}
