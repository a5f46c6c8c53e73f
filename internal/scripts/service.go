package scripts

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/text"
	"slipway/internal/runs"
)

// Service implements scripts and their revisions, and runs them.
type Service struct {
	db    *db.DB
	clock clock.Clock
	runs  *runs.Service
	queue *jobs.Queue
	image string // the image scripts run in (the agent image)
}

// NewService builds the scripts service.
func NewService(d *db.DB, clk clock.Clock, r *runs.Service, q *jobs.Queue, image string) *Service {
	return &Service{db: d, clock: clk, runs: r, queue: q, image: image}
}

var slugPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

func cleanName(raw string) (string, error) { return text.Name("name", raw, MaxNameChars) }

func checkSlug(slug string) error {
	if !slugPattern.MatchString(slug) {
		return apperr.BadRequest("slug must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter")
	}
	return nil
}

func checkLanguage(lang string) error {
	if !slices.Contains(Languages, lang) {
		return apperr.BadRequest("language must be one of %s", strings.Join(Languages, ", "))
	}
	return nil
}

// checkSource: a script is any text (tabs, line breaks and other controls
// included) but NUL, which PostgreSQL cannot store.
func checkSource(src string) error {
	switch {
	case src == "":
		return apperr.BadRequest("source must not be empty")
	case len(src) > MaxSourceBytes:
		return apperr.BadRequest("source is too long: at most %d bytes", MaxSourceBytes)
	case strings.IndexByte(src, 0) >= 0:
		return apperr.BadRequest("source must not contain NUL characters")
	}
	return nil
}

// cleanDescription trims a description; a blank one is none. It may span
// lines (tabs and line breaks pass) but holds no other control or
// bidirectional-override characters, as names do not.
func cleanDescription(raw *string) (*string, error) {
	if raw == nil {
		return nil, nil
	}
	d := strings.TrimSpace(*raw)
	if d == "" {
		return nil, nil
	}
	if utf8.RuneCountInString(d) > MaxDescriptionChars {
		return nil, apperr.BadRequest("description is too long: at most %d characters", MaxDescriptionChars)
	}
	if err := text.CheckName("description", strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(d)); err != nil {
		return nil, err
	}
	return &d, nil
}

func userID(u *actor.User) *string {
	if u == nil {
		return nil
	}
	return &u.ID
}

// unique refuses a name or slug another script of the workspace has.
func unique(ctx context.Context, q db.Queryer, workspaceID, except, name, slug string) error {
	clash, err := taken(ctx, q, workspaceID, except, name, slug)
	switch {
	case err != nil:
		return err
	case clash == "slug":
		return apperr.BadRequest("slug %q is already used by another script in this workspace", slug)
	case clash == "name":
		return apperr.BadRequest("name %q is already used by another script in this workspace", name)
	}
	return nil
}

// uniqueViolation turns a unique-index failure (a concurrent create or
// rename won the race past the check) into the same 400.
func (s *Service) uniqueViolation(err error, name, slug string) error {
	if err != nil && s.db.Dialect.IsUniqueViolation(err) {
		return apperr.BadRequest("slug %q or name %q is already used by another script in this workspace", slug, name)
	}
	return err
}

// checkCreate validates a new script: the script it would be.
func (s *Service) checkCreate(u *actor.User, in ScriptCreate) (*Script, error) {
	name, err := cleanName(in.Name)
	if err != nil {
		return nil, err
	}
	if err := checkSlug(in.Slug); err != nil {
		return nil, err
	}
	if err := checkLanguage(in.Language); err != nil {
		return nil, err
	}
	if err := checkSource(in.Source); err != nil {
		return nil, err
	}
	desc, err := cleanDescription(in.Description)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	return &Script{ID: ids.New(), Name: name, Slug: in.Slug, Language: in.Language, Description: desc, Source: in.Source, Version: 1,
		CreatedAt: now, UpdatedAt: now, CreatedBy: userID(u)}, nil
}

// insertTx stores a new script with its first revision, in tx.
func (s *Service) insertTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, sc *Script) error {
	if err := unique(ctx, tx, ws.ID, "", sc.Name, sc.Slug); err != nil {
		return err
	}
	if err := insertScript(ctx, tx, ws.ID, sc); err != nil {
		return s.uniqueViolation(err, sc.Name, sc.Slug)
	}
	return insertRevision(ctx, tx, ws.ID, &revisionRow{ID: ids.New(), ScriptID: sc.ID,
		ScriptRevision: ScriptRevision{Version: 1, Language: sc.Language, Source: sc.Source, CreatedAt: sc.CreatedAt, CreatedBy: sc.CreatedBy}})
}

