package backlog

import (
	"context"
	"fmt"
	"strings"

	"slipway/internal/audit"
	"slipway/internal/forge"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/projects"
	"slipway/internal/tasks"
)

// dispatchAfter runs the dispatcher once a change committed; its failure
// is logged, not the change's (the next change or task end tries again).
func (s *Service) dispatchAfter(ctx context.Context, workspaceID string, p *projects.Project) {
	if err := s.Dispatch(ctx, workspaceID, p); err != nil && s.Log != nil {
		s.Log.Warn("backlog: dispatching failed", "project", p.ID, "err", err)
	}
}

// Dispatch turns the project's ready cards, by priority, into tasks while
// the project has room: at most max_concurrent_runs cards in progress
// (none set: a batch at a time). Each card moves to in_progress with its
// task in one transaction; a card held back gets a held decision saying
// why (once, until the reason changes).
func (s *Service) Dispatch(ctx context.Context, workspaceID string, p *projects.Project) error {
	ready, err := readyItems(ctx, s.DB.R, workspaceID, p.ID, dispatchBatch)
	if err != nil || len(ready) == 0 {
		return err
	}
	busy, err := inProgress(ctx, s.DB.R, workspaceID, p.ID)
	if err != nil {
		return err
	}
	room := dispatchBatch
	if p.MaxConcurrentRuns != nil {
		room = *p.MaxConcurrentRuns - busy
	}
	for _, it := range ready {
		if room <= 0 {
			detail := fmt.Sprintf("held: the project has %d card(s) in progress, its max_concurrent_runs is %d", busy, *p.MaxConcurrentRuns)
			if err := s.hold(ctx, workspaceID, it.ID, detail); err != nil {
				return err
			}
			continue
		}
		started, err := s.start(ctx, workspaceID, p, it)
		if err != nil {
			return err
		}
		if started {
			room--
			busy++
		}
	}
	return nil
}

// taskOf is the prompt and title of a card's task.
func taskOf(it *itemRow, repo string) (prompt, title string) {
	if it.Source == SourceProposal {
		return fmt.Sprintf("In %s: %s\n\n%s\n\nMake the change in the repository.", repo, it.Title, strings.TrimSpace(it.body)), it.Title
	}
	if it.IssueNumber == nil {
		return fmt.Sprintf("A customer wrote (%s), in %s:\n\n%s\n\nWork out what they need and make the change in the repository.",
			it.Title, repo, strings.TrimSpace(it.body)), it.Title
	}
	n := *it.IssueNumber
	return fmt.Sprintf("Resolve issue #%d of %s: %s\n\n%s\n\nIssue: %s\nWhen you are done, the change should close the issue (\"Closes #%d\").",
		n, repo, it.Title, strings.TrimSpace(it.body), it.URL, n), fmt.Sprintf("#%d %s", n, it.Title)
}

// start makes a ready card's task; false when the card is no longer ready.
func (s *Service) start(ctx context.Context, workspaceID string, p *projects.Project, card *itemRow) (bool, error) {
	started := false
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		it, err := lockItem(ctx, tx, workspaceID, p.ID, card.ID)
		if err != nil || it.State != Ready {
			return err
		}
		repo := p.Name
		if p.ForgeRepo != nil {
			repo = *p.ForgeRepo
		}
		prompt, title := taskOf(it, repo)
		t, err := s.Tasks.CreateTx(ctx, tx, workspaceID, nil, tasks.TaskCreate{ProjectID: p.ID, Prompt: prompt, Title: title})
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		before := it.Item
		it.State, it.TaskID, it.BlockedReason, it.UpdatedAt = InProgress, &t.ID, nil, now
		it.PRNumber, it.PRURL, it.prSHA = nil, nil, nil
		if err := saveItem(ctx, tx, workspaceID, it); err != nil {
			return err
		}
		if err := insertDispatch(ctx, tx, workspaceID, ids.New(), it.ID, &t.ID, "dispatched", "task "+t.ID+" started for the card", now); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, now, "", "backlog.item.dispatch", "backlog_item", it.ID, before, it.Item); err != nil {
			return err
		}
		started = true
		return s.Hub.NotifyTx(ctx, tx, workspaceID, TopicBacklog, it.ID)
	})
	return started, err
}

// hold records that a card was held back, unless its latest decision says
// so already.
func (s *Service) hold(ctx context.Context, workspaceID, itemID, detail string) error {
	decision, last, err := latestDecision(ctx, s.DB.R, workspaceID, itemID)
	if err != nil || decision == "held" && last == detail {
		return err
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		return insertDispatch(ctx, tx, workspaceID, ids.New(), itemID, nil, "held", detail, s.Clock.Now())
	})
}

