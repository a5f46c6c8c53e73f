package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
	// Purchase is set for a marketplace purchase's events (the metadata
	// its checkout set): billing hands them to the purchases.
	Purchase *ProviderPurchase
}

// Purchase event kinds.
const (
	PurchasePaid    = "paid"    // the checkout was paid
	PurchaseRenewed = "renewed" // a subscription's next period was paid
	PurchaseEnded   = "ended"   // the subscription ended at the provider
)

// PurchaseKey is the metadata key a marketplace checkout sets to its
// purchase's id (on the session and on the subscription it makes).
const PurchaseKey = "slipway_purchase"

// ProviderPurchase is a marketplace purchase's event.
type ProviderPurchase struct {
	PurchaseID     string
	Kind           string
	SubscriptionID string     // a subscription's id at the provider
	InvoiceID      string     // renewed: the paid invoice
	PeriodStart    *time.Time // renewed: the period paid
	PeriodEnd      *time.Time
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
	if p, err := purchaseEvent(ev); err != nil || p != nil {
		out.Purchase = p
		return out, err
	}
	switch ev.Type {
	case "customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted",
		"customer.subscription.paused", "customer.subscription.resumed":
		var sub stripe.Subscription
		if err := json.Unmarshal(ev.Data.Raw, &sub); err != nil {
			return nil, fmt.Errorf("the event's subscription does not read: %w", err)
		}
		s := providerSubscription(&sub)
		if ev.Type == "customer.subscription.deleted" {
			s.Status = "canceled"
		}
		out.Subscription = s
	}
	return out, nil
}

// purchaseEvent reads a marketplace purchase's event (nil when the event
// is not one): a checkout paid, a subscription's cycle paid, a
// subscription ended.
func purchaseEvent(ev stripe.Event) (*ProviderPurchase, error) {
	if ev.Data == nil || len(ev.Data.Raw) == 0 {
		return nil, nil
	}
	switch ev.Type {
	case "checkout.session.completed", "checkout.session.async_payment_succeeded":
		var sess stripe.CheckoutSession
		if err := json.Unmarshal(ev.Data.Raw, &sess); err != nil {
			return nil, fmt.Errorf("the event's checkout session does not read: %w", err)
		}
		id := sess.Metadata[PurchaseKey]
		if id == "" || (sess.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid && sess.PaymentStatus != stripe.CheckoutSessionPaymentStatusNoPaymentRequired) {
			return nil, nil
		}
		p := &ProviderPurchase{PurchaseID: id, Kind: PurchasePaid}
		if sess.Subscription != nil {
			p.SubscriptionID = sess.Subscription.ID
		}
		return p, nil
	case "invoice.paid":
		var inv stripe.Invoice
		if err := json.Unmarshal(ev.Data.Raw, &inv); err != nil {
			return nil, fmt.Errorf("the event's invoice does not read: %w", err)
		}
		if inv.BillingReason != stripe.InvoiceBillingReasonSubscriptionCycle || inv.Parent == nil || inv.Parent.SubscriptionDetails == nil {
			return nil, nil
		}
		id := inv.Parent.SubscriptionDetails.Metadata[PurchaseKey]
		if id == "" || inv.Lines == nil || len(inv.Lines.Data) == 0 || inv.Lines.Data[0].Period == nil {
			return nil, nil
		}
		start, end := time.Unix(inv.Lines.Data[0].Period.Start, 0).UTC(), time.Unix(inv.Lines.Data[0].Period.End, 0).UTC()
		p := &ProviderPurchase{PurchaseID: id, Kind: PurchaseRenewed, InvoiceID: inv.ID, PeriodStart: &start, PeriodEnd: &end}
		if inv.Parent.SubscriptionDetails.Subscription != nil {
			p.SubscriptionID = inv.Parent.SubscriptionDetails.Subscription.ID
		}
		return p, nil
	case "customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted",
		"customer.subscription.paused", "customer.subscription.resumed":
		var sub stripe.Subscription
		if err := json.Unmarshal(ev.Data.Raw, &sub); err != nil {
			return nil, fmt.Errorf("the event's subscription does not read: %w", err)
		}
		id := sub.Metadata[PurchaseKey]
		if id == "" {
			return nil, nil
		}
		if ev.Type != "customer.subscription.deleted" {
			// A marketplace subscription's other events change nothing
			// here (its invoices do): acknowledged, not an organization's.
			return &ProviderPurchase{PurchaseID: id, SubscriptionID: sub.ID}, nil
		}
		return &ProviderPurchase{PurchaseID: id, Kind: PurchaseEnded, SubscriptionID: sub.ID}, nil
	}
	return nil, nil
}

