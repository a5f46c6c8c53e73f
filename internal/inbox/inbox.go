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
	"strconv"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/pubsub"
	"slipway/internal/runs"
	"slipway/internal/workport"
)

// Inbox stores the lines for agents.
type Inbox struct {
	db    *db.DB
	bus   *pubsub.Bus
	clock clock.Clock
	react Reactions // nil: no other domain reacts
}

// Reactions are what other domains do when an agent's model has read its
// messages (the composition root lists who reacts).
type Reactions interface {
	// MessagesSeen is told, inside the transaction that records the
	// agent's "seen" line, which messages the model has read (their ids as
	// given to Post); it may hear of a message more than once.
	MessagesSeen(ctx context.Context, tx *db.Tx, messageIDs []string) error
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
	if err == nil && messageID != "" {
		// A message carries its line's number: the agent says it back once
		// its model has read the message (Seen).
		raw, err = withSeq(raw, seq)
	}
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
		// Taken is not delivered: a message is delivered when the model
		// has read it (AgentReported).
		if err := take(ctx, tx, jobID, after, b.clock.Now()); err != nil {
			return err
		}
		// Read in the same transaction: a line withdrawn meanwhile is not
		// handed out.
		var err error
		lines, _, err = read(ctx, tx, jobID, after)
		return err
	})
	return lines, err
}

// withSeq adds "seq" to a JSON object line.
func withSeq(raw []byte, seq int64) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("inbox: a message line must be a JSON object: %w", err)
	}
	obj["seq"] = json.RawMessage(strconv.FormatInt(seq, 10))
	return json.Marshal(obj)
}

// AgentReported reads the "seen" lines of a job's agent (runs.Reactions):
// the messages up to the line it names are delivered, in the transaction
// that stores the line.
func (b *Inbox) AgentReported(ctx context.Context, tx *db.Tx, jobID string, evs []runs.NewEvent) error {
	var upTo int64
	for _, e := range evs {
		var s protocol.Seen
		if e.Type == protocol.OutSeen && json.Unmarshal(e.Payload, &s) == nil {
			upTo = max(upTo, s.Seq)
		}
	}
	if upTo == 0 || jobID == "" || b.react == nil {
		return nil
	}
	ids, err := messagesUpTo(ctx, tx, jobID, upTo)
	if err != nil || len(ids) == 0 {
		return err
	}
	return b.react.MessagesSeen(ctx, tx, ids)
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
