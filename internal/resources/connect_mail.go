package resources

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/smtp"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// mailTLS is the TLS of SMTP and IMAP: the host's certificate, checked.
func mailTLS(host string) *tls.Config {
	return &tls.Config{ServerName: strings.Trim(host, "[]"), MinVersion: tls.VersionTLS12}
}

// mailConn dials host:port and, for security tls, completes the TLS
// handshake. Closing the context ends whatever is blocked on it.
func (t *target) mailConn(ctx context.Context, host string, port int, security string) (net.Conn, func(), error) {
	raw, err := t.dial(ctx, "tcp", net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port)))
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Now()) })
	done := func() { stop(); raw.Close() }
	if security != "tls" {
		return raw, done, nil
	}
	tc := tls.Client(raw, mailTLS(host))
	if err := tc.HandshakeContext(ctx); err != nil {
		done()
		return nil, nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, done, nil
}

// smtpSession is an SMTP session opened as the resource says: connected
// (implicit TLS, STARTTLS or plain), greeted, signed in when a username is
// set. A failure is a sessionError naming the step; close ends the session.
type smtpSession struct {
	cl    *smtp.Client
	addr  string
	how   string // TLS, STARTTLS or unencrypted
	close func()
}

// sessionError is a failed step of a session: unreachable (the far end
// could not be reached: err) or refused (msg says by what).
type sessionError struct {
	unreachable bool
	err         error
	msg         string
}

func (e *sessionError) Error() string {
	if e.unreachable {
		return describe(e.err)
	}
	return e.msg
}

func (t *target) smtpOpen(ctx context.Context, c SMTPConfig) (*smtpSession, error) {
	if err := t.checkHost(c.Host); err != nil {
		return nil, err
	}
	if c.Username != "" && t.secret == "" {
		return nil, t.bad("config.username is set but no password is stored: set the resource's secret (or clear the username to send without signing in)")
	}
	security := c.Security
	if security == "" {
		security = "starttls"
	}
	port := c.Port
	if port == 0 {
		port = map[string]int{"starttls": 587, "tls": 465, "none": 25}[security]
	}
	addr := net.JoinHostPort(strings.Trim(c.Host, "[]"), strconv.Itoa(port))
	conn, done, err := t.mailConn(ctx, c.Host, port, security)
	if err != nil {
		return nil, &sessionError{unreachable: true, err: err, msg: addr}
	}
	refused := func(format string, args ...any) (*smtpSession, error) {
		done()
		return nil, &sessionError{msg: fmt.Sprintf(format, args...)}
	}
	cl, err := smtp.NewClient(conn, strings.Trim(c.Host, "[]"))
	if err != nil {
		return refused("no SMTP greeting from %s: %s", addr, describe(err))
	}
	if err := cl.Hello("localhost"); err != nil {
		return refused("%s refused EHLO: %s", addr, describe(err))
	}
	if security == "starttls" {
		if ok, _ := cl.Extension("STARTTLS"); !ok {
			return refused("%s does not offer STARTTLS (set security to tls or none)", addr)
		}
		if err := cl.StartTLS(mailTLS(c.Host)); err != nil {
			return refused("STARTTLS with %s failed: %s", addr, describe(err))
		}
	}
	sess := &smtpSession{cl: cl, addr: addr, how: map[string]string{"starttls": "STARTTLS", "tls": "TLS", "none": "unencrypted"}[security],
		close: func() { cl.Close(); done() }}
	if c.Username == "" {
		return sess, nil
	}
	ok, mechs := cl.Extension("AUTH")
	offered := strings.Fields(strings.ToUpper(mechs))
	var a smtp.Auth
	switch {
	case ok && slices.Contains(offered, "PLAIN"):
		a = plainAuth{c.Username, t.secret}
	case ok && slices.Contains(offered, "LOGIN"):
		a = &loginAuth{user: c.Username, pass: t.secret}
	default:
		sess.close()
		return nil, &sessionError{msg: fmt.Sprintf("%s offers no sign-in this client speaks (AUTH PLAIN or LOGIN; offered: %q)", addr, mechs)}
	}
	if err := cl.Auth(a); err != nil {
		sess.close()
		return nil, &sessionError{msg: fmt.Sprintf("the SMTP server at %s refused the sign-in as %s: %s", addr, c.Username, describe(err))}
	}
	return sess, nil
}

// testSMTP opens a session (connects, says EHLO, signs in when a username
// is set) and quits. No mail is sent.
func (t *target) testSMTP(ctx context.Context) (*ResourceTest, error) {
	c, err := configOf[SMTPConfig](t.res)
	if err != nil {
		return nil, err
	}
	sess, err := t.smtpOpen(ctx, c)
	var se *sessionError
	switch {
	case errors.As(err, &se) && se.unreachable:
		return t.unreachable(se.msg, se.err)
	case errors.As(err, &se):
		return t.failed("%s", se.msg)
	case err != nil:
		return nil, err
	}
	defer sess.close()
	_ = sess.cl.Quit()
	if c.Username == "" {
		return t.ok("reached the SMTP server at %s (%s); no sign-in: no username is set", sess.addr, sess.how)
	}
	return t.ok("signed in to the SMTP server at %s (%s) as %s", sess.addr, sess.how, c.Username)
}

