package billing

import (
	"context"
	"errors"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Payments is a payment provider's side of billing: it verifies the
// provider's webhook deliveries into events (Stripe; nil: no provider).
type Payments interface {
	// Verify checks a delivery's signature and reads its event.
	Verify(payload []byte, signature string) (*ProviderEvent, error)
	// Parse reads an event stored after it was verified.
	Parse(payload []byte) (*ProviderEvent, error)
}

// MaxEventBytes bounds a webhook delivery (Stripe's events are a few KiB).
const MaxEventBytes = 256 << 10

// ErrNoProvider answers the webhook of an instance without a provider.
var ErrNoProvider = apperr.New(apperr.CodeNotFound, "no payment provider is configured")

// Receive takes a webhook delivery: verified, stored once by the event's
// id (a replay changes nothing and is acknowledged), then applied in the
// same transaction when it is next in its subscription's order. An event
// that cannot apply yet (its organization or price unknown) stays pending
// and is retried; an older event never overwrites a newer state.
func (s *Service) Receive(ctx context.Context, payload []byte, signature string) (string, error) {
	if s.payments == nil {
		return "", ErrNoProvider
	}
	ev, err := s.payments.Verify(payload, signature)
	if err != nil {
		return "", apperr.BadRequest("%v", err)
	}
	fetched := s.settleTie(ctx, ev)
	var outcome string
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		stored, err := insertEvent(ctx, tx, ev, s.clock.Now())
		if err != nil || !stored {
			outcome = "duplicate"
			return err
		}
		outcome, err = s.apply(ctx, tx, ev)
		return err
	})
	if fetched && err == nil && outcome == "applied" {
		outcome = "applied: the subscription as the provider holds it"
	}
	return outcome, err
}

// settleTie: the provider's event times are whole seconds, so an event
// made in the same second as the state held cannot be ordered by its time.
// Then the subscription is read from the provider (with an API key) and
// what it holds now applies, in place of either event's view; it reports
// whether it did. Without an API key, or when the read fails, the later
// delivery wins.
func (s *Service) settleTie(ctx context.Context, ev *ProviderEvent) bool {
	if ev.Subscription == nil || s.prices == nil {
		return false
	}
	held, err := subscriptionByProviderID(ctx, s.db.R, ev.Provider, ev.Subscription.ID)
	if err != nil || held == nil || held.stateAt == nil || !held.stateAt.Equal(ev.Occurred) || held.status == "canceled" {
		return false
	}
	now, err := s.prices.Subscription(ctx, ev.Subscription.ID)
	if err != nil {
		s.log.Warn("reading a subscription whose events tie failed; the later delivery applies", "subscription", ev.Subscription.ID, "err", err)
		return false
	}
	if now.OrganizationID == "" {
		now.OrganizationID = ev.Subscription.OrganizationID
	}
	ev.Subscription = now
	return true
}

// apply applies one stored event and marks it processed, unless it must
// wait (its outcome is then "pending: …" and it stays pending).
func (s *Service) apply(ctx context.Context, tx *db.Tx, ev *ProviderEvent) (string, error) {
	outcome := "ignored" // a type billing does not act on
	if ev.Purchase != nil {
		if s.purchases == nil || ev.Purchase.Kind == "" {
			outcome = "ignored: a marketplace subscription's change"
		} else {
			o, err := s.purchases.PurchaseEvent(ctx, tx, ev.Purchase)
			if err != nil {
				return "", err
			}
			outcome = o
		}
	}
	if ev.Subscription != nil {
		o, err := s.applySubscription(ctx, tx, ev)
		var wait *waitError
		if errors.As(err, &wait) {
			return "pending: " + wait.why, setEventOutcome(ctx, tx, ev.ID, "pending: "+wait.why, nil)
		}
		if err != nil {
			return "", err
		}
		outcome = o
	}
	now := s.clock.Now()
	return outcome, setEventOutcome(ctx, tx, ev.ID, outcome, &now)
}

// waitError: the event cannot apply yet; it stays pending.
type waitError struct{ why string }

func (e *waitError) Error() string { return e.why }