// TaskEnded moves the card a task worked on, in the task's end
// transaction: to review when it opened a pull request, else to blocked
// saying why. The project may then take its next card (DispatchProject,
// after the commit).
func (s *Service) TaskEnded(ctx context.Context, tx *db.Tx, t *tasks.Task) (bool, error) {
	it, err := itemByTask(ctx, tx, t.WorkspaceID, t.ID)
	if err != nil || it == nil || it.State != InProgress {
		return false, err
	}
	before := it.Item
	now := s.Clock.Now()
	switch t.Status {
	case tasks.StatusDonePR:
		it.State = Review
	case tasks.StatusDone:
		it.State, it.BlockedReason = Blocked, ptr("its task finished without a pull request")
	default:
		reason := "its task " + t.Status
		if t.Error != "" {
			reason += ": " + t.Error
		}
		if r := []rune(reason); len(r) > 500 {
			reason = string(r[:499]) + "…"
		}
		it.State, it.BlockedReason = Blocked, &reason
	}
	it.UpdatedAt = now
	if err := saveItem(ctx, tx, t.WorkspaceID, it); err != nil {
		return false, err
	}
	if err := audit.Record(ctx, tx, now, "", "backlog.item.task_ended", "backlog_item", it.ID, before, it.Item); err != nil {
		return false, err
	}
	return true, s.Hub.NotifyTx(ctx, tx, t.WorkspaceID, TopicBacklog, it.ID)
}

// DispatchProject runs the dispatcher for a project of a workspace (after
// a task ended, a cap changed).
func (s *Service) DispatchProject(ctx context.Context, workspaceID, projectID string) error {
	p, err := s.Projects.Get(ctx, &actor.Workspace{ID: workspaceID}, projectID)
	if err != nil {
		return err
	}
	return s.Dispatch(ctx, workspaceID, p)
}

func ptr[T any](v T) *T { return &v }

// PRChanged moves the card whose task's pull request the forge reported
// on, in the transaction that records it: opened, its card is in review
// with the pull request's number and head; merged, done; closed without
// merging, blocked.
func (s *Service) PRChanged(ctx context.Context, tx *db.Tx, t *tasks.Task) error {
	if t.PR == nil || t.PR.Number == nil {
		return nil
	}
	it, err := itemByTask(ctx, tx, t.WorkspaceID, t.ID)
	if err != nil || it == nil || it.State == Done {
		return err
	}
	before := it.Item
	now := s.Clock.Now()
	n := int64(*t.PR.Number)
	it.PRNumber, it.PRURL = &n, t.PR.URL
	if t.PR.Commit != "" {
		sha := t.PR.Commit
		it.prSHA = &sha
	}
	switch t.PR.State {
	case tasks.PRMerged:
		it.State, it.BlockedReason, it.DoneAt = Done, nil, &now
	case tasks.PRClosed:
		it.State, it.BlockedReason = Blocked, ptr("its pull request was closed without merging")
	case tasks.PROpen:
		if it.State == InProgress || it.State == Blocked {
			it.State, it.BlockedReason = Review, nil
		}
	}
	it.UpdatedAt = now
	if err := saveItem(ctx, tx, t.WorkspaceID, it); err != nil {
		return err
	}
	if err := audit.Record(ctx, tx, now, "", "backlog.item.pull_request", "backlog_item", it.ID, before, it.Item); err != nil {
		return err
	}
	return s.Hub.NotifyTx(ctx, tx, t.WorkspaceID, TopicBacklog, it.ID)
}

// ForgeEvent hears a project's forge: a pull request event has the card's
// task read its pull request from the forge (the event's body is not
// trusted); a check event tells the watching browsers the card's gates may
// have changed.
func (s *Service) ForgeEvent(ctx context.Context, workspaceID, projectID string, ev *forge.Event) {
	var err error
	switch {
	case ev.Type == forge.EventPullRequest && ev.PR != nil:
		var it *itemRow
		if it, err = itemByPR(ctx, s.DB.R, workspaceID, projectID, int64(ev.PR.Number)); err == nil && it != nil && it.TaskID != nil {
			err = s.Tasks.RefreshPR(ctx, workspaceID, *it.TaskID)
		}
	case ev.Type == forge.EventCheck && ev.SHA != "":
		err = s.DB.Tx(ctx, func(tx *db.Tx) error {
			ids, err := itemsBySHA(ctx, tx, workspaceID, projectID, ev.SHA)
			for _, id := range ids {
				if err == nil {
					err = s.Hub.NotifyTx(ctx, tx, workspaceID, TopicBacklog, id)
				}
			}
			return err
		})
	}
	if err != nil && s.Log != nil {
		s.Log.Warn("backlog: a forge event was not taken", "project", projectID, "event", ev.Type, "err", err)
	}
}
