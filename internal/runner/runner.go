// Package runner is `slipway runner`: a remote runner that enrols with a
// hub (or presents a static token), heartbeats, and runs the hub's work
// through the same worker as the hub's own, speaking the worker port over
// HTTPS (Client) instead of calling it in process. It imports no hub
// code: the port's types are package workport's and the runner API's are
// package runnerapi's (the hub's side of runners is package runners).
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"slipway/internal/buildinfo"
	"slipway/internal/config"
	"slipway/internal/executor"
	"slipway/internal/executor/docker"
	"slipway/internal/executor/process"
	"slipway/internal/executor/sandbox"
	"slipway/internal/executor/sshexec"
	"slipway/internal/platform/datadir"
	"slipway/internal/platform/telemetry/otlp"
	"slipway/internal/repo"
	"slipway/internal/runnerapi"
	"slipway/internal/worker"
)

// claimWait is how long one claim waits at the hub (it returns as soon as
// work is assigned).
const claimWait = 25 * time.Second

// errRefused ends a runner whose credential the hub refuses for good.
var errRefused = errors.New("the hub refuses this runner's token")

// Runner is one runner process.
type Runner struct {
	cfg    *config.Runner
	log    *slog.Logger
	client *Client

	// static is a static token (else the JWT is enrolled and refreshed).
	static bool
	mu     sync.Mutex
	exp    time.Time // the JWT's expiry

	id     string
	worker *worker.Worker
	// check asks the execution backend whether it can run work (nil: the
	// backend has no check); unhealthy is what the last check said.
	check     func(context.Context) error
	unhealthy string
}

// healthTimeout bounds one backend check. An engine reached through ssh
// starts an ssh session for its first ping, which took over 5 s on a loaded
// machine: a slow engine is not a missing one.
const healthTimeout = 20 * time.Second

// Run runs a runner until ctx ends (then it stops its agents and gives
// their work back) or the hub refuses it.
func Run(ctx context.Context, cfg *config.Runner, log *slog.Logger) error {
	unlock, err := datadir.Lock(cfg.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	client, err := NewClient(cfg.HubURL, TLSFiles{ClientCert: cfg.ClientCertPath, ClientKey: cfg.ClientKeyPath, CA: cfg.CAPath}, cfg.Poll, log)
	if err != nil {
		return err
	}
	r := &Runner{cfg: cfg, log: log, client: client, static: cfg.Token != ""}
	log.Info("runner starting", "version", buildinfo.Version, "runner_api", runnerapi.APIVersion, "hub", cfg.HubURL,
		"backend", cfg.Backend, "labels", cfg.Labels, "slots", cfg.Slots)
	if err := r.checkHub(ctx); err != nil {
		return err
	}
	reply, err := r.authenticate(ctx)
	if err != nil {
		return err
	}
	r.id = reply.RunnerID
	log = log.With("runner_id", r.id)
	r.log = log
	log.Info("runner registered with the hub", "name", reply.Name, "status", reply.Status)

	backend, binary, err := r.backend()
	if err != nil {
		return err
	}
	if c, ok := backend.(interface{ Check(context.Context) error }); ok {
		r.check = c.Check
	}
	// Say at once whether the backend can run anything: a runner whose
	// engine is unreachable is not eligible, so no work waits for it.
	if _, err := r.heartbeat(ctx); err != nil && ctx.Err() == nil {
		log.Warn("heartbeat failed", "err", err)
	}
	git, err := repo.New(cfg.StateDir)
	if err != nil {
		return err
	}
	owner := runnerapi.Owner(r.id)
	if cfg.Tracing {
		// Its own spans, in the traces the hub's work carries here; after
		// the worker stops, the last ones are flushed.
		stopTracing, err := otlp.Start(ctx, "slipway-runner", owner, log)
		if err != nil {
			return err
		}
		defer stopTracing()
		log.Info("tracing: exporting the spans of this runner's work over OTLP/HTTP")
	}
	a := cfg.Agent
	r.worker = worker.New(client, backend, git, worker.Config{ID: owner, Slots: cfg.Slots, AgentBinary: binary,
		Labels: map[string]string{executor.InstanceLabel: owner},
		Limits: executor.Limits{MemoryBytes: a.MemoryBytes, NanoCPUs: a.NanoCPUs, PidsLimit: a.PidsLimit, ReadOnlyRootFS: a.ReadOnlyRootFS,
			TmpfsTmpMB: a.TmpfsTmpMB, TmpfsRunMB: a.TmpfsRunMB, TmpfsHomeMB: a.TmpfsHomeMB, Network: a.Network},
		ClaimWait: claimWait, ScratchDir: filepath.Join(cfg.StateDir, "scripts"),
		Output: worker.OutputLimits{Bytes: a.OutputBytes, Lines: a.OutputLines, Line: a.OutputLineBytes}}, log)

	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.heartbeats(ctx, stop) }()
	if !r.static {
		wg.Add(1)
		go func() { defer wg.Done(); r.refreshes(ctx, stop) }()
	}
	r.worker.Run(ctx)
	stop(nil)
	wg.Wait()
	if c, ok := backend.(interface{ Close() error }); ok {
		c.Close()
	}
	if cause := context.Cause(ctx); errors.Is(cause, errRefused) {
		return cause
	}
	// A clean stop: the worker gave its work back; the hub takes this
	// runner offline now rather than after the stale window.
	bctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Goodbye(bctx); err != nil {
		log.Warn("saying goodbye to the hub failed; it takes this runner offline after the stale window", "err", err)
	} else {
		log.Info("said goodbye to the hub: offline")
	}
	return nil
}

