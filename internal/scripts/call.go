package scripts

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/runs"
)

// ErrCallTimeout: a call's script did not end within its time; its run
// was cancelled.
var ErrCallTimeout = errors.New("scripts: the call ran past its time")

// CallFailed is a called script that ended without succeeding: how it
// ended, in its own words (redacted like its run's).
type CallFailed struct{ Reason string }

func (e *CallFailed) Error() string { return e.Reason }

// Call runs the workspace's script with that slug once, through the worker
// port like a standalone run (its run is listed with the script's), and
// waits for it: its output (the last line it printed, as JSON), a
// *CallFailed when it failed, ErrCallTimeout when it outlived timeout (it
// is cancelled then), apperr not found for no such script. A call is not
// retried: its caller waits for it.
func (s *Service) Call(ctx context.Context, workspaceID, slug string, input json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	if len(input) > maxInputBytes {
		return nil, apperr.BadRequest("input is larger than %d bytes", maxInputBytes)
	}
	runID := ids.New()
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		sc, err := scriptBySlug(ctx, tx, workspaceID, slug)
		if err != nil {
			return err
		}
		if err := s.runs.EnsureLog(ctx, tx, workspaceID, sc.ID); err != nil {
			return err
		}
		_, err = s.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: RunJob, WorkspaceID: workspaceID, Ref: runID, MaxAttempts: 1,
			Payload: runPayload{ScriptID: sc.ID, Version: sc.Version, Input: input, Timeout: timeout}})
		return err
	})
	if err != nil {
		return nil, err
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	wait := 5 * time.Millisecond
	for {
		r, err := s.runs.Get(ctx, nil, workspaceID, runID)
		if err != nil && !errors.Is(err, apperr.ErrNotFound) {
			return nil, err
		}
		if r != nil && runs.Terminal(r.Status) {
			var res result
			_ = json.Unmarshal(r.Result, &res)
			if r.Status != runs.Succeeded {
				reason := r.Error
				if reason == "" {
					reason = "the script " + r.Status
				}
				return nil, &CallFailed{Reason: reason}
			}
			return res.Output, nil
		}
		select {
		case <-ctx.Done():
			s.cancelCall(workspaceID, runID)
			return nil, ctx.Err()
		case <-deadline.C:
			s.cancelCall(workspaceID, runID)
			return nil, ErrCallTimeout
		case <-time.After(wait):
			wait = min(wait*2, 100*time.Millisecond)
		}
	}
}

// cancelCall cancels a call's job (queued: it never runs; running: its
// worker stops it), on its own context: the caller's may be gone.
func (s *Service) cancelCall(workspaceID, runID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.db.Tx(ctx, func(tx *db.Tx) error {
		_, err := s.queue.Cancel(ctx, tx, workspaceID, RunJob, runID)
		return err
	})
}
