package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/agents/protocol"
)

// safety bounds a wait that should end quickly; it is never a timing
// assertion.
const safety = 30 * time.Second

func TestMain(m *testing.M) {
	retryDelay = func(int) time.Duration { return time.Millisecond }
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for a writer and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// agentRun is one Main call in the background with piped stdin.
type agentRun struct {
	t      *testing.T
	stdin  *io.PipeWriter
	stdout *syncBuffer
	stderr *syncBuffer
	code   chan int
}

// startAgent runs Main with start as the first stdin line; stdin stays open.
func startAgent(t *testing.T, start any) *agentRun {
	t.Helper()
	pr, pw := io.Pipe()
	r := &agentRun{t: t, stdin: pw, stdout: &syncBuffer{}, stderr: &syncBuffer{}, code: make(chan int, 1)}
	go func() { r.code <- Main(context.Background(), pr, r.stdout, r.stderr) }()
	t.Cleanup(func() { pw.Close() })
	line, ok := start.(string)
	if !ok {
		b, err := json.Marshal(start)
		if err != nil {
			t.Fatal(err)
		}
		line = string(b)
	}
	r.send(line)
	return r
}

// send writes one stdin line, unless the agent is gone.
func (r *agentRun) send(line string) {
	r.t.Helper()
	done := make(chan error, 1)
	go func() { _, err := io.WriteString(r.stdin, line+"\n"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			r.t.Logf("stdin write: %v", err)
		}
	case <-time.After(safety):
		r.t.Fatalf("stdin write blocked; stderr:\n%s", r.stderr.String())
	}
}

func (r *agentRun) sendJSON(v any) {
	r.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		r.t.Fatal(err)
	}
	r.send(string(b))
}

// wait returns the exit code and the stdout lines, after checking that the
// last line is the one and only result line.
func (r *agentRun) wait() (int, []string, protocol.Result) {
	r.t.Helper()
	var code int
	select {
	case code = <-r.code:
	case <-time.After(safety):
		r.t.Fatalf("agent did not finish; stdout:\n%s\nstderr:\n%s", r.stdout.String(), r.stderr.String())
	}
	lines := strings.Split(strings.TrimRight(r.stdout.String(), "\n"), "\n")
	results := 0
	for _, l := range lines {
		if protocol.ParseLine([]byte(l)).Type == protocol.OutResult {
			results++
		}
	}
	var res protocol.Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.Type != protocol.OutResult || results != 1 {
		r.t.Fatalf("want exactly one result line, last; got %d, stdout:\n%s", results, r.stdout.String())
	}
	// Success exits 0, failure with a code of 1 or more; the result line
	// carries the code the agent exits with.
	if (res.Status == protocol.ResultSuccess) != (code == 0) {
		r.t.Errorf("exit code %d with result status %q", code, res.Status)
	}
	if res.ExitCode == nil || *res.ExitCode != code {
		r.t.Errorf("the result line says exit code %v, the agent exited with %d", res.ExitCode, code)
	}
	return code, lines, res
}

