// Package kvtest runs an in-memory HTTP server that speaks the OpenBao
// (HashiCorp Vault) HTTP API for the KV secrets engine version 2, token
// authentication and AppRole login, so code that talks to OpenBao can be
// tested without starting `bao server -dev`.
//
// The server follows the real one's paths, methods, status codes and JSON
// bodies (modelled on OpenBao's kv and approle backends and its HTTP layer):
//
//	POST/PUT /v1/{mount}/data/{path}       write a new version (options.cas)
//	GET      /v1/{mount}/data/{path}       read the latest or ?version=N
//	DELETE   /v1/{mount}/data/{path}       soft-delete the latest version
//	POST     /v1/{mount}/delete/{path}     soft-delete {"versions":[...]}
//	POST     /v1/{mount}/undelete/{path}   restore soft-deleted versions
//	POST     /v1/{mount}/destroy/{path}    destroy versions for good
//	GET      /v1/{mount}/metadata/{path}   read the key's metadata
//	DELETE   /v1/{mount}/metadata/{path}   remove the key and all versions
//	LIST     /v1/{mount}/metadata/{path}   list a folder (or GET ?list=true)
//	POST     /v1/auth/approle/login        issue a token for role_id/secret_id
//	GET      /v1/sys/health                health, no token needed
//
// Everything else under the mount answers 404 like the real engine; writing
// key settings (POST metadata) and PATCH are not emulated and answer 405.
// The engine's configuration is fixed at the defaults of a fresh mount:
// max_versions 10, cas_required false, no delete_version_after.
package kvtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxBody bounds request bodies; larger ones answer 413.
const maxBody = 1 << 20

// defaultMaxVersions is how many versions of a key the engine keeps when
// neither the mount nor the key configures max_versions (OpenBao's default).
const defaultMaxVersions = 10

// errUnsupportedOperation is the body OpenBao gives for a method a path does
// not handle: the router's error wrapped in a multierror.
const errUnsupportedOperation = "1 error occurred:\n\t* unsupported operation\n\n"

// Options configure a Server. The zero value: mount "secret", token "root",
// no AppRole, time.Now.
type Options struct {
	// Mount is the path the KV v2 engine is mounted at, default "secret".
	Mount string
	// Token is a root token that is always accepted, default "root".
	Token string
	// RoleID and SecretID, when both are set, enable
	// POST /v1/auth/approle/login, which issues tokens for that pair.
	RoleID, SecretID string
	// TokenTTL is the lifetime of AppRole-issued tokens, default one hour.
	// Expired tokens are refused with 403 like unknown ones.
	TokenTTL time.Duration
	// Now is the clock for created_time, updated_time, deletion_time and
	// token expiry, default time.Now.
	Now func() time.Time
}

// Server is an in-memory OpenBao KV v2 server. It is safe for concurrent use.
type Server struct {
	// URL is the server's base address, e.g. "http://127.0.0.1:41234";
	// the API lives under URL + "/v1/".
	URL string

	opts Options
	srv  *httptest.Server

	mu       sync.Mutex
	keys     map[string]*keyMetadata // by path relative to the mount
	tokens   map[string]time.Time    // AppRole-issued token -> expiry
	failures int                     // requests still to fail (Fail)
	requests int
	logins   int
}

// keyMetadata is what the engine keeps per key, as in OpenBao's KeyMetadata.
type keyMetadata struct {
	created, updated time.Time
	current, oldest  uint64
	versions         map[uint64]*version
}

// version is one version of a key. data is the JSON object that was
// written; it is dropped when the version is destroyed.
type version struct {
	data      []byte
	created   time.Time
	deleted   time.Time // zero unless soft-deleted
	destroyed bool
}

