package db

import "slipway/internal/platform/dburl"

// The names of a database target live in package dburl (no driver there,
// so configuration can name a database without linking one); they are
// re-exported here so that code opening databases needs one import.
type (
	Engine = dburl.Engine
	Target = dburl.Target
)

const (
	SQLite      = dburl.SQLite
	Postgres    = dburl.Postgres
	DefaultFile = dburl.DefaultFile
)

// ParseURL reads DATABASE_URL (dburl.ParseURL).
func ParseURL(raw, dataDir string) (Target, error) { return dburl.ParseURL(raw, dataDir) }