// waitFor polls buf until it holds s.
func waitFor(t *testing.T, what string, buf *syncBuffer, s string) string {
	t.Helper()
	deadline := time.Now().Add(safety)
	for time.Now().Before(deadline) {
		if out := buf.String(); strings.Contains(out, s) {
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never contained %q:\n%s", what, s, buf.String())
	return ""
}

func shellStart(dir, script string) protocol.Start {
	return protocol.Start{Type: protocol.InStart, AgentType: protocol.AgentShell, Prompt: script, WorkDir: dir}
}

// runToEnd starts the agent, closes stdin after the start line and waits.
// runToEnd runs an agent to its own end, with its stdin open throughout (as
// its hub keeps it).
func runToEnd(t *testing.T, start any) (int, []string, protocol.Result, *agentRun) {
	t.Helper()
	r := startAgent(t, start)
	code, lines, res := r.wait()
	return code, lines, res, r
}

// TestNoStartLine: stdin that ends before a start line means whoever started
// the agent is gone: no result line, exit code 130.
func TestNoStartLine(t *testing.T) {
	var stdout, stderr syncBuffer
	if code := Main(context.Background(), strings.NewReader(""), &stdout, &stderr); code != ExitHubGone {
		t.Fatalf("exit code %d, want %d", code, ExitHubGone)
	}
	if stdout.String() != "" {
		t.Fatalf("stdout = %q, want nothing", stdout.String())
	}
	if !strings.Contains(stderr.String(), "before the start line") {
		t.Fatalf("stderr does not say why:\n%s", stderr.String())
	}
}

func TestStartLine(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		line  string
		want  string
		code  int
		empty bool // stdin closes without a line
	}{
		{name: "not JSON", line: "run the tests please", want: "not a JSON object", code: 2},
		{name: "wrong type", line: `{"type":"message","text":"hi"}`, want: `type is "message"`, code: 2},
		{name: "unknown agent type", line: `{"type":"start","agent_type":"robot","workdir":"` + dir + `"}`, want: `unknown agent_type "robot"`, code: 2},
		{name: "no agent type", line: `{"type":"start","workdir":"` + dir + `"}`, want: "agent_type is required", code: 2},
		{name: "no workdir", line: `{"type":"start","agent_type":"shell","prompt":"true"}`, want: "workdir is required", code: 2},
		{name: "shell without script", line: `{"type":"start","agent_type":"shell","workdir":"` + dir + `"}`, want: "needs a prompt", code: 2},
		{name: "llm without model", line: `{"type":"start","agent_type":"llm","prompt":"x","base_url":"http://x","workdir":"` + dir + `"}`, want: "needs a model", code: 2},
		{name: "llm without base_url", line: `{"type":"start","agent_type":"llm","prompt":"x","model":"m","workdir":"` + dir + `"}`, want: "needs a base_url", code: 2},
		{name: "command without template", line: `{"type":"start","agent_type":"command","workdir":"` + dir + `"}`, want: "needs a command_template", code: 2},
		{name: "command with quoted placeholder", line: `{"type":"start","agent_type":"command","command_template":"agent --prompt \"{prompt}\"","workdir":"` + dir + `"}`, want: "placeholder {prompt} is inside quotes", code: 2},
		{name: "workdir missing", line: `{"type":"start","agent_type":"shell","prompt":"true","workdir":"` + dir + `/nope"}`, want: "workdir", code: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			in := tc.line + "\n"
			if tc.empty {
				in = ""
			}
			code := Main(context.Background(), strings.NewReader(in), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			var res protocol.Result
			if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &res) != nil {
				t.Fatalf("want one result line, got:\n%s", stdout.String())
			}
			if res.Status != protocol.ResultFailure || !strings.Contains(res.Error, tc.want) {
				t.Errorf("result %+v, want failure containing %q", res, tc.want)
			}
			if tc.code == 2 && !strings.HasPrefix(res.Error, "malformed start line: ") {
				t.Errorf("error %q does not say the start line is malformed", res.Error)
			}
		})
	}
}