// New starts a Server for the duration of the test; t.Cleanup closes it.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	o.Mount = strings.Trim(o.Mount, "/")
	if o.Mount == "" {
		o.Mount = "secret"
	}
	if o.Token == "" {
		o.Token = "root"
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{
		opts:   o,
		keys:   map[string]*keyMetadata{},
		tokens: map[string]time.Time{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Paths returns, sorted, the paths (relative to the mount) that have
// metadata, including keys whose versions are all deleted or destroyed.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := make([]string, 0, len(s.keys))
	for p := range s.keys {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// Fail makes the next n requests, whatever they are, answer
// 500 {"errors":["injected failure"]}. It replaces any earlier count;
// n <= 0 stops injecting failures.
func (s *Server) Fail(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = max(n, 0)
}

// Requests reports how many requests the server has served, failed ones
// included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Logins reports how many AppRole logins have succeeded.
func (s *Server) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// operation is the logical operation an HTTP request maps to.
type operation int

const (
	opRead operation = iota
	opList
	opUpdate
	opDelete
)

// serveHTTP routes a request the way OpenBao's HTTP layer and router do.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")

	s.mu.Lock()
	s.requests++
	fail := s.failures > 0
	if fail {
		s.failures--
	}
	s.mu.Unlock()
	if fail {
		writeErrors(w, http.StatusInternalServerError, "injected failure")
		return
	}

	path, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		writeErrors(w, http.StatusNotFound)
		return
	}
	if path == "sys/health" {
		s.health(w, r)
		return
	}

	var op operation
	query := r.URL.Query()
	switch r.Method {
	case http.MethodGet:
		op = opRead
		if v := query.Get("list"); v != "" {
			list, err := strconv.ParseBool(v)
			if err != nil {
				writeErrors(w, http.StatusBadRequest)
				return
			}
			if list {
				op = opList
			}
		}
	case "LIST":
		op = opList
	case http.MethodPost, http.MethodPut:
		op = opUpdate
	case http.MethodDelete:
		op = opDelete
	default:
		writeErrors(w, http.StatusMethodNotAllowed)
		return
	}
	if op == opList && !strings.HasSuffix(path, "/") {
		path += "/"
	}
	if op == opUpdate && strings.HasSuffix(path, "/") {
		writeErrors(w, http.StatusBadRequest, "cannot write to a path ending in '/'")
		return
	}
	if isRelative(path) {
		writeErrors(w, http.StatusBadRequest, "relative paths not supported")
		return
	}

	var body map[string]any
	if op == opUpdate {
		var err error
		if body, err = readJSON(w, r); err != nil {
			status := http.StatusBadRequest
			if errors.As(err, new(*http.MaxBytesError)) {
				status = http.StatusRequestEntityTooLarge
			}
			writeErrors(w, status, err.Error())
			return
		}
	}

	// Logging in needs no token; any token sent along is ignored.
	if path == "auth/approle/login" && s.opts.RoleID != "" && s.opts.SecretID != "" {
		if op != opUpdate {
			writeErrors(w, http.StatusMethodNotAllowed, errUnsupportedOperation)
			return
		}
		s.login(w, body)
		return
	}

	if !s.authorized(r) {
		writeErrors(w, http.StatusForbidden, "permission denied")
		return
	}

	mount := s.opts.Mount
	if path == mount || strings.HasPrefix(path, mount+"/") {
		rel := strings.TrimPrefix(strings.TrimPrefix(path, mount), "/")
		s.kv(w, op, rel, query, body)
		return
	}
	writeErrors(w, http.StatusNotFound, fmt.Sprintf("no handler for route %q. route entry not found.", path))
}

// authorized reports whether the request carries the root token or an
// unexpired AppRole-issued one, in X-Vault-Token or as a Bearer token.
func (s *Server) authorized(r *http.Request) bool {
	token := r.Header.Get("X-Vault-Token")
	if token == "" {
		if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			token = strings.TrimSpace(v)
		}
	}
	if token == "" {
		return false
	}
	if token == s.opts.Token {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	expiry, ok := s.tokens[token]
	if ok && !s.opts.Now().Before(expiry) {
		delete(s.tokens, token)
		return false
	}
	return ok
}

// health answers sys/health for an initialized, unsealed, active node.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"initialized":                  true,
			"sealed":                       false,
			"standby":                      false,
			"replication_performance_mode": "disabled",
			"replication_dr_mode":          "disabled",
			"server_time_utc":              s.opts.Now().UTC().Unix(),
			"version":                      "2.0.0-kvtest",
			"cluster_name":                 "kvtest",
			"cluster_id":                   "00000000-0000-0000-0000-000000000000",
		})
	case http.MethodHead:
		w.WriteHeader(http.StatusOK)
	default:
		writeErrors(w, http.StatusMethodNotAllowed)
	}
}

