package resources_test

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// smtpBackend is a go-smtp server that accepts one user's AUTH PLAIN and
// keeps what it is sent in inbox (when set).
type smtpBackend struct {
	user, pass string
	signedIn   *atomic.Int32
	inbox      *inbox
}

// inbox is what an SMTP server received: one entry per message and recipient.
type inbox struct {
	mu   sync.Mutex
	mail []received
}

type received struct{ From, To, Data string }

func (b smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) { return &smtpSession{b: b}, nil }

type smtpSession struct {
	b     smtpBackend
	from  string
	rcpts []string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.b.user || pass != s.b.pass {
			return smtp.ErrAuthFailed
		}
		s.b.signedIn.Add(1)
		return nil
	}), nil
}
func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error { s.from = from; return nil }
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.rcpts = append(s.rcpts, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil || s.b.inbox == nil {
		return err
	}
	s.b.inbox.mu.Lock()
	defer s.b.inbox.mu.Unlock()
	for _, to := range s.rcpts {
		s.b.inbox.mail = append(s.b.inbox.mail, received{From: s.from, To: to, Data: string(data)})
	}
	return nil
}
func (s *smtpSession) Reset()        { s.from, s.rcpts = "", nil }
func (s *smtpSession) Logout() error { return nil }

// smtpServer serves SMTP on loopback; with tlsConfig it offers STARTTLS,
// and with implicit also wraps the listener in TLS.
func smtpServer(t *testing.T, user, pass string, tlsConfig *tls.Config, implicit bool) (string, *atomic.Int32) {
	addr, signedIn, _ := smtpInbox(t, user, pass, tlsConfig, implicit)
	return addr, signedIn
}

// smtpInbox is smtpServer keeping what it receives.
func smtpInbox(t *testing.T, user, pass string, tlsConfig *tls.Config, implicit bool) (string, *atomic.Int32, *inbox) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if implicit {
		ln = tls.NewListener(ln, tlsConfig)
	}
	var signedIn atomic.Int32
	box := &inbox{}
	srv := smtp.NewServer(smtpBackend{user: user, pass: pass, signedIn: &signedIn, inbox: box})
	srv.Domain = "mail.test"
	srv.AllowInsecureAuth = true
	srv.TLSConfig = tlsConfig
	srv.ErrorLog = log.New(io.Discard, "", 0)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return addr, &signedIn, box
}

// TestSMTP: EHLO, STARTTLS or TLS, AUTH and QUIT against go-smtp.
func TestSMTP(t *testing.T) {
	p := newProbe(t, true)
	pass := p.secret("smtp-" + randomHex(10))
	addr, signedIn := smtpServer(t, "ann@example.com", pass, nil, false)
	host, port := hostPort(t, addr)
	cfg := func(extra obj) obj {
		c := obj{"host": host, "port": port, "security": "none", "from": "ann@example.com"}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	p.test(p.add("smtp", cfg(obj{"username": "ann@example.com"}), pass), true, "signed in to the SMTP server at "+addr, "as ann@example.com")
	if signedIn.Load() != 1 {
		t.Fatalf("%d sign-ins reached the server, want 1", signedIn.Load())
	}
	p.test(p.add("smtp", cfg(obj{"username": "ann@example.com"}), p.secret("smtp-wrong-"+randomHex(6))), false, "refused the sign-in", "535")
	p.test(p.add("smtp", cfg(nil), ""), true, "no sign-in")
	// A username without a password cannot work.
	p.bad("POST", "/api/resources/"+p.add("smtp", cfg(obj{"username": "ann@example.com"}), "")+"/test", "no password")
	// STARTTLS against a server that offers none; TLS against a plain one.
	p.test(p.add("smtp", cfg(obj{"security": "starttls", "username": "ann@example.com"}), pass), false, "does not offer STARTTLS")
	p.test(p.add("smtp", cfg(obj{"security": "tls"}), ""), false, "TLS handshake")

	// A server whose certificate nobody vouches for, with STARTTLS and with
	// implicit TLS: the password is never sent.
	tlsAddr, tlsSignedIn := smtpServer(t, "ann@example.com", pass, selfSigned(t), false)
	tlsHost, tlsPort := hostPort(t, tlsAddr)
	p.test(p.add("smtp", obj{"host": tlsHost, "port": tlsPort, "security": "starttls", "username": "ann@example.com", "from": "a@b.example"}, pass),
		false, "STARTTLS", "certificate")
	implicitAddr, implicitSignedIn := smtpServer(t, "ann@example.com", pass, selfSigned(t), true)
	iHost, iPort := hostPort(t, implicitAddr)
	p.test(p.add("smtp", obj{"host": iHost, "port": iPort, "security": "tls", "username": "ann@example.com", "from": "a@b.example"}, pass),
		false, "certificate")
	if tlsSignedIn.Load()+implicitSignedIn.Load() != 0 {
		t.Fatal("a password went to a server with an untrusted certificate")
	}

	_, closed := hostPort(t, closedPort(t))
	p.test(p.add("smtp", cfg(obj{"port": closed}), ""), false, "could not reach", "connection refused")
	// A socket path is no host.
	p.bad("POST", "/api/resources/"+p.add("smtp", cfg(obj{"host": "/var/run/mail.sock"}), "")+"/test", "host name or address")
}

// imapServer serves go-imap's in-memory server on loopback: one user with
// an INBOX of two messages. LOGIN is allowed without TLS; with tlsConfig
// STARTTLS is offered.
func imapServer(t *testing.T, user, pass string, tlsConfig *tls.Config) (string, *atomic.Int32) {
	t.Helper()
	mem := imapmemserver.New()
	u := imapmemserver.NewUser(user, pass)
	if err := u.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"Subject: one\r\n\r\nfirst\r\n", "Subject: two\r\n\r\nsecond\r\n"} {
		if _, err := u.Append("INBOX", strings.NewReader(m), &imap.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mem.AddUser(u)
	var sessions atomic.Int32
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			sessions.Add(1)
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}},
		InsecureAuth: true,
		TLSConfig:    tlsConfig,
		Logger:       log.New(io.Discard, "", 0),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), &sessions
}