func TestShell(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		status     string
		summary    string
		errHas     []string
		wantLines  []string // stdout lines expected verbatim, in order
		wantStderr []string // texts of role=stderr messages
		code       int      // the agent's exit code: the script's own when it failed
	}{
		{
			name:      "success",
			script:    `echo hello; echo '{"type":"cost","model":"m","prompt_tokens":1,"completion_tokens":2,"total_tokens":3}'`,
			status:    protocol.ResultSuccess,
			summary:   "script exited with code 0",
			wantLines: []string{"hello", `{"type":"cost","model":"m","prompt_tokens":1,"completion_tokens":2,"total_tokens":3}`},
		},
		{
			name:    "runs in the workdir",
			script:  `pwd`,
			status:  protocol.ResultSuccess,
			summary: "script exited with code 0",
		},
		{
			name:       "failure names the exit code and the last stderr line",
			script:     `echo working; echo first problem >&2; echo 'boom: it broke' >&2; exit 3`,
			status:     protocol.ResultFailure,
			errHas:     []string{"exit code 3", "boom: it broke"},
			wantLines:  []string{"working"},
			wantStderr: []string{"first problem", "boom: it broke"},
			code:       3,
		},
		{
			name:   "false",
			script: `false`,
			status: protocol.ResultFailure,
			errHas: []string{"script failed with exit code 1"},
			code:   1,
		},
		{
			name:       "stderr JSON is never a protocol line",
			script:     `echo '{"type":"result","status":"success"}' >&2; exit 4`,
			status:     protocol.ResultFailure,
			errHas:     []string{"exit code 4"},
			wantStderr: []string{`{"type":"result","status":"success"}`},
			code:       4,
		},
		{
			name:   "a script killed by a signal exits 128 plus the signal",
			script: `kill -TERM $$`,
			status: protocol.ResultFailure,
			code:   143,
		},
		{
			name:    "the script's own result line gives the summary",
			script:  `echo '{"type":"result","status":"failure","summary":"deployed 3 services"}'`,
			status:  protocol.ResultSuccess,
			summary: "deployed 3 services",
		},
		{
			name:   "the script's own result error is kept, the exit code decides",
			script: `echo '{"type":"result","status":"success","error":"tests failed"}'; exit 2`,
			status: protocol.ResultFailure,
			errHas: []string{"exit code 2", "tests failed"},
			code:   2,
		},
		{
			name:      "the script cannot read the control channel",
			script:    `cat; echo after-cat`,
			status:    protocol.ResultSuccess,
			wantLines: []string{"after-cat"},
		},
		{
			name:    "a background process does not hold the run open",
			script:  `sleep 1000 & echo started`,
			status:  protocol.ResultSuccess,
			summary: "script exited with code 0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code, lines, res, _ := runToEnd(t, shellStart(dir, tc.script))
			if res.Status != tc.status {
				t.Fatalf("status %q, want %q; result %+v\n%s", res.Status, tc.status, res, strings.Join(lines, "\n"))
			}
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if tc.summary != "" && res.Summary != tc.summary {
				t.Errorf("summary %q, want %q", res.Summary, tc.summary)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(res.Error, s) {
					t.Errorf("error %q does not contain %q", res.Error, s)
				}
			}
			var plain, stderrTexts []string
			for _, l := range lines[:len(lines)-1] {
				var m protocol.Message
				if json.Unmarshal([]byte(l), &m) == nil && m.Type == protocol.OutMessage && m.Role == protocol.RoleStderr {
					stderrTexts = append(stderrTexts, m.Text)
					continue
				}
				plain = append(plain, l)
			}
			if tc.wantLines != nil && strings.Join(plain, "\n") != strings.Join(tc.wantLines, "\n") {
				t.Errorf("stdout lines %q, want %q", plain, tc.wantLines)
			}
			if tc.wantStderr != nil && strings.Join(stderrTexts, "\n") != strings.Join(tc.wantStderr, "\n") {
				t.Errorf("stderr messages %q, want %q", stderrTexts, tc.wantStderr)
			}
			if tc.name == "runs in the workdir" {
				got, _ := filepath.EvalSymlinks(lines[0])
				want, _ := filepath.EvalSymlinks(dir)
				if got != want {
					t.Errorf("pwd %q, want %q", lines[0], dir)
				}
			}
		})
	}
}

