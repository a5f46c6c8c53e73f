package db

import (
	"fmt"
	"time"
)

// Timestamps are written in UTC (clock.Clock hands out UTC) and read back
// through UTC/NullUTC, which normalise whatever the driver returns: pgx gives
// timestamptz in the local zone, SQLite gives a time or, for computed
// columns, the stored text.

// UTC scans a NOT NULL timestamp into *t, in UTC.
func UTC(t *time.Time) *utcScanner { return &utcScanner{t: t} }

type utcScanner struct{ t *time.Time }

func (s *utcScanner) Scan(src any) error {
	v, err := parseTime(src)
	if err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("db: NULL in a NOT NULL timestamp")
	}
	*s.t = *v
	return nil
}

// NullUTC scans a nullable timestamp into **t (nil for NULL), in UTC.
func NullUTC(t **time.Time) *nullUTCScanner { return &nullUTCScanner{t: t} }

type nullUTCScanner struct{ t **time.Time }

func (s *nullUTCScanner) Scan(src any) error {
	v, err := parseTime(src)
	if err != nil {
		return err
	}
	*s.t = v
	return nil
}

// sqliteLayouts are the text forms SQLite may hand back: our writes
// (_time_format=sqlite) and CURRENT_TIMESTAMP.
var sqliteLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02",
}

func parseTime(src any) (*time.Time, error) {
	switch v := src.(type) {
	case nil:
		return nil, nil
	case time.Time:
		u := v.UTC()
		return &u, nil
	case string:
		return parseTimeText(v)
	case []byte:
		return parseTimeText(string(v))
	}
	return nil, fmt.Errorf("db: cannot scan %T into a timestamp", src)
}

func parseTimeText(s string) (*time.Time, error) {
	for _, layout := range sqliteLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			u := t.UTC()
			return &u, nil
		}
	}
	return nil, fmt.Errorf("db: unrecognised timestamp %q", s)
}
