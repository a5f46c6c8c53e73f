// Package mailtest is a mail system for tests: a real IMAP server
// (go-imap v2's in-memory server) holding one user's mailbox, and a real
// SMTP server (go-smtp) that delivers what it is sent into that mailbox's
// INBOX, as a mail host does. Tests send mail over SMTP and look at the
// mailbox over IMAP, like any mail client.
package mailtest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/smtp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	gosmtp "github.com/emersion/go-smtp"
)

// Server is a running mail system.
type Server struct {
	t        testing.TB
	User     string // the mailbox's user name and address
	Password string
	IMAPAddr string
	SMTPAddr string
	user     *imapmemserver.User
}

// Start runs a mail system for the user (an address) until the test ends.
// rev2 offers IMAP4rev2 (MOVE, UIDPLUS, IDLE); without it the server
// offers IMAP4rev1 and IDLE only, so clients must copy and expunge to move.
func Start(t testing.TB, user, password string, rev2 bool) *Server {
	t.Helper()
	s, stop, err := Run(user, password, rev2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	s.t = t
	return s
}

// Run runs a mail system until stop is called (the browser tests' mail
// server runs it as a program: cmd/mailtest).
func Run(user, password string, rev2 bool) (*Server, func(), error) {
	mem := imapmemserver.New()
	u := imapmemserver.NewUser(user, password)
	if err := u.Create("INBOX", nil); err != nil {
		return nil, nil, err
	}
	mem.AddUser(u)
	caps := imap.CapSet{imap.CapIMAP4rev1: {}}
	if rev2 {
		caps[imap.CapIMAP4rev2] = struct{}{}
	}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         caps,
		InsecureAuth: true,
		Logger:       log.New(io.Discard, "", 0),
	})
	iln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	go func() { _ = srv.Serve(iln) }()

	s := &Server{User: user, Password: password, IMAPAddr: iln.Addr().String(), user: u}
	sm := gosmtp.NewServer(backend{s})
	sm.Domain = "mail.test"
	sm.ErrorLog = log.New(io.Discard, "", 0)
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return nil, nil, err
	}
	s.SMTPAddr = sln.Addr().String()
	go func() { _ = sm.Serve(sln) }()
	return s, func() { _ = sm.Close(); _ = srv.Close() }, nil
}

// backend delivers every message it accepts into the user's INBOX (once,
// whatever its recipients: they are all the one mailbox's addresses).
type backend struct{ s *Server }

func (b backend) NewSession(*gosmtp.Conn) (gosmtp.Session, error) { return &session{s: b.s}, nil }

type session struct{ s *Server }

func (*session) Mail(string, *gosmtp.MailOptions) error { return nil }
func (*session) Rcpt(string, *gosmtp.RcptOptions) error { return nil }
func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, err = s.s.user.Append("INBOX", bytes.NewReader(data), &imap.AppendOptions{Time: time.Now()})
	return err
}
func (*session) Reset()        {}
func (*session) Logout() error { return nil }

// Send sends a message over SMTP (the raw RFC 5322 text, CRLF line ends).
func (s *Server) Send(from string, to []string, raw string) {
	s.t.Helper()
	if err := s.SendErr(from, to, raw); err != nil {
		s.t.Fatalf("mailtest: send: %v", err)
	}
}

// SendErr is Send for another goroutine than the test's: it answers the
// error.
func (s *Server) SendErr(from string, to []string, raw string) error {
	return smtp.SendMail(s.SMTPAddr, nil, from, to, []byte(raw))
}

// Message is a message as a mail client lists it.
type Message struct {
	UID       uint32
	Subject   string
	MessageID string
	Flags     []string
}

// Seen reports the \Seen flag.
func (m Message) Seen() bool { return slices.Contains(m.Flags, string(imap.FlagSeen)) }

// Flagged reports the \Flagged flag.
func (m Message) Flagged() bool { return slices.Contains(m.Flags, string(imap.FlagFlagged)) }

// Folder lists a folder's messages over IMAP, oldest first; nil when the
// folder does not exist.
func (s *Server) Folder(name string) []Message {
	s.t.Helper()
	c, err := imapclient.DialInsecure(s.IMAPAddr, nil)
	if err != nil {
		s.t.Fatalf("mailtest: dial: %v", err)
	}
	defer c.Close()
	if err := c.Login(s.User, s.Password).Wait(); err != nil {
		s.t.Fatalf("mailtest: login: %v", err)
	}
	if _, err := c.Select(name, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		return nil
	}
	sd, err := c.UIDSearch(&imap.SearchCriteria{}, nil).Wait()
	if err != nil {
		s.t.Fatalf("mailtest: search: %v", err)
	}
	uids := sd.AllUIDs()
	out := []Message{}
	if len(uids) == 0 {
		return out
	}
	bufs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, Flags: true, Envelope: true}).Collect()
	if err != nil {
		s.t.Fatalf("mailtest: fetch: %v", err)
	}
	for _, b := range bufs {
		m := Message{UID: uint32(b.UID)}
		if b.Envelope != nil {
			m.Subject, m.MessageID = b.Envelope.Subject, b.Envelope.MessageID
		}
		for _, f := range b.Flags {
			m.Flags = append(m.Flags, string(f))
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Message) int { return int(a.UID) - int(b.UID) })
	_ = c.Logout().Wait()
	return out
}

// Mail is a plain message's raw text.
func Mail(from, to, subject, messageID, body string) string {
	return fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: <%s>\r\nDate: %s\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n", from, to, subject, messageID, time.Now().Format(time.RFC1123Z), body)
}

// MailWithAttachment is a multipart message with one attachment.
func MailWithAttachment(from, to, subject, messageID, body, filename string, content []byte) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: <%s>\r\nDate: %s\r\nMIME-Version: 1.0\r\n", from, to, subject, messageID,
		time.Now().Format(time.RFC1123Z))
	b.WriteString("Content-Type: multipart/mixed; boundary=\"b0undary\"\r\n\r\n")
	b.WriteString("--b0undary\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n")
	fmt.Fprintf(&b, "--b0undary\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"%s\"\r\n"+
		"Content-Transfer-Encoding: base64\r\n\r\n%s\r\n--b0undary--\r\n", filename, base64Lines(content))
	return b.String()
}

func base64Lines(b []byte) string {
	s := base64.StdEncoding.EncodeToString(b)
	var out strings.Builder
	for len(s) > 76 {
		out.WriteString(s[:76] + "\r\n")
		s = s[76:]
	}
	out.WriteString(s)
	return out.String()
}
