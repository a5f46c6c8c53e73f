// Package docker runs agents as containers through the Docker Engine API.
//
// Every container carries the instance label (service.instance=<value>), runs
// as the hub's own uid:gid with no capabilities and no-new-privileges, has the
// AGENT_* limits applied, and is removed when the agent has been waited for or
// killed. Images are never pulled: an image that is not on the engine makes
// Start fail with executor.ErrUnavailable.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"slipway/internal/executor"
	"slipway/internal/executor/treecopy"
)

// Home is the agent's home directory, a tmpfs.
const Home = "/home/agent"

// AgentUID is the uid and gid agents run as when the hub runs as root
// (nobody:nogroup on most distributions): never root, and no account of the
// host's that owns anything.
const AgentUID = 65534

const (
	// removeTimeout bounds the removal of a container; it runs on a context
	// detached from the caller's, so that a cancelled task still cleans up.
	removeTimeout = 30 * time.Second
	// defaultDrainGrace is how long Wait and Kill let the output stream
	// deliver what the engine still holds before the container is removed.
	// Readers that keep up never wait for it.
	defaultDrainGrace = 10 * time.Second
)

// errOutputAbandoned ends a Stdout or Stderr that nobody read before the
// container was removed.
var errOutputAbandoned = errors.New("docker: agent output was not read before the container was removed")

// networkMu serialises "create the network if missing" across every Backend
// of the process: engines older than API 1.44 accept two networks with the
// same name, after which the name no longer resolves.
var networkMu sync.Mutex

var initProcess = true

// Backend is an executor.Backend over one Docker engine.
type Backend struct {
	cli      *client.Client
	instance string
	network  string
	uid, gid int
	user     string // uid:gid every container runs as

	drainGrace time.Duration

	// remote: the engine does not see this machine's files (it is reached
	// over SSH): mounts are copied into the container's volumes before it
	// starts and writable ones copied back when it ends.
	remote bool
	host   string // how the engine is reached, when not the client's own address

	mu   sync.Mutex
	live map[string]struct{} // containers started here and not yet removed
}

var _ executor.Backend = (*Backend)(nil)

// New returns a backend for the engine at host (e.g.
// unix:///run/slipway-docker/docker.sock; empty means DOCKER_HOST, else the
// client's default socket). instance is the value of the service.instance
// label (hub@<id> or runner@<id>); network is used when a Spec names none.
// New does not contact the engine: Start and Check report an unreachable one.
func New(host, instance, network string) (*Backend, error) {
	if instance == "" {
		return nil, errors.New("docker: the instance label value is required")
	}
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: client for %q: %w", host, err)
	}
	return build(cli, instance, network), nil
}

func build(cli *client.Client, instance, network string) *Backend {
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		// A hub running as root never hands root to an agent, not even a
		// container's.
		uid, gid = AgentUID, AgentUID
	}
	return &Backend{
		cli:      cli,
		instance: instance,
		network:  network,
		uid:      uid,
		gid:      gid,
		user:     strconv.Itoa(uid) + ":" + strconv.Itoa(gid),
		live:     map[string]struct{}{},

		drainGrace: defaultDrainGrace,
	}
}

// Name implements executor.Backend.
func (b *Backend) Name() string { return "docker" }

// Host is the engine address the backend talks to.
func (b *Backend) Host() string {
	if b.host != "" {
		return b.host
	}
	return b.cli.DaemonHost()
}

// Close releases the client's connections.
func (b *Backend) Close() error { return b.cli.Close() }

// Check reports whether the engine answers; the error wraps
// executor.ErrUnavailable.
func (b *Backend) Check(ctx context.Context) error {
	if _, err := b.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return b.noEngine(err)
	}
	return nil
}

// unavailableError says what is missing and unwraps to both
// executor.ErrUnavailable and the engine's error.
type unavailableError struct {
	msg   string
	cause error
}

func (e *unavailableError) Error() string   { return e.msg }
func (e *unavailableError) Unwrap() []error { return []error{executor.ErrUnavailable, e.cause} }