// login is POST auth/approle/login.
func (s *Server) login(w http.ResponseWriter, body map[string]any) {
	roleID := strings.TrimSpace(stringField(body["role_id"]))
	if roleID == "" {
		writeErrors(w, http.StatusBadRequest, "missing role_id")
		return
	}
	if roleID != s.opts.RoleID {
		writeErrors(w, http.StatusBadRequest, "invalid role or secret ID")
		return
	}
	secretID := strings.TrimSpace(stringField(body["secret_id"]))
	if secretID == "" {
		writeErrors(w, http.StatusBadRequest, "missing secret_id")
		return
	}
	if secretID != s.opts.SecretID {
		writeErrors(w, http.StatusBadRequest, "invalid role or secret ID")
		return
	}

	token := "hvs." + base62(24)
	s.mu.Lock()
	s.tokens[token] = s.opts.Now().Add(s.opts.TokenTTL)
	s.logins++
	s.mu.Unlock()

	resp := newResponse(nil)
	resp["auth"] = map[string]any{
		"client_token":    token,
		"accessor":        base62(24),
		"policies":        []string{"default"},
		"token_policies":  []string{"default"},
		"metadata":        map[string]string{"role_name": "kvtest"},
		"lease_duration":  int(s.opts.TokenTTL.Seconds()),
		"renewable":       true,
		"entity_id":       uuid(),
		"token_type":      "service",
		"orphan":          true,
		"mfa_requirement": nil,
		"num_uses":        0,
	}
	writeJSON(w, http.StatusOK, resp)
}

// kv dispatches a request to the KV v2 engine; rel is the path inside the
// mount, such as "data/app/db".
func (s *Server) kv(w http.ResponseWriter, op operation, rel string, query map[string][]string, body map[string]any) {
	endpoint, key, hasKey := strings.Cut(rel, "/")
	switch endpoint {
	case "data", "metadata", "delete", "undelete", "destroy":
		if !hasKey {
			writeRaw(w, http.StatusNotFound, newResponse(nil),
				"Non-listing operations on the root of a K/V v2 mount are not supported.")
			return
		}
	default:
		writeRaw(w, http.StatusNotFound, newResponse(nil), fmt.Sprintf(
			"Invalid path for a versioned K/V secrets engine. See the API docs for the appropriate API endpoints to use. If using the OpenBao CLI, use 'bao kv %s' for this operation.",
			map[operation]string{opRead: "get", opList: "list", opUpdate: "put", opDelete: "delete"}[op]))
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case endpoint == "data" && op == opUpdate:
		s.writeData(w, key, body)
	case endpoint == "data" && op == opRead:
		s.readData(w, key, query)
	case endpoint == "data" && op == opDelete:
		s.deleteLatest(w, key)
	case endpoint == "metadata" && op == opRead:
		s.readMetadata(w, key)
	case endpoint == "metadata" && op == opList:
		s.list(w, key, query)
	case endpoint == "metadata" && op == opDelete:
		delete(s.keys, key)
		w.WriteHeader(http.StatusNoContent)
	case endpoint == "metadata" && op == opUpdate:
		writeErrors(w, http.StatusMethodNotAllowed, "kvtest: writing key metadata is not emulated")
	case op == opUpdate: // delete, undelete, destroy
		s.changeVersions(w, endpoint, key, body)
	default:
		writeErrors(w, http.StatusMethodNotAllowed, errUnsupportedOperation)
	}
}

// writeData stores a new version of key. The caller holds s.mu.
func (s *Server) writeData(w http.ResponseWriter, key string, body map[string]any) {
	raw, present := body["data"]
	if !present || raw == nil {
		writeErrors(w, http.StatusBadRequest, "no data provided")
		return
	}
	data, ok := raw.(map[string]any)
	if !ok {
		writeErrors(w, http.StatusBadRequest, fieldError("data", raw, "expected a map"))
		return
	}
	var cas *int64
	if rawOpts, ok := body["options"]; ok && rawOpts != nil {
		opts, ok := rawOpts.(map[string]any)
		if !ok {
			writeErrors(w, http.StatusBadRequest, fieldError("options", rawOpts, "expected a map"))
			return
		}
		if rawCAS, ok := opts["cas"]; ok {
			n, err := intValue(rawCAS)
			if err != nil {
				writeErrors(w, http.StatusBadRequest, "error parsing check-and-set parameter")
				return
			}
			cas = &n
		}
	}

	meta := s.keys[key]
	if meta == nil {
		meta = &keyMetadata{versions: map[uint64]*version{}}
	}
	if cas != nil && uint64(*cas) != meta.current {
		writeErrors(w, http.StatusBadRequest, "check-and-set parameter did not match the current version")
		return
	}

	stored, err := json.Marshal(data)
	if err != nil {
		writeErrors(w, http.StatusInternalServerError, err.Error())
		return
	}
	now := s.opts.Now().UTC()
	v := &version{data: stored, created: now}
	meta.addVersion(v)
	s.keys[key] = meta

	writeJSON(w, http.StatusOK, newResponse(map[string]any{
		"version":         meta.current,
		"created_time":    timeString(v.created),
		"deletion_time":   "",
		"destroyed":       false,
		"custom_metadata": nil,
	}))
}