// Create validates and stores a script with its first revision.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, u *actor.User, in ScriptCreate) (*Script, error) {
	sc, err := s.checkCreate(u, in)
	if err != nil {
		return nil, err
	}
	if err := s.db.Tx(ctx, func(tx *db.Tx) error { return s.insertTx(ctx, tx, ws, sc) }); err != nil {
		return nil, err
	}
	return sc, nil
}

// InstallTx writes a script a marketplace install brings, in tx: a new
// one, or, given the id of the one an earlier version of the install
// made, a new revision of it (when its source or language changed).
func (s *Service) InstallTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, id string, in ScriptCreate) (*Script, error) {
	sc, err := s.checkCreate(u, in)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return sc, s.insertTx(ctx, tx, ws, sc)
	}
	cur, err := lockScript(ctx, tx, ws.ID, id)
	if err != nil {
		return nil, err
	}
	revised := cur.Source != sc.Source || cur.Language != sc.Language
	if !revised && cur.Name == sc.Name && cur.Slug == sc.Slug && equalDesc(cur.Description, sc.Description) {
		return cur, nil
	}
	if cur.Name != sc.Name || cur.Slug != sc.Slug {
		if err := unique(ctx, tx, ws.ID, cur.ID, sc.Name, sc.Slug); err != nil {
			return nil, err
		}
	}
	cur.Name, cur.Slug, cur.Language, cur.Source, cur.Description, cur.UpdatedAt = sc.Name, sc.Slug, sc.Language, sc.Source, sc.Description, sc.UpdatedAt
	if revised {
		cur.Version++
		if err := insertRevision(ctx, tx, ws.ID, &revisionRow{ID: ids.New(), ScriptID: cur.ID,
			ScriptRevision: ScriptRevision{Version: cur.Version, Language: cur.Language, Source: cur.Source, CreatedAt: cur.UpdatedAt, CreatedBy: userID(u)}}); err != nil {
			return nil, err
		}
	}
	return cur, s.uniqueViolation(updateScript(ctx, tx, ws.ID, cur), cur.Name, cur.Slug)
}

// Get reads a script of the workspace with its source.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Script, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("script")
	}
	return getScript(ctx, s.db.R, ws.ID, id)
}

// List lists the workspace's scripts, newest first, without their sources.
func (s *Service) List(ctx context.Context, ws *actor.Workspace) ([]ScriptSummary, error) {
	return listScripts(ctx, s.db.R, ws.ID)
}

// patch is a validated PATCH body: nil fields stay as they are.
type patch struct {
	name, slug, language, source *string
	description                  Optional[*string]
}

func validPatch(in ScriptPatch) (*patch, error) {
	var p patch
	notNull := func(field string, o Optional[string]) (*string, error) {
		if !o.Set {
			return nil, nil
		}
		if o.Null {
			return nil, apperr.BadRequest("%s must not be null; leave it out to keep it", field)
		}
		v := o.Value
		return &v, nil
	}
	var err error
	if p.name, err = notNull("name", in.Name); err != nil {
		return nil, err
	}
	if p.name != nil {
		n, err := cleanName(*p.name)
		if err != nil {
			return nil, err
		}
		p.name = &n
	}
	if p.slug, err = notNull("slug", in.Slug); err != nil {
		return nil, err
	}
	if p.slug != nil {
		if err := checkSlug(*p.slug); err != nil {
			return nil, err
		}
	}
	if p.language, err = notNull("language", in.Language); err != nil {
		return nil, err
	}
	if p.language != nil {
		if err := checkLanguage(*p.language); err != nil {
			return nil, err
		}
	}
	if p.source, err = notNull("source", in.Source); err != nil {
		return nil, err
	}
	if p.source != nil {
		if err := checkSource(*p.source); err != nil {
			return nil, err
		}
	}
	if in.Description.Set {
		var raw *string
		if !in.Description.Null {
			raw = &in.Description.Value
		}
		d, err := cleanDescription(raw)
		if err != nil {
			return nil, err
		}
		p.description = Optional[*string]{Set: true, Null: d == nil, Value: d}
	}
	return &p, nil
}

