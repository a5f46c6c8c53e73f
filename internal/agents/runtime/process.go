package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"slipway/internal/agents/protocol"
)

// shellPath runs every script: the image may be busybox, so no bash.
const shellPath = "/bin/sh"

// drainTimeout bounds the wait for a child's output pipes after the process
// group is killed; only a process that left the group can hold them longer.
const drainTimeout = 2 * time.Second

// process is one script run with /bin/sh -c in its own process group.
type process struct {
	script string
	dir    string
	env    []string
	// stdout and stderr get each output line (the slice is reused after the
	// call returns). A nil stderr shares stdout's pipe, in write order.
	stdout func([]byte)
	stderr func([]byte)
}

// run starts the script and waits for it. When ctx ends first, the whole
// process group is killed at once. Afterwards the group is always killed,
// so nothing the script left in the background outlives it. The returned
// state is nil only when err is not.
func (p process) run(ctx context.Context) (*os.ProcessState, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	cmd := exec.Command(shellPath, "-c", p.script)
	cmd.Dir = p.dir
	cmd.Env = p.env
	setProcessGroup(cmd)

	var files []*os.File // read ends
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	files = append(files, outR)
	writers := []*os.File{outW}
	sinks := []func([]byte){p.stdout}
	if p.stderr != nil {
		errR, errW, err := os.Pipe()
		if err != nil {
			closeAll(outR, outW)
			return nil, err
		}
		cmd.Stderr = errW
		files = append(files, errR)
		writers = append(writers, errW)
		sinks = append(sinks, p.stderr)
	}
	if err := cmd.Start(); err != nil {
		closeAll(files...)
		closeAll(writers...)
		return nil, fmt.Errorf("starting %s: %w", shellPath, err)
	}
	closeAll(writers...)
	pid := cmd.Process.Pid

	var readers sync.WaitGroup
	for i, f := range files {
		readers.Add(1)
		go func() {
			defer readers.Done()
			// The sinks never fail; a read error only comes from closing f
			// after drainTimeout, and what was read before went to the sink.
			_ = protocol.Lines(f, func(b []byte) error { sinks[i](b); return nil })
		}()
	}

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-ctx.Done():
		killProcessGroup(pid)
		<-waited
	}
	killProcessGroup(pid)

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		closeAll(files...) // unblocks the readers
		<-drained
	}
	closeAll(files...)
	if ctx.Err() != nil {
		return cmd.ProcessState, context.Cause(ctx)
	}
	return cmd.ProcessState, nil
}

// exitText describes how a process ended: "exit code 3" or
// "signal: killed".
func exitText(ps *os.ProcessState) string {
	if ps == nil {
		return "no exit status"
	}
	if c := ps.ExitCode(); c >= 0 {
		return fmt.Sprintf("exit code %d", c)
	}
	return ps.String()
}

// Names that mark a variable as a credential or as hub, provider, cloud or
// container-engine configuration; scripts never see these.
var (
	secretNameParts    = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE"}
	secretNamePrefixes = []string{"SLIPWAY_", "SERVICE_", "LLM_", "OPENAI_", "ANTHROPIC_", "VAULT_", "BAO_", "AWS_", "AZURE_", "GOOGLE_", "GH_", "GITHUB_", "GITLAB_", "DOCKER_", "SSH_"}
	secretNames        = map[string]bool{"DATABASE_URL": true, "PGPASSWORD": true}
)

func secretName(name string) bool {
	upper := strings.ToUpper(name)
	if secretNames[upper] {
		return true
	}
	for _, p := range secretNamePrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	for _, p := range secretNameParts {
		if strings.Contains(upper, p) {
			return true
		}
	}
	return false
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// scrubbedEnv is the environment of the shell agent's script and of the llm
// agent's bash tool: the container's environment (toolchain settings,
// TEST_DATABASE_URL, ...) without any variable whose value holds the API key
// and without credential-looking or hub/provider/cloud names (secretName),
// except the run's own env vars (EnvKeys: the workspace set them for its
// runs). The API key itself only ever arrives on the start line, so it is
// never in a script's environment.
func scrubbedEnv(environ []string, s protocol.Start) []string {
	env := make([]string, 0, len(environ)+2)
	hasPath := false
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || name == "PWD" || (secretName(name) && !slices.Contains(s.EnvKeys, name)) || (s.APIKey != "" && strings.Contains(value, s.APIKey)) {
			continue
		}
		hasPath = hasPath || name == "PATH"
		env = append(env, kv)
	}
	if !hasPath {
		env = append(env, "PATH="+defaultPath)
	}
	return append(env, "PWD="+s.WorkDir)
}

// commandEnv is the environment of the command agent: an external agent CLI
// needs its credentials, so it inherits the container's environment and gets
// the profile's settings as SLIPWAY_API_KEY, SLIPWAY_BASE_URL and
// SLIPWAY_MODEL (a template maps them, e.g. OPENAI_API_KEY="$SLIPWAY_API_KEY").
func commandEnv(environ []string, s protocol.Start) []string {
	set := map[string]string{"PWD": s.WorkDir}
	if s.APIKey != "" {
		set["SLIPWAY_API_KEY"] = s.APIKey
	}
	if s.BaseURL != "" {
		set["SLIPWAY_BASE_URL"] = s.BaseURL
	}
	if s.Model != "" {
		set["SLIPWAY_MODEL"] = s.Model
	}
	env := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok {
			env = append(env, kv)
		}
	}
	for _, name := range []string{"PWD", "SLIPWAY_API_KEY", "SLIPWAY_BASE_URL", "SLIPWAY_MODEL"} {
		if v, ok := set[name]; ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}
