// Package inbox is the mailbox of a running agent: the lines the hub has for
// the agent of a job (a human's message, an approval verdict, an interrupt),
// numbered per job. The job's worker takes them with its lease renewals
// (workport.Port's Extend: "I have delivered everything up to seq N, what is
// there after it?") and writes them to the agent's stdin, so they travel the
// same way to an in-process agent, a container and a remote runner. A post
// nudges the holder at once over the control stream; a lost nudge only
// delays a line until the next renewal, never loses it.
package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/internal/workport"
)

// Inbox stores the lines for agents.
type Inbox struct {
	db    *db.DB
	bus   *pubsub.Bus
	clock clock.Clock
	react Reactions // nil: no other domain reacts
}

// Reactions are what other domains do when an agent takes its lines (the
// composition root lists who reacts).
type Reactions interface {
	// MessagesTaken is told, inside the transaction that hands lines to a
	// worker for the first time, which messages they carry (their ids as
	// given to Post).
	MessagesTaken(ctx context.Context, tx *db.Tx, messageIDs []string) error
}

// New returns the inbox.
func New(d *db.DB, bus *pubsub.Bus, clk clock.Clock, react Reactions) *Inbox {
	return &Inbox{db: d, bus: bus, clock: clk, react: react}
}

// Post queues a line (any JSON value) for the agent of a job, inside tx,
// and nudges the job's holder once tx commits. messageID ("" for none)
// names the message the line carries, for Withdraw and OnTaken.
func (b *Inbox) Post(ctx context.Context, tx *db.Tx, jobID string, line any, messageID string) (int64, error) {
	raw, err := json.Marshal(line)
	if err != nil {
		return 0, fmt.Errorf("inbox: encoding a line: %w", err)
	}
	// One poster per job at a time: sequence numbers are dense and unique.
	if err := b.db.Dialect.XactLock(ctx, tx, "inbox:"+jobID); err != nil {
		return 0, err
	}
	seq, err := nextSeq(ctx, tx, jobID)
	if err != nil {
		return 0, err
	}
	var msg *string
	if messageID != "" {
		msg = &messageID
	}
	if err := insertLine(ctx, tx, jobID, seq, string(raw), msg, b.clock.Now()); err != nil {
		return 0, err
	}
	if err := b.bus.PublishTx(ctx, tx, jobs.TopicControl, workport.ActionDeliver+" "+jobID); err != nil {
		return 0, err
	}
	return seq, nil
}

// Withdraw removes a message's line that no worker has taken yet, inside
// tx; false when it was taken (delivered) or is gone.
func (b *Inbox) Withdraw(ctx context.Context, tx *db.Tx, jobID, messageID string) (bool, error) {
	return withdraw(ctx, tx, jobID, messageID)
}

// Take returns the job's lines after seq, in order, and marks the ones
// handed out for the first time as taken. A worker that did not get the
// answer asks again with the same seq and gets them again.
func (b *Inbox) Take(ctx context.Context, jobID string, after int64) ([]workport.InboxLine, error) {
	// Nearly every renewal finds nothing: a read without a transaction.
	lines, fresh, err := read(ctx, b.db.R, jobID, after)
	if err != nil || !fresh {
		return lines, err
	}
	err = b.db.Tx(ctx, func(tx *db.Tx) error {
		ids, err := take(ctx, tx, jobID, after, b.clock.Now())
		if err != nil {
			return err
		}
		// Read in the same transaction: a line withdrawn meanwhile is not
		// handed out.
		if lines, _, err = read(ctx, tx, jobID, after); err != nil {
			return err
		}
		if len(ids) == 0 || b.react == nil {
			return nil
		}
		return b.react.MessagesTaken(ctx, tx, ids)
	})
	return lines, err
}

// Waiting lists the running jobs a worker holds whose agents have lines no
// worker has taken for at least settle (their nudge may have been missed:
// lines younger than that are on their way). recheck, when not zero, is how
// soon a younger line becomes that old.
func (b *Inbox) Waiting(ctx context.Context, owner string, settle time.Duration) (jobs []string, recheck time.Duration, err error) {
	untaken, err := oldestUntaken(ctx, b.db, owner)
	if err != nil {
		return nil, 0, err
	}
	now := b.clock.Now()
	for _, u := range untaken {
		if age := now.Sub(u.oldest); age >= settle {
			jobs = append(jobs, u.job)
		} else if left := settle - age; recheck == 0 || left < recheck {
			recheck = left
		}
	}
	return jobs, recheck, nil
}

// Taken is the last line of a job that a worker has taken (0 for none), read
// in q: a new attempt's agent starts after it.
func (b *Inbox) Taken(ctx context.Context, q db.Queryer, jobID string) (int64, error) {
	return lastTaken(ctx, q, jobID)
}
