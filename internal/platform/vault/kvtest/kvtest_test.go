package kvtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/platform/vault/kvtest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 3, 22, 2, 24, 6, 945319214, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// client calls a Server through net/http.
type client struct {
	t     *testing.T
	base  string
	token string
}

// response is a decoded answer; body is nil for an empty body.
type response struct {
	status int
	raw    string
	body   map[string]any
}

func (c *client) do(method, path string, body any) response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("X-Vault-Token", c.token)
	}
	return send(c.t, req)
}

func send(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, raw: string(raw)}
	if len(bytes.TrimSpace(raw)) > 0 {
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Fatalf("%s %s: Content-Type %q", req.Method, req.URL.Path, got)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&r.body); err != nil {
			t.Fatalf("%s %s: body %q: %v", req.Method, req.URL.Path, raw, err)
		}
	}
	return r
}

// expect fails the test unless the status is want.
func (r response) expect(t *testing.T, want int) response {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d; body %s", r.status, want, r.raw)
	}
	return r
}

// errors returns the body's "errors" list, failing if there is none.
func (r response) errors(t *testing.T) []string {
	t.Helper()
	raw, ok := r.body["errors"].([]any)
	if !ok {
		t.Fatalf("no errors list in %s", r.raw)
	}
	out := []string{}
	for _, e := range raw {
		out = append(out, e.(string))
	}
	return out
}

func (r response) expectErrors(t *testing.T, status int, want ...string) {
	t.Helper()
	r.expect(t, status)
	if want == nil {
		want = []string{}
	}
	if got := r.errors(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("errors %q, want %q", got, want)
	}
	if len(r.body) != 1 {
		t.Fatalf("error body has more than errors: %s", r.raw)
	}
}

// data returns the envelope's "data" object.
func (r response) data(t *testing.T) map[string]any {
	t.Helper()
	d, ok := r.body["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object in %s", r.raw)
	}
	return d
}

// get walks nested objects: get(m, "data", "metadata", "version").
func get(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var v any = m
	for _, p := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: %q is not inside an object", path, p)
		}
		if v, ok = obj[p]; !ok {
			t.Fatalf("%v: no %q in %v", path, p, obj)
		}
	}
	return v
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// envelopeKeys are the members of every OpenBao response envelope.
var envelopeKeys = []string{"auth", "data", "lease_duration", "lease_id", "renewable", "request_id", "warnings", "wrap_info"}

func checkEnvelope(t *testing.T, r response) {
	t.Helper()
	if got := keysOf(r.body); !reflect.DeepEqual(got, envelopeKeys) {
		t.Fatalf("envelope keys %v, want %v", got, envelopeKeys)
	}
	if id, _ := r.body["request_id"].(string); len(id) != 36 {
		t.Fatalf("request_id %q is not a UUID", id)
	}
	if r.body["lease_id"] != "" || r.body["renewable"] != false || num(t, r.body["lease_duration"]) != 0 ||
		r.body["wrap_info"] != nil || r.body["warnings"] != nil || r.body["auth"] != nil {
		t.Fatalf("envelope defaults wrong: %s", r.raw)
	}
}

func setup(t *testing.T, o kvtest.Options) (*kvtest.Server, *client, *clock) {
	t.Helper()
	clk := newClock()
	if o.Now == nil {
		o.Now = clk.Now
	}
	s := kvtest.New(t, o)
	return s, &client{t: t, base: s.URL, token: "root"}, clk
}

func write(c *client, path string, data map[string]any) response {
	c.t.Helper()
	return c.do("POST", "/v1/secret/data/"+path, map[string]any{"data": data}).expect(c.t, 200)
}