// health runs the backend's check; "" when it can run work. A change is
// logged once.
func (r *Runner) health(ctx context.Context) string {
	if r.check == nil {
		return ""
	}
	cctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	why := ""
	if err := r.check(cctx); err != nil && ctx.Err() == nil {
		why = err.Error()
		if rs := []rune(why); len(rs) > 500 {
			why = string(rs[:499]) + "…"
		}
	}
	switch {
	case why != "" && why != r.unhealthy:
		r.log.Error("the execution backend cannot run work; this runner takes none until it can", "backend", r.cfg.Backend, "err", why)
	case why == "" && r.unhealthy != "":
		r.log.Info("the execution backend can run work again", "backend", r.cfg.Backend)
	}
	r.unhealthy = why
	return why
}

// checkHub waits for the hub to answer and refuses one whose runner API
// version this runner does not speak.
func (r *Runner) checkHub(ctx context.Context) error {
	delay := time.Second
	for {
		v, err := r.client.CheckVersion(ctx, buildinfo.Version)
		if err == nil {
			r.log.Info("hub reached", "hub_version", v.Version, "runner_api_versions", v.RunnerAPIVersions)
			return nil
		}
		if errors.Is(err, ErrIncompatible) {
			return err
		}
		var he *HubError
		if errors.As(err, &he) && he.Status == 404 {
			return fmt.Errorf("%w: the hub at %s has no version endpoint; it is not a Slipway hub this runner can speak to", ErrIncompatible, r.cfg.HubURL)
		}
		r.log.Warn("the hub does not answer yet; retrying", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// authenticate sets the runner's credential (a static token, a kept JWT or
// a fresh enrolment) and sends the first heartbeat, which tells the runner
// who it is.
func (r *Runner) authenticate(ctx context.Context) (*runnerapi.HeartbeatReply, error) {
	if r.static {
		r.client.SetToken(r.cfg.Token.Reveal())
		reply, err := r.heartbeat(ctx)
		if Unauthorized(err) {
			return nil, fmt.Errorf("%w (%s): check SERVICE_RUNNER_TOKEN (a rotated or deleted runner's token is refused) and, when the hub requires mutual TLS, SERVICE_RUNNER_TLS_CLIENT_CERT_PATH",
				errRefused, hubMessage(err))
		}
		return reply, err
	}
	kept, discarded, err := loadToken(r.cfg.TokenFile, time.Now())
	if err != nil {
		return nil, err
	}
	if discarded != "" {
		r.log.Warn("discarded the kept runner token; enrolling again", "file", r.cfg.TokenFile, "reason", discarded)
	}
	if kept != "" {
		r.useToken(kept)
		reply, err := r.heartbeat(ctx)
		if !Unauthorized(err) {
			return reply, err
		}
		r.log.Warn("the hub refuses the kept runner token (revoked or rotated); enrolling again", "file", r.cfg.TokenFile)
		if err := os.Remove(r.cfg.TokenFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := r.enroll(ctx); err != nil {
		return nil, err
	}
	return r.heartbeat(ctx)
}

func (r *Runner) enroll(ctx context.Context) error {
	if r.cfg.EnrollmentToken == "" {
		return fmt.Errorf("%w: no usable kept token and no SERVICE_RUNNER_ENROLLMENT_TOKEN to enrol with", errRefused)
	}
	t, err := r.client.Enroll(ctx, r.cfg.EnrollmentToken.Reveal(), r.cfg.Name)
	if Unauthorized(err) {
		return fmt.Errorf("%w (%s): SERVICE_RUNNER_ENROLLMENT_TOKEN is single-use and expires; mint a new one", errRefused, hubMessage(err))
	}
	if err != nil {
		return fmt.Errorf("enrolling with the hub: %w", err)
	}
	if err := saveToken(r.cfg.TokenFile, t.Token); err != nil {
		return err
	}
	r.useToken(t.Token)
	r.log.Info("enrolled with the hub", "runner_id", t.RunnerID, "token_expires_at", t.ExpiresAt, "token_file", r.cfg.TokenFile)
	return nil
}

// hubMessage is the hub's own words in an error answer.
func hubMessage(err error) string {
	var he *HubError
	if errors.As(err, &he) && he.Message != "" {
		return "the hub says: " + he.Message
	}
	return err.Error()
}

func (r *Runner) useToken(t string) {
	r.client.SetToken(t)
	if c, err := runnerapi.ParseClaims(t); err == nil {
		r.mu.Lock()
		r.exp = time.Unix(c.ExpiresAt, 0)
		r.mu.Unlock()
	}
}

func (r *Runner) heartbeat(ctx context.Context) (*runnerapi.HeartbeatReply, error) {
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	host, _ := os.Hostname()
	running := 0
	if r.worker != nil {
		running = r.worker.Running()
	}
	return r.client.Heartbeat(hctx, runnerapi.Heartbeat{Labels: r.cfg.Labels, Version: buildinfo.Version, Backend: r.cfg.Backend,
		Hostname: host, Slots: r.cfg.Slots, Running: running, Unhealthy: r.health(hctx)})
}

// refusals is how many refused heartbeats in a row end the runner.
const refusals = 3

func (r *Runner) heartbeats(ctx context.Context, stop context.CancelCauseFunc) {
	t := time.NewTicker(r.cfg.Heartbeat)
	defer t.Stop()
	refused := 0
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		reply, err := r.heartbeat(ctx)
		switch {
		case Unauthorized(err):
			refused++
			r.log.Error("the hub refuses this runner's token", "in_a_row", refused)
			if refused >= refusals {
				stop(fmt.Errorf("%w: it was rotated, revoked or the runner deleted; give the runner its new token", errRefused))
				return
			}
		case err != nil:
			if ctx.Err() == nil {
				r.log.Warn("heartbeat failed", "err", err)
			}
		default:
			refused = 0
			if reply.Status != last {
				r.log.Info("runner status", "status", reply.Status, "draining", reply.Draining, "disabled", reply.Disabled)
				last = reply.Status
			}
		}
	}
}

// refreshes renews the JWT every SERVICE_RUNNER_TOKEN_REFRESH_SECS, or at
// about half its remaining lifetime, and keeps it in the token file.
func (r *Runner) refreshes(ctx context.Context, stop context.CancelCauseFunc) {
	for {
		every := r.cfg.TokenRefresh
		if every <= 0 {
			r.mu.Lock()
			every = max(time.Until(r.exp)/2, 5*time.Second)
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		t, err := r.client.Refresh(rctx)
		cancel()
		switch {
		case Unauthorized(err):
			os.Remove(r.cfg.TokenFile)
			stop(fmt.Errorf("%w: refreshing the runner JWT was refused (rotated, revoked or expired); enrol the runner again", errRefused))
			return
		case err != nil:
			if ctx.Err() == nil {
				r.log.Warn("refreshing the runner token failed; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
			continue
		}
		if err := saveToken(r.cfg.TokenFile, t.Token); err != nil {
			r.log.Error("keeping the refreshed runner token failed", "err", err)
		}
		r.useToken(t.Token)
		r.log.Debug("runner token refreshed", "expires_at", t.ExpiresAt)
	}
}

// containerBinary is the agent binary for containers: only a statically
// linked one runs in any image.
func (r *Runner) containerBinary(binary string) string {
	if binary != "" && !executor.StaticBinary(binary) {
		r.log.Warn("the slipway binary is dynamically linked and cannot run inside agent containers; built-in agents need SERVICE_AGENT_BINARY (build with CGO_ENABLED=0)",
			"binary", binary)
		return ""
	}
	return binary
}

// backend builds the execution backend and finds the agent binary.
func (r *Runner) backend() (executor.Backend, string, error) {
	binary := r.cfg.AgentBinary
	if binary == "" {
		if self, err := os.Executable(); err == nil {
			binary = self
		}
	}
	owner := runnerapi.Owner(r.id)
	switch r.cfg.Backend {
	case config.BackendProcess:
		b := process.New(r.cfg.StateDir, process.Sandbox{Helper: binary, Layers: sandbox.Detect(sandbox.ModeAuto)})
		r.log.Warn("AGENTS RUN AS PROCESSES ON THIS RUNNER'S HOST (SERVICE_RUNNER_EXECUTION_BACKEND=process): development and tests only",
			"sandbox", b.Layers().String())
		return b, binary, nil
	case config.BackendDocker:
		b, err := docker.New(r.cfg.DockerHost, owner, r.cfg.Agent.Network)
		if err != nil {
			return nil, "", fmt.Errorf("SERVICE_RUNNER_EXECUTION_BACKEND=docker: %w", err)
		}
		return b, r.containerBinary(binary), nil
	case config.BackendMicroVM:
		return process.NewLauncher(r.cfg.StateDir, r.cfg.MicroVMCmd), binary, nil
	case config.BackendSSHDocker:
		b, err := docker.NewOverSSH(docker.SSH{Host: r.cfg.SSHHost, KnownHosts: r.cfg.SSHKnownHosts, KeyPath: r.cfg.SSHKeyPath}, owner, r.cfg.Agent.Network)
		if err != nil {
			return nil, "", err
		}
		return b, r.containerBinary(binary), nil
	case config.BackendRawSSHExec:
		r.log.Warn("AGENTS RUN UNSANDBOXED ON THE SSH HOST (SERVICE_RUNNER_EXECUTION_BACKEND=raw-ssh-exec)", "host", r.cfg.SSHHost)
		b, err := sshexec.New(sshexec.Config{Host: r.cfg.SSHHost, KeyPath: r.cfg.SSHKeyPath, KnownHosts: r.cfg.SSHKnownHosts,
			InsecureHostKey: r.cfg.SSHInsecureHostKey, AgentCmd: r.cfg.SSHExecAgentCmd, Instance: owner})
		if err != nil {
			return nil, "", err
		}
		return b, binary, nil
	}
	// Every backend the configuration accepts is compiled in today; a build
	// that leaves one out refuses to boot here.
	return nil, "", fmt.Errorf("SERVICE_RUNNER_EXECUTION_BACKEND: the %s backend is not compiled into this runner", r.cfg.Backend)
}
