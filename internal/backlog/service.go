package backlog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"slipway/internal/audit"
	"slipway/internal/forge"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/projects"
	"slipway/internal/tasks"
)

// TopicBacklog is the realtime topic of backlog changes (id: the card).
const TopicBacklog = "backlog"

// Bounds.
const (
	// ColumnLimit is how many cards a column of the board shows at most
	// (50 unless asked).
	ColumnLimit    = 200
	columnDefault  = 50
	maxBodyRunes   = 4000
	maxListed      = 50
	dispatchBatch  = 20
	maxTitleRunes  = 300
	maxStoredBody  = 65536
	maxLabels      = 50
	maxLabelLength = 100
)

// Projects are the projects a backlog belongs to.
type Projects interface {
	Get(ctx context.Context, ws *actor.Workspace, id string) (*projects.Project, error)
	// ProjectForge opens a project's forge ("" and nil for a local one).
	ProjectForge(ctx context.Context, workspaceID, id string) (string, *forge.Access, error)
}

// Tasks start and read the cards' tasks.
type Tasks interface {
	CreateTx(ctx context.Context, tx *db.Tx, workspaceID string, createdBy *string, in tasks.TaskCreate) (*tasks.Task, error)
	Get(ctx context.Context, ws *actor.Workspace, id string) (*tasks.Task, error)
	// RefreshPR reads a task's pull request from its forge and records it.
	RefreshPR(ctx context.Context, workspaceID, id string) error
}

// Hub carries change hints to the watching browsers.
type Hub interface {
	NotifyTx(ctx context.Context, tx *db.Tx, workspaceID, topic, id string) error
}

// Deps are what the backlog is built with.
type Deps struct {
	DB       *db.DB
	Clock    clock.Clock
	Log      *slog.Logger
	Projects Projects
	Tasks    Tasks
	Hub      Hub
}

// Service is the backlog.
type Service struct{ Deps }

// NewService returns the backlog service.
func NewService(d Deps) *Service { return &Service{Deps: d} }

var notFound = apperr.NotFound("backlog item")

// project checks the project is the workspace's (else 404).
func (s *Service) project(ctx context.Context, ws *actor.Workspace, id string) (*projects.Project, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("project")
	}
	return s.Projects.Get(ctx, ws, id)
}

// Status is a project's backlog at a glance.
func (s *Service) Status(ctx context.Context, ws *actor.Workspace, projectID string) (*Status, error) {
	p, err := s.project(ctx, ws, projectID)
	if err != nil {
		return nil, err
	}
	c, err := counts(ctx, s.DB.R, ws.ID, p.ID)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, n := range c {
		total += n
	}
	return &Status{ProjectID: p.ID, Provider: p.Provider, Scannable: p.ForgeRepo != nil, Counts: c, Total: total}, nil
}

// Board is a project's board: each column's first cards by priority.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, projectID string, limit int) (*Board, error) {
	p, err := s.project(ctx, ws, projectID)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = columnDefault
	}
	limit = min(limit, ColumnLimit)
	c, err := counts(ctx, s.DB.R, ws.ID, p.ID)
	if err != nil {
		return nil, err
	}
	b := &Board{ProjectID: p.ID, Moves: Moves, Columns: make([]Column, 0, len(States))}
	for _, st := range States {
		col := Column{State: st.State, Label: st.Label, Total: c[st.State], Items: []Item{}}
		if col.Total > 0 {
			if col.Items, err = columnItems(ctx, s.DB.R, ws.ID, p.ID, st.State, limit); err != nil {
				return nil, err
			}
		}
		b.Columns = append(b.Columns, col)
	}
	return b, nil
}

// Item reads a card with its issue's body, dispatched runs, latest routing
// decision and gates.
func (s *Service) Item(ctx context.Context, ws *actor.Workspace, projectID, id string) (*ItemDetail, error) {
	p, err := s.project(ctx, ws, projectID)
	if err != nil {
		return nil, err
	}
	if !ids.Valid(id) {
		return nil, notFound
	}
	it, err := getItemFull(ctx, s.DB.R, ws.ID, p.ID, id)
	if err != nil {
		return nil, err
	}
	out := &ItemDetail{Item: it.Item}
	out.Body, out.BodyTruncated = smartTruncate(it.body, maxBodyRunes)
	all, err := dispatches(ctx, s.DB.R, ws.ID, it.ID, maxListed)
	if err != nil {
		return nil, err
	}
	out.Runs = []Dispatch{}
	for i := range all {
		if all[i].Decision == "dispatched" {
			out.Runs = append(out.Runs, all[i])
		}
	}
	if len(all) > 0 {
		out.Decision = httpx.Maybe[Dispatch]{V: &all[0]}
	}
	out.Gates = s.gates(ctx, ws, p.ID, it)
	return out, nil
}