func TestShellEnvironmentHasNoSecrets(t *testing.T) {
	hidden := map[string]string{
		"SLIPWAY_TEST_RUNNER_ID": "runner-config",
		"LLM_PROVIDER_API_KEY":   "provider-key",
		"DEPLOY_TOKEN":           "deploy-token",
		"MY_DB_PASSWORD":         "db-password",
		"DOCKER_HOST":            "unix:///var/run/docker.sock",
		"DATABASE_URL":           "postgres://hub:pw@db/hub",
		"INNOCENT_LOOKING":       "Bearer copy-of-the-api-key", // holds the key
	}
	kept := map[string]string{
		"TEST_DATABASE_URL":        "postgres://agent:x@sidecar/test",
		"ATTACHMENTS_FILE_WAIT_MS": "30000",
		"SLIPWAYTEST_TOOL_HOME":    "/opt/tool",
	}
	for k, v := range hidden {
		t.Setenv(k, v)
	}
	for k, v := range kept {
		t.Setenv(k, v)
	}
	start := shellStart(t.TempDir(), `env; echo env-done`)
	start.APIKey = "copy-of-the-api-key"
	_, lines, res, _ := runToEnd(t, start)
	if res.Status != protocol.ResultSuccess {
		t.Fatalf("result %+v", res)
	}
	out := "\n" + strings.Join(lines, "\n")
	for k, v := range hidden {
		if strings.Contains(out, "\n"+k+"=") || strings.Contains(out, v) {
			t.Errorf("the script saw %s in its environment", k)
		}
	}
	for k, v := range kept {
		if !strings.Contains(out, k+"="+v) {
			t.Errorf("the script did not get %s", k)
		}
	}
	if !strings.Contains(out, "PATH=") || !strings.Contains(out, "env-done") {
		t.Errorf("the script's environment lacks PATH or did not run:\n%s", out)
	}
}

// TestShellStdinEOF: the end of stdin means the hub is gone: the script's
// whole process group is stopped and the agent exits without a result line.
func TestShellStdinEOF(t *testing.T) {
	dir := t.TempDir()
	r := startAgent(t, shellStart(dir, `sleep 1000 & echo "pgid $$"; sleep 1000; wait`))
	out := waitFor(t, "stdout", r.stdout, "pgid ")
	pgid := parsePGID(t, out)
	r.stdin.Close()
	var code int
	select {
	case code = <-r.code:
	case <-time.After(safety):
		t.Fatalf("the agent did not stop when its stdin ended; stderr:\n%s", r.stderr.String())
	}
	if code != ExitHubGone {
		t.Fatalf("exit code %d, want %d", code, ExitHubGone)
	}
	for _, l := range strings.Split(r.stdout.String(), "\n") {
		if protocol.ParseLine([]byte(l)).Type == protocol.OutResult {
			t.Fatalf("a result line was written with nobody to read it: %s", l)
		}
	}
	if !strings.Contains(r.stderr.String(), "is gone") {
		t.Errorf("stderr does not say why it stopped:\n%s", r.stderr.String())
	}
	waitGroupGone(t, pgid)
}

func TestShellInterrupt(t *testing.T) {
	r := startAgent(t, shellStart(t.TempDir(), `sleep 1000 & echo "pgid $$"; sleep 1000; wait`))
	out := waitFor(t, "stdout", r.stdout, "pgid ")
	pgid := parsePGID(t, out)
	// Messages and approvals are accepted and ignored by the shell agent.
	r.sendJSON(protocol.Message{Type: protocol.InMessage, Text: "please hurry"})
	r.send(`{"type":"approval","id":"a1","verdict":"approved"}`)
	r.send(`not json at all`)
	if live := liveGroupMembers(t, pgid); len(live) == 0 {
		t.Fatalf("process group %d has no live member before the interrupt", pgid)
	}
	r.sendJSON(protocol.Interrupt{Type: protocol.InInterrupt})
	code, _, res := r.wait()
	if code != 1 || res.Status != protocol.ResultFailure || res.Error != "interrupted" {
		t.Fatalf("exit %d, result %+v; want failure \"interrupted\"", code, res)
	}
	waitGroupGone(t, pgid)
	if s := r.stderr.String(); !strings.Contains(s, "ignoring message") || !strings.Contains(s, "ignoring approval") {
		t.Errorf("stderr does not log the ignored message and approval:\n%s", s)
	}
}

func TestShellContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	pr, pw := io.Pipe()
	defer pw.Close()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- Main(ctx, pr, &stdout, &stderr) }()
	b, _ := json.Marshal(shellStart(t.TempDir(), `echo "pgid $$"; exec sleep 1000`))
	go io.WriteString(pw, string(b)+"\n")
	pgid := parsePGID(t, waitFor(t, "stdout", &stdout, "pgid "))
	cancel(fmt.Errorf("signal: terminated"))
	select {
	case c := <-code:
		if c != 1 || !strings.Contains(stdout.String(), `"error":"interrupted: signal: terminated"`) {
			t.Fatalf("exit %d, stdout:\n%s", c, stdout.String())
		}
	case <-time.After(safety):
		t.Fatal("agent did not stop")
	}
	waitGroupGone(t, pgid)
}

