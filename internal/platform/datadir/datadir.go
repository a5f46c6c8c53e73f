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
		held := holders(f)
		f.Close()
		return nil, fmt.Errorf("SERVICE_DATA_DIR: %s is in use by another slipway process (pid %s%s); give each server and runner its own data directory",
			dir, pid, held)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) // only for the message above
	}
	return func() { f.Close() }, nil
}

// holders names the processes (other than this one) that have the lock file
// open, as ", held open by pid N (command)": the pid written in the file is
// the process that took the lock, and a child that inherited its descriptor
// would hold it after that process is gone. Best effort, for the message.
func holders(f *os.File) string {
	self, err := f.Stat()
	if err != nil {
		return ""
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	var found []string
	seen := map[string]bool{}
	for _, fd := range procs {
		pid := strings.Split(fd, "/")[2]
		if pid == strconv.Itoa(os.Getpid()) || seen[pid] {
			continue
		}
		if st, err := os.Stat(fd); err == nil && os.SameFile(st, self) {
			seen[pid] = true
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			found = append(found, pid+" ("+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))+")")
		}
		if len(found) == 5 {
			break
		}
	}
	if len(found) == 0 {
		return ""
	}
	return ", held open by pid " + strings.Join(found, ", ")
}
