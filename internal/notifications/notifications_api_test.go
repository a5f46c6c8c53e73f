package notifications_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/mailbox/mailtest"
	"slipway/internal/notifications"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type obj = map[string]any

// personal opens a console socket of c subscribed to its notifications
// topic; the channel carries the ids the hints name.
func personal(t *testing.T, c *apitest.Client) <-chan string {
	t.Helper()
	ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(c.URL(), "http")+"/api/realtime",
		&websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {c.CookieHeader()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	sub, _ := json.Marshal(obj{"op": "subscribe", "sub": "bell", "stream": notifications.Topic})
	if err := ws.Write(context.Background(), websocket.MessageText, sub); err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 100)
	subscribed := make(chan struct{})
	go func() {
		defer close(out)
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			var m struct{ Type, Topic, ID string }
			json.Unmarshal(b, &m)
			switch m.Type {
			case "subscribed":
				close(subscribed)
			case "changed":
				out <- m.ID
			case "error":
				out <- "error: " + string(b)
			}
		}
	}()
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("the notifications subscription was not confirmed")
	}
	return out
}

func hint(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case id, ok := <-ch:
		if !ok || strings.HasPrefix(id, "error") {
			t.Fatalf("the socket: %q", id)
		}
		return id
	case <-time.After(20 * time.Second):
		t.Fatal("no hint on the notifications topic")
	}
	return ""
}

func silent(t *testing.T, ch <-chan string) {
	t.Helper()
	select {
	case id := <-ch:
		t.Fatalf("an unexpected hint: %q", id)
	case <-time.After(300 * time.Millisecond):
	}
}

func page(t *testing.T, c *apitest.Client, query string) notifications.Page {
	t.Helper()
	r := c.Do("GET", "/notifications"+query, nil)
	fixture.Want(t, r, http.StatusOK)
	var p notifications.Page
	r.JSON(t, &p)
	return p
}

