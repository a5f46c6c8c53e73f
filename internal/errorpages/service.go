package errorpages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
)

// Deps are what the service works with.
type Deps struct {
	DB    *db.DB
	Clock clock.Clock
}

// Service keeps the workspace and instance error pages and resolves the
// page an app shows.
type Service struct {
	Deps
}

// NewService returns the error pages service.
func NewService(d Deps) *Service { return &Service{Deps: d} }

// Audit actions and their targets.
const (
	ActionWorkspace = "error_page.workspace"
	ActionInstance  = "error_page.instance"
	// InstanceTarget is the target id of the instance default's entries.
	InstanceTarget = "default"
)

// Check validates a page as sent and returns it compacted, as it is
// stored: a JSON object of at most MaxPageBytes, UTF-8, no control
// characters but tab and newline in its strings (keys included), and the
// keys the renderer knows, when present, strings within their bounds.
// Other keys are kept and never read. The apps package checks an app's
// own page with it too.
func Check(raw json.RawMessage) (json.RawMessage, error) {
	if !utf8.Valid(raw) {
		return nil, apperr.BadRequest("the page must be UTF-8 text")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, apperr.BadRequest("the page is not valid JSON: %v", err)
	}
	if buf.Len() > MaxPageBytes {
		return nil, apperr.BadRequest("the page must be at most %d bytes of JSON (without spaces between tokens), it has %d", MaxPageBytes, buf.Len())
	}
	page := json.RawMessage(buf.Bytes())
	dec := json.NewDecoder(bytes.NewReader(page))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, apperr.BadRequest("the page is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, apperr.BadRequest("the page must be one JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, apperr.BadRequest("the page must be a JSON object, not %s", kindOf(v))
	}
	if where, r, found := control(v, ""); found {
		return nil, apperr.BadRequest("the page must not hold control characters other than tab and newline: U+%04X in %s", r, where)
	}
	for _, k := range known {
		val, present := obj[k.key]
		if !present {
			continue
		}
		s, ok := val.(string)
		if !ok {
			return nil, apperr.BadRequest("%s must be a string, not %s", k.key, kindOf(val))
		}
		if n := utf8.RuneCountInString(s); n > k.max {
			return nil, apperr.BadRequest("%s must be at most %d characters, it has %d", k.key, k.max, n)
		}
	}
	return page, nil
}

// kindOf names a decoded JSON value's type for an error message.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// control finds a control character other than tab and newline in the
// strings and keys of v, and says where (a path like links[2].label).
func control(v any, path string) (string, rune, bool) {
	bad := func(s string) (rune, bool) {
		for _, r := range s {
			if r != '\t' && r != '\n' && unicode.IsControl(r) {
				return r, true
			}
		}
		return 0, false
	}
	name := func(p string) string {
		if p == "" {
			return "the page"
		}
		return p
	}
	switch t := v.(type) {
	case string:
		if r, ok := bad(t); ok {
			return name(path), r, true
		}
	case []any:
		for i, e := range t {
			if w, r, ok := control(e, fmt.Sprintf("%s[%d]", path, i)); ok {
				return w, r, true
			}
		}
	case map[string]any:
		for k, e := range t {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if r, ok := bad(k); ok {
				return "a key of " + name(path), r, true
			}
			if w, r, ok := control(e, p); ok {
				return w, r, true
			}
		}
	}
	return "", 0, false
}

// isEmpty is true for "no page": nothing, null, or an object without keys.
func isEmpty(page json.RawMessage) bool {
	t := bytes.TrimSpace(page)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return true
	}
	var obj map[string]json.RawMessage
	return json.Unmarshal(t, &obj) == nil && len(obj) == 0
}

// orEmpty is the stored page, or {} when none is.
func orEmpty(page json.RawMessage) json.RawMessage {
	if page == nil {
		return emptyPage()
	}
	return page
}

