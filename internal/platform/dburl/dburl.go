// Package dburl names a database to open: its engine and where it is,
// parsed from DATABASE_URL. It imports no driver, so a program that only
// reads configuration (a runner) carries none; package db re-exports its
// names.
package dburl

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Engine names a supported database engine.
type Engine string

const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
)

// Target says which database to open: a SQLite file or a PostgreSQL URL.
type Target struct {
	Engine Engine
	// Path is the SQLite database file.
	Path string
	// URL is the PostgreSQL connection string.
	URL string
	// PoolSize bounds the PostgreSQL connections of this process (0:
	// DefaultPoolSize).
	PoolSize int
}

// String describes the target without credentials, for logs.
func (t Target) String() string {
	if t.Engine == SQLite {
		return "sqlite:" + t.Path
	}
	return "postgres:" + redactURL(t.URL)
}

// DefaultFile is the SQLite file name inside the data directory.
const DefaultFile = "slipway.db"

// ParseURL interprets DATABASE_URL: empty means SQLite in dataDir;
// postgres:// and postgresql:// mean PostgreSQL; sqlite: and file: mean SQLite
// at the given path. Anything else is an error.
func ParseURL(raw, dataDir string) (Target, error) {
	switch {
	case raw == "":
		return Target{Engine: SQLite, Path: filepath.Join(dataDir, DefaultFile)}, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return Target{Engine: Postgres, URL: raw}, nil
	case strings.HasPrefix(raw, "sqlite:"), strings.HasPrefix(raw, "file:"):
		path := raw[strings.Index(raw, ":")+1:]
		path = strings.TrimPrefix(path, "//")
		if strings.ContainsRune(path, '?') {
			return Target{}, fmt.Errorf("SQLite URLs take a path only (Slipway sets the pragmas itself)")
		}
		if path == "" || path == ":memory:" {
			return Target{}, fmt.Errorf("SQLite URL needs a file path")
		}
		return Target{Engine: SQLite, Path: path}, nil
	}
	scheme := raw
	if i := strings.Index(raw, ":"); i >= 0 {
		scheme = raw[:i]
	} else {
		scheme = "(none)"
	}
	return Target{}, fmt.Errorf("unsupported scheme %q: use a postgres://, postgresql://, sqlite: or file: URL", scheme)
}

// redactURL hides the password of a URL-form connection string.
func redactURL(raw string) string {
	at := strings.LastIndex(raw, "@")
	scheme := strings.Index(raw, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return raw
	}
	userinfo := raw[scheme+3 : at]
	if i := strings.Index(userinfo, ":"); i >= 0 {
		return raw[:scheme+3] + userinfo[:i] + ":xxxxx" + raw[at:]
	}
	return raw
}
