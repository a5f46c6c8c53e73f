package realtime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"slipway/internal/agents/protocol"
	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/realtime"
	"slipway/internal/runs"
)

// socket is a browser-like WebSocket client of the hub.
type socket struct {
	t      *testing.T
	ws     *websocket.Conn
	in     chan realtime.Message
	closed error // why reading ended, once in is closed
}

func dial(t *testing.T, c *apitest.Client, header ...string) (*socket, *http.Response, error) {
	t.Helper()
	h := http.Header{"Cookie": {c.CookieHeader()}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	ws, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(c.URL(), "http")+"/api/realtime", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, resp, err
	}
	s := &socket{t: t, ws: ws, in: make(chan realtime.Message, 10000)}
	go func() {
		defer close(s.in)
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				s.closed = err
				return
			}
			var m realtime.Message
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("a message that is not JSON: %s", b)
				return
			}
			s.in <- m
		}
	}()
	t.Cleanup(func() { ws.CloseNow() })
	return s, resp, nil
}

func mustDial(t *testing.T, c *apitest.Client) *socket {
	t.Helper()
	s, resp, err := dial(t, c)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	return s
}

func (s *socket) send(cmd any) {
	s.t.Helper()
	b, _ := json.Marshal(cmd)
	if err := s.ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		s.t.Fatal(err)
	}
}

func (s *socket) next() realtime.Message {
	s.t.Helper()
	select {
	case m, ok := <-s.in:
		if !ok {
			s.t.Fatal("the socket closed")
		}
		return m
	case <-time.After(20 * time.Second):
		s.t.Fatal("no message within 20 s")
	}
	return realtime.Message{}
}

// quiet asserts nothing arrives for a while.
func (s *socket) quiet(d time.Duration) {
	s.t.Helper()
	select {
	case m, ok := <-s.in:
		if ok {
			s.t.Fatalf("unexpected %+v", m)
		}
	case <-time.After(d):
	}
}

// events collects a subscription's events until its sequence reaches last;
// it fails on a gap, a duplicate or a message of another subscription.
func (s *socket) events(sub string, from, last int64) []runs.TaskEvent {
	s.t.Helper()
	var out []runs.TaskEvent
	want := from
	for want <= last {
		m := s.next()
		if m.Type != "event" || m.Sub != sub {
			s.t.Fatalf("waiting for %s event %d: %+v", sub, want, m)
		}
		if m.Seq != want {
			s.t.Fatalf("%s: event %d arrived, want %d (a gap or a duplicate)", sub, m.Seq, want)
		}
		var e runs.TaskEvent
		if err := json.Unmarshal(m.Event, &e); err != nil || int64(e.SequenceNum) != m.Seq {
			s.t.Fatalf("event %s: %v", m.Event, err)
		}
		out = append(out, e)
		want++
	}
	return out
}

