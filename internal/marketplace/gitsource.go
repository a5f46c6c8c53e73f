package marketplace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// A Git source is a repository of published items, read at the tip of a
// branch. Its catalog lives under marketplace/:
//
//	marketplace/<slug>/item.json                  {"kind", "name", "summary", "tags"}
//	marketplace/<slug>/<version>/version.json     {"changelog", "digest", "manifest"}
//	marketplace/<slug>/<version>/files/<path>     each file the manifest lists
//
// which is what a published version is (GET …/versions/{version} and
// …/files). A sync takes a version only when every file matches the
// manifest's digest and the manifest the version's digest; a version
// synced before must keep its digest (versions are immutable). A version
// that fails is refused, the source's status is sync_error naming it, and
// the rest of the catalog is taken.

// GitReader fetches a Git source's repository (with the host-side git,
// every connection checked where it lands) and reads the files under
// marketplace/ at the tip of branch, byte for byte.
type GitReader interface {
	Read(ctx context.Context, sourceID, url, branch string) (files map[string][]byte, commit string, err error)
	// Forget removes what Read kept of a source (its mirror).
	Forget(sourceID string)
}

// Git source bounds.
const (
	GitDir            = "marketplace/"
	MaxGitFiles       = 5000
	MaxGitFileBytes   = 1 << 20
	MaxGitBytes       = 64 << 20 // all of a catalog's files
	MaxItemsPerSource = 500
	gitSyncTimeout    = 2 * time.Minute
	maxProblems       = 5
)

var branchPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)

// gitURL checks a Git source's URL: https only (each connection goes
// through the outbound check; file paths, ssh and plain http are refused),
// without credentials.
func gitURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	switch {
	case raw == "" || err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Opaque != "":
		return "", apperr.BadRequest("url: an https:// repository URL (a Git source is read over https only)")
	case u.User != nil:
		return "", apperr.BadRequest("url: no credentials in the URL (a Git source is a public repository)")
	case u.RawQuery != "" || u.Fragment != "" || text.StripControls(raw) != raw:
		return "", apperr.BadRequest("url: no query, fragment or control characters")
	}
	return u.String(), nil
}

// gitItemFile is item.json.
type gitItemFile struct {
	Kind    string   `json:"kind"`
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Tags    []string `json:"tags"`
}

// gitVersionFile is version.json.
type gitVersionFile struct {
	Changelog string          `json:"changelog"`
	Digest    string          `json:"digest"`
	Manifest  VersionManifest `json:"manifest"`
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// gitEntry is one item of a Git source's catalog as read.
type gitEntry struct {
	slug     string
	item     gitItemFile
	versions []*ItemVersion
	files    map[string]map[string][]byte // version → path → bytes
}

// readCatalog reads a source's files into items and their verified
// versions; problems are what was refused, and why.
func readCatalog(files map[string][]byte) ([]*gitEntry, []string) {
	var problems []string
	bySlug := map[string]*gitEntry{}
	type verDir struct{ slug, version string }
	verFiles := map[verDir]map[string][]byte{}
	verJSON := map[verDir][]byte{}
	for p, b := range files {
		rest, ok := strings.CutPrefix(p, GitDir)
		if !ok {
			continue
		}
		parts := strings.SplitN(rest, "/", 4)
		switch {
		case len(parts) == 2 && parts[1] == "item.json":
			bySlug[parts[0]] = &gitEntry{slug: parts[0]}
			if err := strictJSON(b, &bySlug[parts[0]].item); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", p, err))
				delete(bySlug, parts[0])
			}
		case len(parts) == 3 && parts[2] == "version.json":
			verJSON[verDir{parts[0], parts[1]}] = b
		case len(parts) == 4 && parts[2] == "files":
			d := verDir{parts[0], parts[1]}
			if verFiles[d] == nil {
				verFiles[d] = map[string][]byte{}
			}
			verFiles[d][parts[3]] = b
		}
	}
	var out []*gitEntry
	for slug, e := range bySlug {
		switch {
		case !slugPattern.MatchString(slug):
			problems = append(problems, fmt.Sprintf("%s: not a slug (lower-case letters, digits and hyphens)", slug))
			continue
		case !slices.Contains([]string{KindBundle, KindNode, KindScript, KindApp}, e.item.Kind):
			problems = append(problems, fmt.Sprintf("%s: kind %q: bundle, node, script or app", slug, clip(e.item.Kind, 20)))
			continue
		}
		name, err := text.Name("name", e.item.Name, 200)
		if err != nil || text.CheckName("summary", e.item.Summary) != nil || len(e.item.Summary) > MaxSummary {
			problems = append(problems, fmt.Sprintf("%s: item.json: a name and a one-line summary", slug))
			continue
		}
		e.item.Name = name
		if e.item.Tags, err = text.Labels("tags", e.item.Tags); err != nil || len(e.item.Tags) > MaxTags {
			problems = append(problems, fmt.Sprintf("%s: item.json: at most %d tags", slug, MaxTags))
			continue
		}
		e.files = map[string]map[string][]byte{}
		for d, raw := range verJSON {
			if d.slug != slug {
				continue
			}
			v, fs, err := gitVersion(e.item.Kind, d.version, raw, verFiles[d])
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s %s: %v; refused", slug, clip(d.version, 50), err))
				continue
			}
			e.versions = append(e.versions, v)
			e.files[v.Version] = fs
		}
		if len(e.versions) > MaxVersionsPerItem {
			problems = append(problems, fmt.Sprintf("%s: more than %d versions", slug, MaxVersionsPerItem))
			continue
		}
		if len(e.versions) > 0 {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *gitEntry) int { return strings.Compare(a.slug, b.slug) })
	slices.Sort(problems)
	return out, problems
}

