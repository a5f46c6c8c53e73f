package httpx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
)

type ctxKey int

const (
	requestKey ctxKey = iota // *responseWriter of the current request
	loggerKey                // *slog.Logger outside requests
)

// RequestIDHeader carries the request id in and out.
const RequestIDHeader = "X-Request-Id"

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if rw, ok := ctx.Value(requestKey).(*responseWriter); ok {
		return rw.id
	}
	return ""
}

// Logger returns the server logger tagged with the request id.
func Logger(ctx context.Context) *slog.Logger {
	if rw, ok := ctx.Value(requestKey).(*responseWriter); ok {
		return withTrace(ctx, rw.log.With("request_id", rw.id))
	}
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// ClientIP returns the address of the client of the request ctx belongs to
// (the TCP peer, or the address a trusted proxy named: see Proxies), or "".
func ClientIP(ctx context.Context) string {
	rw, ok := ctx.Value(requestKey).(*responseWriter)
	if !ok {
		return ""
	}
	if rw.client != "" {
		return rw.client
	}
	return peer(rw.r)
}

func peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Proxies makes the client address of a request that a trusted proxy
// passed on the one its X-Forwarded-For names: read from the right, the
// first address that is not a trusted proxy's (what a trusted proxy
// appended; anything to its left the client could have written). From
// anyone else the header is ignored. It goes inside Observe.
func Proxies(trusted []netip.Prefix, next http.Handler) http.Handler {
	if len(trusted) == 0 {
		return next
	}
	isTrusted := func(s string) (netip.Addr, bool) {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return netip.Addr{}, false
		}
		a = a.Unmap()
		for _, p := range trusted {
			if p.Contains(a) {
				return a, true
			}
		}
		return a, false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw, ok := r.Context().Value(requestKey).(*responseWriter)
		if _, from := isTrusted(peer(r)); ok && from {
			hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
			for i := len(hops) - 1; i >= 0; i-- {
				a, proxy := isTrusted(hops[i])
				if !a.IsValid() {
					break // not an address: nothing left of it can be believed
				}
				if !proxy {
					rw.client = a.String()
					break
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// UserAgent returns the request's User-Agent header, or "".
func UserAgent(ctx context.Context) string {
	if rw, ok := ctx.Value(requestKey).(*responseWriter); ok {
		return rw.r.UserAgent()
	}
	return ""
}

// LoopbackOrigin is the origin ("http://localhost:8080") a request came to
// when it came to a loopback name or address: where links in mail point on
// a server run without SERVICE_PUBLIC_URL on a developer's machine. Any
// other Host gives "": a Host header is the caller's to write, and a reset
// link built from a stranger's Host would carry the token to the stranger.
func LoopbackOrigin(ctx context.Context) string {
	rw, ok := ctx.Value(requestKey).(*responseWriter)
	if !ok || rw.r.Host == "" {
		return ""
	}
	host := rw.r.Host
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	ip, err := netip.ParseAddr(strings.Trim(name, "[]"))
	if !(strings.EqualFold(name, "localhost") || (err == nil && ip.IsLoopback())) {
		return ""
	}
	scheme := "http"
	if rw.r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + host
}

// WithLogger puts the base logger into ctx (used outside requests too).
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey, l)
}

// validRequestID accepts a caller's id only if it is short and plain, so it
// can go into logs and headers as is.
func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Request ids are a per-process random prefix and a counter: unique enough
// to find a request in the logs of a fleet, and cheap on the hot path.
var (
	idPrefix  = ids.RandomHex(4)
	idCounter atomic.Uint64
)

func newRequestID() string {
	var b [24]byte
	n := copy(b[:], idPrefix)
	b[n] = '-'
	return string(strconv.AppendUint(b[:n+1], idCounter.Add(1), 36))
}

// quiet reports the probes, which are logged only when they fail: a load
// balancer polls them every few seconds, and a line each would bury
// everything else.
func quiet(path string) bool { return path == "/livez" || path == "/readyz" }

// StatusClientClosed is what the request log says of a request whose client
// went away before it was answered (nginx's 499).
const StatusClientClosed = 499

// Observe is the outermost middleware: it assigns the request id, logs one
// line per request (id, method, route pattern, status, duration) and turns
// the router's own 404 and 405 answers into the JSON error body. The router
// must be wrapped in Router. Only the
// route pattern is logged, never the path or query, so tokens that travel in
// URLs never reach the log.
func Observe(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &responseWriter{ResponseWriter: w, log: log}
		// Direct map access: RequestIDHeader is canonical, and Get would
		// canonicalise it again on every request.
		if v := r.Header[RequestIDHeader]; len(v) > 0 {
			rw.id = v[0]
		}
		if !validRequestID(rw.id) {
			rw.id = newRequestID()
		}
		w.Header()[RequestIDHeader] = []string{rw.id}
		ctx := context.WithValue(r.Context(), requestKey, rw)
		r = r.WithContext(ctx)
		rw.r = r
		next.ServeHTTP(rw, r)
		rw.finish()
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		route := rw.r.Pattern
		elapsed := time.Since(start)
		if ow, ok := w.(*outcomeWriter); ok { // Instrument wraps this: tell it
			ow.told(route, status, elapsed, r.Context().Err() != nil)
		}
		if status < 400 && quiet(r.URL.Path) {
			return
		}
		if route == "" {
			route = "-"
		}
		level := slog.LevelInfo
		switch {
		case r.Context().Err() != nil && status >= 500:
			// The client went away and the work for it was cut short: not a
			// fault of ours. Logged as nginx does (499, client closed
			// request), so that error counts mean something.
			status = StatusClientClosed
		case status == http.StatusServiceUnavailable:
			level = slog.LevelWarn // not ready or draining: expected, not a fault
		case status >= 500:
			level = slog.LevelError
		}
		withTrace(ctx, log).LogAttrs(ctx, level, "request",
			slog.String("request_id", rw.id),
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Int64("bytes", rw.bytes),
			slog.Duration("duration", elapsed),
		)
	})
}

// Router wraps the router (the innermost handler). Middleware between
// Observe and here may replace the request (to add context values); the mux
// records the matched pattern on the request it is given, so Observe must
// look at that one: Router hands it over.
func Router(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rw, ok := r.Context().Value(requestKey).(*responseWriter); ok {
			rw.r = r
		}
		mux.ServeHTTP(w, r)
	})
}