// providerSubscription reads a Stripe subscription.
func providerSubscription(sub *stripe.Subscription) *ProviderSubscription {
	s := &ProviderSubscription{ID: sub.ID, Status: stripeStatus(sub.Status), OrganizationID: sub.Metadata["organization_id"]}
	if sub.Customer != nil {
		s.CustomerID = sub.Customer.ID
	}
	if sub.Items != nil && len(sub.Items.Data) > 0 && sub.Items.Data[0].Price != nil {
		s.PriceID = sub.Items.Data[0].Price.ID
	}
	return s
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

// StripeAPI is Stripe's API as billing uses it: a plan's prices, an
// organization's customer, and the Checkout and Billing Portal sessions an
// owner is sent to (STRIPE_SECRET_KEY; STRIPE_API_BASE for a local double).
type StripeAPI struct {
	api *stripe.Client
}

// NewStripeAPI is Stripe's API with a secret key; base "" is Stripe's.
func NewStripeAPI(secretKey, base string) *StripeAPI {
	cfg := &stripe.BackendConfig{MaxNetworkRetries: stripe.Int64(1), LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
		HTTPClient: &http.Client{Timeout: 20 * time.Second}}
	if base != "" {
		cfg.URL = stripe.String(strings.TrimRight(base, "/"))
	}
	return &StripeAPI{api: stripe.NewClient(secretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))}
}

// productID is the Stripe product that holds a plan's prices.
func productID(planID string) string { return "slipway_plan_" + planID }

// CreatePrice makes a price for the plan's amount, currency and interval
// (a product per plan, made the first time), and returns its id. Calls
// with the same idempotency key ("" for none) make one price.
func (p *StripeAPI) CreatePrice(ctx context.Context, plan BillingPlan, idempotencyKey string) (string, error) {
	product := productID(plan.ID)
	if _, err := p.api.V1Products.Retrieve(ctx, product, nil); err != nil {
		var se *stripe.Error
		if !errors.As(err, &se) || se.HTTPStatusCode != http.StatusNotFound {
			return "", fmt.Errorf("stripe: reading product %s: %w", product, err)
		}
		if _, err := p.api.V1Products.Create(ctx, &stripe.ProductCreateParams{ID: stripe.String(product), Name: stripe.String(plan.Name),
			Metadata: map[string]string{"plan_id": plan.ID}}); err != nil && !isResourceExists(err) {
			return "", fmt.Errorf("stripe: creating product %s: %w", product, err)
		}
	}
	params := &stripe.PriceCreateParams{Product: stripe.String(product), Currency: stripe.String(strings.ToLower(plan.Currency)),
		UnitAmount: stripe.Int64(plan.AmountCents), Nickname: stripe.String(plan.Name), Metadata: map[string]string{"plan_id": plan.ID}}
	if plan.Interval == "month" || plan.Interval == "year" {
		params.Recurring = &stripe.PriceCreateRecurringParams{Interval: stripe.String(plan.Interval)}
	}
	if idempotencyKey != "" {
		params.SetIdempotencyKey(idempotencyKey)
	}
	price, err := p.api.V1Prices.Create(ctx, params)
	if err != nil {
		return "", fmt.Errorf("stripe: creating a price for plan %s: %w", plan.ID, err)
	}
	return price.ID, nil
}

// isResourceExists: a product made meanwhile by another call.
func isResourceExists(err error) bool {
	var se *stripe.Error
	return errors.As(err, &se) && se.Code == stripe.ErrorCodeResourceAlreadyExists
}

// ArchivePrice stops a price from being sold; subscriptions on it renew.
func (p *StripeAPI) ArchivePrice(ctx context.Context, id string) error {
	if _, err := p.api.V1Prices.Update(ctx, id, &stripe.PriceUpdateParams{Active: stripe.Bool(false)}); err != nil {
		return fmt.Errorf("stripe: archiving price %s: %w", id, err)
	}
	return nil
}

// CreateCustomer makes the organization's customer; one per organization
// (the organization's id keys the call).
func (p *StripeAPI) CreateCustomer(ctx context.Context, c ProviderCustomer) (string, error) {
	params := &stripe.CustomerCreateParams{Name: stripe.String(c.Name), Metadata: map[string]string{"organization_id": c.OrganizationID}}
	if c.Email != "" {
		params.Email = stripe.String(c.Email)
	}
	params.SetIdempotencyKey("slipway-customer-" + c.OrganizationID)
	cus, err := p.api.V1Customers.Create(ctx, params)
	if err != nil {
		return "", fmt.Errorf("stripe: creating the customer of organization %s: %w", c.OrganizationID, err)
	}
	return cus.ID, nil
}