// plainAuth is AUTH PLAIN (RFC 4616). Unlike net/smtp's, it signs in over
// an unencrypted connection when the resource says security none.
type plainAuth struct{ user, pass string }

func (a plainAuth) Start(*smtp.ServerInfo) (string, []byte, error) {
	return "PLAIN", []byte("\x00" + a.user + "\x00" + a.pass), nil
}

func (a plainAuth) Next(_ []byte, more bool) ([]byte, error) {
	if more {
		return nil, errors.New("unexpected challenge after AUTH PLAIN")
	}
	return nil, nil
}

// loginAuth is AUTH LOGIN, for servers that offer no PLAIN.
type loginAuth struct {
	user, pass string
	step       int
}

func (a *loginAuth) Start(*smtp.ServerInfo) (string, []byte, error) { return "LOGIN", nil, nil }

func (a *loginAuth) Next(challenge []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	a.step++
	switch {
	case a.step == 1 || strings.HasPrefix(strings.ToLower(string(challenge)), "user"):
		return []byte(a.user), nil
	case a.step == 2:
		return []byte(a.pass), nil
	}
	return nil, errors.New("unexpected challenge after AUTH LOGIN")
}

// testIMAP connects (implicit TLS, STARTTLS or plain), reads the greeting,
// signs in with LOGIN, asks for the mailbox's message count and logs out.
func (t *target) testIMAP(ctx context.Context) (*ResourceTest, error) {
	c, err := configOf[IMAPConfig](t.res)
	if err != nil {
		return nil, err
	}
	if err := t.checkHost(c.Host); err != nil {
		return nil, err
	}
	if err := t.needSecret(); err != nil {
		return nil, err
	}
	if strings.ContainsAny(c.Username+t.secret, "\x00") {
		return nil, t.bad("the username and password must not contain NUL characters")
	}
	security := c.Security
	if security == "" {
		security = "tls"
	}
	port := c.Port
	if port == 0 {
		port = 143
		if security == "tls" {
			port = 993
		}
	}
	mailbox := c.Mailbox
	if mailbox == "" {
		mailbox = "INBOX"
	}
	addr := net.JoinHostPort(strings.Trim(c.Host, "[]"), strconv.Itoa(port))
	conn, done, err := t.mailConn(ctx, c.Host, port, security)
	if err != nil {
		return t.unreachable(addr, err)
	}
	defer done()
	ic := &imapConn{conn: conn, r: bufio.NewReader(conn)}
	greeting, err := ic.line()
	if err != nil {
		return t.failed("no IMAP greeting from %s: %s", addr, describe(err))
	}
	how := map[string]string{"starttls": "STARTTLS", "tls": "TLS", "none": "unencrypted"}[security]
	switch g := strings.ToUpper(greeting); {
	case strings.HasPrefix(g, "* OK"):
	case strings.HasPrefix(g, "* PREAUTH") && security != "starttls":
		return t.ok("the IMAP server at %s (%s) let the connection in without a sign-in (PREAUTH): the password was not checked", addr, how)
	case strings.HasPrefix(g, "* BYE"):
		return t.failed("the IMAP server at %s turned the connection away: %s", addr, greeting[min(len(greeting), 5):])
	default:
		return t.failed("%s did not greet like an IMAP server", addr)
	}
	if security == "starttls" {
		r, err := ic.run("STARTTLS")
		if err != nil {
			return t.failed("STARTTLS with %s failed: %s", addr, describe(err))
		}
		if r.status != "OK" {
			return t.failed("%s refused STARTTLS: %s", addr, r.text)
		}
		if ic.r.Buffered() > 0 {
			return t.failed("%s sent data before the TLS handshake", addr)
		}
		tc := tls.Client(conn, mailTLS(c.Host))
		if err := tc.HandshakeContext(ctx); err != nil {
			return t.failed("STARTTLS with %s failed: TLS handshake: %s", addr, describe(err))
		}
		ic.conn, ic.r = tc, bufio.NewReader(tc)
	}
	r, err := ic.run("LOGIN", c.Username, t.secret)
	if err != nil {
		return t.failed("signing in to %s failed: %s", addr, describe(err))
	}
	if r.status != "OK" {
		return t.failed("the IMAP server at %s refused the sign-in as %s: %s", addr, c.Username, r.text)
	}
	msg := fmt.Sprintf("signed in to the IMAP server at %s (%s) as %s", addr, how, c.Username)
	if name, ok := imapMailboxName(mailbox); ok {
		r, err := ic.run("STATUS", name, imapAtom("(MESSAGES)"))
		switch {
		case err != nil:
			return t.failed("%s, but asking for the mailbox %s failed: %s", msg, mailbox, describe(err))
		case r.status != "OK":
			return t.failed("%s, but the mailbox %s: %s", msg, mailbox, r.text)
		}
		if n := imapMessages(r.untagged); n != "" {
			msg += fmt.Sprintf("; %s holds %s messages", mailbox, n)
		}
	}
	_, _ = ic.run("LOGOUT")
	return t.ok("%s", msg)
}