// gates reads a card's gates: its task's status, and its pull request's
// checks from the forge.
func (s *Service) gates(ctx context.Context, ws *actor.Workspace, projectID string, it *itemRow) Gates {
	g := Gates{Task: "none", Checks: "unknown"}
	if it.TaskID != nil {
		if t, err := s.Tasks.Get(ctx, ws, *it.TaskID); err == nil {
			g.Task = t.Status
		}
	}
	if it.prSHA != nil {
		repo, a, err := s.Projects.ProjectForge(ctx, ws.ID, projectID)
		if err == nil && a != nil {
			if c, err := a.Provider.Checks(ctx, repo, *it.prSHA); err == nil {
				g.Checks = c.State
			}
		}
	}
	succeeded := g.Task == tasks.StatusDone || g.Task == tasks.StatusDonePR
	switch {
	case !succeeded:
		g.Reason = fmt.Sprintf("its task has not succeeded (%s)", g.Task)
	case g.Checks == forge.CheckFailure:
		g.Reason = "its pull request's checks failed"
	case g.Checks == forge.CheckPending:
		g.Reason = "its pull request's checks are still running"
	case g.Checks == "unknown":
		g.Reason = "its pull request's checks cannot be read"
	default:
		g.Green = true
	}
	return g
}

// smartTruncate cuts text near max runes at a paragraph, else a line, else
// a word boundary, marking the cut.
func smartTruncate(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	r := []rune(s)[:max]
	cut := string(r)
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(cut, sep); i > len(cut)/2 {
			cut = cut[:i]
			break
		}
	}
	return strings.TrimRight(cut, " \n") + "\n\n…", true
}

// Patch steers a card: a move within the allowlist (to done only with its
// gates green), a priority. Audited and published.
func (s *Service) Patch(ctx context.Context, ws *actor.Workspace, u *actor.User, projectID, id string, in ItemPatch) (*Item, error) {
	p, err := s.project(ctx, ws, projectID)
	if err != nil {
		return nil, err
	}
	if !ids.Valid(id) {
		return nil, notFound
	}
	if in.State == nil && in.Priority == nil && in.BlockedReason == nil {
		return nil, apperr.BadRequest("nothing to change: send state, priority or blocked_reason")
	}
	var reason *string
	if in.BlockedReason != nil {
		r := strings.TrimSpace(*in.BlockedReason)
		if err := text.CheckName("blocked_reason", r); err != nil {
			return nil, err
		}
		reason = &r
	}
	// The gates are read before the transaction: they may ask the forge.
	var gates *Gates
	if in.State != nil && *in.State == Done {
		cur, err := getItemFull(ctx, s.DB.R, ws.ID, p.ID, id)
		if err != nil {
			return nil, err
		}
		g := s.gates(ctx, ws, p.ID, cur)
		gates = &g
	}
	var out *Item
	movedToReady := false
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		it, err := lockItem(ctx, tx, ws.ID, p.ID, id)
		if err != nil {
			return err
		}
		before := it.Item
		now := s.Clock.Now()
		if in.State != nil && *in.State != it.State {
			to := *in.State
			if !allowed(it.State, to) {
				return apperr.New(apperr.CodeUnprocessable, "a card cannot be moved from %s to %s by hand (from %s: %s)", it.State, to, it.State, movesText(it.State))
			}
			if to == Done && (gates == nil || !gates.Green) {
				why := "its gates are not green"
				if gates != nil && gates.Reason != "" {
					why = gates.Reason
				}
				return apperr.New(apperr.CodeUnprocessable, "the card cannot be done: %s", why)
			}
			it.State = to
			it.BlockedReason = nil
			if to == Blocked {
				it.BlockedReason = reason
			}
			if to == Done {
				it.DoneAt = &now
			}
			movedToReady = to == Ready
		} else if reason != nil && it.State == Blocked {
			it.BlockedReason = reason
		}
		if in.Priority != nil {
			if it.State == Done {
				return apperr.New(apperr.CodeUnprocessable, "a done card keeps its place")
			}
			it.Priority = *in.Priority
		}
		it.UpdatedAt = now
		if err := saveItem(ctx, tx, ws.ID, it); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, now, u.ID, "backlog.item.update", "backlog_item", it.ID, before, it.Item); err != nil {
			return err
		}
		out = &it.Item
		return s.Hub.NotifyTx(ctx, tx, ws.ID, TopicBacklog, it.ID)
	})
	if err != nil {
		return nil, err
	}
	if movedToReady {
		s.dispatchAfter(ctx, ws.ID, p)
	}
	return out, nil
}

func movesText(from string) string {
	if len(Moves[from]) == 0 {
		return "no moves"
	}
	return "to " + strings.Join(Moves[from], ", ")
}

