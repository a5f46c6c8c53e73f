package runner

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"slipway/internal/platform/telemetry"
	"slipway/internal/runnerapi"
	"slipway/internal/workport"
)

// Client speaks the runner API: the worker port over HTTPS, plus enrolment,
// token refresh and heartbeats.
type Client struct {
	base string // hub URL
	http *http.Client
	log  *slog.Logger
	// poll is the pause after an empty claim (SERVICE_RUNNER_POLL_SECS).
	poll time.Duration

	mu    sync.RWMutex
	token string

	// extended is when each job's lease was last renewed: a deliver for a
	// job that comes back with no renewal since the last one was passed on
	// means its lines are still waiting (the control stream then pauses).
	extendedMu sync.Mutex
	extended   map[string]time.Time
}

var _ workport.Port = (*Client)(nil)

// HubError is an error answer of the hub.
type HubError struct {
	Status  int
	Code    string
	Message string
}

func (e *HubError) Error() string {
	return fmt.Sprintf("hub answered %d %s: %s", e.Status, e.Code, e.Message)
}

// Unauthorized reports a refused credential.
func Unauthorized(err error) bool {
	var he *HubError
	return errors.As(err, &he) && he.Status == http.StatusUnauthorized
}

// TLSFiles are the runner's TLS settings.
type TLSFiles struct {
	ClientCert, ClientKey string // mutual TLS identity (both or neither)
	CA                    string // CA bundle pinning the hub's certificate
}

// NewClient returns a client of the hub at base.
func NewClient(base string, files TLSFiles, poll time.Duration, log *slog.Logger) (*Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if files.CA != "" {
		pem, err := os.ReadFile(files.CA)
		if err != nil {
			return nil, fmt.Errorf("SERVICE_RUNNER_TLS_CA_PATH: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("SERVICE_RUNNER_TLS_CA_PATH: %s holds no PEM certificate", files.CA)
		}
		tc.RootCAs = pool
	}
	if files.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("SERVICE_RUNNER_TLS_CLIENT_CERT_PATH/_KEY_PATH: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.MaxIdleConnsPerHost = 16
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{Transport: tr}, log: log, poll: poll}, nil
}

// SetToken sets the bearer token sent from now on.
func (c *Client) SetToken(t string) {
	c.mu.Lock()
	c.token = t
	c.mu.Unlock()
}

func (c *Client) bearer() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.token
}

// do sends a JSON request and decodes the answer into out (nil: ignore).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t := c.bearer(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	if telemetry.Recording(ctx) {
		// A report of traced work (its events, its result): the hub's
		// spans of it continue the work's trace.
		telemetry.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		he := &HubError{Status: resp.StatusCode}
		var e struct {
			Code  string `json:"code"`
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil {
			he.Code, he.Message = e.Code, e.Error
		} else {
			he.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
		}
		return he
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// Version is the hub's GET /api/version.
type Version struct {
	Version           string   `json:"version"`
	RunnerAPIVersions []string `json:"runner_api_versions"`
}

// ErrIncompatible: the hub does not speak this runner's API version.
var ErrIncompatible = errors.New("incompatible hub")

// CheckVersion refuses a hub that does not speak this runner's API version.
func (c *Client) CheckVersion(ctx context.Context, ours string) (*Version, error) {
	var v Version
	if err := c.do(ctx, http.MethodGet, "/api/version", nil, &v); err != nil {
		return nil, fmt.Errorf("asking the hub at %s for its version: %w", c.base, err)
	}
	if !slices.Contains(v.RunnerAPIVersions, runnerapi.APIVersion) {
		speaks := strings.Join(v.RunnerAPIVersions, ", ")
		if speaks == "" {
			speaks = "none"
		}
		return &v, fmt.Errorf("%w: the hub at %s (version %s) speaks runner API versions [%s]; this runner (version %s) speaks %s: run a runner and a hub of matching releases",
			ErrIncompatible, c.base, v.Version, speaks, ours, runnerapi.APIVersion)
	}
	return &v, nil
}

// Enroll redeems an enrollment token for a JWT.
func (c *Client) Enroll(ctx context.Context, token, name string) (*runnerapi.Token, error) {
	var t runnerapi.Token
	err := c.do(ctx, http.MethodPost, runnerapi.APIPrefix+"/enroll", map[string]string{"token": token, "name": name}, &t)
	return &t, err
}

// Refresh trades the current JWT for a new one.
func (c *Client) Refresh(ctx context.Context) (*runnerapi.Token, error) {
	var t runnerapi.Token
	err := c.do(ctx, http.MethodPost, runnerapi.APIPrefix+"/token", nil, &t)
	return &t, err
}

// Heartbeat reports the runner alive.
func (c *Client) Heartbeat(ctx context.Context, hb runnerapi.Heartbeat) (*runnerapi.HeartbeatReply, error) {
	var r runnerapi.HeartbeatReply
	err := c.do(ctx, http.MethodPost, runnerapi.APIPrefix+"/heartbeat", hb, &r)
	return &r, err
}

// Goodbye tells the hub the runner stops (offline at once).
func (c *Client) Goodbye(ctx context.Context) error {
	var r runnerapi.Ack
	return c.do(ctx, http.MethodPost, runnerapi.APIPrefix+"/goodbye", struct{}{}, &r)
}

// leaseErr maps the hub's lease-lost answer to the port's error. A refused
// token counts as a lost lease too: a runner whose credential was revoked
// stops its work at once rather than keep running it.
func leaseErr(err error) error {
	var he *HubError
	if errors.As(err, &he) && (he.Status == http.StatusConflict || he.Status == http.StatusUnauthorized) {
		return workport.ErrLeaseLost
	}
	return err
}

// Claim implements workport.Port: a long poll; after an empty one it pauses
// for the poll interval.
func (c *Client) Claim(ctx context.Context, req workport.ClaimRequest) ([]workport.Assignment, error) {
	wait := min(req.Wait, runnerapi.MaxWait)
	cctx, cancel := context.WithTimeout(ctx, wait+30*time.Second)
	defer cancel()
	var out runnerapi.Assignments
	err := c.do(cctx, http.MethodPost, runnerapi.APIPrefix+"/claim",
		map[string]any{"max": req.Max, "wait_ms": wait.Milliseconds(), "backend": req.Backend}, &out)
	if err != nil {
		return nil, err
	}
	if len(out.Assignments) == 0 && c.poll > 0 {
		select {
		case <-time.After(c.poll):
		case <-ctx.Done():
		}
	}
	return out.Assignments, nil
}

func timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}

