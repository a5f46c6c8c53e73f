// Package activity is the workspace's activity feed: who started which
// task, which workflow ran and how it went, who decided which tool call. It
// is a read model over the tables of tasks, workflow runs and approvals,
// newest first, each arm read through an index that starts with the
// workspace; it stores nothing of its own.
package activity

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Kinds of items.
const (
	KindTask        = "task"         // a task was started (its status is as it stands now)
	KindWorkflowRun = "workflow_run" // a workflow ran (its status is as it stands now)
	KindApproval    = "approval"     // a tool call was approved, rejected or timed out
)

// Actor is who did it: nil for the system (a trigger, a workflow, a timeout).
type Actor struct {
	ID   string `json:"id" format:"uuid"`
	Name string `json:"name"`
}

// FeedItem is one thing that happened in the workspace.
type FeedItem struct {
	ID     string    `json:"id" format:"uuid" doc:"The task's, the workflow run's or the approval's id"`
	Kind   string    `json:"kind" enum:"task,workflow_run,approval"`
	At     time.Time `json:"at" doc:"When it was started (a task, a run) or decided (an approval)"`
	Actor  *Actor    `json:"actor,omitempty" required:"false" doc:"Who did it; absent for the system (a trigger, a workflow, a timeout)"`
	Title  string    `json:"title" doc:"The task's title, the workflow's name, or the tool's name"`
	Status string    `json:"status" doc:"A task's or run's status now; an approval's decision (approved, rejected, timed_out, superseded)"`
	// Subject names what an approval was about: its task.
	TaskID    string `json:"task_id,omitempty" format:"uuid" doc:"An approval's task"`
	TaskTitle string `json:"task_title,omitempty" doc:"An approval's task's title"`
	Project   string `json:"project" doc:"The project's name"`
	Via       string `json:"via,omitempty" doc:"A workflow run a trigger started: webhook or schedule (actor is then the trigger's owner)"`
}

// FeedPage is a page of the feed, newest first.
type FeedPage struct {
	Items []FeedItem `json:"items"`
	Next  string     `json:"next" doc:"Pass as before for the next page; empty at the end"`
}

// Limits of a page.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

// Service reads the feed.
type Service struct {
	db    *db.DB
	clock clock.Clock
}

// NewService builds the feed over the database.
func NewService(d *db.DB, clk clock.Clock) *Service { return &Service{db: d, clock: clk} }

// Feed reads a page of the workspace's activity older than before (a Next
// of an earlier page; "" for the newest).
func (s *Service) Feed(ctx context.Context, ws *actor.Workspace, before string, limit int) (*FeedPage, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	at, id := s.clock.Now().Add(time.Hour), "ffffffff-ffff-ffff-ffff-ffffffffffff"
	if before != "" {
		var err error
		if at, id, err = decodeCursor(before); err != nil {
			return nil, apperr.BadRequest("before: not a cursor this feed gave")
		}
	}
	items, err := feed(ctx, s.db.R, s.db.Dialect, ws.ID, at, id, limit+1)
	if err != nil {
		return nil, err
	}
	p := &FeedPage{Items: items}
	if len(items) > limit {
		p.Items = items[:limit]
		last := p.Items[limit-1]
		p.Next = encodeCursor(last.At, last.ID)
	}
	return p, nil
}

// A cursor is the last item's time and id: the next page is what is older.
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + " " + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", err
	}
	micros, id, ok := strings.Cut(string(b), " ")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || !ids.Valid(id) {
		return time.Time{}, "", fmt.Errorf("bad cursor")
	}
	return time.UnixMicro(n).UTC(), id, nil
}
