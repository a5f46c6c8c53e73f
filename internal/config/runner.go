package config

import (
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Runner execution backends.
const (
	BackendDocker     = "docker"
	BackendSSHDocker  = "ssh-docker"
	BackendRawSSHExec = "raw-ssh-exec"
	BackendMicroVM    = "microvm"
	// BackendProcess runs agents as plain processes on the runner's host:
	// no isolation at all, for development and tests only, behind the same
	// opt-in as raw-ssh-exec.
	BackendProcess = "process"
)

// Runner is the configuration of `slipway runner`.
type Runner struct {
	HubURL          string
	Token           Secret // static scrn_ token
	EnrollmentToken Secret
	Labels          []string
	StateDir        string
	TokenFile       string
	TokenRefresh    time.Duration // 0: derived from the token lifetime
	Name            string
	Heartbeat       time.Duration
	Poll            time.Duration
	AllowInsecure   bool

	Backend    string
	MicroVMCmd string
	Slots      int

	DockerHost  string
	AgentBinary string
	Agent       Agent

	ClientCertPath string
	ClientKeyPath  string
	CAPath         string

	SSHHost                   string
	SSHKnownHosts             string
	SSHDockerHostKeyDelegated bool
	SSHKeyPath                string
	AllowUnsandboxed          bool
	SSHExecAgentCmd           string
	SSHInsecureHostKey        bool

	// Tracing: the runner exports the spans of its work itself (an OTLP
	// endpoint is set in its own environment; see Observability.Tracing).
	Tracing bool
}

// LoadRunner reads the runner configuration. The error joins one line per
// problem, each naming its variable.
func LoadRunner(lookup Lookup) (*Runner, error) {
	c, r := loadRunner(lookup)
	if err := r.err(); err != nil {
		return nil, err
	}
	return c, nil
}

func loadRunner(lookup Lookup) (*Runner, *reader) {
	r := newReader(lookup)
	c := &Runner{}

	c.AllowInsecure = r.boolean("SERVICE_RUNNER_ALLOW_INSECURE_TRANSPORT", false)
	c.HubURL = strings.TrimRight(r.str("SERVICE_HUB_URL", ""), "/")
	if c.HubURL == "" {
		r.failf("SERVICE_HUB_URL", "required")
	} else if u, err := url.Parse(c.HubURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		r.failf("SERVICE_HUB_URL", "%q is not an absolute http or https URL", c.HubURL)
	} else if u.Scheme == "http" && !c.AllowInsecure {
		r.failf("SERVICE_HUB_URL", "must be https (set SERVICE_RUNNER_ALLOW_INSECURE_TRANSPORT=true to allow plaintext)")
	}

	c.Token = Secret(r.str("SERVICE_RUNNER_TOKEN", ""))
	c.EnrollmentToken = Secret(r.str("SERVICE_RUNNER_ENROLLMENT_TOKEN", ""))
	switch {
	case c.Token != "" && c.EnrollmentToken != "":
		r.failf("SERVICE_RUNNER_TOKEN", "give this or SERVICE_RUNNER_ENROLLMENT_TOKEN, never both")
	case c.Token == "" && c.EnrollmentToken == "":
		r.failf("SERVICE_RUNNER_TOKEN", "required (or SERVICE_RUNNER_ENROLLMENT_TOKEN)")
	case c.Token != "" && !strings.HasPrefix(c.Token.Reveal(), "scrn_"):
		r.failf("SERVICE_RUNNER_TOKEN", "a static runner token starts with scrn_")
	}

	c.Labels = FoldLabels(r.str("SERVICE_RUNNER_LABELS", ""))
	c.StateDir = r.str("SERVICE_DATA_DIR", "./data")
	c.TokenFile = r.str("SERVICE_RUNNER_TOKEN_FILE", filepath.Join(c.StateDir, "runner-token"))
	c.TokenRefresh = r.seconds("SERVICE_RUNNER_TOKEN_REFRESH_SECS", 0)
	c.Name = r.str("SERVICE_RUNNER_NAME", "service-runner")
	c.Heartbeat = time.Duration(r.integer("SERVICE_RUNNER_HEARTBEAT_SECS", 30, 1, 3600)) * time.Second
	c.Poll = time.Duration(r.integer("SERVICE_RUNNER_POLL_SECS", 3, 1, 3600)) * time.Second

	c.Backend = r.oneOf("SERVICE_RUNNER_EXECUTION_BACKEND", BackendDocker,
		BackendDocker, BackendSSHDocker, BackendRawSSHExec, BackendMicroVM, BackendProcess)
	c.Slots = int(r.integer("SERVICE_RUNNER_SLOTS", 4, 1, 10000))
	c.DockerHost = r.str("DOCKER_HOST", "")
	c.AgentBinary = r.str("SERVICE_AGENT_BINARY", "")
	c.Agent = readAgent(r)
	c.MicroVMCmd = r.str("SERVICE_RUNNER_MICROVM_CMD", "")
	if c.Backend == BackendMicroVM && c.MicroVMCmd == "" {
		r.failf("SERVICE_RUNNER_MICROVM_CMD", "required for the microvm backend")
	}

	c.ClientCertPath = r.str("SERVICE_RUNNER_TLS_CLIENT_CERT_PATH", "")
	c.ClientKeyPath = r.str("SERVICE_RUNNER_TLS_CLIENT_KEY_PATH", "")
	r.pair("SERVICE_RUNNER_TLS_CLIENT_CERT_PATH", c.ClientCertPath, "SERVICE_RUNNER_TLS_CLIENT_KEY_PATH", c.ClientKeyPath)
	c.CAPath = r.str("SERVICE_RUNNER_TLS_CA_PATH", "")

	c.SSHHost = r.str("SERVICE_SSH_HOST", "")
	c.SSHKnownHosts = r.str("SERVICE_SSH_KNOWN_HOSTS", "")
	c.SSHDockerHostKeyDelegated = r.boolean("SERVICE_SSH_DOCKER_HOSTKEY_DELEGATED", false)
	c.SSHKeyPath = r.str("SERVICE_SSH_KEY_PATH", "")
	c.AllowUnsandboxed = r.boolean("SERVICE_RUNNER_ALLOW_UNSANDBOXED", false)
	c.SSHExecAgentCmd = r.str("SERVICE_SSH_EXEC_AGENT_CMD", "")
	c.SSHInsecureHostKey = r.boolean("SERVICE_SSH_INSECURE_HOST_KEY", false)

	ssh := c.Backend == BackendSSHDocker || c.Backend == BackendRawSSHExec
	if ssh {
		if c.SSHHost == "" {
			r.failf("SERVICE_SSH_HOST", "required for the %s backend", c.Backend)
		}
		if c.SSHKnownHosts == "" {
			r.failf("SERVICE_SSH_KNOWN_HOSTS", "required for the %s backend", c.Backend)
		}
	}
	if c.Backend == BackendSSHDocker && !c.SSHDockerHostKeyDelegated {
		r.failf("SERVICE_SSH_DOCKER_HOSTKEY_DELEGATED", "must be true for the ssh-docker backend (host-key checks are delegated to the system ssh client)")
	}
	if c.Backend == BackendRawSSHExec {
		if c.SSHKeyPath == "" {
			r.failf("SERVICE_SSH_KEY_PATH", "required for the raw-ssh-exec backend")
		}
		if !c.AllowUnsandboxed {
			r.failf("SERVICE_RUNNER_ALLOW_UNSANDBOXED", "must be true for the raw-ssh-exec backend, which runs agents unsandboxed")
		}
		if c.SSHExecAgentCmd == "" {
			r.failf("SERVICE_SSH_EXEC_AGENT_CMD", "required for the raw-ssh-exec backend")
		}
	}
	if c.Backend == BackendProcess && !c.AllowUnsandboxed {
		r.failf("SERVICE_RUNNER_ALLOW_UNSANDBOXED", "must be true for the process backend, which runs agents unsandboxed on the runner's host")
	}
	if c.SSHInsecureHostKey && c.Backend != BackendRawSSHExec {
		r.failf("SERVICE_SSH_INSECURE_HOST_KEY", "applies only to the raw-ssh-exec backend")
	}
	c.Tracing = readTracing(r)
	return c, r
}

// FoldLabels splits labels on commas and whitespace, folds them to lowercase
// and removes duplicates, keeping first-seen order.
func FoldLabels(raw string) []string {
	var out []string
	for _, l := range splitList(raw) {
		l = strings.ToLower(l)
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
