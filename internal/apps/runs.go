package apps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// Bounds of a run submission.
const (
	// MaxUploadFiles and MaxUploadBytes bound the files of one submission.
	MaxUploadFiles = 10
	MaxUploadBytes = 10 << 20
	// MaxSubmissionBytes bounds a submission's whole body.
	MaxSubmissionBytes = 55 << 20
	// UploadTTL is how long a submitted file can be downloaded.
	UploadTTL = 24 * time.Hour
)

// Runner starts a workflow's run for an app's submission (workflows).
type Runner interface {
	StartRunTx(ctx context.Context, tx *db.Tx, workspaceID string, createdBy *string, workflowID string, input, trigger json.RawMessage) (string, error)
}

// Submissions starts workflow runs from an app: its front end's or its
// server's submissions, with files.
type Submissions struct {
	apps   *Service
	runner Runner
}

// NewSubmissions returns the submissions service.
func NewSubmissions(apps *Service, r Runner) *Submissions { return &Submissions{apps: apps, runner: r} }

// AppRun answers a submission.
type AppRun struct {
	RunID string       `json:"run_id" doc:"The workflow run started"`
	Files []UploadInfo `json:"files" doc:"The files stored with it, downloadable for a day"`
}

// UploadInfo is a submitted file as the run's input names it.
type UploadInfo struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	URL         string    `json:"url" doc:"GET it with a session of the workspace until expires_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

type upload struct {
	UploadInfo
	content []byte
}

// Submit starts a run of a workflow of the app's workspace from a
// multipart submission: workflow_id, input (a JSON object) and files. The
// run's input is the object with "files" listing them; its trigger names
// the app. The caller is a session of the app's workspace or its App
// token.
func (s *Submissions) Submit(ctx context.Context, appID string, form *multipart.Form) (*AppRun, error) {
	ws, _, userID, err := s.apps.caller(ctx, appID)
	if err != nil {
		return nil, err
	}
	workflowID := formValue(form, "workflow_id")
	if !ids.Valid(workflowID) {
		return nil, apperr.BadRequest("workflow_id: a workflow of the app's workspace")
	}
	input := map[string]any{}
	if raw := formValue(form, "input"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &input); err != nil {
			return nil, apperr.BadRequest("input must be a JSON object: %v", err)
		}
	}
	if _, ok := input["files"]; ok {
		return nil, apperr.BadRequest("input.files is set by the files submitted")
	}
	var files []*multipart.FileHeader
	for name, fs := range form.File {
		if name != "files" {
			return nil, apperr.BadRequest("files go in the field files, not %s", name)
		}
		files = fs
	}
	if len(files) > MaxUploadFiles {
		return nil, apperr.BadRequest("at most %d files per submission", MaxUploadFiles)
	}
	now := s.apps.Clock.Now()
	uploads := make([]upload, 0, len(files))
	infos := make([]UploadInfo, 0, len(files))
	for i, fh := range files {
		u, err := readUpload(fh, now)
		if err != nil {
			return nil, apperr.BadRequest("files[%d]: %v", i, err)
		}
		uploads = append(uploads, *u)
		infos = append(infos, u.UploadInfo)
	}
	input["files"] = infos
	in, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	trigger, _ := json.Marshal(map[string]string{"kind": "app", "app_id": appID})
	var createdBy *string
	if userID != "" {
		createdBy = &userID
	}
	var runID string
	err = s.apps.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if runID, err = s.runner.StartRunTx(ctx, tx, ws, createdBy, workflowID, in, trigger); err != nil {
			return err
		}
		for i := range uploads {
			if err := insertUpload(ctx, tx, ws, appID, runID, &uploads[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &AppRun{RunID: runID, Files: infos}, nil
}

func formValue(f *multipart.Form, name string) string {
	if v := f.Value[name]; len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return ""
}

// readUpload reads one submitted file within its bound.
func readUpload(fh *multipart.FileHeader, now time.Time) (*upload, error) {
	if fh.Size > MaxUploadBytes {
		return nil, apperr.BadRequest("%s is larger than %d bytes (10 MiB)", fh.Filename, MaxUploadBytes)
	}
	name := path.Base(strings.ReplaceAll(fh.Filename, `\`, "/"))
	name = text.Clip(name, 200)
	if name == "" || name == "." || name == "/" {
		name = "file"
	}
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, MaxUploadBytes+1))
	if err != nil {
		return nil, err
	}
	if len(content) > MaxUploadBytes {
		return nil, apperr.BadRequest("%s is larger than %d bytes (10 MiB)", name, MaxUploadBytes)
	}
	ct := http.DetectContentType(content)
	sum := sha256.Sum256(content)
	id := ids.New()
	return &upload{UploadInfo: UploadInfo{ID: id, Name: name, ContentType: ct, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]),
		URL: "/api/app_uploads/" + id + "/download", ExpiresAt: now.Add(UploadTTL)}, content: content}, nil
}

// Download is a submitted file, to a member of its workspace until it
// expires (404 after, as for an unknown one).
func (s *Submissions) Download(ctx context.Context, u *actor.User, id string) (*UploadInfo, []byte, error) {
	gone := apperr.NotFound("upload")
	if !ids.Valid(id) {
		return nil, nil, gone
	}
	ws, info, content, err := uploadByID(ctx, s.apps.DB.R, id)
	if err != nil || info == nil || !info.ExpiresAt.After(s.apps.Clock.Now()) {
		if err == nil {
			err = gone
		}
		return nil, nil, err
	}
	ok, err := s.apps.member(ctx, u, ws)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, gone
	}
	return info, content, nil
}

// PruneUploads deletes expired uploads; it reports how many.
func (s *Submissions) PruneUploads(ctx context.Context) (int, error) {
	return pruneUploads(ctx, s.apps.DB, s.apps.Clock.Now())
}
