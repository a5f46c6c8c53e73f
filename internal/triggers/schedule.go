package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; a minimal machine may lack the database

	"github.com/robfig/cron/v3"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// schedule is a parsed schedule configuration.
type schedule struct {
	cron     cron.Schedule
	loc      *time.Location
	interval time.Duration
}

// parseSchedule checks a schedule's configuration.
func parseSchedule(c Config) (*schedule, error) {
	switch {
	case c.Cron != "" && c.IntervalSeconds != 0:
		return nil, apperr.BadRequest("config: a schedule has cron or interval_seconds, not both")
	case c.IntervalSeconds != 0:
		if c.Timezone != "" {
			return nil, apperr.BadRequest("config.timezone applies to cron schedules")
		}
		return &schedule{interval: time.Duration(c.IntervalSeconds) * time.Second}, nil
	case c.Cron == "":
		return nil, apperr.BadRequest("config: a schedule needs cron or interval_seconds")
	}
	if err := printable("config.cron", c.Cron); err != nil {
		return nil, err
	}
	if strings.HasPrefix(c.Cron, "TZ=") || strings.HasPrefix(c.Cron, "CRON_TZ=") {
		return nil, apperr.BadRequest("config.cron: give the time zone in config.timezone")
	}
	sched, err := cronParser.Parse(c.Cron)
	if err != nil {
		return nil, apperr.BadRequest("config.cron %q: %v", c.Cron, err)
	}
	tz := c.Timezone
	if tz == "" {
		tz = "UTC"
	}
	if err := printable("config.timezone", tz); err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return nil, apperr.BadRequest("config.timezone %q is not an IANA time zone", tz)
	}
	return &schedule{cron: sched, loc: loc}, nil
}

// next is the first tick strictly after now. An interval schedule keeps its
// grid: from the tick it was due at, whole intervals on (so missed ticks
// are skipped, not caught up one by one).
func (s *schedule) next(from, now time.Time) time.Time {
	if s.interval > 0 {
		if !from.After(now) {
			from = from.Add(s.interval * time.Duration(now.Sub(from)/s.interval+1))
		}
		return from.UTC().Truncate(time.Second)
	}
	t := s.cron.Next(now.In(s.loc))
	if t.IsZero() {
		return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) // no tick ever (e.g. 30 February)
	}
	return t.UTC().Truncate(time.Second)
}

// first is a schedule's first tick after now (on creation, or when it is
// enabled or changed).
func (s *schedule) first(now time.Time) time.Time {
	if s.interval > 0 {
		return now.Add(s.interval).UTC().Truncate(time.Second)
	}
	return s.next(now, now)
}

// Fire starts a run for every schedule whose tick has come, as of the
// clock's now: one run per trigger however many ticks were missed (a
// server that was down fires once, never a burst). Each tick is claimed by
// moving the trigger's next tick on, in the transaction that starts the
// run, so one replica fires it and a crash fires it once or not at all.
func (s *Service) Fire(ctx context.Context) (int, error) {
	now := s.clock.Now().UTC()
	ts, err := due(ctx, s.db.R, now, 100)
	if err != nil {
		return 0, err
	}
	fired := 0
	for i := range ts {
		t := &ts[i]
		sched, err := parseSchedule(t.Config)
		if err != nil {
			s.log.Error("a stored schedule does not parse", "trigger_id", t.ID, "err", err)
			continue
		}
		next := sched.next(*t.NextFireAt, now)
		trigger, _ := json.Marshal(map[string]any{"kind": KindSchedule, "trigger_id": t.ID, "scheduled_for": t.NextFireAt, "fired_at": now})
		var runID string
		err = s.db.Tx(ctx, func(tx *db.Tx) error {
			ok, err := claimTick(ctx, tx, t, next, now)
			if err != nil || !ok {
				return err
			}
			started, err := s.workflows.StartRunTx(ctx, tx, t.workspaceID, t.createdBy, t.WorkflowID, t.Config.Input, trigger)
			if err == nil {
				runID = started.ID
			}
			return err
		})
		var ae *apperr.Error
		switch {
		case errors.As(err, &ae) && ae.Code == apperr.CodeNotFound:
			// The workflow went (its triggers with it).
		case err != nil:
			if ctx.Err() != nil {
				return fired, ctx.Err()
			}
			s.log.Error("firing a schedule failed", "trigger_id", t.ID, "err", err)
		case runID != "":
			fired++
			s.log.Debug("schedule fired", "trigger_id", t.ID, "run_id", runID, "scheduled_for", t.NextFireAt)
		}
	}
	return fired, nil
}

// Run fires schedules every second until ctx ends.
func (s *Service) Run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := s.Fire(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("firing schedules failed", "err", err)
			}
		}
	}
}