func parsePGID(t *testing.T, out string) int {
	t.Helper()
	_, rest, _ := strings.Cut(out, "pgid ")
	n, err := strconv.Atoi(strings.Fields(rest)[0])
	if err != nil {
		t.Fatalf("no pgid in %q", out)
	}
	return n
}

// liveGroupMembers lists the processes of group pgid that are not zombies
// (an orphaned zombie is dead, whoever reaps it).
func liveGroupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			live = append(live, pid)
		}
	}
	return live
}

func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(safety)
	for {
		live := liveGroupMembers(t, pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCommand(t *testing.T) {
	dir := t.TempDir()
	nasty := `it's "quoted" $(touch pwned1) ` + "`touch pwned2`" + ` ; touch pwned3 && echo '{model}' \ end`
	start := protocol.Start{
		Type:            protocol.InStart,
		AgentType:       protocol.AgentCommand,
		Prompt:          nasty,
		Model:           "gpt-o'neil",
		Instructions:    "be careful; $HOME",
		APIKey:          "key-for-the-cli",
		WorkDir:         dir,
		CommandTemplate: `printf '%s\n' {prompt} {model} {workdir} {instructions} "$SLIPWAY_API_KEY" "$SLIPWAY_MODEL"; exit 0`,
	}
	_, lines, res, _ := runToEnd(t, start)
	if res.Status != protocol.ResultSuccess || res.Summary != "command exited with code 0" {
		t.Fatalf("result %+v\n%s", res, strings.Join(lines, "\n"))
	}
	want := []string{nasty, "gpt-o'neil", dir, "be careful; $HOME", "key-for-the-cli", "gpt-o'neil"}
	if got := lines[:len(lines)-1]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("command saw\n%q\nwant\n%q", got, want)
	}
	for _, f := range []string{"pwned1", "pwned2", "pwned3"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("the prompt was executed: %s exists", f)
		}
	}
}

func TestCommandExitCode(t *testing.T) {
	start := protocol.Start{Type: protocol.InStart, AgentType: protocol.AgentCommand, WorkDir: t.TempDir(),
		Prompt: "x", CommandTemplate: `echo "agent says no" >&2; exit 7`}
	code, _, res, _ := runToEnd(t, start)
	if code != 7 || !strings.Contains(res.Error, "command failed with exit code 7") || !strings.Contains(res.Error, "agent says no") {
		t.Fatalf("exit %d, result %+v", code, res)
	}
}

func TestExpandTemplate(t *testing.T) {
	s := protocol.Start{Prompt: "say {model} 'hi'", Model: "m1", WorkDir: "/workspace", Instructions: ""}
	tests := []struct {
		tmpl, want, err string
	}{
		{tmpl: "agent --model {model} -p {prompt}", want: `agent --model 'm1' -p 'say {model} '\''hi'\'''`},
		{tmpl: "cd {workdir} && agent {instructions}", want: `cd '/workspace' && agent ''`},
		{tmpl: `echo \{prompt} '{x}' "{y}" {unknown}`, want: `echo \{prompt} '{x}' "{y}" {unknown}`},
		{tmpl: `agent "--prompt={prompt}"`, err: "placeholder {prompt} is inside quotes"},
		{tmpl: `agent '{model}'`, err: "placeholder {model} is inside quotes"},
		{tmpl: `agent "it's" {model}`, want: `agent "it's" 'm1'`},
		{tmpl: `agent 'say "x"' {model}`, want: `agent 'say "x"' 'm1'`},
		{tmpl: `agent "a \" b" {model}`, want: `agent "a \" b" 'm1'`},
	}
	for _, tc := range tests {
		got, err := expandTemplate(tc.tmpl, s)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.tmpl, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", tc.tmpl, got, err, tc.want)
		}
	}
}