// gitVersion reads and verifies one version: its files against the
// manifest, the manifest against the digest.
func gitVersion(kind, version string, raw []byte, files map[string][]byte) (*ItemVersion, map[string][]byte, error) {
	sv, err := semver.StrictNewVersion(version)
	if err != nil {
		return nil, nil, fmt.Errorf("not a semver version")
	}
	var vf gitVersionFile
	if err := strictJSON(raw, &vf); err != nil {
		return nil, nil, fmt.Errorf("version.json: %v", err)
	}
	m := vf.Manifest
	switch {
	case m.Kind != kind:
		return nil, nil, fmt.Errorf("the manifest is a %s, the item a %s", clip(m.Kind, 20), kind)
	case strings.TrimSpace(vf.Changelog) == "" || len(vf.Changelog) > MaxChangelog || strings.ContainsRune(vf.Changelog, 0):
		return nil, nil, fmt.Errorf("version.json: a changelog of at most %d bytes", MaxChangelog)
	}
	caps, err := m.Capabilities.clean()
	a, _ := json.Marshal(caps)
	b, _ := json.Marshal(m.Capabilities)
	if err != nil || !bytes.Equal(a, b) {
		return nil, nil, fmt.Errorf("the manifest's capabilities are not clean (sorted, lower-case hosts, no repeats)")
	}
	paths := map[string]bool{}
	for _, f := range m.Files {
		paths[f.Path] = true
	}
	for _, o := range m.Objects {
		if !paths[o.Path] || !slices.Contains([]string{ObjectScript, ObjectNodeType, ObjectWorkflow, ObjectCodeFile, ObjectApp}, o.Type) {
			return nil, nil, fmt.Errorf("object %s: a known type and a file of the manifest", clip(o.Key, 100))
		}
	}
	if err := m.verify(files); err != nil {
		return nil, nil, fmt.Errorf("%v (its digest)", err)
	}
	if m.Digest() != vf.Digest {
		return nil, nil, fmt.Errorf("the manifest does not match the version's digest")
	}
	v := &ItemVersion{ID: ids.New(), Version: sv.String(), Changelog: vf.Changelog, Digest: vf.Digest, manifest: m,
		Objects: m.Objects, Files: m.Files, Capabilities: m.Capabilities, Needs: m.Needs}
	return v, files, nil
}