func TestWriteReadVersions(t *testing.T) {
	s, c, clk := setup(t, kvtest.Options{})

	r := write(c, "app/db", map[string]any{"password": "one", "port": 5432})
	checkEnvelope(t, r)
	want := map[string]any{
		"created_time":    "2026-03-22T02:24:06.945319214Z",
		"custom_metadata": nil,
		"deletion_time":   "",
		"destroyed":       false,
		"version":         json.Number("1"),
	}
	if got := r.data(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("write data %v, want %v", got, want)
	}

	clk.Add(time.Second)
	r = c.do("PUT", "/v1/secret/data/app/db", map[string]any{"data": map[string]any{"password": "two"}}).expect(t, 200)
	if v := num(t, get(t, r.data(t), "version")); v != 2 {
		t.Fatalf("second write is version %d", v)
	}

	r = c.do("GET", "/v1/secret/data/app/db", nil).expect(t, 200)
	checkEnvelope(t, r)
	if got := get(t, r.body, "data", "data"); !reflect.DeepEqual(got, map[string]any{"password": "two"}) {
		t.Fatalf("latest data %v", got)
	}
	wantMeta := map[string]any{
		"created_time":    "2026-03-22T02:24:07.945319214Z",
		"custom_metadata": nil,
		"deletion_time":   "",
		"destroyed":       false,
		"version":         json.Number("2"),
	}
	if got := get(t, r.body, "data", "metadata"); !reflect.DeepEqual(got, wantMeta) {
		t.Fatalf("latest metadata %v, want %v", got, wantMeta)
	}

	r = c.do("GET", "/v1/secret/data/app/db?version=1", nil).expect(t, 200)
	if got := get(t, r.body, "data", "data"); !reflect.DeepEqual(got, map[string]any{"password": "one", "port": json.Number("5432")}) {
		t.Fatalf("version 1 data %v", got)
	}
	c.do("GET", "/v1/secret/data/app/db?version=7", nil).expectErrors(t, 404)
	c.do("GET", "/v1/secret/data/app/db?version=x", nil).expect(t, 400)
	r = c.do("GET", "/v1/secret/data/nope", nil)
	r.expectErrors(t, 404)
	if r.raw != "{\"errors\":[]}\n" {
		t.Fatalf("404 body %q", r.raw)
	}

	r = c.do("GET", "/v1/secret/metadata/app/db", nil).expect(t, 200)
	checkEnvelope(t, r)
	md := r.data(t)
	wantKeys := []string{"cas_required", "created_time", "current_metadata_version", "current_version", "custom_metadata",
		"delete_version_after", "max_versions", "metadata_cas_required", "oldest_version", "updated_time", "versions"}
	if got := keysOf(md); !reflect.DeepEqual(got, wantKeys) {
		t.Fatalf("metadata keys %v", got)
	}
	if md["created_time"] != "2026-03-22T02:24:06.945319214Z" || md["updated_time"] != "2026-03-22T02:24:07.945319214Z" ||
		num(t, md["current_version"]) != 2 || num(t, md["oldest_version"]) != 0 || num(t, md["max_versions"]) != 0 ||
		md["cas_required"] != false || md["delete_version_after"] != "0s" || md["custom_metadata"] != nil {
		t.Fatalf("metadata %v", md)
	}
	wantVersions := map[string]any{
		"1": map[string]any{"created_time": "2026-03-22T02:24:06.945319214Z", "deletion_time": "", "destroyed": false},
		"2": map[string]any{"created_time": "2026-03-22T02:24:07.945319214Z", "deletion_time": "", "destroyed": false},
	}
	if !reflect.DeepEqual(md["versions"], wantVersions) {
		t.Fatalf("versions %v", md["versions"])
	}
	c.do("GET", "/v1/secret/metadata/nope", nil).expectErrors(t, 404)

	if got := s.Paths(); !reflect.DeepEqual(got, []string{"app/db"}) {
		t.Fatalf("Paths %v", got)
	}
}

