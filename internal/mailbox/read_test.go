package mailbox

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func raw(s string) *Raw { return &Raw{UID: 1, Data: []byte(strings.ReplaceAll(s, "\n", "\r\n"))} }

// TestRead: what a run sees of a message — addresses, a decoded subject in
// another charset, the text, headers; attachments as files with safe names
// within the bounds; control characters gone; a header-only message.
func TestRead(t *testing.T) {
	e, files := Read(raw(`From: "Ann" <ann@x.test>
To: support+billing@example.test, Bob <bob@example.test>
Cc: c@x.test
Subject: =?ISO-8859-1?Q?Caf=E9?=
Message-ID: <m1@x.test>
Date: Thu, 26 Nov 2026 10:00:00 +0100
X-Evil: a` + "\x1b[31m\u202e" + `b
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b"

--b
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

Gr=FC=DFe` + "\x07" + `
--b
Content-Type: text/html; charset=utf-8

<p>Hi</p>
--b
Content-Type: application/pdf
Content-Disposition: attachment; filename="../../etc/passwd"
Content-Transfer-Encoding: base64

` + base64.StdEncoding.EncodeToString([]byte("%PDF")) + `
--b--
`))
	if e.From != "ann@x.test" || strings.Join(e.To, ",") != "support+billing@example.test,bob@example.test" || e.Cc[0] != "c@x.test" {
		t.Fatalf("addresses: %+v", e)
	}
	if e.Subject != "Café" || e.MessageID != "m1@x.test" || e.Date == nil || e.Date.Hour() != 9 {
		t.Fatalf("header: %q %q %v", e.Subject, e.MessageID, e.Date)
	}
	if e.Text != "Grüße\n" && e.Text != "Grüße" || e.HTML == "" || e.Headers["x-evil"] != "a[31mb" {
		t.Fatalf("text %q html %q x-evil %q", e.Text, e.HTML, e.Headers["x-evil"])
	}
	if len(e.Attachments) != 1 || e.Attachments[0].Path != "attachments/1-passwd" || e.Attachments[0].Size != 4 || e.Truncated {
		t.Fatalf("attachments: %+v", e.Attachments)
	}
	if len(files) != 1 || files[0].Path != "attachments/1-passwd" || string(files[0].Content) != "%PDF" {
		t.Fatalf("files: %+v", files)
	}

	// Header only (a message over the bound): no body, truncated.
	h, files := Read(&Raw{Data: []byte("Subject: big\r\nFrom: a@x.test\r\n\r\n"), Truncated: true})
	if h.Subject != "big" || !h.Truncated || h.Text != "" || len(files) != 0 {
		t.Fatalf("header only: %+v", h)
	}
	// Not a message at all: nothing, no panic.
	if g, _ := Read(raw("\x00\x01garbage")); g == nil {
		t.Fatal("nil email")
	}
}

// TestReadBounds: past MaxAttachments the rest are listed, not kept; the
// text is clipped; the JSON input fits MaxInputBytes whatever the body.
func TestReadBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("Subject: many\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n")
	b.WriteString("--b\nContent-Type: text/plain\n\n" + strings.Repeat("<&>", MaxTextBytes) + "\n")
	for i := range MaxAttachments + 2 {
		fmt.Fprintf(&b, "--b\nContent-Type: text/plain\nContent-Disposition: attachment; filename=\"f%d.txt\"\n\nfile %d\n", i, i)
	}
	b.WriteString("--b--\n")
	e, files := Read(raw(b.String()))
	if len(files) != MaxAttachments || len(e.Attachments) != MaxAttachments+2 || e.Attachments[MaxAttachments].Omitted == "" || !e.Truncated {
		t.Fatalf("%d files, %d attachments, truncated %v", len(files), len(e.Attachments), e.Truncated)
	}
	if len(e.Text) > MaxTextBytes {
		t.Fatalf("text of %d bytes", len(e.Text))
	}
	e.HTML = strings.Repeat("\u0001<", MaxTextBytes) // escapes grow it
	j := e.JSON()
	if len(j) > MaxInputBytes || !json.Valid(j) {
		t.Fatalf("input of %d bytes, valid %v", len(j), json.Valid(j))
	}
}

// TestAliases: plus addresses made and read back, case-insensitively;
// slugs and alias rules.
func TestAliases(t *testing.T) {
	if a := PlusAddress("Support@Example.test", "billing"); a != "Support+billing@Example.test" {
		t.Fatal(a)
	}
	if a := PlusAddress("desk+old@example.test", "new"); a != "desk+new@example.test" {
		t.Fatal(a)
	}
	for rcpt, want := range map[string]string{
		"support+billing@example.test": "billing", "SUPPORT+Billing@EXAMPLE.TEST": "billing", "support@example.test": "",
		"other+billing@example.test": "", "support+billing@evil.test": "", "support+@example.test": "",
	} {
		got, ok := AliasOf("support@example.test", rcpt)
		if got != want || ok != (want != "") {
			t.Errorf("AliasOf(%q) = %q %v", rcpt, got, ok)
		}
	}
	if s := Slug("  Billing Desk — Q4!! "); s != "billing-desk-q4" {
		t.Fatal(s)
	}
	for in, ok := range map[string]bool{"billing": true, "a.b_c-d": true, "-x": false, "has space": false, "x@y": false, strings.Repeat("a", 64): false} {
		if _, got := CleanAlias(in); got != ok {
			t.Errorf("CleanAlias(%q) = %v", in, got)
		}
	}
}
