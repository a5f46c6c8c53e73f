package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"slipway/internal/forge"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Pull request states.
const (
	PRProposed = "proposed"
	PROpening  = "opening"
	PROpen     = "open"
	PRClosed   = "closed"
	PRMerged   = "merged"
)

// prState is the state of a pull request recorded before states existed.
func prState(pr *PullRequest) string {
	switch {
	case pr.ClosedAt != nil:
		return PRClosed
	case pr.OpenedAt != nil:
		return PROpen
	}
	return PRProposed
}

// How the loop that opens pull requests on forges works: a few at a time,
// each held for prLease while the forge is called, retried with a growing
// delay, given up after prAttempts (the pull request is then proposed
// again, with the forge's reason, for POST /api/tasks/{id}/pr).
const (
	prLease    = 2 * time.Minute
	prAttempts = 5
	prBatch    = 10
	prPoll     = 5 * time.Second
	prBodyMax  = 8000
)

// forgeOf opens the forge of a task's project ("" and nil for a local
// project).
func (s *Service) forgeOf(ctx context.Context, t *Task) (string, *forge.Access, error) {
	return s.projects.ProjectForge(ctx, t.WorkspaceID, t.ProjectID)
}

// openOnForge opens the task's pull request on its forge, or finds the one
// a previous attempt opened (its branch has at most one open).
func (s *Service) openOnForge(ctx context.Context, t *Task) (*forge.PR, error) {
	repo, a, err := s.forgeOf(ctx, t)
	if err != nil {
		return nil, err
	}
	if a == nil || t.PR == nil {
		return nil, apperr.New(apperr.CodeConflict, "the task's project has no forge")
	}
	if pr, err := a.Provider.FindPR(ctx, repo, t.PR.Branch); err != nil || pr != nil {
		return pr, err
	}
	return a.Provider.OpenPR(ctx, repo, forge.PRInput{Title: t.Title, Body: prBody(t), Head: t.PR.Branch, Base: t.PR.Base, Labels: []string{"slipway"}})
}

// prBody is the pull request's description: the task's prompt (a
// backlog card's says which issue it closes), and where it came from.
func prBody(t *Task) string {
	body := strings.TrimSpace(t.Prompt)
	if r := []rune(body); len(r) > prBodyMax {
		body = string(r[:prBodyMax-1]) + "…"
	}
	return body + "\n\n---\nOpened by Slipway for task " + t.ID + "."
}

// recordForgePR records what the forge says of the task's pull request,
// moving a done task to done_pr when it opened, and tells the reactions.
func (s *Service) recordForgePR(ctx context.Context, tx *db.Tx, t *Task, fp *forge.PR) (*Task, error) {
	now := s.clock.Now()
	pr := *t.PR
	n, url := fp.Number, fp.URL
	pr.Number, pr.URL, pr.Error, pr.State = &n, &url, nil, fp.State
	if fp.HeadSHA != "" {
		pr.Commit = fp.HeadSHA
	}
	if pr.OpenedAt == nil {
		pr.OpenedAt = &now
	}
	if fp.State == forge.PRClosed && pr.ClosedAt == nil {
		pr.ClosedAt = &now
	}
	out, err := setPR(ctx, tx, t.WorkspaceID, t.ID, &pr, now)
	if err != nil {
		return nil, err
	}
	if err := s.event(ctx, tx, t, "", s.value(EventPR, pr)); err != nil {
		return nil, err
	}
	if out.Status == StatusDone {
		if out, err = s.setStatus(ctx, tx, t.WorkspaceID, t.ID, StatusDone, StatusDonePR, ""); err != nil {
			return nil, err
		}
		if err := s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(StatusDone, StatusDonePR, "pull request opened"))); err != nil {
			return nil, err
		}
	}
	if s.react != nil {
		if err := s.react.PRChanged(ctx, tx, out); err != nil {
			return nil, err
		}
	}
	return out, nil // s.event told the watchers of the tasks topic
}

// openForgePR is POST /api/tasks/{id}/pr on a forge's project: a
// proposed pull request is opened there now (or the one opened before is
// found), an open one is refreshed from the forge.
func (s *Service) openForgePR(ctx context.Context, ws *actor.Workspace, t *Task) (*Task, error) {
	if t.PR == nil || t.PR.Commit == "" {
		return nil, ErrNothingToPropose
	}
	if t.Status != StatusDone && t.Status != StatusDonePR {
		return nil, apperr.New(apperr.CodeConflict, "the task is %s: a pull request is opened for a finished task", t.Status)
	}
	var fp *forge.PR
	var err error
	if t.PR.Number != nil {
		repo, a, ferr := s.forgeOf(ctx, t)
		if ferr != nil {
			return nil, ferr
		}
		fp, err = a.Provider.GetPR(ctx, repo, *t.PR.Number)
	} else {
		fp, err = s.openOnForge(ctx, t)
	}
	if err != nil {
		return nil, forgeErr(err)
	}
	return s.update(ctx, ws, t.ID, func(tx *db.Tx, cur *Task) (*Task, error) {
		if cur.PR == nil {
			return nil, ErrNothingToPropose
		}
		if err := deletePRAction(ctx, tx, ws.ID, cur.ID); err != nil {
			return nil, err
		}
		return s.recordForgePR(ctx, tx, cur, fp)
	})
}

