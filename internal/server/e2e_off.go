//go:build !e2e

package server

import "net/http"

// mountE2E is empty in real builds; see e2e_on.go.
func mountE2E(*http.ServeMux) {}
