//go:build linux

package runtime

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a new process group led by itself, so
// the whole tree it starts can be killed with one signal, and has the
// kernel kill it if the agent dies first (a SIGKILLed agent cannot clean up).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcessGroup sends SIGKILL to the group led by pid; a group that is
// already gone is not an error.
func killProcessGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // only ESRCH (gone already) can fail for our own child's group
	}
}