func TestWriteErrors(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{})
	c.do("POST", "/v1/secret/data/k", map[string]any{"options": map[string]any{}}).
		expectErrors(t, 400, "no data provided")
	c.do("POST", "/v1/secret/data/k", nil).expectErrors(t, 400, "no data provided")
	c.do("POST", "/v1/secret/data/k", map[string]any{"data": "text"}).expect(t, 400)
	c.do("POST", "/v1/secret/data/k", "{not json").expect(t, 400)
	c.do("POST", "/v1/secret/data/dir/", map[string]any{"data": map[string]any{}}).
		expectErrors(t, 400, "cannot write to a path ending in '/'")
	c.do("POST", "/v1/secret/data/a/../b", map[string]any{"data": map[string]any{}}).
		expectErrors(t, 400, "relative paths not supported")

	big := `{"data":{"v":"` + strings.Repeat("x", 1<<20) + `"}}`
	c.do("POST", "/v1/secret/data/k", big).expect(t, 413)
	c.do("GET", "/v1/secret/data/k", nil).expectErrors(t, 404)
}

func TestCheckAndSet(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{})
	put := func(cas any) response {
		return c.do("POST", "/v1/secret/data/k", map[string]any{
			"data":    map[string]any{"v": fmt.Sprint(cas)},
			"options": map[string]any{"cas": cas},
		})
	}
	const mismatch = "check-and-set parameter did not match the current version"

	put(0).expect(t, 200)
	put(0).expectErrors(t, 400, mismatch)
	put(2).expectErrors(t, 400, mismatch)
	if v := num(t, get(t, put(1).expect(t, 200).body, "data", "version")); v != 2 {
		t.Fatalf("cas write made version %d", v)
	}
	put("2").expect(t, 200) // OpenBao decodes cas weakly
	put(1).expectErrors(t, 400, mismatch)
	put("x").expectErrors(t, 400, "error parsing check-and-set parameter")

	r := c.do("GET", "/v1/secret/data/k", nil).expect(t, 200)
	if got := get(t, r.body, "data", "data", "v"); got != "2" {
		t.Fatalf("data after cas writes: %v", got)
	}
}

func TestSoftDeleteAndUndelete(t *testing.T) {
	_, c, clk := setup(t, kvtest.Options{})
	write(c, "k", map[string]any{"v": "1"})
	write(c, "k", map[string]any{"v": "2"})

	clk.Add(time.Minute)
	c.do("DELETE", "/v1/secret/data/k", nil).expect(t, 204)
	r := c.do("GET", "/v1/secret/data/k", nil).expect(t, 404)
	checkEnvelope(t, r)
	want := map[string]any{
		"data": nil,
		"metadata": map[string]any{
			"created_time":    "2026-03-22T02:24:06.945319214Z",
			"custom_metadata": nil,
			"deletion_time":   "2026-03-22T02:25:06.945319214Z",
			"destroyed":       false,
			"version":         json.Number("2"),
		},
	}
	if got := r.data(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("deleted read %v, want %v", got, want)
	}
	if _, ok := r.body["errors"]; ok {
		t.Fatal("a deleted version's 404 has an errors member")
	}
	// Older versions stay readable.
	c.do("GET", "/v1/secret/data/k?version=1", nil).expect(t, 200)

	// A second DELETE keeps the first deletion time.
	clk.Add(time.Minute)
	c.do("DELETE", "/v1/secret/data/k", nil).expect(t, 204)
	r = c.do("GET", "/v1/secret/metadata/k", nil).expect(t, 200)
	if got := get(t, r.body, "data", "versions", "2", "deletion_time"); got != "2026-03-22T02:25:06.945319214Z" {
		t.Fatalf("deletion_time moved to %v", got)
	}

	c.do("POST", "/v1/secret/undelete/k", map[string]any{"versions": []int{2}}).expect(t, 204)
	r = c.do("GET", "/v1/secret/data/k", nil).expect(t, 200)
	if got := get(t, r.body, "data", "data", "v"); got != "2" {
		t.Fatalf("undeleted data %v", got)
	}

	// delete/ takes explicit versions, as numbers or a comma list.
	c.do("POST", "/v1/secret/delete/k", map[string]any{"versions": "1,2"}).expect(t, 204)
	c.do("GET", "/v1/secret/data/k?version=1", nil).expect(t, 404)
	c.do("GET", "/v1/secret/data/k", nil).expect(t, 404)
	c.do("PUT", "/v1/secret/undelete/k", map[string]any{"versions": []any{1, "2"}}).expect(t, 204)
	c.do("GET", "/v1/secret/data/k?version=1", nil).expect(t, 200)
	c.do("GET", "/v1/secret/data/k", nil).expect(t, 200)

	c.do("POST", "/v1/secret/delete/k", map[string]any{}).expectErrors(t, 400, "No version number provided")
	c.do("POST", "/v1/secret/undelete/k", map[string]any{"versions": []int{}}).expectErrors(t, 400, "No version number provided")
	c.do("POST", "/v1/secret/delete/absent", map[string]any{"versions": []int{1}}).expect(t, 204)
	c.do("DELETE", "/v1/secret/data/absent", nil).expect(t, 204)
	c.do("GET", "/v1/secret/delete/k", nil).expect(t, 405)
}

