package pubsub_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/pubsub"
)

func receive(t *testing.T, s *pubsub.Subscription) pubsub.Message {
	t.Helper()
	select {
	case m := <-s.C:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
	}
	return pubsub.Message{}
}

func quiet(t *testing.T, s *pubsub.Subscription, within time.Duration) {
	t.Helper()
	select {
	case m := <-s.C:
		t.Fatalf("unexpected message %+v", m)
	case <-time.After(within):
	}
}

func newBus(t *testing.T, d *db.DB) *pubsub.Bus {
	t.Helper()
	b := pubsub.New(d, slog.New(slog.DiscardHandler))
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Listening(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBus(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e)
		bus := newBus(t, d)
		jobs := bus.Subscribe("jobs")
		other := bus.Subscribe("sessions")

		if err := bus.Publish(ctx, "jobs", "task"); err != nil {
			t.Fatal(err)
		}
		if m := receive(t, jobs); m.Topic != "jobs" || m.Payload != "task" || m.Reset {
			t.Fatalf("got %+v", m)
		}
		quiet(t, other, 50*time.Millisecond)

		// In a transaction: nothing before the commit, the message after it.
		err := d.Tx(ctx, func(tx *db.Tx) error {
			if err := bus.PublishTx(ctx, tx, "jobs", "in-tx"); err != nil {
				return err
			}
			quiet(t, jobs, 100*time.Millisecond)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if m := receive(t, jobs); m.Payload != "in-tx" {
			t.Fatalf("got %+v", m)
		}
		// A rolled-back transaction sends nothing.
		boom := errors.New("boom")
		err = d.Tx(ctx, func(tx *db.Tx) error {
			if err := bus.PublishTx(ctx, tx, "jobs", "rolled-back"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		quiet(t, jobs, 200*time.Millisecond)

		// Bad topics and oversized payloads are refused, not truncated.
		if err := bus.Publish(ctx, "a:b", "x"); err == nil {
			t.Fatal("a topic with ':' was accepted")
		}
		if err := bus.Publish(ctx, "jobs", strings.Repeat("x", pubsub.MaxPayload)); err == nil {
			t.Fatal("an oversized payload was accepted")
		}

		// A subscriber that falls behind gets a Reset instead of a backlog.
		for i := 0; i < 1000; i++ {
			if err := bus.Publish(ctx, "sessions", "s"); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.After(10 * time.Second)
		for sawReset := false; !sawReset; {
			select {
			case m := <-other.C:
				sawReset = m.Reset
			case <-deadline:
				t.Fatal("no Reset after overflowing the subscription")
			}
		}

		// A closed subscription receives nothing more.
		jobs.Close()
		if err := bus.Publish(ctx, "jobs", "after-close"); err != nil {
			t.Fatal(err)
		}
		quiet(t, jobs, 100*time.Millisecond)
	})
}

// TestBusAcrossReplicas: on PostgreSQL two processes' buses on one database
// hear each other.
func TestBusAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	d1 := dbtest.New(t, db.Postgres)
	d2, err := db.Open(ctx, d1.Target)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	a, b := newBus(t, d1), newBus(t, d2)
	onB := b.Subscribe("jobs")
	onA := a.Subscribe("jobs")
	if err := a.Publish(ctx, "jobs", "from-a"); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, onB); m.Payload != "from-a" {
		t.Fatalf("b got %+v", m)
	}
	// The publisher hears itself too (one path for local and remote).
	if m := receive(t, onA); m.Payload != "from-a" {
		t.Fatalf("a got %+v", m)
	}
}

// TestBusReconnects: when the listening connection dies, subscribers get a
// Reset (they may have missed messages) and later messages arrive again.
func TestBusReconnects(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx := context.Background()
	d := dbtest.New(t, db.Postgres)
	bus := newBus(t, d)
	sub := bus.Subscribe("jobs")
	var killed int
	if err := d.W.QueryRowContext(ctx, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listening backends: %v", killed, err)
	}
	if m := receive(t, sub); !m.Reset {
		t.Fatalf("got %+v, want a Reset", m)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := bus.Publish(ctx, "jobs", "again"); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-sub.C:
			if m.Payload == "again" {
				return
			}
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no message after the reconnect")
		}
	}
}
