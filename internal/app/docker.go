package app

import (
	"context"
	"time"

	"slipway/internal/config"
	"slipway/internal/executor"
	"slipway/internal/executor/docker"
)

func newDockerBackend(cfg *config.Config) (*docker.Backend, error) {
	return docker.New(cfg.DockerHost, "hub@"+cfg.InstanceID, cfg.Agent.Network)
}

// dockerAvailable reports whether a container engine answers (for auto).
func dockerAvailable(cfg *config.Config) (bool, string) {
	b, err := newDockerBackend(cfg)
	if err != nil {
		return false, err.Error()
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := b.Check(ctx); err != nil {
		return false, err.Error()
	}
	return true, ""
}

var _ executor.Backend = (*docker.Backend)(nil)
