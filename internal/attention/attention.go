// Package attention is the union inbox: one list of what waits for the
// caller in the active workspace — tool approvals of the workspace's
// tasks, human gates of the caller's workflow runs, proposals (decided by
// the workspace's admins), and the caller's unread notifications that
// only inform — with counts per source and how many are decisions the
// caller can take. It owns no rows: each source is read from its own
// service, and a decision made from the inbox goes to that service's own
// decide endpoint, as anywhere else.
package attention

import (
	"context"
	"slices"
	"time"

	"slipway/internal/approvals"
	"slipway/internal/notifications"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/proposals"
	"slipway/internal/tenancy"
	"slipway/internal/workflows"
)

// Sources of the union inbox.
const (
	SourceApproval     = "approval"
	SourceGate         = "gate"
	SourceProposal     = "proposal"
	SourceNotification = "notification"
)

var sources = []string{SourceApproval, SourceGate, SourceProposal, SourceNotification}

var labels = map[string]string{SourceApproval: "Tool approvals", SourceGate: "Human gates", SourceProposal: "Proposals",
	SourceNotification: "Notifications"}

// Window is how far the inbox pages: its newest Window items (a source's
// own list goes further).
const Window = 1000

// InboxItem is one thing in the inbox.
type InboxItem struct {
	Source string `json:"source" enum:"approval,gate,proposal,notification"`
	// ID is the item's id in its source: a tool approval's, a workflow
	// run's (with NodeKey), a proposal's, a notification's.
	ID         string    `json:"id"`
	NodeKey    string    `json:"node_key,omitempty" doc:"A gate's node (its decision: POST /api/workflows/runs/{id}/nodes/{node_key}/decision)"`
	Title      string    `json:"title"`
	Body       string    `json:"body"`
	Link       string    `json:"link" doc:"The console path that shows it"`
	Actionable bool      `json:"actionable" doc:"The caller can decide it here"`
	CreatedAt  time.Time `json:"created_at"`
	// Kind is a notification's own source or a proposal's kind.
	Kind string `json:"kind,omitempty"`
}

// InboxBoard is GET /api/inbox/board: one page of the union, newest first,
// chips per source, and how many decisions wait for the caller.
type InboxBoard struct {
	board.Board[InboxItem]
	Actionable int `json:"actionable" doc:"Decisions waiting for the caller: approvals, gates and (for an admin) proposals"`
}

// Query filters the inbox.
type Query struct {
	board.Query
	Source string `query:"source" enum:"approval,gate,proposal,notification" doc:"Only this source"`
}

// Deps are the services the inbox reads.
type Deps struct {
	Approvals     *approvals.Service
	Workflows     *workflows.Service
	Proposals     *proposals.Service
	Notifications *notifications.Service
}

// Service reads the union inbox.
type Service struct{ d Deps }

// NewService returns the inbox reader.
func NewService(d Deps) *Service { return &Service{d: d} }

// part is one source's share: its newest items (enough for the page) and
// how many it has.
type part struct {
	items []InboxItem
	count int
}

// Board is one page of the caller's inbox.
func (s *Service) Board(ctx context.Context, u *actor.User, ws *actor.Workspace, q Query) (*InboxBoard, error) {
	if q.Sort != "" && q.Sort != "created_at" {
		return nil, apperr.BadRequest("sort must be created_at")
	}
	if q.Order == "asc" {
		return nil, apperr.BadRequest("the inbox is newest first: order must be desc")
	}
	if q.Q != "" {
		return nil, apperr.BadRequest("the inbox has no search: filter by source, or search a source's own board")
	}
	if q.Page < 1 {
		q.Page = 1
	}
	if q.PageSize < 1 {
		q.PageSize = 50
	}
	need := q.Offset() + q.PageSize
	if need > Window {
		return nil, apperr.BadRequest("the inbox pages through its newest %d items: filter by source, or use the source's own list", Window)
	}
	parts, err := s.parts(ctx, u, ws, need)
	if err != nil {
		return nil, err
	}
	var rows []InboxItem
	facets := make([]board.Facet, 0, len(sources))
	total := 0
	for _, src := range sources {
		p := parts[src]
		facets = append(facets, board.Facet{Value: src, Label: labels[src], Count: p.count})
		if q.Source == "" || q.Source == src {
			rows = append(rows, p.items...)
			total += p.count
		}
	}
	slices.SortStableFunc(rows, func(a, b InboxItem) int { return b.CreatedAt.Compare(a.CreatedAt) })
	from, to := min(q.Offset(), len(rows)), min(need, len(rows))
	return &InboxBoard{Board: *board.New(q.Query, rows[from:to], total, map[string][]board.Facet{"source": facets}),
		Actionable: decisions(parts, ws)}, nil
}

