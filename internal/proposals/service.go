package proposals

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"slipway/internal/agents/protocol"
	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/realtime"
	"slipway/internal/platform/text"
	"slipway/internal/runs"
	"slipway/internal/tenancy"
)

// Reactions are what other domains do when a proposal is made (the
// composition root lists who reacts): told inside its transaction.
type Reactions interface {
	ProposalMade(ctx context.Context, tx *db.Tx, p *Proposal) error
	// ProposalDecided: it was applied or rejected.
	ProposalDecided(ctx context.Context, tx *db.Tx, p *Proposal) error
}

// Deps are what the service needs.
type Deps struct {
	DB        *db.DB
	Clock     clock.Clock
	Hub       *realtime.Hub // nil: nothing is live
	Reactions Reactions     // nil: nobody hears
	Log       *slog.Logger
	// Kinds are the kinds of change, by name.
	Kinds map[string]Kind
}

// Service holds proposals.
type Service struct {
	db    *db.DB
	clock clock.Clock
	hub   *realtime.Hub
	react Reactions
	log   *slog.Logger
	kinds map[string]Kind
}

// NewService returns the proposals service.
func NewService(d Deps) *Service {
	return &Service{db: d.DB, clock: d.Clock, hub: d.Hub, react: d.Reactions, log: d.Log, kinds: d.Kinds}
}

// kindNames lists the registered kinds, sorted.
func (s *Service) kindNames() string {
	var names []string
	for k := range s.kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// AgentReported reads the proposals a task's agent made (its "proposal"
// lines), in the transaction that stores its events: each becomes a
// pending proposal, once however often the line is resent. One the
// change's kind refuses is recorded rejected with the reason, so the
// people reviewing see what the agent asked and why it cannot be.
func (s *Service) AgentReported(ctx context.Context, tx *db.Tx, r *runs.Run, proposedBy *string, evs []runs.NewEvent) error {
	for _, e := range evs {
		if e.Type != protocol.OutProposal {
			continue
		}
		var line protocol.Proposal
		if err := json.Unmarshal(e.Payload, &line); err != nil || line.ID == "" {
			continue // not a proposal that can be named
		}
		if r.TaskID != nil {
			n, err := countOfTask(ctx, tx, r.WorkspaceID, *r.TaskID)
			if err != nil {
				return err
			}
			if n >= MaxPerTask {
				s.log.Warn("proposals: a task's agent made more than the bound; the rest are dropped", "task", *r.TaskID, "max", MaxPerTask)
				return nil
			}
		}
		if _, _, err := s.propose(ctx, tx, r.WorkspaceID, r.TaskID, proposedBy, r.ID+":"+text.Clip(line.ID, 200), line); err != nil {
			return err
		}
	}
	return nil
}

// propose records a proposal; created is false for one already recorded
// under sourceKey.
func (s *Service) propose(ctx context.Context, tx *db.Tx, workspaceID string, taskID, by *string, sourceKey string, in protocol.Proposal) (*Proposal, bool, error) {
	now := s.clock.Now()
	p := &Proposal{ID: ids.New(), WorkspaceID: workspaceID, Kind: text.Clip(in.Kind, 40), Title: text.Clip(strings.TrimSpace(in.Title), maxTitle),
		Summary: text.Clip(in.Summary, maxSummary), Payload: in.Payload, TaskID: taskID, ProposedBy: by, Status: StatusPending, CreatedAt: now}
	if p.Title == "" {
		p.Title = "Proposed " + p.Kind
	}
	// A proposal refused when proposed is kept with why, not with what: its
	// payload may be what made it refused (a secret, say), and a payload
	// is stored as it is.
	refuse := func(why string) {
		p.Status, p.ReviewNote, p.DecidedAt, p.Payload = StatusRejected, &why, &now, json.RawMessage("null")
	}
	plan, err := s.plan(ctx, tx, workspaceID, in.Kind, in.TargetID, in.Payload)
	switch {
	case err == nil:
		p.Target, p.fingerprint = plan.Target, plan.Fingerprint
	case isRefusal(err):
		refuse("refused when proposed: " + err.Error())
	default:
		return nil, false, err
	}
	if len(p.Payload) > MaxPayload || !json.Valid(p.Payload) {
		p.Payload = json.RawMessage("null")
	}
	if p.Status == StatusPending {
		n, err := countStatus(ctx, tx, workspaceID, StatusPending)
		if err != nil {
			return nil, false, err
		}
		if n >= MaxPendingPerSpace {
			refuse("refused when proposed: the workspace has " + strconv.Itoa(MaxPendingPerSpace) + " pending proposals already")
		}
	}
	if p.Status == StatusPending {
		p.targetID = in.TargetID
	}
	created, err := insert(ctx, tx, p, sourceKey)
	if err != nil || !created {
		return p, false, err
	}
	if p.Status == StatusPending && s.react != nil {
		if err := s.react.ProposalMade(ctx, tx, p); err != nil {
			return nil, false, err
		}
	}
	return p, true, s.hub.NotifyTx(ctx, tx, workspaceID, Topic, p.ID)
}

// plan checks a change with its kind.
func (s *Service) plan(ctx context.Context, q db.Queryer, workspaceID, kind, targetID string, payload json.RawMessage) (*Plan, error) {
	k, ok := s.kinds[kind]
	if !ok {
		return nil, apperr.BadRequest("kind must be one of %s", s.kindNames())
	}
	if len(payload) == 0 || len(payload) > MaxPayload || !json.Valid(payload) {
		return nil, apperr.BadRequest("payload must be JSON of at most %d bytes", MaxPayload)
	}
	if targetID != "" && !ids.Valid(targetID) {
		return nil, apperr.NotFound("target")
	}
	return k.Plan(ctx, q, &actor.Workspace{ID: workspaceID}, targetID, payload)
}

// isRefusal reports whether err is a verdict on the change (bad request,
// not found, conflict…) rather than a failure to decide.
func isRefusal(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Code != apperr.CodeInternal && e.Code != apperr.CodeDatabase
}

// List is the workspace's proposals, newest first; status "" is any;
// limit is clamped to MaxLimit (default 50).
func (s *Service) List(ctx context.Context, ws *actor.Workspace, status string, limit, offset int) ([]Proposal, error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxLimit)
	return list(ctx, s.db.R, ws.ID, status, limit, max(offset, 0))
}

