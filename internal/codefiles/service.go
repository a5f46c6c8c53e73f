package codefiles

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"unicode/utf8"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/workflows"
	"slipway/internal/workport"
)

// Workflows reads the workflow a node's files belong to.
type Workflows interface {
	// Get reads a workflow of the workspace (ErrNotFound for an unknown or
	// foreign id).
	Get(ctx context.Context, ws *actor.Workspace, id string) (*workflows.Workflow, error)
}

// Service manages code files and hands them to code runs.
type Service struct {
	db        *db.DB
	clock     clock.Clock
	workflows Workflows
}

// NewService returns the code files service.
func NewService(d *db.DB, clk clock.Clock, wf Workflows) *Service {
	return &Service{db: d, clock: clk, workflows: wf}
}

// Set names a set of files in a request: the workspace's code library
// (the zero Set) or a code node of a workflow.
type Set struct {
	WorkflowID string
	NodeKey    string
}

// CleanPath normalises a file path, or says why it cannot be one: it is
// trimmed and cleaned (path.Clean), and must be relative, slash-separated
// UTF-8 text without a .. segment (before or after cleaning), backslash,
// NUL or other control or bidirectional-override character, at most
// MaxPathBytes long and MaxSegments deep. Names starting with a dot
// (.env, .config/x) are ordinary files.
func CleanPath(raw string) (string, error) {
	return text.RelPath("path", raw, MaxPathBytes, MaxSegments)
}

// checkContent: a file is UTF-8 text without NUL (PostgreSQL cannot store
// one in text), at most MaxFileBytes.
func checkContent(c string) error {
	switch {
	case len(c) > MaxFileBytes:
		return apperr.BadRequest("content is too large: %d bytes, at most %d bytes (256 KiB) per file", len(c), MaxFileBytes)
	case strings.IndexByte(c, 0) >= 0:
		return apperr.BadRequest("content must not contain NUL characters: files are text")
	case !utf8.ValidString(c):
		return apperr.BadRequest("content must be UTF-8 text")
	}
	return nil
}

// resolve turns a request's set into a scope of the workspace. A node's
// workflow must be the workspace's (404 like an unknown id, whatever else
// is wrong) and the key a code node of its current graph (400). Reading
// and deleting also reach the files a key kept after its node was removed
// or changed kind (orphaned: mounted nowhere), so they can be cleaned up.
func (s *Service) resolve(ctx context.Context, ws *actor.Workspace, set Set, write bool) (scope, error) {
	sc := scope{WorkspaceID: ws.ID}
	if set == (Set{}) {
		return sc, nil
	}
	wf, err := s.workflows.Get(ctx, ws, set.WorkflowID)
	if err != nil {
		return sc, err
	}
	sc.WorkflowID, sc.NodeKey = wf.ID, set.NodeKey
	kind := ""
	for _, n := range wf.Nodes {
		if n.Key == set.NodeKey {
			kind = n.Kind
			break
		}
	}
	if kind == "code" {
		return sc, nil
	}
	if !write {
		orphans, err := hasFiles(ctx, s.db.R, sc)
		if err != nil {
			return sc, err
		}
		if orphans {
			return sc, nil
		}
	}
	if kind == "" {
		return sc, apperr.BadRequest("the workflow has no node %q: files belong to its code nodes", set.NodeKey)
	}
	return sc, apperr.BadRequest("node %q is not a code node (it is %s): only code nodes have files", set.NodeKey, kind)
}

// List lists a set's files, without their contents, by path (byte order).
func (s *Service) List(ctx context.Context, ws *actor.Workspace, set Set) ([]FileInfo, error) {
	sc, err := s.resolve(ctx, ws, set, false)
	if err != nil {
		return nil, err
	}
	out, err := listInfos(ctx, s.db.R, sc)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Get reads one file of a set with its content.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, set Set, rawPath string) (*File, error) {
	sc, err := s.resolve(ctx, ws, set, false)
	if err != nil {
		return nil, err
	}
	p, err := CleanPath(rawPath)
	if err != nil {
		return nil, err
	}
	return getFile(ctx, s.db.R, sc, p)
}