// Routed names the route that a handler outside the router answers r with
// (the log's and the metrics' route label), so a 404 it writes is its own
// answer and not rewritten as the router's "no route".
func Routed(r *http.Request, pattern string) {
	r.Pattern = pattern
	if rw, ok := r.Context().Value(requestKey).(*responseWriter); ok {
		rw.r = r
	}
}

// responseWriter records status and size, rewrites the router's plain text
// 404/405 (recognisable by the empty route pattern) into JSON, and holds a
// response back until the handler returns, so that a whole response of up
// to heldMax bytes leaves with its Content-Length in one piece instead of
// chunked in several writes (a measurable share of a list request). A
// larger response, or one the handler flushes, streams as before.
type responseWriter struct {
	http.ResponseWriter
	r         *http.Request
	id        string
	log       *slog.Logger
	status    int // the handler's status, 0 until it chose one
	bytes     int64
	swallowed bool
	sent      bool    // the status went out
	held      *[]byte // body held back (from heldPool), nil if none
	client    string  // the client's address when a trusted proxy named it
}

// heldMax bounds what one response holds back.
const heldMax = 64 << 10

var heldPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code) // informational: goes out at once
		return
	}
	w.status = code
	if w.r.Pattern == "" && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		e := NewError(apperr.CodeNotFound, "no route for "+w.r.Method+" "+safePath(w.r.URL.Path))
		if code == http.StatusMethodNotAllowed {
			e = NewError(apperr.CodeMethodNotAllowed, "method "+w.r.Method+" is not allowed here (allowed: "+w.Header().Get("Allow")+")")
		}
		w.sent = true
		w.bytes = writeJSONError(w.ResponseWriter, e)
		w.swallowed = true
		return
	}
}