func await(t *testing.T, c *apitest.Client, source string, n int) notifications.Page {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p := page(t, c, "?source="+source)
		if p.Total >= n {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s notifications, want %d", p.Total, source, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNotifications: what needs a person reaches them — their task's tool
// approval, their run's human gate, their task and run that failed — once
// per event, hinted on their personal socket topic and on no one else's;
// they read, read all and delete their own; another person's notification
// is exactly an unknown one.
func TestNotifications(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		bell, otherBell := personal(t, owner), personal(t, outsider)
		project := f.Project(t, owner, "Notified")

		// A tool approval of the owner's task.
		w := f.Working(t, owner, "asks")
		approval := f.Ask(t, w, "req-1", "make deploy")
		p := await(t, owner, notifications.SourceApproval, 1)
		n := p.Items[0]
		if n.TargetKind != "tool_approval" || n.TargetID != approval || n.Read || n.WorkspaceID == nil || !strings.HasPrefix(n.Link, "/tasks/") ||
			!strings.Contains(n.Title, "Approve bash?") {
			t.Fatalf("the approval's notification: %+v", n)
		}
		if got := hint(t, bell); got != n.ID {
			t.Fatalf("the hint names %q, want %q", got, n.ID)
		}
		silent(t, otherBell)

		// A task of the owner's that fails.
		task := f.Task(t, owner, project, "exit 3", obj{"hold": false, "title": "Doomed"})
		if got := fixture.AwaitTask(t, owner, task.ID); got.Status != "failed" {
			t.Fatalf("the task ended %s", got.Status)
		}
		p = await(t, owner, notifications.SourceRunFailed, 1)
		if p.Items[0].TargetID != task.ID || !strings.Contains(p.Items[0].Title, "Doomed") || p.Items[0].Link != "/tasks/"+task.ID {
			t.Fatalf("the failed task's notification: %+v", p.Items[0])
		}
		hint(t, bell)

		// A workflow run that waits at a human gate, and one that fails.
		r := owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Gated",
			"nodes": []obj{{"key": "ask", "kind": "human", "config": obj{"message": "ship it?"}}}})
		fixture.Want(t, r, http.StatusCreated)
		r = owner.Do("POST", "/api/workflows/"+r.Map(t)["id"].(string)+"/runs", obj{})
		fixture.Want(t, r, http.StatusCreated)
		gated := r.Map(t)["run_id"].(string)
		p = await(t, owner, notifications.SourceGate, 1)
		if g := p.Items[0]; g.TargetID != gated || g.Body != "ship it?" || g.Link != "/workflows/runs/"+gated {
			t.Fatalf("the gate's notification: %+v", g)
		}
		hint(t, bell)
		r = owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Broken",
			"nodes": []obj{{"key": "bad", "kind": "transform", "config": obj{"expression": "input.missing.field"}}}})
		fixture.Want(t, r, http.StatusCreated)
		broken := f.RunWorkflow(t, owner, r.Map(t)["id"].(string), obj{})
		p = await(t, owner, notifications.SourceRunFailed, 2)
		if p.Items[0].TargetID != broken.ID || p.Items[0].TargetKind != "workflow_run" || !strings.Contains(p.Items[0].Body, "bad") {
			t.Fatalf("the failed run's notification (newest first): %+v", p.Items)
		}
		hint(t, bell)
		silent(t, otherBell)

		// Deciding the gate settles its notification (read, hinted), and
		// notifies nothing new; the facets count it all.
		fixture.Want(t, owner.Do("POST", "/api/workflows/pending-approvals/"+gated+"/decision", obj{"decision": "approve"}), http.StatusOK)
		if got := hint(t, bell); got != "" {
			t.Fatalf("the settled gate's hint: %q", got)
		}
		all := page(t, owner, "")
		if all.Total != 4 || all.Facets.Unread != 3 || all.Facets.Source["approval"] != 1 || all.Facets.Source["gate"] != 1 ||
			all.Facets.Source["run_failed"] != 2 || all.Facets.Source["proposal"] != 0 || len(all.Facets.Source) != len(notifications.Sources) {
			t.Fatalf("the owner's notifications: total %d, facets %+v", all.Total, all.Facets)
		}
		for i := 1; i < len(all.Items); i++ {
			if all.Items[i].CreatedAt.After(all.Items[i-1].CreatedAt) {
				t.Fatalf("not newest first: %+v", all.Items)
			}
			if all.Items[i].Source == notifications.SourceGate && !all.Items[i].Read {
				t.Fatalf("the decided gate's notification is unread: %+v", all.Items[i])
			}
		}
		if o := page(t, outsider, ""); o.Total != 0 || len(o.Items) != 0 {
			t.Fatalf("the outsider sees %+v", o)
		}

		// Read one: idempotent, hinted once.
		first := all.Items[0]
		r = owner.Do("PUT", "/notifications/"+first.ID+"/read", nil)
		fixture.Want(t, r, http.StatusOK)
		var read notifications.Notification
		r.JSON(t, &read)
		if !read.Read || read.ReadAt == nil || read.ID != first.ID {
			t.Fatalf("read: %+v", read)
		}
		if got := hint(t, bell); got != first.ID {
			t.Fatalf("the read's hint: %q", got)
		}
		r = owner.Do("PUT", "/notifications/"+first.ID+"/read", nil)
		fixture.Want(t, r, http.StatusOK)
		var again notifications.Notification
		r.JSON(t, &again)
		if !again.ReadAt.Equal(*read.ReadAt) {
			t.Fatalf("read again moved read_at: %v → %v", read.ReadAt, again.ReadAt)
		}
		silent(t, bell)
		if p := page(t, owner, "?unread=true"); p.Total != 2 || p.Facets.Unread != 2 {
			t.Fatalf("unread after one read: %d (facets %+v)", p.Total, p.Facets)
		}

		// The board: chips by source and state; filters; a search.
		r = owner.Do("GET", "/api/notifications/board?state=unread&page_size=2", nil)
		fixture.Want(t, r, http.StatusOK)
		var b struct {
			Rows     []notifications.Notification
			Total    int
			PageSize int `json:"page_size"`
			Facets   map[string][]struct {
				Value string
				Count int
			}
		}
		r.JSON(t, &b)
		if b.Total != 2 || len(b.Rows) != 2 || b.PageSize != 2 || len(b.Facets["source"]) != len(notifications.Sources) ||
			b.Facets["state"][0].Value != "unread" || b.Facets["state"][0].Count != 2 || b.Facets["state"][1].Count != 2 {
			t.Fatalf("the board: %s", r.Body)
		}
		r = owner.Do("GET", "/api/notifications/board?q=doomed&state=unread", nil)
		r.JSON(t, &b)
		if b.Total != 1 || b.Rows[0].TargetID != task.ID {
			t.Fatalf("a search for the task: %s", r.Body)
		}
		fixture.WantError(t, owner.Do("GET", "/api/notifications/board?sort=title", nil), http.StatusBadRequest, "bad_request", "created_at")
		fixture.WantError(t, owner.Do("GET", "/notifications?source=spam", nil), http.StatusBadRequest, "bad_request", "source")

		// Another person's notification is an unknown one (the tenancy
		// table: marking one read again changes nothing for its owner).
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "read", Method: "PUT", Path: "/notifications/{id}/read", Create: func(*testing.T, *apitest.Client) string { return first.ID }},
		})
		fixture.WantError(t, outsider.Do("PUT", "/notifications/not-an-id/read", nil), http.StatusNotFound, "not_found")
		if r := outsider.Do("DELETE", "/notifications/"+first.ID, nil); r.Status != http.StatusOK || r.Map(t)["deleted"] != false {
			t.Fatalf("the outsider's delete: %d %s", r.Status, r.Body)
		}
		if r := outsider.Do("POST", "/notifications/read-all", nil); r.Status != http.StatusOK || r.Map(t)["marked"] != float64(0) {
			t.Fatalf("the outsider's read-all: %d %s", r.Status, r.Body)
		}
		silent(t, bell)

		// Read all, then delete one.
		if r := owner.Do("POST", "/notifications/read-all", nil); r.Status != http.StatusOK || r.Map(t)["marked"] != float64(2) {
			t.Fatalf("read-all: %d %s", r.Status, r.Body)
		}
		hint(t, bell)
		if r := owner.Do("DELETE", "/notifications/"+first.ID, nil); r.Status != http.StatusOK || r.Map(t)["deleted"] != true {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		hint(t, bell)
		if p := page(t, owner, ""); p.Total != 3 || p.Facets.Unread != 0 {
			t.Fatalf("after read-all and a delete: %d, %+v", p.Total, p.Facets)
		}
		if r := owner.Do("DELETE", "/notifications/"+first.ID, nil); r.Map(t)["deleted"] != false {
			t.Fatalf("deleted twice: %s", r.Body)
		}

		// Signed out: 401 before anything else.
		fixture.WantError(t, f.App.Anonymous().Do("GET", "/notifications", nil), http.StatusUnauthorized, "unauthorized")
	})
}

