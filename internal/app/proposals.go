package app

import (
	"bytes"
	"context"
	"encoding/json"

	"slipway/internal/envvars"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/proposals"
	"slipway/internal/workflows"
)

// The kinds of change an agent may propose, each through its own domain's
// checks: the proposals service knows none of them.

// strict decodes a proposal's payload: one JSON object of the kind's own
// API body, no unknown keys.
func strict(payload json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(payload))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return apperr.BadRequest("payload: %s", err.Error())
	}
	if d.More() {
		return apperr.BadRequest("payload: one JSON object")
	}
	return nil
}

// workflowProposals: payload is POST /api/workflows's body (a new
// workflow) or, with a target, PUT /api/workflows/{id}'s (its full
// replacement).
type workflowProposals struct{ wf *workflows.Service }

func (k workflowProposals) Plan(ctx context.Context, q db.Queryer, ws *actor.Workspace, targetID string, payload json.RawMessage) (*proposals.Plan, error) {
	var in workflows.Input
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	target, state, err := k.wf.CheckProposed(ctx, q, ws, targetID, in)
	if err != nil {
		return nil, err
	}
	return &proposals.Plan{Target: target, Fingerprint: state, Describe: func(string) string {
		return "the workflow was edited since it was proposed"
	}}, nil
}

func (k workflowProposals) Apply(ctx context.Context, tx *db.Tx, ws *actor.Workspace, _ *actor.User, targetID string, payload json.RawMessage) (*proposals.Applied, error) {
	var in workflows.Input
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	var w *workflows.Workflow
	var err error
	if targetID == "" {
		w, err = k.wf.CreateTx(ctx, tx, ws, in)
	} else {
		w, err = k.wf.ReplaceTx(ctx, tx, ws, targetID, in)
	}
	if err != nil {
		return nil, err
	}
	return &proposals.Applied{ID: w.ID, Result: w}, nil
}

// envVarProposals: payload is PUT /api/settings/env-vars's body with a
// plain value.
type envVarProposals struct{ env *envvars.Service }

func (k envVarProposals) Plan(ctx context.Context, q db.Queryer, ws *actor.Workspace, targetID string, payload json.RawMessage) (*proposals.Plan, error) {
	if targetID != "" {
		return nil, apperr.BadRequest("an env var is named by its key and scope in the payload, not by target_id")
	}
	var in envvars.EnvVarSave
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	target, state, err := k.env.CheckProposed(ctx, q, ws, in)
	if err != nil {
		return nil, err
	}
	return &proposals.Plan{Target: target, Fingerprint: state, Describe: func(was string) string {
		if was == "" {
			return "an env var " + in.Key + " was created since it was proposed"
		}
		if state == "" {
			return "the env var " + in.Key + " was deleted since it was proposed"
		}
		return "the env var " + in.Key + " was changed since it was proposed"
	}}, nil
}

func (k envVarProposals) Apply(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, _ string, payload json.RawMessage) (*proposals.Applied, error) {
	var in envvars.EnvVarSave
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	v, err := k.env.SaveProposedTx(ctx, tx, ws, u, in)
	if err != nil {
		return nil, err
	}
	return &proposals.Applied{ID: v.ID, Result: v}, nil
}
