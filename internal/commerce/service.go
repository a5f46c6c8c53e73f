package commerce

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/bank"
	"slipway/internal/billing"
	"slipway/internal/marketplace"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/platform/vault"
)

// Catalog is what commerce needs of the catalog: the version a checkout
// buys, with its item (seen by the workspace, paid, listed, not its own)
// and the item's seller.
type Catalog interface {
	CheckoutVersion(ctx context.Context, q db.Queryer, ws *actor.Workspace, versionID string) (*marketplace.MarketItem, *marketplace.ItemVersion, string, error)
}

// Deps are what the service needs.
type Deps struct {
	DB      *db.DB
	Clock   clock.Clock
	Log     *slog.Logger
	Sealer  *vault.Sealer
	Catalog Catalog
	// Provider: a payment provider is configured (its checkout completes
	// purchases; the development completion is refused).
	Provider bool
	// Runners answers which runners a person may offer.
	Runners Runners
	// Checkouts is the provider's API (nil without an API key): where a
	// buyer pays, and a subscription's cancellation.
	Checkouts Checkouts
	// PublicURL is where the provider sends the buyer back.
	PublicURL string
	// Payouts: the account they are paid from, and the bank.
	Debtor Debtor
	Bank   bank.Bank
}

// Checkouts is the payment provider's side of a purchase (Stripe's).
type Checkouts interface {
	MarketCheckoutURL(ctx context.Context, c billing.MarketCheckout) (string, error)
	CancelSubscription(ctx context.Context, id string, atPeriodEnd bool) error
}

// Service is the marketplace's commerce.
type Service struct{ Deps }

// NewService returns the service.
func NewService(d Deps) *Service { return &Service{Deps: d} }

// Licenses answers the catalog's questions (marketplace.Commerce): a
// workspace's license to a paid item, a person's seller profile. It needs
// nothing but the caller's transaction, so the catalog gets it before
// this service exists.
type Licenses struct{}

// Licensed reports whether the workspace holds an active purchase of the
// item whose paid period has not ended.
func (Licenses) Licensed(ctx context.Context, q db.Queryer, workspaceID, itemID string, now time.Time) (bool, error) {
	return licensed(ctx, q, workspaceID, itemID, now)
}

// SellerOf is a person's seller profile's id ("" without one).
func (Licenses) SellerOf(ctx context.Context, q db.Queryer, userID string) (string, error) {
	p, err := profileByUser(ctx, q, userID)
	if err != nil || p == nil {
		return "", err
	}
	return p.ID, nil
}

func wsAdmin(ws *actor.Workspace, doing string) error {
	if ws.Role != "owner" && ws.Role != "admin" {
		return apperr.New(apperr.CodeForbidden, "%s is for the workspace's owners and admins", doing)
	}
	return nil
}

func page(limit, offset int) (int, int) {
	limit = min(max(limit, 0), MaxLimit)
	if limit == 0 {
		limit = DefaultLimit
	}
	return limit, max(offset, 0)
}

// Fees.

// Fees are the platform's fees in force.
func (s *Service) Fees(ctx context.Context) (*FeeSettings, error) { return getFees(ctx, s.DB.R) }

// SetFees changes the fees (instance admins); a sale is settled with the
// fee in force when it is, so the change applies to future sales only.
func (s *Service) SetFees(ctx context.Context, u *actor.User, in FeeSettings) (*FeeSettings, error) {
	for name, v := range map[string]int{"package_fee_percent": in.PackageFeePercent, "runner_fee_percent": in.RunnerFeePercent} {
		if v < 0 || v > 100 {
			return nil, apperr.BadRequest("%s must be 0 to 100", name)
		}
	}
	now := s.Clock.Now()
	out := &FeeSettings{PackageFeePercent: in.PackageFeePercent, RunnerFeePercent: in.RunnerFeePercent, UpdatedAt: &now}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		before, err := getFees(ctx, tx)
		if err != nil {
			return err
		}
		if err := putFees(ctx, tx, out, u.ID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "marketplace.fees.update", "marketplace_fee_settings", "1", before, out)
	})
	return out, err
}

// Sellers.

// Profile is the person's seller profile.
func (s *Service) Profile(ctx context.Context, u *actor.User) (*SellerProfile, error) {
	p, err := profileByUser(ctx, s.DB.R, u.ID)
	if err == nil && p == nil {
		return nil, apperr.NotFound("seller profile")
	}
	return p, err
}

