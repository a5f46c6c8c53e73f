package marketplace

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/scripts"
	"slipway/internal/tenancy"
	"slipway/internal/workflows"
)

// Scripts is what the catalog needs of scripts: read one to publish it,
// write one an install brings.
type Scripts interface {
	Get(ctx context.Context, ws *actor.Workspace, id string) (*scripts.Script, error)
	InstallTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, id string, in scripts.ScriptCreate) (*scripts.Script, error)
}

// NodeTypes is what the catalog needs of node types: read one to publish
// it, write one an install brings.
type NodeTypes interface {
	GetNodeType(ctx context.Context, ws *actor.Workspace, id string) (*workflows.NodeType, error)
	InstallNodeTypeTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, id string, in workflows.NodeTypeCreate) (*workflows.NodeType, error)
}

// Workflows is what the catalog needs of workflows: read them to publish a
// bundle, make and replace them when one is installed or updated.
type Workflows interface {
	Get(ctx context.Context, ws *actor.Workspace, id string) (*workflows.Workflow, error)
	ListNodeTypes(ctx context.Context, ws *actor.Workspace) ([]workflows.NodeType, error)
	CreateTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, in workflows.Input) (*workflows.Workflow, error)
	ReplaceTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, id string, in workflows.Input) (*workflows.Workflow, error)
}

// Refs reads what a bundle's workflows reference in a workspace: a
// resource's kind and name, an app's name (apperr not found for another
// workspace's).
type Refs interface {
	ResourceRef(ctx context.Context, ws *actor.Workspace, id string) (kind, name string, err error)
	AppRef(ctx context.Context, ws *actor.Workspace, id string) (name string, err error)
}

// Commerce is what the catalog needs of purchases and sellers: whether a
// workspace holds a license to a paid item, and a person's seller profile
// (a paid listing is sold by one). It reads in the caller's transaction.
type Commerce interface {
	Licensed(ctx context.Context, q db.Queryer, workspaceID, itemID string, now time.Time) (bool, error)
	SellerOf(ctx context.Context, q db.Queryer, userID string) (string, error) // "" without a profile
}

// Reactions are what other domains do when the catalog changes, inside its
// transaction: who installed an item is told when an update waits for
// them, and when the item is taken down.
type Reactions interface {
	UpdateHeld(ctx context.Context, tx *db.Tx, workspaceID string, installedBy *string, in *MarketInstall, item, version, reason string) error
	TakenDown(ctx context.Context, tx *db.Tx, workspaceIDs []string, itemID, item string) error
}

// Deps are what the service needs.
type Deps struct {
	DB        *db.DB
	Clock     clock.Clock
	Log       *slog.Logger
	Scripts   Scripts
	NodeTypes NodeTypes
	Workflows Workflows
	Refs      Refs
	Apps      Apps      // nil: no app listings
	Git       GitReader // nil: no Git sources
	Commerce  Commerce  // nil: paid items are listed, never licensed
	Reactions Reactions // nil: no one is told
}

// Service is the marketplace catalog.
type Service struct{ Deps }

// NewService returns the catalog.
func NewService(d Deps) *Service { return &Service{Deps: d} }

func wsAdmin(ws *actor.Workspace, doing string) error {
	if !tenancy.WorkspaceAdmin(ws.Role) {
		return apperr.New(apperr.CodeForbidden, "%s needs a workspace admin", doing)
	}
	return nil
}

func actorID(u *actor.User) string {
	if u == nil {
		return ""
	}
	return u.ID
}

func userRef(u *actor.User) *string {
	if u == nil {
		return nil
	}
	return &u.ID
}

// Sources.

// Sources lists the official source and the workspace's own.
func (s *Service) Sources(ctx context.Context, ws *actor.Workspace) ([]MarketSource, error) {
	return sourcesOf(ctx, s.DB.R, ws.ID)
}

func cleanGrants(ws *actor.Workspace, in []string) ([]string, error) {
	out := []string{}
	for _, g := range in {
		if !ids.Valid(g) {
			return nil, apperr.BadRequest("grants: %q is not a workspace id", clip(g, 64))
		}
		if g != ws.ID && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	if len(out) > MaxGrants {
		return nil, apperr.BadRequest("grants: at most %d workspaces", MaxGrants)
	}
	return out, nil
}

// CreateSource adds a source to the workspace (its admins). A workspace
// has one source of its own published items (kind workspace), which names
// the workspaces it grants them to.
func (s *Service) CreateSource(ctx context.Context, ws *actor.Workspace, u *actor.User, in SourceCreate) (*MarketSource, error) {
	if err := wsAdmin(ws, "adding a marketplace source"); err != nil {
		return nil, err
	}
	name, err := text.Name("name", in.Name, 100)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	src := &MarketSource{ID: ids.New(), Kind: in.Kind, Name: name, WorkspaceID: &ws.ID, Grants: []string{}, Status: StatusEnabled, CreatedAt: now, UpdatedAt: now}
	switch in.Kind {
	case SourceWorkspace:
		if in.URL != "" || in.Branch != "" {
			return nil, apperr.BadRequest("url and branch are for Git sources")
		}
		if src.Grants, err = cleanGrants(ws, in.Grants); err != nil {
			return nil, err
		}
	case SourceGit:
		if s.Git == nil {
			return nil, apperr.BadRequest("kind git: Git sources are not available on this server")
		}
		if len(in.Grants) > 0 {
			return nil, apperr.BadRequest("grants are for the workspace's own source: a Git source's items are this workspace's to install")
		}
		repoURL, err := gitURL(in.URL)
		if err != nil {
			return nil, err
		}
		branch := cmpOr(strings.TrimSpace(in.Branch), "main")
		if !branchPattern.MatchString(branch) || strings.Contains(branch, "..") || strings.HasSuffix(branch, "/") || strings.HasSuffix(branch, ".lock") {
			return nil, apperr.BadRequest("branch: a branch name (letters, digits and ._/-)")
		}
		src.URL, src.Branch = &repoURL, &branch
	default:
		return nil, apperr.BadRequest("kind must be workspace or git (the official source is the instance's)")
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if own, err := ownSource(ctx, tx, ws.ID); err != nil {
			return err
		} else if own != nil && in.Kind == SourceWorkspace {
			return apperr.New(apperr.CodeConflict, "the workspace has its source already (%s): change its grants", own.ID)
		}
		if n, err := countSources(ctx, tx, ws.ID); err != nil {
			return err
		} else if n >= MaxSourcesPerWorkspace {
			return apperr.BadRequest("a workspace has at most %d sources", MaxSourcesPerWorkspace)
		}
		if err := insertSource(ctx, tx, src); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, actorID(u), "marketplace.source.create", "marketplace_source", src.ID, nil, src)
	})
	if err != nil {
		return nil, err
	}
	if src.Kind == SourceGit {
		if err := s.syncGit(ctx, ws, u, src); err != nil {
			return nil, err
		}
		return sourceOf(ctx, s.DB.R, ws.ID, src.ID)
	}
	return src, nil
}