// feed writes n events to a task's log through the runs service, from
// writers goroutines at once (concurrent transactions, as workers do). The
// payload's keys are out of order and nested, so a live event that is not
// what the database stored (PostgreSQL's jsonb reorders keys) differs from
// the API's.
func feed(t *testing.T, app *apitest.App, ws, task string, n, writers int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				err := app.DB.Tx(context.Background(), func(tx *db.Tx) error {
					return app.Server.Services.Runs.Append(context.Background(), tx, ws, task, "",
						runs.NewEvent{Type: "output", Payload: json.RawMessage(fmt.Sprintf(`{"zeta":1, "line":%d, "a":2, "m":{"y":1,"b":2}}`, i))})
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

type world struct {
	f              *fixture.API
	project, task  string
	ws, outsiderWS string
}

func newWorld(t *testing.T, e db.Engine, env ...string) *world {
	f := fixture.NewAPI(t, e, env...)
	p := f.Project(t, f.Owner, "live")
	task := f.Task(t, f.Owner, p, "true", nil)
	return &world{f: f, project: p, task: task.ID, ws: task.WorkspaceID, outsiderWS: f.Outsider.DefaultWorkspace()}
}

func (w *world) logLen(t *testing.T) int64 {
	return int64(w.f.EventCount(t, w.task))
}

// A task's log over the socket: the backlog, then every new event once and
// in order while concurrent writers commit out of order; a run's events;
// a reconnect resumes where it left off.
func TestSocketStreams(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		w := newWorld(t, e)
		owner := w.f.Owner
		feed(t, w.f.App, w.ws, w.task, 5, 1)
		have := w.logLen(t)

		s := mustDial(t, owner)
		s.send(realtime.Command{Op: "subscribe", Sub: "t", Stream: "task", ID: w.task})
		if m := s.next(); m.Type != "subscribed" || m.Sub != "t" || m.ID != w.task {
			t.Fatalf("subscribe: %+v", m)
		}
		backlog := s.events("t", 1, have)
		stored := fixture.Events(t, owner, w.task, "")
		for i := range backlog {
			a, _ := json.Marshal(backlog[i])
			b, _ := json.Marshal(stored[i])
			if string(a) != string(b) {
				t.Fatalf("event %d over the socket differs from the API's:\n%s\n%s", i+1, a, b)
			}
		}

		// Live: 300 events from four writers at once.
		go feed(t, w.f.App, w.ws, w.task, 300, 4)
		live := s.events("t", have+1, have+300)
		stored = fixture.Events(t, owner, w.task, "?after_sequence="+strconv.FormatInt(have, 10)+"&limit=1000")
		for i := range live {
			a, _ := json.Marshal(live[i])
			b, _ := json.Marshal(stored[i])
			if string(a) != string(b) {
				t.Fatalf("live event %d differs from the stored one:\n%s\n%s", live[i].SequenceNum, a, b)
			}
		}
		s.quiet(200 * time.Millisecond)

		// A run's own events, from after its first.
		run := w.f.Run(t, w.ws, w.project, w.task, "", runs.Running, 1, time.Now().UTC())
		if _, err := w.f.App.Server.Services.Runs.AppendBatch(context.Background(), w.ws, run, 1, []runs.NewEvent{
			{Type: "output", Payload: json.RawMessage(`{"line":"a"}`)}, {Type: "output", Payload: json.RawMessage(`{"line":"b"}`)}}); err != nil {
			t.Fatal(err)
		}
		s.events("t", have+301, have+302) // the run's events are the log's too
		s.send(realtime.Command{Op: "subscribe", Sub: "r", Stream: "run", ID: run, After: 1})
		if m := s.next(); m.Type != "subscribed" {
			t.Fatalf("%+v", m)
		}
		if evs := s.events("r", 2, 2); !strings.Contains(string(evs[0].Payload), `"b"`) {
			t.Fatalf("run event 2: %s", evs[0].Payload)
		}
		s.send(realtime.Command{Op: "unsubscribe", Sub: "t"})
		if m := s.next(); m.Type != "unsubscribed" || m.Sub != "t" {
			t.Fatalf("%+v", m)
		}
		feed(t, w.f.App, w.ws, w.task, 3, 1)
		s.quiet(200 * time.Millisecond)

		// Reconnect: resume after the last event seen, nothing repeated.
		s.ws.Close(websocket.StatusNormalClosure, "")
		seen := have + 302
		feed(t, w.f.App, w.ws, w.task, 7, 1) // written while away
		s2 := mustDial(t, owner)
		s2.send(realtime.Command{Op: "subscribe", Sub: "again", Stream: "task", ID: w.task, After: seen})
		s2.next()
		s2.events("again", seen+1, seen+10)
		s2.quiet(200 * time.Millisecond)
	})
}

// Nothing of another workspace: its task is an unknown id, its workspace
// refused like an unknown one, and its topics stay silent.
func TestSocketTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		w := newWorld(t, e)
		owner, outsider := w.f.Owner, w.f.Outsider
		o := mustDial(t, outsider)
		answers := func(cmd realtime.Command) realtime.Message {
			o.send(cmd)
			return o.next()
		}
		foreign := answers(realtime.Command{Op: "subscribe", Sub: "a", Stream: "task", ID: w.task})
		unknown := answers(realtime.Command{Op: "subscribe", Sub: "b", Stream: "task", ID: ids.New()})
		if foreign.Type != "error" || foreign.Code != "not_found" || foreign.Error != unknown.Error || foreign.Code != unknown.Code {
			t.Fatalf("a foreign task %+v, an unknown one %+v", foreign, unknown)
		}
		run := w.f.Run(t, w.ws, w.project, w.task, "", runs.Running, 1, time.Now().UTC())
		foreignRun := answers(realtime.Command{Op: "subscribe", Sub: "ar", Stream: "run", ID: run})
		unknownRun := answers(realtime.Command{Op: "subscribe", Sub: "br", Stream: "run", ID: ids.New()})
		if foreignRun.Type != "error" || foreignRun.Code != "not_found" || foreignRun.Error != unknownRun.Error {
			t.Fatalf("a foreign run %+v, an unknown one %+v", foreignRun, unknownRun)
		}
		fws := answers(realtime.Command{Op: "subscribe", Sub: "c", Stream: "tasks", WorkspaceID: w.ws})
		uws := answers(realtime.Command{Op: "subscribe", Sub: "d", Stream: "tasks", WorkspaceID: ids.New()})
		if fws.Type != "error" || fws.Code != "forbidden" || fws.Error != uws.Error {
			t.Fatalf("a foreign workspace %+v, an unknown one %+v", fws, uws)
		}
		for _, c := range []realtime.Command{
			{Op: "subscribe", Sub: "e", Stream: "nonsense"},
			{Op: "subscribe", Sub: "", Stream: "tasks"},
			{Op: "subscribe", Sub: "f\x00", Stream: "tasks"},
			{Op: "subscribe", Sub: "g", Stream: "task", ID: w.task, After: -1},
			{Op: "jump", Sub: "h"},
		} {
			if m := answers(c); m.Type != "error" || m.Code != "bad_request" {
				t.Fatalf("%+v: %+v", c, m)
			}
		}
		if m := answers(realtime.Command{Op: "subscribe", Sub: "mine", Stream: "tasks"}); m.Type != "subscribed" {
			t.Fatalf("%+v", m)
		}
		for _, topic := range []string{"runs", "approvals"} {
			if m := answers(realtime.Command{Op: "subscribe", Sub: "mine-" + topic, Stream: topic}); m.Type != "subscribed" {
				t.Fatalf("%+v", m)
			}
		}

		// The owner hears their workspace's changes; the outsider nothing.
		s := mustDial(t, owner)
		for _, topic := range []string{"tasks", "runs", "approvals"} {
			s.send(realtime.Command{Op: "subscribe", Sub: topic, Stream: topic})
			if m := s.next(); m.Type != "subscribed" || m.Topic != topic {
				t.Fatalf("%+v", m)
			}
		}
		// Through the services: the run's agent asks for an approval, then
		// the cancel ends the task and its run; a hint on each topic.
		ctx := context.Background()
		var approval string
		if err := w.f.App.DB.Tx(ctx, func(tx *db.Tx) error {
			a, _, err := w.f.App.Server.Services.Approvals.Request(ctx, tx, w.ws, w.task, run, "",
				protocol.ApprovalRequest{Type: protocol.OutApprovalRequest, ID: "call_1", Tool: "bash"})
			if err != nil {
				return err
			}
			approval = a.ID
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		fixture.Want(t, owner.Do("POST", "/api/tasks/"+w.task+"/cancel", nil), http.StatusOK)
		for _, want := range []struct{ topic, id string }{{"approvals", approval}, {"tasks", w.task}, {"runs", run}} {
			if m := s.next(); m.Type != "changed" || m.Sub != want.topic || m.ID != want.id {
				t.Fatalf("owner: %+v, want a hint on %s for %s", m, want.topic, want.id)
			}
		}
		feed(t, w.f.App, w.ws, w.task, 20, 2)
		o.quiet(500 * time.Millisecond)

		// Raw text that is not a command.
		if err := o.ws.Write(context.Background(), websocket.MessageText, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if m := o.next(); m.Type != "error" || m.Code != "bad_request" {
			t.Fatalf("%+v", m)
		}
	})
}

// The handshake: signed in, a WebSocket, from the server's own origin.
func TestSocketHandshake(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		w := newWorld(t, e, "PUBLIC_URL", "https://slipway.example")
		owner := w.f.Owner
		if _, resp, err := dial(t, w.f.App.Anonymous()); err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("anonymous: %v %v", err, resp)
		}
		if _, resp, err := dial(t, owner, "Origin", "https://evil.example"); err == nil || resp == nil || resp.StatusCode != 403 {
			t.Fatalf("a foreign origin: %v %v", err, resp)
		}
		if r := owner.Do("GET", "/api/realtime", nil); r.Status != 400 || r.Map(t)["code"] != "bad_request" {
			t.Fatalf("a plain GET: %d %s", r.Status, r.Body)
		}
		for _, origin := range []string{"https://slipway.example", w.f.App.URL} {
			s, resp, err := dial(t, owner, "Origin", origin)
			if err != nil {
				t.Fatalf("origin %s: %v %v", origin, err, resp)
			}
			s.ws.Close(websocket.StatusNormalClosure, "")
		}

		// Shutting down: told to reconnect, closed with 1012.
		s := mustDial(t, owner)
		s.send(realtime.Command{Op: "subscribe", Sub: "t", Stream: "task", ID: w.task})
		s.next()
		s.events("t", 1, w.logLen(t))
		w.f.App.Server.Services.Realtime.Shutdown()
		if m := s.next(); m.Type != "reconnect" {
			t.Fatalf("%+v", m)
		}
		if m, ok := <-s.in; ok {
			t.Fatalf("after reconnect: %+v", m)
		}
		if websocket.CloseStatus(s.closed) != websocket.StatusServiceRestart {
			t.Fatalf("closed with %v", s.closed)
		}
		if _, resp, err := dial(t, owner); err == nil || resp == nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a socket while shutting down: %v %v", err, resp)
		}
	})
}