// TestMentionsAndInvites: a task's message that names members (@ and
// their address, or its part before the @) tells each of them, never its
// author nor someone outside the workspace; the agent's own messages
// mention too. An invite to an address with an account tells that account
// (about itself, outside any workspace, without the invite's token), and
// the notification is answered once the invite is accepted or revoked.
func TestMentionsAndInvites(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		member := f.Member(t, owner, "Mia Member")
		local := func(c *apitest.Client) string { return strings.Split(c.Email, "@")[0] }
		_, working := f.BlockedProject(t, owner, "Mentions")

		text := "@" + local(member) + " can you check the build? (cc @" + local(owner) + ", @" + outsider.Email + ")"
		fixture.Want(t, owner.Do("POST", "/api/agent/messages", obj{"task_id": working, "text": text}), http.StatusCreated)
		p := await(t, member, notifications.SourceMention, 1)
		n := p.Items[0]
		if n.TargetKind != "task" || n.TargetID != working || n.Link != "/tasks/"+working || n.Body != text ||
			!strings.Contains(n.Title, "mentioned you on") || n.WorkspaceID == nil {
			t.Fatalf("the mention: %+v", n)
		}
		if got := page(t, owner, "?source=mention").Total; got != 0 {
			t.Fatalf("the author was told of their own mention: %d", got)
		}
		if got := page(t, outsider, "?source=mention").Total; got != 0 {
			t.Fatalf("someone outside the workspace was told: %d", got)
		}

		// The agent names the owner in a message of its own.
		project := f.Project(t, owner, "Agents")
		line := `{"type":"message","role":"assistant","text":"Done. @` + local(owner) + ` please review the branch."}`
		task := f.Task(t, owner, project, "echo '"+line+"'", obj{"hold": false, "title": "Reviewable"})
		fixture.AwaitTask(t, owner, task.ID)
		p = await(t, owner, notifications.SourceMention, 1)
		if n := p.Items[0]; n.TargetID != task.ID || !strings.HasPrefix(n.Title, "The agent mentioned you on Reviewable") {
			t.Fatalf("the agent's mention: %+v", n)
		}

		// An invite to the outsider's address: told, then answered.
		org := owner.Do("GET", "/organization", nil).Map(t)["id"].(string)
		r := owner.Do("POST", "/organization/invites", obj{"email": outsider.Email, "role": "member"}, "X-Organization-Id", org)
		fixture.Want(t, r, http.StatusCreated)
		token := r.Map(t)["token"].(string)
		f.App.Remember(token)
		p = await(t, outsider, notifications.SourceInvite, 1)
		n = p.Items[0]
		if n.WorkspaceID != nil || n.TargetKind != "invite" || n.Read || !strings.Contains(n.Title, "invited you to") ||
			!strings.Contains(n.Body, outsider.Email) || strings.Contains(n.Body, token) || strings.Contains(n.Link, token) {
			t.Fatalf("the invite's notification: %+v", n)
		}
		fixture.Want(t, outsider.Do("POST", "/organization/invites/accept", obj{"token": token}), http.StatusOK)
		if n := page(t, outsider, "?source=invite").Items[0]; !n.Read {
			t.Fatalf("an accepted invite's notification is still unread: %+v", n)
		}
		// A revoked one is answered too; an address without an account
		// tells no one.
		third := f.App.Approved(f.Admin, "Tim Third")
		r = owner.Do("POST", "/organization/invites", obj{"email": third.Email}, "X-Organization-Id", org)
		fixture.Want(t, r, http.StatusCreated)
		f.App.Remember(r.Map(t)["token"].(string))
		invite := r.Map(t)["id"].(string)
		if n := await(t, third, notifications.SourceInvite, 1).Items[0]; n.Read {
			t.Fatalf("a new invite's notification is read: %+v", n)
		}
		fixture.Want(t, owner.Do("DELETE", "/organization/invites/"+invite, nil, "X-Organization-Id", org), http.StatusOK)
		if n := page(t, third, "?source=invite").Items[0]; !n.Read {
			t.Fatalf("a revoked invite's notification is still unread: %+v", n)
		}
		before := f.App.Count(t, "SELECT COUNT(*) FROM notifications WHERE source = 'invite'")
		r = owner.Do("POST", "/organization/invites", obj{"email": "nobody-yet@example.test"}, "X-Organization-Id", org)
		fixture.Want(t, r, http.StatusCreated)
		f.App.Remember(r.Map(t)["token"].(string))
		if after := f.App.Count(t, "SELECT COUNT(*) FROM notifications WHERE source = 'invite'"); after != before {
			t.Fatalf("an invite to an address without an account made a notification")
		}
	})
}

