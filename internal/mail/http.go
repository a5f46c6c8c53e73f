package mail

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type keyInput struct {
	Key  string `path:"key" maxLength:"60"`
	Body MailTemplateInput
}

// OutboxMail is a mail of the outbox as the admin sees it.
type OutboxMail struct {
	ID          string     `json:"id"`
	To          string     `json:"to"`
	TemplateKey string     `json:"template_key"`
	Subject     string     `json:"subject"`
	Body        *string    `json:"body" nullable:"true" doc:"Only without an SMTP server (development): the dev outbox"`
	Status      string     `json:"status" enum:"queued,sent,failed"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error"`
	CreatedAt   time.Time  `json:"created_at"`
	SentAt      *time.Time `json:"sent_at" nullable:"true"`
}

// Recent lists the newest mails (bodies only without an SMTP server).
func (o *Outbox) Recent(ctx context.Context, limit int) ([]OutboxMail, error) {
	mails, sealed, err := recentMail(ctx, o.db.R, limit)
	if err != nil {
		return nil, err
	}
	if o.smtp.Host == "" {
		for i := range mails {
			if body, err := o.sealer.Open(sealed[i], sealContext); err == nil {
				mails[i].Body = &body
			}
		}
	}
	return mails, nil
}

// Register mounts the instance admin's mail operations (under
// /api/admin/, behind the admin layer).
func Register(api huma.API, o *Outbox) {
	ops := httpx.Operations{Tags: []string{"Admin"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Admin(api)}}
	huma.Register(api, ops.Op("get_api_admin_templates", http.MethodGet, "/api/admin/templates", "Transactional mail templates with their placeholders"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]MailTemplate], error) {
			return httpx.Reply(o.templates.List(ctx))
		})
	put := ops.Op("put_api_admin_templates_key", http.MethodPut, "/api/admin/templates/{key}", "Replace a mail template")
	put.Description = "Placeholders are {{variable}}; one the mail does not fill in is 400. The change and its reason go to the audit log."
	huma.Register(api, put, func(ctx context.Context, in *keyInput) (*httpx.Out[*MailTemplate], error) {
		u, _ := actor.UserFrom(ctx)
		return httpx.Reply(o.templates.Put(ctx, u, in.Key, in.Body))
	})
	huma.Register(api, ops.Op("get_api_admin_mail_outbox", http.MethodGet, "/api/admin/mail/outbox", "The newest mails and how their delivery goes"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]OutboxMail], error) {
			return httpx.Reply(o.Recent(ctx, 100))
		})
}
