package tasks

import (
	"context"
	"strings"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/projects"
	"slipway/internal/runs"
)

// transition moves a task in a transaction after checking the state
// machine, and records the status event; before (optional) runs in the same
// transaction first.
func (s *Service) transition(ctx context.Context, ws *actor.Workspace, id, to, action, reason string, before func(tx *db.Tx, t *Task) error) (*Task, error) {
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if err := checkTransition(t.Status, to, action); err != nil {
			return nil, err
		}
		if before != nil {
			if err := before(tx, t); err != nil {
				return nil, err
			}
		}
		out, err := s.setStatus(ctx, tx, ws.ID, t.ID, t.Status, to, "")
		if err != nil {
			return nil, err
		}
		return out, s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(t.Status, to, reason)))
	})
}

// Cancel stops a task: a queued one never starts, a running one's agent is
// stopped wherever it runs. Its run ends at once with the cancel as its last
// event (what the agent still prints is dropped). Cancelling a finished task
// is refused.
func (s *Service) Cancel(ctx context.Context, ws *actor.Workspace, id string, u *actor.User) (*Task, error) {
	reason := "cancelled"
	if u != nil {
		reason = "cancelled by user " + u.ID // an id, not an email: every member reads the log
	}
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) { return s.cancelIn(ctx, tx, ws, t, reason) })
}

// cancelIn cancels t in tx.
func (s *Service) cancelIn(ctx context.Context, tx *db.Tx, ws *actor.Workspace, t *Task, reason string) (*Task, error) {
	if err := checkTransition(t.Status, StatusCancelled, "cancel"); err != nil {
		return nil, err
	}
	out, err := s.setStatus(ctx, tx, ws.ID, t.ID, t.Status, StatusCancelled, "")
	if err != nil {
		return nil, err
	}
	running, err := s.runs.Running(ctx, tx, ws.ID, t.ID)
	if err != nil {
		return nil, err
	}
	runID := ""
	if len(running) > 0 {
		runID = running[0].ID
	}
	if err := s.event(ctx, tx, t, runID, s.value(EventStatus, statusPayload(t.Status, StatusCancelled, reason))); err != nil {
		return nil, err
	}
	for _, r := range running {
		if _, err := s.runs.Finish(ctx, tx, ws.ID, r.ID, runs.Cancelled, nil, ""); err != nil {
			return nil, err
		}
	}
	_, err = s.queue.Cancel(ctx, tx, ws.ID, JobKind, t.ID)
	return out, err
}

// Launch releases a held task into the queue.
func (s *Service) Launch(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) { return s.launchIn(ctx, tx, ws, t) })
}

// launchIn releases the held task t in tx.
func (s *Service) launchIn(ctx context.Context, tx *db.Tx, ws *actor.Workspace, t *Task) (*Task, error) {
	if t.Status != StatusQueued || !t.Held {
		held := ""
		if t.Held {
			held = ", held"
		}
		return nil, apperr.New(apperr.CodeConflict, "only a held, queued task can be launched (this one is %s%s)", t.Status, held)
	}
	out, err := setHeld(ctx, tx, ws.ID, t.ID, false, s.clock.Now())
	if err != nil {
		return nil, err
	}
	if err := s.event(ctx, tx, t, "", s.value(EventStatus, map[string]any{"from": StatusQueued, "to": StatusQueued, "reason": "launched"})); err != nil {
		return nil, err
	}
	return out, s.enqueue(ctx, tx, out)
}

// Restart queues a finished task again; the new run continues on its branch.
func (s *Service) Restart(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if err := checkTransition(t.Status, StatusQueued, "restart"); err != nil {
			return nil, err
		}
		now := s.clock.Now()
		if _, err := setHeld(ctx, tx, ws.ID, t.ID, false, now); err != nil {
			return nil, err
		}
		if _, err := setPR(ctx, tx, ws.ID, t.ID, nil, now); err != nil {
			return nil, err
		}
		out, err := s.setStatus(ctx, tx, ws.ID, t.ID, t.Status, StatusQueued, "")
		if err != nil {
			return nil, err
		}
		if err := s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(t.Status, StatusQueued, "restarted"))); err != nil {
			return nil, err
		}
		// Routed once queued: under fleet_only with no eligible runner it
		// fails again at once, saying why.
		return out, s.enqueue(ctx, tx, out)
	})
}

// Rerun creates a new task with the same project, prompt, profile and
// configuration, and queues it.
func (s *Service) Rerun(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Task, error) {
	t, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	return s.Create(ctx, ws, u, TaskCreate{ProjectID: t.ProjectID, Prompt: t.Prompt, Title: t.Title, AgentProfile: t.AgentProfile, Config: t.Config})
}

