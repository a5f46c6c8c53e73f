// Package datadir guards a process's data directory.
package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Lock makes sure one process at a time uses a data directory: two would
// share the SQLite database, the git worktrees and the identity kept there
// (and with it each other's agents). unlock releases it.
func Lock(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("SERVICE_DATA_DIR: cannot create %s: %w", dir, err)
	}
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("SERVICE_DATA_DIR: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, err := os.ReadFile(path) // only for the message
		pid := strings.TrimSpace(string(holder))
		if err != nil || pid == "" {
			pid = "unknown"
		}
		f.Close()
		return nil, fmt.Errorf("SERVICE_DATA_DIR: %s is in use by another slipway process (pid %s); give each server and runner its own data directory",
			dir, pid)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) // only for the message above
	}
	return func() { f.Close() }, nil
}