// CreateProfile makes the person's seller profile (one per person); an
// instance admin reviews it before its first payout.
func (s *Service) CreateProfile(ctx context.Context, u *actor.User, in SellerProfileInput) (*SellerProfile, error) {
	name, err := text.Name("display_name", in.DisplayName, 100)
	if err != nil {
		return nil, err
	}
	country := strings.ToUpper(strings.TrimSpace(in.Country))
	if !isCountry(country) {
		return nil, apperr.BadRequest("country: an ISO 3166-1 alpha-2 code, as DE")
	}
	now := s.Clock.Now()
	p := &SellerProfile{ID: ids.New(), UserID: u.ID, DisplayName: name, Country: country, Status: "pending_review", CreatedAt: now, UpdatedAt: now}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := insertProfile(ctx, tx, p); err != nil {
			if s.DB.Dialect.IsUniqueViolation(err) {
				return apperr.New(apperr.CodeConflict, "you have a seller profile already (one per person)")
			}
			return fmt.Errorf("commerce: insert seller profile: %w", err)
		}
		return audit.Record(ctx, tx, now, u.ID, "marketplace.seller.create", "seller_profile", p.ID, nil, p)
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// needProfile is the person's profile, or the 400 that names the
// onboarding step missing.
func (s *Service) needProfile(ctx context.Context, q db.Queryer, u *actor.User) (*SellerProfile, error) {
	p, err := profileByUser(ctx, q, u.ID)
	if err == nil && p == nil {
		return nil, apperr.BadRequest("a seller profile is needed first (POST /api/marketplace/seller/profile)")
	}
	return p, err
}

// epcText is the character set SEPA transfers carry (the EPC's Latin set).
var epcText = regexp.MustCompile(`^[A-Za-z0-9/\-?:().,'+ ]+$`)

func maskIBAN(iban string) string { return iban[:4] + " •••• " + iban[len(iban)-4:] }

// AddAccount adds a payout account to the person's seller profile: the
// IBAN (ISO 13616, its country's length and mod-97) sealed, the BIC (ISO
// 9362), the holder's name in the SEPA character set.
func (s *Service) AddAccount(ctx context.Context, u *actor.User, in PayoutAccountInput) (*PayoutAccount, error) {
	holder := strings.TrimSpace(in.HolderName)
	if holder == "" || len(holder) > 70 || !epcText.MatchString(holder) {
		return nil, apperr.BadRequest("holder_name: 1 to 70 characters of the SEPA set (letters A-Z, digits, space and / - ? : ( ) . , ' +)")
	}
	iban := NormalIBAN(in.IBAN)
	if iban == "" {
		return nil, apperr.BadRequest("iban: not a valid IBAN (ISO 13616: its country's length and check digits)")
	}
	bic := NormalBIC(in.BIC)
	if bic == "" {
		return nil, apperr.BadRequest("bic: not a valid BIC (ISO 9362: 8 or 11 characters)")
	}
	now := s.Clock.Now()
	a := &PayoutAccount{ID: ids.New(), HolderName: holder, IBAN: maskIBAN(iban), Country: iban[:2], BIC: bic, CreatedAt: now}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		p, err := s.needProfile(ctx, tx, u)
		if err != nil {
			return err
		}
		have, err := accountsOf(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if len(have) >= MaxAccounts {
			return apperr.BadRequest("a seller has at most %d payout accounts", MaxAccounts)
		}
		if err := insertAccount(ctx, tx, p.ID, a, s.Sealer.Seal(iban, "seller-iban:"+a.ID)); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "marketplace.seller.payout_account", "seller_profile", p.ID, nil, a)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Accounts are the person's payout accounts (none without a profile).
func (s *Service) Accounts(ctx context.Context, u *actor.User) ([]PayoutAccount, error) {
	p, err := profileByUser(ctx, s.DB.R, u.ID)
	if err != nil || p == nil {
		return []PayoutAccount{}, err
	}
	return accountsOf(ctx, s.DB.R, p.ID)
}

// Purchases.

// Checkout starts buying an item version's item (the workspace's admins):
// a pending purchase at the item's price. A pending purchase of the item
// is answered again; a workspace licensed already is a conflict.
func (s *Service) Checkout(ctx context.Context, ws *actor.Workspace, u *actor.User, versionID string) (*Checkout, bool, error) {
	if err := wsAdmin(ws, "buying from the marketplace"); err != nil {
		return nil, false, err
	}
	var out *Purchase
	created := false
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		it, v, seller, err := s.Catalog.CheckoutVersion(ctx, tx, ws, versionID)
		if err != nil {
			return err
		}
		if s.Provider && s.Checkouts == nil {
			return apperr.New(apperr.CodeConflict, "the payment provider has no API key (STRIPE_SECRET_KEY): nothing can be bought")
		}
		now := s.Clock.Now()
		if ok, err := licensed(ctx, tx, ws.ID, it.ID, now); err != nil {
			return err
		} else if ok {
			return apperr.New(apperr.CodeConflict, "the workspace holds a license to %s already", it.Slug)
		}
		if out, err = pendingPurchase(ctx, tx, ws.ID, it.ID); err != nil || out != nil {
			return err
		}
		out = &Purchase{ID: ids.New(), ItemID: it.ID, ItemName: it.Name, VersionID: v.ID, AmountMinor: it.Price.AmountMinor, Currency: it.Price.Currency,
			Interval: it.Price.Interval, Status: StatusPending, CreatedAt: now, UpdatedAt: now, workspaceID: ws.ID, buyerID: &u.ID, sellerID: seller}
		created = true
		if err := insertPurchase(ctx, tx, out); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "marketplace.checkout", "marketplace_purchase", out.ID, nil, out)
	})
	if err != nil {
		return nil, false, err
	}
	c := &Checkout{Purchase: *out}
	if !s.Provider {
		path := "/api/marketplace/checkout/" + out.ID + "/dev/complete"
		c.DevComplete = &path
		return c, created, nil
	}
	back := strings.TrimRight(s.PublicURL, "/") + "/marketplace/" + out.ItemID
	url, err := s.Checkouts.MarketCheckoutURL(ctx, billing.MarketCheckout{PurchaseID: out.ID, ItemName: out.ItemName, AmountMinor: out.AmountMinor,
		Currency: out.Currency, Interval: out.Interval, SuccessURL: back + "?purchase=" + out.ID, CancelURL: back})
	if err != nil {
		s.Log.Warn("marketplace: opening a checkout failed", "purchase", out.ID, "err", err)
		return nil, false, apperr.New(apperr.CodeUnprocessable, "the payment provider could not open a checkout; try again")
	}
	c.CheckoutURL = &url
	return c, created, nil
}

