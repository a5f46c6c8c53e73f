package mail

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/text"
)

// Template keys.
const (
	TemplateInvite = "invite"
	TemplateReset  = "reset"
	TemplateVerify = "verify"
	TemplateMagic  = "magic"
	// TemplateNotification mails a notification to a person who asked for
	// it (their notification settings).
	TemplateNotification = "notification"
)

// MailTemplate is a transactional mail template: plain text with {{variable}}
// placeholders.
type MailTemplate struct {
	Key       string     `json:"key"`
	Subject   string     `json:"subject"`
	Body      string     `json:"body"`
	Variables []string   `json:"variables" doc:"The placeholders the subject and body use"`
	Allowed   []string   `json:"allowed_variables" doc:"The placeholders this mail fills in"`
	Custom    bool       `json:"custom" doc:"Edited (false: the built-in default)"`
	UpdatedBy *string    `json:"updated_by" nullable:"true" format:"uuid"`
	UpdatedAt *time.Time `json:"updated_at" nullable:"true"`
}

type builtin struct {
	subject, body string
	vars          []string
}

// defaults are the built-in templates; an edited one replaces its default.
var defaults = map[string]builtin{
	TemplateInvite: {
		subject: "{{inviter}} invited you to {{organization}} on Slipway",
		body: "Hello,\n\n{{inviter}} invited you to join {{organization}} on Slipway as {{role}}.\n\n" +
			"Accept the invite (signed in with this address) here:\n{{link}}\n\nThe link works once and expires on {{expires}}.\n",
		vars: []string{"inviter", "organization", "role", "link", "expires"},
	},
	TemplateReset: {
		subject: "Reset your Slipway password",
		body: "Hello {{name}},\n\nSomeone (we hope you) asked to reset the password of your Slipway account.\n" +
			"Choose a new one here:\n{{link}}\n\nThe link works once and expires on {{expires}}. " +
			"If you did not ask for it, ignore this mail: your password stays as it is.\n",
		vars: []string{"name", "link", "expires"},
	},
	TemplateVerify: {
		subject: "Confirm your address for Slipway",
		body:    "Hello {{name}},\n\nConfirm that this address is yours by opening:\n{{link}}\n\nThe link works once and expires on {{expires}}.\n",
		vars:    []string{"name", "link", "expires"},
	},
	TemplateNotification: {
		subject: "{{title}}",
		body: "Hello {{name}},\n\n{{title}}\n\n{{body}}\n\nOpen it in Slipway: {{link}}\n\n" +
			"You get this mail because of your notification settings (Inbox, Notifications).\n",
		vars: []string{"name", "title", "body", "link"},
	},
	TemplateMagic: {
		subject: "Your Slipway sign-in link",
		body: "Hello {{name}},\n\nSign in to Slipway by opening:\n{{link}}\n\nOr type this code into the window that is waiting: {{code}}\n\n" +
			"The link and the code work once, until {{expires}}. If you did not ask to sign in, ignore this mail.\n",
		vars: []string{"name", "link", "code", "expires"},
	},
}

// Templates holds the mail templates.
type Templates struct {
	db    *db.DB
	clock clock.Clock
}

var placeholder = regexp.MustCompile(`\{\{\s*([a-z_]+)\s*\}\}`)

// placeholders lists the distinct {{variables}} of texts, sorted.
func placeholders(texts ...string) []string {
	seen := map[string]bool{}
	for _, t := range texts {
		for _, m := range placeholder.FindAllStringSubmatch(t, -1) {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func render(t string, vars map[string]string) string {
	return placeholder.ReplaceAllStringFunc(t, func(m string) string {
		return vars[placeholder.FindStringSubmatch(m)[1]]
	})
}

func (ts *Templates) get(ctx context.Context, q db.Queryer, key string) (*MailTemplate, error) {
	b, ok := defaults[key]
	if !ok {
		return nil, apperr.NotFound("template")
	}
	t := &MailTemplate{Key: key, Subject: b.subject, Body: b.body, Allowed: b.vars}
	if err := readTemplate(ctx, q, t); err != nil {
		return nil, err
	}
	t.Variables = placeholders(t.Subject, t.Body)
	return t, nil
}

// List is every template, by key.
func (ts *Templates) List(ctx context.Context) ([]MailTemplate, error) {
	keys := make([]string, 0, len(defaults))
	for k := range defaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]MailTemplate, 0, len(keys))
	for _, k := range keys {
		t, err := ts.get(ctx, ts.db.R, k)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// MailTemplateInput edits a template.
type MailTemplateInput struct {
	Subject string `json:"subject" maxLength:"300"`
	Body    string `json:"body" maxLength:"20000"`
	Reason  string `json:"reason,omitempty" maxLength:"500" doc:"Why, for the audit log"`
}

// Put replaces a template (instance admin): placeholders must be ones the
// mail fills in; the change and its reason go to the audit log.
func (ts *Templates) Put(ctx context.Context, u *actor.User, key string, in MailTemplateInput) (*MailTemplate, error) {
	b, ok := defaults[key]
	if !ok {
		return nil, apperr.NotFound("template")
	}
	subject, err := text.Name("subject", in.Subject, 300)
	if err != nil {
		return nil, err
	}
	body := strings.TrimSpace(in.Body)
	if body == "" {
		return nil, apperr.BadRequest("body must not be empty")
	}
	for _, line := range strings.Split(strings.ReplaceAll(body, "\t", " "), "\n") {
		if err := text.CheckName("body", strings.TrimSuffix(line, "\r")); err != nil {
			return nil, err
		}
	}
	for _, v := range placeholders(subject, body) {
		if !slices.Contains(b.vars, v) {
			return nil, apperr.BadRequest("{{%s}} is not filled in by this mail; it knows %s", v, strings.Join(b.vars, ", "))
		}
	}
	reason := text.StripControls(strings.TrimSpace(in.Reason))
	var out *MailTemplate
	err = ts.db.Tx(ctx, func(tx *db.Tx) error {
		before, err := ts.get(ctx, tx, key)
		if err != nil {
			return err
		}
		now := ts.clock.Now()
		if err := putTemplate(ctx, tx, key, subject, body, u.ID, now); err != nil {
			return err
		}
		if out, err = ts.get(ctx, tx, key); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "template.update", "template", key,
			map[string]string{"subject": before.Subject, "body": before.Body},
			map[string]string{"subject": out.Subject, "body": out.Body, "reason": reason})
	})
	return out, err
}
