package process_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"slipway/internal/executor"
	"slipway/internal/executor/executortest"
	"slipway/internal/executor/process"
)

// TestConformance runs the backend suite on the process backend.
func TestConformance(t *testing.T) {
	var mu sync.Mutex
	dirs := map[executor.Backend]string{}
	executortest.Run(t, executortest.Factory{
		New: func(t *testing.T) executor.Backend {
			dir := t.TempDir()
			b := process.New(dir)
			mu.Lock()
			dirs[b] = dir
			mu.Unlock()
			return b
		},
		Restarted: func(t *testing.T, b executor.Backend) executor.Backend {
			mu.Lock()
			defer mu.Unlock()
			return process.New(dirs[b])
		},
		Spec: func(t *testing.T, script string) executor.Spec {
			return executor.Spec{Name: "conformance", Command: []string{"/bin/sh", "-c", script}}
		},
		Alive: func(t *testing.T, _ executor.Backend, marker string) bool {
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				if err != nil || !strings.Contains(string(b), marker) {
					continue
				}
				if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
					continue // ended; only its parent has not reaped it
				}
				return true
			}
			return false
		},
	})
}
