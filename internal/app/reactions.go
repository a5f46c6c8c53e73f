package app

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/approvals"
	"slipway/internal/auth"
	"slipway/internal/backlog"
	"slipway/internal/billing"
	"slipway/internal/commerce"
	"slipway/internal/conversations"
	"slipway/internal/forge"
	"slipway/internal/inbox"
	"slipway/internal/marketplace"
	"slipway/internal/notifications"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
	"slipway/internal/projects"
	"slipway/internal/proposals"
	"slipway/internal/resources"
	"slipway/internal/runners"
	"slipway/internal/runs"
	"slipway/internal/tasks"
	"slipway/internal/tenancy"
	"slipway/internal/triggers"
	"slipway/internal/workflows"
)

// reactions is every reaction of one domain to a change in another, in one
// place. A domain that changes something others care about takes the
// interface it fires in its constructor (tenancy.Reactions,
// projects.Reactions, tasks.Reactions, approvals.Reactions,
// inbox.Reactions, runs.Reactions); this type answers them all by calling
// the subscribers below, in the order written, inside the publisher's
// transaction: an error from any of them undoes the change. A new
// subscriber is a line here.
//
// Build makes it empty (publishers need it before their subscribers
// exist) and fills it before anything runs.
type reactions struct {
	auth          *auth.Service
	projects      *projects.Service
	tasks         *tasks.Service
	workflows     *workflows.Service
	engine        *workflows.Engine
	runs          *runs.Service
	conversations *conversations.Service
	inbox         *inbox.Inbox
	backlog       *backlog.Service
	notifications *notifications.Service
	proposals     *proposals.Service
	commerce      *commerce.Service
	access        tenancy.Access
}

// PurchaseEvent hands the payment provider's event about a marketplace
// purchase to commerce (billing.PurchaseEvents).
func (r *reactions) PurchaseEvent(ctx context.Context, tx *db.Tx, p *billing.ProviderPurchase) (string, error) {
	if r.commerce == nil {
		return "ignored: no marketplace", nil
	}
	return r.commerce.PurchaseEvent(ctx, tx, p)
}

var (
	_ tenancy.Reactions       = (*reactions)(nil)
	_ projects.Reactions      = (*reactions)(nil)
	_ projects.ForgeEvents    = (*reactions)(nil)
	_ tasks.Reactions         = (*reactions)(nil)
	_ approvals.Reactions     = (*reactions)(nil)
	_ inbox.Reactions         = (*reactions)(nil)
	_ runs.Reactions          = (*reactions)(nil)
	_ workflows.Reactions     = (*reactions)(nil)
	_ proposals.Reactions     = (*reactions)(nil)
	_ conversations.Reactions = (*reactions)(nil)
	_ marketplace.Reactions   = (*reactions)(nil)
	_ billing.PurchaseEvents  = (*reactions)(nil)
	_ triggers.Backlog        = conversationCards{}
)

// WorkspaceCreated: a new workspace gets the default agent profiles.
func (r *reactions) WorkspaceCreated(ctx context.Context, q db.Queryer, workspaceID string, now time.Time) error {
	return r.projects.WorkspaceCreated(ctx, q, workspaceID, now)
}

// Offboarded: a person removed from an organization loses their sessions.
func (r *reactions) Offboarded(ctx context.Context, tx *db.Tx, userID string) error {
	return r.auth.RevokeSessions(ctx, tx, userID)
}

