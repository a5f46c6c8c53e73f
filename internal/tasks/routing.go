package tasks

import (
	"context"
	"errors"
	"strconv"
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

// Routing is where a task's work went and why: the payload of its routing
// event, written whenever there was a choice (hub mode on, or labels asked
// for that the server does not check).
type Routing struct {
	To       string   `json:"to" enum:"runners,server"`
	Labels   []string `json:"labels,omitempty"`
	Eligible int      `json:"eligible" doc:"Runners eligible when it was queued"`
	Reason   string   `json:"reason"`
}

// route places a task's work: the fleet of remote runners when hub mode is
// on and one is eligible, else the server. Labelled work never runs on the
// server while hub mode is on (the server advertises no labels): with no
// eligible runner it waits in the fleet for one. With fleet_only and no
// eligible runner, noRunner says why the task cannot run.
func (s *Service) route(ctx context.Context, q db.Queryer, t *Task) (pool string, labels []string, r *Routing, noRunner string, err error) {
	labels = requiredLabels(t)
	if !s.cfg.HubMode || s.router == nil {
		if len(labels) == 0 {
			return jobs.PoolLocal, nil, nil, "", nil
		}
		return jobs.PoolLocal, nil, &Routing{To: "server", Labels: labels,
			Reason: "hub mode is off (SERVICE_HUB_MODE): the server runs every task and does not check the required labels " + strings.Join(labels, ", ")}, "", nil
	}
	n, err := s.router.Eligible(ctx, q, t.WorkspaceID, labels)
	switch {
	case err != nil:
		return "", nil, nil, "", err
	case n > 0:
		return jobs.PoolFleet, labels, &Routing{To: "runners", Labels: labels, Eligible: n, Reason: count(n, "runner is", "runners are") + " eligible"}, "", nil
	case s.cfg.FleetOnly:
		why := "no eligible runner: SERVICE_AGENT_EXECUTION=fleet_only and no online, enabled, undrained runner is granted this workspace"
		if len(labels) > 0 {
			why += " and advertises the labels " + strings.Join(labels, ", ")
		}
		return "", nil, nil, why, nil
	case len(labels) > 0:
		return jobs.PoolFleet, labels, &Routing{To: "runners", Labels: labels, Reason: "no eligible runner advertises " +
			strings.Join(labels, ", ") + " now; the task waits for one (labelled work never runs on the server)"}, "", nil
	}
	return jobs.PoolLocal, nil, &Routing{To: "server", Reason: "no runner is eligible now; the server runs it"}, "", nil
}

// count is "1 runner is" or "3 runners are".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// enqueue queues the task's job in tx, where its route says, and records
// the routing decision; a task no runner can take under fleet_only fails
// at once, saying why.
func (s *Service) enqueue(ctx context.Context, tx *db.Tx, t *Task) error {
	pool, labels, routing, noRunner, err := s.route(ctx, tx, t)
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
	keys := []string{"workspace:" + t.WorkspaceID, "project:" + t.ProjectID}
	resourceID, err := s.projects.ProfileResource(ctx, tx, t.WorkspaceID, t.AgentProfile)
	if err != nil {
		return err
	}
	if resourceID != "" { // the model resource's max_concurrent_uses
		keys = append(keys, "resource:"+t.WorkspaceID+"/"+resourceID)
	}
	_, err = s.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: JobKind, WorkspaceID: t.WorkspaceID, Ref: t.ID, MaxAttempts: s.cfg.MaxAttempts,
		Keys: keys, Pool: pool, Labels: labels})
	if errors.Is(err, jobs.ErrDuplicate) {
		return nil // already queued
	}
	if err != nil || routing == nil {
		return err
	}
	return s.event(ctx, tx, t, "", s.value(EventRouting, routing))
}

// RunnerLine is the spec's runner match line.
type RunnerLine struct {
	InGroup    bool   `json:"in_group" doc:"A worker-group required-label set applies"`
	MatchCount int    `json:"match_count" doc:"Eligible runners; 0 in the local and waiting states"`
	State      string `json:"state" enum:"matched,local,waiting"`
}

// RunnerLine says where a task's work goes, now: matched (runners are
// eligible; how many), local (the server runs it: hub mode is off, or no
// runner is eligible and the server is the fallback) or waiting (no runner
// is eligible, and fleet_only is set or the task requires labels). It names
// no runner.
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
	case s.cfg.FleetOnly || line.InGroup:
		line.State = "waiting" // labelled work waits for a runner
	}
	return line, nil
}