// UpdateSource renames, enables or disables a source, or changes its
// grants (the workspace's admins); the official source is read-only.
func (s *Service) UpdateSource(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in SourcePatch) (*MarketSource, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("source")
	}
	if err := wsAdmin(ws, "changing a marketplace source"); err != nil {
		return nil, err
	}
	var out *MarketSource
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		src, err := sourceOf(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if src.Kind == SourceOfficial {
			return apperr.New(apperr.CodeForbidden, "the official source is read-only (it can only be synced)")
		}
		before := *src
		if in.Name != nil {
			if src.Name, err = text.Name("name", *in.Name, 100); err != nil {
				return err
			}
		}
		if in.Status != nil {
			if *in.Status != StatusEnabled && *in.Status != StatusDisabled {
				return apperr.BadRequest("status must be enabled or disabled")
			}
			src.Status = *in.Status
		}
		if in.Grants != nil {
			if src.Kind != SourceWorkspace {
				return apperr.BadRequest("grants are for the workspace's own source")
			}
			if src.Grants, err = cleanGrants(ws, *in.Grants); err != nil {
				return err
			}
		}
		src.UpdatedAt = s.Clock.Now()
		if err := updateSource(ctx, tx, ws.ID, src); err != nil {
			return err
		}
		out = src
		return audit.Record(ctx, tx, src.UpdatedAt, actorID(u), "marketplace.source.update", "marketplace_source", src.ID, before, src)
	})
	return out, err
}

// DeleteSource removes a source (the workspace's admins): the workspace's
// own once it has no published items; a Git source with the items it
// synced, unless one of them is installed (nothing is uninstalled
// silently).
func (s *Service) DeleteSource(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, apperr.NotFound("source")
	}
	if err := wsAdmin(ws, "deleting a marketplace source"); err != nil {
		return false, err
	}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		src, err := sourceOf(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		switch {
		case src.Kind == SourceOfficial:
			return apperr.New(apperr.CodeForbidden, "the official source is read-only (it can only be synced)")
		case src.Kind == SourceWorkspace && src.Items > 0:
			return apperr.New(apperr.CodeConflict, "the source still has %d published items", src.Items)
		case src.Kind == SourceGit:
			if n, err := sourceInstalls(ctx, tx, ws.ID, id); err != nil {
				return err
			} else if n > 0 {
				return apperr.New(apperr.CodeConflict, "%d installs use the source's items: remove them first (nothing is uninstalled silently)", n)
			}
			if err := deleteGitItems(ctx, tx, ws.ID, id); err != nil {
				return err
			}
		}
		if err := deleteSource(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		return audit.Record(ctx, tx, s.Clock.Now(), actorID(u), "marketplace.source.delete", "marketplace_source", src.ID, src, nil)
	})
	if err == nil && s.Git != nil {
		s.Git.Forget(id)
	}
	return err == nil, err
}

// SyncSource reads a source again: the official one is reseeded from
// what this server ships; a workspace's is its own items already.
func (s *Service) SyncSource(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*MarketSource, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("source")
	}
	if err := wsAdmin(ws, "syncing a marketplace source"); err != nil {
		return nil, err
	}
	src, err := sourceOf(ctx, s.DB.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	switch src.Kind {
	case SourceOfficial:
		if err := s.Seed(ctx); err != nil {
			return nil, err
		}
	case SourceGit:
		if src.Status == StatusDisabled {
			return nil, apperr.New(apperr.CodeConflict, "the source is disabled: enable it to sync")
		}
		if err := s.syncGit(ctx, ws, u, src); err != nil {
			return nil, err
		}
	default:
		err = s.DB.Tx(ctx, func(tx *db.Tx) error {
			now := s.Clock.Now()
			src.SyncedAt, src.UpdatedAt, src.LastError = &now, now, nil
			if src.Status == StatusSyncError {
				src.Status = StatusEnabled
			}
			return updateSource(ctx, tx, ws.ID, src)
		})
		if err != nil {
			return nil, err
		}
	}
	return sourceOf(ctx, s.DB.R, ws.ID, id)
}

// Items.

// Items lists the items the workspace sees, newest first.
func (s *Service) Items(ctx context.Context, ws *actor.Workspace, q, kind, source, price string, limit, offset int) (*MarketItemPage, error) {
	if err := text.CheckName("q", q); err != nil {
		return nil, err
	}
	if source != "" && !ids.Valid(source) {
		return nil, apperr.BadRequest("source_id: not a source id")
	}
	limit = min(max(limit, 0), MaxLimit)
	if limit == 0 {
		limit = DefaultLimit
	}
	items, total, err := listItems(ctx, s.DB.R, ws.ID, itemFilter{q: strings.TrimSpace(q), kind: kind, source: source, price: price}, limit, max(offset, 0))
	if err != nil {
		return nil, err
	}
	return &MarketItemPage{Items: items, Total: total}, nil
}