// addVersion appends v as the new current version and, like OpenBao's
// KeyMetadata.AddVersion, drops the oldest versions beyond max_versions.
func (m *keyMetadata) addVersion(v *version) {
	m.current++
	m.versions[m.current] = v
	m.updated = v.created
	if m.created.IsZero() {
		m.created = v.created
	}
	if m.current-m.oldest >= defaultMaxVersions {
		drop := m.current - defaultMaxVersions
		for i := m.oldest; i <= drop; i++ {
			delete(m.versions, i)
		}
		m.oldest = drop + 1
	}
}

// readData answers a read of the latest version or of ?version=N. A deleted
// or destroyed version answers 404 with its metadata and null data, as
// OpenBao does. The caller holds s.mu.
func (s *Server) readData(w http.ResponseWriter, key string, query map[string][]string) {
	var want uint64
	if vs := query["version"]; len(vs) > 0 && vs[0] != "" {
		n, err := strconv.ParseInt(vs[0], 10, 64)
		if err != nil {
			writeErrors(w, http.StatusBadRequest, fieldError("version", vs[0], err.Error()))
			return
		}
		if n > 0 {
			want = uint64(n)
		}
	}

	meta := s.keys[key]
	if meta == nil {
		writeErrors(w, http.StatusNotFound)
		return
	}
	if want == 0 {
		want = meta.current
	}
	v := meta.versions[want]
	if v == nil {
		writeErrors(w, http.StatusNotFound)
		return
	}

	resp := newResponse(map[string]any{
		"data": nil,
		"metadata": map[string]any{
			"version":         want,
			"created_time":    timeString(v.created),
			"deletion_time":   timeString(v.deleted),
			"destroyed":       v.destroyed,
			"custom_metadata": nil,
		},
	})
	if v.destroyed || s.isDeleted(v) {
		writeRaw(w, http.StatusNotFound, resp)
		return
	}
	var data map[string]any
	if err := decodeJSON(bytes.NewReader(v.data), &data); err != nil {
		writeErrors(w, http.StatusInternalServerError, err.Error())
		return
	}
	resp["data"].(map[string]any)["data"] = data
	writeJSON(w, http.StatusOK, resp)
}

// isDeleted reports whether v is soft-deleted as of now. A deletion time
// equal to now counts, so a frozen test clock still sees a delete at once.
func (s *Server) isDeleted(v *version) bool {
	return !v.deleted.IsZero() && !v.deleted.After(s.opts.Now())
}

