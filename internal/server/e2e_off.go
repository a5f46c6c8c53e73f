//go:build !e2e

package server

import "slipway/internal/platform/httpx"

// mountE2E is empty in real builds; see e2e_on.go.
func mountE2E(*httpx.Mux) {}
