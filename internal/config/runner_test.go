package config

import (
	"testing"
	"time"
)

func runnerBase() map[string]string {
	return map[string]string{
		"SERVICE_HUB_URL":      "https://hub.example.com/",
		"SERVICE_RUNNER_TOKEN": "scrn_abc",
	}
}

func TestLoadRunnerValid(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c *Runner)
	}{
		{"defaults", runnerBase(), func(t *testing.T, c *Runner) {
			eq(t, c.HubURL, "https://hub.example.com")
			eq(t, c.Backend, BackendDocker)
			eq(t, c.Name, "service-runner")
			eq(t, c.Heartbeat, 30*time.Second)
			eq(t, c.Poll, 3*time.Second)
			eq(t, c.TokenRefresh, time.Duration(0))
			eq(t, c.TokenFile, "data/runner-token")
			eq(t, c.Tracing, false)
		}},
		{"an OTLP endpoint: the runner exports its spans", with(runnerBase(), "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"), func(t *testing.T, c *Runner) {
			eq(t, c.Tracing, true)
		}},
		{"unless the SDK is disabled", with(runnerBase(), "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", "OTEL_SDK_DISABLED", "true"), func(t *testing.T, c *Runner) {
			eq(t, c.Tracing, false)
		}},
		{"labels folded and deduplicated", with(runnerBase(), "SERVICE_RUNNER_LABELS", "GPU, linux  gpu,ARM64"), func(t *testing.T, c *Runner) {
			eq(t, c.Labels, []string{"gpu", "linux", "arm64"})
		}},
		{"enrollment token instead of static", with(without(runnerBase(), "SERVICE_RUNNER_TOKEN"), "SERVICE_RUNNER_ENROLLMENT_TOKEN", "enr"), func(t *testing.T, c *Runner) {
			eq(t, c.EnrollmentToken.Reveal(), "enr")
		}},
		{"plaintext allowed explicitly", with(runnerBase(), "SERVICE_HUB_URL", "http://hub:8080", "SERVICE_RUNNER_ALLOW_INSECURE_TRANSPORT", "true"), func(t *testing.T, c *Runner) {
			eq(t, c.AllowInsecure, true)
		}},
		{"raw-ssh-exec with every requirement", with(runnerBase(),
			"SERVICE_RUNNER_EXECUTION_BACKEND", "raw-ssh-exec", "SERVICE_SSH_HOST", "ci@build:22", "SERVICE_SSH_KNOWN_HOSTS", "/k",
			"SERVICE_SSH_KEY_PATH", "/id", "SERVICE_RUNNER_ALLOW_UNSANDBOXED", "true", "SERVICE_SSH_EXEC_AGENT_CMD", "run {image} {agent_type}",
			"SERVICE_SSH_INSECURE_HOST_KEY", "true"), func(t *testing.T, c *Runner) {
			eq(t, c.Backend, BackendRawSSHExec)
			eq(t, c.SSHInsecureHostKey, true)
		}},
		{"ssh-docker with delegation", with(runnerBase(),
			"SERVICE_RUNNER_EXECUTION_BACKEND", "ssh-docker", "SERVICE_SSH_HOST", "ci@build:22", "SERVICE_SSH_KNOWN_HOSTS", "/k",
			"SERVICE_SSH_DOCKER_HOSTKEY_DELEGATED", "1"), func(t *testing.T, c *Runner) {
			eq(t, c.Backend, BackendSSHDocker)
		}},
		{"microvm with launcher", with(runnerBase(), "SERVICE_RUNNER_EXECUTION_BACKEND", "microvm", "SERVICE_RUNNER_MICROVM_CMD", "fc-launch"), func(t *testing.T, c *Runner) {
			eq(t, c.MicroVMCmd, "fc-launch")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadRunner(MapLookup(tt.env))
			if err != nil {
				t.Fatalf("LoadRunner: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoadRunnerInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"no hub URL", without(runnerBase(), "SERVICE_HUB_URL"), []string{"SERVICE_HUB_URL"}},
		{"plaintext hub URL", with(runnerBase(), "SERVICE_HUB_URL", "http://hub"), []string{"SERVICE_HUB_URL"}},
		{"both tokens", with(runnerBase(), "SERVICE_RUNNER_ENROLLMENT_TOKEN", "e"), []string{"SERVICE_RUNNER_TOKEN"}},
		{"no token", without(runnerBase(), "SERVICE_RUNNER_TOKEN"), []string{"SERVICE_RUNNER_TOKEN"}},
		{"static token without prefix", with(runnerBase(), "SERVICE_RUNNER_TOKEN", "abc"), []string{"SERVICE_RUNNER_TOKEN"}},
		{"unknown backend", with(runnerBase(), "SERVICE_RUNNER_EXECUTION_BACKEND", "podman"), []string{"SERVICE_RUNNER_EXECUTION_BACKEND"}},
		{"microvm without launcher", with(runnerBase(), "SERVICE_RUNNER_EXECUTION_BACKEND", "microvm"), []string{"SERVICE_RUNNER_MICROVM_CMD"}},
		{"client cert without key", with(runnerBase(), "SERVICE_RUNNER_TLS_CLIENT_CERT_PATH", "c"), []string{"SERVICE_RUNNER_TLS_CLIENT_KEY_PATH"}},
		{"ssh-docker bare", with(runnerBase(), "SERVICE_RUNNER_EXECUTION_BACKEND", "ssh-docker"),
			[]string{"SERVICE_SSH_HOST", "SERVICE_SSH_KNOWN_HOSTS", "SERVICE_SSH_DOCKER_HOSTKEY_DELEGATED"}},
		{"raw-ssh-exec bare", with(runnerBase(), "SERVICE_RUNNER_EXECUTION_BACKEND", "raw-ssh-exec"),
			[]string{"SERVICE_SSH_HOST", "SERVICE_SSH_KNOWN_HOSTS", "SERVICE_SSH_KEY_PATH", "SERVICE_RUNNER_ALLOW_UNSANDBOXED", "SERVICE_SSH_EXEC_AGENT_CMD"}},
		{"insecure host key outside raw-ssh-exec", with(runnerBase(), "SERVICE_SSH_INSECURE_HOST_KEY", "true"), []string{"SERVICE_SSH_INSECURE_HOST_KEY"}},
		{"unparsable heartbeat", with(runnerBase(), "SERVICE_RUNNER_HEARTBEAT_SECS", "often"), []string{"SERVICE_RUNNER_HEARTBEAT_SECS"}},
		{"zero poll", with(runnerBase(), "SERVICE_RUNNER_POLL_SECS", "0"), []string{"SERVICE_RUNNER_POLL_SECS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadRunner(MapLookup(tt.env))
			assertLines(t, err, tt.want)
		})
	}
}