// buyerPurchase reads a purchase of the workspace made by u (another
// person's answers like an unknown one: a purchase is its buyer's).
func buyerPurchase(ctx context.Context, q db.Queryer, ws *actor.Workspace, u *actor.User, id string) (*Purchase, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("purchase")
	}
	p, err := purchaseOf(ctx, q, ws.ID, id)
	if err != nil {
		return nil, err
	}
	if p.buyerID == nil || *p.buyerID != u.ID {
		return nil, apperr.NotFound("purchase")
	}
	return p, nil
}

// DevComplete completes a pending purchase without a payment provider
// (development; refused while one is configured): as the provider's
// callback would, it becomes active once.
func (s *Service) DevComplete(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Purchase, error) {
	var out *Purchase
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		p, err := buyerPurchase(ctx, tx, ws, u, id)
		if err != nil {
			return err
		}
		if s.Provider {
			return apperr.New(apperr.CodeConflict, "a payment provider is configured: the purchase completes through its checkout")
		}
		out = p
		return s.activate(ctx, tx, p, u.ID)
	})
	return out, err
}

// PurchaseEvent applies the payment provider's event about a purchase, in
// billing's transaction (billing.PurchaseEvents): a paid checkout
// activates it (once), a paid cycle renews it (its sale and fee in the
// ledger once per period), an ended subscription ends it.
func (s *Service) PurchaseEvent(ctx context.Context, tx *db.Tx, ev *billing.ProviderPurchase) (string, error) {
	if !ids.Valid(ev.PurchaseID) {
		return "ignored: not a purchase id", nil
	}
	p, err := purchaseByID(ctx, tx, ev.PurchaseID)
	if err != nil || p == nil {
		return "ignored: no such purchase", err
	}
	if err := lockPurchase(ctx, tx, p.workspaceID, p.ID); err != nil {
		return "", err
	}
	now := s.Clock.Now()
	switch ev.Kind {
	case billing.PurchasePaid:
		if p.Status != StatusPending {
			return "duplicate: the purchase is " + p.Status, nil
		}
		if ev.SubscriptionID != "" {
			p.providerSub = &ev.SubscriptionID
		}
		return "activated", s.activate(ctx, tx, p, "")
	case billing.PurchaseRenewed:
		if p.Status != StatusActive || p.Interval != "month" || ev.PeriodEnd == nil || ev.PeriodStart == nil {
			return "ignored: the purchase is " + p.Status, nil
		}
		if p.PeriodEnd == nil || ev.PeriodEnd.After(*p.PeriodEnd) {
			p.PeriodEnd, p.UpdatedAt = ev.PeriodEnd, now
			if err := renewPurchase(ctx, tx, p); err != nil {
				return "", err
			}
		}
		fees, err := getFees(ctx, tx)
		if err != nil {
			return "", err
		}
		period := ev.PeriodStart.Format(time.RFC3339)
		added, err := insertEntry(ctx, tx, p.sellerID, "sale:"+p.ID+":"+period, &LedgerEntry{ID: ids.New(), Kind: EntrySale, AmountMinor: p.AmountMinor,
			Currency: p.Currency, Status: EntryAvailable, PurchaseID: &p.ID, Memo: "renewal of " + p.ItemName, CreatedAt: now})
		if err != nil || !added {
			return "duplicate: the period was paid already", err
		}
		if fee := p.AmountMinor * int64(fees.PackageFeePercent) / 100; fee > 0 {
			if err := s.entry(ctx, tx, p, "fee:"+p.ID+":"+period, EntryFee, -fee, fmt.Sprintf("platform fee %d%%", fees.PackageFeePercent)); err != nil {
				return "", err
			}
		}
		inv := &Invoice{ID: ids.New(), Number: invoiceNumber(now), AmountMinor: p.AmountMinor, Currency: p.Currency, PeriodStart: *ev.PeriodStart,
			PeriodEnd: ev.PeriodEnd, IssuedAt: now}
		if err := insertInvoice(ctx, tx, p.workspaceID, p.ID, inv); err != nil {
			return "", err
		}
		return "renewed", audit.Record(ctx, tx, now, "", "marketplace.purchase.renew", "marketplace_purchase", p.ID, nil, p)
	case billing.PurchaseEnded:
		if p.Status != StatusActive {
			return "ignored: the purchase is " + p.Status, nil
		}
		p.Status, p.EndedAt, p.UpdatedAt = StatusEnded, &now, now
		if err := endPurchase(ctx, tx, p); err != nil {
			return "", err
		}
		return "ended", audit.Record(ctx, tx, now, "", "marketplace.purchase.end", "marketplace_purchase", p.ID, nil, p)
	}
	return "ignored", nil
}

