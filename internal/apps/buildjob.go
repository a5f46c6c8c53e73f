package apps

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"slipway/internal/dispatch"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/runs"
	"slipway/internal/workport"
)

// BuildJob runs an app's build step (the manifest's build:) through the
// worker port: the command in the manifest's image with the release's
// source as its working directory; the files it leaves in the output
// directory become the release.
const BuildJob = "app_build"

// A build step's time and attempts (a worker that dies gives it one more).
const (
	buildTimeout     = 10 * time.Minute
	buildMaxAttempts = 2
	maxBuildError    = 4000
)

// EnvBuildCommand carries the manifest's build command into the build's
// shell, so it is never spliced into a script's text.
const EnvBuildCommand = "SLIPWAY_BUILD_COMMAND"

// buildScript copies the read-only source into the writable working
// directory and runs the command there.
const buildScript = `set -e
cp -R "$SLIPWAY_FILES"/. .
exec sh -c "$` + EnvBuildCommand + `"
`

type buildPayload struct {
	ReleaseID string `json:"release_id"`
	AppID     string `json:"app_id"`
}

// Builder returns the dispatch handler of app build steps.
func (s *Service) Builder() dispatch.Handler { return builder{s: s} }

type builder struct{ s *Service }

func payloadOf(j *jobs.Job) (buildPayload, error) {
	var p buildPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return p, fmt.Errorf("apps: payload of job %s: %w", j.ID, err)
	}
	return p, nil
}

// Start implements dispatch.Handler: the queued release starts running,
// with a run (its log) on the app's event log, and the worker gets the
// release's source (its files as they were when the build was asked for).
// A release gone (its app deleted) drops the job.
func (h builder) Start(ctx context.Context, tx *db.Tx, j *jobs.Job, w dispatch.WorkerInfo) (*workport.Assignment, error) {
	p, err := payloadOf(j)
	if err != nil {
		return nil, err
	}
	rel, err := buildSource(ctx, tx, j.WorkspaceID, p.ReleaseID)
	if err != nil || rel == nil || rel.status != "queued" {
		return nil, err
	}
	m, err := parseManifest(rel.manifestYAML)
	if err != nil || m.Build == nil {
		return nil, failRelease(ctx, tx, j.WorkspaceID, p.ReleaseID, "the release's manifest has no build step", h.s.Clock.Now())
	}
	files, err := releaseContents(ctx, tx, j.WorkspaceID, p.ReleaseID)
	if err != nil {
		return nil, err
	}
	run, err := h.s.Runs.Start(ctx, tx, runs.NewRun{Kind: runs.KindScript, WorkspaceID: j.WorkspaceID, LogID: p.AppID, JobID: j.ID, Backend: w.Backend})
	if err != nil {
		return nil, err
	}
	if err := setReleaseRunning(ctx, tx, j.WorkspaceID, p.ReleaseID, run.ID); err != nil {
		return nil, err
	}
	env := map[string]string{}
	for k, v := range m.Env {
		env[k] = v
	}
	env[EnvBuildCommand] = m.Build.Command
	env["SLIPWAY_APP_ID"], env["SLIPWAY_BUILD_ID"] = p.AppID, p.ReleaseID
	return &workport.Assignment{
		Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID, RunID: run.ID},
		Work:  workport.WorkScript,
		Script: &workport.ScriptWork{Language: "sh", Source: buildScript, Files: files, Image: m.Build.Image, Timeout: buildTimeout, Env: env,
			Collect: &workport.Collect{Dir: m.Build.Output, MaxFiles: MaxFiles, MaxFileBytes: MaxFileBytes, MaxTotalBytes: MaxTotalBytes}},
	}, nil
}

// Resume implements dispatch.Handler: a build is not resumed; its worker
// reports it interrupted and it runs again (or fails on its last attempt).
func (h builder) Resume(ctx context.Context, j *jobs.Job) (*workport.Assignment, error) {
	a := &workport.Assignment{Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID},
		Work: workport.WorkScript, Script: &workport.ScriptWork{}, Resume: &workport.Resume{}}
	r, err := h.running(ctx, h.s.DB.R, j)
	if err != nil {
		return nil, err
	}
	if r != nil {
		a.Lease.RunID, a.Resume.BatchSeq = r.ID, r.BatchSeq
	}
	return a, nil
}

