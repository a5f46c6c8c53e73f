package app

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"

	"slipway/internal/approvals"
	"slipway/internal/auth"
	"slipway/internal/backlog"
	"slipway/internal/notifications"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/realtime"
	"slipway/internal/proposals"
	"slipway/internal/runs"
	"slipway/internal/tasks"
	"slipway/internal/tenancy"
)

// streams registers the hub's replayable streams: a task's log and a
// run's events.
func streams(h *realtime.Hub, rs *runs.Service, ts *tasks.Service) {
	h.Stream(runs.StreamTask, func(ctx context.Context, workspaceID, id string, after int64, limit int) ([]realtime.Item, error) {
		evs, err := ts.Events(ctx, &actor.Workspace{ID: workspaceID}, id, clampSeq(after), limit)
		return items(runs.StreamTask+":"+id, evs, err)
	})
	h.Stream(runs.StreamRun, func(ctx context.Context, workspaceID, id string, after int64, limit int) ([]realtime.Item, error) {
		evs, err := rs.Events(ctx, &actor.Workspace{ID: workspaceID}, id, clampSeq(after), limit)
		return items(runs.StreamRun+":"+id, evs, err)
	})
	h.Topic(tasks.TopicTasks)
	h.Topic(runs.TopicRuns)
	h.Topic(approvals.TopicApprovals)
	h.Topic(backlog.TopicBacklog)
	h.Topic(proposals.Topic)
	h.Personal(notifications.Topic)
}

func clampSeq(n int64) int32 { return int32(min(n, math.MaxInt32)) }

func items(stream string, evs []runs.TaskEvent, err error) ([]realtime.Item, error) {
	if err != nil {
		return nil, err
	}
	out := make([]realtime.Item, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		out[i] = realtime.Item{Stream: stream, Seq: int64(e.SequenceNum), Data: b}
	}
	return out, nil
}

// liveAccess binds a socket or stream to its user: workspaces resolve as
// for X-Workspace-Id, and the session is checked again as it lasts.
func liveAccess(authSvc *auth.Service, ten *tenancy.Service, publicURL string) realtime.Access {
	a := realtime.Access{Watcher: func(r *http.Request, u *actor.User) realtime.Watcher {
		token := ""
		if c, err := r.Cookie(auth.SessionCookie); err == nil {
			token = c.Value
		}
		return realtime.Watcher{
			Account: u.ID,
			Resolve: func(ctx context.Context, workspaceID string) (string, error) {
				w, err := ten.ResolveWorkspace(ctx, u, workspaceID)
				if err != nil {
					return "", err
				}
				return w.ID, nil
			},
			Recheck: func(ctx context.Context) error {
				tok, err := auth.ParseSessionToken(token)
				if err != nil {
					// No session cookie to check: no session stands.
					return apperr.Wrap(apperr.CodeUnauthorized, err, "no session")
				}
				now, err := authSvc.Authenticate(ctx, tok)
				if err == nil && (now.ID != u.ID || !now.Approved) {
					err = apperr.New(apperr.CodeUnauthorized, "the session changed")
				}
				return err
			},
		}
	}}
	if u, err := url.Parse(publicURL); err == nil && u.Host != "" {
		a.Origins = append(a.Origins, u.Host)
	}
	return a
}
