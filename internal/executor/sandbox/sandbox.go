// Package sandbox contains the code a tenant controls (agents, scripts, code
// nodes) when the process backend runs it as a plain process on the
// server's machine, with what Linux gives without a container engine, in
// layers:
//
//   - root: a per-job unprivileged uid and a private mount namespace in
//     which every directory on the way to the job's own paths that the job
//     could not enter is covered by an empty tmpfs (so the data directory,
//     other jobs' worktrees and the rest of the server's files are not there
//     at all), with the job's paths bound back in, read-only where asked;
//   - Landlock (where the kernel has it): the job may read and execute only
//     the system's read-only paths and its mounts, and write only its
//     writable mounts and its home; it cannot trace or signal processes
//     outside its domain (which also keeps /proc/<server>/environ shut);
//   - bubblewrap (where installed and the server is not root): its own
//     namespaces with an explicit, minimal bind set.
//
// The helper that applies them is the slipway binary itself ("slipway
// sandbox-exec"): Go cannot run code between fork and exec, so the process
// backend starts the helper, which sets up the layers on itself and then
// executes the job's command in place.
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Modes of SERVICE_PROCESS_SANDBOX.
const (
	ModeAuto = "auto" // every layer this host has
	ModeOff  = "off"  // none: code runs for instance admins only
)

// Layers is what this host can enforce on a process job.
type Layers struct {
	// UID: the server is root, so each job gets its own unprivileged uid and
	// a private mount namespace.
	UID bool
	// Landlock is the kernel's Landlock ABI version (0: none).
	Landlock int
	// Bwrap is bubblewrap's path ("" when not installed). It is used only
	// when the server is not root (as root the first layer covers it).
	Bwrap string
	// Off: SERVICE_PROCESS_SANDBOX=off turned every layer off.
	Off bool
}

// Detect reports the layers this host has under mode ("" is auto).
func Detect(mode string) Layers {
	if mode == ModeOff {
		return Layers{Off: true}
	}
	var l Layers
	l.UID = os.Geteuid() == 0 && canIsolate()
	if v, err := ll.LandlockGetABIVersion(); err == nil && v > 0 {
		l.Landlock = v
	}
	if p, err := exec.LookPath("bwrap"); err == nil && !l.UID {
		l.Bwrap = p
	}
	return l
}

// canIsolate tries what the first layer needs: a process in a mount
// namespace of its own under another uid. Root in a container without
// CAP_SYS_ADMIN (Docker's default) may not, and its jobs would all fail.
func canIsolate() bool {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS,
		Credential: &syscall.Credential{Uid: probeUID, Gid: probeUID}}
	return cmd.Run() == nil
}

// probeUID is the uid canIsolate tries (the process backend's first job
// uid is above it).
const probeUID = 1 << 30

// Enforced reports whether any layer holds: without one, tenant code would
// run as the server's user with all its rights.
func (l Layers) Enforced() bool { return !l.Off && (l.UID || l.Landlock > 0 || l.Bwrap != "") }

// String is the one line the server logs at boot and reports to admins.
func (l Layers) String() string {
	if l.Off {
		return "none (SERVICE_PROCESS_SANDBOX=off): only instance admins' code runs"
	}
	var on []string
	if l.UID {
		on = append(on, "a per-job uid with private mounts (server runs as root)")
	}
	if l.Landlock > 0 {
		on = append(on, fmt.Sprintf("Landlock ABI %d", l.Landlock))
	}
	if l.Bwrap != "" {
		on = append(on, "bubblewrap")
	}
	if len(on) == 0 {
		return "none: " + Remedy
	}
	return strings.Join(on, ", ")
}

// Remedy says how to make a host able to contain tenant code.
const Remedy = "this host can contain no tenant code, so only instance admins' code runs; " +
	"install Docker (or bubblewrap), run the server as root, or use a kernel with Landlock"

// Bind is one path a job sees: at the same path, writable or not.
type Bind struct {
	Path string `json:"path"`
	RW   bool   `json:"rw,omitempty"`
}

// Spec is what the helper applies before it executes the command.
type Spec struct {
	// UID and GID to run as (0: keep the caller's); set with Mounts.
	UID int `json:"uid,omitempty"`
	GID int `json:"gid,omitempty"`
	// Mounts: cover what the job may not enter and bind its paths back
	// (needs root, in a mount namespace of the helper's own).
	Mounts bool `json:"mounts,omitempty"`
	// Landlock: restrict the filesystem to System (read and execute) and
	// Binds.
	Landlock bool     `json:"landlock,omitempty"`
	System   []string `json:"system,omitempty"`
	Binds    []Bind   `json:"binds"`
	// NProc caps the processes of the job's uid (0: no cap).
	NProc uint64 `json:"nproc,omitempty"`
	Dir   string `json:"dir"`
}

// SystemPaths are what every job may read and execute: the system's
// programs, libraries and configuration, and /proc and /sys (Landlock keeps
// other processes' /proc entries that matter shut: tracing them is denied).
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys"}

// Devices a job may read, and those it may also write.
var (
	ReadDevices  = []string{"/dev/urandom", "/dev/random"}
	WriteDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
)

// Command is the helper's command line for spec and argv.
func Command(helper string, spec Spec, argv []string) ([]string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return append([]string{helper, HelperCommand, string(b), "--"}, argv...), nil
}

// HelperCommand is the slipway subcommand that runs the helper.
const HelperCommand = "sandbox-exec"

// BwrapArgs are bubblewrap's arguments for spec: its own namespaces (the
// network shared), the system paths read-only, the binds, a fresh /tmp,
// /proc and /dev, and nothing else of the host.
func BwrapArgs(spec Spec) []string {
	args := []string{"--unshare-all", "--share-net", "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}
	for _, p := range SystemPaths {
		if p == "/proc" {
			continue
		}
		args = append(args, "--ro-bind-try", p, p)
	}
	for _, b := range spec.Binds {
		if b.RW {
			args = append(args, "--bind", b.Path, b.Path)
		} else {
			args = append(args, "--ro-bind", b.Path, b.Path)
		}
	}
	return append(args, "--chdir", spec.Dir, "--")
}
