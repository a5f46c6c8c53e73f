// Package migrations embeds the SQL migrations: one directory per engine,
// the same version numbers in both.
package migrations

import "embed"

// FS holds sqlite/*.sql and postgres/*.sql.
//
//go:embed sqlite/*.sql postgres/*.sql
var FS embed.FS