// RefreshPR reads a task's pull request from its forge and records it
// (a forge's webhook said it changed).
func (s *Service) RefreshPR(ctx context.Context, workspaceID, id string) error {
	ws := &actor.Workspace{ID: workspaceID}
	t, err := s.Get(ctx, ws, id)
	if err != nil || t.PR == nil || t.PR.Number == nil {
		return err
	}
	_, err = s.openForgePR(ctx, ws, t)
	return err
}

// closeForgePR closes the task's pull request on its forge (an undo).
func (s *Service) closeForgePR(ctx context.Context, ws *actor.Workspace, t *Task) (*Task, error) {
	repo, a, err := s.forgeOf(ctx, t)
	if err != nil {
		return nil, err
	}
	fp, err := a.Provider.ClosePR(ctx, repo, *t.PR.Number)
	if err != nil {
		return nil, forgeErr(err)
	}
	return s.update(ctx, ws, t.ID, func(tx *db.Tx, cur *Task) (*Task, error) { return s.recordForgePR(ctx, tx, cur, fp) })
}

// forgeErr says what the forge refused as the API's error.
func forgeErr(err error) error {
	var ae *apperr.Error
	switch {
	case errors.As(err, &ae):
		return err
	case errors.Is(err, forge.ErrRateLimited):
		return apperr.New(apperr.CodeRateLimited, "the forge's rate limit was hit; try again later")
	}
	return apperr.New(apperr.CodeUnprocessable, "the forge: %v", err)
}

// permanent says whether trying again cannot help.
func permanent(err error) bool {
	return errors.Is(err, forge.ErrInvalid) || errors.Is(err, forge.ErrNotFound) || errors.Is(err, forge.ErrUnauthorized) ||
		errors.Is(err, forge.ErrForbidden)
}

// KickPRs asks the loop to look now (after a commit that added an action).
func (s *Service) KickPRs() {
	select {
	case s.prKick <- struct{}{}:
	default:
	}
}

// RunPRs opens the pull requests tasks left to open on their forges until
// ctx ends (every replica runs it; a claim holds an action for prLease).
func (s *Service) RunPRs(ctx context.Context) {
	t := time.NewTicker(prPoll)
	defer t.Stop()
	for {
		for {
			n, err := s.OpenPRs(ctx)
			if err != nil && ctx.Err() == nil && s.log != nil {
				s.log.Warn("tasks: opening pull requests failed", "err", err)
			}
			if err != nil || n < prBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.prKick:
		}
	}
}

// OpenPRs takes the due pull requests to open and opens them; it answers
// how many it took.
func (s *Service) OpenPRs(ctx context.Context) (int, error) {
	var due []prAction
	err := s.db.Tx(ctx, func(tx *db.Tx) (err error) {
		now := s.clock.Now()
		due, err = claimPRActions(ctx, tx, s.db.Dialect, now, now.Add(prLease), prBatch)
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, a := range due {
		s.openOne(ctx, a)
	}
	return len(due), nil
}

// openOne opens one task's pull request and records how it went.
func (s *Service) openOne(ctx context.Context, a prAction) {
	ws := &actor.Workspace{ID: a.workspaceID}
	t, err := s.Get(ctx, ws, a.taskID)
	var fp *forge.PR
	if err == nil {
		if t.PR == nil || t.PR.State != PROpening {
			err = errNothingToOpen
		} else {
			fp, err = s.openOnForge(ctx, t)
		}
	}
	_ = s.db.Tx(ctx, func(tx *db.Tx) error {
		switch {
		case errors.Is(err, errNothingToOpen) || errors.Is(err, apperr.ErrNotFound):
			return deletePRAction(ctx, tx, a.workspaceID, a.taskID)
		case err == nil:
			if err := deletePRAction(ctx, tx, a.workspaceID, a.taskID); err != nil {
				return err
			}
			cur, err := getTask(ctx, tx, a.workspaceID, a.taskID)
			if err != nil {
				return err
			}
			_, err = s.recordForgePR(ctx, tx, cur, fp)
			return err
		case permanent(err) || a.attempts >= prAttempts:
			if err := deletePRAction(ctx, tx, a.workspaceID, a.taskID); err != nil {
				return err
			}
			cur, gerr := getTask(ctx, tx, a.workspaceID, a.taskID)
			if gerr != nil || cur.PR == nil {
				return gerr
			}
			pr := *cur.PR
			msg := fmt.Sprintf("opening the pull request on the forge failed after %d attempt(s): %v", a.attempts, err)
			pr.State, pr.Error = PRProposed, &msg
			if _, err := setPR(ctx, tx, a.workspaceID, a.taskID, &pr, s.clock.Now()); err != nil {
				return err
			}
			return s.event(ctx, tx, cur, "", s.value(EventPR, pr))
		default:
			delay := time.Duration(1<<min(a.attempts, 6)) * 10 * time.Second
			return retryPRAction(ctx, tx, a.workspaceID, a.taskID, s.clock.Now().Add(delay), err.Error())
		}
	})
}

var errNothingToOpen = errors.New("tasks: no pull request to open")
