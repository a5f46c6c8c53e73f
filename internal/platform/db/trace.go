package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"slipway/internal/platform/telemetry"
)

// openTraced opens a pool whose connections report each statement as a
// span under the span of its context (SQL text only: values are never
// recorded). Stores use the pools as they are (*sql.DB), so the driver is
// where every statement passes. A statement whose context carries no
// recording span (tracing off, background work) goes straight to the
// driver after one check.
func openTraced(driverName, dsn string) (*sql.DB, error) {
	probe, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	probe.Close() // sql.Open connects nothing: this only let us reach the driver
	var c driver.Connector
	if dc, ok := drv.(driver.DriverContext); ok {
		if c, err = dc.OpenConnector(dsn); err != nil {
			return nil, err
		}
	} else {
		c = dsnConnector{dsn: dsn, drv: drv}
	}
	system := "sqlite"
	if driverName == "pgx" {
		system = "postgresql"
	}
	return sql.OpenDB(tracedConnector{c: c, attr: attribute.String("db.system.name", system)}), nil
}

type dsnConnector struct {
	dsn string
	drv driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }

type tracedConnector struct {
	c    driver.Connector
	attr attribute.KeyValue
}

func (t tracedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := t.c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tracedConn{Conn: c, attr: t.attr}, nil
}

func (t tracedConnector) Driver() driver.Driver { return t.c.Driver() }

// Close closes the driver's connector when it holds resources (sql.DB
// calls it on Close).
func (t tracedConnector) Close() error {
	if c, ok := t.c.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// maxQueryText bounds the SQL text a span carries (a batched insert's text
// grows with its rows).
const maxQueryText = 2048

// span starts a client span for a statement, or returns nil when ctx has
// no recording span.
func startSQL(ctx context.Context, attr attribute.KeyValue, op, query string) (context.Context, trace.Span) {
	if !telemetry.Recording(ctx) {
		return ctx, nil
	}
	if len(query) > maxQueryText {
		query = query[:maxQueryText]
	}
	ctx, span, _ := telemetry.StartChild(ctx, op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attr, attribute.String("db.query.text", query)))
	return ctx, span
}

func endSQL(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil && !errors.Is(err, driver.ErrSkip) && !errors.Is(err, sql.ErrNoRows) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// tracedConn wraps a driver connection. It implements every optional
// interface database/sql asks for and answers driver.ErrSkip (the
// documented "not supported here") where the driver lacks one, so
// database/sql takes the same path it takes with the bare driver.
type tracedConn struct {
	driver.Conn
	attr attribute.KeyValue
}

var (
	_ driver.ConnPrepareContext = (*tracedConn)(nil)
	_ driver.ConnBeginTx        = (*tracedConn)(nil)
	_ driver.ExecerContext      = (*tracedConn)(nil)
	_ driver.QueryerContext     = (*tracedConn)(nil)
	_ driver.Pinger             = (*tracedConn)(nil)
	_ driver.SessionResetter    = (*tracedConn)(nil)
	_ driver.Validator          = (*tracedConn)(nil)
	_ driver.NamedValueChecker  = (*tracedConn)(nil)
)

func (c *tracedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &tracedStmt{Stmt: st, attr: c.attr, query: query}, nil
}

func (c *tracedConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *tracedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var tx driver.Tx
	var err error
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		tx, err = c.Conn.Begin() //nolint:staticcheck // the driver has nothing else
	}
	if err != nil || !telemetry.Recording(ctx) {
		return tx, err
	}
	return &tracedTx{Tx: tx, ctx: ctx, attr: c.attr}, nil
}

func (c *tracedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	ctx, span := startSQL(ctx, c.attr, "db.exec", query)
	res, err := e.ExecContext(ctx, query, args)
	endSQL(span, err)
	return res, err
}

func (c *tracedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	ctx, span := startSQL(ctx, c.attr, "db.query", query)
	rows, err := q.QueryContext(ctx, query, args)
	endSQL(span, err)
	return rows, err
}

func (c *tracedConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *tracedConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *tracedConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *tracedConn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.Conn.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// tracedStmt wraps a prepared statement (the hot reads run prepared).
type tracedStmt struct {
	driver.Stmt
	attr  attribute.KeyValue
	query string
}

var (
	_ driver.StmtExecContext   = (*tracedStmt)(nil)
	_ driver.StmtQueryContext  = (*tracedStmt)(nil)
	_ driver.NamedValueChecker = (*tracedStmt)(nil)
)

func (s *tracedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	ctx, span := startSQL(ctx, s.attr, "db.exec", s.query)
	var res driver.Result
	var err error
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		res, err = e.ExecContext(ctx, args)
	} else {
		var vals []driver.Value
		if vals, err = values(args); err == nil {
			res, err = s.Stmt.Exec(vals) //nolint:staticcheck // the driver has nothing else
		}
	}
	endSQL(span, err)
	return res, err
}

func (s *tracedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	ctx, span := startSQL(ctx, s.attr, "db.query", s.query)
	var rows driver.Rows
	var err error
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		rows, err = q.QueryContext(ctx, args)
	} else {
		var vals []driver.Value
		if vals, err = values(args); err == nil {
			rows, err = s.Stmt.Query(vals) //nolint:staticcheck // the driver has nothing else
		}
	}
	endSQL(span, err)
	return rows, err
}

func (s *tracedStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func values(args []driver.NamedValue) ([]driver.Value, error) {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, errors.New("db: the driver does not support named parameters")
		}
		out[i] = a.Value
	}
	return out, nil
}

// tracedTx reports the commit (on SQLite the write reaches the WAL there)
// under the span that began the transaction.
type tracedTx struct {
	driver.Tx
	ctx  context.Context
	attr attribute.KeyValue
}

func (t *tracedTx) Commit() error {
	_, span := startSQL(t.ctx, t.attr, "db.commit", "COMMIT")
	err := t.Tx.Commit()
	endSQL(span, err)
	return err
}
