package vault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// OpenBaoConfig reaches a KV version 2 engine. Auth is a token, or an
// AppRole whose login the client renews before the token expires (and once
// more on a 403).
type OpenBaoConfig struct {
	Addr      string // e.g. https://bao.internal:8200
	Token     string
	RoleID    string
	SecretID  string
	Namespace string // sent as X-Vault-Namespace when set
	Mount     string // the KV v2 mount, default "secret"
	Prefix    string // every secret lives below it, default "slipway"
	// HTTP is the client to use (nil: one with a 15 s timeout).
	HTTP *http.Client
}

// OpenBao is the openbao backend.
type OpenBao struct {
	cfg  OpenBaoConfig
	base string // Addr + "/v1/"
	http *http.Client

	mu      sync.Mutex
	token   string
	expires time.Time // zero: a static token
}

// maxResponse bounds what the client reads of one answer.
const maxResponse = 4 << 20

// NewOpenBao checks the configuration; it does not call the server.
func NewOpenBao(cfg OpenBaoConfig) (*OpenBao, error) {
	u, err := url.Parse(cfg.Addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("vault: the OpenBao address %q is not an http(s) URL", cfg.Addr)
	}
	if cfg.Token == "" && (cfg.RoleID == "" || cfg.SecretID == "") {
		return nil, errors.New("vault: OpenBao needs a token or an AppRole role id and secret id")
	}
	if cfg.Mount == "" {
		cfg.Mount = "secret"
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "slipway"
	}
	for _, seg := range []string{cfg.Mount, cfg.Prefix} {
		if !pathRE.MatchString(seg) || slices.ContainsFunc(strings.Split(seg, "/"), func(p string) bool { return strings.Trim(p, ".") == "" }) {
			return nil, fmt.Errorf("vault: %q is not a plain path (letters, digits, '.', '_', '-', inner '/')", seg)
		}
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Second}
	}
	return &OpenBao{cfg: cfg, base: strings.TrimRight(cfg.Addr, "/") + "/v1/", http: hc, token: cfg.Token}, nil
}

// Name is "openbao".
func (*OpenBao) Name() string { return "openbao" }

// Put writes a new version holding {"value": value}.
func (o *OpenBao) Put(ctx context.Context, ref Ref, value string) error {
	if err := check(ref, value); err != nil {
		return err
	}
	body := map[string]any{"data": map[string]string{"value": value}}
	if _, err := o.call(ctx, http.MethodPost, o.cfg.Mount+"/data/"+o.path(ref), body, nil); err != nil {
		return fail("store", err)
	}
	return nil
}

// Get reads the current version's value.
func (o *OpenBao) Get(ctx context.Context, ref Ref) (string, error) {
	if !ref.Valid() {
		return "", ErrNotFound
	}
	var out struct {
		Data struct {
			Data map[string]any `json:"data"`
		} `json:"data"`
	}
	status, err := o.call(ctx, http.MethodGet, o.cfg.Mount+"/data/"+o.path(ref), nil, &out)
	if status == http.StatusNotFound {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fail("read", err)
	}
	v, ok := out.Data.Data["value"].(string)
	if !ok {
		return "", fail("read", errors.New("the secret has no string field \"value\""))
	}
	return v, nil
}

// Delete removes the metadata and every version (a KV v2 "delete metadata").
func (o *OpenBao) Delete(ctx context.Context, ref Ref) error {
	if !ref.Valid() {
		return nil
	}
	status, err := o.call(ctx, http.MethodDelete, o.cfg.Mount+"/metadata/"+o.path(ref), nil, nil)
	if err != nil && status != http.StatusNotFound {
		return fail("delete", err)
	}
	return nil
}

