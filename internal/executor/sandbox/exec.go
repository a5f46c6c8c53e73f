package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Main is the helper ("slipway sandbox-exec SPEC -- COMMAND..."): it applies
// the spec to itself and executes the command in its place. It returns only
// on failure (exit code 126, the reason on stderr): a job whose sandbox
// cannot be set up does not run.
func Main(args []string, stderr io.Writer) int {
	// The parent-death signal and the thread that executes the command must
	// be the same thread (both are per thread).
	runtime.LockOSThread()
	if err := run(args); err != nil {
		fmt.Fprintf(stderr, "slipway sandbox: %v\n", err)
		return 126
	}
	return 0 // not reached: run executes the command or fails
}

func run(args []string) error {
	if len(args) < 3 || args[1] != "--" {
		return errors.New("usage: slipway sandbox-exec SPEC -- COMMAND [ARG...]")
	}
	var spec Spec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fmt.Errorf("reading the spec: %w", err)
	}
	argv := args[2:]
	parent := os.Getppid()
	if spec.Mounts {
		if err := mountBinds(spec); err != nil {
			return err
		}
	}
	if spec.NProc > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: spec.NProc, Max: spec.NProc}); err != nil {
			return fmt.Errorf("capping processes: %w", err)
		}
	}
	if spec.UID != 0 {
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("dropping groups: %w", err)
		}
		if err := syscall.Setgid(spec.GID); err != nil {
			return fmt.Errorf("setting gid: %w", err)
		}
		if err := syscall.Setuid(spec.UID); err != nil {
			return fmt.Errorf("setting uid: %w", err)
		}
	}
	// A change of uid clears the parent-death signal: set it again, and
	// make sure the parent did not die before it was.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("setting the parent-death signal: %w", err)
	}
	if os.Getppid() != parent {
		return errors.New("the server is gone")
	}
	if spec.Landlock {
		if err := restrict(spec); err != nil {
			return err
		}
	}
	if err := os.Chdir(spec.Dir); err != nil {
		return fmt.Errorf("entering the working directory: %w", err)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}

// restrict applies Landlock: read and execute the system paths and the
// read-only binds, read and write the writable binds and the devices, and
// no tracing or signalling of processes outside this domain.
func restrict(spec Spec) error {
	var roDirs, rwDirs, roFiles, rwFiles []string
	for _, b := range spec.Binds {
		fi, err := os.Stat(b.Path)
		if err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
		switch {
		case fi.IsDir() && b.RW:
			rwDirs = append(rwDirs, b.Path)
		case fi.IsDir():
			roDirs = append(roDirs, b.Path)
		case b.RW:
			rwFiles = append(rwFiles, b.Path)
		default:
			roFiles = append(roFiles, b.Path)
		}
	}
	rules := []landlock.Rule{
		landlock.RODirs(spec.System...).IgnoreIfMissing(),
		landlock.ROFiles(ReadDevices...).IgnoreIfMissing(),
		landlock.RWFiles(WriteDevices...).IgnoreIfMissing(),
		landlock.RODirs(roDirs...), landlock.RWDirs(rwDirs...).WithRefer(),
		landlock.ROFiles(roFiles...), landlock.RWFiles(rwFiles...),
	}
	if err := landlock.V7.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := landlock.V7.BestEffort().RestrictScoped(); err != nil {
		return fmt.Errorf("landlock scopes: %w", err)
	}
	return nil
}

// mountBinds runs in the helper's own mount namespace (the process backend
// starts it with one, made private): every directory on the way to a bind
// that the job's uid could not enter is covered by an empty tmpfs, and the
// binds are mounted back at their paths, read-only unless writable.
func mountBinds(spec Spec) error {
	type src struct {
		b   Bind
		fd  int
		dir bool
	}
	srcs := make([]src, 0, len(spec.Binds))
	defer func() {
		for _, s := range srcs {
			unix.Close(s.fd)
		}
	}()
	// Open every source before anything is covered.
	var covers []string
	for _, b := range spec.Binds {
		fd, err := unix.Open(b.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening %s: %w", b.Path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return fmt.Errorf("reading %s: %w", b.Path, err)
		}
		srcs = append(srcs, src{b: b, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR})
		if c := closedAncestor(b.Path); c != "" {
			covers = append(covers, c)
		}
	}
	// The highest covers first; one under another is already covered.
	slices.SortFunc(covers, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	var done []string
	for _, c := range covers {
		if slices.ContainsFunc(done, func(d string) bool { return within(c, d) }) {
			continue
		}
		if err := unix.Mount("tmpfs", c, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
			return fmt.Errorf("covering %s: %w", c, err)
		}
		done = append(done, c)
	}
	for _, s := range srcs {
		if slices.ContainsFunc(done, func(d string) bool { return within(s.b.Path, d) }) {
			if err := makeTarget(s.b.Path, s.dir); err != nil {
				return err
			}
		}
		from := fmt.Sprintf("/proc/self/fd/%d", s.fd)
		if err := unix.Mount(from, s.b.Path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", s.b.Path, err)
		}
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
		if !s.b.RW {
			flags |= unix.MS_RDONLY
		}
		if err := unix.Mount("", s.b.Path, "", flags, ""); err != nil {
			return fmt.Errorf("remounting %s: %w", s.b.Path, err)
		}
	}
	return nil
}

// closedAncestor is the highest directory above p that others may not
// enter (a job's uid and gid are nobody's: only the "other" bits apply),
// "" when every one is open.
func closedAncestor(p string) string {
	p = filepath.Clean(p)
	dir := "/"
	for _, part := range strings.Split(strings.TrimPrefix(filepath.Dir(p), "/"), "/") {
		if part == "" {
			continue
		}
		dir = filepath.Join(dir, part)
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return dir
		}
		if st.Mode&0o001 == 0 {
			return dir
		}
	}
	return ""
}

// within reports whether p is d or below it.
func within(p, d string) bool { return p == d || strings.HasPrefix(p, d+"/") }

// makeTarget creates the mount point of a bind inside a cover.
func makeTarget(p string, dir bool) error {
	if dir {
		return os.MkdirAll(p, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
