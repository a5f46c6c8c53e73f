package resources

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"slipway/internal/mailbox"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/redact"
)

// An imap resource as a mailbox that email triggers read: a session
// through the SSRF guard (like every connection to a resource), each call
// bounded in time, the wire bounded in bytes per session.

const (
	mailboxCallTimeout = time.Minute
	mailboxSessionWire = 256 << 20
	defaultUnrouted    = "Unrouted"
)

// MailboxInfo reads an imap resource of the workspace: its address and
// folders, without connecting. Another workspace's resource, or one of
// another kind, is a 400 naming the field.
func (s *Service) MailboxInfo(ctx context.Context, workspaceID, resourceID string) (*mailbox.Info, error) {
	r, err := s.Get(ctx, &actor.Workspace{ID: workspaceID}, resourceID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return nil, apperr.BadRequest("config.resource_id: no imap resource %s in this workspace", resourceID)
	}
	if err != nil {
		return nil, err
	}
	if r.Kind != "imap" {
		return nil, apperr.BadRequest("config.resource_id: resource %q is a %s resource, not imap", r.Name, r.Kind)
	}
	c, err := configOf[IMAPConfig](r)
	if err != nil {
		return nil, err
	}
	info := &mailbox.Info{ResourceID: r.ID, Name: r.Name, Address: c.Address, Inbox: c.Mailbox, Unrouted: c.UnroutedMailbox}
	if info.Address == "" && strings.Contains(c.Username, "@") {
		info.Address = c.Username
	}
	if info.Inbox == "" {
		info.Inbox = "INBOX"
	}
	if info.Unrouted == "" {
		info.Unrouted = defaultUnrouted
	}
	return info, nil
}

// OpenMailbox signs in to an imap resource of the workspace. Errors are
// safe to show (the password is redacted).
func (s *Service) OpenMailbox(ctx context.Context, workspaceID, resourceID string) (mailbox.Session, error) {
	conn, err := s.Open(ctx, &actor.Workspace{ID: workspaceID}, resourceID)
	if err != nil {
		return nil, err
	}
	if conn.Resource.Kind != "imap" {
		return nil, apperr.BadRequest("resource %q is a %s resource, not imap", conn.Resource.Name, conn.Resource.Kind)
	}
	c, err := configOf[IMAPConfig](conn.Resource)
	if err != nil {
		return nil, err
	}
	t := s.target(conn)
	if err := t.checkHost(c.Host); err != nil {
		return nil, err
	}
	red := redact.New(conn.Secret)
	security, port := c.Security, c.Port
	if security == "" {
		security = "tls"
	}
	if port == 0 {
		port = 143
		if security == "tls" {
			port = 993
		}
	}
	addr := net.JoinHostPort(strings.Trim(c.Host, "[]"), strconv.Itoa(port))
	dctx, cancel := context.WithTimeout(ctx, mailboxCallTimeout)
	defer cancel()
	raw, err := t.out.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("imap %q: could not reach %s: %s", conn.Resource.Name, addr, describe(err))
	}
	bc := &boundedConn{Conn: raw}
	bc.left.Store(mailboxSessionWire)
	m := &imapSession{name: conn.Resource.Name, red: red, newMail: make(chan struct{}, 1)}
	opts := &imapclient.Options{
		TLSConfig: mailTLS(c.Host),
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					select { // the client's reader runs this: never block it
					case m.newMail <- struct{}{}:
					default:
					}
				}
			},
		},
	}
	var cl *imapclient.Client
	switch security {
	case "tls":
		tc := tls.Client(bc, mailTLS(c.Host))
		_ = tc.SetDeadline(time.Now().Add(mailboxCallTimeout))
		if err := tc.HandshakeContext(dctx); err != nil {
			bc.Close()
			return nil, fmt.Errorf("imap %q: TLS with %s failed: %s", conn.Resource.Name, addr, describe(err))
		}
		_ = tc.SetDeadline(time.Time{})
		cl = imapclient.New(tc, opts)
	case "starttls":
		if cl, err = imapclient.NewStartTLS(bc, opts); err != nil {
			bc.Close()
			return nil, fmt.Errorf("imap %q: STARTTLS with %s failed: %s", conn.Resource.Name, addr, describe(err))
		}
	default:
		cl = imapclient.New(bc, opts)
	}
	m.c = cl
	err = m.do(ctx, func() error { return cl.Login(c.Username, conn.Secret).Wait() })
	if err != nil {
		m.Close()
		return nil, m.fail("signing in to %s as %s", addr, c.Username)(err)
	}
	return m, nil
}