// Count is how many proposals of the workspace wait.
func (s *Service) Count(ctx context.Context, ws *actor.Workspace) (int, error) {
	return countStatus(ctx, s.db.R, ws.ID, StatusPending)
}

// BoardOf is the pending proposals (oldest of the newest 100 last) and the
// 20 latest decided, with counts by status.
func (s *Service) BoardOf(ctx context.Context, ws *actor.Workspace) (*ProposalBoard, error) {
	pending, err := list(ctx, s.db.R, ws.ID, StatusPending, 100, 0)
	if err != nil {
		return nil, err
	}
	decided, err := listDecided(ctx, s.db.R, ws.ID, 20)
	if err != nil {
		return nil, err
	}
	counts, err := countByStatus(ctx, s.db.R, ws.ID)
	if err != nil {
		return nil, err
	}
	for _, st := range []string{StatusPending, StatusApplied, StatusRejected} {
		counts[st] += 0
	}
	return &ProposalBoard{Pending: pending, Decided: decided, Counts: counts}, nil
}

// Get reads a proposal of the workspace.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Proposal, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("proposal")
	}
	return get(ctx, s.db.R, ws.ID, id, "")
}

var errAdmin = apperr.New(apperr.CodeForbidden, "only the workspace's owner or an admin decides proposals")