// activate makes a pending purchase active, in tx, once: its paid period
// starts, an invoice is issued, and the seller's ledger gets the sale and
// the platform's fee in force now.
func (s *Service) activate(ctx context.Context, tx *db.Tx, p *Purchase, by string) error {
	fees, err := getFees(ctx, tx)
	if err != nil {
		return err
	}
	now := s.Clock.Now()
	pct := fees.PackageFeePercent
	p.feePercent, p.ActivatedAt, p.UpdatedAt = &pct, &now, now
	if p.Interval == "month" {
		end := now.AddDate(0, 1, 0)
		p.PeriodEnd = &end
	}
	ok, err := activate(ctx, tx, p)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.New(apperr.CodeConflict, "the purchase is %s, not pending", p.Status)
	}
	p.Status = StatusActive
	inv := &Invoice{ID: ids.New(), Number: invoiceNumber(now), AmountMinor: p.AmountMinor, Currency: p.Currency, PeriodStart: now, PeriodEnd: p.PeriodEnd, IssuedAt: now}
	if err := insertInvoice(ctx, tx, p.workspaceID, p.ID, inv); err != nil {
		return err
	}
	fee := p.AmountMinor * int64(pct) / 100 // rounded down: the seller keeps the odd minor unit
	period := now.Format(time.RFC3339)
	if err := s.entry(ctx, tx, p, "sale:"+p.ID+":"+period, EntrySale, p.AmountMinor, "sale of "+p.ItemName); err != nil {
		return err
	}
	if fee > 0 {
		if err := s.entry(ctx, tx, p, "fee:"+p.ID+":"+period, EntryFee, -fee, fmt.Sprintf("platform fee %d%%", pct)); err != nil {
			return err
		}
	}
	return audit.Record(ctx, tx, now, by, "marketplace.purchase.activate", "marketplace_purchase", p.ID, nil, p)
}