func TestDestroy(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{})
	write(c, "k", map[string]any{"v": "1"})
	write(c, "k", map[string]any{"v": "2"})

	c.do("POST", "/v1/secret/destroy/k", map[string]any{"versions": []int{1}}).expect(t, 204)
	r := c.do("GET", "/v1/secret/data/k?version=1", nil).expect(t, 404)
	if get(t, r.body, "data", "data") != nil || get(t, r.body, "data", "metadata", "destroyed") != true {
		t.Fatalf("destroyed read %s", r.raw)
	}
	// Undelete cannot bring a destroyed version back.
	c.do("POST", "/v1/secret/undelete/k", map[string]any{"versions": []int{1}}).expect(t, 204)
	c.do("GET", "/v1/secret/data/k?version=1", nil).expect(t, 404)
	c.do("GET", "/v1/secret/data/k", nil).expect(t, 200)

	r = c.do("GET", "/v1/secret/metadata/k", nil).expect(t, 200)
	if get(t, r.body, "data", "versions", "1", "destroyed") != true || get(t, r.body, "data", "versions", "2", "destroyed") != false {
		t.Fatalf("metadata after destroy %s", r.raw)
	}
	c.do("POST", "/v1/secret/destroy/k", map[string]any{}).expectErrors(t, 400, "no version number provided")
}

func TestMetadataDelete(t *testing.T) {
	s, c, _ := setup(t, kvtest.Options{})
	write(c, "a", map[string]any{"v": "1"})
	write(c, "a", map[string]any{"v": "2"})
	write(c, "b", map[string]any{"v": "1"})

	c.do("DELETE", "/v1/secret/metadata/a", nil).expect(t, 204)
	c.do("GET", "/v1/secret/metadata/a", nil).expectErrors(t, 404)
	c.do("GET", "/v1/secret/data/a", nil).expectErrors(t, 404)
	c.do("GET", "/v1/secret/data/a?version=1", nil).expectErrors(t, 404)
	c.do("DELETE", "/v1/secret/metadata/a", nil).expect(t, 204)
	if got := s.Paths(); !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("Paths %v", got)
	}
	// Writing again starts from version 1, and cas 0 succeeds.
	r := c.do("POST", "/v1/secret/data/a", map[string]any{"data": map[string]any{}, "options": map[string]any{"cas": 0}}).expect(t, 200)
	if v := num(t, get(t, r.body, "data", "version")); v != 1 {
		t.Fatalf("rewrite is version %d", v)
	}
}

