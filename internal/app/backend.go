package app

import (
	"fmt"
	"log/slog"
	"os"

	"slipway/internal/config"
	"slipway/internal/executor"
	"slipway/internal/executor/process"
	"slipway/internal/executor/sandbox"
)

// agentBackend picks where agents run and which binary they run as.
func agentBackend(cfg *config.Config, log *slog.Logger) (executor.Backend, string, error) {
	binary := cfg.AgentBinary
	if binary == "" {
		if self, err := os.Executable(); err == nil {
			binary = self
		}
	}
	choice := cfg.AgentBackend
	if choice == "auto" {
		choice = "process"
		if cfg.IsProd() {
			choice = "docker"
		}
		if ok, reason := dockerAvailable(cfg); ok {
			choice = "docker"
		} else if !cfg.IsProd() {
			log.Info("no container engine answers; agents run as processes (dev only)", "reason", reason)
		}
	}
	switch choice {
	case "process":
		b := process.New(cfg.DataDir, process.Sandbox{Helper: binary, Layers: sandbox.Detect(cfg.ProcessSandbox)})
		if b.Contained() {
			log.Info("agents, scripts and code nodes run as processes on this machine, contained by: "+b.Layers().String(), "sandbox", b.Layers().String())
		} else {
			log.Warn("AGENTS, SCRIPTS AND CODE NODES RUN AS PROCESSES THAT NOTHING CONTAINS: "+sandbox.Remedy, "sandbox", "none")
		}
		return b, binary, nil
	case "docker":
		b, err := newDockerBackend(cfg)
		if err != nil {
			return nil, "", err
		}
		if binary != "" && !executor.StaticBinary(binary) {
			log.Warn("the slipway binary is dynamically linked and cannot run inside agent containers; built-in agents need SERVICE_AGENT_BINARY (build with CGO_ENABLED=0)",
				"binary", binary)
			binary = ""
		}
		log.Info("agents, scripts and code nodes run in containers (non-root, read-only root, own network, capped)", "sandbox", "docker")
		return b, binary, nil
	}
	return nil, "", fmt.Errorf("SERVICE_AGENT_BACKEND: unknown backend %q", choice)
}
