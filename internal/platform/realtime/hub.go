// Package realtime is the hub that pushes what happens to the browsers and
// scripts watching it: ordered streams (a task's or run's event log, read
// again from their source whenever something might be missing, so a
// subscriber sees every item once and in order) and change hints on a
// workspace's topics (a board row changed, the approvals count moved).
//
// Publishers hand the hub what their transaction wrote; it is fanned out
// after commit. With a relay (SERVICE_HUB_EVENT_RELAY on PostgreSQL) the
// note travels through LISTEN/NOTIFY to every replica, inline when it fits
// and as a reference (stream and sequence range, read from the database by
// the receiver) when it does not. Every subscription belongs to one
// workspace and only receives that workspace's notes.
package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slipway/internal/platform/apperr"
	"sync"

	"slipway/internal/platform/db"
	"slipway/internal/platform/pubsub"
)

// Item is one entry of an ordered stream ("task:<id>", "run:<id>").
type Item struct {
	Stream string          `json:"s"`
	Seq    int64           `json:"q"`
	Data   json.RawMessage `json:"d"`
}

// Source reads a stream's items after a sequence number, oldest first, in
// one workspace; an id that is not the workspace's, or not an id at all, is
// apperr not-found, exactly like an unknown one (the transports rely on it).
type Source func(ctx context.Context, workspaceID, id string, after int64, limit int) ([]Item, error)

// Relay carries notes between replicas (pubsub.Bus).
type Relay interface {
	PublishTx(ctx context.Context, tx *db.Tx, topic, payload string) error
	Subscribe(topic string) *pubsub.Subscription
}

// relayTopic is the bus topic of hub notes.
const relayTopic = "hub"

// note is what a publisher says, and what travels between replicas.
type note struct {
	W     string `json:"w"`
	Items []Item `json:"i,omitempty"`
	Refs  []ref  `json:"r,omitempty"` // items too large to travel: read them from their source
	Topic string `json:"t,omitempty"` // a hint on a workspace topic
	ID    string `json:"id,omitempty"`
	U     string `json:"u,omitempty"` // a hint on a personal topic: whose
}

// ref says a stream has items up to To that did not travel.
type ref struct {
	Stream string `json:"s"`
	To     int64  `json:"to"`
}

// Hub fans notes out to subscriptions.
type Hub struct {
	relay Relay // nil: this process only
	log   *slog.Logger

	sources  map[string]Source // by stream kind
	topics   map[string]bool
	personal map[string]bool // topics of one account, whatever the workspace

	mu    sync.RWMutex
	index map[string]map[*sub]*Conn // stream key or workspace|topic → subscriptions
	conns map[*Conn]struct{}

	closing   chan struct{}
	closeOnce sync.Once

	// perAccount counts each account's open sockets and streams here;
	// past maxPerAccount a new one is refused.
	perAccount    map[string]int
	maxPerAccount int
}

// DefaultMaxPerAccount bounds one account's sockets and streams on one
// server (a console tab holds one socket; scripts hold streams).
const DefaultMaxPerAccount = 32

// New builds a hub; relay nil keeps notes in this process; maxPerAccount
// (0: DefaultMaxPerAccount) bounds one account's connections.
func New(relay Relay, log *slog.Logger, maxPerAccount int) *Hub {
	if maxPerAccount <= 0 {
		maxPerAccount = DefaultMaxPerAccount
	}
	return &Hub{relay: relay, log: log, sources: map[string]Source{}, topics: map[string]bool{}, personal: map[string]bool{},
		index: map[string]map[*sub]*Conn{}, conns: map[*Conn]struct{}{}, closing: make(chan struct{}),
		perAccount: map[string]int{}, maxPerAccount: maxPerAccount}
}

// ErrTooManyConnections refuses a socket or stream past the account's cap.
var ErrTooManyConnections = apperr.New(apperr.CodeTooManyRequests,
	"too many live connections for this account: close other tabs or streams, then connect again")

// admit counts a connection of an account; release gives it back.
func (h *Hub) admit(accountID string) (release func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.perAccount[accountID] >= h.maxPerAccount {
		return nil, ErrTooManyConnections
	}
	h.perAccount[accountID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.perAccount[accountID]--; h.perAccount[accountID] <= 0 {
				delete(h.perAccount, accountID)
			}
		})
	}, nil
}

// Stream registers an ordered stream kind and how to read it (at wiring).
func (h *Hub) Stream(kind string, src Source) { h.sources[kind] = src }

// Topic registers a workspace topic of change hints (at wiring).
func (h *Hub) Topic(name string) { h.topics[name] = true }

// Personal registers a topic of change hints addressed to one account (its
// notifications), heard on every socket of that account whichever
// workspace it names (at wiring).
func (h *Hub) Personal(name string) { h.personal[name] = true }

// personalKey is the index key of an account's personal topic.
func personalKey(accountID, topic string) string { return "account:" + accountID + "|" + topic }

// PublishTx hands the hub what tx wrote to some streams; build makes the
// items, and is only called when someone may watch (always with a relay:
// other replicas may). They go out when tx commits, and not at all if it
// rolls back.
func (h *Hub) PublishTx(ctx context.Context, tx *db.Tx, workspaceID string, streams []string, build func() []Item) error {
	if h == nil {
		return nil
	}
	if h.relay == nil {
		tx.AfterCommit(func() {
			// After commit: whoever subscribes from now on reads these from
			// the source, so skipping them here when nobody watches loses
			// nothing.
			if h.watched(streams) {
				h.dispatch(note{W: workspaceID, Items: build()})
			}
		})
		return nil
	}
	return h.relayTx(ctx, tx, note{W: workspaceID, Items: build()})
}

