package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// ApplyYAML brings a project's workflow in line with a YAML document (a
// repository's copy): the workflow of the document's name is replaced when
// its graph, name or cap differs, or created when there is none. With
// dryRun nothing is written and the status says what would be done
// (validation included: a document that would fail is the same error).
func (s *Service) ApplyYAML(ctx context.Context, ws *actor.Workspace, projectID string, doc []byte, dryRun bool) (string, *Workflow, error) {
	in, err := ParseYAML(doc)
	if err != nil {
		var ae *apperr.Error
		if !errors.As(err, &ae) {
			err = apperr.BadRequest("%s", err.Error())
		}
		return "", nil, err
	}
	name, err := cleanName(in.Name)
	if err != nil {
		return "", nil, err
	}
	var status string
	var out *Workflow
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		ws2, err := listWorkflows(ctx, tx, "workspace_id = $1 AND project_id = $2 AND name = $3 ORDER BY created_at, id LIMIT 1", ws.ID, projectID, name)
		if err != nil {
			return err
		}
		if len(ws2) == 0 {
			in.ProjectID = projectID
			status = Created
			if out, err = s.create(ctx, tx, ws, in); err != nil {
				return err
			}
		} else {
			existing := &ws2[0]
			g, err := buildGraph(in, existing.graph(), ids.New)
			if err != nil {
				return err
			}
			before, _ := json.Marshal(existing.graph())
			after, _ := json.Marshal(g)
			sameCap := (existing.MaxConcurrentRuns == nil) == (in.MaxConcurrentRuns == nil) &&
				(in.MaxConcurrentRuns == nil || *in.MaxConcurrentRuns == *existing.MaxConcurrentRuns)
			if bytes.Equal(before, after) && sameCap {
				status, out = Unchanged, existing
				return nil
			}
			status = Updated
			if in.MaxConcurrentRuns == nil && existing.MaxConcurrentRuns != nil {
				// The document has no cap: the workflow loses its.
				if err := s.setCapTx(ctx, tx, ws, existing, in, &out); err != nil {
					return err
				}
			} else if out, err = s.replace(ctx, tx, ws, existing.ID, in); err != nil {
				return err
			}
		}
		if dryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	return status, out, err
}

// checkExportable refuses a workflow whose YAML form an import would
// refuse as too large, so that every saved workflow exports and imports.
func checkExportable(w *Workflow) error {
	doc, err := ExportYAML(w)
	if err != nil {
		return err
	}
	if len(doc) > yamlMaxBytes {
		return apperr.BadRequest("the workflow's YAML form would be %d bytes, more than the %d an import takes: make it smaller", len(doc), yamlMaxBytes)
	}
	return nil
}

// Export renders a workflow as YAML.
func (s *Service) Export(ctx context.Context, ws *actor.Workspace, id string) ([]byte, error) {
	w, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	return ExportYAML(w)
}

// Import creates a workflow in a project from its YAML document.
func (s *Service) Import(ctx context.Context, ws *actor.Workspace, projectID string, doc []byte) (*Workflow, error) {
	in, err := ParseYAML(doc)
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return nil, err
		}
		return nil, apperr.BadRequest("%s", err.Error())
	}
	in.ProjectID = projectID
	return s.Create(ctx, ws, in)
}