// MessageWritten: the members a task's message names (@olivia) are told,
// but its author.
func (r *reactions) MessageWritten(ctx context.Context, tx *db.Tx, m *conversations.AgentMessage) error {
	if !strings.Contains(m.Text, "@") {
		return nil
	}
	members, err := r.access.Members(ctx, tx, m.WorkspaceID)
	if err != nil {
		return err
	}
	people := make([]notifications.Person, len(members))
	by := "The agent"
	for i, p := range members {
		people[i] = notifications.Person{ID: p.UserID, Email: p.Email}
		if m.AuthorID != nil && p.UserID == *m.AuthorID {
			by = cmp.Or(p.DisplayName, p.Email)
		}
	}
	named := notifications.Mentioned(m.Text, people)
	if m.AuthorID != nil {
		named = slices.DeleteFunc(named, func(id string) bool { return id == *m.AuthorID })
	}
	if len(named) == 0 {
		return nil
	}
	t, err := r.tasks.GetIn(ctx, tx, m.WorkspaceID, m.TaskID)
	if err != nil {
		return err
	}
	return r.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: m.WorkspaceID, Source: notifications.SourceMention,
		Title: by + " mentioned you on " + t.Title, Body: m.Text, TargetKind: "task", TargetID: m.TaskID, Link: "/tasks/" + m.TaskID,
		Key: "mention:" + m.ID}, named...)
}

// UpdateHeld: an auto-update that would give an install more
// capabilities waits for the person who installed it, who is told.
func (r *reactions) UpdateHeld(ctx context.Context, tx *db.Tx, workspaceID string, installedBy *string, in *marketplace.MarketInstall, item, version, reason string) error {
	if installedBy == nil {
		return nil
	}
	return r.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: workspaceID, Source: notifications.SourceApproval,
		Title: "Update " + item + " to " + version + "?", Body: reason, TargetKind: "marketplace_install", TargetID: in.ID,
		Key: "marketplace_held:" + in.ID + ":" + version}, *installedBy)
}

// TakenDown: the admins of every workspace that installed a taken-down
// item are told (what they installed keeps running).
func (r *reactions) TakenDown(ctx context.Context, tx *db.Tx, workspaceIDs []string, itemID, item string) error {
	for _, ws := range workspaceIDs {
		admins, err := r.access.WorkspaceAdmins(ctx, tx, ws)
		if err != nil {
			return err
		}
		if err := r.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: ws, Source: notifications.SourceApproval,
			Title: item + " was taken down from the marketplace", Body: "What you installed keeps running; it can no longer be installed or updated.",
			TargetKind: "marketplace_item", TargetID: itemID, Key: "marketplace_takedown:" + itemID}, admins...); err != nil {
			return err
		}
	}
	return nil
}

// Invited: an account invited to an organization is told, on its own
// (no workspace); the link to accept is in the invite's mail.
func (r *reactions) Invited(ctx context.Context, tx *db.Tx, userID string, in tenancy.InviteNote) error {
	return r.notifications.Notify(ctx, tx, notifications.Note{Source: notifications.SourceInvite,
		Title: in.Inviter + " invited you to " + in.Organization,
		Body: "Join as " + in.Role + " with the link in the invite mail sent to " + in.Email + "; it expires " +
			in.ExpiresAt.UTC().Format("2 January 2006 15:04 MST") + ".",
		TargetKind: "invite", TargetID: in.InviteID, Key: "invite:" + in.InviteID}, userID)
}

// InviteSettled: an accepted or revoked invite's notification is answered.
func (r *reactions) InviteSettled(ctx context.Context, tx *db.Tx, inviteID string) error {
	return r.notifications.Settle(ctx, tx, "invite:"+inviteID)
}