// CheckoutURL opens a Checkout session that subscribes the customer to a
// price; the subscription it makes carries the organization's and the
// plan's ids, which its events bring back.
func (p *StripeAPI) CheckoutURL(ctx context.Context, c CheckoutRequest) (string, error) {
	meta := map[string]string{"organization_id": c.OrganizationID, "plan_id": c.PlanID}
	sess, err := p.api.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		Customer:          stripe.String(c.CustomerID),
		ClientReferenceID: stripe.String(c.OrganizationID),
		LineItems:         []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(c.PriceID), Quantity: stripe.Int64(1)}},
		SuccessURL:        stripe.String(c.SuccessURL),
		CancelURL:         stripe.String(c.CancelURL),
		Metadata:          meta,
		SubscriptionData:  &stripe.CheckoutSessionCreateSubscriptionDataParams{Metadata: meta},
	})
	if err != nil {
		return "", fmt.Errorf("stripe: opening a checkout for organization %s: %w", c.OrganizationID, err)
	}
	return sess.URL, nil
}

// PortalURL opens a Billing Portal session for the customer: payment
// methods, invoices, plan changes and cancellation, at Stripe.
func (p *StripeAPI) PortalURL(ctx context.Context, customerID, returnURL string) (string, error) {
	sess, err := p.api.V1BillingPortalSessions.Create(ctx, &stripe.BillingPortalSessionCreateParams{
		Customer: stripe.String(customerID), ReturnURL: stripe.String(returnURL)})
	if err != nil {
		return "", fmt.Errorf("stripe: opening the billing portal of customer %s: %w", customerID, err)
	}
	return sess.URL, nil
}

// Subscription reads a subscription as Stripe holds it now.
func (p *StripeAPI) Subscription(ctx context.Context, id string) (*ProviderSubscription, error) {
	sub, err := p.api.V1Subscriptions.Retrieve(ctx, id, nil)
	if err != nil {
		return nil, fmt.Errorf("stripe: reading subscription %s: %w", id, err)
	}
	return providerSubscription(sub), nil
}

// MarketCheckout is a marketplace purchase to pay at the provider.
type MarketCheckout struct {
	PurchaseID  string
	ItemName    string
	AmountMinor int64
	Currency    string
	Interval    string // once or month
	SuccessURL  string
	CancelURL   string
}

// MarketCheckoutURL opens a Checkout session for a marketplace purchase:
// a payment (once) or a monthly subscription at the item's price, both
// carrying the purchase's id, which the events bring back. Opening it
// again for the same purchase answers the same session (idempotent).
func (p *StripeAPI) MarketCheckoutURL(ctx context.Context, c MarketCheckout) (string, error) {
	meta := map[string]string{PurchaseKey: c.PurchaseID}
	item := &stripe.CheckoutSessionCreateLineItemParams{Quantity: stripe.Int64(1), PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
		Currency: stripe.String(strings.ToLower(c.Currency)), UnitAmount: stripe.Int64(c.AmountMinor),
		ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(c.ItemName)}}}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		ClientReferenceID: stripe.String(c.PurchaseID),
		LineItems:         []*stripe.CheckoutSessionCreateLineItemParams{item},
		SuccessURL:        stripe.String(c.SuccessURL),
		CancelURL:         stripe.String(c.CancelURL),
		Metadata:          meta,
	}
	if c.Interval == "month" {
		params.Mode = stripe.String(string(stripe.CheckoutSessionModeSubscription))
		item.PriceData.Recurring = &stripe.CheckoutSessionCreateLineItemPriceDataRecurringParams{Interval: stripe.String("month")}
		params.SubscriptionData = &stripe.CheckoutSessionCreateSubscriptionDataParams{Metadata: meta}
	} else {
		params.PaymentIntentData = &stripe.CheckoutSessionCreatePaymentIntentDataParams{Metadata: meta}
	}
	params.SetIdempotencyKey("slipway-purchase-" + c.PurchaseID)
	sess, err := p.api.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return "", fmt.Errorf("stripe: opening a checkout for purchase %s: %w", c.PurchaseID, err)
	}
	return sess.URL, nil
}

// CancelSubscription ends a marketplace subscription at the provider: at
// the end of its paid period, or now with the unused remainder prorated
// (Stripe credits it to the customer).
func (p *StripeAPI) CancelSubscription(ctx context.Context, id string, atPeriodEnd bool) error {
	var err error
	if atPeriodEnd {
		_, err = p.api.V1Subscriptions.Update(ctx, id, &stripe.SubscriptionUpdateParams{CancelAtPeriodEnd: stripe.Bool(true)})
	} else {
		_, err = p.api.V1Subscriptions.Cancel(ctx, id, &stripe.SubscriptionCancelParams{Prorate: stripe.Bool(true), InvoiceNow: stripe.Bool(true)})
	}
	if err != nil {
		return fmt.Errorf("stripe: cancelling subscription %s: %w", id, err)
	}
	return nil
}
