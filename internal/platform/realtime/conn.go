package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"
	"unicode"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
)

// Message is what a watcher receives.
type Message struct {
	// subscribed, event, changed, reset, error, unsubscribed, reconnect
	Type  string          `json:"type"`
	Sub   string          `json:"sub,omitempty"`
	Seq   int64           `json:"seq,omitempty"`
	Event json.RawMessage `json:"event,omitempty"`
	Topic string          `json:"topic,omitempty"`
	ID    string          `json:"id,omitempty"`
	Code  string          `json:"code,omitempty"`
	Error string          `json:"error,omitempty"`
}

// Command is what a watcher asks.
type Command struct {
	Op          string `json:"op"`  // subscribe or unsubscribe
	Sub         string `json:"sub"` // the watcher's name for the subscription
	Stream      string `json:"stream,omitempty"`
	ID          string `json:"id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	After       int64  `json:"after,omitempty"`
}

// malformed stands for a command that was not JSON.
const malformed = "\x00malformed"

// Limits of one connection.
const (
	MaxSubscriptions = 100
	queueSize        = 512
	pageSize         = 500
	recheckEvery     = 30 * time.Second
)

// Watcher is what a connection needs from the signed-in user.
type Watcher struct {
	// Account is the signed-in user's id: their personal topics.
	Account string
	// Resolve names the workspace a subscription is in: the given one if
	// the user has joined it, else their default (an error otherwise).
	Resolve func(ctx context.Context, workspaceID string) (string, error)
	// Recheck says whether the session still stands: apperr unauthorized
	// when it does not; any other error ends the connection without
	// telling the watcher to sign in again.
	Recheck func(ctx context.Context) error
}

// Sender writes one message to the watcher.
type Sender func(ctx context.Context, m Message) error

// Conn is one watcher: a browser socket or an event stream.
type Conn struct {
	hub  *Hub
	who  Watcher
	send Sender
	q    chan delivery
	wake chan struct{}
	lost atomic.Bool
	subs map[string]*sub // by the watcher's name; the loop's alone
	jobs chan func() error
}

type sub struct {
	id, ws, kind, target, key string
	ordered                   bool
	last                      int64
}

type delivery struct {
	s     *sub
	items []Item
	to    int64  // a reference: the stream has items up to here
	hint  string // a topic change: what changed
}

// Open attaches a connection to the hub (ErrClosing while shutting down).
func (h *Hub) Open(who Watcher, send Sender) (*Conn, error) {
	c := &Conn{hub: h, who: who, send: send, q: make(chan delivery, queueSize), wake: make(chan struct{}, 1), subs: map[string]*sub{},
		jobs: make(chan func() error, 1)}
	if err := h.attach(c); err != nil {
		return nil, err
	}
	return c, nil
}

// offer queues a delivery without ever blocking the hub: a watcher that
// falls behind is caught up from the sources instead.
func (c *Conn) offer(d delivery) {
	select {
	case c.q <- d:
	default:
		c.markLost()
	}
}

// Do runs fn in the connection's loop, between its writes (a keepalive);
// skipped when one is already waiting.
func (c *Conn) Do(fn func() error) {
	select {
	case c.jobs <- fn:
	default:
	}
}

func (c *Conn) markLost() {
	c.lost.Store(true)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Serve runs the connection until ctx ends, cmds closes, a send fails, the
// session lapses or the hub shuts down (the watcher is told to reconnect).
func (c *Conn) Serve(ctx context.Context, cmds <-chan Command) error {
	defer c.hub.detach(c)
	tick := time.NewTicker(recheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.hub.closing:
			_ = c.send(ctx, Message{Type: "reconnect"})
			return ErrClosing
		case cmd, ok := <-cmds:
			if !ok {
				return nil
			}
			if err := c.command(ctx, cmd); err != nil {
				return err
			}
		case d := <-c.q:
			if err := c.deliver(ctx, d); err != nil {
				return err
			}
		case <-c.wake:
			if err := c.catchUpAll(ctx); err != nil {
				return err
			}
		case fn := <-c.jobs:
			if err := fn(); err != nil {
				return err
			}
		case <-tick.C:
			if err := c.recheck(ctx); err != nil {
				return err
			}
		}
	}
}

// ErrSession ends a connection whose session lapsed.
var ErrSession = errors.New("realtime: the session ended")

func (c *Conn) recheck(ctx context.Context) error {
	if err := c.who.Recheck(ctx); err != nil {
		if !errors.Is(err, apperr.ErrUnauthorized) {
			// Not a verdict on the session (the database, say): closing lets
			// the watcher reconnect, still signed in.
			return err
		}
		_ = c.send(ctx, Message{Type: "error", Code: string(apperr.CodeUnauthorized), Error: "the session ended: sign in again"})
		return ErrSession
	}
	for id, s := range c.subs {
		if c.hub.personal[s.kind] {
			continue // the session's own: it stands while the session does
		}
		if _, err := c.who.Resolve(ctx, s.ws); err != nil {
			c.drop(s)
			delete(c.subs, id)
			if err := c.fail(ctx, id, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// fail tells the watcher a subscription failed; an error without a code
// (the database) ends the connection instead of showing its text.
func (c *Conn) fail(ctx context.Context, subID string, err error) error {
	e, ok := apperr.As(err)
	if !ok || e.Code == apperr.CodeInternal || e.Code == apperr.CodeDatabase {
		return err
	}
	return c.send(ctx, Message{Type: "error", Sub: subID, Code: string(e.Code), Error: e.Message})
}

func (c *Conn) drop(s *sub) { c.hub.unindex(s) }

func validSubID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func (c *Conn) command(ctx context.Context, cmd Command) error {
	if cmd.Op == malformed {
		return c.fail(ctx, "", apperr.BadRequest("a command is a JSON object: {\"op\":\"subscribe\"|\"unsubscribe\",\"sub\":\"…\",…}"))
	}
	if !validSubID(cmd.Sub) {
		return c.fail(ctx, "", apperr.BadRequest("sub must name the subscription: 1-64 printable characters"))
	}
	switch cmd.Op {
	case "unsubscribe":
		if s, ok := c.subs[cmd.Sub]; ok {
			c.drop(s)
			delete(c.subs, cmd.Sub)
		}
		return c.send(ctx, Message{Type: "unsubscribed", Sub: cmd.Sub})
	case "subscribe":
		return c.subscribe(ctx, cmd)
	default:
		return c.fail(ctx, cmd.Sub, apperr.BadRequest("op must be subscribe or unsubscribe"))
	}
}

func (c *Conn) subscribe(ctx context.Context, cmd Command) error {
	if _, dup := c.subs[cmd.Sub]; dup {
		return c.fail(ctx, cmd.Sub, apperr.BadRequest("a subscription of this name exists: unsubscribe it first"))
	}
	if len(c.subs) >= MaxSubscriptions {
		return c.fail(ctx, cmd.Sub, apperr.BadRequest("at most %d subscriptions per connection", MaxSubscriptions))
	}
	if c.hub.personal[cmd.Stream] {
		if c.who.Account == "" {
			return c.fail(ctx, cmd.Sub, apperr.BadRequest("unknown stream %q", cmd.Stream))
		}
		s := &sub{id: cmd.Sub, kind: cmd.Stream, key: personalKey(c.who.Account, cmd.Stream)}
		c.hub.indexSub(c, s)
		c.subs[s.id] = s
		return c.send(ctx, Message{Type: "subscribed", Sub: s.id, Topic: s.kind})
	}
	src, ordered := c.hub.sources[cmd.Stream]
	if !ordered && !c.hub.topics[cmd.Stream] {
		return c.fail(ctx, cmd.Sub, apperr.BadRequest("unknown stream %q", cmd.Stream))
	}
	if cmd.WorkspaceID != "" && !ids.Valid(cmd.WorkspaceID) {
		return c.fail(ctx, cmd.Sub, apperr.BadRequest("workspace_id must be a workspace id (a UUID)"))
	}
	ws, err := c.who.Resolve(ctx, cmd.WorkspaceID)
	if err != nil {
		return c.fail(ctx, cmd.Sub, err)
	}
	s := &sub{id: cmd.Sub, ws: ws, kind: cmd.Stream, ordered: ordered}
	if !ordered {
		s.key = ws + "|" + cmd.Stream
		c.hub.indexSub(c, s)
		c.subs[s.id] = s
		return c.send(ctx, Message{Type: "subscribed", Sub: s.id, Topic: s.kind})
	}
	if cmd.After < 0 {
		return c.fail(ctx, cmd.Sub, apperr.BadRequest("after must not be negative"))
	}
	s.target, s.key, s.last = cmd.ID, cmd.Stream+":"+cmd.ID, cmd.After
	// Indexed before the first read: what is written meanwhile is queued
	// and skipped if the read already had it.
	c.hub.indexSub(c, s)
	first, err := src(ctx, ws, s.target, s.last, pageSize)
	if err != nil {
		c.drop(s)
		return c.fail(ctx, cmd.Sub, err)
	}
	c.subs[s.id] = s
	if err := c.send(ctx, Message{Type: "subscribed", Sub: s.id, Topic: s.kind, ID: s.target, Seq: s.last}); err != nil {
		return err
	}
	if err := c.emit(ctx, s, first); err != nil {
		return err
	}
	if len(first) == pageSize {
		return c.catchUp(ctx, s)
	}
	return nil
}

// emit sends the items after the subscription's last, in order.
func (c *Conn) emit(ctx context.Context, s *sub, items []Item) error {
	for _, it := range items {
		if it.Seq <= s.last {
			continue
		}
		if err := c.send(ctx, Message{Type: "event", Sub: s.id, Seq: it.Seq, Event: it.Data}); err != nil {
			return err
		}
		s.last = it.Seq
	}
	return nil
}

// catchUp reads what the subscription has not seen from its source.
func (c *Conn) catchUp(ctx context.Context, s *sub) error {
	src := c.hub.sources[s.kind]
	for {
		items, err := src(ctx, s.ws, s.target, s.last, pageSize)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Gone (deleted) or unreadable: the watcher hears why.
			c.drop(s)
			delete(c.subs, s.id)
			return c.fail(ctx, s.id, err)
		}
		if err := c.emit(ctx, s, items); err != nil {
			return err
		}
		if len(items) < pageSize {
			return nil
		}
	}
}

func (c *Conn) deliver(ctx context.Context, d delivery) error {
	if c.subs[d.s.id] != d.s {
		return nil // unsubscribed since
	}
	s := d.s
	if !s.ordered {
		return c.send(ctx, Message{Type: "changed", Sub: s.id, Topic: s.kind, ID: d.hint})
	}
	for i, it := range d.items {
		switch {
		case it.Seq <= s.last:
			continue // had it
		case it.Seq == s.last+1:
			if err := c.emit(ctx, s, d.items[i:i+1]); err != nil {
				return err
			}
		default:
			// A gap: something arrived out of order or was lost on the way.
			// The source has everything up to it (writes to one stream commit
			// in sequence order).
			if err := c.catchUp(ctx, s); err != nil {
				return err
			}
			if c.subs[s.id] != s {
				return nil
			}
			if err := c.emit(ctx, s, d.items[i:i+1]); err != nil {
				return err
			}
		}
	}
	if d.to > s.last {
		return c.catchUp(ctx, s)
	}
	return nil
}

// catchUpAll follows a loss (a full queue, a dropped relay): what was
// queued is dropped, every stream is read again from its source and every
// topic is told to refetch.
func (c *Conn) catchUpAll(ctx context.Context) error {
	if !c.lost.Swap(false) {
		return nil
	}
	for {
		select {
		case <-c.q:
			continue
		default:
		}
		break
	}
	for _, s := range c.subs {
		var err error
		if s.ordered {
			err = c.catchUp(ctx, s)
		} else {
			err = c.send(ctx, Message{Type: "reset", Sub: s.id, Topic: s.kind})
		}
		if err != nil {
			return err
		}
	}
	return nil
}
