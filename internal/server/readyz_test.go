package server

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// stallProxy forwards TCP to a real server and can stall: while stalled it
// accepts connections and keeps them open but forwards nothing, like a
// database host that stopped answering (not one that refuses connections).
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled atomic.Bool
	mu      sync.Mutex
	resumed *sync.Cond
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target}
	p.resumed = sync.NewCond(&p.mu)
	t.Cleanup(func() { p.setStalled(false); ln.Close() })
	go p.accept()
	return p
}

func (p *stallProxy) setStalled(v bool) {
	p.mu.Lock()
	p.stalled.Store(v)
	p.mu.Unlock()
	if !v {
		p.resumed.Broadcast()
	}
}

func (p *stallProxy) waitWhileStalled() {
	p.mu.Lock()
	for p.stalled.Load() {
		p.resumed.Wait()
	}
	p.mu.Unlock()
}

func (p *stallProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			p.waitWhileStalled()
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			go p.pipe(up, c)
			p.pipe(c, up)
		}()
	}
}

func (p *stallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.waitWhileStalled()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or a closed connection ends the pipe
			return
		}
	}
}

// TestReadyzFollowsPostgres: /readyz turns 503 within about two seconds when
// the PostgreSQL it uses stops answering, and back to 200 when it answers.
func TestReadyzFollowsPostgres(t *testing.T) {
	target := dbtest.EmptyTarget(t, db.Postgres)
	u, err := url.Parse(target.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newStallProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	target.URL = u.String()

	ts := startServer(t, target, nil, nil)
	if status, _, b := ts.do(t, "GET", "/readyz", ""); status != 200 {
		t.Fatalf("readyz before the outage = %d %s", status, b)
	}

	proxy.setStalled(true)
	start := time.Now()
	status, _, b := ts.do(t, "GET", "/readyz", "") // client timeout: 10 s
	took := time.Since(start)
	if status != 503 {
		t.Fatalf("readyz with PostgreSQL stalled = %d %s", status, b)
	}
	if _, msg := errorBody(t, b); msg != "not ready: the database does not answer" {
		t.Fatalf("message = %q", msg)
	}
	t.Logf("readyz answered 503 after %v with the database stalled", took.Round(time.Millisecond))
	if took < ReadyTimeout/2 {
		t.Fatalf("503 after %v: the ping should have waited for the database, not failed at once", took)
	}

	proxy.setStalled(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, _ := ts.do(t, "GET", "/readyz", "")
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz did not return to 200 after the database answered again (last %d)", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
