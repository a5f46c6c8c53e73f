package triggers_test

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/mailbox/mailtest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/triggers"
)

func init() {
	// Pollers in the tests' servers look for mailboxes often and renew
	// their leases soon.
	triggers.MailScanEvery, triggers.MailIdle, triggers.MailRetryAfter = 200*time.Millisecond, 2*time.Second, 500*time.Millisecond
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEmailTriggers, on both databases, against a real IMAP server and a
// real SMTP server delivering into it (IMAP4rev1 without MOVE on SQLite,
// IMAP4rev2 on PostgreSQL, where two replicas poll): a message to a
// workflow's plus address starts one run with its text, headers and
// attachment (a file of the run's code node), and the run's imap_ack moves
// it; six messages make six runs, each once; mail to an unknown alias
// lands in the unrouted folder, listed for admins, and create-alias routes
// it to a workflow; an unrouted message can be deleted; a legacy email
// trigger takes the mailbox's other mail and migrates to a plus address.
func TestEmailTriggers(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		mail := mailtest.Start(t, "support@example.test", "imap-pw-"+ids.New()[:12], e == db.Postgres)
		f := &webhookFixture{API: fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")}
		f.App.Remember(mail.Password)
		f.project = f.Project(t, f.Owner, "Mail")
		apps := []*apitest.App{f.App}
		if e == db.Postgres {
			apps = append(apps, f.App.Replica(t, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true"))
		}
		host, port, _ := net.SplitHostPort(mail.IMAPAddr)
		portN, _ := strconv.Atoi(port)
		r := f.Owner.Do("POST", "/api/resources", apiObj{"kind": "imap", "name": "Support mailbox", "secret": mail.Password,
			"config": apiObj{"host": host, "port": portN, "security": "none", "username": mail.User}})
		fixture.Want(t, r, http.StatusCreated)
		box := r.Map(t)["id"].(string)
		r = f.Owner.Do("POST", "/api/resources", apiObj{"kind": "http", "name": "Not mail", "config": apiObj{"base_url": "http://127.0.0.1:9"}})
		fixture.Want(t, r, http.StatusCreated)
		notMail := r.Map(t)["id"].(string)

		// The billing desk reads the attachment, moves the mail to Done and
		// answers with what it saw.
		billing := f.createWorkflow(t, []apiObj{
			{"key": "read", "kind": "code", "config": apiObj{"language": "sh",
				"source": `printf '{"attachment": "%s"}\n' "$(cat "$SLIPWAY_FILES/attachments/1-report.txt")"`}},
			{"key": "ack", "kind": "imap_ack", "config": apiObj{"action": "move", "folder": "Done"}},
			{"key": "shape", "kind": "transform", "config": apiObj{"mapping": apiObj{"subject": "input.subject", "from": "input.from",
				"text": "input.text", "attachment": "nodes.read.output.result.attachment", "size": "input.attachments[0].size"}}},
			{"key": "end", "kind": "end", "config": apiObj{"output": "nodes.shape.output"}},
		}, []apiObj{{"source": "read", "target": "ack"}, {"source": "ack", "target": "shape"}, {"source": "shape", "target": "end"}})
		sales := f.createWorkflow(t, []apiObj{
			{"key": "ack", "kind": "imap_ack", "config": apiObj{"action": "flag"}},
			{"key": "end", "kind": "end", "config": apiObj{"output": "input.subject"}},
		}, []apiObj{{"source": "ack", "target": "end"}})
		runsOf := func(wf string) int {
			return f.App.Count(t, "SELECT COUNT(*) FROM workflow_runs WHERE workflow_id = $1", wf)
		}

		// Creating: the plus address once made; bad configurations refused.
		r = f.Owner.Do("POST", "/api/workflows/"+billing+"/triggers", apiObj{"kind": "email_plus_address", "config": apiObj{"resource_id": box, "alias": "Billing"}})
		fixture.Want(t, r, http.StatusCreated)
		tr := r.Map(t)
		trigger := tr["id"].(string)
		if tr["email_address"] != "support+billing@example.test" || tr["config"].(map[string]any)["alias"] != "billing" {
			t.Fatalf("the email trigger: %s", r.Body)
		}
		for _, bad := range []struct {
			cfg    apiObj
			status int
			frag   string
		}{
			{apiObj{"resource_id": box, "alias": "billing"}, http.StatusConflict, "taken"},
			{apiObj{"resource_id": box, "alias": "no spaces!"}, http.StatusBadRequest, "alias"},
			{apiObj{"resource_id": notMail, "alias": "x"}, http.StatusBadRequest, "not imap"},
			{apiObj{"resource_id": ids.New()}, http.StatusBadRequest, "no imap resource"},
			{apiObj{"alias": "x"}, http.StatusBadRequest, "resource_id"},
			{apiObj{"resource_id": box, "cron": "@daily"}, http.StatusBadRequest, "config"},
		} {
			fixture.WantError(t, f.Owner.Do("POST", "/api/workflows/"+sales+"/triggers", apiObj{"kind": "email_plus_address", "config": bad.cfg}),
				bad.status, string(map[int]string{400: "bad_request", 409: "conflict"}[bad.status]), bad.frag)
		}
		// The alias by trigger: 404 for another kind, an unknown id and
		// another workspace's caller.
		r = f.Owner.Do("GET", "/api/workflow_triggers/"+trigger+"/email_alias", nil)
		fixture.Want(t, r, http.StatusOK)
		if a := r.Map(t); a["alias"] != "billing" || a["address"] != "support+billing@example.test" || a["resource_id"] != box || a["workflow_id"] != billing {
			t.Fatalf("the alias: %s", r.Body)
		}
		hook, _ := f.trigger(t, sales, apiObj{"kind": "webhook"})
		fixture.WantError(t, f.Owner.Do("GET", "/api/workflow_triggers/"+hook.ID+"/email_alias", nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, f.Owner.Do("GET", "/api/workflow_triggers/"+ids.New()+"/email_alias", nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, f.Outsider.Do("GET", "/api/workflow_triggers/"+trigger+"/email_alias", nil), http.StatusNotFound, "not_found")
		ws := f.Owner.DefaultWorkspace()
		fixture.WantError(t, f.Outsider.Do("GET", "/api/workspaces/"+ws+"/email_aliases", nil), http.StatusForbidden, "forbidden")

		// A message with an attachment: one run that sees it all; the mail
		// moved to Done by the run's imap_ack.
		report := []byte("quarterly numbers\n")
		mail.Send("ann@customer.test", []string{"support+billing@example.test"},
			mailtest.MailWithAttachment("Ann <ann@customer.test>", "support+billing@example.test", "Invoice 42", "m1@customer.test",
				"Please check the invoice.", "report.txt", report))
		waitFor(t, "the billing run", func() bool { return runsOf(billing) == 1 })
		run := f.lastRun(t, billing)
		out := run.Output.(map[string]any)
		if run.Status != "succeeded" || out["subject"] != "Invoice 42" || out["from"] != "ann@customer.test" ||
			!strings.Contains(out["text"].(string), "Please check the invoice.") || out["attachment"] != "quarterly numbers" ||
			out["size"] != float64(len(report)) {
			t.Fatalf("the billing run: %s %+v (%s)", run.Status, run.Output, run.Error)
		}
		waitFor(t, "the mail in Done", func() bool { return len(mail.Folder("Done")) == 1 && len(mail.Folder("INBOX")) == 0 })

		// One replica holds the mailbox's poller.
		if n := f.App.Count(t, "SELECT COUNT(*) FROM email_mailboxes WHERE resource_id = $1 AND holder IS NOT NULL", box); n != 1 {
			t.Fatalf("%d pollers hold the mailbox", n)
		}
		// Six more at once, while every replica polls (their leases lapse
		// at once): six runs, each message once.
		for _, a := range apps {
			a.Server.Services.Triggers.SetMailLease(time.Nanosecond)
		}
		for _, a := range apps[1:] {
			waitFor(t, "the replica's poller", func() bool { return strings.Contains(a.Logs.String(), "polling a mailbox") })
		}
		for i := range 6 {
			mail.Send("bob@customer.test", []string{"support+billing@example.test"},
				mailtest.MailWithAttachment("bob@customer.test", "support+billing@example.test", fmt.Sprintf("Batch %d", i), fmt.Sprintf("b%d@customer.test", i),
					"more", "report.txt", report))
		}
		waitFor(t, "seven billing runs", func() bool { return runsOf(billing) >= 7 })
		waitFor(t, "seven mails in Done", func() bool { return len(mail.Folder("Done")) == 7 })
		time.Sleep(2 * time.Second) // a second replica's late delivery would show now
		if n := runsOf(billing); n != 7 {
			t.Fatalf("%d billing runs for seven messages", n)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM email_messages WHERE outcome = 'routed' AND runs = 1"); n != 7 {
			t.Fatalf("%d messages recorded routed", n)
		}
		for _, a := range apps {
			a.Server.Services.Triggers.SetMailLease(0)
		}

		// An unknown alias: unrouted, listed for admins only.
		mail.Send("cy@customer.test", []string{"support+sales@example.test"}, mailtest.Mail("cy@customer.test", "support+sales@example.test",
			"Pricing?", "s1@customer.test", "How much?"))
		waitFor(t, "the unrouted mail", func() bool { return len(mail.Folder("Unrouted")) == 1 })
		member := f.Member(t, f.Owner, "Mo Member")
		fixture.WantError(t, member.Do("GET", "/api/workflows/email-unrouted", nil), http.StatusForbidden, "forbidden")
		var unrouted struct {
			Items []struct {
				UID        uint32   `json:"uid"`
				ResourceID string   `json:"resource_id"`
				Subject    string   `json:"subject"`
				Alias      string   `json:"alias"`
				To         []string `json:"to"`
			} `json:"items"`
			Errors []any `json:"errors"`
		}
		r = f.Owner.Do("GET", "/api/workflows/email-unrouted", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &unrouted)
		if len(unrouted.Items) != 1 || unrouted.Items[0].Subject != "Pricing?" || unrouted.Items[0].Alias != "sales" ||
			unrouted.Items[0].ResourceID != box || len(unrouted.Errors) != 0 {
			t.Fatalf("the unrouted list: %s", r.Body)
		}
		uid := unrouted.Items[0].UID
		// Another workspace's admin sees none of it.
		if r := f.Outsider.Do("GET", "/api/workflows/email-unrouted", nil); r.Status != http.StatusOK || strings.Contains(string(r.Body), "Pricing") {
			t.Fatalf("another workspace's unrouted list: %d %s", r.Status, r.Body)
		}

		// create-alias: the alias it was sent to, for the sales workflow;
		// the mail goes back to the inbox and starts the sales run, which
		// flags it.
		path := fmt.Sprintf("/api/workflows/email-unrouted/%d/create-alias", uid)
		fixture.WantError(t, member.Do("POST", path, apiObj{"workflow_id": sales}), http.StatusForbidden, "forbidden")
		fixture.WantError(t, f.Owner.Do("POST", path, apiObj{"workflow_id": ids.New()}), http.StatusBadRequest, "bad_request", "workflow_id")
		fixture.WantError(t, f.Owner.Do("POST", "/api/workflows/email-unrouted/999/create-alias", apiObj{"workflow_id": sales}), http.StatusNotFound, "not_found")
		r = f.Owner.Do("POST", path, apiObj{"workflow_id": sales})
		fixture.Want(t, r, http.StatusCreated)
		if a := r.Map(t)["alias"].(map[string]any); a["alias"] != "sales" || a["address"] != "support+sales@example.test" || a["workflow_id"] != sales {
			t.Fatalf("create-alias: %s", r.Body)
		}
		waitFor(t, "the sales run", func() bool { return runsOf(sales) == 1 })
		if run := f.lastRun(t, sales); run.Status != "succeeded" || run.Output != "Pricing?" {
			t.Fatalf("the sales run: %+v", run)
		}
		waitFor(t, "the flagged mail", func() bool {
			in := mail.Folder("INBOX")
			return len(in) == 1 && in[0].Flagged() && in[0].Subject == "Pricing?"
		})
		if n := len(mail.Folder("Unrouted")); n != 0 {
			t.Fatalf("%d mails left unrouted", n)
		}

		// Delete an unrouted message.
		mail.Send("dee@customer.test", []string{"support+nobody@example.test"}, mailtest.Mail("dee@customer.test", "support+nobody@example.test",
			"Spam", "x1@customer.test", "buy"))
		waitFor(t, "the second unrouted mail", func() bool { return len(mail.Folder("Unrouted")) == 1 })
		uid = mail.Folder("Unrouted")[0].UID
		fixture.WantError(t, member.Do("DELETE", fmt.Sprintf("/api/workflows/email-unrouted/%d", uid), nil), http.StatusForbidden, "forbidden")
		r = f.Owner.Do("DELETE", fmt.Sprintf("/api/workflows/email-unrouted/%d?resource_id=%s", uid, box), nil)
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["deleted"] != true || len(mail.Folder("Unrouted")) != 0 {
			t.Fatalf("delete: %s", r.Body)
		}
		fixture.WantError(t, f.Owner.Do("DELETE", fmt.Sprintf("/api/workflows/email-unrouted/%d", uid), nil), http.StatusNotFound, "not_found")

		// A legacy email trigger takes the mailbox's other mail, then
		// migrates to a plus address of its own.
		legacyWF := f.createWorkflow(t, []apiObj{{"key": "end", "kind": "end", "config": apiObj{"output": "input.subject"}}}, nil)
		legacy, _ := f.trigger(t, legacyWF, apiObj{"kind": "email", "config": apiObj{"resource_id": box}})
		fixture.WantError(t, f.Owner.Do("GET", "/api/workflow_triggers/"+legacy.ID+"/email_alias", nil), http.StatusNotFound, "not_found")
		mail.Send("eve@customer.test", []string{"support@example.test"}, mailtest.Mail("eve@customer.test", "support@example.test",
			"Hello", "l1@customer.test", "hi"))
		waitFor(t, "the legacy run", func() bool { return runsOf(legacyWF) == 1 })
		migrate := "/api/workflows/triggers/" + legacy.ID + "/migrate-email"
		fixture.WantError(t, member.Do("POST", migrate, nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, f.Owner.Do("POST", "/api/workflows/triggers/"+hook.ID+"/migrate-email", nil), http.StatusBadRequest, "bad_request", "legacy")
		fixture.WantError(t, f.Outsider.Do("POST", migrate, nil), http.StatusNotFound, "not_found")
		r = f.Owner.Do("POST", migrate, nil)
		fixture.Want(t, r, http.StatusOK)
		m := r.Map(t)
		alias, _ := m["config"].(map[string]any)["alias"].(string)
		if m["kind"] != "email_plus_address" || alias == "" || m["email_address"] != "support+"+alias+"@example.test" {
			t.Fatalf("migrated: %s", r.Body)
		}
		fixture.WantError(t, f.Owner.Do("POST", migrate, nil), http.StatusBadRequest, "bad_request", "legacy")
		mail.Send("eve@customer.test", []string{"support+" + alias + "@example.test"}, mailtest.Mail("eve@customer.test",
			"support+"+alias+"@example.test", "Again", "l2@customer.test", "hi"))
		waitFor(t, "the migrated trigger's run", func() bool { return runsOf(legacyWF) == 2 })

		// The workspace's aliases, newest first.
		var page struct {
			Items []struct {
				Alias string `json:"alias"`
			} `json:"items"`
			Total int `json:"total"`
		}
		r = f.Owner.Do("GET", "/api/workspaces/"+ws+"/email_aliases", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &page)
		var got []string
		for _, a := range page.Items {
			got = append(got, a.Alias)
		}
		if page.Total != 3 || !slices.Equal(got, []string{alias, "sales", "billing"}) {
			t.Fatalf("the aliases: %s", r.Body)
		}
		r = f.Owner.Do("GET", "/api/workspaces/"+ws+"/email_aliases?limit=1&offset=1", nil)
		page.Items = nil
		r.JSON(t, &page)
		if len(page.Items) != 1 || page.Items[0].Alias != "sales" {
			t.Fatalf("a page of aliases: %s", r.Body)
		}
		// Another workspace's trigger ids answer like unknown ones.
		n := 0
		emailTrigger := func(kind string) func(*testing.T, *apitest.Client) string {
			return func(t *testing.T, c *apitest.Client) string {
				n++
				cfg := apiObj{"resource_id": box}
				if kind == "email_plus_address" {
					cfg["alias"] = fmt.Sprintf("tenancy-%d", n)
				}
				r := c.Do("POST", "/api/workflows/"+sales+"/triggers", apiObj{"kind": kind, "config": cfg})
				fixture.Want(t, r, http.StatusCreated)
				return r.Map(t)["id"].(string)
			}
		}
		apitest.CheckTenancy(t, f.Owner, f.Outsider, []apitest.TenancyCase{
			{Name: "email alias", Method: "GET", Path: "/api/workflow_triggers/{id}/email_alias", Create: emailTrigger("email_plus_address")},
			{Name: "migrate email", Method: "POST", Path: "/api/workflows/triggers/{id}/migrate-email", Create: emailTrigger("email")},
			{Name: "change an email trigger", Method: "PATCH", Path: "/api/workflows/triggers/{id}", Body: apiObj{"enabled": false},
				Create: emailTrigger("email_plus_address")},
		})
		// A deleted trigger takes its alias with it.
		gone := emailTrigger("email_plus_address")(t, f.Owner)
		fixture.Want(t, f.Owner.Do("DELETE", "/api/workflows/triggers/"+gone, nil), http.StatusOK)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM email_aliases WHERE trigger_id = $1", gone); n != 0 {
			t.Fatalf("a deleted trigger's alias is left: %d", n)
		}

		// No password in any answer or log line (the app checks its logs).
		if strings.Contains(string(f.Owner.Do("GET", "/api/resources/"+box, nil).Body), mail.Password) {
			t.Fatal("the resource shows its password")
		}
	})
}

type runView struct {
	Status string `json:"status"`
	Output any    `json:"output"`
	Error  string `json:"error"`
}

// lastRun is a workflow's newest run, once it has ended.
func (f *webhookFixture) lastRun(t *testing.T, workflow string) runView {
	t.Helper()
	var id string
	if err := f.App.DB.R.QueryRow("SELECT id FROM workflow_runs WHERE workflow_id = $1 ORDER BY created_at DESC LIMIT 1", workflow).Scan(&id); err != nil {
		t.Fatal(err)
	}
	var v runView
	waitFor(t, "the run's end", func() bool {
		v = runView{}
		f.Owner.Do("GET", "/api/workflows/runs/"+id, nil).JSON(t, &v)
		return v.Status == "succeeded" || v.Status == "failed" || v.Status == "cancelled"
	})
	return v
}
