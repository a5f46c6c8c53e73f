package worker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"slipway/internal/agents/protocol"
	"slipway/internal/executor"
	"slipway/internal/workport"
)

// recover deals with what a previous process of this worker left when it
// died: its agents (removed; a container that ended meanwhile first gives
// back its result), the work it still held (published when its agent had
// finished, else reported interrupted so the hub runs it again) and stray
// worktrees.
func (w *Worker) recover(ctx context.Context) {
	held, err := w.port.Held(ctx, w.cfg.ID)
	if err != nil {
		// The rescuer takes the work back once its leases expire.
		w.log.Error("reading the work a previous process held failed", "err", err)
	}
	byRun := map[string]*workport.Assignment{}
	for i := range held {
		byRun[held[i].Lease.RunID] = &held[i]
	}

	leftovers, err := w.backend.Leftovers(ctx)
	if err != nil {
		w.log.Error("listing agents a previous process left failed", "backend", w.backend.Name(), "err", err)
	}
	var removed []string
	for _, l := range leftovers {
		a := byRun[l.Labels()[LabelRun]]
		if a != nil && a.Resume != nil && len(a.Resume.Result) == 0 {
			if code, ok := l.Exited(); ok {
				if res := w.readResult(ctx, l); res != nil {
					a.Resume.Result, a.Resume.ExitCode, a.Resume.Recovered = res, &code, true
				}
			}
		}
		if err := l.Remove(ctx); err != nil {
			w.log.Error("removing an agent a previous process left failed", "agent", l.ID(), "err", err)
			continue
		}
		desc := l.ID()
		if task := l.Labels()[LabelTask]; task != "" {
			desc += " (task " + task + ")"
		}
		removed = append(removed, desc)
	}
	if len(removed) > 0 || len(held) > 0 {
		w.log.Info("cleaned up after a previous process of this worker", "backend", w.backend.Name(),
			"removed_agents", removed, "held_work", len(held))
	}

	keep := map[string]bool{}
	for _, a := range held {
		if a.Agent != nil && a.Resume != nil && len(a.Resume.Result) > 0 {
			keep[a.Agent.TaskID] = true
		}
	}
	if stray, err := w.git.RemoveStrayWorktrees(ctx, keep); err != nil {
		w.log.Error("removing worktrees of finished work failed", "err", err)
	} else if len(stray) > 0 {
		w.log.Info("removed worktrees of work that is no longer here", "worktrees", stray)
	}
	// Script runs start from scratch: what the previous process wrote for
	// them goes.
	if w.cfg.ScratchDir != "" {
		if entries, err := os.ReadDir(w.cfg.ScratchDir); err == nil {
			for _, e := range entries {
				if err := os.RemoveAll(filepath.Join(w.cfg.ScratchDir, e.Name())); err != nil {
					w.log.Warn("removing a script directory a previous process left failed", "dir", e.Name(), "err", err)
				}
			}
		}
	}
	for _, a := range held {
		w.start(a)
	}
}

// readResult finds the result line in what a leftover agent wrote.
func (w *Worker) readResult(ctx context.Context, l executor.Leftover) json.RawMessage {
	out, err := l.Output(ctx)
	if errors.Is(err, executor.ErrNoOutput) {
		return nil
	}
	if err != nil {
		w.log.Warn("reading the output of an agent a previous process left failed", "agent", l.ID(), "err", err)
		return nil
	}
	defer out.Close()
	var result json.RawMessage
	if err := protocol.Lines(out, func(line []byte) error {
		if pe := protocol.ParseLine(line); pe.Type == protocol.OutResult {
			result = pe.Payload
		}
		return nil
	}); err != nil {
		w.log.Warn("reading the output of an agent a previous process left failed", "agent", l.ID(), "err", err)
		return nil
	}
	return result
}
