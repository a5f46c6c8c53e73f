// Package conversations holds the messages between humans and the agents
// working on their tasks: a task's conversation is its human messages
// (interventions, delivered to the running agent through its inbox) and the
// agent's own messages (its "message" lines). A human message can be
// cancelled until the agent's worker has taken it.
package conversations

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/inbox"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/runs"
	"slipway/internal/tasks"
)

// Roles and statuses.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"

	StatusQueued    = "queued"    // waiting for the agent's worker to take it
	StatusDelivered = "delivered" // the agent's model has read it (an agent's own messages are delivered)
	StatusCancelled = "cancelled"
)

// MaxText bounds a human message.
const MaxText = 20000

// AgentMessage is one message of a task's conversation.
type AgentMessage struct {
	ID             string    `json:"id" format:"uuid"`
	ConversationID string    `json:"conversation_id" format:"uuid" doc:"The task the conversation is about"`
	TaskID         string    `json:"task_id" format:"uuid"`
	WorkspaceID    string    `json:"workspace_id" format:"uuid"`
	Role           string    `json:"role" enum:"user,assistant"`
	Text           string    `json:"text"`
	Status         string    `json:"status" enum:"queued,delivered,cancelled"`
	AuthorID       *string   `json:"author_id" nullable:"true" format:"uuid" doc:"The person who wrote it; null for the agent"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`

	jobID *string
}

// Service holds conversations.
type Service struct {
	db    *db.DB
	clock clock.Clock
	tasks *tasks.Service
	inbox *inbox.Inbox
	react Reactions
}

// Reactions are what other domains do when a message is written, inside
// its transaction: the people it names (@someone) are told.
type Reactions interface {
	MessageWritten(ctx context.Context, tx *db.Tx, m *AgentMessage) error
}

// NewService returns the service. It reacts to three changes elsewhere
// (the composition root wires them): the agent's model reading a message
// delivers it (MessagesSeen), an agent's reports carry its messages
// (AgentReported), and a task's end withdraws what its model never read
// (TaskEnded).
func NewService(d *db.DB, clk clock.Clock, t *tasks.Service, in *inbox.Inbox, re Reactions) *Service {
	return &Service{db: d, clock: clk, tasks: t, inbox: in, react: re}
}

func (s *Service) written(ctx context.Context, tx *db.Tx, m *AgentMessage) error {
	if s.react == nil {
		return nil
	}
	return s.react.MessageWritten(ctx, tx, m)
}

// TaskEnded withdraws the messages of a task that ended before its agent
// took them (tasks.Reactions): they will never be read.
func (s *Service) TaskEnded(ctx context.Context, tx *db.Tx, t *tasks.Task) error {
	return cancelQueued(ctx, tx, t.WorkspaceID, t.ID, s.clock.Now())
}

// cleanText checks a human message: not blank, bounded, no control
// characters other than line breaks and tabs.
func cleanText(raw string) (string, error) {
	t := strings.TrimSpace(raw)
	if t == "" {
		return "", apperr.BadRequest("text must not be empty")
	}
	if len(t) > MaxText {
		return "", apperr.BadRequest("text must be at most %d bytes", MaxText)
	}
	for _, line := range strings.Split(strings.ReplaceAll(t, "\t", " "), "\n") {
		if err := text.CheckName("text", strings.TrimSuffix(line, "\r")); err != nil {
			return "", err
		}
	}
	return t, nil
}

