//go:build !unix

package runtime

import (
	"os"
	"os/exec"
)

// Agent containers are Linux; elsewhere there are no process groups, so
// only the direct child is killed.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill() // an error means it is gone already; nothing else to try
	}
}
