package resources

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The db_query and db_execute nodes: one parameterised statement against a
// postgresql resource, through a small pool per resource (kept while the
// resource's address, user and secret stay the same), connections dialled
// through the SSRF guard.

const (
	// DefaultMaxRows and MaxRows bound the rows a db_query returns.
	DefaultMaxRows = 1000
	MaxRows        = 10000
	// maxResultBytes bounds a result's JSON; rows past it are cut off.
	maxResultBytes = 1 << 20
	// DefaultStatementTimeout bounds a statement without its own timeout.
	DefaultStatementTimeout = 30 * time.Second
	// maxPools bounds the pools kept (the least recently used closes).
	maxPools = 64
	// connsPerPool bounds one resource's connections from one server.
	connsPerPool = 4
)

type poolEntry struct {
	key  string
	pool *pgxpool.Pool
	used time.Time
}

// pools are the open pools by resource id.
type pools struct {
	mu sync.Mutex
	m  map[string]*poolEntry
}

// Statement is one db_query or db_execute.
type Statement struct {
	SQL     string
	Params  []any
	Write   bool // db_execute: a read-write transaction, rows_affected out
	MaxRows int
	Timeout time.Duration
}

// Statement runs a statement against a postgresql resource of the workspace.
func (s *Service) Statement(ctx context.Context, workspaceID, resourceID string, st Statement) (any, error) {
	c, red, err := s.use(ctx, workspaceID, resourceID, "postgresql")
	if err != nil {
		return nil, err
	}
	pool, err := s.pool(ctx, c)
	if err != nil {
		return nil, failure(red, "postgresql %q: %v", c.Resource.Name, err)
	}
	if st.Timeout <= 0 {
		st.Timeout = DefaultStatementTimeout
	}
	if st.MaxRows <= 0 {
		st.MaxRows = DefaultMaxRows
	}
	st.MaxRows = min(st.MaxRows, MaxRows)
	ctx, cancel := context.WithTimeout(ctx, st.Timeout+5*time.Second)
	defer cancel()
	out, err := RunStatement(ctx, pool, st)
	if err != nil {
		return nil, failure(red, "postgresql %q: %s", c.Resource.Name, pgFailure(err))
	}
	return out, nil
}

// pgFailure is a statement's failure as the database says it.
func pgFailure(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg := pe.Severity + ": " + pe.Message + " (SQLSTATE " + pe.Code + ")"
		if pe.Code == "25006" {
			msg += "; db_query runs read-only: use db_execute to change data"
		}
		return msg
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the statement timed out"
	}
	return err.Error()
}

// Collect reads up to max rows as objects of JSON values.
func Collect(rows pgx.Rows, max int) (map[string]any, error) {
	fields := rows.FieldDescriptions()
	cols := make([]string, len(fields))
	for i, f := range fields {
		cols[i] = f.Name
	}
	out := []map[string]any{}
	size, truncated := 0, false
	for rows.Next() {
		if len(out) == max {
			truncated = true
			break
		}
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		row := make(map[string]any, len(vals))
		for i, v := range vals {
			row[cols[i]] = jsonValue(v, fields[i].DataTypeOID)
		}
		b, _ := json.Marshal(row)
		if size += len(b); size > maxResultBytes {
			truncated = true
			break
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return map[string]any{"rows": out, "row_count": len(out), "columns": cols, "truncated": truncated}, nil
}

// jsonValue turns a value pgx decoded into one JSON shows as people expect.
func jsonValue(v any, oid uint32) any {
	switch x := v.(type) {
	case nil:
		return nil
	case [16]byte:
		if oid == pgtype.UUIDOID {
			return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
		}
	case []byte:
		return hex.EncodeToString(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case pgtype.Numeric:
		if f, err := x.Float64Value(); err == nil && f.Valid {
			return f.Float64
		}
		return nil
	case net.IP, pgtype.Interval, pgtype.Time:
		return fmt.Sprint(x)
	}
	if _, err := json.Marshal(v); err != nil {
		return fmt.Sprint(v)
	}
	return v
}

// pool is the resource's pool, opened anew when its address, user or
// secret changed.
func (s *Service) pool(ctx context.Context, c *Connection) (*pgxpool.Pool, error) {
	cfg, err := decode[PostgreSQLConfig](configMap(c.Resource))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(string(c.Resource.Config) + "\x00" + c.Secret + "\x00" + c.searchPath))
	key := hex.EncodeToString(sum[:])
	p := &s.pools
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*poolEntry{}
	}
	slot := c.Resource.ID + "\x00" + c.searchPath // the resource's user, or a workspace's role
	if e := p.m[slot]; e != nil {
		if e.key == key {
			e.used = time.Now()
			return e.pool, nil
		}
		e.pool.Close()
		delete(p.m, slot)
	}
	if len(p.m) >= maxPools {
		var oldest string
		for id, e := range p.m {
			if oldest == "" || e.used.Before(p.m[oldest].used) {
				oldest = id
			}
		}
		p.m[oldest].pool.Close()
		delete(p.m, oldest)
	}
	pc, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	port := cfg.Port
	if port == 0 {
		port = 5432
	}
	cc := pc.ConnConfig
	cc.Host, cc.Port, cc.Database, cc.User, cc.Password = cfg.Host, uint16(port), cfg.Database, cfg.User, c.Secret
	cc.ConnectTimeout = 10 * time.Second
	cc.RuntimeParams = map[string]string{"application_name": "slipway"}
	if c.searchPath != "" {
		cc.RuntimeParams["search_path"] = c.searchPath
	}
	cc.Fallbacks = nil
	if err := tlsFor(cc, cfg.SSLMode); err != nil {
		return nil, err
	}
	cc.DialFunc = s.Outbound.DialContext
	cc.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil } // the guarded dialer resolves and checks
	pc.MaxConns, pc.MinConns = connsPerPool, 0
	pc.MaxConnIdleTime = 5 * time.Minute
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), pc)
	if err != nil {
		return nil, err
	}
	p.m[slot] = &poolEntry{key: key, pool: pool, used: time.Now()}
	return pool, nil
}

// dropPool closes a resource's pools (it changed or went away).
func (s *Service) dropPool(id string) {
	p := &s.pools
	p.mu.Lock()
	defer p.mu.Unlock()
	for slot, e := range p.m {
		if strings.HasPrefix(slot, id+"\x00") {
			e.pool.Close()
			delete(p.m, slot)
		}
	}
}

// tlsFor sets the connection's TLS as sslmode says (default require):
// require encrypts without checking the certificate (libpq's meaning),
// verify-ca and verify-full check it against the system's roots (and the
// host name: verify-ca is held to verify-full's standard).
func tlsFor(cc *pgx.ConnConfig, mode string) error {
	switch mode {
	case "disable":
		cc.TLSConfig = nil
	case "", "require":
		cc.TLSConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // sslmode=require does not verify, as in libpq
	case "verify-ca", "verify-full":
		cc.TLSConfig = &tls.Config{ServerName: cc.Host, MinVersion: tls.VersionTLS12}
	default:
		return fmt.Errorf("sslmode %q is not supported", mode)
	}
	return nil
}