func (b *Backend) noEngine(err error) error {
	return &unavailableError{msg: fmt.Sprintf("no container engine at %s: %v", b.Host(), err), cause: err}
}

// engineErr turns a failed call into an error that names the operation, and
// a connection failure into ErrUnavailable.
func (b *Backend) engineErr(op string, err error) error {
	if isConnErr(err) {
		return b.noEngine(err)
	}
	return fmt.Errorf("docker: %s: %w", op, err)
}

func isConnErr(err error) bool {
	if client.IsErrConnectionFailed(err) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// Start implements executor.Backend: it creates the network when missing,
// then creates, attaches to and starts the container. On any failure the
// container is removed again.
func (b *Backend) Start(ctx context.Context, spec executor.Spec) (executor.Handle, error) {
	if spec.Image == "" {
		return nil, errors.New("docker: spec has no image")
	}
	if _, err := b.cli.ImageInspect(ctx, spec.Image); err != nil {
		switch {
		case isConnErr(err):
			return nil, b.noEngine(err)
		case cerrdefs.IsNotFound(err):
			return nil, &unavailableError{
				msg:   fmt.Sprintf("image %q not found locally on %s and images are never pulled; build or load it first", spec.Image, b.Host()),
				cause: err,
			}
		default:
			return nil, b.engineErr(fmt.Sprintf("inspect image %q", spec.Image), err)
		}
	}

	network := spec.Limits.Network
	if network == "" {
		network = b.network
	}
	if err := b.ensureNetwork(ctx, network); err != nil {
		return nil, err
	}

	if b.uid != os.Getuid() && !b.remote {
		// The agent runs as another user than the hub: its writable mounts
		// become its own.
		for _, m := range spec.Mounts {
			if !m.ReadOnly {
				if err := chownTree(m.Source, b.uid, b.gid); err != nil {
					return nil, fmt.Errorf("docker: handing %s to the agent's user: %w", m.Source, err)
				}
			}
		}
	}
	cfg, hostCfg := b.containerConfig(spec, network)
	created, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       containerName(spec.Name),
		Config:     cfg,
		HostConfig: hostCfg,
	})
	if err != nil {
		return nil, b.engineErr("create container "+spec.Name, err)
	}
	id := created.ID
	b.track(id, true)

	var h *handle
	if b.remote {
		err = b.copyIn(ctx, id, spec)
	}
	if err == nil {
		h, err = b.attachAndStart(ctx, id)
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		if rerr := b.remove(rctx, id); rerr == nil {
			b.track(id, false)
		} else {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	h.spec = spec
	return h, nil
}

func (b *Backend) containerConfig(spec executor.Spec, network string) (*container.Config, *container.HostConfig) {
	labels := make(map[string]string, len(spec.Labels)+1)
	for k, v := range spec.Labels {
		labels[k] = v
	}
	labels[executor.InstanceLabel] = b.instance

	env := map[string]string{"HOME": Home}
	for k, v := range spec.Env {
		env[k] = v
	}
	envList := make([]string, 0, len(env))
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	sort.Strings(envList)

	cfg := &container.Config{
		Image:        spec.Image,
		Cmd:          spec.Command,
		Env:          envList,
		WorkingDir:   spec.WorkDir,
		Labels:       labels,
		User:         b.user,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
	}

	lim := spec.Limits
	hostCfg := &container.HostConfig{
		NetworkMode:    container.NetworkMode(network),
		ReadonlyRootfs: lim.ReadOnlyRootFS,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		// An init process (docker-init) as PID 1 reaps the zombies that
		// agents' tools leave behind; the agent itself is not PID 1.
		Init: &initProcess,
		// Docker's tmpfs default is noexec; /tmp and the home must allow
		// exec for what agents routinely do there (go test runs binaries
		// it builds under /tmp; pip/npm put tools under the home).
		Tmpfs: map[string]string{
			"/tmp": tmpfsOptions(lim.TmpfsTmpMB, true),
			"/run": tmpfsOptions(lim.TmpfsRunMB, false),
			Home:   tmpfsOptions(lim.TmpfsHomeMB, true),
		},
		Resources: container.Resources{
			Memory:   lim.MemoryBytes,
			NanoCPUs: lim.NanoCPUs,
		},
	}
	if lim.MemoryBytes > 0 {
		// No swap on top of the memory cap.
		hostCfg.Resources.MemorySwap = lim.MemoryBytes
	}
	if lim.PidsLimit > 0 {
		pids := lim.PidsLimit
		hostCfg.Resources.PidsLimit = &pids
	}
	if b.remote {
		for _, c := range copies(spec) {
			// An anonymous volume, removed with the container.
			hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{Type: mount.TypeVolume, Target: c.volume})
		}
		cfg.Cmd = make([]string, len(spec.Command))
		for i, a := range spec.Command {
			cfg.Cmd[i] = copiedPath(a, spec)
		}
		cfg.WorkingDir = copiedPath(spec.WorkDir, spec)
		return cfg, hostCfg
	}
	for _, m := range spec.Mounts {
		hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{
			Type:     mount.TypeBind,
			Source:   m.Source,
			Target:   m.Target,
			ReadOnly: m.ReadOnly,
		})
	}
	return cfg, hostCfg
}