// List walks <prefix>/<workspace>/<name>, reading each secret's metadata.
func (o *OpenBao) List(ctx context.Context, limit int, fn func(Entry) error) error {
	workspaces, err := o.list(ctx, o.cfg.Prefix)
	if err != nil {
		return fail("list", err)
	}
	seen := 0
	for _, ws := range workspaces {
		ws, isDir := strings.CutSuffix(ws, "/")
		if !isDir || !workspaceRE.MatchString(ws) {
			continue
		}
		names, err := o.list(ctx, o.cfg.Prefix+"/"+ws)
		if err != nil {
			return fail("list", err)
		}
		for _, name := range names {
			ref := Ref{Workspace: ws, Name: name}
			if !ref.Valid() {
				continue
			}
			if seen >= limit {
				return nil
			}
			seen++
			en, found, err := o.metadata(ctx, ref)
			if err != nil {
				return fail("list", err)
			}
			if !found {
				continue
			}
			if err := fn(en); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *OpenBao) list(ctx context.Context, folder string) ([]string, error) {
	var out struct {
		Data struct {
			Keys []string `json:"keys"`
		} `json:"data"`
	}
	status, err := o.call(ctx, "LIST", o.cfg.Mount+"/metadata/"+folder+"/", nil, &out)
	if status == http.StatusNotFound {
		return nil, nil
	}
	return out.Data.Keys, err
}

func (o *OpenBao) metadata(ctx context.Context, ref Ref) (Entry, bool, error) {
	var out struct {
		Data struct {
			CreatedTime    time.Time `json:"created_time"`
			CurrentVersion int       `json:"current_version"`
			Versions       map[string]struct {
				DeletionTime string `json:"deletion_time"`
				Destroyed    bool   `json:"destroyed"`
			} `json:"versions"`
		} `json:"data"`
	}
	status, err := o.call(ctx, http.MethodGet, o.cfg.Mount+"/metadata/"+o.path(ref), nil, &out)
	if status == http.StatusNotFound {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	cur := out.Data.Versions[fmt.Sprint(out.Data.CurrentVersion)]
	return Entry{Ref: ref, CreatedAt: out.Data.CreatedTime.UTC(), Deleted: cur.DeletionTime != "" || cur.Destroyed}, true, nil
}

// path is where ref lives below the mount.
func (o *OpenBao) path(ref Ref) string { return o.cfg.Prefix + "/" + ref.path() }

// call makes one request with the current token, logging in again once
// when an AppRole token was refused. It returns the status even on error.
func (o *OpenBao) call(ctx context.Context, method, path string, body, out any) (int, error) {
	for attempt := 0; ; attempt++ {
		token, err := o.currentToken(ctx, attempt > 0)
		if err != nil {
			return 0, err
		}
		status, err := o.do(ctx, method, path, token, body, out)
		if status == http.StatusForbidden && attempt == 0 && o.cfg.RoleID != "" {
			continue
		}
		return status, err
	}
}

// currentToken is the static token, or an AppRole token logged in anew
// when forced or within a minute of expiring.
func (o *OpenBao) currentToken(ctx context.Context, force bool) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cfg.RoleID == "" {
		return o.token, nil
	}
	if !force && o.token != "" && time.Until(o.expires) > time.Minute {
		return o.token, nil
	}
	var out struct {
		Auth struct {
			ClientToken   string `json:"client_token"`
			LeaseDuration int64  `json:"lease_duration"`
		} `json:"auth"`
	}
	login := map[string]string{"role_id": o.cfg.RoleID, "secret_id": o.cfg.SecretID}
	if _, err := o.do(ctx, http.MethodPost, "auth/approle/login", "", login, &out); err != nil {
		return "", fmt.Errorf("AppRole login: %w", err)
	}
	if out.Auth.ClientToken == "" {
		return "", errors.New("AppRole login: no client token in the answer")
	}
	o.token = out.Auth.ClientToken
	o.expires = time.Now().Add(time.Duration(out.Auth.LeaseDuration) * time.Second)
	return o.token, nil
}

func (o *OpenBao) do(ctx context.Context, method, path, token string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, o.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("X-Vault-Token", token)
	}
	if o.cfg.Namespace != "" {
		req.Header.Set("X-Vault-Namespace", o.cfg.Namespace)
	}
	resp, err := o.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Errors []string `json:"errors"`
		}
		_ = json.Unmarshal(raw, &e)
		msg := strings.Join(e.Errors, "; ")
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return resp.StatusCode, fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, msg)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}
