package server

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// agentNetworks is implemented by backends whose agents have a network of
// their own (docker): the hub refuses connections from it.
type agentNetworks interface {
	Subnets(ctx context.Context) ([]netip.Prefix, error)
}

// guardedListener closes, at once, every connection that comes from an
// agent network: agents talk to their hub through stdio only (DESIGN §5),
// and an agent that could reach the API could act with whatever it finds.
// Agents keep their way out (model providers, package registries); they
// only lose the way in. A connection to any of the host's addresses from a
// container arrives with the container's own address as its source, so the
// check covers the bridge's gateway and the host's other addresses alike.
type guardedListener struct {
	net.Listener
	blocked atomic.Pointer[[]netip.Prefix]
	log     *slog.Logger
}

func (l *guardedListener) refused(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip := tcp.AddrPort().Addr().Unmap()
	for _, p := range *l.blocked.Load() {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Accept implements net.Listener.
func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.refused(c.RemoteAddr()) {
			return c, nil
		}
		l.log.Warn("refused a connection from an agent network: agents have no way to their hub", "from", c.RemoteAddr().String())
		_ = c.Close() // nothing was read or written; the refusal is the point
	}
}

// guardAgentNetworks wraps ln when agents run on a network of their own,
// and keeps the refused ranges current (the network may be recreated)
// until ctx ends.
func guardAgentNetworks(ctx context.Context, ln net.Listener, b any, log *slog.Logger) net.Listener {
	nets, ok := b.(agentNetworks)
	if !ok {
		return ln
	}
	g := &guardedListener{Listener: ln, log: log}
	none := []netip.Prefix{}
	g.blocked.Store(&none)
	refresh := func() {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ps, err := nets.Subnets(rctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("reading the agent network's address ranges failed; connections from it are refused once it answers", "err", err)
			}
			return
		}
		g.blocked.Store(&ps)
	}
	refresh()
	if ps := *g.blocked.Load(); len(ps) > 0 {
		log.Info("connections from the agent network are refused", "ranges", ps)
	}
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				refresh()
			}
		}
	}()
	return g
}
