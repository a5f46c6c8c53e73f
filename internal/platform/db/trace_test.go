package db_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/telemetry"
)

// TestSQLSpans checks the driver wrapper on both engines: statements run
// under a recording span become its children (plain, prepared, in a
// transaction, and the commit), with their SQL text and never their values;
// statements outside any span record nothing.
func TestSQLSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	telemetry.Use(tp)
	t.Cleanup(func() { telemetry.Use(nil) })
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		d := dbtest.New(t, e)
		ctx := context.Background()
		rec.Reset()
		if _, err := d.W.ExecContext(ctx, "CREATE TABLE traced (v TEXT)"); err != nil {
			t.Fatal(err)
		}
		if n := len(rec.Ended()); n != 0 {
			t.Fatalf("%d spans without a parent", n)
		}
		ctx, root := telemetry.Start(ctx, "root")
		const secret = "a-value-never-recorded"
		if _, err := d.W.ExecContext(ctx, "INSERT INTO traced (v) VALUES ($1)", secret); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := d.QueryRowPrepared(ctx, "SELECT v FROM traced WHERE v = $1", secret).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if err := d.Tx(ctx, func(tx *db.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE traced SET v = $1", "x")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		root.End()
		got := map[string]int{}
		for _, s := range rec.Ended() {
			if s.Name() == "root" {
				continue
			}
			if s.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Errorf("%s is not the root's child", s.Name())
			}
			var text string
			for _, a := range s.Attributes() {
				if strings.Contains(a.Value.Emit(), secret) {
					t.Errorf("%s records a value: %s", s.Name(), a.Value.Emit())
				}
				if a.Key == "db.query.text" {
					text = a.Value.AsString()
				}
			}
			got[s.Name()+" "+strings.Fields(text)[0]]++
		}
		commit := "db.commit COMMIT"
		if e == db.Postgres {
			commit = "db.pipeline COMMIT" // COMMIT travels in the transaction's last pipeline
		}
		for _, want := range []string{"db.exec INSERT", "db.query SELECT", "db.exec UPDATE", commit} {
			if got[want] == 0 {
				t.Errorf("no %q span: %v", want, got)
			}
		}
	})
}