// imapSession implements mailbox.Session on go-imap's client.
type imapSession struct {
	c       *imapclient.Client
	name    string
	red     *redact.Redactor
	newMail chan struct{}
	once    sync.Once
}

// do runs a call with a watchdog: the client has no deadlines while it
// waits for an answer, so a call that outlives its time (or ctx) closes
// the connection, which ends it.
func (m *imapSession) do(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(mailboxCallTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		m.Close()
		<-done
		return errors.New("timed out")
	case <-ctx.Done():
		m.Close()
		<-done
		return ctx.Err()
	}
}

// fail words an error of the far end, the password redacted.
func (m *imapSession) fail(format string, args ...any) func(error) error {
	return func(err error) error {
		return &NodeError{Message: m.red.Text(fmt.Sprintf("imap %q: %s: %s", m.name, fmt.Sprintf(format, args...), describe(err)))}
	}
}

func (m *imapSession) Closed() bool {
	select {
	case <-m.c.Closed():
		return true
	default:
		return false
	}
}

func (m *imapSession) Close() {
	m.once.Do(func() {
		_ = m.c.Close()
	})
}

func (m *imapSession) Select(ctx context.Context, folder string) (mailbox.Folder, error) {
	var sd *imap.SelectData
	err := m.do(ctx, func() (err error) {
		sd, err = m.c.Select(folder, nil).Wait()
		return err
	})
	if err != nil {
		return mailbox.Folder{}, m.fail("opening the folder %s", folder)(err)
	}
	// The folder's own EXISTS is no news: Wait waits for mail after this.
	select {
	case <-m.newMail:
	default:
	}
	return mailbox.Folder{Name: folder, UIDValidity: sd.UIDValidity, UIDNext: uint32(sd.UIDNext)}, nil
}

func (m *imapSession) Search(ctx context.Context, after uint32, since time.Time, max int) ([]uint32, error) {
	var set imap.UIDSet
	set.AddRange(imap.UID(after+1), 0)
	crit := &imap.SearchCriteria{UID: []imap.UIDSet{set}}
	if !since.IsZero() {
		crit.Since = since
	}
	var sd *imap.SearchData
	err := m.do(ctx, func() (err error) {
		sd, err = m.c.UIDSearch(crit, nil).Wait()
		return err
	})
	if err != nil {
		return nil, m.fail("searching for new mail")(err)
	}
	var out []uint32
	for _, u := range sd.AllUIDs() {
		if uint32(u) > after { // "N:*" may match the last message below N
			out = append(out, uint32(u))
		}
	}
	slices.Sort(out)
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

func (m *imapSession) Fetch(ctx context.Context, uid uint32, maxBytes int64) (*mailbox.Raw, error) {
	set := imap.UIDSetNum(imap.UID(uid))
	var meta []*imapclient.FetchMessageBuffer
	err := m.do(ctx, func() (err error) {
		meta, err = m.c.Fetch(set, &imap.FetchOptions{UID: true, RFC822Size: true, InternalDate: true}).Collect()
		return err
	})
	if err != nil {
		return nil, m.fail("reading message %d", uid)(err)
	}
	i := slices.IndexFunc(meta, func(b *imapclient.FetchMessageBuffer) bool { return uint32(b.UID) == uid })
	if i < 0 {
		return nil, nil
	}
	r := &mailbox.Raw{UID: uid, Size: meta[i].RFC822Size, InternalDate: meta[i].InternalDate}
	section := &imap.FetchItemBodySection{Peek: true}
	if r.Size > maxBytes {
		section.Specifier, r.Truncated = imap.PartSpecifierHeader, true
	}
	var bufs []*imapclient.FetchMessageBuffer
	err = m.do(ctx, func() (err error) {
		bufs, err = m.c.Fetch(set, &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{section}}).Collect()
		return err
	})
	if err != nil {
		return nil, m.fail("reading message %d", uid)(err)
	}
	for _, b := range bufs {
		if uint32(b.UID) == uid {
			r.Data = b.FindBodySection(section)
			return r, nil
		}
	}
	return nil, nil
}