// copied is a mount carried into a container by copy (remote engines):
// each goes into a volume of its own at /.slipway/m<i>, a directory as its
// subdirectory "d" (so that it keeps its mode and the agent's ownership;
// Docker leaves a volume's root alone), a file under its name. The
// command, working directory and the agent's paths name them there.
type copied struct {
	executor.Mount
	volume string // where the volume is mounted
	path   string // where the mount's content is
	dir    bool
}

func copies(spec executor.Spec) []copied {
	out := make([]copied, 0, len(spec.Mounts))
	for i, m := range spec.Mounts {
		c := copied{Mount: m, volume: "/.slipway/m" + strconv.Itoa(i)}
		if st, err := os.Stat(m.Source); err == nil && !st.IsDir() {
			c.path = c.volume + "/" + filepath.Base(m.Source)
		} else {
			c.path, c.dir = c.volume+"/d", true
		}
		out = append(out, c)
	}
	return out
}

// copiedPath is where a path the spec names is in a container whose mounts
// were copied.
func copiedPath(p string, spec executor.Spec) string {
	for _, c := range copies(spec) {
		if p == c.Target {
			return c.path
		}
		if c.dir && strings.HasPrefix(p, c.Target+"/") {
			return c.path + "/" + strings.TrimPrefix(p, c.Target+"/")
		}
	}
	return p
}

var _ executor.PathMapper = (*Backend)(nil)

// AgentPath implements executor.PathMapper: on a remote engine the agent
// finds its mounts where they were copied; otherwise at their targets.
func (b *Backend) AgentPath(spec executor.Spec, p string) string {
	if !b.remote {
		return p
	}
	return copiedPath(p, spec)
}

// copyIn puts each mount's content into the created container, owned by
// its user.
func (b *Backend) copyIn(ctx context.Context, id string, spec executor.Spec) error {
	for _, c := range copies(spec) {
		pr, pw := io.Pipe()
		root := ""
		if c.dir {
			root = "d"
		}
		go func() { pw.CloseWithError(treecopy.TarAs(pw, c.Source, root, b.uid, b.gid)) }()
		_, err := b.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: c.volume, Content: pr})
		pr.CloseWithError(err)
		if err != nil {
			return b.engineErr("copy "+c.Target+" into container "+shortID(id), err)
		}
	}
	return nil
}

// copyOut brings the writable directory mounts of an ended container back.
func (b *Backend) copyOut(ctx context.Context, id string, spec executor.Spec) error {
	for _, c := range copies(spec) {
		if c.ReadOnly || !c.dir {
			continue
		}
		res, err := b.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: c.path + "/."})
		if err != nil {
			return b.engineErr("copy "+c.Target+" out of container "+shortID(id), err)
		}
		incoming := c.Source + ".incoming"
		err = os.RemoveAll(incoming)
		if err == nil {
			err = treecopy.Extract(res.Content, incoming, ".")
		}
		res.Content.Close()
		if err == nil {
			err = treecopy.Replace(c.Source, incoming, ".git")
		}
		if err != nil {
			os.RemoveAll(incoming)
			return fmt.Errorf("docker: copying %s back: %w", c.Target, err)
		}
	}
	return nil
}

