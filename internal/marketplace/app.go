package marketplace

import (
	"context"
	"encoding/json"
	"strings"

	"slipway/internal/apps"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// An app item is an app's source listing: app/app.json holds its name,
// description and manifest, app/files/ its files as they are. An install
// makes the app (not built or deployed: the workspace builds and deploys
// it as any other); an update makes it the new version's source.

// ObjectApp is an app item's object.
const ObjectApp = "app"

const appFilesDir = "app/files/"

// Apps is what the catalog needs of apps: read one's source to publish
// it, make or change one from a listing.
type Apps interface {
	Source(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*apps.Source, error)
	InstallTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, id string, in *apps.Source) (*apps.App, error)
}

// AppContent is app/app.json.
type AppContent struct {
	Name         string  `json:"name"`
	Description  *string `json:"description,omitempty"`
	ManifestYAML string  `json:"manifest_yaml"`
}

// PublishApp publishes an app of the workspace as a source listing.
type PublishApp struct {
	AppID string `json:"app_id" format:"uuid"`
	Listing
}

// PublishApp publishes an app's source as a new version of its item (the
// workspace's admins).
func (s *Service) PublishApp(ctx context.Context, ws *actor.Workspace, u *actor.User, in PublishApp) (*Published, error) {
	if err := wsAdmin(ws, "publishing to the marketplace"); err != nil {
		return nil, err
	}
	if s.Apps == nil {
		return nil, apperr.BadRequest("apps cannot be published on this server")
	}
	src, err := s.Apps.Source(ctx, ws, u, in.AppID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return nil, apperr.BadRequest("app_id: no such app in this workspace")
	}
	if err != nil {
		return nil, err
	}
	head, _ := json.MarshalIndent(AppContent{Name: src.Name, Description: src.Description, ManifestYAML: src.ManifestYAML}, "", "  ")
	files := map[string][]byte{"app/app.json": head}
	size := len(head)
	for p, b := range src.Files {
		files[appFilesDir+p] = b
		size += len(b)
	}
	if len(files) > maxBundleFiles || size > maxBundleBytes {
		return nil, apperr.BadRequest("a listing holds at most %d files and %d bytes", maxBundleFiles, maxBundleBytes)
	}
	return s.publish(ctx, ws, u, KindApp, cmpOr(in.Slug, keyOf(src.Name, func(string) bool { return false })), cmpOr(in.Name, src.Name), in.Summary,
		in.Tags, in.Version, in.Changelog, in.Capabilities, in.Price, []Object{{Type: ObjectApp, Key: ObjectApp, Path: "app/app.json"}}, nil, files)
}

// installApp makes or updates the app of an app item's version, in tx.
func (s *Service) installApp(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, o Object, files map[string][]byte, id string) (string, error) {
	if s.Apps == nil {
		return "", apperr.BadRequest("apps cannot be installed on this server")
	}
	var head AppContent
	if err := json.Unmarshal(files[o.Path], &head); err != nil {
		return "", apperr.New(apperr.CodeConflict, "the app of %s does not read: %v", o.Key, err)
	}
	src := &apps.Source{Name: head.Name, Description: head.Description, ManifestYAML: head.ManifestYAML, Files: map[string][]byte{}}
	for p, b := range files {
		if rest, ok := strings.CutPrefix(p, appFilesDir); ok {
			src.Files[rest] = b
		}
	}
	a, err := s.Apps.InstallTx(ctx, tx, ws, u, id, src)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound && id != "" { // the app was deleted: made again
		a, err = s.Apps.InstallTx(ctx, tx, ws, u, "", src)
	}
	if err != nil {
		return "", err
	}
	return a.ID, nil
}
