// Package mailbox holds what email into workflows shares between the
// resources package, which opens an imap resource's mailbox, and the
// triggers that poll it: a session's operations, a message read into a
// run's trigger context (headers, text, attachments as files), and the
// plus-address rules (<inbox>+<alias>@<domain>).
package mailbox

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// Session is an open, signed-in connection to a mailbox. Every call is
// bounded in time; a failed call may leave the session closed (open a new
// one). UIDs are those of the folder last selected.
type Session interface {
	// Select opens a folder (for reading and changing).
	Select(ctx context.Context, folder string) (Folder, error)
	// Search lists the UIDs above after, ascending, at most max; since (not
	// zero) keeps messages that arrived on or after its day.
	Search(ctx context.Context, after uint32, since time.Time, max int) ([]uint32, error)
	// Fetch reads one message, whole when it is at most maxBytes, else its
	// header only (Truncated); nil when the UID is not there.
	Fetch(ctx context.Context, uid uint32, maxBytes int64) (*Raw, error)
	// Envelopes lists the newest max messages of the folder, newest first.
	Envelopes(ctx context.Context, max int) ([]Envelope, error)
	// Move moves a message to another folder, creating the folder when it
	// is missing; the message is never lost when the copy fails.
	Move(ctx context.Context, uid uint32, folder string) error
	// Flag adds flags (\Seen, \Flagged, a keyword) to a message.
	Flag(ctx context.Context, uid uint32, flags ...string) error
	// Delete removes a message for good.
	Delete(ctx context.Context, uid uint32) error
	// Wait returns when new mail may have arrived (IMAP IDLE), after at
	// most d, or when ctx ends.
	Wait(ctx context.Context, d time.Duration) error
	// Closed reports a session that no longer answers (a failed call may
	// close it).
	Closed() bool
	Close()
}

// Folder is a selected folder.
type Folder struct {
	Name        string
	UIDValidity uint32
	UIDNext     uint32
}

// Raw is a message as fetched.
type Raw struct {
	UID          uint32
	Size         int64
	InternalDate time.Time
	Data         []byte
	Truncated    bool // Data is the header only: the message is larger than asked
}

// Envelope summarises a message for a listing.
type Envelope struct {
	UID       uint32    `json:"uid"`
	MessageID string    `json:"message_id"`
	From      string    `json:"from"`
	To        []string  `json:"to"`
	Subject   string    `json:"subject"`
	Date      time.Time `json:"date"`
	Size      int64     `json:"size"`
}

// Info is what a mailbox resource says about itself without connecting.
type Info struct {
	ResourceID string
	Name       string
	Address    string // the mailbox's address (plus addresses are made from it); "" when unknown
	Inbox      string // the folder the poller reads
	Unrouted   string // where mail no trigger takes is moved
}

// Aliases are lower-case letters, digits, dots, dashes and underscores,
// starting with a letter or digit: what survives every mail system's
// local part.
var aliasPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// MaxAliasLen bounds an alias.
const MaxAliasLen = 63

// CleanAlias checks an alias, lower-cased.
func CleanAlias(raw string) (string, bool) {
	a := strings.ToLower(strings.TrimSpace(raw))
	return a, aliasPattern.MatchString(a)
}

// Slug makes an alias from free text (a workflow's name): lower-case
// letters and digits joined by dashes; "" when nothing is left.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// PlusAddress is the address of an alias on a mailbox's address:
// inbox+alias@domain; "" when the mailbox's address is not one.
func PlusAddress(mailbox, alias string) string {
	local, domain, ok := strings.Cut(mailbox, "@")
	if !ok || local == "" || domain == "" {
		return ""
	}
	if i := strings.IndexByte(local, '+'); i >= 0 {
		local = local[:i]
	}
	return local + "+" + alias + "@" + domain
}

// AliasOf finds the alias a recipient addresses on a mailbox: the part
// after "+" when the rest is the mailbox's address (case-insensitive).
func AliasOf(mailbox, recipient string) (string, bool) {
	mLocal, mDomain, ok := strings.Cut(strings.ToLower(mailbox), "@")
	if !ok {
		return "", false
	}
	if i := strings.IndexByte(mLocal, '+'); i >= 0 {
		mLocal = mLocal[:i]
	}
	local, domain, ok := strings.Cut(strings.ToLower(strings.TrimSpace(recipient)), "@")
	if !ok || domain != mDomain {
		return "", false
	}
	base, alias, ok := strings.Cut(local, "+")
	if !ok || base != mLocal || alias == "" {
		return "", false
	}
	return alias, true
}
