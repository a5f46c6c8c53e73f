package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
)

// Access is what the transports need from the rest of the server.
type Access struct {
	// Watcher binds a signed-in user's request to workspace resolution and
	// a session recheck.
	Watcher func(r *http.Request, u *actor.User) Watcher
	// Origins are the hosts ("host[:port]") browsers may open a socket from
	// besides the server's own (PUBLIC_URL's host).
	Origins []string
}

// Socket limits.
const (
	readLimit    = 4096
	writeTimeout = 10 * time.Second
	pingEvery    = 25 * time.Second
)

type socketInput struct {
	Origin string `header:"Origin" doc:"Checked: the server's own host or PUBLIC_URL's"`
}

type streamInput struct {
	ID          string `path:"id"`
	LastEventID string `header:"Last-Event-ID" doc:"Resume after this sequence number (sent back by EventSource on reconnect)"`
	After       int64  `query:"after_sequence" minimum:"0" maximum:"2147483647" doc:"Start after this sequence number (Last-Event-ID wins)"`
}

// Register mounts the browser socket and the event streams of tasks and
// runs. scoped resolves the active workspace of the streams.
func Register(api huma.API, h *Hub, a Access, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Realtime"}, Security: httpx.SessionSecurity}
	socket := ops.Op("get_api_realtime", http.MethodGet, "/api/realtime", "The realtime hub: a WebSocket for the console")
	socket.Description = "Upgrade to a WebSocket (same-origin browsers; the session cookie signs in). Send " +
		"`{\"op\":\"subscribe\",\"sub\":\"<your name>\",\"stream\":\"task\"|\"run\",\"id\":\"<id>\",\"after\":<seq>,\"workspace_id\":\"<optional>\"}` " +
		"for a task's or run's event log (every event once, in order, from after `after`: `{\"type\":\"event\",\"sub\",\"seq\",\"event\"}`), or " +
		"`stream` `tasks`, `runs`, `approvals`, `backlog` or `proposals` for change hints on a workspace's boards and counts, or `notifications` " +
		"for the caller's own (whatever the workspace) (`{\"type\":\"changed\",\"sub\",\"topic\",\"id\"}`; " +
		"`{\"type\":\"reset\"}` means hints may have been lost: refetch). `{\"op\":\"unsubscribe\",\"sub\"}` ends one. A subscription to another " +
		"workspace's task or run fails exactly like an unknown id (`{\"type\":\"error\",\"sub\",\"code\":\"not_found\"}`). When the server shuts down " +
		"it sends `{\"type\":\"reconnect\"}` and closes with 1012: connect again (to another replica) and resume with `after`."
	socket.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests}
	huma.Register(api, socket, func(ctx context.Context, in *socketInput) (*huma.StreamResponse, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		return &huma.StreamResponse{Body: func(hctx huma.Context) {
			r, w := humago.Unwrap(hctx)
			if err := a.checkUpgrade(r); err != nil {
				httpx.WriteError(w, r, err)
				return
			}
			if h.closingNow() {
				w.Header().Set("Retry-After", "1")
				httpx.WriteError(w, r, httpx.Unavailable("the server is shutting down: connect again"))
				return
			}
			release, err := h.admit(u.ID)
			if err != nil {
				w.Header().Set("Retry-After", "5")
				httpx.WriteError(w, r, err)
				return
			}
			defer release()
			h.serveSocket(w, r, a.Watcher(r, u))
		}}, nil
	})

	streamOps := httpx.Operations{Tags: []string{"Realtime"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	for _, kind := range []string{"task", "run"} {
		op := streamOps.Op("get_api_"+kind+"s_id_events_stream", http.MethodGet, "/api/"+kind+"s/{id}/events/stream",
			"The "+kind+"'s events as Server-Sent Events, live")
		op.Description = "`text/event-stream`: every event once, in order (`id:` its sequence number, `event: event`, `data:` the event " +
			"as `/api/" + kind + "s/{id}/events` returns it), then new ones as they are written. Reconnecting with `Last-Event-ID` (EventSource " +
			"does) resumes without a gap or a duplicate. A comment every 25 s keeps proxies from closing it; `event: reconnect` says the " +
			"server is shutting down. For scripts: `curl -N`."
		op.Errors = []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests}
		huma.Register(api, op, func(ctx context.Context, in *streamInput) (*huma.StreamResponse, error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			w, _ := actor.WorkspaceFrom(ctx)
			after := in.After
			if in.LastEventID != "" {
				n, err := strconv.ParseInt(strings.TrimSpace(in.LastEventID), 10, 64)
				if err != nil || n < 0 {
					return nil, apperr.BadRequest("Last-Event-ID must be a sequence number")
				}
				after = n
			}
			// Not found before any byte of the stream is written.
			if _, err := h.sources[kind](ctx, w.ID, in.ID, after, 1); err != nil {
				return nil, err
			}
			return &huma.StreamResponse{Body: func(hctx huma.Context) {
				r, rw := humago.Unwrap(hctx)
				release, err := h.admit(u.ID)
				if err != nil {
					rw.Header().Set("Retry-After", "5")
					httpx.WriteError(rw, r, err)
					return
				}
				defer release()
				h.serveStream(rw, r, a.Watcher(r, u), Command{Op: "subscribe", Sub: kind, Stream: kind, ID: in.ID, WorkspaceID: w.ID, After: after})
			}}, nil
		})
	}
}