func TestMaxVersions(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{})
	for i := 1; i <= 12; i++ {
		write(c, "k", map[string]any{"i": i})
	}
	r := c.do("GET", "/v1/secret/metadata/k", nil).expect(t, 200)
	md := r.data(t)
	if num(t, md["current_version"]) != 12 || num(t, md["oldest_version"]) != 3 {
		t.Fatalf("current %v oldest %v", md["current_version"], md["oldest_version"])
	}
	if vs := md["versions"].(map[string]any); len(vs) != 10 || vs["2"] != nil || vs["3"] == nil {
		t.Fatalf("kept versions %v", keysOf(vs))
	}
	c.do("GET", "/v1/secret/data/k?version=2", nil).expectErrors(t, 404)
	c.do("GET", "/v1/secret/data/k?version=3", nil).expect(t, 200)
}

func TestList(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{})
	for _, p := range []string{"app/db", "app/api", "app/nested/x", "app/nested/y", "top", "gone"} {
		write(c, p, map[string]any{"v": p})
	}
	// A key whose only version is destroyed still has metadata and is listed.
	c.do("POST", "/v1/secret/destroy/gone", map[string]any{"versions": []int{1}}).expect(t, 204)

	keys := func(r response) []string {
		t.Helper()
		checkEnvelope(t, r)
		var out []string
		for _, k := range get(t, r.body, "data", "keys").([]any) {
			out = append(out, k.(string))
		}
		return out
	}
	check := func(method, path string, want ...string) {
		t.Helper()
		if got := keys(c.do(method, path, nil).expect(t, 200)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s %s: %v, want %v", method, path, got, want)
		}
	}
	check("LIST", "/v1/secret/metadata", "app/", "gone", "top")
	check("LIST", "/v1/secret/metadata/", "app/", "gone", "top")
	check("LIST", "/v1/secret/metadata/app", "api", "db", "nested/")
	check("LIST", "/v1/secret/metadata/app/", "api", "db", "nested/")
	check("GET", "/v1/secret/metadata/app?list=true", "api", "db", "nested/")
	check("LIST", "/v1/secret/metadata/app/nested", "x", "y")
	check("LIST", "/v1/secret/metadata/app?after=api&limit=1", "db")

	c.do("LIST", "/v1/secret/metadata/none", nil).expectErrors(t, 404)
	c.do("LIST", "/v1/secret/metadata/top", nil).expectErrors(t, 404)
	c.do("GET", "/v1/secret/metadata/app?list=maybe", nil).expectErrors(t, 400)
	c.do("LIST", "/v1/secret/data/app", nil).expectErrors(t, 405, "1 error occurred:\n\t* unsupported operation\n\n")

	c.do("DELETE", "/v1/secret/metadata/gone", nil).expect(t, 204)
	check("LIST", "/v1/secret/metadata", "app/", "top")
	c.do("DELETE", "/v1/secret/metadata/app/nested/x", nil).expect(t, 204)
	c.do("DELETE", "/v1/secret/metadata/app/nested/y", nil).expect(t, 204)
	check("LIST", "/v1/secret/metadata/app", "api", "db")
}

