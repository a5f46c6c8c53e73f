package n8nimport

import (
	"context"
	"errors"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/triggers"
	"slipway/internal/workflows"
)

// Service imports n8n workflows.
type Service struct {
	db        *db.DB
	workflows *workflows.Service
	triggers  *triggers.Service
}

// NewService returns the import service.
func NewService(d *db.DB, wf *workflows.Service, tr *triggers.Service) *Service {
	return &Service{db: d, workflows: wf, triggers: tr}
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
	out := &N8nImport{Triggers: make([]triggers.Trigger, 0, len(specs)), Warnings: warnings}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		w, err := s.workflows.CreateTx(ctx, tx, ws, in)
		if err != nil {
			return err
		}
		out.WorkflowID = w.ID
		for _, spec := range specs {
			t, err := s.triggers.CreateTx(ctx, tx, ws, u, w.ID, spec.Input)
			if err != nil {
				var ae *apperr.Error
				if errors.As(err, &ae) && ae.Code == apperr.CodeBadRequest {
					return apperr.BadRequest("the trigger of n8n node %q: %s", spec.Node, ae.Message)
				}
				return err
			}
			out.Triggers = append(out.Triggers, *t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