// chownTree gives a directory tree (or a file) to uid:gid, without
// following symbolic links.
func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

func tmpfsOptions(sizeMB int64, exec bool) string {
	opts := []string{"rw", "nosuid", "nodev"}
	if exec {
		opts = append(opts, "exec")
	} else {
		opts = append(opts, "noexec")
	}
	if sizeMB > 0 {
		opts = append(opts, "size="+strconv.FormatInt(sizeMB, 10)+"m")
	}
	return strings.Join(append(opts, "mode=1777"), ",")
}

// containerName keeps the characters Docker accepts in a name
// ([a-zA-Z0-9][a-zA-Z0-9_.-]+); an empty result lets the engine pick one.
func containerName(name string) string {
	var sb strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			sb.WriteRune(r)
		case r == '_' || r == '.' || r == '-':
			if sb.Len() > 0 {
				sb.WriteRune(r)
			}
		default:
			if sb.Len() > 0 {
				sb.WriteByte('-')
			}
		}
	}
	if sb.Len() < 2 {
		return ""
	}
	return sb.String()
}

func builtinNetwork(name string) bool {
	switch name {
	case "", "bridge", "host", "none", "default":
		return true
	}
	return strings.HasPrefix(name, "container:")
}

// ensureNetwork creates a user-defined bridge network with the instance
// label unless one of that name exists.
func (b *Backend) ensureNetwork(ctx context.Context, name string) error {
	if builtinNetwork(name) {
		return nil
	}
	networkMu.Lock()
	defer networkMu.Unlock()
	list, err := b.cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("name", name)})
	if err != nil {
		return b.engineErr("list networks", err)
	}
	for _, n := range list.Items {
		if n.Name == name { // the filter also matches substrings
			return nil
		}
	}
	_, err = b.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: map[string]string{executor.InstanceLabel: b.instance},
	})
	if err != nil && !cerrdefs.IsConflict(err) && !cerrdefs.IsAlreadyExists(err) {
		return b.engineErr("create network "+name, err)
	}
	return nil
}

func (b *Backend) attachAndStart(ctx context.Context, id string) (*handle, error) {
	att, err := b.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return nil, b.engineErr("attach to container "+shortID(id), err)
	}

	// Registered before the start so that no exit can be missed; it lives as
	// long as the container, not as long as ctx.
	waitCtx, cancelWait := context.WithCancel(context.WithoutCancel(ctx))
	wait := b.cli.ContainerWait(waitCtx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})

	if _, err := b.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		cancelWait()
		att.Close()
		return nil, b.engineErr("start container "+shortID(id), err)
	}

	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	h := &handle{
		b:           b,
		id:          id,
		conn:        att.HijackedResponse,
		stdoutR:     outR,
		stderrR:     errR,
		stdoutW:     outW,
		stderrW:     errW,
		exited:      make(chan struct{}),
		streamsDone: make(chan struct{}),
		cancelWait:  cancelWait,
	}
	h.stdin = &stdin{h: h}

	go func() {
		_, err := stdcopy.StdCopy(outW, errW, att.Reader)
		if h.closing.Load() {
			// We closed the connection ourselves after removing the
			// container: for the reader that is the end of the output.
			err = nil
		}
		outW.CloseWithError(err)
		errW.CloseWithError(err)
		close(h.streamsDone)
	}()

	go func() {
		defer close(h.exited)
		select {
		case res := <-wait.Result:
			h.exitCode = int(res.StatusCode)
			if res.Error != nil && res.Error.Message != "" {
				h.exitErr = fmt.Errorf("docker: waiting for container %s: %s", shortID(id), res.Error.Message)
			}
		case err := <-wait.Error:
			h.exitCode = -1
			h.exitErr = b.engineErr("wait for container "+shortID(id), err)
		}
	}()
	return h, nil
}