// safePath bounds what of a client's path is echoed back.
func safePath(p string) string {
	if len(p) > 200 {
		return p[:200] + "…"
	}
	return p
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallowed {
		return len(b), nil
	}
	if !w.sent {
		if w.held == nil {
			w.held = heldPool.Get().(*[]byte)
		}
		if len(*w.held)+len(b) <= heldMax {
			*w.held = append(*w.held, b...)
			w.bytes += int64(len(b))
			return len(b), nil
		}
		if err := w.send(); err != nil {
			return 0, err
		}
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// send passes the status and what was held back on.
func (w *responseWriter) send() error {
	if w.sent {
		return nil
	}
	w.sent = true
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.ResponseWriter.WriteHeader(w.status)
	if w.held == nil {
		return nil
	}
	held := w.held
	w.held = nil
	defer func() {
		*held = (*held)[:0]
		heldPool.Put(held)
	}()
	if len(*held) == 0 {
		return nil
	}
	_, err := w.ResponseWriter.Write(*held)
	return err
}

// finish ends the response once the handler returned: a response held back
// whole gets its length. A write error here means the client went away;
// there is no one to tell.
func (w *responseWriter) finish() {
	if w.sent || w.status == 0 {
		return // streamed, or nothing written (net/http answers 200)
	}
	h := w.Header()
	if w.held != nil && h.Get("Content-Length") == "" && h.Get("Transfer-Encoding") == "" {
		h.Set("Content-Length", strconv.Itoa(len(*w.held)))
	}
	_ = w.send() // a write error means the client went away (see above)
}

// discard forgets a response that has not gone out yet (Recover replaces
// it with an error); it reports whether it could.
func (w *responseWriter) discard() bool {
	if w.sent {
		return false
	}
	w.status = 0
	if w.held != nil {
		*w.held = (*w.held)[:0]
	}
	w.bytes = 0
	return true
}

// Unwrap lets http.ResponseController reach deadlines (and Flush and Hijack,
// which this type implements itself so that held bytes go first).
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.WriteHeader(http.StatusOK)
		}
		if w.swallowed {
			return
		}
		if err := w.send(); err != nil {
			return // the client went away; the handler's next write says so
		}
		f.Flush()
	}
}

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("httpx: response does not support hijacking")
	}
	if w.status != 0 {
		// The held status (a WebSocket's 101) goes out with the hijack.
		if err := w.send(); err != nil {
			return nil, nil, err
		}
	}
	w.status = http.StatusSwitchingProtocols
	w.sent = true
	return h.Hijack()
}

// Recover turns a panic into a logged 500 with the JSON body; the stack goes
// to the log only.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			Logger(r.Context()).Error("panic serving request",
				"method", r.Method, "route", r.Pattern, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if rw, ok := w.(*responseWriter); ok && !rw.discard() {
				// Too late for a clean error: the status is out. Abort so the
				// client sees a broken response rather than a truncated "success".
				panic(http.ErrAbortHandler)
			}
			writeJSONError(w, NewError(apperr.CodeInternal, internalMessage(r.Context())))
		}()
		next.ServeHTTP(w, r)
	})
}

// CORS allows browsers on the listed origins to call the API with
// credentials. Preflights from listed origins are answered here; other
// origins get no CORS headers (the browser then blocks the response).
func CORS(origins []string, next http.Handler) http.Handler {
	if len(origins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !slices.Contains(origins, origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-CSRF-Token, X-Workspace-Id, X-Request-Id, Authorization, If-Match")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "X-Request-Id, ETag")
		next.ServeHTTP(w, r)
	})
}