func (s *Service) entry(ctx context.Context, tx *db.Tx, p *Purchase, ref, kind string, amount int64, memo string) error {
	id := p.ID
	_, err := insertEntry(ctx, tx, p.sellerID, ref, &LedgerEntry{ID: ids.New(), Kind: kind, AmountMinor: amount, Currency: p.Currency, Status: EntryAvailable,
		PurchaseID: &id, Memo: memo, CreatedAt: s.Clock.Now()})
	return err
}

func invoiceNumber(now time.Time) string {
	return "SW-" + now.Format("20060102") + "-" + strings.ToUpper(ids.RandomHex(5))
}

// Purchases lists the workspace's purchases, newest first.
func (s *Service) Purchases(ctx context.Context, ws *actor.Workspace, status string, limit, offset int) (*PurchasePage, error) {
	limit, offset = page(limit, offset)
	items, total, err := workspacePurchases(ctx, s.DB.R, ws.ID, status, limit, offset)
	if err != nil {
		return nil, err
	}
	return &PurchasePage{Items: items, Total: total}, nil
}

// Purchase reads a purchase (its buyer only).
func (s *Service) Purchase(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Purchase, error) {
	return buyerPurchase(ctx, s.DB.R, ws, u, id)
}

// Invoices are a purchase's invoices (its buyer only).
func (s *Service) Invoices(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) ([]Invoice, error) {
	if _, err := buyerPurchase(ctx, s.DB.R, ws, u, id); err != nil {
		return nil, err
	}
	return invoicesOf(ctx, s.DB.R, ws.ID, id)
}

// Subscription is the workspace's latest purchase of an item that is not
// pending (nil when none).
func (s *Service) Subscription(ctx context.Context, ws *actor.Workspace, itemID string) (*Purchase, error) {
	if !ids.Valid(itemID) {
		return nil, apperr.NotFound("item")
	}
	return latestPurchase(ctx, s.DB.R, ws.ID, itemID)
}

// Cancel ends the buyer's subscription: at the end of the paid period
// (it stays active until then), or at once with a refund of the unused
// remainder (a credit note, and the seller's ledger gives back the sale's
// remainder and takes back the fee's).
func (s *Service) Cancel(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, in CancelInput) (*Purchase, error) {
	if in.When != "period_end" && in.When != "now" {
		return nil, apperr.BadRequest("when must be period_end or now")
	}
	if s.Provider {
		// The provider ends the subscription first; its events follow.
		p, err := buyerPurchase(ctx, s.DB.R, ws, u, id)
		if err != nil {
			return nil, err
		}
		if p.providerSub != nil && p.Status == StatusActive && !(p.CancelAtPeriodEnd && in.When == "period_end") {
			if s.Checkouts == nil {
				return nil, apperr.New(apperr.CodeConflict, "the payment provider has no API key (STRIPE_SECRET_KEY): the subscription cannot be cancelled here")
			}
			if err := s.Checkouts.CancelSubscription(ctx, *p.providerSub, in.When == "period_end"); err != nil {
				s.Log.Warn("marketplace: cancelling a subscription at the provider failed", "purchase", id, "err", err)
				return nil, apperr.New(apperr.CodeUnprocessable, "the payment provider could not cancel the subscription; try again")
			}
		}
	}
	var out *Purchase
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := lockPurchase(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		p, err := buyerPurchase(ctx, tx, ws, u, id)
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		switch {
		case p.Interval != "month":
			return apperr.New(apperr.CodeConflict, "a one-time purchase does not renew: there is nothing to cancel")
		case p.Status != StatusActive || p.PeriodEnd == nil || !p.PeriodEnd.After(now):
			return apperr.New(apperr.CodeConflict, "the purchase is %s: only an active subscription is cancelled", p.Status)
		case p.CancelAtPeriodEnd && in.When == "period_end":
			out = p
			return nil
		}
		before := *p
		p.UpdatedAt = now
		if in.When == "period_end" {
			p.CancelAtPeriodEnd = true
		} else {
			start := p.PeriodEnd.AddDate(0, -1, 0)
			total, left := p.PeriodEnd.Sub(start), p.PeriodEnd.Sub(now)
			refund := p.AmountMinor * int64(left/time.Second) / int64(total/time.Second)
			fee := int64(0)
			if p.feePercent != nil {
				fee = (p.AmountMinor * int64(*p.feePercent) / 100) * int64(left/time.Second) / int64(total/time.Second)
			}
			p.Status, p.EndedAt = StatusCancelled, &now
			if refund > 0 {
				inv := &Invoice{ID: ids.New(), Number: invoiceNumber(now), AmountMinor: -refund, Currency: p.Currency, PeriodStart: now, PeriodEnd: p.PeriodEnd, IssuedAt: now}
				if err := insertInvoice(ctx, tx, ws.ID, p.ID, inv); err != nil {
					return err
				}
				if err := s.entry(ctx, tx, p, "refund:"+p.ID, EntryRefund, -refund, "refund of the unused period"); err != nil {
					return err
				}
			}
			if fee > 0 {
				if err := s.entry(ctx, tx, p, "fee-refund:"+p.ID, EntryFee, fee, "platform fee on the refund, returned"); err != nil {
					return err
				}
			}
		}
		if err := endPurchase(ctx, tx, p); err != nil {
			return err
		}
		out = p
		return audit.Record(ctx, tx, now, u.ID, "marketplace.purchase.cancel", "marketplace_purchase", p.ID, before, map[string]any{"when": in.When, "purchase": p})
	})
	return out, err
}

