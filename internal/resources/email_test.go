package resources_test

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/workflows"
)

// TestEmailNode: notify_email through an smtp resource (a go-smtp server
// that keeps what it gets), with the run's secrets redacted from the mail;
// without a resource, through the instance's outbox, to members only.
func TestEmailNode(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		addr, signedIn, box := smtpInbox(t, "mailer", "smtp-pass-x7", nil, false)
		host, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		f.App.Remember("smtp-pass-x7", "deploy-key-9x8y7z")
		c := f.Owner
		fixture.Want(t, c.Do("POST", "/api/settings/env-vars", obj{"key": "DEPLOY_KEY", "value": "deploy-key-9x8y7z", "is_secret": true}), http.StatusOK)
		res := create(t, c, obj{"name": "Mail", "kind": "smtp", "secret": "smtp-pass-x7",
			"config": obj{"host": host, "port": port, "security": "none", "username": "mailer", "from": "bot@slipway.test"}})
		project := f.Project(t, c, "Mail")
		send := func(config obj) *workflows.RunView {
			t.Helper()
			r := c.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Mail " + strconv.Itoa(len(config)),
				"nodes": []obj{{"key": "m", "kind": "notify_email", "config": config}}})
			fixture.Want(t, r, http.StatusCreated)
			return f.RunWorkflow(t, c, r.Map(t)["id"].(string), obj{"n": 42, "cc": "ops@example.com"})
		}
		v := send(obj{"resource_id": res.ID, "to": []string{"dev@example.com", "{{ input.cc }}"}, "subject": "Build {{ input.n }} ✓",
			"body": "It passed.\nKey: {{ env.DEPLOY_KEY }}\n.\nEnd"})
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("run %s: %s", v.Status, v.Error)
		}
		box.mu.Lock()
		mail := append([]received(nil), box.mail...)
		box.mu.Unlock()
		if len(mail) != 2 || signedIn.Load() != 1 || mail[0].To != "dev@example.com" || mail[1].To != "ops@example.com" || mail[0].From != "bot@slipway.test" {
			t.Fatalf("received %+v (sign-ins %d)", mail, signedIn.Load())
		}
		data := mail[0].Data
		if !strings.Contains(data, "Subject: =?utf-8?q?Build_42_=E2=9C=93?=") || !strings.Contains(data, "Key: [REDACTED]\r\n.\r\nEnd") ||
			strings.Contains(data, "deploy-key-9x8y7z") {
			t.Fatalf("the message:\n%s", data)
		}

		// Without a resource: the instance's outbox, for members only.
		v = send(obj{"to": []string{"stranger@example.com"}, "subject": "Hi", "body": "x"})
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, "stranger@example.com is not a member of this workspace") {
			t.Fatalf("to a stranger: %s %q", v.Status, v.Error)
		}
		before := f.App.Count(t, "SELECT COUNT(*) FROM mail_outbox WHERE template_key = 'workflow'")
		v = send(obj{"to": []string{c.Email}, "subject": "Hi {{ input.n }}", "body": "to a member"})
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("to a member: %s %q", v.Status, v.Error)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM mail_outbox WHERE template_key = 'workflow' AND subject = 'Hi 42'"); n != before+1 {
			t.Fatalf("%d workflow mails queued", n)
		}
		v = send(obj{"resource_id": res.ID, "to": []string{"not an address"}, "subject": "x", "body": "x"})
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, `"not an address" is not an email address`) {
			t.Fatalf("a bad address: %s %q", v.Status, v.Error)
		}
	})
}