// Order applies a reorder plan in one transaction: every card must be the
// project's (else 404 naming it, nothing changed), and a plan touching a
// done card is refused whole (422).
func (s *Service) Order(ctx context.Context, ws *actor.Workspace, u *actor.User, projectID string, in OrderInput) (*OrderResult, error) {
	p, err := s.project(ctx, ws, projectID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	list := make([]string, 0, len(in.Plan))
	for i, e := range in.Plan {
		if !ids.Valid(e.ItemID) {
			return nil, apperr.NotFound("backlog item")
		}
		if seen[e.ItemID] {
			return nil, apperr.BadRequest("plan[%d]: item %s is planned twice", i, e.ItemID)
		}
		seen[e.ItemID] = true
		list = append(list, e.ItemID)
	}
	out := &OrderResult{}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		states, err := planStates(ctx, tx, s.DB.Engine(), ws.ID, p.ID, list)
		if err != nil {
			return err
		}
		for _, id := range list {
			st, ok := states[id]
			if !ok {
				return apperr.NotFound("backlog item")
			}
			if st == Done {
				return apperr.New(apperr.CodeUnprocessable, "the plan moves item %s, which is done: nothing was reordered", id)
			}
		}
		now := s.Clock.Now()
		if out.Updated, err = applyPlan(ctx, tx, s.DB.Engine(), ws.ID, p.ID, in.Plan, now); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, now, u.ID, "backlog.reorder", "project", p.ID, nil, in.Plan); err != nil {
			return err
		}
		return s.Hub.NotifyTx(ctx, tx, ws.ID, TopicBacklog, p.ID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Scan reads the project's open issues from its forge: new ones become
// inbox cards (after the others), changed ones are updated, and cards
// whose issue is no longer open leave the board unless work began on them
// (in progress, review or done). A dry run answers what would change and
// writes nothing.
func (s *Service) Scan(ctx context.Context, ws *actor.Workspace, u *actor.User, projectID string, dryRun bool) (*ScanResult, error) {
	p, err := s.project(ctx, ws, projectID)
	if err != nil {
		return nil, err
	}
	repo, a, err := s.Projects.ProjectForge(ctx, ws.ID, p.ID)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, apperr.New(apperr.CodeConflict, "the project is local: it has no forge to scan")
	}
	issues, err := a.Provider.ListIssues(ctx, repo)
	if err != nil {
		return nil, apperr.New(apperr.CodeUnprocessable, "reading the repository's issues: %v", err)
	}
	res := &ScanResult{DryRun: dryRun, Added: []ScanChange{}, Updated: []ScanChange{}, Removed: []ScanChange{}}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		have, err := issueItems(ctx, tx, ws.ID, p.ID)
		if err != nil {
			return err
		}
		prio, err := maxPriority(ctx, tx, ws.ID, p.ID)
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		open := map[int64]bool{}
		for _, is := range issues {
			n := int64(is.Number)
			open[n] = true
			title, body, labels := cleanIssue(is)
			if it, ok := have[n]; ok {
				if it.Title == title && it.body == body && it.URL == is.URL && equal(it.Labels, labels) {
					continue
				}
				res.Updated = append(res.Updated, ScanChange{IssueNumber: n, Title: title, ItemID: it.ID})
				if !dryRun {
					it.Title, it.body, it.URL, it.Labels, it.UpdatedAt = title, body, is.URL, labels, now
					if err := updateIssue(ctx, tx, ws.ID, it); err != nil {
						return err
					}
				}
				continue
			}
			prio += 1024
			it := &itemRow{Item: Item{ID: ids.New(), ProjectID: p.ID, Source: SourceForge, IssueNumber: &n, Title: title, URL: is.URL, Labels: labels, State: Inbox,
				Priority: prio, CreatedAt: now, UpdatedAt: now}, body: body}
			res.Added = append(res.Added, ScanChange{IssueNumber: n, Title: title, ItemID: it.ID})
			if !dryRun {
				if err := insertItem(ctx, tx, ws.ID, it); err != nil {
					return err
				}
			}
		}
		for n, it := range have {
			if open[n] || it.State == InProgress || it.State == Review || it.State == Done {
				continue
			}
			res.Removed = append(res.Removed, ScanChange{IssueNumber: n, Title: it.Title, ItemID: it.ID})
			if !dryRun {
				if err := deleteItem(ctx, tx, ws.ID, it.ID); err != nil {
					return err
				}
			}
		}
		if dryRun {
			return nil
		}
		if err := audit.Record(ctx, tx, now, u.ID, "backlog.scan", "project", p.ID, nil,
			map[string]int{"added": len(res.Added), "updated": len(res.Updated), "removed": len(res.Removed)}); err != nil {
			return err
		}
		return s.Hub.NotifyTx(ctx, tx, ws.ID, TopicBacklog, p.ID)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// cleanIssue is an issue as a card keeps it: controls out of the title,
// bounded body and labels.
func cleanIssue(is forge.Issue) (string, string, []string) {
	title := strings.TrimSpace(text.StripControls(is.Title))
	if r := []rune(title); len(r) > maxTitleRunes {
		title = string(r[:maxTitleRunes-1]) + "…"
	}
	if title == "" {
		title = fmt.Sprintf("Issue #%d", is.Number)
	}
	body := strings.ToValidUTF8(is.Body, "")
	if len(body) > maxStoredBody {
		body = strings.ToValidUTF8(body[:maxStoredBody], "")
	}
	labels := []string{}
	for _, l := range is.Labels {
		l = strings.TrimSpace(text.StripControls(l))
		if l != "" && len(l) <= maxLabelLength && len(labels) < maxLabels {
			labels = append(labels, l)
		}
	}
	return title, body, labels
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
