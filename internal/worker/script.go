package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"slipway/internal/executor"
	"slipway/internal/platform/redact"
	"slipway/internal/workport"
)

// In-container paths of a script run. ScriptPath holds the source and the
// input, FilesPath the script's files, LibPath the workspace's code library
// (all read-only); WorkPath is its writable working directory.
const (
	ScriptPath = "/slipway"
	FilesPath  = "/slipway-files"
	LibPath    = "/slipway-lib"
	WorkPath   = "/work"
)

// Environment variables a script sees.
const (
	EnvInput = "SLIPWAY_INPUT" // path of the input JSON file
	EnvFiles = "SLIPWAY_FILES" // path of the files directory
	EnvLib   = "SLIPWAY_LIB"   // path of the code library directory
)

// DefaultScriptTimeout bounds a script whose work names no timeout.
const DefaultScriptTimeout = 5 * time.Minute

// MaxScriptOutput caps the line a script's output is read from.
const MaxScriptOutput = 1 << 20

// interpreters run a script file by language.
var interpreters = map[string]struct{ command, ext string }{
	"sh":         {"sh", ".sh"},
	"bash":       {"bash", ".sh"},
	"python":     {"python3", ".py"},
	"javascript": {"node", ".js"},
	"node":       {"node", ".js"}, // another name for javascript
}

// scratch is the directory of this script run on the worker's machine.
func (e *execution) scratch() string {
	return filepath.Join(e.w.cfg.ScratchDir, e.a.Lease.RunID)
}

// script runs a script: its source, input and files written to a scratch
// directory mounted read-only, a writable working directory, stdout and
// stderr as log events, and its last stdout line as its output. A script is
// not resumed after its worker died: it is reported interrupted and runs
// again (scripts should be idempotent; the hub retries them a few times).
func (e *execution) script(ctx context.Context, ev *eventWriter, red *redact.Redactor) workport.Result {
	w, a := e.w, e.a.Script
	if e.a.Resume != nil {
		return workport.Result{Outcome: workport.Interrupted, Error: "the server running this script stopped"}
	}
	lang, ok := interpreters[a.Language]
	if !ok {
		return failed(red, "unknown script language %q", a.Language)
	}
	if w.backend.Name() != "process" && a.Image == "" {
		return failed(red, "no image to run the script in: set the node's image or SERVICE_AGENT_IMAGE")
	}
	root := e.scratch()
	src, files, lib, work := filepath.Join(root, "script"), filepath.Join(root, "files"), filepath.Join(root, "lib"), filepath.Join(root, "work")
	if err := writeScratch(src, files, lib, work, "main"+lang.ext, a); err != nil {
		os.RemoveAll(root)
		return failed(red, "preparing the script's files: %v", err)
	}

	labels := map[string]string{LabelRun: e.a.Lease.RunID, LabelJob: e.a.Lease.JobID}
	for k, v := range w.cfg.Labels {
		labels[k] = v
	}
	spec := executor.Spec{Name: "slipway-" + shortID(e.a.Lease.RunID), Image: a.Image, AgentType: "script", WorkDir: WorkPath, Limits: w.cfg.Limits, Labels: labels,
		Mounts: []executor.Mount{{Source: src, Target: ScriptPath, ReadOnly: true}, {Source: files, Target: FilesPath, ReadOnly: true},
			{Source: lib, Target: LibPath, ReadOnly: true}, {Source: work, Target: WorkPath}}}
	at := func(p string) string { return p }
	if pm, ok := w.backend.(executor.PathMapper); ok {
		at = func(p string) string { return pm.AgentPath(spec, p) }
	}
	spec.Command = []string{lang.command, at(path.Join(ScriptPath, "main"+lang.ext))}
	spec.Env = map[string]string{}
	for k, v := range a.Env {
		spec.Env[k] = v
	}
	spec.Env[EnvInput], spec.Env[EnvFiles], spec.Env[EnvLib] = at(path.Join(ScriptPath, "input.json")), at(FilesPath), at(LibPath)

	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultScriptTimeout
	}
	runCtx, stop := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer stop()
	var last []byte
	code, stderr, runErr := e.runProcess(runCtx, spec, nil, ev, func(line []byte, _ bool) {
		ev.Line("stdout", line)
		if t := strings.TrimSpace(string(line)); t != "" {
			last = append(last[:0], t...)
		}
	})
	if r, ok := stopped(ctx, runCtx, ev, code, timeout, "script"); ok {
		return r
	}
	output := scriptOutput(red, last)
	switch {
	case runErr != nil:
		return workport.Result{Outcome: workport.Failed, ExitCode: code, Error: red.Text(runErr.Error()), Output: output}
	case deref(code) != 0:
		msg := fmt.Sprintf("the script exited with code %d", deref(code))
		if stderr != "" {
			msg += ": " + stderr
		}
		return workport.Result{Outcome: workport.Failed, ExitCode: code, Error: red.Text(msg), Output: output}
	}
	if a.Collect != nil {
		files, err := collect(work, a.Collect)
		if err != nil {
			return workport.Result{Outcome: workport.Failed, ExitCode: code, Error: red.Text(err.Error()), Output: output}
		}
		return workport.Result{Outcome: workport.Succeeded, ExitCode: code, Output: output, Files: files}
	}
	return workport.Result{Outcome: workport.Succeeded, ExitCode: code, Output: output}
}

// scriptOutput is the script's last line as JSON: itself when it is JSON,
// else a JSON string of it.
func scriptOutput(red *redact.Redactor, last []byte) json.RawMessage {
	if len(last) == 0 {
		return nil
	}
	if len(last) > MaxScriptOutput {
		last = last[:MaxScriptOutput]
	}
	if json.Valid(last) {
		return red.JSON(last)
	}
	b, _ := json.Marshal(red.Text(string(last)))
	return b
}

// writeScratch lays out a script run's directories: the source and input,
// the files and the library (paths are relative and clean: the hub checked
// them; they are checked again here), and an empty working directory.
func writeScratch(src, files, lib, work, name string, a *workport.ScriptWork) error {
	for _, d := range []string{src, files, lib, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	input := a.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if err := os.WriteFile(filepath.Join(src, name), []byte(a.Source), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "input.json"), input, 0o644); err != nil {
		return err
	}
	if err := writeFiles(files, "files", a.Files); err != nil {
		return err
	}
	return writeFiles(lib, "library", a.Library)
}

// writeFiles writes files under dir, refusing a path that would leave it.
func writeFiles(dir, what string, fs []workport.ScriptFile) error {
	for _, f := range fs {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return fmt.Errorf("file path %q leaves the %s directory", f.Path, what)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