// Item reads an item the workspace sees.
func (s *Service) Item(ctx context.Context, ws *actor.Workspace, id string) (*MarketItem, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("item")
	}
	return itemFor(ctx, s.DB.R, ws.ID, id)
}

// Versions lists an item's versions, newest first.
func (s *Service) Versions(ctx context.Context, ws *actor.Workspace, id string) ([]ItemVersion, error) {
	it, err := s.Item(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	return versionsOf(ctx, s.DB.R, it.ID)
}

// Version reads one version of an item.
func (s *Service) Version(ctx context.Context, ws *actor.Workspace, id, version string) (*ItemVersion, error) {
	it, err := s.Item(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	return versionOf(ctx, s.DB.R, it.ID, version)
}

// ItemReview is an item's latest review verdict (nil when none).
func (s *Service) ItemReview(ctx context.Context, ws *actor.Workspace, id string) (*ItemVerdict, error) {
	it, err := s.Item(ctx, ws, id)
	if err != nil || it.review == nil {
		return nil, err
	}
	return &ItemVerdict{Verdict: *it.review, Reason: it.reason, DecidedAt: *it.reviewedAt}, nil
}

// PreviewScript is a script item's script at its latest (or a given)
// version.
func (s *Service) PreviewScript(ctx context.Context, ws *actor.Workspace, id, version string) (*ScriptContent, error) {
	it, err := s.Item(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	if it.Kind != KindScript {
		return nil, apperr.BadRequest("item %s is a %s, not a script", it.Slug, it.Kind)
	}
	if version == "" {
		version = it.LatestVersion
	}
	v, err := versionOf(ctx, s.DB.R, it.ID, version)
	if err != nil {
		return nil, err
	}
	files, err := filesOf(ctx, s.DB.R, v.ID)
	if err != nil {
		return nil, err
	}
	for _, o := range v.Objects {
		var f ScriptContent
		if err := json.Unmarshal(files[o.Path], &f); err == nil && o.Type == "script" {
			return &f, nil
		}
	}
	return nil, apperr.NotFound("script")
}

// VersionFile is a file of a version with its content.
type VersionFile struct {
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Content string `json:"content"`
}

// Files are a version's files (the latest unless one is named); a paid
// item's need a license.
func (s *Service) Files(ctx context.Context, ws *actor.Workspace, id, version string) ([]VersionFile, error) {
	it, v, files, err := s.versionFiles(ctx, ws, id, version)
	if err != nil {
		return nil, err
	}
	if ok, err := s.licensed(ctx, s.DB.R, ws, it); err != nil {
		return nil, err
	} else if !ok {
		return nil, apperr.New(apperr.CodeForbidden, "%s is a paid item: its files need a license (POST /api/marketplace/checkout/{version_id})", it.Slug)
	}
	out := make([]VersionFile, 0, len(v.Files))
	for _, f := range v.Files {
		out = append(out, VersionFile{Path: f.Path, SHA256: f.SHA256, Size: f.Size, Content: string(files[f.Path])})
	}
	return out, nil
}

func (s *Service) versionFiles(ctx context.Context, ws *actor.Workspace, id, version string) (*MarketItem, *ItemVersion, map[string][]byte, error) {
	it, err := s.Item(ctx, ws, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if version == "" {
		version = it.LatestVersion
	}
	v, err := versionOf(ctx, s.DB.R, it.ID, version)
	if err != nil {
		return nil, nil, nil, err
	}
	files, err := filesOf(ctx, s.DB.R, v.ID)
	return it, v, files, err
}

// NodePreview is a node item's node type with its script.
type NodePreview struct {
	NodeType NodeTypeContent `json:"node_type"`
	Script   ScriptContent   `json:"script"`
}

// PreviewNode is a node item's node type and script at its latest (or a
// given) version.
func (s *Service) PreviewNode(ctx context.Context, ws *actor.Workspace, id, version string) (*NodePreview, error) {
	it, v, files, err := s.versionFiles(ctx, ws, id, version)
	if err != nil {
		return nil, err
	}
	if it.Kind != KindNode {
		return nil, apperr.BadRequest("item %s is a %s, not a node", it.Slug, it.Kind)
	}
	var out NodePreview
	for _, o := range v.Objects {
		switch o.Type {
		case "node_type":
			_ = json.Unmarshal(files[o.Path], &out.NodeType)
		case "script":
			_ = json.Unmarshal(files[o.Path], &out.Script)
		}
	}
	return &out, nil
}

// Publishing.

// PublishScript publishes a script of the workspace as a new version of
// its item (the workspace's admins): the item (by slug) is made with its
// first version; a version must be higher than every one before, and is
// immutable once published.
func (s *Service) PublishScript(ctx context.Context, ws *actor.Workspace, u *actor.User, in PublishScript) (*Published, error) {
	if err := wsAdmin(ws, "publishing to the marketplace"); err != nil {
		return nil, err
	}
	sc, err := s.Scripts.Get(ctx, ws, in.ScriptID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return nil, apperr.BadRequest("script_id: no such script in this workspace")
	}
	if err != nil {
		return nil, err
	}
	file, _ := json.MarshalIndent(ScriptContent{Slug: sc.Slug, Name: sc.Name, Language: sc.Language, Description: sc.Description, Source: sc.Source}, "", "  ")
	slug := cmpOr(in.Slug, sc.Slug)
	name := cmpOr(in.Name, sc.Name)
	path := "scripts/" + sc.Slug + ".json"
	return s.publish(ctx, ws, u, KindScript, slug, name, in.Summary, in.Tags, in.Version, in.Changelog, in.Capabilities, in.Price,
		[]Object{{Type: "script", Key: "script", Path: path}}, nil, map[string][]byte{path: file})
}

// PublishNode publishes a node type of the workspace, with its script, as
// a new version of its item (the workspace's admins); the node kind it
// adds is among its capabilities.
func (s *Service) PublishNode(ctx context.Context, ws *actor.Workspace, u *actor.User, in PublishNode) (*Published, error) {
	if err := wsAdmin(ws, "publishing to the marketplace"); err != nil {
		return nil, err
	}
	nt, err := s.NodeTypes.GetNodeType(ctx, ws, in.NodeTypeID)
	if e, ok := apperr.As(err); (ok && e.Code == apperr.CodeNotFound) || (err == nil && nt.ScriptID == nil) {
		return nil, apperr.BadRequest("node_type_id: no such node type in this workspace")
	}
	if err != nil {
		return nil, err
	}
	sc, err := s.Scripts.Get(ctx, ws, *nt.ScriptID)
	if err != nil {
		return nil, err
	}
	script, _ := json.MarshalIndent(ScriptContent{Slug: sc.Slug, Name: sc.Name, Language: sc.Language, Description: sc.Description, Source: sc.Source}, "", "  ")
	node, _ := json.MarshalIndent(NodeTypeContent{Slug: nt.Slug, Name: nt.Name, Description: nt.Description, Category: nt.Category,
		ConfigSchema: nt.ConfigSchema, Script: "script"}, "", "  ")
	scriptPath, nodePath := "scripts/"+sc.Slug+".json", "node_types/"+nt.Slug+".json"
	caps := in.Capabilities
	caps.NodeKinds = append(slices.Clone(caps.NodeKinds), nt.Slug)
	return s.publish(ctx, ws, u, KindNode, cmpOr(in.Slug, strings.ReplaceAll(nt.Slug, "_", "-")), cmpOr(in.Name, nt.Name), in.Summary, in.Tags, in.Version,
		in.Changelog, caps, in.Price, []Object{{Type: "script", Key: "script", Path: scriptPath}, {Type: "node_type", Key: "node_type", Path: nodePath}},
		nil, map[string][]byte{scriptPath: script, nodePath: node})
}

func cmpOr(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// publish stores a version of an item of the workspace's own source, in
// one transaction (the source and the item are made on first use).
func (s *Service) publish(ctx context.Context, ws *actor.Workspace, u *actor.User, kind, slug, name, summary string, tags []string, version, changelog string,
	caps Capabilities, price *Price, objects []Object, needs []Need, files map[string][]byte) (*Published, error) {
	if !slugPattern.MatchString(slug) {
		return nil, apperr.BadRequest("slug must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter")
	}
	name, err := text.Name("name", name, 200)
	if err != nil {
		return nil, err
	}
	if err := text.CheckName("summary", summary); err != nil || len(summary) > MaxSummary {
		return nil, apperr.BadRequest("summary: one line of at most %d characters", MaxSummary)
	}
	if tags, err = text.Labels("tags", tags); err != nil {
		return nil, err
	}
	if len(tags) > MaxTags {
		return nil, apperr.BadRequest("tags: at most %d", MaxTags)
	}
	sv, err := parseVersion(version)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(changelog) == "" || len(changelog) > MaxChangelog || strings.ContainsRune(changelog, 0) {
		return nil, apperr.BadRequest("changelog: say what changed (at most %d bytes)", MaxChangelog)
	}
	if caps, err = caps.clean(); err != nil {
		return nil, err
	}
	if price != nil && s.Commerce == nil {
		return nil, apperr.BadRequest("price: paid listings are not available on this server")
	}
	m := VersionManifest{Kind: kind, Objects: objects, Capabilities: caps, Needs: needs}
	for p, b := range files {
		m.Files = append(m.Files, FileEntry{Path: p, SHA256: sha(b), Size: int64(len(b))})
	}
	slices.SortFunc(m.Files, func(a, b FileEntry) int { return strings.Compare(a.Path, b.Path) })
	now := s.Clock.Now()
	v := &ItemVersion{ID: ids.New(), Version: sv.String(), Changelog: changelog, Digest: m.Digest(), CreatedAt: now, manifest: m,
		Objects: m.Objects, Files: m.Files, Capabilities: m.Capabilities, Needs: needs}
	if v.Needs == nil {
		v.Needs = []Need{}
	}
	var out *Published
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		src, err := ownSource(ctx, tx, ws.ID)
		if err != nil {
			return err
		}
		if src == nil {
			src = &MarketSource{ID: ids.New(), Kind: SourceWorkspace, Name: "Published here", WorkspaceID: &ws.ID, Grants: []string{}, Status: StatusEnabled,
				CreatedAt: now, UpdatedAt: now}
			if err := insertSource(ctx, tx, src); err != nil {
				return err
			}
		}
		it, err := ownItemBySlug(ctx, tx, ws.ID, src.ID, slug)
		if err != nil {
			return err
		}
		if it == nil {
			if n, err := countItems(ctx, tx, ws.ID); err != nil {
				return err
			} else if n >= MaxItemsPerWorkspace {
				return apperr.BadRequest("a workspace publishes at most %d items", MaxItemsPerWorkspace)
			}
			it = &MarketItem{ID: ids.New(), SourceID: src.ID, Kind: kind, Slug: slug, Listed: true, CreatedAt: now, workspaceID: &ws.ID, Mine: true}
			it.Name, it.Summary, it.Tags, it.LatestVersion, it.UpdatedAt = name, summary, tags, v.Version, now
			if err := insertItem(ctx, tx, it); err != nil {
				return err
			}
		} else {
			if it.Kind != kind {
				return apperr.New(apperr.CodeConflict, "the item %s is a %s, not a %s", slug, it.Kind, kind)
			}
			if !it.Listed {
				return apperr.New(apperr.CodeConflict, "the item %s was taken down: it takes no new version", slug)
			}
			latest, err := parseVersion(it.LatestVersion)
			if err != nil {
				return err
			}
			if !sv.GreaterThan(latest) {
				return apperr.New(apperr.CodeConflict, "version %s is not higher than %s, the latest of %s (a version is immutable once published)",
					v.Version, it.LatestVersion, slug)
			}
			vs, err := versionsOf(ctx, tx, it.ID)
			if err != nil {
				return err
			}
			if len(vs) >= MaxVersionsPerItem {
				return apperr.BadRequest("an item has at most %d versions", MaxVersionsPerItem)
			}
			it.Name, it.Summary, it.Tags, it.LatestVersion, it.UpdatedAt = name, summary, tags, v.Version, now
			if err := touchItem(ctx, tx, it); err != nil {
				return err
			}
		}
		if price != nil {
			seller, err := s.Commerce.SellerOf(ctx, tx, actorID(u))
			if err != nil {
				return err
			}
			if seller == "" {
				return apperr.BadRequest("price: a paid listing needs your seller profile first (POST /api/marketplace/seller/profile)")
			}
			it.Paid, it.Price, it.sellerID = true, price, &seller
			if err := priceItem(ctx, tx, it); err != nil {
				return err
			}
		}
		v.ItemID = it.ID
		if err := insertVersion(ctx, tx, v, userRef(u)); err != nil {
			return err
		}
		for p, b := range files {
			if err := insertFile(ctx, tx, v.ID, p, b); err != nil {
				return err
			}
		}
		out = &Published{Item: *it, Version: *v}
		return audit.Record(ctx, tx, now, actorID(u), "marketplace.publish", "marketplace_item", it.ID, nil,
			map[string]any{"slug": slug, "version": v.Version, "digest": v.Digest})
	})
	if err != nil {
		return nil, err
	}
	go s.AutoUpdate(context.WithoutCancel(ctx), out.Item.ID)
	return out, nil
}

// Review (instance admins).

// ReviewQueue lists the items no review decided yet, oldest first.
func (s *Service) ReviewQueue(ctx context.Context) ([]MarketItem, error) {
	return reviewQueue(ctx, s.DB.R, MaxLimit)
}

// Review approves an item (verified: installable across the instance) or
// rejects it (verified false), with an optional reason.
func (s *Service) Review(ctx context.Context, u *actor.User, id, verdict, reason string) (*MarketItem, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("item")
	}
	if err := text.CheckName("reason", strings.ReplaceAll(reason, "\n", " ")); err != nil {
		return nil, err
	}
	var why *string
	if strings.TrimSpace(reason) != "" {
		why = &reason
	}
	var out *MarketItem
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		it, err := anyItem(ctx, tx, id)
		if err != nil {
			return err
		}
		if verdict == "approved" && !it.Listed {
			return apperr.New(apperr.CodeConflict, "the item is taken down: restore it first")
		}
		now := s.Clock.Now()
		before := map[string]any{"verified": it.Verified, "review": it.review}
		if err := reviewItem(ctx, tx, id, verdict, why, &u.ID, verdict == "approved", now); err != nil {
			return err
		}
		if out, err = anyItem(ctx, tx, id); err != nil {
			return err
		}
		action := map[string]string{"approved": "marketplace.review.approve", "rejected": "marketplace.review.reject"}[verdict]
		return audit.Record(ctx, tx, now, u.ID, action, "marketplace_item", id, before,
			map[string]any{"verified": out.Verified, "review": verdict, "reason": why})
	})
	return out, err
}