// sse reads a task's event stream.
type sse struct {
	resp *http.Response
	rd   *bufio.Reader
}

func openSSE(t *testing.T, c *apitest.Client, path string, header ...string) *sse {
	t.Helper()
	req, _ := http.NewRequest("GET", c.URL()+path, nil)
	req.Header.Set("Cookie", c.CookieHeader())
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &sse{resp: resp, rd: bufio.NewReader(resp.Body)}
}

// next reads one SSE message: its id, event and data.
func (s *sse) next(t *testing.T) (id, event, data string) {
	t.Helper()
	for {
		line, err := s.rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && (event != "" || data != ""):
			return
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
}

// Server-Sent Events: in order, live, and resumed with Last-Event-ID.
func TestEventStream(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		w := newWorld(t, e)
		owner := w.f.Owner
		feed(t, w.f.App, w.ws, w.task, 3, 1)
		have := w.logLen(t)
		path := "/api/tasks/" + w.task + "/events/stream"
		s := openSSE(t, owner, path)
		if s.resp.StatusCode != 200 || s.resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%d %s", s.resp.StatusCode, s.resp.Header.Get("Content-Type"))
		}
		go feed(t, w.f.App, w.ws, w.task, 50, 3)
		for want := int64(1); want <= have+50; want++ {
			id, ev, data := s.next(t)
			var e runs.TaskEvent
			if ev != "event" || id != strconv.FormatInt(want, 10) || json.Unmarshal([]byte(data), &e) != nil || int64(e.SequenceNum) != want {
				t.Fatalf("want event %d: id %s event %s data %s", want, id, ev, data)
			}
		}
		s.resp.Body.Close()
		feed(t, w.f.App, w.ws, w.task, 4, 1)
		r := openSSE(t, owner, path, "Last-Event-ID", strconv.FormatInt(have+50, 10))
		for want := have + 51; want <= have+54; want++ {
			if id, _, _ := r.next(t); id != strconv.FormatInt(want, 10) {
				t.Fatalf("resumed at %s, want %d", id, want)
			}
		}

		// Another workspace's task is an unknown one; a bad Last-Event-ID is 400.
		foreign := w.f.Outsider.Do("GET", path, nil)
		unknown := w.f.Outsider.Do("GET", "/api/tasks/"+ids.New()+"/events/stream", nil)
		if foreign.Status != 404 || string(foreign.Body) != string(unknown.Body) {
			t.Fatalf("foreign %d %s / unknown %d %s", foreign.Status, foreign.Body, unknown.Status, unknown.Body)
		}
		run := w.f.Run(t, w.ws, w.project, w.task, "", runs.Running, 1, time.Now().UTC())
		foreignRun := w.f.Outsider.Do("GET", "/api/runs/"+run+"/events/stream", nil)
		unknownRun := w.f.Outsider.Do("GET", "/api/runs/"+ids.New()+"/events/stream", nil)
		if foreignRun.Status != 404 || string(foreignRun.Body) != string(unknownRun.Body) {
			t.Fatalf("foreign run %d %s / unknown %d %s", foreignRun.Status, foreignRun.Body, unknownRun.Status, unknownRun.Body)
		}
		if r := owner.Do("GET", path, nil, "Last-Event-ID", "soon"); r.Status != 400 {
			t.Fatalf("a bad Last-Event-ID: %d", r.Status)
		}
		if r := w.f.App.Anonymous().Do("GET", path, nil); r.Status != 401 {
			t.Fatalf("anonymous: %d", r.Status)
		}
		// A shutdown ends the stream with a reconnect.
		w.f.App.Server.Services.Realtime.Shutdown()
		if _, ev, _ := r.next(t); ev != "reconnect" {
			t.Fatalf("at shutdown: %s", ev)
		}
	})
}