// Sellers' side.

// SellerPurchases are the purchases of the person's items (none without
// a profile), newest first.
func (s *Service) SellerPurchases(ctx context.Context, u *actor.User, status string, limit, offset int) (*PurchasePage, error) {
	limit, offset = page(limit, offset)
	p, err := profileByUser(ctx, s.DB.R, u.ID)
	if err != nil || p == nil {
		return &PurchasePage{Items: []Purchase{}}, err
	}
	items, total, err := sellerPurchases(ctx, s.DB.R, p.ID, status, limit, offset)
	if err != nil {
		return nil, err
	}
	return &PurchasePage{Items: items, Total: total}, nil
}

// Ledger is a page of the person's ledger, newest first, with the
// balances (the sum of every entry per currency).
func (s *Service) Ledger(ctx context.Context, u *actor.User, status string, limit, offset int) (*LedgerPage, error) {
	limit, offset = page(limit, offset)
	p, err := profileByUser(ctx, s.DB.R, u.ID)
	if err != nil || p == nil {
		return &LedgerPage{Items: []LedgerEntry{}, Balances: []Balance{}}, err
	}
	items, total, err := ledgerOf(ctx, s.DB.R, p.ID, status, limit, offset)
	if err != nil {
		return nil, err
	}
	bal, err := balances(ctx, s.DB.R, p.ID)
	if err != nil {
		return nil, err
	}
	return &LedgerPage{Items: items, Total: total, Balances: bal}, nil
}

// Boards.

// BatchBoard is the payout batches as a board (instance admins).
func (s *Service) BatchBoard(ctx context.Context, q board.Query, status string) (*board.Board[PayoutBatch], error) {
	return batchBoard(ctx, s.DB, q, status)
}

// LedgerBoard is the person's ledger as a board (empty without a profile).
func (s *Service) LedgerBoard(ctx context.Context, u *actor.User, q board.Query, status string) (*board.Board[LedgerEntry], error) {
	p, err := profileByUser(ctx, s.DB.R, u.ID)
	if err != nil || p == nil {
		return board.New[LedgerEntry](q, nil, 0, map[string][]board.Facet{"status": {}}), err
	}
	return ledgerBoard(ctx, s.DB, p.ID, q, status)
}

// SellerPurchaseBoard is the purchases of the person's items as a board.
func (s *Service) SellerPurchaseBoard(ctx context.Context, u *actor.User, q board.Query, status string) (*board.Board[Purchase], error) {
	p, err := profileByUser(ctx, s.DB.R, u.ID)
	if err != nil || p == nil {
		return board.New[Purchase](q, nil, 0, map[string][]board.Facet{"status": {}}), err
	}
	return sellerPurchaseBoard(ctx, s.DB, p.ID, q, status)
}