// ProjectDeleting: a deleted project stops its workflow runs before its
// tasks go.
func (r *reactions) ProjectDeleting(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error {
	if err := r.workflows.ProjectDeleting(ctx, tx, workspaceID, projectID); err != nil {
		return err
	}
	return r.tasks.ProjectDeleting(ctx, tx, workspaceID, projectID)
}

// CapChanged: runs held back by a project's cap may start.
func (r *reactions) CapChanged(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error {
	return r.workflows.CapChanged(ctx, tx, workspaceID, projectID)
}

// TaskEnded: the messages its agent never took are withdrawn, and the
// agent node waiting for the task goes on with its result.
func (r *reactions) TaskEnded(ctx context.Context, tx *db.Tx, t *tasks.Task) error {
	if err := r.conversations.TaskEnded(ctx, tx, t); err != nil {
		return err
	}
	if t.Status == tasks.StatusFailed && t.CreatedBy != nil {
		if err := r.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: t.WorkspaceID, Source: notifications.SourceRunFailed,
			Title: "Task failed: " + t.Title, Body: t.Error, TargetKind: "task", TargetID: t.ID, Link: "/tasks/" + t.ID,
			Key: "task_failed:" + t.ID}, *t.CreatedBy); err != nil {
			return err
		}
	}
	end := workflows.TaskEnd{ID: t.ID, WorkspaceID: t.WorkspaceID, Status: t.Status, Error: t.Error, Branch: t.Branch}
	res, err := r.runs.LastResult(ctx, tx, t.WorkspaceID, t.ID)
	if err != nil {
		return err
	}
	end.Result = res
	if err := r.engine.TaskEnded(ctx, tx, end); err != nil {
		return err
	}
	// The card the task worked on moves on, and its project may take the
	// next one once this commits.
	moved, err := r.backlog.TaskEnded(ctx, tx, t)
	if err != nil || !moved {
		return err
	}
	workspaceID, projectID := t.WorkspaceID, t.ProjectID
	tx.AfterCommit(func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = r.backlog.DispatchProject(ctx, workspaceID, projectID)
		}()
	})
	return nil
}

// PRChanged: the card of a task whose pull request the forge reported on
// moves (review, done when merged, blocked when closed).
func (r *reactions) PRChanged(ctx context.Context, tx *db.Tx, t *tasks.Task) error {
	return r.backlog.PRChanged(ctx, tx, t)
}

// ForgeEvent: what a project's forge said through its webhook reaches the
// backlog (a pull request merged, checks changed).
func (r *reactions) ForgeEvent(ctx context.Context, workspaceID, projectID string, ev *forge.Event) {
	r.backlog.ForgeEvent(ctx, workspaceID, projectID, ev)
}

// ApprovalRequested: whoever started the task hears that its agent asks.
func (r *reactions) ApprovalRequested(ctx context.Context, tx *db.Tx, a *approvals.ToolApproval) error {
	t, err := r.tasks.GetIn(ctx, tx, a.WorkspaceID, a.TaskID)
	if err != nil || t.CreatedBy == nil {
		return err
	}
	return r.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: a.WorkspaceID, Source: notifications.SourceApproval,
		Title: "Approve " + a.Tool + "? " + t.Title, Body: a.Reason, TargetKind: "tool_approval", TargetID: a.ID,
		Link: "/tasks/" + t.ID}, *t.CreatedBy)
}

// GateWaiting: whoever started the run hears that its human gate waits.
func (r *reactions) GateWaiting(ctx context.Context, tx *db.Tx, g workflows.GateWaiting) error {
	if g.StartedBy == nil {
		return nil
	}
	return r.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: g.WorkspaceID, Source: notifications.SourceGate,
		Title: "A workflow run waits for your decision at " + g.NodeKey, Body: g.Message, TargetKind: "workflow_run", TargetID: g.RunID,
		Link: "/workflows/runs/" + g.RunID, Key: "gate:" + g.NodeRunID}, *g.StartedBy)
}

// ApprovalsSuperseded: the closed approvals' notifications are settled.
func (r *reactions) ApprovalsSuperseded(ctx context.Context, tx *db.Tx, ids []string) error {
	for _, id := range ids {
		if err := r.notifications.Settle(ctx, tx, notifications.SourceApproval+":"+id); err != nil {
			return err
		}
	}
	return nil
}

// GateClosed: the gate's notification is settled.
func (r *reactions) GateClosed(ctx context.Context, tx *db.Tx, g workflows.GateWaiting) error {
	return r.notifications.Settle(ctx, tx, "gate:"+g.NodeRunID)
}

// ProposalDecided: the proposal's notifications are settled.
func (r *reactions) ProposalDecided(ctx context.Context, tx *db.Tx, p *proposals.Proposal) error {
	return r.notifications.Settle(ctx, tx, notifications.SourceProposal+":"+p.ID)
}

