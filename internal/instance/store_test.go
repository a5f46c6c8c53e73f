package instance_test

import (
	"context"
	"testing"
	"time"

	"slipway/internal/instance"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

func TestRecordBoot(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e)
		clk := clock.NewFake(time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC))

		b, err := instance.RecordBoot(ctx, d, "v1.0.0", clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !b.First || b.PreviousVersion != "" || !b.FirstBootAt.Equal(clk.Now()) {
			t.Fatalf("first boot = %+v", b)
		}

		first := clk.Now()
		clk.Advance(time.Hour)
		b, err = instance.RecordBoot(ctx, d, "v1.1.0", clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if b.First || b.PreviousVersion != "v1.0.0" || !b.FirstBootAt.Equal(first) {
			t.Fatalf("second boot = %+v", b)
		}

		b, err = instance.RecordBoot(ctx, d, "v1.1.0", clk.Now())
		if err != nil || b.PreviousVersion != "v1.1.0" {
			t.Fatalf("third boot = %+v, %v", b, err)
		}
	})
}
