// Package mail sends Slipway's transactional mail (invites; password
// resets, address checks and sign-in links as they come) through a
// retrying outbox: a mail is queued in the transaction that decides to send
// it, and a sender on every replica delivers what is due over SMTP, backing
// off while the mail server is unreachable, so an outage loses nothing.
// Bodies are sealed at rest (they carry single-use links). Without an SMTP
// server (development) mail is logged as sent, and kept for the dev outbox.
package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/sweep"
	"slipway/internal/platform/vault"
)

// SMTP is the outbound mail server (SERVICE_SMTP_*).
type SMTP struct {
	Host     string // "" : no server (development: mail is logged)
	Port     int
	Username string
	Password string
	From     string
	// Security is "starttls" (default), "tls" (implicit, port 465) or
	// "none" (a local relay).
	Security string
}

// Outbox statuses.
const (
	StatusQueued = "queued"
	StatusSent   = "sent"
	StatusFailed = "failed"
)

// GiveUpAfter is how long a mail is retried before it is marked failed.
const GiveUpAfter = 72 * time.Hour

// KeepFor is how long a sent or failed mail stays in the outbox (for the
// dev outbox view and for looking into a delivery) before Prune deletes it.
const KeepFor = 30 * 24 * time.Hour

// Outbox queues and sends mail.
type Outbox struct {
	db        *db.DB
	clock     clock.Clock
	sealer    *vault.Sealer
	smtp      SMTP
	templates *Templates
	log       *slog.Logger
	wake      chan struct{}
}

// New returns the outbox.
func New(d *db.DB, clk clock.Clock, sealer *vault.Sealer, cfg SMTP, log *slog.Logger) *Outbox {
	if cfg.Port == 0 {
		cfg.Port = 587
	}
	if cfg.Security == "" {
		cfg.Security = "starttls"
	}
	return &Outbox{db: d, clock: clk, sealer: sealer, smtp: cfg, templates: &Templates{db: d, clock: clk}, log: log, wake: make(chan struct{}, 1)}
}

// Templates is the outbox's templates.
func (o *Outbox) Templates() *Templates { return o.templates }

const sealContext = "mail body"

// Queue renders a template with its variables and queues the mail, inside
// tx; the sender delivers it once tx commits.
func (o *Outbox) Queue(ctx context.Context, tx *db.Tx, to, key string, vars map[string]string) error {
	t, err := o.templates.get(ctx, tx, key)
	if err != nil {
		return err
	}
	subject, body := render(t.Subject, vars), render(t.Body, vars)
	now := o.clock.Now()
	if err := insertMail(ctx, tx, to, key, subject, o.sealer.Seal(body, sealContext), now); err != nil {
		return err
	}
	tx.AfterCommit(o.poke)
	return nil
}

// TemplateWorkflow is the key of mail a workflow's notify_email sends
// through the instance's mailer: its subject and body are the node's.
const TemplateWorkflow = "workflow"

// QueueMessage queues a mail written in full by its sender (a workflow
// node), inside tx.
func (o *Outbox) QueueMessage(ctx context.Context, tx *db.Tx, to, subject, body string) error {
	if err := insertMail(ctx, tx, to, TemplateWorkflow, subject, o.sealer.Seal(body, sealContext), o.clock.Now()); err != nil {
		return err
	}
	tx.AfterCommit(o.poke)
	return nil
}

