package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// CheckProposed checks a proposed workflow without writing anything,
// reading through q: a new one (id "") as Create would take it, or the
// full replacement of workflow id as Replace would. It answers what the
// change targets and that target's state now (a digest of the workflow as
// it stands; "" for a new one), so an approval can tell whether it moved.
func (s *Service) CheckProposed(ctx context.Context, q db.Queryer, ws *actor.Workspace, id string, in Input) (target, state string, err error) {
	if err := checkCap(in.MaxConcurrentRuns); err != nil {
		return "", "", err
	}
	if id == "" {
		name, err := cleanName(in.Name)
		if err != nil {
			return "", "", err
		}
		g, err := buildGraph(in, nil, ids.New)
		if err != nil {
			return "", "", err
		}
		w := &Workflow{ProjectID: in.ProjectID, Name: name}
		w.setGraph(g)
		if err := checkExportable(w); err != nil {
			return "", "", err
		}
		if err := s.checkProject(ctx, q, ws.ID, in.ProjectID); err != nil {
			return "", "", err
		}
		return "project:" + in.ProjectID + ":new_workflow", "", s.checkNodeTypes(ctx, q, ws.ID, g)
	}
	if in.ProjectID != "" {
		return "", "", apperr.BadRequest("project_id cannot change; propose a new workflow in the other project instead")
	}
	w, err := getWorkflow(ctx, q, ws.ID, id)
	if err != nil {
		return "", "", err
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	g, err := buildGraph(in, w.graph(), ids.New)
	if err != nil {
		return "", "", err
	}
	if in.Name != "" {
		if _, err := cleanName(in.Name); err != nil {
			return "", "", err
		}
	}
	return "workflow:" + id, hex.EncodeToString(sum[:]), s.checkNodeTypes(ctx, q, ws.ID, g)
}

// ReplaceTx is Replace in tx (an approved proposal's).
func (s *Service) ReplaceTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, id string, in Input) (*Workflow, error) {
	if in.ProjectID != "" {
		return nil, apperr.BadRequest("project_id cannot change")
	}
	if err := checkCap(in.MaxConcurrentRuns); err != nil {
		return nil, err
	}
	return s.replace(ctx, tx, ws, id, in)
}