// NotifyTx hints that something on a workspace topic changed (id: what).
func (h *Hub) NotifyTx(ctx context.Context, tx *db.Tx, workspaceID, topic, id string) error {
	if h == nil {
		return nil
	}
	n := note{W: workspaceID, Topic: topic, ID: id}
	if h.relay == nil {
		tx.AfterCommit(func() { h.dispatch(n) })
		return nil
	}
	return h.relayTx(ctx, tx, n)
}

// NotifyUserTx hints that something on an account's personal topic changed
// (id: what); it goes out when tx commits.
func (h *Hub) NotifyUserTx(ctx context.Context, tx *db.Tx, accountID, topic, id string) error {
	if h == nil {
		return nil
	}
	n := note{U: accountID, Topic: topic, ID: id}
	if h.relay == nil {
		tx.AfterCommit(func() { h.dispatch(n) })
		return nil
	}
	return h.relayTx(ctx, tx, n)
}

// Relays says whether PublishTx builds its items inside the transaction
// (a relay sends them to the other replicas with it); without one it
// builds them after the commit, and only when someone watches.
func (h *Hub) Relays() bool { return h != nil && h.relay != nil }

func (h *Hub) relayTx(ctx context.Context, tx *db.Tx, n note) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	if len(b) > pubsub.MaxPayload-len(relayTopic)-1 {
		b, err = json.Marshal(byReference(n))
		if err != nil {
			return err
		}
	}
	return h.relay.PublishTx(ctx, tx, relayTopic, string(b))
}

func (h *Hub) watched(streams []string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, s := range streams {
		if len(h.index[s]) > 0 {
			return true
		}
	}
	return false
}

// byReference replaces a note's items by the last sequence of each stream.
func byReference(n note) note {
	last := map[string]int64{}
	var order []string
	for _, it := range n.Items {
		if _, ok := last[it.Stream]; !ok {
			order = append(order, it.Stream)
		}
		last[it.Stream] = max(last[it.Stream], it.Seq)
	}
	out := note{W: n.W}
	for _, s := range order {
		out.Refs = append(out.Refs, ref{Stream: s, To: last[s]})
	}
	return out
}

// Run relays notes from the other replicas (and this one) until ctx ends;
// without a relay it only waits.
func (h *Hub) Run(ctx context.Context) {
	if h.relay == nil {
		<-ctx.Done()
		return
	}
	s := h.relay.Subscribe(relayTopic)
	defer s.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.C:
			if m.Reset {
				h.resetAll() // notes may have been lost: every subscriber catches up
				continue
			}
			var n note
			if err := json.Unmarshal([]byte(m.Payload), &n); err != nil {
				h.log.Warn("realtime: an unreadable hub note", "err", err)
				continue
			}
			h.dispatch(n)
		}
	}
}

// dispatch offers a note to the subscriptions it concerns.
func (h *Hub) dispatch(n note) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if n.Topic != "" {
		key := n.W + "|" + n.Topic
		if n.U != "" {
			key = personalKey(n.U, n.Topic)
		}
		for s, c := range h.index[key] {
			c.offer(delivery{s: s, hint: n.ID})
		}
		return
	}
	// Items of one stream go together, in order.
	var start int
	for i := 1; i <= len(n.Items); i++ {
		if i < len(n.Items) && n.Items[i].Stream == n.Items[start].Stream {
			continue
		}
		for s, c := range h.index[n.Items[start].Stream] {
			if s.ws == n.W {
				c.offer(delivery{s: s, items: n.Items[start:i]})
			}
		}
		start = i
	}
	for _, r := range n.Refs {
		for s, c := range h.index[r.Stream] {
			if s.ws == n.W {
				c.offer(delivery{s: s, to: r.To})
			}
		}
	}
}

func (h *Hub) resetAll() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for c := range h.conns {
		c.markLost()
	}
}

func (h *Hub) attach(c *Conn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.closing:
		return ErrClosing
	default:
	}
	h.conns[c] = struct{}{}
	return nil
}

func (h *Hub) detach(c *Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, c)
	for _, s := range c.subs {
		h.unindexLocked(s)
	}
}

func (h *Hub) indexSub(c *Conn, s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.index[s.key] == nil {
		h.index[s.key] = map[*sub]*Conn{}
	}
	h.index[s.key][s] = c
}

func (h *Hub) unindex(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unindexLocked(s)
}

func (h *Hub) unindexLocked(s *sub) {
	delete(h.index[s.key], s)
	if len(h.index[s.key]) == 0 {
		delete(h.index, s.key)
	}
}

// ErrClosing refuses a connection while the server shuts down.
var ErrClosing = errors.New("realtime: the server is shutting down")

// Shutdown tells every connection to reconnect (elsewhere) and ends them;
// new connections are refused.
func (h *Hub) Shutdown() {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		close(h.closing)
		h.mu.Unlock()
	})
}

func (h *Hub) closingNow() bool {
	select {
	case <-h.closing:
		return true
	default:
		return false
	}
}

// Connections counts the open connections (tests and metrics).
func (h *Hub) Connections() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.conns)
}