// Put creates or replaces a file of a set. ifMatch, when not empty, is the
// sha256 the file must have now ("*": the file must exist), else 412. The
// set's limits hold under concurrent puts: they run one at a time per set.
// Content equal to the stored one changes nothing, not even updated_at.
func (s *Service) Put(ctx context.Context, ws *actor.Workspace, set Set, in FileInput, ifMatch string) (*FileInfo, error) {
	sc, err := s.resolve(ctx, ws, set, true)
	if err != nil {
		return nil, err
	}
	p, err := CleanPath(in.Path)
	if err != nil {
		return nil, err
	}
	if err := checkContent(in.Content); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(in.Content))
	f := &File{Path: p, Content: in.Content, Size: int64(len(in.Content)), SHA256: hex.EncodeToString(sum[:])}
	ifMatch = strings.Trim(strings.TrimSpace(ifMatch), `"`)
	var out *FileInfo
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		lock := "code-files:" + sc.WorkspaceID
		if !sc.library() {
			if err := lockWorkflow(ctx, tx, sc.WorkspaceID, sc.WorkflowID); err != nil {
				return err
			}
			lock += ":" + sc.WorkflowID + ":" + sc.NodeKey
		}
		if err := s.db.Dialect.XactLock(ctx, tx, lock); err != nil {
			return err
		}
		infos, err := listInfos(ctx, tx, sc)
		if err != nil {
			return err
		}
		var old *FileInfo
		var count int
		var total int64
		for i, o := range infos {
			switch {
			case o.Path == p:
				old = &infos[i]
				continue
			case strings.HasPrefix(p, o.Path+"/"):
				return apperr.BadRequest("path %s: %s is a file, not a directory", p, o.Path)
			case strings.HasPrefix(o.Path, p+"/"):
				return apperr.BadRequest("path %s is a directory: it holds %s", p, o.Path)
			}
			count++
			total += o.Size
		}
		if ifMatch != "" && (old == nil || (ifMatch != "*" && ifMatch != old.SHA256)) {
			return apperr.New(apperr.CodePreconditionFailed, "If-Match: the file's sha256 is not %q (it changed, or is gone)", ifMatch)
		}
		if old == nil && count >= MaxFiles {
			return apperr.BadRequest("too many files: %s holds at most %d files", sc.what(), MaxFiles)
		}
		if total+f.Size > MaxTotalBytes {
			return apperr.BadRequest("files too large together: %s holds at most %d bytes (4 MiB) in all, this file would make it %d",
				sc.what(), MaxTotalBytes, total+f.Size)
		}
		if old != nil && old.SHA256 == f.SHA256 {
			out = old
			return nil
		}
		f.UpdatedAt = s.clock.Now()
		if old != nil {
			f.CreatedAt = old.CreatedAt
			out = f.Info()
			return updateFile(ctx, tx, sc, f)
		}
		f.CreatedAt = f.UpdatedAt
		out = f.Info()
		return insertFile(ctx, tx, ids.New(), sc, f)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes a file of a set; false when there was none.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, set Set, rawPath string) (bool, error) {
	sc, err := s.resolve(ctx, ws, set, false)
	if err != nil {
		return false, err
	}
	p, err := CleanPath(rawPath)
	if err != nil {
		return false, err
	}
	return deleteFile(ctx, s.db.W, sc, p)
}

// ReplaceNodeTx makes a code node's files exactly files (path → content)
// in tx, for a marketplace install of a bundle: each path and content is
// checked as a PUT checks them, and the set's limits hold; files not named
// are removed, unchanged ones are left as they are.
func ReplaceNodeTx(ctx context.Context, tx *db.Tx, clk clock.Clock, workspaceID, workflowID, nodeKey string, files map[string]string) error {
	sc := scope{WorkspaceID: workspaceID, WorkflowID: workflowID, NodeKey: nodeKey}
	if len(files) > MaxFiles {
		return apperr.BadRequest("too many files: %s holds at most %d files", sc.what(), MaxFiles)
	}
	var total int64
	clean := make(map[string]string, len(files))
	for raw, content := range files {
		p, err := CleanPath(raw)
		if err != nil {
			return err
		}
		if err := checkContent(content); err != nil {
			return err
		}
		total += int64(len(content))
		clean[p] = content
	}
	if total > MaxTotalBytes {
		return apperr.BadRequest("files too large together: %s holds at most %d bytes (4 MiB) in all", sc.what(), MaxTotalBytes)
	}
	for p := range clean {
		for o := range clean {
			if strings.HasPrefix(o, p+"/") {
				return apperr.BadRequest("path %s is a directory: it holds %s", p, o)
			}
		}
	}
	if err := lockWorkflow(ctx, tx, workspaceID, workflowID); err != nil {
		return err
	}
	infos, err := listInfos(ctx, tx, sc)
	if err != nil {
		return err
	}
	now := clk.Now()
	old := map[string]FileInfo{}
	for _, o := range infos {
		if _, keep := clean[o.Path]; !keep {
			if _, err := deleteFile(ctx, tx, sc, o.Path); err != nil {
				return err
			}
			continue
		}
		old[o.Path] = o
	}
	for p, content := range clean {
		sum := sha256.Sum256([]byte(content))
		f := &File{Path: p, Content: content, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), CreatedAt: now, UpdatedAt: now}
		o, ok := old[p]
		switch {
		case ok && o.SHA256 == f.SHA256:
		case ok:
			f.CreatedAt = o.CreatedAt
			err = updateFile(ctx, tx, sc, f)
		default:
			err = insertFile(ctx, tx, ids.New(), sc, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Contents hands code runs their files (workflows.CodeFiles, and the
// library to scripts). It reads in the caller's transaction and needs
// nothing else, so the engine gets it before the service exists.
type Contents struct{}

// Files implements workflows.CodeFiles: a code node's files, by path.
func (Contents) Files(ctx context.Context, q db.Queryer, workspaceID, workflowID, nodeKey string) ([]workport.ScriptFile, error) {
	return sorted(contents(ctx, q, scope{WorkspaceID: workspaceID, WorkflowID: workflowID, NodeKey: nodeKey}))
}

// Library implements workflows.CodeFiles: the workspace's code library,
// by path.
func (Contents) Library(ctx context.Context, q db.Queryer, workspaceID string) ([]workport.ScriptFile, error) {
	return sorted(contents(ctx, q, scope{WorkspaceID: workspaceID}))
}

func sorted(fs []workport.ScriptFile, err error) ([]workport.ScriptFile, error) {
	if err != nil {
		return nil, err
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
	return fs, nil
}