// Two replicas on one PostgreSQL database with the relay on: a browser on
// one sees what the other writes, in order, nothing of another workspace;
// a note too large for NOTIFY travels by reference.
func TestRelayAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	w := newWorld(t, db.Postgres, "SERVICE_HUB_EVENT_RELAY", "true")
	other := w.f.App.Replica(t, "SERVICE_HUB_EVENT_RELAY", "true")
	if err := other.Server.Bus().Listening(context.Background()); err != nil {
		t.Fatal(err)
	}
	owner := w.f.Owner.On(other)
	s := mustDial(t, owner)
	s.send(realtime.Command{Op: "subscribe", Sub: "t", Stream: "task", ID: w.task})
	s.next()
	have := w.logLen(t)
	s.events("t", 1, have)
	s.send(realtime.Command{Op: "subscribe", Sub: "tasks", Stream: "tasks"})
	s.next()
	o := mustDial(t, w.f.Outsider.On(other))
	o.send(realtime.Command{Op: "subscribe", Sub: "tasks", Stream: "tasks"})
	o.next()

	// Written on the first replica, heard on the second.
	go feed(t, w.f.App, w.ws, w.task, 200, 4)
	s.events("t", have+1, have+200)
	big := strings.Repeat("x", 20000)
	if err := w.f.App.DB.Tx(context.Background(), func(tx *db.Tx) error {
		return w.f.App.Server.Services.Runs.Append(context.Background(), tx, w.ws, w.task, "",
			runs.NewEvent{Type: "output", Payload: json.RawMessage(`{"line":"` + big + `"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	if evs := s.events("t", have+201, have+201); !strings.Contains(string(evs[0].Payload), big) {
		t.Fatal("the large event arrived without its payload")
	}
	fixture.Want(t, w.f.Owner.Do("POST", "/api/tasks/"+w.task+"/cancel", nil), http.StatusOK)
	for {
		m := s.next()
		if m.Type == "changed" {
			if m.ID != w.task {
				t.Fatalf("%+v", m)
			}
			break
		}
	}
	o.quiet(500 * time.Millisecond)
}

// TestConnectionsPerAccount: an account holds at most its cap of sockets
// and event streams on a server; one more is 429 too_many_requests with
// Retry-After, another account is not affected, and a closed one frees its
// place.
func TestConnectionsPerAccount(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		w := newWorld(t, e, "SERVICE_REALTIME_MAX_CONNECTIONS_PER_ACCOUNT", "3")
		owner := w.f.Owner
		first := mustDial(t, owner)
		mustDial(t, owner)
		stream := openSSE(t, owner, "/api/tasks/"+w.task+"/events/stream")
		if stream.resp.StatusCode != 200 {
			t.Fatalf("the third connection (a stream): %d", stream.resp.StatusCode)
		}
		if _, resp, err := dial(t, owner); err == nil || resp == nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a fourth socket: %v %v", err, resp)
		}
		over := openSSE(t, owner, "/api/tasks/"+w.task+"/events/stream")
		var body struct {
			Code string `json:"code"`
		}
		if over.resp.StatusCode != 429 || json.NewDecoder(over.resp.Body).Decode(&body) != nil || body.Code != "too_many_requests" {
			t.Fatalf("a fourth connection (a stream): %d %s", over.resp.StatusCode, body.Code)
		}
		// Another account is not affected.
		mustDial(t, w.f.Outsider)
		// A closed socket frees its place (the server notices the close).
		first.ws.Close(websocket.StatusNormalClosure, "")
		deadline := time.Now().Add(10 * time.Second)
		for {
			s, _, err := dial(t, owner)
			if err == nil {
				s.ws.Close(websocket.StatusNormalClosure, "")
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the closed socket's place was not freed: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