// Takedown withdraws every version of an item (installs of it are
// blocked; installed digests keep running) and clears verified; the
// workspaces that installed it are told.
func (s *Service) Takedown(ctx context.Context, u *actor.User, id string) (*MarketItem, error) {
	return s.list(ctx, u, id, false)
}

// Restore un-withdraws an item's versions; verified stays false.
func (s *Service) Restore(ctx context.Context, u *actor.User, id string) (*MarketItem, error) {
	return s.list(ctx, u, id, true)
}

func (s *Service) list(ctx context.Context, u *actor.User, id string, listed bool) (*MarketItem, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("item")
	}
	var out *MarketItem
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		it, err := anyItem(ctx, tx, id)
		if err != nil {
			return err
		}
		if it.Listed == listed {
			return apperr.New(apperr.CodeConflict, "the item is %s already", map[bool]string{true: "listed", false: "taken down"}[listed])
		}
		now := s.Clock.Now()
		if err := listItem(ctx, tx, id, listed, now); err != nil {
			return err
		}
		if out, err = anyItem(ctx, tx, id); err != nil {
			return err
		}
		action := map[bool]string{true: "marketplace.restore", false: "marketplace.takedown"}[listed]
		if err := audit.Record(ctx, tx, now, u.ID, action, "marketplace_item", id, map[string]any{"listed": it.Listed, "verified": it.Verified},
			map[string]any{"listed": out.Listed, "verified": out.Verified}); err != nil {
			return err
		}
		if !listed && s.Reactions != nil {
			wss, err := installingWorkspaces(ctx, tx, id)
			if err != nil {
				return err
			}
			return s.Reactions.TakenDown(ctx, tx, wss, id, it.Name)
		}
		return nil
	})
	return out, err
}