// Send queues a human message for the agent working on a task of the
// active workspace (an intervention): it is recorded on the task and
// reaches the agent at once, or when a queued task starts.
func (s *Service) Send(ctx context.Context, ws *actor.Workspace, u *actor.User, taskID, raw string) (*AgentMessage, error) {
	body, err := cleanText(raw)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	m := &AgentMessage{ID: ids.New(), TaskID: taskID, ConversationID: taskID, WorkspaceID: ws.ID, Role: RoleUser, Text: body,
		Status: StatusQueued, AuthorID: &u.ID, CreatedAt: now, UpdatedAt: now}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		_, jobID, err := s.tasks.Steer(ctx, tx, ws, taskID, protocol.Message{Type: protocol.InMessage, Role: protocol.RoleUser, Text: body}, m.ID,
			s.tasks.Value(tasks.EventIntervention, map[string]any{"message_id": m.ID, "text": body, "by": u.ID}))
		if err != nil {
			return err
		}
		m.jobID = &jobID
		if err := insert(ctx, tx, m); err != nil {
			return err
		}
		return s.written(ctx, tx, m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Cancel withdraws a human message the agent has not been handed yet.
func (s *Service) Cancel(ctx context.Context, ws *actor.Workspace, id string) (*AgentMessage, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("message")
	}
	var out *AgentMessage
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		m, err := get(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if m.Status != StatusQueued || m.jobID == nil {
			return apperr.BadRequest("only a queued message can be cancelled; this one is %s", m.Status)
		}
		ok, err := s.inbox.Withdraw(ctx, tx, *m.jobID, m.ID)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.BadRequest("the agent has already been handed this message")
		}
		m.Status, m.UpdatedAt = StatusCancelled, s.clock.Now()
		if err := setStatus(ctx, tx, ws.ID, m.ID, m.Status, m.UpdatedAt); err != nil {
			return err
		}
		out = m
		return nil
	})
	return out, err
}

// MessagesSeen marks messages the agent's model has read delivered
// (inbox.Reactions).
func (s *Service) MessagesSeen(ctx context.Context, tx *db.Tx, messageIDs []string) error {
	now := s.clock.Now()
	for _, id := range messageIDs {
		if err := delivered(ctx, tx, id, now); err != nil {
			return err
		}
	}
	return nil
}

// AgentReported records the agent's own messages (its assistant text;
// runs.Reactions).
func (s *Service) AgentReported(ctx context.Context, tx *db.Tx, r *runs.Run, evs []runs.NewEvent) error {
	if r.TaskID == nil {
		return nil
	}
	for _, e := range evs {
		if e.Type != protocol.OutMessage {
			continue
		}
		var pm protocol.Message
		if json.Unmarshal(e.Payload, &pm) != nil || pm.Role != protocol.RoleAssistant || strings.TrimSpace(pm.Text) == "" {
			continue
		}
		at := e.At
		if at.IsZero() {
			at = s.clock.Now()
		}
		m := &AgentMessage{ID: ids.New(), TaskID: *r.TaskID, WorkspaceID: r.WorkspaceID, Role: RoleAssistant,
			Text: text.Clip(pm.Text, 4*MaxText), Status: StatusDelivered, CreatedAt: at.UTC()}
		if err := insert(ctx, tx, m); err != nil {
			return err
		}
		if err := s.written(ctx, tx, m); err != nil {
			return err
		}
	}
	return nil
}

// Get reads a message of the active workspace.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*AgentMessage, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("message")
	}
	return get(ctx, s.db.R, ws.ID, id)
}

// Page bounds.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

func clamp(limit int) int {
	if limit <= 0 {
		return DefaultLimit
	}
	return min(limit, MaxLimit)
}

// Conversation lists a task's messages in order (oldest first).
func (s *Service) Conversation(ctx context.Context, ws *actor.Workspace, taskID string, limit int) ([]AgentMessage, error) {
	if _, err := s.tasks.Get(ctx, ws, taskID); err != nil {
		return nil, err
	}
	return ofTask(ctx, s.db.R, ws.ID, taskID, clamp(limit))
}

// List lists the workspace's messages, newest first, optionally of one
// task and one role.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, taskID, role string, limit int) ([]AgentMessage, error) {
	w := db.NewWhere("workspace_id = ?", ws.ID)
	if taskID != "" {
		if !ids.Valid(taskID) {
			return []AgentMessage{}, nil
		}
		w = w.And("task_id = ?", taskID)
	}
	if role != "" {
		w = w.And("role = ?", role)
	}
	return listMessages(ctx, s.db.R, w, clamp(limit))
}
