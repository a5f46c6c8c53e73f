package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Bounds of the llm agent's tools.
const (
	toolOutputLimit    = 50_000 // bytes of one tool's output fed back to the model
	eventOutputLimit   = 8_000  // bytes of tool output in a tool_result line
	bashDefaultTimeout = 120 * time.Second
	bashMaxTimeout     = 600 * time.Second
	readFileMax        = 10 << 20 // read_file refuses larger files
	listDirMax         = 1000     // entries list_dir shows
)

// Tool names.
const (
	toolBash      = "bash"
	toolReadFile  = "read_file"
	toolWriteFile = "write_file"
	toolEditFile  = "edit_file"
	toolListDir   = "list_dir"
	toolFinish    = "finish"
	toolDelegate  = "delegate"
	toolPropose   = "propose"
)

// toolDefs are the tools offered to the model, in the OpenAI
// function-calling format.
var toolDefs = []toolDef{
	fn(toolBash, "Run a shell command with /bin/sh -c in the workspace directory and return its combined stdout and stderr (long output keeps its beginning and end) and exit code. Use it to search (grep, find), build and run tests. It has no stdin; interactive commands will not work.",
		props{"command": str("the command line"), "timeout_seconds": integer("seconds before the command is killed (default 120, max 600)")}, "command"),
	fn(toolReadFile, "Read a text file in the workspace. Optionally only lines start_line..end_line (1-based, inclusive).",
		props{"path": str("file path relative to the workspace"), "start_line": integer("first line to return"), "end_line": integer("last line to return")}, "path"),
	fn(toolWriteFile, "Create or overwrite a file in the workspace with the given content; missing parent directories are created.",
		props{"path": str("file path relative to the workspace"), "content": str("the complete new content")}, "path", "content"),
	fn(toolEditFile, "Replace one exact occurrence of old_string with new_string in a file. old_string must match the file exactly (whitespace included) and occur exactly once; include surrounding lines to make it unique.",
		props{"path": str("file path relative to the workspace"), "old_string": str("the exact text to replace"), "new_string": str("the replacement text")}, "path", "old_string", "new_string"),
	fn(toolListDir, "List a directory in the workspace (directories end with /).",
		props{"path": str("directory path relative to the workspace (default: the workspace itself)")}),
	fn(toolDelegate, "Hand a self-contained piece of work to another agent as a subtask of this task, in the same repository on its own branch. It runs separately; you get a message when it ends. Use it for work that is independent of yours.",
		props{"prompt": str("the complete instructions for the other agent"), "agent_profile": str("the agent profile to run it (default: yours)"),
			"title": str("a short title")}, "prompt"),
	fn(toolPropose, "Propose a change to the workspace instead of making it: a person approves or rejects it later (you are not told which). kind workflow: payload is a workflow as POST /api/workflows takes it ({project_id, name, nodes, edges}), or with target_id the full replacement of that workflow; kind env_var: payload is {key, value, project_id (optional)} with a plain value (never a secret); kind resource: payload is a resource as POST /api/resources takes it ({kind, name, description, config}, never a secret); kind backlog_item: payload is {project_id, title, body, labels}, a card for the project's backlog; kind repo_change: payload is {project_id, title, description, patch (a unified diff, optional)}, which becomes a task of the project.",
		props{"kind": map[string]any{"type": "string", "enum": []string{"workflow", "env_var", "resource", "backlog_item", "repo_change"}, "description": "what the change is"},
			"title": str("a short title"), "summary": str("why the change is needed"), "target_id": str("the workflow it replaces (workflow only)"),
			"payload": map[string]any{"type": "object", "description": "the change itself"}}, "kind", "title", "payload"),
	fn(toolFinish, "End the run when the task is done. The summary says what you changed and how you verified it.",
		props{"summary": str("what was done")}, "summary"),
}

type toolDef struct {
	Type     string      `json:"type"` // "function"
	Function toolFuncDef `json:"function"`
}

type toolFuncDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

