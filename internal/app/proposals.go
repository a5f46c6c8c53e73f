package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"slipway/internal/backlog"
	"slipway/internal/envvars"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/projects"
	"slipway/internal/proposals"
	"slipway/internal/resources"
	"slipway/internal/tasks"
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

// resourceProposals: payload is POST /api/resources's body without a
// secret (a proposal's payload is stored as it is; a person sets the
// secret once the resource exists).
type resourceProposals struct{ res *resources.Service }

func (k resourceProposals) Plan(ctx context.Context, q db.Queryer, ws *actor.Workspace, targetID string, payload json.RawMessage) (*proposals.Plan, error) {
	if targetID != "" {
		return nil, apperr.BadRequest("a proposed resource is a new one: no target_id")
	}
	var in resources.ResourceCreate
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	target, state, err := k.res.CheckProposed(ctx, q, ws, in)
	if err != nil {
		return nil, err
	}
	return &proposals.Plan{Target: target, Fingerprint: state, Describe: func(string) string {
		return "a resource named " + in.Name + " was made since it was proposed"
	}}, nil
}

func (k resourceProposals) Apply(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, _ string, payload json.RawMessage) (*proposals.Applied, error) {
	var in resources.ResourceCreate
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	r, err := k.res.CreateProposedTx(ctx, tx, ws, u, in)
	if err != nil {
		return nil, err
	}
	return &proposals.Applied{ID: r.ID, Result: r}, nil
}

// backlogProposals: payload is {project_id, title, body, labels}: a card
// for the project's backlog, put in its ready column on approval.
type backlogProposals struct{ bl *backlog.Service }

func (k backlogProposals) Plan(ctx context.Context, _ db.Queryer, ws *actor.Workspace, targetID string, payload json.RawMessage) (*proposals.Plan, error) {
	if targetID != "" {
		return nil, apperr.BadRequest("a proposed backlog item is a new card: no target_id")
	}
	var in backlog.ProposedCard
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	target, err := k.bl.CheckProposed(ctx, ws, in)
	if err != nil {
		return nil, err
	}
	return &proposals.Plan{Target: target, Describe: func(string) string { return "the backlog changed since it was proposed" }}, nil
}

func (k backlogProposals) Apply(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, _ string, payload json.RawMessage) (*proposals.Applied, error) {
	var in backlog.ProposedCard
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	it, err := k.bl.AddProposedTx(ctx, tx, ws, u, in)
	if err != nil {
		return nil, err
	}
	return &proposals.Applied{ID: it.ID, Result: it}, nil
}

// RepoChange is a repo_change proposal's payload: a change to a project's
// repository, described and optionally given as a patch. The approval
// makes it a task of the project, which does it the way every task does
// (its own branch, its pull request).
type RepoChange struct {
	ProjectID   string `json:"project_id" format:"uuid"`
	Title       string `json:"title" minLength:"1" maxLength:"200"`
	Description string `json:"description" minLength:"1" maxLength:"20000"`
	Patch       string `json:"patch,omitempty" maxLength:"200000" doc:"A unified diff of the change"`
}

// repoChangeProposals: see RepoChange.
type repoChangeProposals struct {
	tasks    *tasks.Service
	projects *projects.Service
}

func (k repoChangeProposals) check(ctx context.Context, ws *actor.Workspace, payload json.RawMessage) (*RepoChange, error) {
	var in RepoChange
	if err := strict(payload, &in); err != nil {
		return nil, err
	}
	p, err := k.projects.Get(ctx, ws, in.ProjectID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return nil, apperr.BadRequest("project_id: not a project of this workspace")
	}
	if err != nil {
		return nil, err
	}
	if p.ArchivedAt != nil {
		return nil, apperr.BadRequest("the project %q is archived", p.Name)
	}
	if strings.TrimSpace(in.Description) == "" {
		return nil, apperr.BadRequest("description: say what the change is")
	}
	if in.Patch != "" && !strings.Contains(in.Patch, "\n@@") && !strings.HasPrefix(in.Patch, "@@") {
		return nil, apperr.BadRequest("patch: a unified diff (with @@ hunks)")
	}
	return &in, nil
}

func (k repoChangeProposals) Plan(ctx context.Context, _ db.Queryer, ws *actor.Workspace, targetID string, payload json.RawMessage) (*proposals.Plan, error) {
	if targetID != "" {
		return nil, apperr.BadRequest("a repository change names its project in the payload, not by target_id")
	}
	in, err := k.check(ctx, ws, payload)
	if err != nil {
		return nil, err
	}
	return &proposals.Plan{Target: "repo:" + in.ProjectID, Describe: func(string) string { return "the project changed since it was proposed" }}, nil
}

func (k repoChangeProposals) Apply(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, _ string, payload json.RawMessage) (*proposals.Applied, error) {
	in, err := k.check(ctx, ws, payload)
	if err != nil {
		return nil, err
	}
	prompt := in.Description
	if in.Patch != "" {
		prompt += "\n\nApply this patch (a unified diff) and check that the result works:\n\n```diff\n" + strings.TrimRight(in.Patch, "\n") + "\n```"
	}
	var by *string
	if u != nil {
		by = &u.ID
	}
	t, err := k.tasks.CreateTx(ctx, tx, ws.ID, by, tasks.TaskCreate{ProjectID: in.ProjectID, Title: in.Title, Prompt: prompt})
	if err != nil {
		return nil, err
	}
	return &proposals.Applied{ID: t.ID, Result: t}, nil
}
