package apps

import (
	"context"
	"sort"
	"strings"

	"slipway/internal/billing"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// Source is an app's source as the marketplace lists it: its name,
// description and manifest, and every file's bytes.
type Source struct {
	Name         string
	Description  *string
	ManifestYAML string
	Files        map[string][]byte
}

// Source reads an app's source (the marketplace publishes it).
func (s *Service) Source(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Source, error) {
	a, err := s.Get(ctx, ws, u, id)
	if err != nil {
		return nil, err
	}
	out := &Source{Name: a.Name, Description: a.Description, ManifestYAML: a.ManifestYAML, Files: map[string][]byte{}}
	infos, err := listFiles(ctx, s.DB.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	for _, f := range infos {
		_, content, err := getFile(ctx, s.DB.R, ws.ID, id, f.Path)
		if err != nil {
			return nil, err
		}
		out.Files[f.Path] = content
	}
	return out, nil
}

// checkSource checks a source as Create and PutFile check theirs; it
// answers the cleaned name and description and the files by clean path.
func checkSource(in *Source) (string, *string, map[string][]byte, error) {
	name, err := text.Name("name", in.Name, 100)
	if err != nil {
		return "", nil, nil, err
	}
	var desc *string
	if in.Description != nil {
		if desc, err = checkDescription(*in.Description); err != nil {
			return "", nil, nil, err
		}
	}
	if _, err := parseManifest(in.ManifestYAML); err != nil {
		return "", nil, nil, err
	}
	if len(in.Files) > MaxFiles {
		return "", nil, nil, apperr.BadRequest("too many files: an app holds at most %d", MaxFiles)
	}
	files := make(map[string][]byte, len(in.Files))
	var total int64
	for raw, b := range in.Files {
		p, err := cleanPath(raw)
		if err != nil {
			return "", nil, nil, err
		}
		if len(b) > MaxFileBytes {
			return "", nil, nil, apperr.BadRequest("%s is too large: at most %d bytes (1 MiB) per file", p, MaxFileBytes)
		}
		total += int64(len(b))
		files[p] = b
	}
	if total > MaxTotalBytes {
		return "", nil, nil, apperr.BadRequest("files too large together: an app holds at most %d bytes (20 MiB)", MaxTotalBytes)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for i := 1; i < len(paths); i++ {
		if strings.HasPrefix(paths[i], paths[i-1]+"/") {
			return "", nil, nil, apperr.BadRequest("path %s is a directory: it holds %s", paths[i-1], paths[i])
		}
	}
	return name, desc, files, nil
}

// InstallTx makes an app from a source in tx (id ""), or makes an app of
// the workspace that source exactly: its name, description, manifest and
// files (files the source lacks are removed). A marketplace install or
// update calls it; the app is not built or deployed.
func (s *Service) InstallTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, id string, in *Source) (*App, error) {
	name, desc, files, err := checkSource(in)
	if err != nil {
		return nil, err
	}
	if u == nil { // an auto-update whose installer is gone
		u = &actor.User{}
	}
	now := s.Clock.Now()
	var a *App
	if id != "" {
		if err := lockApp(ctx, tx, s.DB.Dialect, ws.ID, id); err != nil {
			return nil, err
		}
		if a, err = getApp(ctx, tx, ws.ID, u.ID, id); err != nil {
			return nil, err
		}
		if taken, err := nameTaken(ctx, tx, ws.ID, name, id); err != nil || taken {
			if err == nil {
				err = apperr.BadRequest("name: the workspace already has another app named %q", name)
			}
			return nil, err
		}
		a.Name, a.Description, a.ManifestYAML, a.UpdatedAt = name, desc, in.ManifestYAML, now
		if err := updateApp(ctx, tx, ws.ID, a); err != nil {
			return nil, err
		}
	} else {
		if s.Quota != nil {
			if err := s.Quota.Check(ctx, tx, billing.Subject{WorkspaceID: ws.ID, UserID: u.ID}, "apps.max", 1); err != nil {
				return nil, err
			}
		}
		if n, err := countApps(ctx, tx, ws.ID); err != nil {
			return nil, err
		} else if n >= MaxPerWorkspace {
			return nil, apperr.BadRequest("a workspace holds at most %d apps", MaxPerWorkspace)
		}
		if taken, err := nameTaken(ctx, tx, ws.ID, name, ""); err != nil || taken {
			if err == nil {
				err = apperr.New(apperr.CodeConflict, "the workspace already has an app named %q: rename it to install this one", name)
			}
			return nil, err
		}
		a = &App{AppSummary: AppSummary{ID: ids.New(), Name: name, Description: desc, CreatedAt: now, UpdatedAt: now}, ManifestYAML: in.ManifestYAML}
		if err := insertApp(ctx, tx, ws.ID, u.ID, a); err != nil {
			return nil, err
		}
	}
	a.Manifest, _ = parseManifest(a.ManifestYAML)
	infos, err := listFiles(ctx, tx, ws.ID, a.ID)
	if err != nil {
		return nil, err
	}
	have := map[string]string{}
	for _, f := range infos {
		if _, keep := files[f.Path]; !keep {
			if _, err := deleteFile(ctx, tx, ws.ID, a.ID, f.Path); err != nil {
				return nil, err
			}
			continue
		}
		have[f.Path] = f.ETag
	}
	for p, b := range files {
		f := &AppFileInfo{Path: p, Size: int64(len(b)), ETag: etagOf(b), UpdatedAt: now}
		if have[p] == f.ETag {
			continue
		}
		if err := putFile(ctx, tx, ws.ID, a.ID, f, b); err != nil {
			return nil, err
		}
	}
	return a, nil
}
