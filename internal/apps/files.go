package apps

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// cleanPath checks a file's path (relative, no .., no controls).
func cleanPath(raw string) (string, error) {
	return text.RelPath("path", raw, MaxPathBytes, MaxSegments)
}

// etagOf is the hex SHA-256 of content.
func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Files lists an app's files by path, without their contents.
func (s *Service) Files(ctx context.Context, ws *actor.Workspace, id string) ([]AppFileInfo, error) {
	var out []AppFileInfo
	err := s.readApp(ctx, ws, id, func(q db.Queryer) (err error) {
		out, err = listFiles(ctx, q, ws.ID, id)
		return err
	})
	return out, err
}

// AppFile reads one file with its content: text as itself, other bytes in
// base64.
func (s *Service) File(ctx context.Context, ws *actor.Workspace, id, rawPath string) (*AppFile, error) {
	if !ids.Valid(id) {
		return nil, notFound
	}
	p, err := cleanPath(rawPath)
	if err != nil {
		return nil, err
	}
	info, content, err := getFile(ctx, s.DB.R, ws.ID, id, p)
	if err != nil {
		return nil, err
	}
	f := &AppFile{AppFileInfo: *info, Encoding: "utf-8"}
	if utf8.Valid(content) && !strings.ContainsRune(string(content), 0) {
		f.Content = string(content)
	} else {
		f.Encoding, f.Content = "base64", base64.StdEncoding.EncodeToString(content)
	}
	return f, nil
}

// Precondition is a write's If-Match or If-None-Match.
type Precondition struct {
	IfMatch     string // an etag, or * (the file exists)
	IfNoneMatch string // * (create only)
}

func unquote(etag string) string { return strings.Trim(strings.TrimSpace(etag), `"`) }

// PutFile creates or replaces a file. If-Match holds it to the etag it
// names (412 otherwise); If-None-Match: * makes it create-only (412 when
// the file exists).
func (s *Service) PutFile(ctx context.Context, ws *actor.Workspace, id, rawPath string, in AppFileWrite, pre Precondition) (*AppFileInfo, bool, error) {
	if !ids.Valid(id) {
		return nil, false, notFound
	}
	p, err := cleanPath(rawPath)
	if err != nil {
		return nil, false, err
	}
	var content []byte
	switch in.Encoding {
	case "", "utf-8":
		if !utf8.ValidString(in.Content) {
			return nil, false, apperr.BadRequest("content must be UTF-8 text (send other bytes with encoding base64)")
		}
		content = []byte(in.Content)
	case "base64":
		if content, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, false, apperr.BadRequest("content is not base64: %v", err)
		}
	default:
		return nil, false, apperr.BadRequest("encoding must be utf-8 or base64")
	}
	if len(content) > MaxFileBytes {
		return nil, false, apperr.BadRequest("content is too large: %d bytes, at most %d (1 MiB) per file", len(content), MaxFileBytes)
	}
	ifMatch, ifNone := unquote(pre.IfMatch), strings.TrimSpace(pre.IfNoneMatch)
	if ifNone != "" && ifNone != "*" {
		return nil, false, apperr.BadRequest("If-None-Match takes only *: create the file only if it does not exist")
	}
	f := &AppFileInfo{Path: p, Size: int64(len(content)), ETag: etagOf(content), UpdatedAt: s.Clock.Now()}
	created := false
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := lockApp(ctx, tx, s.DB.Dialect, ws.ID, id); err != nil {
			return err
		}
		infos, err := listFiles(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		var old *AppFileInfo
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
		switch {
		case ifNone == "*" && old != nil:
			return apperr.New(apperr.CodePreconditionFailed, "If-None-Match: the file exists (etag %s)", old.ETag)
		case ifMatch != "" && old == nil:
			return apperr.New(apperr.CodePreconditionFailed, "If-Match: the file does not exist")
		case ifMatch != "" && ifMatch != "*" && ifMatch != old.ETag:
			return apperr.New(apperr.CodePreconditionFailed, "If-Match: the file's etag is %s, not %s (it changed)", old.ETag, ifMatch)
		}
		if old == nil && count >= MaxFiles {
			return apperr.BadRequest("too many files: an app holds at most %d", MaxFiles)
		}
		if total+f.Size > MaxTotalBytes {
			return apperr.BadRequest("files too large together: an app holds at most %d bytes (20 MiB), this file would make it %d", MaxTotalBytes, total+f.Size)
		}
		if old != nil && old.ETag == f.ETag {
			*f = *old
			return nil
		}
		created = old == nil
		if err := putFile(ctx, tx, ws.ID, id, f, content); err != nil {
			return err
		}
		return touchApp(ctx, tx, ws.ID, id, f.UpdatedAt)
	})
	if err != nil {
		return nil, false, err
	}
	return f, created, nil
}

// DeleteFile removes a file; false when there was none. If-Match holds it
// to the etag it names.
func (s *Service) DeleteFile(ctx context.Context, ws *actor.Workspace, id, rawPath, ifMatch string) (bool, error) {
	if !ids.Valid(id) {
		return false, notFound
	}
	p, err := cleanPath(rawPath)
	if err != nil {
		return false, err
	}
	ifMatch = unquote(ifMatch)
	deleted := false
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := lockApp(ctx, tx, s.DB.Dialect, ws.ID, id); err != nil {
			return err
		}
		if ifMatch != "" {
			info, _, err := getFile(ctx, tx, ws.ID, id, p)
			if err != nil {
				return apperr.New(apperr.CodePreconditionFailed, "If-Match: the file does not exist")
			}
			if ifMatch != "*" && ifMatch != info.ETag {
				return apperr.New(apperr.CodePreconditionFailed, "If-Match: the file's etag is %s, not %s (it changed)", info.ETag, ifMatch)
			}
		}
		var err error
		if deleted, err = deleteFile(ctx, tx, ws.ID, id, p); err != nil || !deleted {
			return err
		}
		return touchApp(ctx, tx, ws.ID, id, s.Clock.Now())
	})
	return deleted, err
}