// Installs.

// licensed reports whether the workspace may have a paid item's files: its
// publisher may, and a workspace holding a license.
func (s *Service) licensed(ctx context.Context, q db.Queryer, ws *actor.Workspace, it *MarketItem) (bool, error) {
	if !it.Paid || it.Mine {
		return true, nil
	}
	if s.Commerce == nil {
		return false, nil
	}
	return s.Commerce.Licensed(ctx, q, ws.ID, it.ID, s.Clock.Now())
}

// CheckoutVersion reads a version by its id with its item, as the active
// workspace may buy it: seen, paid, listed, not its own, not withdrawn.
func (s *Service) CheckoutVersion(ctx context.Context, q db.Queryer, ws *actor.Workspace, versionID string) (*MarketItem, *ItemVersion, string, error) {
	if !ids.Valid(versionID) {
		return nil, nil, "", apperr.NotFound("version")
	}
	v, err := versionByID(ctx, q, versionID)
	if err != nil {
		return nil, nil, "", err
	}
	it, err := itemFor(ctx, q, ws.ID, v.ItemID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return nil, nil, "", apperr.NotFound("version")
	}
	switch {
	case err != nil:
		return nil, nil, "", err
	case !it.Paid || it.Price == nil || it.sellerID == nil:
		return nil, nil, "", apperr.New(apperr.CodeConflict, "%s is free: install it, there is nothing to buy", it.Slug)
	case it.Mine:
		return nil, nil, "", apperr.New(apperr.CodeConflict, "%s is this workspace's own item", it.Slug)
	case v.Withdrawn || !it.Listed:
		return nil, nil, "", apperr.New(apperr.CodeConflict, "version %s of %s was withdrawn (the item was taken down)", v.Version, it.Slug)
	}
	return it, v, *it.sellerID, nil
}

