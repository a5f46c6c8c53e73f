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
	if t, ok := parseOurs(s); ok {
		return &t, nil
	}
	for _, layout := range sqliteLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			u := t.UTC()
			return &u, nil
		}
	}
	return nil, fmt.Errorf("db: unrecognised timestamp %q", s)
}

// parseOurs parses what Slipway writes to SQLite, "2006-01-02
// 15:04:05.999999999+00:00" (or with a Z), without time.Parse's layout
// interpretation: list endpoints read several timestamps per row, and the
// generic parser was a measurable share of their CPU.
func parseOurs(s string) (time.Time, bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	rest := s[19:]
	nsec := 0
	if len(rest) > 0 && rest[0] == '.' {
		i := 1
		scale := 100_000_000
		for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
			if scale > 0 {
				nsec += int(rest[i]-'0') * scale
				scale /= 10
			}
		}
		if i == 1 {
			return time.Time{}, false
		}
		rest = rest[i:]
	}
	if rest != "Z" && rest != "+00:00" && rest != "" {
		return time.Time{}, false // another offset: the generic layouts handle it
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day {
		return time.Time{}, false // 31 February and friends
	}
	return t, true
}

// Null is s as a statement argument: NULL when empty.
func Null(s string) any {
	if s == "" {
		return nil
	}
	return s
}