// OpenPR opens the pull request of a task that finished with changes but
// without an automatic pull request (the project's autodev is off).
func (s *Service) OpenPR(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	if t, err := s.Get(ctx, ws, id); err != nil {
		return nil, err
	} else if t.PR != nil && t.PR.Provider != projects.ProviderLocal {
		return s.openForgePR(ctx, ws, t)
	}
	return s.transition(ctx, ws, id, StatusDonePR, "open a pull request for", "pull request opened", func(tx *db.Tx, t *Task) error {
		if t.PR == nil || t.PR.Commit == "" {
			return ErrNothingToPropose
		}
		now := s.clock.Now()
		pr := *t.PR
		pr.OpenedAt, pr.State = &now, PROpen
		if _, err := setPR(ctx, tx, ws.ID, t.ID, &pr, now); err != nil {
			return err
		}
		return s.event(ctx, tx, t, "", s.value(EventPR, pr))
	})
}

// ClosePR closes the task's open pull request (an undo; the local provider
// has nothing else to close).
func (s *Service) ClosePR(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	if t, err := s.Get(ctx, ws, id); err != nil {
		return nil, err
	} else if t.PR != nil && t.PR.Number != nil && t.PR.Provider != projects.ProviderLocal {
		if t.PR.State != PROpen {
			return nil, apperr.New(apperr.CodeConflict, "the task has no open pull request")
		}
		return s.closeForgePR(ctx, ws, t)
	}
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if t.PR == nil || t.PR.OpenedAt == nil || t.PR.ClosedAt != nil {
			return nil, apperr.New(apperr.CodeConflict, "the task has no open pull request")
		}
		now := s.clock.Now()
		pr := *t.PR
		pr.ClosedAt, pr.State = &now, PRClosed
		out, err := setPR(ctx, tx, ws.ID, t.ID, &pr, now)
		if err != nil {
			return nil, err
		}
		return out, s.event(ctx, tx, t, "", s.value(EventPR, pr))
	})
}

// Delete removes a task that is not running, with its runs and events.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) error {
	_, err := s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if Active(t.Status) {
			return nil, apperr.New(apperr.CodeConflict, "the task is %s; cancel it first", t.Status)
		}
		if _, err := s.queue.Cancel(ctx, tx, ws.ID, JobKind, t.ID); err != nil {
			return nil, err
		}
		if err := s.runs.DeleteLog(ctx, tx, ws.ID, t.ID); err != nil {
			return nil, err
		}
		if err := deleteTask(ctx, tx, ws.ID, id); err != nil {
			return nil, err
		}
		return nil, s.hub.NotifyTx(ctx, tx, ws.ID, TopicTasks, id)
	})
	return err
}

// SetConfig replaces the configuration of a task that has not started.
func (s *Service) SetConfig(ctx context.Context, ws *actor.Workspace, id string, c TaskConfig) (*Task, error) {
	if err := validConfig(c); err != nil {
		return nil, err
	}
	return s.update(ctx, ws, id, func(tx *db.Tx, t *Task) (*Task, error) {
		if t.Status != StatusQueued {
			return nil, apperr.New(apperr.CodeConflict, "the configuration can only change while the task is queued (it is %s)", t.Status)
		}
		return setConfig(ctx, tx, ws.ID, id, c, s.clock.Now())
	})
}

// SetNotes replaces the task's notes.
func (s *Service) SetNotes(ctx context.Context, ws *actor.Workspace, id, notes string) (*Task, error) {
	if strings.ContainsRune(notes, 0) {
		return nil, apperr.BadRequest("notes must not contain NUL characters")
	}
	return s.update(ctx, ws, id, func(tx *db.Tx, _ *Task) (*Task, error) {
		return setNotes(ctx, tx, ws.ID, id, notes, s.clock.Now())
	})
}

// Rename sets the title and returns the stored one.
func (s *Service) Rename(ctx context.Context, ws *actor.Workspace, id, title string) (string, error) {
	clean, err := cleanTitle(title)
	if err != nil {
		return "", err
	}
	t, err := s.update(ctx, ws, id, func(tx *db.Tx, _ *Task) (*Task, error) {
		return setTitle(ctx, tx, ws.ID, id, clean, s.clock.Now())
	})
	if err != nil {
		return "", err
	}
	return t.Title, nil
}

// update runs fn on the workspace's task in one transaction and returns
// what fn returns; an invalid id, or another workspace's task, is not found.
func (s *Service) update(ctx context.Context, ws *actor.Workspace, id string, fn func(tx *db.Tx, t *Task) (*Task, error)) (*Task, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("task")
	}
	var out *Task
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTask(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		out, err = fn(tx, t)
		return err
	})
	return out, err
}