// installable reads the version of an item the workspace may install.
func (s *Service) installable(ctx context.Context, q db.Queryer, ws *actor.Workspace, itemID, version string) (*MarketItem, *ItemVersion, map[string][]byte, error) {
	if !ids.Valid(itemID) {
		return nil, nil, nil, apperr.NotFound("item")
	}
	it, err := itemFor(ctx, q, ws.ID, itemID)
	if err != nil {
		return nil, nil, nil, err
	}
	v, err := versionOf(ctx, q, it.ID, version)
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case v.Withdrawn || !it.Listed:
		return nil, nil, nil, apperr.New(apperr.CodeConflict, "version %s of %s was withdrawn (the item was taken down)", v.Version, it.Slug)
	}
	if ok, err := s.licensed(ctx, q, ws, it); err != nil {
		return nil, nil, nil, err
	} else if !ok {
		return nil, nil, nil, apperr.New(apperr.CodeForbidden, "%s is a paid item: installing it needs a license (POST /api/marketplace/checkout/{version_id})", it.Slug)
	}
	files, err := filesOf(ctx, q, v.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := v.manifest.verify(files); err != nil || v.manifest.Digest() != v.Digest {
		return nil, nil, nil, apperr.New(apperr.CodeConflict, "version %s of %s does not match its digest: refused (%v)", v.Version, it.Slug, err)
	}
	return it, v, files, nil
}