// TestNotificationMail: a person who asks for it is also mailed their
// notifications — decisions only, or all — through the instance's mail
// server (a real SMTP server delivering into a real IMAP mailbox), once
// each, at most 20 an hour; no one else is; the setting is theirs alone.
func TestNotificationMail(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		mail := mailtest.Start(t, "everyone@example.test", "imap-pw-notify", true)
		host, port, _ := net.SplitHostPort(mail.SMTPAddr)
		f := fixture.NewAPI(t, e, "SERVICE_SMTP_HOST", host, "SERVICE_SMTP_PORT", port, "SERVICE_SMTP_FROM", "slipway@mail.test",
			"SERVICE_SMTP_SECURITY", "none", "PUBLIC_URL", "https://slipway.example")
		owner := f.Owner
		member := f.Member(t, owner, "Max Mailed")
		settings := func(c *apitest.Client) string {
			return c.Do("GET", "/api/notifications/settings", nil).Map(t)["mail"].(string)
		}
		if settings(owner) != "off" {
			t.Fatal("mail is not off by default")
		}
		fixture.WantError(t, owner.Do("PUT", "/api/notifications/settings", obj{"mail": "sometimes"}), http.StatusBadRequest, "bad_request")
		fixture.WantError(t, f.App.Anonymous().Do("GET", "/api/notifications/settings", nil), http.StatusUnauthorized, "unauthorized")
		r := owner.Do("PUT", "/api/notifications/settings", obj{"mail": "decisions"})
		fixture.Want(t, r, http.StatusOK)
		if settings(owner) != "decisions" || settings(member) != "off" {
			t.Fatalf("settings: owner %s, member %s", settings(owner), settings(member))
		}
		// The mails of notifications (the member's invite mail is there too).
		subjects := func() []string {
			var out []string
			for _, m := range mail.Folder("INBOX") {
				if !strings.Contains(m.Subject, "invited you") {
					out = append(out, m.Subject)
				}
			}
			return out
		}

		// A failed task is not a decision: not mailed. A human gate is.
		project := f.Project(t, owner, "Mailed")
		task := f.Task(t, owner, project, "exit 4", obj{"hold": false, "title": "Broken"})
		fixture.AwaitTask(t, owner, task.ID)
		await(t, owner, notifications.SourceRunFailed, 1)
		r = owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Ship", "nodes": []obj{{"key": "ask", "kind": "human",
			"config": obj{"message": "Ship it?"}}}})
		fixture.Want(t, r, http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/workflows/"+r.Map(t)["id"].(string)+"/runs", obj{}), http.StatusCreated)
		gate := await(t, owner, notifications.SourceGate, 1).Items[0]
		waitMail := func(what string, n int) {
			t.Helper()
			deadline := time.Now().Add(30 * time.Second)
			for len(subjects()) < n {
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d mails, want %d: %v", what, len(subjects()), n, subjects())
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		waitMail("the gate's mail", 1)
		if got := subjects(); len(got) != 1 || got[0] != gate.Title {
			t.Fatalf("mailed: %v, want the gate's %q", got, gate.Title)
		}

		// The member asks for everything: twenty-five mentions make twenty
		// mails (the hourly bound), the rest wait in the inbox.
		fixture.Want(t, member.Do("PUT", "/api/notifications/settings", obj{"mail": "all"}), http.StatusOK)
		_, working := f.BlockedProject(t, owner, "Talky")
		for i := range 25 {
			fixture.Want(t, owner.Do("POST", "/api/agent/messages", obj{"task_id": working, "text": fmt.Sprintf("@%s note %d", strings.Split(member.Email, "@")[0], i)}),
				http.StatusCreated)
		}
		await(t, member, notifications.SourceMention, 25)
		waitMail("the mentions' mails", 21)
		time.Sleep(time.Second)
		if n := len(subjects()); n != 21 {
			t.Fatalf("%d mails, want 21 (the gate's and 20 mentions)", n)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM notifications WHERE mailed"); n != 21 {
			t.Fatalf("%d notifications marked mailed", n)
		}
	})
}
