package datadir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A child that inherited the lock's descriptor holds the directory after the
// process that took the lock is gone; the refusal names that child.
func TestLockHeldByAChild(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); err == nil || !strings.Contains(err.Error(), "in use by another slipway process") {
		t.Fatalf("a second lock: %v", err)
	}
	unlock()

	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "60")
	child.ExtraFiles = []*os.File{f}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	f.Close() // only the child holds it now

	_, err = Lock(dir)
	if err == nil || !strings.Contains(err.Error(), "held open by pid") || !strings.Contains(err.Error(), "sleep 60") {
		t.Fatalf("the refusal does not name the child: %v", err)
	}
	child.Process.Kill()
	child.Wait()
	unlock, err = Lock(dir)
	if err != nil {
		t.Fatalf("after the child is gone: %v", err)
	}
	unlock()
}