// decisions counts what the caller can decide of the parts.
func decisions(parts map[string]part, ws *actor.Workspace) int {
	n := parts[SourceApproval].count + parts[SourceGate].count
	if tenancy.WorkspaceAdmin(ws.Role) {
		n += parts[SourceProposal].count
	}
	return n
}

// DecisionsCount is how many decisions wait for the caller in the active
// workspace: pending tool approvals, their runs' waiting human gates and,
// for the workspace's owner or an admin, pending proposals.
func (s *Service) DecisionsCount(ctx context.Context, u *actor.User, ws *actor.Workspace) (int, error) {
	parts, err := s.parts(ctx, u, ws, 0)
	if err != nil {
		return 0, err
	}
	return decisions(parts, ws), nil
}

// parts reads each source: its count and its newest limit items.
func (s *Service) parts(ctx context.Context, u *actor.User, ws *actor.Workspace, limit int) (map[string]part, error) {
	out := map[string]part{}
	admin := tenancy.WorkspaceAdmin(ws.Role)

	n, err := s.d.Approvals.Count(ctx, ws)
	if err != nil {
		return nil, err
	}
	p := part{count: n}
	if n > 0 && limit > 0 {
		as, err := s.d.Approvals.Pending(ctx, ws, min(limit, 200))
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			p.items = append(p.items, InboxItem{Source: SourceApproval, ID: a.ID, Title: "Approve " + a.Tool + "?", Body: a.Reason,
				Link: "/tasks/" + a.TaskID, Actionable: true, CreatedAt: a.CreatedAt})
		}
	}
	out[SourceApproval] = p

	gates, err := s.d.Workflows.PendingApprovals(ctx, u)
	if err != nil {
		return nil, err
	}
	p = part{}
	for _, g := range gates {
		if g.WorkspaceID != ws.ID {
			continue
		}
		p.count++
		if len(p.items) < limit {
			p.items = append(p.items, InboxItem{Source: SourceGate, ID: g.RunID, NodeKey: g.NodeKey, Title: g.WorkflowName + " waits at " + g.NodeKey,
				Body: g.Message, Link: "/workflows/runs/" + g.RunID, Actionable: true, CreatedAt: g.WaitingSince})
		}
	}
	out[SourceGate] = p

	if n, err = s.d.Proposals.Count(ctx, ws); err != nil {
		return nil, err
	}
	p = part{count: n}
	if n > 0 && limit > 0 {
		ps, err := s.d.Proposals.List(ctx, ws, proposals.StatusPending, limit, 0)
		if err != nil {
			return nil, err
		}
		for _, pr := range ps {
			p.items = append(p.items, InboxItem{Source: SourceProposal, ID: pr.ID, Title: pr.Title, Body: pr.Summary, Link: "/proposals/" + pr.ID,
				Actionable: admin, CreatedAt: pr.CreatedAt, Kind: pr.Kind})
		}
	}
	out[SourceProposal] = p

	ns, n, err := s.d.Notifications.Attention(ctx, u, ws, limit)
	if err != nil {
		return nil, err
	}
	p = part{count: n}
	for _, nt := range ns {
		p.items = append(p.items, InboxItem{Source: SourceNotification, ID: nt.ID, Title: nt.Title, Body: nt.Body, Link: nt.Link,
			CreatedAt: nt.CreatedAt, Kind: nt.Source})
	}
	out[SourceNotification] = p
	return out, nil
}