// remove force-removes a container (with its anonymous volumes); a
// container that is already gone or already being removed is not an error.
func (b *Backend) remove(ctx context.Context, id string) error {
	_, err := b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress") {
		return nil
	}
	return b.engineErr("remove container "+shortID(id), err)
}

func (b *Backend) track(id string, live bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if live {
		b.live[id] = struct{}{}
	} else {
		delete(b.live, id)
	}
}

// Leftovers implements executor.Backend: every container that carries this
// instance's label, except those this Backend is running now. Containers of
// other instances and unlabelled ones are never listed.
func (b *Backend) Leftovers(ctx context.Context) ([]executor.Leftover, error) {
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", executor.InstanceLabel+"="+b.instance),
	})
	if err != nil {
		return nil, b.engineErr("list containers", err)
	}
	b.mu.Lock()
	live := make(map[string]struct{}, len(b.live))
	for id := range b.live {
		live[id] = struct{}{}
	}
	b.mu.Unlock()

	var out []executor.Leftover
	for _, c := range list.Items {
		if c.Labels[executor.InstanceLabel] != b.instance {
			continue // the engine filtered already; never trust it with other instances' containers
		}
		if _, ok := live[c.ID]; ok {
			continue
		}
		l := &leftover{b: b, id: c.ID, labels: c.Labels}
		if c.State != container.StateRunning && c.State != container.StateRestarting && c.State != container.StatePaused {
			got, err := b.cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
			switch {
			case cerrdefs.IsNotFound(err):
				continue // removed meanwhile
			case err != nil:
				return nil, b.engineErr("inspect container "+shortID(c.ID), err)
			}
			if st := got.Container.State; st != nil && !st.Running {
				l.exited, l.code = true, st.ExitCode
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// leftover is a container an earlier process of this instance started.
type leftover struct {
	b      *Backend
	id     string
	labels map[string]string
	exited bool
	code   int
}

func (l *leftover) ID() string                { return l.id }
func (l *leftover) Labels() map[string]string { return l.labels }
func (l *leftover) Exited() (int, bool)       { return l.code, l.exited }

// Output reads the container's stdout from the engine's log of it.
func (l *leftover) Output(ctx context.Context) (io.ReadCloser, error) {
	logs, err := l.b.cli.ContainerLogs(ctx, l.id, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		return nil, l.b.engineErr("read the log of container "+shortID(l.id), err)
	}
	r, w := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(w, io.Discard, logs)
		logs.Close()
		w.CloseWithError(err)
	}()
	return r, nil
}

// Remove force-removes the container.
func (l *leftover) Remove(ctx context.Context) error {
	return l.b.remove(ctx, l.id)
}

// Subnets returns the address ranges of the agents' network (created if
// missing), so that the hub can refuse connections from them: agents talk
// to their hub through stdio only.
func (b *Backend) Subnets(ctx context.Context) ([]netip.Prefix, error) {
	if err := b.ensureNetwork(ctx, b.network); err != nil {
		return nil, err
	}
	name := b.network
	if builtinNetwork(name) {
		name = "bridge"
	}
	n, err := b.cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if err != nil {
		return nil, b.engineErr("inspect network "+name, err)
	}
	var out []netip.Prefix
	for _, c := range n.Network.IPAM.Config {
		if c.Subnet.IsValid() {
			out = append(out, c.Subnet)
		}
	}
	return out, nil
}

// CountLabelled counts this instance's containers (running or not) that also
// carry label ("key=value").
func (b *Backend) CountLabelled(ctx context.Context, label string) (int, error) {
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", executor.InstanceLabel+"="+b.instance).Add("label", label),
	})
	if err != nil {
		return 0, b.engineErr("list containers", err)
	}
	return len(list.Items), nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// handle is one started container.
type handle struct {
	b       *Backend
	id      string
	conn    client.HijackedResponse
	stdoutR *io.PipeReader
	stderrR *io.PipeReader
	stdoutW *io.PipeWriter // written by the output pump only, but
	stderrW *io.PipeWriter // closed early when nobody reads
	stdin   *stdin

	exited     chan struct{} // closed once exitCode/exitErr are set
	exitCode   int
	exitErr    error
	cancelWait context.CancelFunc

	streamsDone chan struct{} // closed when the output pump has ended
	closing     atomic.Bool   // set before we close the connection ourselves

	mu       sync.Mutex
	removed  bool
	released bool

	spec executor.Spec // what was started (a remote engine's copies come back from it)
}

func (h *handle) ID() string            { return h.id }
func (h *handle) Stdout() io.Reader     { return h.stdoutR }
func (h *handle) Stderr() io.Reader     { return h.stderrR }
func (h *handle) Stdin() io.WriteCloser { return h.stdin }
func (h *handle) String() string        { return "docker container " + shortID(h.id) }

// Wait implements executor.Handle: it returns the exit code once the
// container has exited and its output has been delivered, then removes the
// container. Read Stdout and Stderr concurrently with Wait (as with
// os/exec pipes): output not read within a grace period after the exit is
// dropped. If ctx ends first, Wait returns ctx's error and the agent keeps
// running; Kill stops it.
func (h *handle) Wait(ctx context.Context) (int, error) {
	select {
	case <-h.exited:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	// The engine ends the attach stream once it has delivered all output;
	// removing the container before that could cut the output short.
	select {
	case <-h.streamsDone:
	case <-ctx.Done():
	case <-time.After(h.b.drainGrace):
	}
	var copyErr error
	if h.b.remote && h.exitErr == nil {
		h.mu.Lock()
		removed := h.removed
		h.mu.Unlock()
		if !removed { // not killed: what the agent made comes back
			copyErr = h.b.copyOut(ctx, h.id, h.spec)
		}
	}
	if err := h.release(ctx, false); err != nil {
		return h.exitCode, fmt.Errorf("docker: container %s exited with %d but was not removed: %w", shortID(h.id), h.exitCode, err)
	}
	if h.exitErr != nil {
		return -1, h.exitErr
	}
	if copyErr != nil {
		return h.exitCode, copyErr
	}
	return h.exitCode, nil
}

// Kill implements executor.Handle: it kills and removes the container. It is
// idempotent and safe after the agent has exited or been waited for; it works
// with an already cancelled ctx.
func (h *handle) Kill(ctx context.Context) error {
	return h.release(ctx, true)
}

// release removes the container (retrying on a later call if the engine
// failed) and then tears down the streams, once. drain gives the output
// pump a moment to hand over what the engine sent before the removal (Wait
// has done that already).
func (h *handle) release(ctx context.Context, drain bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.removed {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		err := h.b.remove(rctx, h.id)
		cancel()
		if err != nil {
			return err
		}
		h.removed = true
		h.b.track(h.id, false)
	}
	if !h.released {
		h.released = true
		if drain {
			// The engine ends the attach stream once the container is gone.
			select {
			case <-h.streamsDone:
			case <-time.After(h.b.drainGrace):
			}
		}
		h.closing.Store(true)
		h.conn.Close()
		select {
		case <-h.streamsDone:
		default:
			// The pump is blocked on a reader that is not reading: unblock
			// it, and tell that reader why its output ends here.
			h.stdoutW.CloseWithError(errOutputAbandoned)
			h.stderrW.CloseWithError(errOutputAbandoned)
		}
		// The wait request ends by itself when the container goes; this only
		// matters if the engine never answers it.
		go func() {
			select {
			case <-h.exited:
			case <-time.After(removeTimeout):
			}
			h.cancelWait()
		}()
	}
	return nil
}

// stdin writes into the attach connection; Close half-closes it, which the
// engine passes on as end of input (StdinOnce).
type stdin struct {
	h    *handle
	once sync.Once
	err  error
}

func (s *stdin) Write(p []byte) (int, error) { return s.h.conn.Conn.Write(p) }

func (s *stdin) Close() error {
	s.once.Do(func() {
		// Closed already: the agent ended (over SSH the connection is the
		// ssh command's pipe, whose error is os.ErrClosed).
		err := s.h.conn.CloseWrite()
		if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrClosed) {
			s.err = fmt.Errorf("docker: close stdin of %s: %w", shortID(s.h.id), err)
		}
	})
	return s.err
}
