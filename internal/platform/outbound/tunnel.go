package outbound

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"slipway/internal/platform/ids"
)

// Tunnel is an HTTP CONNECT proxy on the loopback interface that opens
// every tunnel with the Client's DialContext: a program that cannot dial
// through the Client itself (git fetching a repository a user named) is
// pointed at it, and then each connection it makes — redirects included —
// is checked on the IP actually connected to, as the Client's own are. It
// takes only CONNECT (https and other TLS), and only with its own random
// credentials, so no other local process borrows it.
type Tunnel struct {
	client *Client
	once   sync.Once
	url    string
	err    error
	ln     net.Listener
	user   string
	pass   string
	closed chan struct{}
}

// maxTunnels bounds the tunnels open at once.
const maxTunnels = 64

// NewTunnel returns a tunnel for c; it listens on first use.
func NewTunnel(c *Client) *Tunnel {
	return &Tunnel{client: c, user: "slipway", pass: ids.RandomHex(16), closed: make(chan struct{})}
}

// URL is the proxy's URL with its credentials (http://user:pass@127.0.0.1:port),
// for git's http.proxy; the listener starts on the first call.
func (t *Tunnel) URL() (string, error) {
	t.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.err = err
			return
		}
		t.ln = ln
		t.url = "http://" + t.user + ":" + t.pass + "@" + ln.Addr().String()
		go t.serve()
	})
	return t.url, t.err
}

// Close stops the listener; open tunnels end with their connections.
func (t *Tunnel) Close() error {
	t.once.Do(func() { t.err = errors.New("outbound: tunnel closed") })
	select {
	case <-t.closed:
	default:
		close(t.closed)
	}
	if t.ln != nil {
		return t.ln.Close()
	}
	return nil
}

func (t *Tunnel) serve() {
	slots := make(chan struct{}, maxTunnels)
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.closed:
				return
			default:
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case slots <- struct{}{}:
			go func() {
				defer func() { <-slots }()
				t.handle(conn)
			}()
		default:
			_, _ = io.WriteString(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
			conn.Close()
		}
	}
}

// authorized checks the request's Proxy-Authorization in constant time.
func (t *Tunnel) authorized(r *http.Request) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Proxy-Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return false
	}
	want := t.user + ":" + t.pass
	return subtle.ConstantTimeCompare(raw, []byte(want)) == 1
}

func (t *Tunnel) handle(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(io.LimitReader(conn, 16<<10))
	reply := func(status string) { _, _ = io.WriteString(conn, "HTTP/1.1 "+status+"\r\nContent-Length: 0\r\n\r\n") }
	var r *http.Request
	for tries := 0; ; tries++ { // a client may ask again on the same connection after a 407
		var err error
		if r, err = http.ReadRequest(br); err != nil {
			return
		}
		if t.authorized(r) {
			if r.Method != http.MethodConnect {
				reply("405 Method Not Allowed")
				return
			}
			break
		}
		if tries > 0 {
			reply("407 Proxy Authentication Required")
			return
		}
		reply("407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"slipway\"")
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.client.policy.Timeout)
	up, err := t.client.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		reply("403 Forbidden")
		return
	}
	defer up.Close()
	if br.Buffered() > 0 { // the client spoke before the tunnel was up
		reply("400 Bad Request")
		return
	}
	_ = conn.SetDeadline(time.Time{})
	reply("200 Connection Established")
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, conn)
	go pipe(conn, up)
	<-done
	<-done
}
