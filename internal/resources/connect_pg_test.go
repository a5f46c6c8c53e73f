package resources_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"slipway/internal/platform/db/dbtest"
)

// pgRole creates a login role with a password on the test server and
// drops it when the test ends. The local server trusts loopback, so any
// password signs in: wrong credentials are shown with a wrong database.
func pgRole(t *testing.T, admin string) (name, password string, ssl bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connecting to %s: %v", dbtest.PostgresURLEnv, err)
	}
	defer conn.Close(context.Background())
	name, password = "slipway_probe_"+randomHex(6), "pg-"+randomHex(12)
	if _, err := conn.Exec(ctx, "CREATE ROLE "+name+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("dropping the role: %v", err)
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", name)
		if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+name); err != nil {
			t.Errorf("dropping the role: %v", err)
		}
	})
	var on string
	if err := conn.QueryRow(ctx, "SHOW ssl").Scan(&on); err != nil {
		t.Fatal(err)
	}
	return name, password, on == "on"
}

// TestPostgres: the test signs in to this machine's PostgreSQL.
func TestPostgres(t *testing.T) {
	admin := dbtest.RequirePostgres(t)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	role, password, ssl := pgRole(t, admin)
	p := newProbe(t, true)
	p.secret(password)
	host, port := hostPort(t, u.Host)
	cfg := func(database, sslmode string) obj {
		return obj{"host": host, "port": port, "database": database, "user": role, "sslmode": sslmode}
	}
	msg := p.test(p.add("postgresql", cfg("postgres", "disable"), password), true, "signed in to PostgreSQL ", "as "+role, "database postgres")
	if !strings.Contains(msg, "PostgreSQL 1") {
		t.Errorf("the message names no version: %s", msg)
	}
	p.test(p.add("postgresql", cfg("no_such_db_"+randomHex(4), "disable"), password), false, "refused", "does not exist", "3D000")
	if ssl {
		p.test(p.add("postgresql", cfg("postgres", "require"), password), true, "sslmode require")
	}
	// verify-full: the local server's certificate (a snake-oil one, or none
	// at all) is not one this machine trusts for 127.0.0.1.
	p.test(p.add("postgresql", cfg("postgres", "verify-full"), password), false, "could not connect")

	_, closed := hostPort(t, closedPort(t))
	p.test(p.add("postgresql", obj{"host": host, "port": closed, "database": "postgres", "user": role, "sslmode": "disable"}, password),
		false, "could not connect", "connection refused")

	// Without a password, or with a socket path for a host: 400.
	p.bad("POST", "/api/resources/"+p.add("postgresql", cfg("postgres", "disable"), "")+"/test", "password")
	p.bad("POST", "/api/resources/"+p.add("postgresql", obj{"host": "/var/run/postgresql", "database": "postgres", "user": role}, password)+"/test",
		"host name or address")
}
