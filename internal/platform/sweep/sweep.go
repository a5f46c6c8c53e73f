// Package sweep runs a periodic pass (timing out approvals, running due
// undo actions, pruning expired sign-in records) until its context ends,
// logging what each pass did and counting it for /metrics (by the name
// the log gives it).
package sweep

import (
	"context"
	"log/slog"
	"time"

	"slipway/internal/platform/telemetry"
)

// Every runs pass every interval until ctx ends. A pass reports how many
// things it handled; what names them in the log.
func Every(ctx context.Context, every time.Duration, log *slog.Logger, what string, pass func(context.Context) (int, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			began := time.Now()
			n, err := pass(ctx)
			if ctx.Err() != nil {
				return
			}
			telemetry.SweepPassed(what, n, time.Since(began), err)
			if err != nil {
				log.Error("sweep failed", "what", what, "err", err)
			} else if n > 0 {
				log.Info("sweep", "what", what, "count", n)
			}
		}
	}
}