// applySubscription moves the organization's subscription to the state
// the event describes, unless that state is older than the one held, or
// the subscription was canceled (a canceled subscription never comes back:
// the provider makes a new one).
func (s *Service) applySubscription(ctx context.Context, tx *db.Tx, ev *ProviderEvent) (string, error) {
	sub := ev.Subscription
	cur, err := subscriptionByProviderID(ctx, tx, ev.Provider, sub.ID)
	if err != nil {
		return "", err
	}
	if cur != nil {
		if cur.status == "canceled" {
			return "stale: the subscription was canceled", nil
		}
		if cur.stateAt != nil && ev.Occurred.Before(*cur.stateAt) {
			return "stale: a newer state is held", nil
		}
	}
	orgID := sub.OrganizationID
	if orgID == "" && cur != nil {
		orgID = cur.orgID
	}
	if orgID == "" {
		if orgID, err = organizationOfCustomer(ctx, tx, ev.Provider, sub.CustomerID); err != nil {
			return "", err
		}
	}
	if orgID == "" {
		return "", &waitError{"no organization for customer " + sub.CustomerID}
	}
	if ok, err := organizationExists(ctx, tx, orgID); err != nil || !ok {
		if err == nil {
			err = &waitError{"no organization " + orgID}
		}
		return "", err
	}
	planID, err := planOfPrice(ctx, tx, ev.Provider, sub.PriceID)
	if err != nil {
		return "", err
	}
	if planID == "" {
		return "", &waitError{"no plan has price " + sub.PriceID}
	}
	before, err := subscriptionOf(ctx, tx, orgID)
	if err != nil {
		return "", err
	}
	now := s.clock.Now()
	after := &subscriptionRow{orgID: orgID, planID: planID, status: sub.Status, provider: ev.Provider, providerID: sub.ID,
		customerID: sub.CustomerID, stateAt: &ev.Occurred}
	if err := saveProviderSubscription(ctx, tx, after, now); err != nil {
		return "", err
	}
	if err := audit.Record(ctx, tx, now, "", "subscription."+ev.Provider, "organization", orgID, before.view(), after.view()); err != nil {
		return "", err
	}
	s.changed(tx)
	return "applied", nil
}

// RetryPending applies the pending events in the order the provider made
// them (the oldest 500 per call); it reports how many left the queue.
func (s *Service) RetryPending(ctx context.Context) (int, error) {
	if s.payments == nil {
		return 0, nil
	}
	ids, err := pendingEvents(ctx, s.db.R, 500)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		err := s.db.Tx(ctx, func(tx *db.Tx) error {
			payload, pending, err := lockEvent(ctx, tx, s.db.Dialect, id)
			if err != nil || !pending {
				return err // another replica took it
			}
			ev, err := s.payments.Parse(payload)
			if err != nil {
				now := s.clock.Now()
				return setEventOutcome(ctx, tx, id, "failed: "+err.Error(), &now)
			}
			outcome, err := s.apply(ctx, tx, ev)
			if err == nil && !strings.HasPrefix(outcome, "pending:") {
				n++
			}
			return err
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Queue is the queues tab: the payment provider's events received and
// pending, and how reconciliation stands.
type Queue struct {
	TotalReceived        int64      `json:"total_received"`
	Pending              int64      `json:"pending" doc:"Received and not applied yet"`
	OldestPendingAt      *time.Time `json:"oldest_pending_at" nullable:"true"`
	ReconciliationStatus string     `json:"reconciliation_status" enum:"ok,pending,attention,not_configured" doc:"ok: nothing pending; pending: events wait less than 5 minutes; attention: one waits longer; not_configured: no payment provider"`
}

// Queues reads the queues tab.
func (s *Service) Queues(ctx context.Context) (*Queue, error) {
	q, err := eventCounts(ctx, s.db.R)
	if err != nil {
		return nil, err
	}
	switch {
	case s.payments == nil && q.TotalReceived == 0:
		q.ReconciliationStatus = "not_configured"
	case q.Pending == 0:
		q.ReconciliationStatus = "ok"
	case q.OldestPendingAt != nil && s.clock.Now().Sub(*q.OldestPendingAt) > 5*time.Minute:
		q.ReconciliationStatus = "attention"
	default:
		q.ReconciliationStatus = "pending"
	}
	return q, nil
}