// deleteLatest is DELETE data/{key}: soft-delete the current version unless
// it is already deleted or destroyed. The caller holds s.mu.
func (s *Server) deleteLatest(w http.ResponseWriter, key string) {
	if meta := s.keys[key]; meta != nil {
		if v := meta.versions[meta.current]; v != nil && !v.destroyed && !s.isDeleted(v) {
			v.deleted = s.opts.Now().UTC()
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// changeVersions is POST delete/, undelete/ or destroy/{key} with
// {"versions": [...]}. The caller holds s.mu.
func (s *Server) changeVersions(w http.ResponseWriter, endpoint, key string, body map[string]any) {
	versions, err := intSlice(body["versions"])
	if err != nil {
		writeErrors(w, http.StatusBadRequest, fieldError("versions", body["versions"], err.Error()))
		return
	}
	if len(versions) == 0 {
		msg := "No version number provided"
		if endpoint == "destroy" {
			msg = "no version number provided"
		}
		writeErrors(w, http.StatusBadRequest, msg)
		return
	}
	meta := s.keys[key]
	if meta == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	now := s.opts.Now().UTC()
	for _, n := range versions {
		v := meta.versions[uint64(n)]
		if v == nil || v.destroyed {
			continue
		}
		switch endpoint {
		case "delete":
			if !s.isDeleted(v) {
				v.deleted = now
			}
		case "undelete":
			v.deleted = time.Time{}
		case "destroy":
			v.destroyed = true
			v.data = nil
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// readMetadata is GET metadata/{key}. The caller holds s.mu.
func (s *Server) readMetadata(w http.ResponseWriter, key string) {
	meta := s.keys[key]
	if meta == nil {
		writeErrors(w, http.StatusNotFound)
		return
	}
	versions := make(map[string]any, len(meta.versions))
	for n, v := range meta.versions {
		versions[strconv.FormatUint(n, 10)] = map[string]any{
			"created_time":  timeString(v.created),
			"deletion_time": timeString(v.deleted),
			"destroyed":     v.destroyed,
		}
	}
	writeJSON(w, http.StatusOK, newResponse(map[string]any{
		"cas_required":             false,
		"created_time":             timeString(meta.created),
		"current_metadata_version": 0,
		"current_version":          meta.current,
		"custom_metadata":          nil,
		"delete_version_after":     "0s",
		"max_versions":             0,
		"metadata_cas_required":    false,
		"oldest_version":           meta.oldest,
		"updated_time":             timeString(meta.updated),
		"versions":                 versions,
	}))
}

// list is LIST metadata/{folder}: the folder's direct children, sub-folders
// with a trailing "/", sorted, honouring OpenBao's optional "after" and
// "limit" parameters. folder is "" or ends in "/". The caller holds s.mu.
func (s *Server) list(w http.ResponseWriter, folder string, query map[string][]string) {
	after := first(query["after"])
	limit := 0
	if v := first(query["limit"]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeErrors(w, http.StatusBadRequest, fieldError("limit", v, err.Error()))
			return
		}
		limit = n
	}

	var keys []string
	for p := range s.keys {
		rest, ok := strings.CutPrefix(p, folder)
		if !ok || rest == "" {
			continue
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i+1]
		}
		if rest > after && !slices.Contains(keys, rest) {
			keys = append(keys, rest)
		}
	}
	if len(keys) == 0 {
		writeErrors(w, http.StatusNotFound)
		return
	}
	sort.Strings(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	writeJSON(w, http.StatusOK, newResponse(map[string]any{"keys": keys}))
}

// newResponse is OpenBao's response envelope around data (which may be nil).
func newResponse(data map[string]any) map[string]any {
	var d any
	if data != nil {
		d = data
	}
	return map[string]any{
		"request_id":     uuid(),
		"lease_id":       "",
		"renewable":      false,
		"lease_duration": 0,
		"data":           d,
		"wrap_info":      nil,
		"warnings":       nil,
		"auth":           nil,
	}
}

// writeJSON writes v as the JSON body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeRaw writes an envelope with a status other than 200, the way OpenBao
// answers a backend's RespondWithStatusCode: no "errors" member, the
// envelope as is, optionally with warnings.
func writeRaw(w http.ResponseWriter, status int, resp map[string]any, warnings ...string) {
	if len(warnings) > 0 {
		resp["warnings"] = warnings
	}
	body, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeErrors writes OpenBao's error body, {"errors":[...]}; with no
// messages the list is empty, as on a plain 404.
func writeErrors(w http.ResponseWriter, status int, msgs ...string) {
	if msgs == nil {
		msgs = []string{}
	}
	writeJSON(w, status, map[string][]string{"errors": msgs})
}

// readJSON decodes a request body that must be empty or a JSON object.
func readJSON(w http.ResponseWriter, r *http.Request) (map[string]any, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("failed to decode JSON input: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	var body map[string]any
	if err := decodeJSON(bytes.NewReader(raw), &body); err != nil {
		return nil, fmt.Errorf("failed to decode JSON input: %w", err)
	}
	if body == nil {
		body = map[string]any{}
	}
	return body, nil
}

// decodeJSON decodes with numbers kept as json.Number, as OpenBao does, so
// large integers survive a round trip.
func decodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	return dec.Decode(v)
}

// fieldError is the message OpenBao's framework gives for a parameter that
// does not convert to its declared type.
func fieldError(field string, value any, detail string) string {
	return fmt.Sprintf("Field validation failed: error converting input %v for field %q: %s", value, field, detail)
}

// intValue converts a JSON number or numeric string to an integer.
func intValue(v any) (int64, error) {
	switch v := v.(type) {
	case json.Number:
		return strconv.ParseInt(v.String(), 10, 64)
	case string:
		return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("cannot parse %v as an integer", v)
}

// intSlice converts a versions parameter the way OpenBao's
// TypeCommaIntSlice does: a JSON array of numbers or numeric strings, a
// single number, or a comma-separated string.
func intSlice(v any) ([]int64, error) {
	var items []any
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []any:
		items = v
	case string:
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				items = append(items, part)
			}
		}
	default:
		items = []any{v}
	}
	out := make([]int64, 0, len(items))
	for _, item := range items {
		n, err := intValue(item)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// stringField converts a JSON scalar to a string; other values become "".
func stringField(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// timeString formats t like OpenBao: RFC 3339 with nanoseconds in UTC, and
// "" for the zero time.
func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// isRelative reports whether path has a ".." segment, which OpenBao refuses.
func isRelative(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "..")
}

// first returns the first of a query parameter's values, or "".
func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// base62 returns n random characters from [0-9A-Za-z], as OpenBao's tokens
// and accessors are made of.
func base62(n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		j, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic("kvtest: crypto/rand failed: " + err.Error())
		}
		b[i] = alphabet[j.Int64()]
	}
	return string(b)
}

// uuid returns a random version 4 UUID, as OpenBao uses for request IDs.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
