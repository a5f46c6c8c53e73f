package billing

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/ttlcache"
)

// Config holds billing's settings.
type Config struct {
	// PublicURL starts the upgrade link of a quota_exceeded answer.
	PublicURL string
	// CacheTTL bounds what a lost invalidation could leave (default 30 s).
	CacheTTL time.Duration
}

// Deps are what billing uses. Bus may be nil (one replica).
type Deps struct {
	DB    *db.DB
	Clock clock.Clock
	Log   *slog.Logger
	Bus   Bus
	// Payments is the payment provider (nil: none; every organization is
	// on the plan an admin gives it, Community by default).
	Payments Payments
	// API is the provider's API (nil: no API key): the plans' prices,
	// customers, and the checkout and billing portal links.
	API ProviderAPI
	// Purchases applies the provider's events about marketplace purchases
	// (nil: acknowledged and ignored).
	Purchases PurchaseEvents
}

// PurchaseEvents is what applies a marketplace purchase's provider event,
// in billing's transaction; it answers the outcome recorded.
type PurchaseEvents interface {
	PurchaseEvent(ctx context.Context, tx *db.Tx, p *ProviderPurchase) (string, error)
}

// ProviderAPI is what billing asks of a payment provider's API (Stripe's).
type ProviderAPI interface {
	// CreatePrice makes a price for the plan as it stands; calls with one
	// idempotency key make one price.
	CreatePrice(ctx context.Context, plan BillingPlan, idempotencyKey string) (string, error)
	ArchivePrice(ctx context.Context, id string) error
	// CreateCustomer makes the organization's customer (one per
	// organization, however often it is called).
	CreateCustomer(ctx context.Context, c ProviderCustomer) (string, error)
	CheckoutURL(ctx context.Context, c CheckoutRequest) (string, error)
	PortalURL(ctx context.Context, customerID, returnURL string) (string, error)
	// Subscription reads a subscription as the provider holds it now.
	Subscription(ctx context.Context, id string) (*ProviderSubscription, error)
}

// ProviderCustomer is an organization as the provider's customer.
type ProviderCustomer struct {
	OrganizationID string
	Name           string
	Email          string
}

// CheckoutRequest is a checkout of one plan's price for a customer.
type CheckoutRequest struct {
	OrganizationID string
	PlanID         string
	CustomerID     string
	PriceID        string
	SuccessURL     string
	CancelURL      string
}

// Bus carries invalidations between replicas.
type Bus interface {
	Publish(ctx context.Context, topic, payload string) error
	Subscribe(topic string) *pubsub.Subscription
}

// topicEntitlements carries "changed": forget plans, overrides and
// organizations' plans.
const topicEntitlements = "entitlements"

// Service implements plans, subscriptions, overrides and the resolver.
type Service struct {
	db        *db.DB
	clock     clock.Clock
	log       *slog.Logger
	bus       Bus
	payments  Payments
	prices    ProviderAPI
	purchases PurchaseEvents
	cfg       Config
	// catalogs holds one entry, "": the plans and the overrides.
	catalogs *ttlcache.Cache[*catalog]
	// orgPlans maps an organization to its plan id ("" for community).
	orgPlans *ttlcache.Cache[string]
	// workspaceOrgs maps a workspace to its organization (which never
	// changes).
	workspaceOrgs *ttlcache.Cache[string]
}

// NewService builds the billing service.
func NewService(cfg Config, d Deps) *Service {
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = 30 * time.Second
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	return &Service{db: d.DB, clock: d.Clock, log: d.Log, bus: d.Bus, payments: d.Payments, prices: d.API, purchases: d.Purchases, cfg: cfg,
		catalogs: ttlcache.New[*catalog](cfg.CacheTTL, 1), orgPlans: ttlcache.New[string](cfg.CacheTTL, 100000),
		workspaceOrgs: ttlcache.New[string](time.Hour, 100000)}
}

// catalog reads the plans and the overrides, from memory when it can,
// else through q (nil: a read transaction of its own). A caller inside a
// write transaction passes it: waiting for a second connection while
// holding one can starve PostgreSQL's pool.
func (s *Service) catalog(ctx context.Context, q db.Queryer) (*catalog, error) {
	now := time.Now()
	if c, ok := s.catalogs.Get("", now); ok {
		return c, nil
	}
	epoch := s.catalogs.Epoch()
	c := &catalog{plans: map[string]BillingPlan{}, overrides: map[string][]Override{}}
	read := func(q db.Queryer) error {
		plans, err := listPlans(ctx, q)
		if err != nil {
			return err
		}
		for _, p := range plans {
			c.plans[p.ID] = p
		}
		// Expired ones are filtered at each decision's time; loading from
		// the epoch of time keeps one that expires later in the cache.
		list, err := activeOverrides(ctx, q, time.Time{})
		for _, o := range list {
			c.overrides[o.Feature] = append(c.overrides[o.Feature], o)
		}
		return err
	}
	var err error
	if q != nil {
		err = read(q)
	} else {
		err = s.db.ReadTx(ctx, read)
	}
	if err != nil {
		return nil, err
	}
	s.catalogs.Put("", c, now, time.Time{}, epoch)
	return c, nil
}

// planOf is an organization's plan id ("" for community), from memory when
// it can, else read through q.
func (s *Service) planOf(ctx context.Context, q db.Queryer, orgID string) (string, error) {
	if orgID == "" {
		return "", nil
	}
	now := time.Now()
	if p, ok := s.orgPlans.Get(orgID, now); ok {
		return p, nil
	}
	epoch := s.orgPlans.Epoch()
	p, err := subscribedPlan(ctx, q, orgID)
	if err != nil {
		return "", err
	}
	s.orgPlans.Put(orgID, p, now, time.Time{}, epoch)
	return p, nil
}

// orgOf is a workspace's organization, from memory when it can, else read
// through q.
func (s *Service) orgOf(ctx context.Context, q db.Queryer, workspaceID string) (string, error) {
	now := time.Now()
	if o, ok := s.workspaceOrgs.Get(workspaceID, now); ok {
		return o, nil
	}
	epoch := s.workspaceOrgs.Epoch()
	o, err := workspaceOrganization(ctx, q, workspaceID)
	if err != nil || o == "" {
		return o, err
	}
	s.workspaceOrgs.Put(workspaceID, o, now, time.Time{}, epoch)
	return o, nil
}

// changed forgets every cached decision input once tx commits, here and on
// every replica.
func (s *Service) changed(tx *db.Tx) {
	tx.AfterCommit(func() {
		s.forget()
		if s.bus == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.bus.Publish(ctx, topicEntitlements, "changed"); err != nil {
			// The other replicas' entries expire within the cache's TTL anyway.
			s.log.Error("telling the other replicas to forget entitlements failed", "err", err)
		}
	})
}

func (s *Service) forget() {
	s.catalogs.Clear()
	s.orgPlans.Clear()
}

// Run applies the other replicas' invalidations until ctx ends.
func (s *Service) Run(ctx context.Context) {
	if s.bus == nil {
		return
	}
	pubsub.Follow(ctx, s.bus.Subscribe(topicEntitlements), s.forget)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func lower(s string) string { return strings.ToLower(s) }