// checkUpgrade refuses what is not a WebSocket handshake from an allowed
// origin (a cross-site page must not ride the user's cookie).
func (a Access) checkUpgrade(r *http.Request) error {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return apperr.BadRequest("this endpoint speaks WebSocket: send an Upgrade: websocket handshake")
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil // not a browser: no ambient cookie to misuse
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return apperr.New(apperr.CodeForbidden, "the Origin of this socket is not allowed")
	}
	if strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	for _, o := range a.Origins {
		if strings.EqualFold(u.Host, o) {
			return nil
		}
	}
	return apperr.New(apperr.CodeForbidden, "the Origin of this socket is not allowed")
}

func clearDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

func (h *Hub) serveSocket(w http.ResponseWriter, r *http.Request, who Watcher) {
	clearDeadlines(w)
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // the origin is checked above
	if err != nil {
		return // Accept answered the client
	}
	ws.SetReadLimit(readLimit)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	send := func(ctx context.Context, m Message) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		return ws.Write(wctx, websocket.MessageText, b)
	}
	c, err := h.Open(who, send)
	if err != nil {
		_ = send(ctx, Message{Type: "reconnect"})
		ws.Close(websocket.StatusServiceRestart, "shutting down")
		return
	}
	cmds := make(chan Command)
	go func() {
		defer cancel()
		defer close(cmds)
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var cmd Command
			if err := json.Unmarshal(b, &cmd); err != nil {
				cmd = Command{Op: malformed}
			}
			select {
			case cmds <- cmd:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { // keepalive: a dead peer is noticed within a minute
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				pctx, pcancel := context.WithTimeout(ctx, writeTimeout)
				err := ws.Ping(pctx)
				pcancel()
				if err != nil {
					cancel()
					return
				}
			}
		}
	}()
	err = c.Serve(ctx, cmds)
	switch {
	case errors.Is(err, ErrClosing):
		ws.Close(websocket.StatusServiceRestart, "the server is shutting down: reconnect")
	case errors.Is(err, ErrSession):
		ws.Close(websocket.StatusPolicyViolation, "the session ended")
	default:
		ws.Close(websocket.StatusNormalClosure, "")
	}
}

func (h *Hub) serveStream(w http.ResponseWriter, r *http.Request, who Watcher, cmd Command) {
	clearDeadlines(w)
	rc := http.NewResponseController(w)
	// write sends at once, within the socket's write timeout: a client that
	// stops reading cannot hold the stream (nor shutdown) for ever. The
	// deadline is lifted after each write: on HTTP/2 one that passes while
	// the stream idles resets it.
	write := func(format string, args ...any) error {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		defer rc.SetWriteDeadline(time.Time{})
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		return rc.Flush()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = write("retry: 2000\n\n")
	ctx := r.Context()
	send := func(_ context.Context, m Message) error {
		switch m.Type {
		case "event":
			return write("id: %d\nevent: event\ndata: %s\n\n", m.Seq, m.Event)
		case "subscribed", "unsubscribed", "changed":
			return nil
		default: // error, reconnect
			b, _ := json.Marshal(m)
			return write("event: %s\ndata: %s\n\n", m.Type, b)
		}
	}
	c, err := h.Open(who, send)
	if err != nil {
		_ = send(ctx, Message{Type: "reconnect"})
		return
	}
	cmds := make(chan Command, 1)
	cmds <- cmd
	// Keepalive comments are written by the connection's loop, between events.
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				c.Do(func() error { return write(": keepalive\n\n") })
			}
		}
	}()
	_ = c.Serve(ctx, cmds)
}