// RunFailed: whoever started the workflow run hears that it failed.
func (r *reactions) RunFailed(ctx context.Context, tx *db.Tx, f workflows.FailedRun) error {
	if f.StartedBy == nil {
		return nil
	}
	return r.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: f.WorkspaceID, Source: notifications.SourceRunFailed,
		Title: "A workflow run failed", Body: f.Error, TargetKind: "workflow_run", TargetID: f.RunID,
		Link: "/workflows/runs/" + f.RunID, Key: "run_failed:" + f.RunID}, *f.StartedBy)
}

// ApprovalDecided: the task the approval held goes on, and the approval's
// notification is settled.
func (r *reactions) ApprovalDecided(ctx context.Context, tx *db.Tx, a *approvals.ToolApproval) error {
	if err := r.notifications.Settle(ctx, tx, notifications.SourceApproval+":"+a.ID); err != nil {
		return err
	}
	return r.tasks.ApprovalDecided(ctx, tx, a)
}

// MessagesSeen: the messages the agent's model has read are delivered.
func (r *reactions) MessagesSeen(ctx context.Context, tx *db.Tx, messageIDs []string) error {
	return r.conversations.MessagesSeen(ctx, tx, messageIDs)
}

// AgentReported: what a task's agent reported may move its task to
// needs_input, its own messages join the conversation, and the messages
// its model read are delivered.
func (r *reactions) AgentReported(ctx context.Context, tx *db.Tx, run *runs.Run, evs []runs.NewEvent) error {
	if err := r.tasks.AgentReported(ctx, tx, run, evs); err != nil {
		return err
	}
	if err := r.inbox.AgentReported(ctx, tx, run.JobID, evs); err != nil {
		return err
	}
	if err := r.agentProposals(ctx, tx, run, evs); err != nil {
		return err
	}
	return r.conversations.AgentReported(ctx, tx, run, evs)
}

// agentProposals: the proposals a task's agent made wait for a workspace
// admin, as proposed by whoever started the task.
func (r *reactions) agentProposals(ctx context.Context, tx *db.Tx, run *runs.Run, evs []runs.NewEvent) error {
	if run.TaskID == nil || !slices.ContainsFunc(evs, func(e runs.NewEvent) bool { return e.Type == protocol.OutProposal }) {
		return nil
	}
	t, err := r.tasks.GetIn(ctx, tx, run.WorkspaceID, *run.TaskID)
	if err != nil {
		return err
	}
	return r.proposals.AgentReported(ctx, tx, run, t.CreatedBy, evs)
}

// ProposalMade: the workspace's owners and admins hear that a proposal
// waits for them.
func (r *reactions) ProposalMade(ctx context.Context, tx *db.Tx, p *proposals.Proposal) error {
	admins, err := r.access.WorkspaceAdmins(ctx, tx, p.WorkspaceID)
	if err != nil {
		return err
	}
	return r.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: p.WorkspaceID, Source: notifications.SourceProposal,
		Title: "Proposed: " + p.Title, Body: p.Summary, TargetKind: "proposal", TargetID: p.ID, Link: "/proposals/" + p.ID}, admins...)
}

// conversationCards puts a customer's message on the backlog for the
// conversation triggers (triggers.Backlog) and tells the trigger's owner
// that a card waits for a person to let an agent take it.
type conversationCards struct {
	backlog       *backlog.Service
	notifications *notifications.Service
}

func (c conversationCards) Enqueue(ctx context.Context, tx *db.Tx, workspaceID, projectID string, owner *string, m backlog.Message) (string, bool, error) {
	id, created, err := c.backlog.Enqueue(ctx, tx, workspaceID, projectID, m)
	if err != nil || !created || owner == nil {
		return id, created, err
	}
	return id, created, c.notifications.Notify(ctx, tx, notifications.Note{WorkspaceID: workspaceID, Source: notifications.SourceBacklog,
		Title: "A customer wrote: " + m.Text, Body: "The card waits in the backlog's inbox: move it to ready for an agent.", TargetKind: "backlog_item",
		TargetID: id, Link: "/projects/" + projectID + "/settings?tab=backlog&item=" + id}, *owner)
}

