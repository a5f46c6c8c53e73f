package apps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
)

// sourceHash is the SHA-256 over what a build reads: the manifest, each
// file's path and content hash (by path), and each migration's name and
// checksum (in order). Lengths prefix every part, so no two sources
// concatenate alike.
func sourceHash(manifestYAML string, files []AppFileInfo, migrations []migrationRef) string {
	h := sha256.New()
	part := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	part("manifest")
	part(manifestYAML)
	sorted := append([]AppFileInfo(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	part("files")
	for _, f := range sorted {
		part(f.Path)
		part(f.ETag)
	}
	part("migrations")
	for _, m := range migrations {
		part(m.Name)
		part(m.Checksum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// migrationRef is a migration as a release expects it.
type migrationRef struct {
	Name     string `json:"name"`
	Checksum string `json:"checksum"`
}

// LatestBuild is the app's newest build, or nil for an app never built.
func (s *Service) LatestBuild(ctx context.Context, ws *actor.Workspace, id string) (*AppBuild, error) {
	var out *AppBuild
	err := s.readApp(ctx, ws, id, func(q db.Queryer) (err error) {
		out, err = latestBuild(ctx, q, ws.ID, id)
		return err
	})
	return out, err
}

// Builds lists the app's builds, newest first (at most 200).
func (s *Service) Builds(ctx context.Context, ws *actor.Workspace, id string) ([]AppBuild, error) {
	var out []AppBuild
	err := s.readApp(ctx, ws, id, func(q db.Queryer) (err error) {
		out, err = listBuilds(ctx, q, ws.ID, id, 200)
		return err
	})
	return out, err
}

// MaxBuilds bounds an app's builds (releases are kept for rollback).
const MaxBuilds = 500

// StartBuild builds the app's source as it stands into a release. The
// same source (manifest, files and migrations by hash) is one build: it
// answers the existing one and created is false. Without a build step the
// release is the files as they are, made in the same transaction.
func (s *Service) StartBuild(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*AppBuild, bool, error) {
	if !ids.Valid(id) {
		return nil, false, notFound
	}
	var out *AppBuild
	created := false
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := lockApp(ctx, tx, s.DB.Dialect, ws.ID, id); err != nil {
			return err
		}
		a, err := getApp(ctx, tx, ws.ID, u.ID, id)
		if err != nil {
			return err
		}
		files, err := listFiles(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		migs, err := listMigrationRefs(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		hash := sourceHash(a.ManifestYAML, files, migs)
		if out, err = buildByHash(ctx, tx, ws.ID, id, hash); err != nil {
			return err
		} else if out != nil {
			if out.Status != "failed" {
				return nil
			}
			// The same source failed: build it again (a build step may
			// fail for reasons outside it).
			if err := requeueRelease(ctx, tx, ws.ID, out.ID); err != nil {
				return err
			}
			if err := s.enqueueBuild(ctx, tx, ws.ID, id, out.ID); err != nil {
				return err
			}
			out.Status, out.Error, out.FinishedAt, created = "queued", nil, nil, true
			return nil
		}
		m, err := parseManifest(a.ManifestYAML)
		if err != nil {
			return err
		}
		if m.Build == nil && !hasFile(files, m.Entry) {
			return apperr.BadRequest("the manifest's entry page %s is not among the app's files", m.Entry)
		}
		n, err := countBuilds(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if n >= MaxBuilds {
			return apperr.BadRequest("an app keeps at most %d builds", MaxBuilds)
		}
		now := s.Clock.Now()
		b := &AppBuild{ID: ids.New(), AppID: id, Number: int64(n) + 1, SourceHash: hash, Status: "succeeded", Files: len(files),
			Migrations: refNames(migs), CreatedAt: now, FinishedAt: &now}
		if m.Build != nil { // the files are its source until the step ran
			b.Status, b.FinishedAt = "queued", nil
		}
		if err := insertRelease(ctx, tx, ws.ID, u.ID, b, a.ManifestYAML, migs); err != nil {
			return err
		}
		if err := copyFilesToRelease(ctx, tx, ws.ID, id, b.ID, now); err != nil {
			return err
		}
		if m.Build != nil {
			if err := s.enqueueBuild(ctx, tx, ws.ID, id, b.ID); err != nil {
				return err
			}
		}
		out, created = b, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// enqueueBuild queues a release's build step, its runs on the app's log.
func (s *Service) enqueueBuild(ctx context.Context, tx *db.Tx, workspaceID, appID, releaseID string) error {
	if s.Queue == nil || s.Runs == nil {
		return apperr.New(apperr.CodeUnprocessable, "this server runs no build steps: remove build: from the manifest and commit the built files")
	}
	if err := s.Runs.EnsureLog(ctx, tx, workspaceID, appID); err != nil {
		return err
	}
	_, err := s.Queue.Enqueue(ctx, tx, jobs.NewJob{Kind: BuildJob, WorkspaceID: workspaceID, Ref: releaseID, MaxAttempts: buildMaxAttempts,
		Payload: buildPayload{ReleaseID: releaseID, AppID: appID}})
	return err
}

func hasFile(files []AppFileInfo, p string) bool {
	for _, f := range files {
		if f.Path == p {
			return true
		}
	}
	return false
}

func refNames(ms []migrationRef) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}