func TestTokens(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{Token: "s3cret"})
	const denied = "permission denied"

	anon := &client{t: t, base: c.base}
	anon.do("GET", "/v1/secret/data/k", nil).expectErrors(t, 403, denied)
	anon.do("LIST", "/v1/secret/metadata", nil).expectErrors(t, 403, denied)
	(&client{t: t, base: c.base, token: "root"}).do("GET", "/v1/secret/data/k", nil).expectErrors(t, 403, denied)
	(&client{t: t, base: c.base, token: "s3cret"}).do("GET", "/v1/secret/data/k", nil).expectErrors(t, 404)

	req, _ := http.NewRequest("GET", c.base+"/v1/secret/data/k", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	send(t, req).expectErrors(t, 404)
	req, _ = http.NewRequest("GET", c.base+"/v1/secret/data/k", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	send(t, req).expectErrors(t, 403, denied)
}

func TestAppRole(t *testing.T) {
	s, c, clk := setup(t, kvtest.Options{RoleID: "role-1", SecretID: "secret-1", TokenTTL: 10 * time.Minute})
	write(c, "k", map[string]any{"v": "1"})

	anon := &client{t: t, base: c.base}
	const invalid = "invalid role or secret ID"
	anon.do("POST", "/v1/auth/approle/login", map[string]any{"role_id": "role-1", "secret_id": "nope"}).expectErrors(t, 400, invalid)
	anon.do("POST", "/v1/auth/approle/login", map[string]any{"role_id": "nope", "secret_id": "secret-1"}).expectErrors(t, 400, invalid)
	anon.do("POST", "/v1/auth/approle/login", map[string]any{"secret_id": "secret-1"}).expectErrors(t, 400, "missing role_id")
	anon.do("POST", "/v1/auth/approle/login", map[string]any{"role_id": "role-1"}).expectErrors(t, 400, "missing secret_id")
	if s.Logins() != 0 {
		t.Fatalf("Logins %d after failures", s.Logins())
	}

	r := anon.do("POST", "/v1/auth/approle/login", map[string]any{"role_id": "role-1", "secret_id": "secret-1"}).expect(t, 200)
	if got := keysOf(r.body); !reflect.DeepEqual(got, envelopeKeys) {
		t.Fatalf("login envelope keys %v", got)
	}
	if r.body["data"] != nil {
		t.Fatalf("login data %v", r.body["data"])
	}
	auth := r.body["auth"].(map[string]any)
	token, _ := auth["client_token"].(string)
	if !strings.HasPrefix(token, "hvs.") || len(token) != len("hvs.")+24 {
		t.Fatalf("client_token %q", token)
	}
	if acc, _ := auth["accessor"].(string); len(acc) != 24 {
		t.Fatalf("accessor %q", acc)
	}
	if num(t, auth["lease_duration"]) != 600 || auth["renewable"] != true || auth["token_type"] != "service" ||
		!reflect.DeepEqual(auth["policies"], []any{"default"}) || !reflect.DeepEqual(auth["token_policies"], []any{"default"}) {
		t.Fatalf("auth %v", auth)
	}
	if s.Logins() != 1 {
		t.Fatalf("Logins %d", s.Logins())
	}

	// The issued token works, by either header, until it expires.
	app := &client{t: t, base: c.base, token: token}
	app.do("GET", "/v1/secret/data/k", nil).expect(t, 200)
	app.do("POST", "/v1/secret/data/k", map[string]any{"data": map[string]any{"v": "2"}}).expect(t, 200)
	req, _ := http.NewRequest("GET", c.base+"/v1/secret/data/k", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	send(t, req).expect(t, 200)

	clk.Add(10*time.Minute - time.Nanosecond)
	app.do("GET", "/v1/secret/data/k", nil).expect(t, 200)
	clk.Add(time.Nanosecond)
	app.do("GET", "/v1/secret/data/k", nil).expectErrors(t, 403, "permission denied")
	c.do("GET", "/v1/secret/data/k", nil).expect(t, 200) // the root token never expires

	// A fresh login issues a different token.
	r = anon.do("POST", "/v1/auth/approle/login", map[string]any{"role_id": "role-1", "secret_id": "secret-1"}).expect(t, 200)
	if again := r.body["auth"].(map[string]any)["client_token"]; again == token {
		t.Fatal("a second login reused the token")
	}
	if s.Logins() != 2 {
		t.Fatalf("Logins %d", s.Logins())
	}
	anon.do("GET", "/v1/auth/approle/login", nil).expect(t, 405)
}

func TestAppRoleDisabled(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{})
	body := map[string]any{"role_id": "r", "secret_id": "s"}
	(&client{t: t, base: c.base}).do("POST", "/v1/auth/approle/login", body).expectErrors(t, 403, "permission denied")
	c.do("POST", "/v1/auth/approle/login", body).expect(t, 404)
}

func TestFail(t *testing.T) {
	s, c, _ := setup(t, kvtest.Options{})
	write(c, "k", map[string]any{"v": "1"})
	before := s.Requests()

	s.Fail(2)
	c.do("GET", "/v1/secret/data/k", nil).expectErrors(t, 500, "injected failure")
	c.do("POST", "/v1/secret/data/k", map[string]any{"data": map[string]any{"v": "2"}}).expectErrors(t, 500, "injected failure")
	r := c.do("GET", "/v1/secret/data/k", nil).expect(t, 200)
	if got := get(t, r.body, "data", "data", "v"); got != "1" {
		t.Fatalf("a failed write was stored: %v", got)
	}
	if got := s.Requests() - before; got != 3 {
		t.Fatalf("Requests grew by %d, want 3", got)
	}
	s.Fail(5)
	s.Fail(0)
	c.do("GET", "/v1/secret/data/k", nil).expect(t, 200)
}

func TestHealth(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{})
	anon := &client{t: t, base: c.base}
	r := anon.do("GET", "/v1/sys/health", nil).expect(t, 200)
	if r.body["initialized"] != true || r.body["sealed"] != false || r.body["standby"] != false {
		t.Fatalf("health %s", r.raw)
	}
	if got := num(t, r.body["server_time_utc"]); got != newClock().Now().Unix() {
		t.Fatalf("server_time_utc %d", got)
	}
	anon.do("HEAD", "/v1/sys/health", nil).expect(t, 200)
	anon.do("POST", "/v1/sys/health", nil).expectErrors(t, 405)
}