// canEdit: a workspace's page is its owner's or admin's to change.
func canEdit(ws *actor.Workspace) error {
	if ws == nil || (ws.Role != "owner" && ws.Role != "admin") {
		return apperr.New(apperr.CodeForbidden, "only the workspace's owner or admin may change its error page")
	}
	return nil
}

// Workspace is the workspace's page, {} when none is set.
func (s *Service) Workspace(ctx context.Context, ws *actor.Workspace) (json.RawMessage, error) {
	page, err := workspacePage(ctx, s.DB.R, ws.ID)
	return orEmpty(page), err
}

// SetWorkspace replaces the workspace's page with raw (no merge); {}
// clears it. The change is audited with the page before and after.
func (s *Service) SetWorkspace(ctx context.Context, ws *actor.Workspace, u *actor.User, raw json.RawMessage) (json.RawMessage, error) {
	if err := canEdit(ws); err != nil {
		return nil, err
	}
	page, err := Check(raw)
	if err != nil {
		return nil, err
	}
	none := isEmpty(page)
	if none {
		page = emptyPage()
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := s.DB.Dialect.XactLock(ctx, tx, "error-page:"+ws.ID); err != nil {
			return err
		}
		before, err := workspacePage(ctx, tx, ws.ID)
		if err != nil {
			return err
		}
		if bytes.Equal(orEmpty(before), page) {
			return nil // nothing changes: nothing to write or audit
		}
		now := s.Clock.Now()
		if none {
			err = deleteWorkspacePage(ctx, tx, ws.ID)
		} else {
			err = putWorkspacePage(ctx, tx, ws.ID, string(page), u.ID, now)
		}
		if err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, ActionWorkspace, "workspace", ws.ID, orEmpty(before), page)
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// Instance is the instance default page, {} when none is set.
func (s *Service) Instance(ctx context.Context) (json.RawMessage, error) {
	page, err := instancePage(ctx, s.DB.R)
	return orEmpty(page), err
}

// SetInstance replaces the instance default page with raw (no merge); {}
// clears it. The caller is an instance admin (the handler checks); the
// change is audited with the page before and after.
func (s *Service) SetInstance(ctx context.Context, u *actor.User, raw json.RawMessage) (json.RawMessage, error) {
	page, err := Check(raw)
	if err != nil {
		return nil, err
	}
	none := isEmpty(page)
	if none {
		page = emptyPage()
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := s.DB.Dialect.XactLock(ctx, tx, "error-page:instance"); err != nil {
			return err
		}
		before, err := instancePage(ctx, tx)
		if err != nil {
			return err
		}
		if bytes.Equal(orEmpty(before), page) {
			return nil
		}
		now := s.Clock.Now()
		if none {
			err = deleteInstancePage(ctx, tx)
		} else {
			err = putInstancePage(ctx, tx, string(page), u.ID, now)
		}
		if err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, ActionInstance, "instance", InstanceTarget, orEmpty(before), page)
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// Resolve picks the page an app of the workspace shows: the app's own
// page, else the workspace's, else the instance default, else the
// built-in page ({} with SourceDefault). An app page that is empty, {} or
// fails Check falls through: an error page must always have something to
// show. q may be the caller's transaction or a pool.
func (s *Service) Resolve(ctx context.Context, q db.Queryer, workspaceID string, appPage json.RawMessage) (*Resolved, error) {
	if !isEmpty(appPage) {
		if page, err := Check(appPage); err == nil {
			return &Resolved{Page: page, Source: SourceApp}, nil
		}
	}
	page, err := workspacePage(ctx, q, workspaceID)
	if err != nil {
		return nil, err
	}
	if !isEmpty(page) {
		return &Resolved{Page: page, Source: SourceWorkspace}, nil
	}
	if page, err = instancePage(ctx, q); err != nil {
		return nil, err
	}
	if !isEmpty(page) {
		return &Resolved{Page: page, Source: SourceInstance}, nil
	}
	return &Resolved{Page: emptyPage(), Source: SourceDefault}, nil
}
