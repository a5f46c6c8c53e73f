package apps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// AppMigration is a migration of an app's database: immutable once
// recorded under its name.
type AppMigration struct {
	Name      string     `json:"name"`
	SQL       string     `json:"sql"`
	Checksum  string     `json:"checksum" doc:"Hex SHA-256 of the SQL"`
	AppliedAt *time.Time `json:"applied_at" nullable:"true" doc:"When a deploy applied it; null until then"`
	CreatedAt time.Time  `json:"created_at"`
}

// AppMigrationCreate records a migration.
type AppMigrationCreate struct {
	Name string `json:"name" minLength:"1" maxLength:"100" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Unique in the app; migrations apply in the order they were recorded"`
	SQL  string `json:"sql" minLength:"1" maxLength:"102400"`
}

// MaxMigrations bounds an app's migrations.
const MaxMigrations = 500

func checksum(sqlText string) string {
	sum := sha256.Sum256([]byte(sqlText))
	return hex.EncodeToString(sum[:])
}

// Migrations lists the app's migrations, oldest first.
func (s *Service) Migrations(ctx context.Context, ws *actor.Workspace, id string) ([]AppMigration, error) {
	var out []AppMigration
	err := s.readApp(ctx, ws, id, func(q db.Queryer) (err error) {
		out, err = listMigrations(ctx, q, ws.ID, id)
		return err
	})
	return out, err
}

// AddMigration records a migration; it applies at the next deploy of a
// release built after it. The same name with the same SQL changes nothing
// (created false); the same name with other SQL is refused.
func (s *Service) AddMigration(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in AppMigrationCreate) (*AppMigration, bool, error) {
	if !ids.Valid(id) {
		return nil, false, notFound
	}
	if strings.IndexByte(in.SQL, 0) >= 0 {
		return nil, false, apperr.BadRequest("sql must not contain NUL characters")
	}
	if strings.TrimSpace(in.SQL) == "" {
		return nil, false, apperr.BadRequest("sql must not be empty")
	}
	if s.dbs.engine == db.SQLite {
		if kw := sqliteForbidden(in.SQL); kw != "" {
			return nil, false, apperr.BadRequest("sql: %s statements are not allowed in an app's database", kw)
		}
	}
	m := &AppMigration{Name: in.Name, SQL: in.SQL, Checksum: checksum(in.SQL), CreatedAt: s.Clock.Now()}
	created := false
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := lockApp(ctx, tx, s.DB.Dialect, ws.ID, id); err != nil {
			return err
		}
		old, err := getMigration(ctx, tx, ws.ID, id, in.Name)
		if err != nil {
			return err
		}
		if old != nil {
			if old.Checksum != m.Checksum {
				return apperr.BadRequest("name: migration %s is recorded with other SQL (checksum %.12s…): a migration never changes; record a new one", in.Name, old.Checksum)
			}
			*m = *old
			return nil
		}
		n, err := countMigrations(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if n >= MaxMigrations {
			return apperr.BadRequest("an app holds at most %d migrations", MaxMigrations)
		}
		if err := insertMigration(ctx, tx, ws.ID, id, int64(n)+1, m); err != nil {
			return err
		}
		created = true
		return audit.Record(ctx, tx, m.CreatedAt, u.ID, "app.migration", "app", id, nil, map[string]string{"name": m.Name, "checksum": m.Checksum})
	})
	if err != nil {
		return nil, false, err
	}
	return m, created, nil
}

// applyPending applies to the app's database, in order, the migrations
// the release expects that are not applied yet, each in a transaction of
// its own recorded inside that database, then stamps them applied here.
// The app's database is made at its first deploy.
func (s *Service) applyPending(ctx context.Context, ws *actor.Workspace, id string, pending []migrationRef) error {
	l := s.dbs.lock(id)
	l.Lock()
	defer l.Unlock()
	if err := s.dbs.provision(ctx, id); err != nil {
		return apperr.Wrap(apperr.CodeConflict, err, "the app's database could not be made: %v", err)
	}
	for _, p := range pending {
		m, err := getMigration(ctx, s.DB.R, ws.ID, id, p.Name)
		if err != nil {
			return err
		}
		if m == nil || m.Checksum != p.Checksum {
			return apperr.New(apperr.CodeConflict, "migration %s is not recorded as the release expects it", p.Name)
		}
		if err := s.dbs.migrate(ctx, id, p, m.SQL); err != nil {
			return err
		}
		err = s.DB.Tx(ctx, func(tx *db.Tx) error {
			return markApplied(ctx, tx, ws.ID, id, p.Name, s.Clock.Now())
		})
		if err != nil {
			return err
		}
	}
	return nil
}
