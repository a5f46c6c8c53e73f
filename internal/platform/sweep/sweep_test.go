package sweep

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"slipway/internal/platform/telemetry"
)

// TestEveryCounts checks that each pass is counted for /metrics by the
// sweep's name: passes by outcome, what they handled, their duration and
// the last success.
func TestEveryCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(telemetry.Collectors()...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	passes := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, slog.New(slog.DiscardHandler), "test things pruned", func(context.Context) (int, error) {
			passes++
			switch passes {
			case 1:
				return 3, nil
			case 2:
				return 0, errors.New("the database went away")
			}
			cancel()
			return 0, nil
		})
	}()
	<-done
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				got[key] = float64(m.GetHistogram().GetSampleCount())
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			}
		}
	}
	for key, want := range map[string]float64{
		"slipway_sweep_passes_total,outcome=ok,sweep=test things pruned":    1, // the third pass ended with the context: not counted
		"slipway_sweep_passes_total,outcome=error,sweep=test things pruned": 1,
		"slipway_sweep_duration_seconds,sweep=test things pruned":           2,
		"slipway_sweep_items_total,sweep=test things pruned":                3,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
	if got["slipway_sweep_last_success_timestamp_seconds,sweep=test things pruned"] < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("no recent last success: %v", got)
	}
}