// agents lets agent nodes run tasks (workflows.Agents).
type agents struct{ tasks *tasks.Service }

func (a agents) StartAgent(ctx context.Context, tx *db.Tx, r workflows.AgentRequest) (string, error) {
	t, err := a.tasks.CreateTx(ctx, tx, r.WorkspaceID, r.CreatedBy, tasks.TaskCreate{ProjectID: r.ProjectID, Title: r.Title, Prompt: r.Prompt,
		AgentProfile: r.Config.AgentType})
	if err != nil {
		return "", err
	}
	return t.ID, nil
}

func (a agents) StopAgent(ctx context.Context, workspaceID, taskID string) error {
	t, err := a.tasks.Get(ctx, &actor.Workspace{ID: workspaceID}, taskID)
	if err != nil || tasks.Terminal(t.Status) {
		return err
	}
	_, err = a.tasks.Cancel(ctx, &actor.Workspace{ID: workspaceID}, taskID, nil)
	return err
}

// orgs resolves the organization of a runner endpoint for the runners
// service.
type orgs struct{ t *tenancy.Service }

func (o orgs) Resolve(ctx context.Context, u *actor.User, sel runners.Selector) (string, string, error) {
	org, err := o.t.Organization(ctx, u, tenancy.Selector{OrganizationID: sel.OrganizationID, WorkspaceID: sel.WorkspaceID})
	if err != nil {
		return "", "", err
	}
	return org.ID, org.Role, nil
}

// resourceNodes lets workflow nodes use resources through the resources
// service (which knows nothing of workflows).
type resourceNodes struct{ s *resources.Service }

func (r resourceNodes) Telegram(ctx context.Context, workspaceID, resourceID, chatID, text string) (any, error) {
	return r.s.Telegram(ctx, workspaceID, resourceID, chatID, text)
}

func (r resourceNodes) Discord(ctx context.Context, workspaceID, resourceID, channelID, content string) (any, error) {
	return r.s.Discord(ctx, workspaceID, resourceID, channelID, content)
}

func (r resourceNodes) Connect(ctx context.Context, workspaceID, resourceID string, c workflows.ConnectorCall) (any, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return r.s.Call(ctx, workspaceID, resourceID, resources.ConnectorRequest{Method: c.Method, Path: c.Path, Query: c.Query, Headers: c.Headers, Body: c.Body})
}

func (r resourceNodes) Classify(ctx context.Context, workspaceID, resourceID, model, prompt string, categories []string) (string, any, error) {
	c, err := r.s.Classify(ctx, workspaceID, resourceID, model, prompt, categories)
	if err != nil {
		return "", nil, err
	}
	return c.Label, c, nil
}

func (r resourceNodes) Statement(ctx context.Context, workspaceID, resourceID string, q workflows.DBStatement) (any, error) {
	return r.s.Statement(ctx, workspaceID, resourceID, resources.Statement{SQL: q.SQL, Params: q.Params, Write: q.Write, MaxRows: q.MaxRows, Timeout: q.Timeout})
}

func (r resourceNodes) Email(ctx context.Context, workspaceID, resourceID string, to []string, subject, body string) (any, error) {
	return r.s.Email(ctx, workspaceID, resourceID, to, subject, body)
}

func (r resourceNodes) AckMail(ctx context.Context, workspaceID, resourceID string, a workflows.MailAck) (any, error) {
	return r.s.AckMail(ctx, workspaceID, resourceID, resources.MailAck(a))
}

func (r resourceNodes) Materialize(ctx context.Context, q db.Queryer, workspaceID, resourceID string) (string, string, bool, error) {
	return r.s.Materialize(ctx, q, workspaceID, resourceID)
}