// Update applies a PATCH. A change of source or language adds a revision
// (and moves version on), in the same transaction.
func (s *Service) Update(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in ScriptPatch) (*Script, error) {
	p, err := validPatch(in)
	if err != nil {
		return nil, err
	}
	if !ids.Valid(id) {
		return nil, apperr.NotFound("script")
	}
	var out *Script
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		sc, err := lockScript(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		before := *sc
		if p.name != nil {
			sc.Name = *p.name
		}
		if p.slug != nil {
			sc.Slug = *p.slug
		}
		if p.language != nil {
			sc.Language = *p.language
		}
		if p.source != nil {
			sc.Source = *p.source
		}
		if p.description.Set {
			sc.Description = p.description.Value
		}
		out = sc
		revised := sc.Source != before.Source || sc.Language != before.Language
		if !revised && sc.Name == before.Name && sc.Slug == before.Slug && equalDesc(sc.Description, before.Description) {
			return nil // nothing changes, not even updated_at
		}
		if sc.Name != before.Name || sc.Slug != before.Slug {
			if err := unique(ctx, tx, ws.ID, sc.ID, sc.Name, sc.Slug); err != nil {
				return err
			}
		}
		sc.UpdatedAt = s.clock.Now()
		if revised {
			sc.Version++
			if err := insertRevision(ctx, tx, ws.ID, &revisionRow{ID: ids.New(), ScriptID: sc.ID,
				ScriptRevision: ScriptRevision{Version: sc.Version, Language: sc.Language, Source: sc.Source, CreatedAt: sc.UpdatedAt, CreatedBy: userID(u)}}); err != nil {
				return err
			}
		}
		return s.uniqueViolation(updateScript(ctx, tx, ws.ID, sc), sc.Name, sc.Slug)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func equalDesc(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// maxListedDependents bounds the workflow ids a refused delete names.
const maxListedDependents = 50

// Delete removes a script with its revisions, unless a workflow of the
// workspace has a code node that runs it: then it answers 400 naming those
// workflows. It reports false when there was no such script.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, nil
	}
	deleted := false
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		ok, err := exists(ctx, tx, ws.ID, id)
		if err != nil || !ok {
			return err
		}
		types, err := dependentNodeTypes(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if len(types) > 0 {
			return apperr.BadRequest("the script is run by node types %s; it stays while they do", strings.Join(types, ", "))
		}
		deps, err := dependentWorkflows(ctx, tx, s.db.Dialect, ws.ID, id)
		if err != nil {
			return err
		}
		if len(deps) > 0 {
			listed := strings.Join(deps[:min(len(deps), maxListedDependents)], ", ")
			if len(deps) > maxListedDependents {
				listed += fmt.Sprintf(" and %d more", len(deps)-maxListedDependents)
			}
			return apperr.BadRequest("the script is run by code nodes of %d workflow(s): %s; change or delete them first", len(deps), listed)
		}
		if deleted, err = deleteScript(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		return s.runs.DeleteLog(ctx, tx, ws.ID, id) // its runs and their events
	})
	return deleted, err
}

// Revisions lists a script's revisions, newest first, without sources.
func (s *Service) Revisions(ctx context.Context, ws *actor.Workspace, id string) ([]ScriptRevisionSummary, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("script")
	}
	ok, err := exists(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.NotFound("script")
	}
	return listRevisions(ctx, s.db.R, ws.ID, id)
}

// Revision reads one version of a script's source.
func (s *Service) Revision(ctx context.Context, ws *actor.Workspace, id string, version int64) (*ScriptRevision, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("script")
	}
	ok, err := exists(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.NotFound("script")
	}
	return getRevision(ctx, s.db.R, ws.ID, id, version)
}

// BoardInput filters the scripts board.
type BoardInput struct {
	board.Query
	Language string `query:"language" enum:"sh,bash,python,javascript" doc:"Only scripts in this language"`
}

// Board is a page of scripts (without sources) with a language facet.
// Text sorts (name, slug, language) default to A to Z, times to newest
// first.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, in BoardInput) (*board.Board[ScriptSummary], error) {
	defOrder := "desc"
	if in.Sort == "name" || in.Sort == "slug" || in.Sort == "language" {
		defOrder = "asc"
	}
	orderBy, err := in.OrderBy(boardSort, "created_at", defOrder, "id")
	if err != nil {
		return nil, err
	}
	if err := text.CheckName("q", in.Q); err != nil {
		return nil, err
	}
	if in.Language != "" {
		if err := checkLanguage(in.Language); err != nil {
			return nil, err
		}
	}
	rows, total, counts, err := boardPage(ctx, s.db, ws.ID, in.Q, in.Language, orderBy, in.PageSize, in.Offset())
	if err != nil {
		return nil, err
	}
	facet := make([]board.Facet, 0, len(Languages))
	for _, l := range Languages {
		facet = append(facet, board.Facet{Value: l, Label: languageLabels[l], Count: counts[l]})
	}
	return board.New(in.Query, rows, total, map[string][]board.Facet{"language": facet}), nil
}