func TestRoutes(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{Mount: "kv/team"})
	c.do("POST", "/v1/kv/team/data/k", map[string]any{"data": map[string]any{"v": "1"}}).expect(t, 200)
	c.do("GET", "/v1/kv/team/data/k", nil).expect(t, 200)

	c.do("GET", "/v1/secret/data/k", nil).expectErrors(t, 404, `no handler for route "secret/data/k". route entry not found.`)
	c.do("GET", "/v1/nothing", nil).expect(t, 404)
	c.do("GET", "/elsewhere", nil).expectErrors(t, 404)
	(&client{t: t, base: c.base}).do("GET", "/v1/nothing", nil).expectErrors(t, 403, "permission denied")
	c.do("PATCH", "/v1/kv/team/data/k", map[string]any{"data": map[string]any{}}).expect(t, 405)
	c.do("POST", "/v1/kv/team/metadata/k", map[string]any{"max_versions": 3}).expect(t, 405)
	c.do("DELETE", "/v1/kv/team/destroy/k", nil).expect(t, 405)

	// Paths inside the mount that the engine does not know answer 404 with
	// a warning and no errors member, as OpenBao does.
	for _, p := range []string{"/v1/kv/team/k", "/v1/kv/team/data", "/v1/kv/team"} {
		r := c.do("GET", p, nil).expect(t, 404)
		checkEnvelopeWithWarning(t, r)
	}
}

func checkEnvelopeWithWarning(t *testing.T, r response) {
	t.Helper()
	if got := keysOf(r.body); !reflect.DeepEqual(got, envelopeKeys) {
		t.Fatalf("envelope keys %v", got)
	}
	ws, ok := r.body["warnings"].([]any)
	if !ok || len(ws) != 1 || r.body["data"] != nil {
		t.Fatalf("invalid-path body %s", r.raw)
	}
}

func TestConcurrentWrites(t *testing.T) {
	_, c, _ := setup(t, kvtest.Options{Now: time.Now})
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"data":{"i":%d}}`, i)
			req, _ := http.NewRequest("POST", c.base+"/v1/secret/data/k", strings.NewReader(body))
			req.Header.Set("X-Vault-Token", "root")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r := c.do("GET", "/v1/secret/metadata/k", nil).expect(t, 200)
	if got := num(t, get(t, r.body, "data", "current_version")); got != n {
		t.Fatalf("current_version %d, want %d", got, n)
	}
}
