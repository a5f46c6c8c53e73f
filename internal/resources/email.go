package resources

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"slices"
	"strings"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/redact"
)

// The notify_email node: through an smtp resource of the workspace, or,
// without one, the instance's mailer, which sends only to the workspace's
// members (a workflow may not turn the instance's mail server into a relay
// to anyone).

// Mailer queues mail through the instance's outbox.
type Mailer interface {
	QueueMessage(ctx context.Context, tx *db.Tx, to, subject, body string) error
}

// Members tells whose addresses the instance's mailer may write to.
type Members interface {
	MemberEmails(ctx context.Context, workspaceID string) ([]string, error)
}

// Email sends one mail to each recipient.
func (s *Service) Email(ctx context.Context, workspaceID, resourceID string, to []string, subject, body string) (any, error) {
	rcpts := make([]string, 0, len(to))
	for _, raw := range to {
		a, err := mail.ParseAddress(strings.TrimSpace(raw))
		if err != nil || strings.ContainsAny(a.Address, "\r\n") {
			return nil, &NodeError{Message: fmt.Sprintf("%q is not an email address", clip(raw, 100))}
		}
		rcpts = append(rcpts, a.Address)
	}
	subject = strings.NewReplacer("\r", " ", "\n", " ").Replace(subject)
	if resourceID == "" {
		return s.emailByInstance(ctx, workspaceID, rcpts, subject, body)
	}
	c, red, err := s.use(ctx, workspaceID, resourceID, "smtp")
	if err != nil {
		return nil, err
	}
	cfg, _ := decode[SMTPConfig](configMap(c.Resource))
	t := s.target(c)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sess, err := t.smtpOpen(ctx, cfg)
	if err != nil {
		return nil, failure(red, "smtp %q: %v", c.Resource.Name, err)
	}
	defer sess.close()
	id := messageID()
	for _, rcpt := range rcpts {
		if err := sendOne(sess, cfg.From, rcpt, subject, body, id); err != nil {
			return nil, failure(red, "smtp %q: %v", c.Resource.Name, err)
		}
	}
	_ = sess.cl.Quit()
	return map[string]any{"sent": len(rcpts), "via": c.Resource.Name, "message_id": id}, nil
}

func sendOne(sess *smtpSession, from, to, subject, body, id string) error {
	if err := sess.cl.Mail(from); err != nil {
		return fmt.Errorf("MAIL FROM: %v", err)
	}
	if err := sess.cl.Rcpt(to); err != nil {
		return fmt.Errorf("RCPT TO %s: %v", to, err)
	}
	w, err := sess.cl.Data()
	if err != nil {
		return fmt.Errorf("DATA: %v", err)
	}
	if _, err := w.Write(rfc5322(from, to, subject, body, id)); err != nil {
		return err
	}
	return w.Close()
}

// rfc5322 is a plain-text UTF-8 message.
func rfc5322(from, to, subject, body, id string) []byte {
	var b strings.Builder
	if strings.ContainsFunc(subject, func(r rune) bool { return r > 127 }) {
		subject = mime.QEncoding.Encode("utf-8", subject)
	}
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@slipway>\r\n", from, to, subject,
		time.Now().UTC().Format(time.RFC1123Z), id)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	for _, line := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		b.WriteString(line + "\r\n") // the DATA writer dot-stuffs
	}
	return []byte(b.String())
}

func messageID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// emailByInstance queues the mail in the instance's outbox, for members of
// the workspace only.
func (s *Service) emailByInstance(ctx context.Context, workspaceID string, rcpts []string, subject, body string) (any, error) {
	if s.Mailer == nil || s.Members == nil {
		return nil, &NodeError{Message: "no mailer: give the node an smtp resource"}
	}
	members, err := s.Members.MemberEmails(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	for _, r := range rcpts {
		if !slices.ContainsFunc(members, func(m string) bool { return strings.EqualFold(m, r) }) {
			return nil, &NodeError{Message: fmt.Sprintf("%s is not a member of this workspace: the instance's mailer writes only to members; give the node an smtp resource to write to anyone", r)}
		}
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		for _, r := range rcpts {
			if err := s.Mailer.QueueMessage(ctx, tx, r, subject, body); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, errors.New(redact.New().Text(err.Error()))
	}
	return map[string]any{"sent": len(rcpts), "via": "instance"}, nil
}
