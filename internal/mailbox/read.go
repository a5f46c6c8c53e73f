package mailbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	_ "github.com/emersion/go-message/charset" // mail in other charsets than UTF-8
	"github.com/emersion/go-message/mail"

	"slipway/internal/platform/text"
)

// Bounds on what a message gives a run: a message larger than
// MaxMessageBytes is read for its header only; the text and the HTML are
// clipped; attachments past the count or byte bound are listed, not kept.
const (
	MaxMessageBytes    = 10 << 20
	MaxTextBytes       = 200 << 10
	MaxHeaders         = 100
	MaxHeaderBytes     = 2 << 10
	MaxAttachments     = 20
	MaxAttachmentBytes = 10 << 20 // all of a message's together
	MaxInputBytes      = 900 << 10
	AttachmentsDir     = "attachments"
)

// Email is a message as a run sees it (its input and trigger context).
type Email struct {
	MessageID   string            `json:"message_id"`
	From        string            `json:"from"`
	To          []string          `json:"to"`
	Cc          []string          `json:"cc"`
	ReplyTo     string            `json:"reply_to,omitempty"`
	Subject     string            `json:"subject"`
	Date        *time.Time        `json:"date"`
	Headers     map[string]string `json:"headers"`
	Text        string            `json:"text"`
	HTML        string            `json:"html,omitempty"`
	Attachments []Attachment      `json:"attachments"`
	// Truncated: the message was larger than the bounds, and some of it
	// (the body, the text, an attachment) is not here.
	Truncated bool `json:"truncated,omitempty"`
}

// Attachment is one attached file; Path is where a code node finds it
// (below its files), Omitted why it was not kept.
type Attachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	Path        string `json:"path,omitempty"`
	Omitted     string `json:"omitted,omitempty"`
}

// File is an attachment's content, for the run's files.
type File struct {
	Path    string
	Content []byte
}

// Read parses a message into what a run sees of it. It never fails on a
// malformed message: what cannot be read is left out.
func Read(r *Raw) (*Email, []File) {
	e := &Email{To: []string{}, Cc: []string{}, Headers: map[string]string{}, Attachments: []Attachment{}, Truncated: r.Truncated}
	mr, err := mail.CreateReader(bytes.NewReader(r.Data))
	if mr == nil {
		e.Truncated = true
		return e, nil
	}
	defer mr.Close()
	h := mr.Header
	e.Subject = clean(header(h.Subject()), MaxHeaderBytes)
	e.MessageID = clean(header(h.MessageID()), MaxHeaderBytes)
	if d, err := h.Date(); err == nil && !d.IsZero() {
		d = d.UTC()
		e.Date = &d
	}
	e.From = first(h, "From")
	e.To, e.Cc = addresses(h, "To"), addresses(h, "Cc")
	e.ReplyTo = first(h, "Reply-To")
	fields := h.Fields()
	for fields.Next() && len(e.Headers) < MaxHeaders {
		k := strings.ToLower(fields.Key())
		if _, seen := e.Headers[k]; seen {
			continue
		}
		v, err := fields.Text()
		if err != nil {
			v = fields.Value()
		}
		e.Headers[k] = clean(v, MaxHeaderBytes)
	}
	if err != nil || r.Truncated {
		return e, nil // the header alone
	}
	var files []File
	kept := int64(0)
	for {
		p, err := mr.NextPart()
		if err != nil {
			if err != io.EOF {
				e.Truncated = true
			}
			break
		}
		switch ph := p.Header.(type) {
		case *mail.InlineHeader:
			ct, _, _ := ph.ContentType()
			if ct != "text/plain" && ct != "text/html" {
				continue
			}
			b, _ := io.ReadAll(io.LimitReader(p.Body, MaxTextBytes+1))
			s := string(b)
			if len(b) > MaxTextBytes {
				s, e.Truncated = clip(s, MaxTextBytes), true
			}
			s = clean(s, MaxTextBytes)
			if ct == "text/plain" && e.Text == "" {
				e.Text = s
			} else if ct == "text/html" && e.HTML == "" {
				e.HTML = s
			}
		case *mail.AttachmentHeader:
			name, _ := ph.Filename()
			ct, _, _ := ph.ContentType()
			a := Attachment{Filename: clean(name, 200), ContentType: ct}
			b, _ := io.ReadAll(io.LimitReader(p.Body, MaxAttachmentBytes-kept+1))
			a.Size = int64(len(b))
			switch {
			case len(e.Attachments) >= MaxAttachments:
				a.Omitted = fmt.Sprintf("more than %d attachments", MaxAttachments)
			case kept+a.Size > MaxAttachmentBytes:
				a.Omitted = fmt.Sprintf("the attachments are larger than %d bytes together", MaxAttachmentBytes)
			default:
				kept += a.Size
				a.Path = fmt.Sprintf("%s/%d-%s", AttachmentsDir, len(e.Attachments)+1, fileName(a.Filename))
				files = append(files, File{Path: a.Path, Content: b})
			}
			if a.Omitted != "" {
				e.Truncated = true
			}
			if len(e.Attachments) < 2*MaxAttachments {
				e.Attachments = append(e.Attachments, a)
			}
		}
	}
	return e, files
}

// JSON is the email as a run's input: the HTML, then the text, give way
// until it fits MaxInputBytes.
func (e *Email) JSON() []byte {
	for {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(e) // strings, maps and slices of them: never fails
		b := bytes.TrimSpace(buf.Bytes())
		switch {
		case len(b) <= MaxInputBytes:
			return b
		case e.HTML != "":
			e.HTML, e.Truncated = "", true
		case e.Text != "":
			e.Text, e.Truncated = clip(e.Text, len(e.Text)/2), true
		default:
			e.Headers, e.Truncated = map[string]string{}, true
		}
	}
}

func header(s string, _ error) string { return s }

func first(h mail.Header, key string) string {
	if as := addresses(h, key); len(as) > 0 {
		return as[0]
	}
	return ""
}

func addresses(h mail.Header, key string) []string {
	out := []string{}
	as, err := h.AddressList(key)
	if err != nil {
		if v := strings.TrimSpace(h.Get(key)); v != "" {
			return append(out, clean(v, MaxHeaderBytes))
		}
		return out
	}
	for _, a := range as {
		if len(out) == 100 {
			break
		}
		out = append(out, clean(a.Address, 320))
	}
	return out
}

// clean keeps text free of control and bidirectional-override
// characters (but line breaks and tabs) and of invalid UTF-8, at most max
// bytes.
func clean(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case text.StripControls(string(r)) == "":
			return -1
		}
		return r
	}, s)
	return clip(s, max)
}

// clip cuts s to at most max bytes on a rune boundary.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s[len(s)-min(len(s), 3):]) {
		s = s[:len(s)-1]
	}
	return s
}

// fileName makes an attachment's name safe as one path segment.
func fileName(name string) string {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '/' || r == ':' {
			return '_'
		}
		return r
	}, name)
	name = strings.TrimLeft(name, ".")
	if name == "" || name == "/" {
		name = "attachment"
		if ext, _ := mime.ExtensionsByType("application/octet-stream"); len(ext) > 0 {
			name += ext[0]
		}
	}
	return clip(name, 120)
}