// TestIMAP: greeting, LOGIN (quoted or as literals), STATUS and LOGOUT
// against go-imap's server.
func TestIMAP(t *testing.T) {
	p := newProbe(t, true)
	// Quotes, a backslash and a non-ASCII letter: the password travels as
	// a literal.
	pass := p.secret(`imap"pa\ss-ü-` + randomHex(6))
	addr, _ := imapServer(t, "ann", pass, nil)
	host, port := hostPort(t, addr)
	cfg := obj{"host": host, "port": port, "security": "none", "username": "ann"}
	p.test(p.add("imap", cfg, pass), true, "signed in to the IMAP server at "+addr, "as ann", "INBOX holds 2 messages")
	plain := p.secret("plain-imap-" + randomHex(6))
	addr2, _ := imapServer(t, `a "quoted" user`, plain, nil)
	host2, port2 := hostPort(t, addr2)
	p.test(p.add("imap", obj{"host": host2, "port": port2, "security": "none", "username": `a "quoted" user`}, plain), true, "INBOX holds 2 messages")

	p.test(p.add("imap", cfg, p.secret("imap-wrong-"+randomHex(6))), false, "refused the sign-in as ann")
	missing := obj{"host": host, "port": port, "security": "none", "username": "ann", "mailbox": "Archive & more"}
	p.test(p.add("imap", missing, pass), false, "signed in", "Archive & more")
	p.bad("POST", "/api/resources/"+p.add("imap", cfg, "")+"/test", "password")

	// STARTTLS against a certificate nobody vouches for; implicit TLS
	// against a plain server.
	tlsAddr, _ := imapServer(t, "ann", pass, selfSigned(t))
	tlsHost, tlsPort := hostPort(t, tlsAddr)
	p.test(p.add("imap", obj{"host": tlsHost, "port": tlsPort, "security": "starttls", "username": "ann"}, pass), false, "STARTTLS", "certificate")
	p.test(p.add("imap", obj{"host": host, "port": port, "username": "ann"}, pass), false, "TLS handshake")
	// STARTTLS where none is offered.
	p.test(p.add("imap", obj{"host": host, "port": port, "security": "starttls", "username": "ann"}, pass), false, "STARTTLS")

	// Not an IMAP server: an SMTP one.
	smtpAddr, _ := smtpServer(t, "x", "y", nil, false)
	sHost, sPort := hostPort(t, smtpAddr)
	p.test(p.add("imap", obj{"host": sHost, "port": sPort, "security": "none", "username": "ann"}, pass), false, "did not greet like an IMAP server")
	_, closed := hostPort(t, closedPort(t))
	p.test(p.add("imap", obj{"host": host, "port": closed, "security": "none", "username": "ann"}, pass), false, "could not reach")
}
