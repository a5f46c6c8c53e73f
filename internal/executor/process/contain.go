package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"slipway/internal/executor"
	"slipway/internal/executor/sandbox"
)

// job is how one agent is contained: the command line that starts it and
// what to undo when it ends.
type job struct {
	argv    []string
	uid     int      // 0: the server's own
	owned   []string // writable mounts handed to uid for the job's life
	release func()
}

// contain wraps argv in the sandbox helper (and bubblewrap, when that is
// a layer) with spec's mounts and the agent's home as its only paths.
func (b *Backend) contain(spec executor.Spec, argv []string, dir, home string) (*job, error) {
	j := &job{argv: argv, release: func() {}}
	if !b.Contained() {
		return j, nil
	}
	l := b.sb.Layers
	ss := sandbox.Spec{Dir: dir, Binds: []sandbox.Bind{{Path: home, RW: true}}}
	for _, m := range spec.Mounts {
		src, err := filepath.Abs(m.Source)
		if err != nil {
			return nil, err
		}
		ss.Binds = append(ss.Binds, sandbox.Bind{Path: src, RW: !m.ReadOnly})
		if !m.ReadOnly {
			j.owned = append(j.owned, src)
		}
	}
	if l.Landlock > 0 {
		ss.Landlock, ss.System = true, sandbox.SystemPaths
	}
	if l.UID {
		uid, err := b.takeUID()
		if err != nil {
			return nil, err
		}
		j.uid = uid
		j.release = func() {
			for _, p := range j.owned {
				// Best effort: a path the worker removed is gone; one that
				// stays with the uid is chowned again by its next job, and
				// the server (root) reads it either way.
				_ = chownTree(p, 0, 0)
			}
			b.freeUID(uid)
		}
		for _, p := range append([]string{home}, j.owned...) {
			if err := chownTree(p, uid, uid); err != nil {
				j.release()
				return nil, fmt.Errorf("process: handing %s to the job's uid: %w", p, err)
			}
		}
		// A uid of its own makes AGENT_PIDS_LIMIT a per-job process cap.
		ss.Mounts, ss.UID, ss.GID, ss.NProc = true, uid, uid, uint64(max(spec.Limits.PidsLimit, 0))
	}
	var err error
	if l.Bwrap != "" {
		// Inside bubblewrap the helper needs its own binary.
		ss.Binds = append(ss.Binds, sandbox.Bind{Path: b.sb.Helper})
		helper, herr := sandbox.Command(b.sb.Helper, ss, argv)
		j.argv, err = append(append([]string{l.Bwrap}, sandbox.BwrapArgs(ss)...), helper...), herr
	} else {
		j.argv, err = sandbox.Command(b.sb.Helper, ss, argv)
	}
	if err != nil {
		j.release()
		return nil, err
	}
	return j, nil
}

// takeUID hands out the lowest job uid not in use.
func (b *Backend) takeUID() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := 1; i < maxJobs; i++ {
		if !b.uids[i] {
			b.uids[i] = true
			return UIDBase + i, nil
		}
	}
	return 0, errors.New("process: every job uid is in use")
}

func (b *Backend) freeUID(uid int) {
	b.mu.Lock()
	delete(b.uids, uid-UIDBase)
	b.mu.Unlock()
}

// chownTree gives root and everything under it to uid:gid, without
// following links. A file with more than one link is left alone: it may be
// a link a job made to a file elsewhere, which must not change owner.
func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
					return nil
				}
			}
		}
		return os.Lchown(p, uid, gid)
	})
}

// newHome makes an agent's home and temporary directory.
func (b *Backend) newHome() (string, error) {
	if b.homes == "" {
		return os.MkdirTemp("", "slipway-agent-home-")
	}
	if err := os.MkdirAll(b.homes, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(b.homes, "home-")
}