// plan says what materializing a version does to each of its objects,
// given what an earlier version of the install made.
func plan(v *ItemVersion, files map[string][]byte, made map[string]string, old map[string][]byte, oldVersion *ItemVersion) []ObjectPlan {
	out := []ObjectPlan{}
	for _, o := range v.Objects {
		p := ObjectPlan{Key: o.Key, Type: o.Type, Action: "create"}
		p.Name = objectName(o, files[o.Path])
		if _, ok := made[o.Key]; ok {
			p.Action = "update"
			if oldVersion != nil {
				for _, oo := range oldVersion.Objects {
					if oo.Key == o.Key && string(old[oo.Path]) == string(files[o.Path]) {
						p.Action = "unchanged"
					}
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// objectName is what an object is called: a script's or node type's name,
// a workflow's, a code file's path.
func objectName(o Object, file []byte) string {
	switch o.Type {
	case ObjectWorkflow:
		if in, err := workflows.ParseYAML(file); err == nil {
			return in.Name
		}
	case ObjectCodeFile:
		return strings.TrimPrefix(o.Key, "code:")
	default:
		var f ScriptContent
		if json.Unmarshal(file, &f) == nil {
			return f.Name
		}
	}
	return o.Key
}

// InstallPreview says what installing a version would do.
func (s *Service) InstallPreview(ctx context.Context, ws *actor.Workspace, itemID, version string) (*InstallPreview, error) {
	it, v, files, err := s.installable(ctx, s.DB.R, ws, itemID, version)
	if err != nil {
		return nil, err
	}
	existing, err := installOfItem(ctx, s.DB.R, ws.ID, it.ID)
	if err != nil {
		return nil, err
	}
	out := &InstallPreview{Version: v.Version, Digest: v.Digest, Capabilities: v.Capabilities, Objects: plan(v, files, nil, nil, nil), Needs: v.Needs}
	if existing != nil {
		out.Installed = &existing.Version
	}
	return out, nil
}

// materialize makes (or updates) a version's objects in the workspace,
// in tx; it answers their ids by key.
func (s *Service) materialize(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, v *ItemVersion, files map[string][]byte,
	made map[string]string, projectID *string, bindings map[string]string) (map[string]string, error) {
	out := map[string]string{}
	flows := false
	for _, o := range v.Objects {
		switch o.Type {
		case "script":
			var f ScriptContent
			if err := json.Unmarshal(files[o.Path], &f); err != nil {
				return nil, apperr.New(apperr.CodeConflict, "the script of %s does not read: %v", o.Key, err)
			}
			sc, err := s.Scripts.InstallTx(ctx, tx, ws, u, made[o.Key], scripts.ScriptCreate{Name: f.Name, Slug: f.Slug, Language: f.Language,
				Source: f.Source, Description: f.Description})
			if err != nil {
				return nil, err
			}
			out[o.Key] = sc.ID
		case "node_type":
			var f NodeTypeContent
			if err := json.Unmarshal(files[o.Path], &f); err != nil {
				return nil, apperr.New(apperr.CodeConflict, "the node type of %s does not read: %v", o.Key, err)
			}
			script, ok := out[f.Script]
			if !ok {
				return nil, apperr.New(apperr.CodeConflict, "the node type of %s names a script the version does not have", o.Key)
			}
			nt, err := s.NodeTypes.InstallNodeTypeTx(ctx, tx, ws, u, made[o.Key], workflows.NodeTypeCreate{Slug: f.Slug, Name: f.Name,
				Description: f.Description, Category: f.Category, ScriptID: script, ConfigSchema: f.ConfigSchema})
			if err != nil {
				return nil, err
			}
			out[o.Key] = *nt.ID
		case ObjectWorkflow, ObjectCodeFile:
			flows = true
		case ObjectApp:
			id, err := s.installApp(ctx, tx, ws, u, o, files, made[o.Key])
			if err != nil {
				return nil, err
			}
			out[o.Key] = id
		default:
			return nil, apperr.BadRequest("objects of type %s cannot be installed by this server", o.Type)
		}
	}
	if flows {
		if err := s.installWorkflows(ctx, tx, ws, v, files, made, out, projectID, bindings); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Install installs a version of an item in the workspace (its admins):
// its objects are made in one transaction and the install pins the
// version's digest. Installing the version installed already changes
// nothing; another version is an update.
func (s *Service) Install(ctx context.Context, ws *actor.Workspace, u *actor.User, itemID, version string, in InstallInput) (*MarketInstall, bool, error) {
	if err := wsAdmin(ws, "installing from the marketplace"); err != nil {
		return nil, false, err
	}
	rng := in.Range
	if rng == "" {
		rng = defaultRange(version)
	}
	if _, err := parseRange(rng); err != nil {
		return nil, false, err
	}
	var out *MarketInstall
	created := false
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		it, v, files, err := s.installable(ctx, tx, ws, itemID, version)
		if err != nil {
			return err
		}
		existing, err := installOfItem(ctx, tx, ws.ID, it.ID)
		if err != nil {
			return err
		}
		if existing != nil {
			if existing.Version == v.Version {
				out = existing
				return nil
			}
			return apperr.New(apperr.CodeConflict, "%s is installed at %s: update the install instead", it.Slug, existing.Version)
		}
		var project *string
		if slices.ContainsFunc(v.Objects, func(o Object) bool { return o.Type == ObjectWorkflow }) {
			if in.ProjectID == "" {
				return apperr.BadRequest("project_id: a bundle's workflows join a project of this workspace: name it")
			}
			project = &in.ProjectID
		} else if in.ProjectID != "" || len(in.Bindings) > 0 {
			return apperr.BadRequest("project_id and bindings are for bundles; %s is a %s", it.Slug, it.Kind)
		}
		bindings, err := s.bindings(ctx, ws, v.Needs, in.Bindings, nil)
		if err != nil {
			return err
		}
		objects, err := s.materialize(ctx, tx, ws, u, v, files, map[string]string{}, project, bindings)
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		out = &MarketInstall{ID: ids.New(), ItemID: it.ID, ItemName: it.Name, Version: v.Version, Digest: v.Digest, Range: rng, Objects: objects,
			ProjectID: project, Bindings: bindings, CreatedAt: now, UpdatedAt: now, workspaceID: ws.ID, installedBy: userRef(u)}
		created = true
		if err := saveInstall(ctx, tx, out, true); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, actorID(u), "marketplace.install", "marketplace_install", out.ID, nil, out)
	})
	return out, created, err
}

// Installs lists the workspace's installs, newest first.
func (s *Service) Installs(ctx context.Context, ws *actor.Workspace) ([]MarketInstall, error) {
	return installsOf(ctx, s.DB.R, ws.ID)
}

// target is the version an update goes to: the one asked for, or the
// latest not withdrawn within the install's range.
func (s *Service) target(ctx context.Context, q db.Queryer, in *MarketInstall, version string) (string, error) {
	if version != "" {
		return version, nil
	}
	rng, err := parseRange(in.Range)
	if err != nil {
		return "", err
	}
	vs, err := versionsOf(ctx, q, in.ItemID)
	if err != nil {
		return "", err
	}
	var best *semver.Version
	for _, v := range vs {
		sv, err := semver.StrictNewVersion(v.Version)
		if err != nil || v.Withdrawn || !rng.Check(sv) {
			continue
		}
		if best == nil || sv.GreaterThan(best) {
			best = sv
		}
	}
	if best == nil {
		return in.Version, nil
	}
	return best.String(), nil
}

// UpdatePreview says what updating an install would change: every file's
// diff and the capability diff (what the new version may do that the
// installed one may not).
func (s *Service) UpdatePreview(ctx context.Context, ws *actor.Workspace, id string, in InstallUpdate) (*UpdatePreview, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("install")
	}
	inst, err := installOf(ctx, s.DB.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	to, err := s.target(ctx, s.DB.R, inst, in.Version)
	if err != nil {
		return nil, err
	}
	_, v, files, err := s.installable(ctx, s.DB.R, ws, inst.ItemID, to)
	if err != nil {
		return nil, err
	}
	cur, err := versionOf(ctx, s.DB.R, inst.ItemID, inst.Version)
	if err != nil {
		return nil, err
	}
	old, err := filesOf(ctx, s.DB.R, cur.ID)
	if err != nil {
		return nil, err
	}
	return &UpdatePreview{From: inst.Version, To: v.Version, Files: diffFiles(old, files),
		Capabilities: diffCapabilities(cur.Capabilities, v.Capabilities), Objects: plan(v, files, inst.Objects, old, cur),
		Needs: v.Needs, Unbound: unbound(v.Needs, inst.Bindings)}, nil
}

// Update moves an install to another version (its admins): the latest
// within its range unless one is named. A person's update applies even
// when capabilities grew (the preview showed them); it clears a held one.
func (s *Service) Update(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in InstallUpdate) (*MarketInstall, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("install")
	}
	if err := wsAdmin(ws, "updating an install"); err != nil {
		return nil, err
	}
	var out *MarketInstall
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		inst, err := installOf(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		to, err := s.target(ctx, tx, inst, in.Version)
		if err != nil {
			return err
		}
		out, err = s.apply(ctx, tx, ws, u, inst, to, in.Bindings, "marketplace.update")
		return err
	})
	return out, err
}

// apply moves an install to a version, in tx.
func (s *Service) apply(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, inst *MarketInstall, to string, given map[string]string,
	action string) (*MarketInstall, error) {
	_, v, files, err := s.installable(ctx, tx, ws, inst.ItemID, to)
	if err != nil {
		return nil, err
	}
	before := *inst
	bindings, err := s.bindings(ctx, ws, v.Needs, given, inst.Bindings)
	if err != nil {
		return nil, err
	}
	if v.Version != inst.Version || !maps.Equal(bindings, inst.Bindings) {
		objects, err := s.materialize(ctx, tx, ws, u, v, files, inst.Objects, inst.ProjectID, bindings)
		if err != nil {
			return nil, err
		}
		inst.Objects, inst.Bindings = objects, bindings
	}
	inst.Version, inst.Digest, inst.HeldVersion, inst.HeldReason, inst.UpdatedAt = v.Version, v.Digest, nil, nil, s.Clock.Now()
	if err := saveInstall(ctx, tx, inst, false); err != nil {
		return nil, err
	}
	return inst, audit.Record(ctx, tx, inst.UpdatedAt, actorID(u), action, "marketplace_install", inst.ID, before, inst)
}

// SetAutoUpdate arms or disarms auto-update, optionally with a new range.
func (s *Service) SetAutoUpdate(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in AutoUpdateInput) (*MarketInstall, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("install")
	}
	if err := wsAdmin(ws, "changing an install"); err != nil {
		return nil, err
	}
	if in.Range != "" {
		if _, err := parseRange(in.Range); err != nil {
			return nil, err
		}
	}
	var out *MarketInstall
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		inst, err := installOf(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		before := *inst
		inst.AutoUpdate, inst.UpdatedAt = in.Enabled, s.Clock.Now()
		if in.Range != "" {
			inst.Range = in.Range
		}
		if err := saveInstall(ctx, tx, inst, false); err != nil {
			return err
		}
		out = inst
		return audit.Record(ctx, tx, inst.UpdatedAt, actorID(u), "marketplace.auto_update", "marketplace_install", inst.ID, before, inst)
	})
	if err == nil && out.AutoUpdate {
		go s.AutoUpdate(context.WithoutCancel(ctx), out.ItemID)
	}
	return out, err
}

