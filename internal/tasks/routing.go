package tasks

import (
	"context"
	"errors"
	"strings"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/text"
)

// requiredLabels are the labels a task asks of its runner, folded.
func requiredLabels(t *Task) []string {
	if t.Config.Runner == nil {
		return nil
	}
	ls, err := text.Labels("config.runner.required_labels", t.Config.Runner.RequiredLabels)
	if err != nil {
		return t.Config.Runner.RequiredLabels // validated when stored; never here
	}
	return ls
}

// route places a task's work: the fleet of remote runners when hub mode is
// on and one is eligible, else the server; with fleet_only and no eligible
// runner, it says why the task cannot run (noRunner).
func (s *Service) route(ctx context.Context, q db.Queryer, t *Task) (pool string, labels []string, noRunner string, err error) {
	if !s.cfg.HubMode || s.router == nil {
		return jobs.PoolLocal, nil, "", nil
	}
	labels = requiredLabels(t)
	n, err := s.router.Eligible(ctx, q, t.WorkspaceID, labels)
	switch {
	case err != nil:
		return "", nil, "", err
	case n > 0:
		return jobs.PoolFleet, labels, "", nil
	case s.cfg.FleetOnly:
		why := "no eligible runner: SERVICE_AGENT_EXECUTION=fleet_only and no online, enabled, undrained runner is granted this workspace"
		if len(labels) > 0 {
			why += " and advertises the labels " + strings.Join(labels, ", ")
		}
		return "", nil, why, nil
	}
	return jobs.PoolLocal, nil, "", nil
}

// enqueue queues the task's job in tx, where its route says; a task no
// runner can take under fleet_only fails at once, saying why.
func (s *Service) enqueue(ctx context.Context, tx *db.Tx, t *Task) error {
	pool, labels, noRunner, err := s.route(ctx, tx, t)
	if err != nil {
		return err
	}
	if noRunner != "" {
		failed, err := s.setStatus(ctx, tx, t.WorkspaceID, t.ID, StatusQueued, StatusFailed, noRunner)
		if err != nil {
			return err
		}
		if err := s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(StatusQueued, StatusFailed, noRunner))); err != nil {
			return err
		}
		*t = *failed
		return nil
	}
	_, err = s.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: JobKind, WorkspaceID: t.WorkspaceID, Ref: t.ID, MaxAttempts: s.cfg.MaxAttempts,
		Keys: []string{"workspace:" + t.WorkspaceID, "project:" + t.ProjectID}, Pool: pool, Labels: labels})
	if errors.Is(err, jobs.ErrDuplicate) {
		return nil // already queued
	}
	return err
}

// RunnerLine is the spec's runner match line.
type RunnerLine struct {
	InGroup    bool   `json:"in_group" doc:"A worker-group required-label set applies"`
	MatchCount int    `json:"match_count" doc:"Eligible runners; 0 in the local and waiting states"`
	State      string `json:"state" enum:"matched,local,waiting"`
}

// RunnerLine says where a task's work goes, now: matched (runners are
// eligible; how many), local (the server runs it: hub mode is off, or no
// runner is eligible and the server is the fallback) or waiting (fleet_only
// and no runner is eligible). It names no runner.
func (s *Service) RunnerLine(ctx context.Context, ws *actor.Workspace, id string) (*RunnerLine, error) {
	t, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	line := &RunnerLine{State: "local"}
	line.InGroup = t.Config.Runner != nil && len(t.Config.Runner.RequiredLabels) > 0
	if !s.cfg.HubMode || s.router == nil {
		return line, nil
	}
	n, err := s.router.Eligible(ctx, s.db.R, t.WorkspaceID, requiredLabels(t))
	switch {
	case err != nil:
		return nil, err
	case n > 0:
		line.State, line.MatchCount = "matched", n
	case s.cfg.FleetOnly:
		line.State = "waiting"
	}
	return line, nil
}
