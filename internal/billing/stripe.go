package billing

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// ProviderEvent is a payment provider's event, verified and read into what
// billing applies.
type ProviderEvent struct {
	ID       string
	Provider string
	Type     string
	// ObjectID is what the event is about (a subscription's id); events
	// about one object apply in the order of Occurred.
	ObjectID string
	Occurred time.Time
	Payload  []byte
	// Subscription is set for the subscription events billing applies.
	Subscription *ProviderSubscription
}

// ProviderSubscription is a subscription as its provider describes it.
type ProviderSubscription struct {
	ID             string
	CustomerID     string
	Status         string // active, trialing, past_due, canceled, incomplete, unpaid (incomplete_expired and paused map to canceled and past_due)
	PriceID        string
	OrganizationID string // from the metadata our checkout sets; "" when absent
}

// Stripe verifies and reads Stripe's webhook events.
type Stripe struct {
	// WebhookSecret signs the events (STRIPE_WEBHOOK_SECRET, whsec_…).
	WebhookSecret string
}

// stripeTolerance is how old a signed event may be: Stripe's default.
const stripeTolerance = 5 * time.Minute

// Verify checks the Stripe-Signature header over the raw body (HMAC-SHA256
// with the webhook secret, within the tolerance) and reads the event.
func (p Stripe) Verify(payload []byte, signature string) (*ProviderEvent, error) {
	if err := webhook.ValidatePayloadWithTolerance(payload, signature, p.WebhookSecret, stripeTolerance); err != nil {
		return nil, fmt.Errorf("the Stripe-Signature does not verify: %w", err)
	}
	return p.Parse(payload)
}

// Parse reads an event verified before (a stored one, retried).
func (Stripe) Parse(payload []byte) (*ProviderEvent, error) {
	var ev stripe.Event
	if err := json.Unmarshal(payload, &ev); err != nil || ev.ID == "" {
		return nil, fmt.Errorf("the body is not a Stripe event")
	}
	out := &ProviderEvent{ID: ev.ID, Provider: "stripe", Type: string(ev.Type), Occurred: time.Unix(ev.Created, 0).UTC(), Payload: payload}
	if ev.Data != nil && len(ev.Data.Raw) > 0 {
		var obj struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(ev.Data.Raw, &obj)
		out.ObjectID = obj.ID
	}
	switch ev.Type {
	case "customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted",
		"customer.subscription.paused", "customer.subscription.resumed":
		var sub stripe.Subscription
		if err := json.Unmarshal(ev.Data.Raw, &sub); err != nil {
			return nil, fmt.Errorf("the event's subscription does not read: %w", err)
		}
		s := &ProviderSubscription{ID: sub.ID, Status: stripeStatus(sub.Status), OrganizationID: sub.Metadata["organization_id"]}
		if sub.Customer != nil {
			s.CustomerID = sub.Customer.ID
		}
		if sub.Items != nil && len(sub.Items.Data) > 0 && sub.Items.Data[0].Price != nil {
			s.PriceID = sub.Items.Data[0].Price.ID
		}
		if ev.Type == "customer.subscription.deleted" {
			s.Status = "canceled"
		}
		out.Subscription = s
	}
	return out, nil
}

// stripeStatus maps Stripe's subscription statuses onto ours.
func stripeStatus(s stripe.SubscriptionStatus) string {
	switch s {
	case stripe.SubscriptionStatusActive, stripe.SubscriptionStatusTrialing, stripe.SubscriptionStatusPastDue,
		stripe.SubscriptionStatusCanceled, stripe.SubscriptionStatusIncomplete, stripe.SubscriptionStatusUnpaid:
		return string(s)
	case stripe.SubscriptionStatusPaused:
		return "past_due"
	}
	return "canceled" // incomplete_expired, and anything newer: it entitles nothing
}