// imapMailboxName is a mailbox name in IMAP's modified UTF-7, for the
// ASCII names it covers without encoding ("&" becomes "&-"); ok is false
// for others, whose check is skipped.
func imapMailboxName(name string) (string, bool) {
	for _, r := range name {
		if r < 0x20 || r > 0x7e {
			return "", false
		}
	}
	return strings.ReplaceAll(name, "&", "&-"), true
}

var statusMessages = regexp.MustCompile(`(?i)\bMESSAGES\s+(\d+)`)

func imapMessages(untagged []string) string {
	for _, l := range untagged {
		if strings.HasPrefix(strings.ToUpper(l), "* STATUS ") {
			if m := statusMessages.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// imapConn is the little of an IMAP client the test needs: tagged
// commands with quoted or literal arguments, their untagged responses and
// completion. Lines and literals are bounded; the connection's deadline
// bounds the time.
type imapConn struct {
	conn net.Conn
	r    *bufio.Reader
	tag  int
}

const (
	maxIMAPLine     = 16 << 10
	maxIMAPLiteral  = 64 << 10
	maxIMAPUntagged = 1000
)

type imapReply struct {
	status   string // OK, NO or BAD
	text     string
	untagged []string
}

var literalAtEnd = regexp.MustCompile(`\{(\d+)\+?\}$`)

// line reads one response line, literals included (their bytes inline).
func (c *imapConn) line() (string, error) {
	var b strings.Builder
	for {
		part, err := c.rawLine()
		if err != nil {
			return "", err
		}
		b.WriteString(part)
		m := literalAtEnd.FindStringSubmatch(part)
		if m == nil {
			return b.String(), nil
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n > maxIMAPLiteral {
			return "", fmt.Errorf("the server sent a literal of more than %d bytes", maxIMAPLiteral)
		}
		lit := make([]byte, n)
		if _, err := io.ReadFull(c.r, lit); err != nil {
			return "", err
		}
		b.Write(lit)
		if b.Len() > maxIMAPLine+maxIMAPLiteral {
			return "", errors.New("the server sent an over-long response")
		}
	}
}

func (c *imapConn) rawLine() (string, error) {
	var b []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > maxIMAPLine {
			return "", fmt.Errorf("the server sent a line of more than %d bytes", maxIMAPLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
}

// imapAtom is an argument sent as it is, not as a string.
type imapAtom string

// run sends a command and reads up to its completion. Each argument is a
// string (sent quoted, or as a literal when it cannot be) or an imapAtom.
func (c *imapConn) run(verb string, args ...any) (*imapReply, error) {
	c.tag++
	tag := "s" + strconv.Itoa(c.tag)
	reply := &imapReply{}
	cmd := tag + " " + verb
	for _, arg := range args {
		a, ok := arg.(string)
		if !ok {
			cmd += " " + string(arg.(imapAtom))
			continue
		}
		if quotable(a) {
			cmd += ` "` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
			continue
		}
		// A literal: announce it, wait for the go-ahead, then send it.
		if _, err := c.conn.Write([]byte(cmd + " {" + strconv.Itoa(len(a)) + "}\r\n")); err != nil {
			return nil, err
		}
		for {
			l, err := c.line()
			if err != nil {
				return nil, err
			}
			if strings.HasPrefix(l, "+") {
				break
			}
			if done, err := c.tagged(reply, tag, l); done || err != nil {
				return reply, err
			}
		}
		cmd = a
	}
	if _, err := c.conn.Write([]byte(cmd + "\r\n")); err != nil {
		return nil, err
	}
	for {
		l, err := c.line()
		if err != nil {
			return nil, err
		}
		if done, err := c.tagged(reply, tag, l); done || err != nil {
			return reply, err
		}
	}
}

// tagged files a response line: true when it completes the command.
func (c *imapConn) tagged(reply *imapReply, tag, l string) (bool, error) {
	if rest, ok := strings.CutPrefix(l, tag+" "); ok {
		status, text, _ := strings.Cut(rest, " ")
		reply.status, reply.text = strings.ToUpper(status), text
		return true, nil
	}
	if strings.HasPrefix(l, "* ") {
		if len(reply.untagged) >= maxIMAPUntagged {
			return false, errors.New("the server sent too many responses")
		}
		reply.untagged = append(reply.untagged, l)
		return false, nil
	}
	if strings.HasPrefix(l, "+") {
		return false, errors.New("the server asked for more than the command holds")
	}
	return false, errors.New("the server sent a response this client does not understand")
}

// quotable: a string IMAP can carry quoted (7-bit, no CR, LF or NUL).
func quotable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