type props map[string]any

func fn(name, desc string, p props, required ...string) toolDef {
	params := map[string]any{"type": "object", "properties": map[string]any(p)}
	if len(required) > 0 {
		params["required"] = required
	}
	return toolDef{Type: "function", Function: toolFuncDef{Name: name, Description: desc, Parameters: params}}
}

func str(desc string) map[string]any { return schema("string", desc) }

func integer(desc string) map[string]any { return schema("integer", desc) }

func schema(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

func knownTool(name string) bool {
	return slices.ContainsFunc(toolDefs, func(d toolDef) bool { return d.Function.Name == name })
}

// toolOutcome is what one tool call produced. A tool's own failure (file
// not found, command exit 1) is an outcome with ok false, fed back to the
// model; only an interrupt is an error.
type toolOutcome struct {
	output   string
	ok       bool
	finished bool // finish was called; output is the summary
}

func failed(format string, a ...any) toolOutcome {
	return toolOutcome{output: fmt.Sprintf(format, a...)}
}

// toolbox runs tools in one workspace.
type toolbox struct {
	ws  *workspace
	env []string // the bash tool's environment (no secrets)
}

// call runs a known tool with arguments that are a JSON object.
func (t *toolbox) call(ctx context.Context, name string, args json.RawMessage) (toolOutcome, error) {
	switch name {
	case toolBash:
		var a struct {
			Command        string `json:"command"`
			TimeoutSeconds int    `json:"timeout_seconds"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return failed("invalid arguments: %v", err), nil
		}
		return t.bash(ctx, a.Command, a.TimeoutSeconds)
	case toolReadFile:
		var a struct {
			Path      string `json:"path"`
			StartLine int    `json:"start_line"`
			EndLine   int    `json:"end_line"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return failed("invalid arguments: %v", err), nil
		}
		return t.readFile(a.Path, a.StartLine, a.EndLine), nil
	case toolWriteFile:
		var a struct {
			Path    string  `json:"path"`
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return failed("invalid arguments: %v", err), nil
		}
		if a.Content == nil {
			return failed("content is required"), nil
		}
		return t.writeFile(a.Path, *a.Content), nil
	case toolEditFile:
		var a struct {
			Path      string `json:"path"`
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return failed("invalid arguments: %v", err), nil
		}
		return t.editFile(a.Path, a.OldString, a.NewString), nil
	case toolListDir:
		var a struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return failed("invalid arguments: %v", err), nil
		}
		if a.Path == "" {
			a.Path = "."
		}
		return t.listDir(a.Path), nil
	case toolFinish:
		var a struct {
			Summary string `json:"summary"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return failed("invalid arguments: %v", err), nil
		}
		if strings.TrimSpace(a.Summary) == "" {
			a.Summary = "finished"
		}
		return toolOutcome{output: a.Summary, ok: true, finished: true}, nil
	}
	return failed("unknown tool %q", name), nil
}

func (t *toolbox) bash(ctx context.Context, command string, timeoutSecs int) (toolOutcome, error) {
	if strings.TrimSpace(command) == "" {
		return failed("command is required"), nil
	}
	timeout := bashDefaultTimeout
	if timeoutSecs > 0 {
		timeout = min(time.Duration(timeoutSecs)*time.Second, bashMaxTimeout)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := newBoundedText(toolOutputLimit)
	ps, err := process{script: command, dir: t.ws.dir, env: t.env, stdout: out.addLine}.run(tctx)
	switch {
	case ctx.Err() != nil:
		return toolOutcome{}, context.Cause(ctx)
	case tctx.Err() != nil:
		return failed("%s[timed out after %s; the command and everything it started were killed]", out.String(), timeout), nil
	case err != nil:
		return failed("%v", err), nil
	}
	text := out.String()
	if text == "" {
		text = "(no output)\n"
	}
	return toolOutcome{output: text + "[" + exitText(ps) + "]", ok: ps.ExitCode() == 0}, nil
}

func (t *toolbox) readFile(path string, startLine, endLine int) toolOutcome {
	rel, err := t.ws.rel(path)
	if err != nil {
		return failed("%v", err)
	}
	fi, err := t.ws.root.Stat(rel)
	if err != nil {
		return failed("%v", t.ws.pathErr(path, err))
	}
	if fi.IsDir() {
		return failed("%s is a directory; use list_dir", path)
	}
	if fi.Size() > readFileMax {
		return failed("%s is %d bytes, larger than read_file reads (%d); use bash (head, sed -n, grep) for parts", path, fi.Size(), readFileMax)
	}
	f, err := t.ws.root.Open(rel)
	if err != nil {
		return failed("%v", t.ws.pathErr(path, err))
	}
	data, err := io.ReadAll(io.LimitReader(f, readFileMax))
	f.Close()
	if err != nil {
		return failed("reading %s: %v", path, err)
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return failed("%s looks binary (%d bytes); not shown", path, len(data))
	}
	text := string(data)
	if startLine > 0 || endLine > 0 {
		lines := strings.SplitAfter(text, "\n")
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		from, to := max(startLine, 1), endLine
		if to <= 0 || to > len(lines) {
			to = len(lines)
		}
		if from > len(lines) {
			return failed("%s has %d lines; start_line %d is past the end", path, len(lines), startLine)
		}
		if from > to {
			return failed("start_line %d is after end_line %d", startLine, endLine)
		}
		text = strings.Join(lines[from-1:to], "")
	}
	if text == "" {
		return toolOutcome{output: "(empty)", ok: true}
	}
	if len(text) > toolOutputLimit {
		text = truncate(text, toolOutputLimit) + fmt.Sprintf("\n[truncated: showing the first %d of %d bytes; use start_line/end_line for the rest]", toolOutputLimit, len(text))
	}
	return toolOutcome{output: text, ok: true}
}

func (t *toolbox) writeFile(path, content string) toolOutcome {
	rel, err := t.ws.rel(path)
	if err != nil {
		return failed("%v", err)
	}
	if rel == "." {
		return failed("%s is the workspace directory, not a file", path)
	}
	perm := fs.FileMode(0o644)
	if fi, err := t.ws.root.Stat(rel); err == nil {
		if fi.IsDir() {
			return failed("%s is a directory", path)
		}
		perm = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return failed("%v", t.ws.pathErr(path, err))
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := t.ws.root.MkdirAll(dir, 0o755); err != nil {
			return failed("%v", t.ws.pathErr(path, err))
		}
	}
	if err := t.ws.root.WriteFile(rel, []byte(content), perm); err != nil {
		return failed("%v", t.ws.pathErr(path, err))
	}
	return toolOutcome{output: fmt.Sprintf("wrote %d bytes to %s", len(content), path), ok: true}
}

func (t *toolbox) editFile(path, oldString, newString string) toolOutcome {
	if oldString == "" {
		return failed("old_string must not be empty (use write_file to create or overwrite a file)")
	}
	if oldString == newString {
		return failed("old_string and new_string are the same; nothing to change")
	}
	rel, err := t.ws.rel(path)
	if err != nil {
		return failed("%v", err)
	}
	fi, err := t.ws.root.Stat(rel)
	if err != nil {
		return failed("%v", t.ws.pathErr(path, err))
	}
	if fi.IsDir() {
		return failed("%s is a directory", path)
	}
	data, err := t.ws.root.ReadFile(rel)
	if err != nil {
		return failed("%v", t.ws.pathErr(path, err))
	}
	switch n := strings.Count(string(data), oldString); n {
	case 0:
		return failed("old_string not found in %s; it must match the file exactly, whitespace included (read_file shows the current content)", path)
	case 1:
	default:
		return failed("old_string occurs %d times in %s; include more surrounding text so it matches exactly once", n, path)
	}
	updated := strings.Replace(string(data), oldString, newString, 1)
	if err := t.ws.root.WriteFile(rel, []byte(updated), fi.Mode().Perm()); err != nil {
		return failed("%v", t.ws.pathErr(path, err))
	}
	return toolOutcome{output: fmt.Sprintf("edited %s: replaced 1 occurrence (%d bytes -> %d bytes)", path, len(oldString), len(newString)), ok: true}
}

func (t *toolbox) listDir(path string) toolOutcome {
	rel, err := t.ws.rel(path)
	if err != nil {
		return failed("%v", err)
	}
	f, err := t.ws.root.Open(rel)
	if err != nil {
		return failed("%v", t.ws.pathErr(path, err))
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return failed("listing %s: %v", path, err)
	}
	if len(entries) == 0 {
		return toolOutcome{output: "(empty directory)", ok: true}
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b strings.Builder
	for i, e := range entries {
		if i == listDirMax {
			fmt.Fprintf(&b, "[... %d more entries]\n", len(entries)-listDirMax)
			break
		}
		switch {
		case e.IsDir():
			b.WriteString(e.Name() + "/\n")
		case e.Type()&fs.ModeSymlink != 0:
			b.WriteString(e.Name() + "@\n")
		default:
			b.WriteString(e.Name() + "\n")
		}
	}
	return toolOutcome{output: b.String(), ok: true}
}

// workspace confines file tools to the work directory: paths are relative
// to it, an absolute path must lie inside it, and every file operation goes
// through an os.Root, which refuses ".." and symbolic links that lead out.
// This guards against the model's mistakes; the container is the sandbox
// (the bash tool can reach anything the container can).
type workspace struct {
	dir      string // absolute, as given
	resolved string // dir with symbolic links resolved
	root     *os.Root
}

func openWorkspace(dir string) (*workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	return &workspace{dir: abs, resolved: resolved, root: root}, nil
}

func (w *workspace) close() { w.root.Close() }

// rel turns a tool's path into a clean path relative to the workspace, or
// says why it is refused.
func (w *workspace) rel(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is required")
	}
	c := filepath.Clean(p)
	if filepath.IsAbs(c) {
		r, ok := within(w.dir, c)
		if !ok {
			r, ok = within(w.resolved, c)
		}
		if !ok {
			return "", fmt.Errorf("path %s is outside the workspace %s", p, w.dir)
		}
		return r, nil
	}
	if _, ok := within(".", c); !ok {
		return "", fmt.Errorf("path %s escapes the workspace %s", p, w.dir)
	}
	return c, nil
}

func within(base, p string) (string, bool) {
	r, err := filepath.Rel(base, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return r, true
}

// pathErr words an os.Root error for the model.
func (w *workspace) pathErr(p string, err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("path %s leads outside the workspace %s through a symbolic link (absolute links are not followed either)", p, w.dir)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such file or directory", p)
	}
	return err
}

// boundedText collects output lines up to a limit, keeping the beginning and
// the end (where errors and test summaries usually are).
type boundedText struct {
	half      int
	head      strings.Builder
	tail      []string
	tailBytes int
	omitted   int
}

func newBoundedText(limit int) *boundedText { return &boundedText{half: limit / 2} }

func (b *boundedText) addLine(line []byte) {
	s := truncate(string(line), b.half-1) + "\n"
	if len(b.tail) == 0 && b.head.Len()+len(s) <= b.half {
		b.head.WriteString(s)
		return
	}
	b.tail = append(b.tail, s)
	b.tailBytes += len(s)
	for b.tailBytes > b.half && len(b.tail) > 1 {
		b.omitted += len(b.tail[0])
		b.tailBytes -= len(b.tail[0])
		b.tail = b.tail[1:]
	}
}

func (b *boundedText) String() string {
	var s strings.Builder
	s.WriteString(b.head.String())
	if b.omitted > 0 {
		fmt.Fprintf(&s, "[... %d bytes of output omitted ...]\n", b.omitted)
	}
	for _, t := range b.tail {
		s.WriteString(t)
	}
	return s.String()
}
