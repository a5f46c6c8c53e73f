// Package commerce is the marketplace's money: the platform's fees,
// sellers with their payout accounts, purchases (a workspace's license to
// a paid item) with their invoices, and each seller's append-only ledger,
// whose entries sum to the seller's balance. Money is integer minor units
// with its currency, never a float.
package commerce

import "time"

// Purchase statuses.
const (
	StatusPending   = "pending"
	StatusActive    = "active"
	StatusCancelled = "cancelled"
	StatusEnded     = "ended"
)

// Ledger entry kinds and statuses.
const (
	EntrySale       = "sale"
	EntryFee        = "fee"
	EntryRefund     = "refund"
	EntryChargeback = "chargeback"
	EntryPayout     = "payout"
	EntryAdjustment = "adjustment"

	EntryPending   = "pending"
	EntryAvailable = "available"
	EntryHeld      = "held"
	EntryPaid      = "paid"
)

// Defaults and bounds.
const (
	DefaultFeePercent = 10
	DefaultLimit      = 50
	MaxLimit          = 200
	MaxAccounts       = 10
)

// FeeSettings are the platform's fees, in percent of each sale.
type FeeSettings struct {
	PackageFeePercent int        `json:"package_fee_percent" minimum:"0" maximum:"100" doc:"Of each item sale, 0 to 100"`
	RunnerFeePercent  int        `json:"runner_fee_percent" minimum:"0" maximum:"100" doc:"Of each runner usage charge, 0 to 100"`
	UpdatedAt         *time.Time `json:"updated_at,omitempty" nullable:"true" required:"false" doc:"Null until an admin sets them (the defaults apply)"`
}

// SellerProfile is a person's seller profile: one per user.
type SellerProfile struct {
	ID          string    `json:"id" format:"uuid"`
	UserID      string    `json:"user_id" format:"uuid"`
	DisplayName string    `json:"display_name"`
	Country     string    `json:"country" doc:"ISO 3166-1 alpha-2"`
	Status      string    `json:"status" enum:"pending_review,approved,rejected" doc:"An instance admin reviews the account before its first payout"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// SellerProfileInput makes a seller profile.
type SellerProfileInput struct {
	DisplayName string `json:"display_name" minLength:"1" maxLength:"100"`
	Country     string `json:"country" pattern:"^[A-Z]{2}$" doc:"ISO 3166-1 alpha-2, as DE"`
}

// PayoutAccount is a seller's bank account, as shown: the IBAN masked.
type PayoutAccount struct {
	ID         string    `json:"id" format:"uuid"`
	HolderName string    `json:"holder_name"`
	IBAN       string    `json:"iban" doc:"Masked: the country, check digits and the last four characters"`
	Country    string    `json:"country"`
	BIC        string    `json:"bic"`
	CreatedAt  time.Time `json:"created_at"`
}

// PayoutAccountInput adds a payout account.
type PayoutAccountInput struct {
	HolderName string `json:"holder_name" minLength:"1" maxLength:"70" doc:"As the bank knows it (SEPA: at most 70 characters)"`
	IBAN       string `json:"iban" minLength:"15" maxLength:"42" doc:"ISO 13616, spaces allowed"`
	BIC        string `json:"bic" minLength:"8" maxLength:"11" doc:"ISO 9362"`
}

// Purchase is a workspace's purchase of a paid item: while active, its
// license (the item's files and installs).
type Purchase struct {
	ID                string     `json:"id" format:"uuid"`
	ItemID            string     `json:"item_id" format:"uuid"`
	ItemName          string     `json:"item_name"`
	VersionID         string     `json:"version_id" format:"uuid"`
	AmountMinor       int64      `json:"amount_minor"`
	Currency          string     `json:"currency"`
	Interval          string     `json:"interval" enum:"once,month"`
	Status            string     `json:"status" enum:"pending,active,cancelled,ended"`
	PeriodEnd         *time.Time `json:"period_end" nullable:"true" doc:"month: the end of the paid period"`
	CancelAtPeriodEnd bool       `json:"cancel_at_period_end"`
	CreatedAt         time.Time  `json:"created_at"`
	ActivatedAt       *time.Time `json:"activated_at" nullable:"true"`
	EndedAt           *time.Time `json:"ended_at" nullable:"true"`
	UpdatedAt         time.Time  `json:"updated_at"`

	workspaceID string
	buyerID     *string
	sellerID    string
	feePercent  *int
	providerSub *string
}

// PurchasePage is a page of purchases.
type PurchasePage struct {
	Items []Purchase `json:"items"`
	Total int        `json:"total"`
}

// Checkout answers a checkout: the pending purchase and how to pay it.
type Checkout struct {
	Purchase    Purchase `json:"purchase"`
	DevComplete *string  `json:"dev_complete" nullable:"true" doc:"With no payment provider configured: the path that completes the purchase (development)"`
	CheckoutURL *string  `json:"checkout_url" nullable:"true" doc:"With a payment provider: where the buyer pays (the purchase becomes active when the provider says it is paid)"`
}

// CancelInput chooses how a subscription ends.
type CancelInput struct {
	When string `json:"when" enum:"period_end,now" doc:"period_end: it ends when the paid period does; now: at once, with a refund of the unused remainder"`
}

// Invoice is what a purchase was charged (a refund is a negative one).
type Invoice struct {
	ID          string     `json:"id" format:"uuid"`
	Number      string     `json:"number"`
	AmountMinor int64      `json:"amount_minor" doc:"Negative: a credit note (a refund)"`
	Currency    string     `json:"currency"`
	PeriodStart time.Time  `json:"period_start"`
	PeriodEnd   *time.Time `json:"period_end" nullable:"true"`
	IssuedAt    time.Time  `json:"issued_at"`
}

// LedgerEntry is one entry of a seller's ledger.
type LedgerEntry struct {
	ID          string    `json:"id" format:"uuid"`
	Kind        string    `json:"kind" enum:"sale,fee,refund,chargeback,payout,adjustment"`
	AmountMinor int64     `json:"amount_minor" doc:"Signed: what it adds to the balance"`
	Currency    string    `json:"currency"`
	Status      string    `json:"status" enum:"pending,available,held,paid"`
	PurchaseID  *string   `json:"purchase_id" nullable:"true" format:"uuid"`
	Memo        string    `json:"memo"`
	CreatedAt   time.Time `json:"created_at"`
}

// Balance is a seller's balance in one currency: the sum of its entries.
type Balance struct {
	Currency    string `json:"currency"`
	AmountMinor int64  `json:"amount_minor"`
}

// LedgerPage is a page of a seller's ledger with the balances.
type LedgerPage struct {
	Items    []LedgerEntry `json:"items"`
	Total    int           `json:"total"`
	Balances []Balance     `json:"balances" doc:"The sum of every entry, per currency"`
}