func (m *imapSession) Envelopes(ctx context.Context, max int) ([]mailbox.Envelope, error) {
	var sd *imap.SearchData
	err := m.do(ctx, func() (err error) {
		sd, err = m.c.UIDSearch(&imap.SearchCriteria{}, nil).Wait()
		return err
	})
	if err != nil {
		return nil, m.fail("listing the folder")(err)
	}
	uids := sd.AllUIDs()
	slices.Sort(uids)
	if len(uids) > max {
		uids = uids[len(uids)-max:]
	}
	if len(uids) == 0 {
		return []mailbox.Envelope{}, nil
	}
	var bufs []*imapclient.FetchMessageBuffer
	err = m.do(ctx, func() (err error) {
		bufs, err = m.c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, Envelope: true, RFC822Size: true, InternalDate: true}).Collect()
		return err
	})
	if err != nil {
		return nil, m.fail("listing the folder")(err)
	}
	out := make([]mailbox.Envelope, 0, len(bufs))
	for _, b := range bufs {
		e := mailbox.Envelope{UID: uint32(b.UID), Size: b.RFC822Size, Date: b.InternalDate.UTC(), To: []string{}}
		if env := b.Envelope; env != nil {
			e.Subject, e.MessageID = env.Subject, env.MessageID
			if len(env.From) > 0 {
				e.From = env.From[0].Addr()
			}
			for _, a := range env.To {
				e.To = append(e.To, a.Addr())
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b mailbox.Envelope) int { return int(b.UID) - int(a.UID) })
	return out, nil
}

// Move uses MOVE where the server has it; otherwise COPY, and only once
// the copy succeeded, \Deleted and UID EXPUNGE (go-imap's own fallback
// deletes the message even when the copy failed). A missing folder is
// created and the move tried again.
func (m *imapSession) Move(ctx context.Context, uid uint32, folder string) error {
	err := m.move(ctx, uid, folder)
	var ie *imap.Error
	if errors.As(err, &ie) && ie.Code == imap.ResponseCodeTryCreate {
		if cerr := m.do(ctx, func() error { return m.c.Create(folder, nil).Wait() }); cerr != nil {
			return m.fail("creating the folder %s", folder)(cerr)
		}
		err = m.move(ctx, uid, folder)
	}
	if err != nil {
		return m.fail("moving message %d to %s", uid, folder)(err)
	}
	return nil
}

func (m *imapSession) move(ctx context.Context, uid uint32, folder string) error {
	set := imap.UIDSetNum(imap.UID(uid))
	caps := m.c.Caps()
	if caps.Has(imap.CapMove) {
		return m.do(ctx, func() error {
			_, err := m.c.Move(set, folder).Wait()
			return err
		})
	}
	if err := m.do(ctx, func() error {
		_, err := m.c.Copy(set, folder).Wait()
		return err
	}); err != nil {
		return err
	}
	return m.expunge(ctx, uid)
}

