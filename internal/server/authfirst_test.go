package server_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/apitest"
	"slipway/internal/platform/db"
)

// Authentication comes before validation everywhere: every operation that
// needs a session or a token answers an anonymous caller 401, whatever its
// body (a broken one included), so nobody learns a schema or probes ids
// without signing in.
func TestAuthenticateBeforeValidate(t *testing.T) {
	app := apitest.New(t, db.SQLite)
	param := regexp.MustCompile(`\{[^}]+\}`)
	checked := 0
	for path, item := range app.Server.APIs.Public.OpenAPI().Paths {
		ops := map[string]*huma.Operation{"GET": item.Get, "PUT": item.Put, "POST": item.Post, "DELETE": item.Delete, "PATCH": item.Patch}
		for method, op := range ops {
			if op == nil || len(op.Security) == 0 {
				continue // public: sign-in, registration, webhooks, probes
			}
			p := param.ReplaceAllString(path, "01a20d94-cab4-78b4-9cf5-9ff0d9ff02e7")
			for _, body := range []string{`{"broken": [`, `{"unexpected": 1}`} {
				r := app.Anonymous().Do(method, p, body)
				if r.Status != http.StatusUnauthorized {
					t.Errorf("%s %s with body %s: %d %s", method, path, body, r.Status, strings.TrimSpace(string(r.Body)))
				}
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d operations checked", checked)
	}
}
