package resources_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/mailbox"
	"slipway/internal/mailbox/mailtest"
	"slipway/internal/platform/db"
)

// TestMailboxSession drives an imap resource's mailbox session against a
// real IMAP server, with MOVE (IMAP4rev2) and without (IMAP4rev1: copy,
// then expunge only once the copy succeeded): new mail by UID, a message
// read whole or, when too large, its header only, IDLE woken by new mail,
// flags, a move into a folder it creates, a delete.
func TestMailboxSession(t *testing.T) {
	f := fixture.NewAPI(t, db.SQLite, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
	svc := f.App.Server.Services.Resources
	ws := f.Owner.DefaultWorkspace()
	for _, rev2 := range []bool{true, false} {
		t.Run(map[bool]string{true: "rev2", false: "rev1"}[rev2], func(t *testing.T) {
			mail := mailtest.Start(t, "desk@example.test", "pw-"+randomHex(8), rev2)
			f.App.Remember(mail.Password)
			host, port, _ := net.SplitHostPort(mail.IMAPAddr)
			p, _ := strconv.Atoi(port)
			r := f.Owner.Do("POST", "/api/resources", obj{"kind": "imap", "name": "Desk " + t.Name(), "secret": mail.Password,
				"config": obj{"host": host, "port": p, "security": "none", "username": mail.User, "unrouted_mailbox": "Later"}})
			fixture.Want(t, r, http.StatusCreated)
			id := r.Map(t)["id"].(string)
			ctx := context.Background()
			info, err := svc.MailboxInfo(ctx, ws, id)
			if err != nil || info.Address != mail.User || info.Inbox != "INBOX" || info.Unrouted != "Later" {
				t.Fatalf("info %+v %v", info, err)
			}
			mail.Send("a@x.test", []string{mail.User}, mailtest.Mail("a@x.test", mail.User, "one", "1@x.test", "first"))
			s, err := svc.OpenMailbox(ctx, ws, id)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			folder, err := s.Select(ctx, "INBOX")
			if err != nil || folder.UIDValidity == 0 {
				t.Fatalf("select %+v %v", folder, err)
			}
			uids, err := s.Search(ctx, 0, time.Time{}, 10)
			if err != nil || len(uids) != 1 {
				t.Fatalf("search %v %v", uids, err)
			}
			raw, err := s.Fetch(ctx, uids[0], mailbox.MaxMessageBytes)
			if err != nil || raw == nil || raw.Truncated {
				t.Fatalf("fetch %+v %v", raw, err)
			}
			if e, _ := mailbox.Read(raw); e.Subject != "one" || e.Text != "first\n" && e.Text != "first" {
				t.Fatalf("read %+v", e)
			}
			if head, _ := s.Fetch(ctx, uids[0], 10); head == nil || !head.Truncated {
				t.Fatalf("a message over the bound: %+v", head)
			}
			if none, err := s.Fetch(ctx, 99, 10); none != nil || err != nil {
				t.Fatalf("a missing UID: %+v %v", none, err)
			}
			// IDLE wakes on new mail, well before its bound.
			sent := make(chan error, 1)
			go func() {
				time.Sleep(300 * time.Millisecond)
				sent <- mail.SendErr("b@x.test", []string{mail.User}, mailtest.Mail("b@x.test", mail.User, "two", "2@x.test", "second"))
			}()
			start := time.Now()
			if err := s.Wait(ctx, 20*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if time.Since(start) > 10*time.Second || time.Since(start) < 250*time.Millisecond {
				t.Fatalf("IDLE woke after %s, not on the new mail", time.Since(start))
			}
			uids, err = s.Search(ctx, uids[0], time.Time{}, 10)
			if err != nil || len(uids) != 1 {
				t.Fatalf("new mail %v %v", uids, err)
			}
			if err := s.Flag(ctx, uids[0], `\Flagged`); err != nil {
				t.Fatal(err)
			}
			if err := s.Move(ctx, 1, "Later"); err != nil {
				t.Fatal(err)
			}
			in, later := mail.Folder("INBOX"), mail.Folder("Later")
			if len(in) != 1 || !in[0].Flagged() || in[0].Subject != "two" || len(later) != 1 || later[0].Subject != "one" {
				t.Fatalf("after the move: INBOX %+v, Later %+v", in, later)
			}
			envs, err := s.Envelopes(ctx, 10)
			if err != nil || len(envs) != 1 || envs[0].Subject != "two" || envs[0].From != "b@x.test" {
				t.Fatalf("envelopes %+v %v", envs, err)
			}
			if err := s.Delete(ctx, uids[0]); err != nil {
				t.Fatal(err)
			}
			if in := mail.Folder("INBOX"); len(in) != 0 {
				t.Fatalf("after the delete: %+v", in)
			}
		})
	}
}