// expunge deletes one message: \Deleted, then UID EXPUNGE (a server
// without UIDPLUS expunges every message marked \Deleted in the folder).
func (m *imapSession) expunge(ctx context.Context, uid uint32) error {
	set := imap.UIDSetNum(imap.UID(uid))
	if err := m.do(ctx, func() error {
		return m.c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close()
	}); err != nil {
		return err
	}
	return m.do(ctx, func() error {
		if m.c.Caps().Has(imap.CapUIDPlus) {
			return m.c.UIDExpunge(set).Close()
		}
		return m.c.Expunge().Close()
	})
}

func (m *imapSession) Flag(ctx context.Context, uid uint32, flags ...string) error {
	fs := make([]imap.Flag, len(flags))
	for i, f := range flags {
		fs[i] = imap.Flag(f)
	}
	err := m.do(ctx, func() error {
		return m.c.Store(imap.UIDSetNum(imap.UID(uid)), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: fs}, nil).Close()
	})
	if err != nil {
		return m.fail("flagging message %d", uid)(err)
	}
	return nil
}

func (m *imapSession) Delete(ctx context.Context, uid uint32) error {
	if err := m.expunge(ctx, uid); err != nil {
		return m.fail("deleting message %d", uid)(err)
	}
	return nil
}

// Wait idles (IMAP IDLE) until the server reports mail, d passes or ctx
// ends; a server without IDLE is asked again after d (NOOP).
func (m *imapSession) Wait(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	if !m.c.Caps().Has(imap.CapIdle) {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-m.c.Closed():
			return errors.New("the connection closed")
		}
		return m.do(ctx, func() error { return m.c.Noop().Wait() })
	}
	var idle *imapclient.IdleCommand
	if err := m.do(ctx, func() (err error) {
		idle, err = m.c.Idle()
		return err
	}); err != nil {
		return m.fail("waiting for mail")(err)
	}
	select {
	case <-m.newMail:
	case <-timer.C:
	case <-ctx.Done():
	case <-m.c.Closed():
	}
	err := m.do(context.WithoutCancel(ctx), func() error {
		if err := idle.Close(); err != nil {
			return err
		}
		return idle.Wait()
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return m.fail("waiting for mail")(err)
	}
	return nil
}

// MailAck is what an imap_ack node does to the message a run came from.
type MailAck struct {
	Folder      string
	UIDValidity uint32
	UID         uint32
	Action      string // seen, flag or move
	Target      string // move: the folder
}

// AckMail marks read, flags or moves a message of an imap resource of the
// workspace: the one a run came from, while its folder is the same
// (UIDVALIDITY) and the message is still in it.
func (s *Service) AckMail(ctx context.Context, workspaceID, resourceID string, a MailAck) (any, error) {
	sess, err := s.OpenMailbox(ctx, workspaceID, resourceID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return nil, &NodeError{Message: fmt.Sprintf("resource %s not found in this workspace", resourceID)}
	}
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	f, err := sess.Select(ctx, a.Folder)
	if err != nil {
		return nil, err
	}
	if f.UIDValidity != a.UIDValidity {
		return nil, &NodeError{Message: fmt.Sprintf("the folder %s was made anew since the message arrived (UIDVALIDITY %d, now %d)", a.Folder, a.UIDValidity, f.UIDValidity)}
	}
	raw, err := sess.Fetch(ctx, a.UID, 0)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, &NodeError{Message: fmt.Sprintf("message %d is no longer in %s", a.UID, a.Folder)}
	}
	out := map[string]any{"uid": a.UID, "folder": a.Folder, "action": a.Action}
	switch a.Action {
	case "seen":
		err = sess.Flag(ctx, a.UID, string(imap.FlagSeen))
	case "flag":
		err = sess.Flag(ctx, a.UID, string(imap.FlagFlagged))
	case "move":
		err = sess.Move(ctx, a.UID, a.Target)
		out["moved_to"] = a.Target
	default:
		return nil, &NodeError{Message: fmt.Sprintf("unknown action %q: seen, flag or move", a.Action)}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