func (h builder) running(ctx context.Context, q db.Queryer, j *jobs.Job) (*runs.Run, error) {
	p, err := payloadOf(j)
	if err != nil {
		return nil, err
	}
	return h.s.Runs.RunningOfJob(ctx, q, j.WorkspaceID, p.AppID, j.ID)
}

// Finish implements dispatch.Handler: the run ends as the build did; a
// succeeded build's output (checked like files put through the API: paths,
// count, sizes, the entry page among them) becomes the release's files,
// in the transaction that completes the job.
func (h builder) Finish(ctx context.Context, tx *db.Tx, j *jobs.Job, runID string, r workport.Result) error {
	status, ok := dispatch.RunStatus(r.Outcome)
	if !ok {
		return fmt.Errorf("apps: unknown outcome %q", r.Outcome)
	}
	p, err := payloadOf(j)
	if err != nil {
		return err
	}
	now := h.s.Clock.Now()
	reason := r.Error
	if status == runs.Succeeded {
		rel, err := buildSource(ctx, tx, j.WorkspaceID, p.ReleaseID)
		if err != nil {
			return err
		}
		if rel == nil { // the app is gone
			_, err := h.s.Runs.Finish(ctx, tx, j.WorkspaceID, runID, status, r.ExitCode, r.Error)
			return err
		}
		if reason, err = h.release(ctx, tx, j.WorkspaceID, p.ReleaseID, rel.manifestYAML, r.Files, now); err != nil {
			return err
		}
		if reason != "" {
			status = runs.Failed
		}
	}
	if _, err := h.s.Runs.Finish(ctx, tx, j.WorkspaceID, runID, status, r.ExitCode, reason); err != nil {
		return err
	}
	if status == runs.Succeeded {
		return nil
	}
	if reason == "" {
		reason = "the build " + status
	}
	return failRelease(ctx, tx, j.WorkspaceID, p.ReleaseID, reason, now)
}

// release makes the build's output the release's files and marks it
// succeeded; it answers why the output cannot be a release ("" when it
// is one).
func (h builder) release(ctx context.Context, tx *db.Tx, workspaceID, releaseID, manifestYAML string, out []workport.ScriptFile, now time.Time) (string, error) {
	m, err := parseManifest(manifestYAML)
	if err != nil {
		return err.Error(), nil
	}
	if len(out) > MaxFiles {
		return fmt.Sprintf("the build left %d files: a release holds at most %d", len(out), MaxFiles), nil
	}
	files := make([]releaseContent, 0, len(out))
	seen := map[string]bool{}
	var total int64
	for _, f := range out {
		p, err := cleanPath(f.Path)
		if err != nil {
			return fmt.Sprintf("the build left %q: %v", f.Path, err), nil
		}
		if seen[p] {
			return fmt.Sprintf("the build left %s twice", p), nil
		}
		seen[p] = true
		if len(f.Content) > MaxFileBytes {
			return fmt.Sprintf("the build left %s of %d bytes: at most %d per file", p, len(f.Content), MaxFileBytes), nil
		}
		if total += int64(len(f.Content)); total > MaxTotalBytes {
			return fmt.Sprintf("the build left more than %d bytes", MaxTotalBytes), nil
		}
		files = append(files, releaseContent{path: p, hash: etagOf(f.Content), content: f.Content})
	}
	if !seen[m.Entry] {
		return fmt.Sprintf("the manifest's entry page %s is not among the files the build left in %s", m.Entry, m.Build.Output), nil
	}
	if err := replaceReleaseFiles(ctx, tx, workspaceID, releaseID, files, now); err != nil {
		return "", err
	}
	return "", succeedRelease(ctx, tx, workspaceID, releaseID, now)
}

// Interrupted implements dispatch.Handler: the run ends failed; the build
// waits in the queue again, or fails with the reason on its last attempt.
func (h builder) Interrupted(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error {
	r, err := h.running(ctx, tx, j)
	if err != nil {
		return err
	}
	if r != nil {
		if _, err := h.s.Runs.Finish(ctx, tx, j.WorkspaceID, r.ID, runs.Failed, nil, reason); err != nil {
			return err
		}
	}
	p, err := payloadOf(j)
	if err != nil {
		return err
	}
	if final {
		return failRelease(ctx, tx, j.WorkspaceID, p.ReleaseID, reason, h.s.Clock.Now())
	}
	return requeueRelease(ctx, tx, j.WorkspaceID, p.ReleaseID)
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