// syncGit fetches a Git source and takes its catalog in one transaction.
func (s *Service) syncGit(ctx context.Context, ws *actor.Workspace, u *actor.User, src *MarketSource) error {
	if s.Git == nil {
		return apperr.BadRequest("Git sources are not available on this server")
	}
	fctx, cancel := context.WithTimeout(ctx, gitSyncTimeout)
	files, commit, err := s.Git.Read(fctx, src.ID, *src.URL, *src.Branch)
	cancel()
	now := s.Clock.Now()
	if err != nil {
		msg := "fetching " + *src.URL + " failed: " + clip(err.Error(), 500)
		return s.DB.Tx(ctx, func(tx *db.Tx) error {
			return setSyncResult(ctx, tx, ws.ID, src.ID, StatusSyncError, &msg, now)
		})
	}
	entries, problems := readCatalog(files)
	var updated []string
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		cur, err := sourceOf(ctx, tx, ws.ID, src.ID)
		if err != nil {
			return err
		}
		if cur.Status == StatusDisabled {
			return apperr.New(apperr.CodeConflict, "the source is disabled: enable it to sync")
		}
		taken := 0
		for _, e := range entries {
			it, err := sourceItemBySlug(ctx, tx, src.ID, e.slug)
			if err != nil {
				return err
			}
			if it == nil {
				if taken+cur.Items >= MaxItemsPerSource {
					problems = append(problems, fmt.Sprintf("%s: a source lists at most %d items", e.slug, MaxItemsPerSource))
					continue
				}
				taken++
				it = &MarketItem{ID: ids.New(), SourceID: src.ID, Kind: e.item.Kind, Slug: e.slug, Listed: true, CreatedAt: now}
			} else if it.Kind != e.item.Kind {
				problems = append(problems, fmt.Sprintf("%s: was a %s, now a %s; refused", e.slug, it.Kind, e.item.Kind))
				continue
			}
			have, err := versionsOf(ctx, tx, it.ID)
			if err != nil {
				return err
			}
			latest, _ := semver.StrictNewVersion(it.LatestVersion)
			var added []*ItemVersion
			for _, v := range e.versions {
				i := slices.IndexFunc(have, func(h ItemVersion) bool { return h.Version == v.Version })
				if i >= 0 {
					if have[i].Digest != v.Digest {
						problems = append(problems, fmt.Sprintf("%s %s: changed since it was synced (its digest is not %s); refused",
							e.slug, v.Version, have[i].Digest))
					}
					continue
				}
				added = append(added, v)
				if sv, _ := semver.StrictNewVersion(v.Version); latest == nil || sv.GreaterThan(latest) {
					latest = sv
				}
			}
			if len(added) == 0 && it.LatestVersion != "" && it.Name == e.item.Name && it.Summary == e.item.Summary && slices.Equal(it.Tags, e.item.Tags) {
				continue
			}
			if latest == nil { // every version refused, and none kept
				continue
			}
			fresh := it.LatestVersion == ""
			it.Name, it.Summary, it.Tags, it.LatestVersion, it.UpdatedAt = e.item.Name, e.item.Summary, e.item.Tags, latest.String(), now
			if fresh {
				err = insertItem(ctx, tx, it)
			} else {
				err = touchItem(ctx, tx, it)
			}
			if err != nil {
				return err
			}
			for _, v := range added {
				v.ItemID, v.CreatedAt = it.ID, now
				if err := insertVersion(ctx, tx, v, nil); err != nil {
					return err
				}
				for p, b := range e.files[v.Version] {
					if err := insertFile(ctx, tx, v.ID, p, b); err != nil {
						return err
					}
				}
			}
			if len(added) > 0 && !fresh {
				updated = append(updated, it.ID)
			}
		}
		status, lastErr := StatusEnabled, (*string)(nil)
		if len(problems) > 0 {
			slices.Sort(problems)
			msg := strings.Join(problems[:min(len(problems), maxProblems)], "; ")
			if len(problems) > maxProblems {
				msg += fmt.Sprintf("; and %d more", len(problems)-maxProblems)
			}
			status, lastErr = StatusSyncError, &msg
		}
		if err := setSyncResult(ctx, tx, ws.ID, src.ID, status, lastErr, now); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, actorID(u), "marketplace.source.sync", "marketplace_source", src.ID, nil,
			map[string]any{"commit": commit, "items": len(entries), "refused": len(problems)})
	})
	if err != nil {
		return err
	}
	for _, id := range updated {
		go s.AutoUpdate(context.WithoutCancel(ctx), id)
	}
	return nil
}
