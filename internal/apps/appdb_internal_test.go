package apps

import (
	"context"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

// TestOpenAppsBounded: a server keeps at most maxOpenApps apps' databases
// open; the least recently used closes, and opens again when it is used.
func TestOpenAppsBounded(t *testing.T) {
	a := newAppDatabases(dbtest.New(t, db.SQLite), []byte("secret"))
	ctx := context.Background()
	var apps []string
	for range maxOpenApps + 5 {
		id := ids.New()
		apps = append(apps, id)
		if err := a.migrate(ctx, id, migrationRef{Name: "1", Checksum: "c"}, "CREATE TABLE t (x INTEGER)"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // distinct last-use times
	}
	a.mu.Lock()
	open, first := len(a.sqlites), a.sqlites[apps[0]]
	a.mu.Unlock()
	if open != maxOpenApps || first != nil {
		t.Fatalf("%d open (want %d), the first still open: %v", open, maxOpenApps, first != nil)
	}
	out, err := a.run(ctx, apps[0], Statement{SQL: "SELECT COUNT(*) AS n FROM t", MaxRows: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("the evicted app's database does not open again: %v", err)
	}
	if n := out.(map[string]any)["row_count"]; n != 1 {
		t.Fatalf("read: %v", out)
	}
}
