package mail_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"slipway/internal/mail"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/vault"
)

// TestPruneOldMail: sent and failed mail leaves the outbox after KeepFor;
// mail still queued stays, whatever its age.
func TestPruneOldMail(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, engine db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, engine)
		clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		sealer, err := vault.NewSealer([]byte(strings.Repeat("s", 32)))
		if err != nil {
			t.Fatal(err)
		}
		o := mail.New(d, clk, sealer, mail.SMTP{}, slog.New(slog.DiscardHandler)) // no server: mail is logged and counts as sent
		queue := func(to string) {
			t.Helper()
			if err := d.Tx(ctx, func(tx *db.Tx) error {
				return o.Queue(ctx, tx, to, mail.TemplateReset, map[string]string{"name": "Ann", "link": "https://example.test/r"})
			}); err != nil {
				t.Fatal(err)
			}
		}
		queue("sent@example.test")
		queue("failed@example.test")
		if n, err := o.Send(ctx); err != nil || n != 2 {
			t.Fatalf("Send = %d, %v", n, err)
		}
		if _, err := d.W.ExecContext(ctx, `UPDATE mail_outbox SET status = 'failed' WHERE to_addr = 'failed@example.test'`); err != nil {
			t.Fatal(err)
		}
		queue("queued@example.test") // never sent
		left := func() []string {
			t.Helper()
			rows, err := d.R.QueryContext(ctx, `SELECT to_addr FROM mail_outbox ORDER BY to_addr`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				out = append(out, strings.TrimSuffix(s, "@example.test"))
			}
			return out
		}
		clk.Advance(mail.KeepFor - time.Hour)
		if n, err := o.Prune(ctx); err != nil || n != 0 {
			t.Fatalf("Prune before KeepFor = %d, %v", n, err)
		}
		clk.Advance(2 * time.Hour)
		if n, err := o.Prune(ctx); err != nil || n != 2 {
			t.Fatalf("Prune after KeepFor = %d, %v", n, err)
		}
		if got := strings.Join(left(), ","); got != "queued" {
			t.Fatalf("left in the outbox: %s", got)
		}
	})
}