func (o *Outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

type queued struct {
	id, to, subject, body string
	attempts              int
	created               time.Time
}

// Send delivers the mail that is due and reports how many went out. Each
// mail is claimed by pushing its next attempt out first, so two replicas
// never send one mail at once.
func (o *Outbox) Send(ctx context.Context) (int, error) {
	now := o.clock.Now()
	due, err := dueMail(ctx, o.db.R, now)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, id := range due {
		m, err := o.claim(ctx, id, now)
		if err != nil {
			return sent, err
		}
		if m == nil {
			continue // another replica has it
		}
		sendErr := o.deliver(ctx, m)
		if err := o.settle(ctx, m, sendErr); err != nil {
			return sent, err
		}
		if sendErr == nil {
			sent++
		}
	}
	return sent, nil
}

// claim takes a due mail by moving its next attempt past the time a send
// may take (compare-and-set on the attempt count).
func (o *Outbox) claim(ctx context.Context, id string, now time.Time) (*queued, error) {
	m, sealed, err := queuedMail(ctx, o.db.R, id)
	if err != nil || m == nil {
		return nil, err
	}
	won, err := takeAttempt(ctx, o.db.W, id, m.attempts, now.Add(5*time.Minute))
	if err != nil || !won {
		return nil, err
	}
	m.attempts++
	if m.body, err = o.sealer.Open(sealed, sealContext); err != nil {
		return nil, fmt.Errorf("mail: open body: %w", err)
	}
	return m, nil
}

// backoff is the wait before attempt n+1: 10 s doubling to at most 10
// minutes.
func backoff(attempts int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < attempts && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}

func (o *Outbox) settle(ctx context.Context, m *queued, sendErr error) error {
	now := o.clock.Now()
	var err error
	switch {
	case sendErr == nil:
		err = markSent(ctx, o.db.W, m.id, now)
	case now.Sub(m.created) > GiveUpAfter:
		o.log.Error("mail could not be delivered; giving up", "mail_id", m.id, "attempts", m.attempts, "err", sendErr)
		err = markFailed(ctx, o.db.W, m.id, sendErr.Error())
	default:
		o.log.Warn("mail delivery failed; retrying", "mail_id", m.id, "attempts", m.attempts, "in", backoff(m.attempts), "err", sendErr)
		err = retryLater(ctx, o.db.W, m.id, now.Add(backoff(m.attempts)), sendErr.Error())
	}
	if err != nil {
		return fmt.Errorf("mail: settle: %w", err)
	}
	return nil
}

// deliver sends one mail over SMTP (or, without a server, logs it).
func (o *Outbox) deliver(ctx context.Context, m *queued) error {
	if o.smtp.Host == "" {
		o.log.Info("mail (no SMTP server configured; see the dev outbox)", "to", m.to, "subject", m.subject)
		return nil
	}
	addr := net.JoinHostPort(o.smtp.Host, strconv.Itoa(o.smtp.Port))
	dialer := &net.Dialer{Timeout: 15 * time.Second}
	var conn net.Conn
	var err error
	if o.smtp.Security == "tls" {
		conn, err = tls.DialWithDialer(dialer, "tcp", addr, &tls.Config{ServerName: o.smtp.Host, MinVersion: tls.VersionTLS12})
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("connecting to the mail server: %w", err)
	}
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	c, err := smtp.NewClient(conn, o.smtp.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("greeting the mail server: %w", err)
	}
	defer c.Close()
	if o.smtp.Security == "starttls" {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return errors.New("the mail server does not offer STARTTLS (set SERVICE_SMTP_SECURITY=none for a local relay)")
		}
		if err := c.StartTLS(&tls.Config{ServerName: o.smtp.Host, MinVersion: tls.VersionTLS12}); err != nil {
			return fmt.Errorf("starting TLS: %w", err)
		}
	}
	if o.smtp.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", o.smtp.Username, o.smtp.Password, o.smtp.Host)); err != nil {
			return fmt.Errorf("signing in to the mail server: %w", err)
		}
	}
	if err := c.Mail(o.smtp.From); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	if err := c.Rcpt(m.to); err != nil {
		return fmt.Errorf("RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(message(o.smtp.From, m, o.clock.Now())); err != nil {
		return fmt.Errorf("writing the message: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("ending the message: %w", err)
	}
	return c.Quit()
}

// message is the RFC 5322 text of a mail: plain text, UTF-8, its
// Message-ID the outbox id (a retried mail keeps it).
func message(from string, m *queued, now time.Time) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@slipway>\r\n", from, m.to, encodeHeader(m.subject),
		now.Format(time.RFC1123Z), m.id)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	for _, line := range strings.Split(strings.ReplaceAll(m.body, "\r\n", "\n"), "\n") {
		b.WriteString(line + "\r\n") // the DATA writer dot-stuffs
	}
	return []byte(b.String())
}

// encodeHeader keeps a header on one line and encodes non-ASCII text.
func encodeHeader(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	for _, r := range s {
		if r > 127 {
			return mime.QEncoding.Encode("utf-8", s)
		}
	}
	return s
}

// Prune deletes sent and failed mail older than KeepFor; queued mail stays
// until it is sent or given up on.
func (o *Outbox) Prune(ctx context.Context) (int, error) {
	return pruneMail(ctx, o.db.W, o.clock.Now().Add(-KeepFor))
}

// Run sends due mail when woken by a queued mail and every few seconds, and
// prunes old mail every hour, until ctx ends.
func (o *Outbox) Run(ctx context.Context, every time.Duration) {
	go sweep.Every(ctx, time.Hour, o.log, "old mail deleted from the outbox", o.Prune)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := o.Send(ctx); err != nil && ctx.Err() == nil {
			o.log.Error("sending mail failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.wake:
		}
	}
}