// Approve applies a pending proposal as u (a workspace admin), in one
// transaction: re-planned first (a target that changed since it was
// proposed refuses it, 409 with how), then applied, recorded applied with
// what it made, and audited. Exactly one of any number of concurrent
// approvals applies it; the others find it decided (409).
func (s *Service) Approve(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Proposal, error) {
	return s.settle(ctx, ws, u, id, "proposal.approve", func(tx *db.Tx, p *Proposal) (map[string]any, error) {
		k, ok := s.kinds[p.Kind]
		if !ok {
			return nil, apperr.New(apperr.CodeConflict, "this server does not know changes of kind %q any more", p.Kind)
		}
		plan, err := k.Plan(ctx, tx, ws, p.targetID, p.Payload)
		if err != nil {
			if isRefusal(err) {
				return nil, apperr.New(apperr.CodeConflict, "this proposal can no longer be applied: %s", err.Error())
			}
			return nil, err
		}
		if plan.Target != p.Target || plan.Fingerprint != p.fingerprint {
			why := "its target changed since it was proposed"
			if plan.Describe != nil {
				why = plan.Describe(p.fingerprint)
			}
			return nil, apperr.New(apperr.CodeConflict, "this proposal is stale: %s; reject it, or ask for a new one", why)
		}
		applied, err := k.Apply(ctx, tx, ws, u, p.targetID, p.Payload)
		if err != nil {
			return nil, err
		}
		result, err := json.Marshal(applied.Result)
		if err != nil {
			return nil, err
		}
		p.Status, p.Result, p.MaterializedID = StatusApplied, result, &applied.ID
		return summary(p), nil
	})
}

// Reject decides a pending proposal rejected, with an optional note that
// goes to the audit event.
func (s *Service) Reject(ctx context.Context, ws *actor.Workspace, u *actor.User, id, note string) (*Proposal, error) {
	// A note may run over lines; nothing else that controls a terminal.
	if err := text.CheckName("note", strings.NewReplacer("\n", "", "\r", "", "\t", "").Replace(note)); err != nil {
		return nil, err
	}
	if len(note) > maxNote {
		return nil, apperr.BadRequest("note is at most %d bytes", maxNote)
	}
	return s.settle(ctx, ws, u, id, "proposal.reject", func(_ *db.Tx, p *Proposal) (map[string]any, error) {
		p.Status = StatusRejected
		if note != "" {
			p.ReviewNote = &note
		}
		after := summary(p)
		after["note"] = note
		return after, nil
	})
}

// settle decides a pending proposal as u (a workspace admin) in one
// transaction: decide sets its outcome (and answers the audit's after);
// the decision is a compare-and-set, audited as action, and told.
func (s *Service) settle(ctx context.Context, ws *actor.Workspace, u *actor.User, id, action string,
	decideIt func(tx *db.Tx, p *Proposal) (map[string]any, error)) (*Proposal, error) {
	if !tenancy.WorkspaceAdmin(ws.Role) {
		return nil, errAdmin
	}
	if !ids.Valid(id) {
		return nil, apperr.NotFound("proposal")
	}
	var out *Proposal
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		p, err := get(ctx, tx, ws.ID, id, s.db.Dialect.ForUpdate())
		if err != nil {
			return err
		}
		if p.Status != StatusPending {
			return refusedDecided(p)
		}
		before := summary(p)
		after, err := decideIt(tx, p)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		p.ReviewerID, p.DecidedAt = &u.ID, &now
		if ok, err := decide(ctx, tx, p); err != nil || !ok {
			if err == nil {
				err = apperr.New(apperr.CodeConflict, "this proposal was decided already")
			}
			return err
		}
		if err := audit.Record(ctx, tx, now, u.ID, action, "proposal", p.ID, before, after); err != nil {
			return err
		}
		if s.react != nil {
			if err := s.react.ProposalDecided(ctx, tx, p); err != nil {
				return err
			}
		}
		out = p
		return s.hub.NotifyTx(ctx, tx, ws.ID, Topic, p.ID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// refusedDecided is the refusal of a decision on a proposal decided already.
func refusedDecided(p *Proposal) error {
	return apperr.New(apperr.CodeConflict, "this proposal was %s already", p.Status)
}

// summary is a proposal's audit snapshot: its decision and what it made,
// not its payload (which the proposal keeps).
func summary(p *Proposal) map[string]any {
	m := map[string]any{"kind": p.Kind, "title": p.Title, "target": p.Target, "status": p.Status}
	if p.MaterializedID != nil {
		m["materialized_id"] = *p.MaterializedID
	}
	if len(p.Result) > 0 {
		m["result"] = p.Result
	}
	return m
}