// AutoUpdate brings every armed install of an item to the latest version
// within its range, each in its own transaction — unless that version's
// capabilities grew: then it is held, and the person who installed it is
// told.
func (s *Service) AutoUpdate(ctx context.Context, itemID string) {
	insts, err := autoUpdating(ctx, s.DB.R, itemID)
	if err != nil {
		s.Log.Error("marketplace: auto-update", "item_id", itemID, "err", err)
		return
	}
	for i := range insts {
		if err := s.autoUpdate(ctx, &insts[i]); err != nil {
			s.Log.Warn("marketplace: auto-update failed", "install_id", insts[i].ID, "err", err)
		}
	}
}

func (s *Service) autoUpdate(ctx context.Context, snapshot *MarketInstall) error {
	ws := &actor.Workspace{ID: snapshot.workspaceID}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		inst, err := installOf(ctx, tx, ws.ID, snapshot.ID)
		if err != nil || !inst.AutoUpdate {
			return err
		}
		to, err := s.target(ctx, tx, inst, "")
		if err != nil || to == inst.Version || (inst.HeldVersion != nil && *inst.HeldVersion == to) {
			return err
		}
		cur, err := versionOf(ctx, tx, inst.ItemID, inst.Version)
		if err != nil {
			return err
		}
		next, err := versionOf(ctx, tx, inst.ItemID, to)
		if err != nil {
			return err
		}
		d := diffCapabilities(cur.Capabilities, next.Capabilities)
		if open := unbound(next.Needs, inst.Bindings); d.Grew || len(open) > 0 {
			reason := "version " + to + " may do more than " + inst.Version + ": " + strings.Join(d.Added, ", ")
			if !d.Grew {
				reason = "version " + to + " reads what the install has not bound: " + strings.Join(open, ", ")
			}
			before := *inst
			inst.HeldVersion, inst.HeldReason, inst.UpdatedAt = &to, &reason, s.Clock.Now()
			if err := saveInstall(ctx, tx, inst, false); err != nil {
				return err
			}
			if err := audit.Record(ctx, tx, inst.UpdatedAt, "", "marketplace.update.held", "marketplace_install", inst.ID, before, inst); err != nil {
				return err
			}
			if s.Reactions != nil {
				return s.Reactions.UpdateHeld(ctx, tx, ws.ID, inst.installedBy, inst, inst.ItemName, to, reason)
			}
			return nil
		}
		var by *actor.User
		if inst.installedBy != nil {
			by = &actor.User{ID: *inst.installedBy}
		}
		_, err = s.apply(ctx, tx, ws, by, inst, to, nil, "marketplace.auto_update.apply")
		return err
	})
}