func jobPath(l workport.Lease, what string) string {
	return runnerapi.APIPrefix + "/jobs/" + url.PathEscape(l.JobID) + "/" + what
}

// Extend implements workport.Port.
func (c *Client) Extend(ctx context.Context, l workport.Lease, inboxAfter int64) (workport.Directive, error) {
	ctx, cancel := timeout(ctx)
	defer cancel()
	var r runnerapi.ExtendReply
	err := c.do(ctx, http.MethodPost, jobPath(l, "extend"), map[string]any{"lease": l, "inbox_after": inboxAfter}, &r)
	if err == nil {
		c.extendedMu.Lock()
		if c.extended == nil {
			c.extended = map[string]time.Time{}
		}
		c.extended[l.JobID] = time.Now()
		c.extendedMu.Unlock()
	}
	return workport.Directive{Cancel: r.Cancel, Inbox: r.Inbox}, leaseErr(err)
}

// renewedSince reports whether the job's lease was renewed after t.
func (c *Client) renewedSince(job string, t time.Time) bool {
	c.extendedMu.Lock()
	defer c.extendedMu.Unlock()
	return c.extended[job].After(t)
}

func (c *Client) forgetRenewals(older time.Time) {
	c.extendedMu.Lock()
	defer c.extendedMu.Unlock()
	for k, t := range c.extended {
		if t.Before(older) {
			delete(c.extended, k)
		}
	}
}

// Append implements workport.Port.
func (c *Client) Append(ctx context.Context, l workport.Lease, b workport.Batch) error {
	ctx, cancel := timeout(ctx)
	defer cancel()
	return leaseErr(c.do(ctx, http.MethodPost, jobPath(l, "events"), map[string]any{"lease": l, "batch": b}, nil))
}

// Finish implements workport.Port.
func (c *Client) Finish(ctx context.Context, l workport.Lease, r workport.Result) error {
	ctx, cancel := timeout(ctx)
	defer cancel()
	return leaseErr(c.do(ctx, http.MethodPost, jobPath(l, "finish"), map[string]any{"lease": l, "result": r}, nil))
}

// Held implements workport.Port.
func (c *Client) Held(ctx context.Context, _ string) ([]workport.Assignment, error) {
	ctx, cancel := timeout(ctx)
	defer cancel()
	var out runnerapi.Assignments
	err := c.do(ctx, http.MethodGet, runnerapi.APIPrefix+"/held", nil, &out)
	return out.Assignments, err
}

// Control implements workport.Port: long polls of the hub's control route,
// each cancel passed on once.
func (c *Client) Control(ctx context.Context, _ string) (<-chan workport.Control, error) {
	out := make(chan workport.Control, 16)
	go func() {
		defer close(out)
		seen := map[string]time.Time{}
		backoff := time.Duration(0)
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, runnerapi.MaxWait+30*time.Second)
			var cs runnerapi.Controls
			err := c.do(pctx, http.MethodGet, runnerapi.APIPrefix+"/control?wait_ms="+fmt.Sprint(runnerapi.MaxWait.Milliseconds()), nil, &cs)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				backoff = min(max(2*backoff, 200*time.Millisecond), 5*time.Second)
				c.log.Debug("control stream: retrying", "err", err, "in", backoff)
				sleep(ctx, backoff)
				continue
			}
			backoff = 0
			fresh, again := 0, false
			now := time.Now()
			for k, t := range seen {
				if now.Sub(t) > 10*time.Minute {
					delete(seen, k)
				}
			}
			c.forgetRenewals(now.Add(-10 * time.Minute))
			for _, ctl := range cs.Controls {
				// A cancel is passed on once. Every deliver is passed on
				// (a renewal more is harmless), but one that comes back
				// before the job's lease was renewed since the last one
				// means its lines are still waiting (the renewal it asked
				// for has not happened yet, or failed): pause before
				// polling again instead of spinning.
				key := ctl.Action + " " + ctl.JobID
				at, ok := seen[key]
				if ok && ctl.Action == workport.ActionCancel {
					continue
				}
				again = again || (ok && ctl.Action == workport.ActionDeliver && !c.renewedSince(ctl.JobID, at))
				seen[key] = now
				fresh++
				select {
				case out <- workport.Control{JobID: ctl.JobID, Action: ctl.Action}:
				case <-ctx.Done():
					return
				}
			}
			switch {
			case len(cs.Controls) > 0 && fresh == 0:
				// Only cancels already passed on (the work is stopping):
				// do not spin on them.
				sleep(ctx, time.Second)
			case again:
				sleep(ctx, deliverPause)
			}
		}
	}()
	return out, nil
}

// deliverPause is how long the control stream pauses when a deliver comes
// back for lines still waiting (bounding its polls in that case to 20 a
// second for as long as the renewal does not happen).
const deliverPause = 50 * time.Millisecond

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}
