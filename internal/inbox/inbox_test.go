package inbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/fixture"
	"slipway/internal/inbox"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/pubsub"
	"slipway/internal/runs"
)

func post(t *testing.T, d *db.DB, b *inbox.Inbox, job, text, msg string) int64 {
	t.Helper()
	var seq int64
	err := d.Tx(context.Background(), func(tx *db.Tx) (err error) {
		seq, err = b.Post(context.Background(), tx, job, map[string]string{"type": "message", "text": text}, msg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// The mailbox's rules on both databases: dense numbers under concurrent
// posts, lines handed out again to a worker that asks with the same number,
// withdrawal only while untaken, the taken mark a new attempt starts after,
// and the jobs whose holder has lines waiting.
func TestInbox(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e)
		bus := pubsub.New(d, slog.New(slog.DiscardHandler))
		t.Cleanup(bus.Close)
		rec := &takenRecorder{}
		b := inbox.New(d, bus, clock.System{}, rec)
		ws := fixture.Workspace(t, d)
		job := ids.New()
		now := time.Now().UTC()
		if _, err := d.W.Exec(`INSERT INTO jobs (id, kind, workspace_id, ref_id, state, attempt, max_attempts, run_at, locked_by, created_at)
			VALUES ($1, 'task', $2, $3, 'running', 1, 3, $4, 'hub@me', $4)`, job, ws.ID, ids.New(), now); err != nil {
			t.Fatal(err)
		}

		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				post(t, d, b, job, fmt.Sprint("racer ", i), fmt.Sprint("m", i))
			}()
		}
		wg.Wait()
		if w, recheck, err := b.Waiting(ctx, "hub@me", time.Hour); err != nil || len(w) != 0 || recheck <= 59*time.Minute {
			t.Fatalf("lines just posted are reported at once (%v) or not rechecked (%v), %v", w, recheck, err)
		}
		if w, _, err := b.Waiting(ctx, "hub@me", 0); err != nil || len(w) != 1 || w[0] != job {
			t.Fatalf("waiting %v, %v", w, err)
		}
		if w, _, _ := b.Waiting(ctx, "hub@other", 0); len(w) != 0 {
			t.Fatalf("another worker is told of the lines: %v", w)
		}
		lines, err := b.Take(ctx, job, 0)
		if err != nil || len(lines) != 8 {
			t.Fatalf("took %d, %v", len(lines), err)
		}
		for i, l := range lines {
			if l.Seq != int64(i+1) {
				t.Fatalf("seq %d at %d: numbers are not dense", l.Seq, i)
			}
			// A message line carries its number, for the agent to say back.
			if !strings.Contains(string(l.Line), fmt.Sprintf(`"seq":%d`, l.Seq)) {
				t.Fatalf("line %d does not carry its number: %s", l.Seq, l.Line)
			}
		}
		// Taken is not delivered: nothing is told until the model read them.
		if n := rec.count(); n != 0 {
			t.Fatalf("told of %d messages when a worker took them", n)
		}
		// The same question again (an answer lost on the way): the same lines.
		if again, _ := b.Take(ctx, job, 0); len(again) != 8 {
			t.Fatalf("again %d lines", len(again))
		}
		// The agent says its model read up to line 5: those five messages
		// are delivered; a seen line past what was taken delivers no more.
		seen := func(seq int64) {
			t.Helper()
			payload := []byte(fmt.Sprintf(`{"type":"seen","seq":%d}`, seq))
			if err := d.Tx(ctx, func(tx *db.Tx) error {
				return b.AgentReported(ctx, tx, job, []runs.NewEvent{{Type: protocol.OutSeen, Payload: payload}})
			}); err != nil {
				t.Fatal(err)
			}
		}
		seen(5)
		if n := rec.count(); n != 5 {
			t.Fatalf("told of %d seen messages, want 5", n)
		}
		if w, recheck, _ := b.Waiting(ctx, "hub@me", 0); len(w) != 0 || recheck != 0 {
			t.Fatalf("still waiting: %v (%v)", w, recheck)
		}
		var withdrew bool
		seq := post(t, d, b, job, "late", "late")
		if err := d.Tx(ctx, func(tx *db.Tx) (err error) {
			if ok, err := b.Withdraw(ctx, tx, job, "m3"); err != nil || ok {
				return fmt.Errorf("withdrew a taken line: %v %v", ok, err)
			}
			withdrew, err = b.Withdraw(ctx, tx, job, "late")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !withdrew || seq != 9 {
			t.Fatalf("withdrew %v, seq %d", withdrew, seq)
		}
		if rest, _ := b.Take(ctx, job, 8); len(rest) != 0 {
			t.Fatalf("a withdrawn line was handed out: %v", rest)
		}
		post(t, d, b, job, "after", "after")
		if n, err := b.Taken(ctx, d.R, job); err != nil || n != 8 {
			t.Fatalf("taken up to %d, %v", n, err)
		}
		// The withdrawn line's number is free again (no worker ever had it).
		if rest, _ := b.Take(ctx, job, 8); len(rest) != 1 || rest[0].Seq != 9 || !strings.Contains(string(rest[0].Line), "after") {
			t.Fatalf("after 8: %+v", rest)
		}
	})
}

// takenRecorder keeps the message ids the inbox says were seen.
type takenRecorder struct {
	mu    sync.Mutex
	taken []string
}

func (r *takenRecorder) MessagesSeen(_ context.Context, _ *db.Tx, ids []string) error {
	r.mu.Lock()
	r.taken = append(r.taken, ids...)
	r.mu.Unlock()
	return nil
}

func (r *takenRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.taken)
}
