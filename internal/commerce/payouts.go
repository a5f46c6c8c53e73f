package commerce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/bank"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Payout batch statuses.
const (
	BatchDraft      = "draft"
	BatchApproved   = "approved"
	BatchSubmitting = "submitting"
	BatchSubmitted  = "submitted"
	BatchReconciled = "reconciled"
	BatchCancelled  = "cancelled"
)

// PayoutCurrency is the only currency a SEPA credit transfer carries.
const PayoutCurrency = "EUR"

// MaxBatchEntries bounds a batch.
const MaxBatchEntries = 1000

// Debtor is the platform's account payouts are paid from.
type Debtor struct {
	Name, IBAN, BIC string
	Version         string // pain.001 version: 09 or 03
}

// QueueEntry is what a seller is owed in one currency.
type QueueEntry struct {
	SellerID       string          `json:"seller_id" format:"uuid"`
	DisplayName    string          `json:"display_name"`
	SellerStatus   string          `json:"seller_status" enum:"pending_review,approved,rejected" doc:"pending_review: the first batch's approval reviews the account"`
	Currency       string          `json:"currency"`
	BalanceMinor   int64           `json:"balance_minor" doc:"The ledger's sum"`
	ReservedMinor  int64           `json:"reserved_minor" doc:"What open batches hold for the seller"`
	AvailableMinor int64           `json:"available_minor" doc:"What a new batch may pay: the balance less what is reserved"`
	Hold           string          `json:"hold" doc:"Why it cannot be paid now: empty when it can"`
	Accounts       []PayoutAccount `json:"accounts" doc:"The seller's payout accounts (IBANs masked): a batch entry names one"`
}

// QueuePage is a page of the payout queue.
type QueuePage struct {
	Items []QueueEntry `json:"items"`
	Total int          `json:"total"`
}

// NegativeBalance is a seller whose ledger sums below zero (refunds or
// chargebacks after a payout).
type NegativeBalance struct {
	SellerID     string `json:"seller_id" format:"uuid"`
	DisplayName  string `json:"display_name"`
	Currency     string `json:"currency"`
	BalanceMinor int64  `json:"balance_minor"`
}

// PayoutItem is one transfer of a batch.
type PayoutItem struct {
	ID          string  `json:"id" format:"uuid"`
	SellerID    string  `json:"seller_id" format:"uuid"`
	SellerName  string  `json:"seller_name"`
	AccountID   string  `json:"account_id" format:"uuid"`
	HolderName  string  `json:"holder_name"`
	IBAN        string  `json:"iban" doc:"Masked"`
	BIC         string  `json:"bic"`
	AmountMinor int64   `json:"amount_minor"`
	EndToEndID  string  `json:"end_to_end_id"`
	Status      string  `json:"status" enum:"pending,paid,rejected"`
	Reason      *string `json:"reason" nullable:"true" doc:"rejected: the bank's reason"`
}

// PayoutBatch is a SEPA batch of payouts.
type PayoutBatch struct {
	ID           string       `json:"id" format:"uuid"`
	MessageID    string       `json:"message_id"`
	Status       string       `json:"status" enum:"draft,approved,submitting,submitted,reconciled,cancelled"`
	Currency     string       `json:"currency"`
	PainVersion  string       `json:"pain_version" enum:"09,03"`
	TotalMinor   int64        `json:"total_minor"`
	ItemCount    int          `json:"item_count"`
	SEPASHA256   *string      `json:"sepa_sha256" nullable:"true" doc:"The SHA-256 of its pain.001 file, written once at approval"`
	CreatedAt    time.Time    `json:"created_at"`
	ApprovedAt   *time.Time   `json:"approved_at" nullable:"true"`
	SubmittedAt  *time.Time   `json:"submitted_at" nullable:"true"`
	ReconciledAt *time.Time   `json:"reconciled_at" nullable:"true"`
	CancelledAt  *time.Time   `json:"cancelled_at" nullable:"true"`
	UpdatedAt    time.Time    `json:"updated_at"`
	Items        []PayoutItem `json:"items,omitempty" required:"false" doc:"The detail's transfers"`

	bankRef     *string
	challengeID *string
	sepaXML     *string
	approvedBy  *string
}

// BatchPage is a page of batches.
type BatchPage struct {
	Items []PayoutBatch `json:"items"`
	Total int           `json:"total"`
}

// BatchEntry is one payout asked for.
type BatchEntry struct {
	SellerID    string `json:"seller_id" format:"uuid"`
	AccountID   string `json:"account_id" format:"uuid"`
	AmountMinor int64  `json:"amount_minor" minimum:"1" maximum:"99999999999"`
}

// BatchCreate drafts a batch.
type BatchCreate struct {
	Entries     []BatchEntry `json:"entries" minItems:"1" maxItems:"1000"`
	PainVersion string       `json:"pain_version,omitempty" enum:"09,03" doc:"Default the server's (SERVICE_PAYOUT_PAIN_VERSION)"`
}

// SubmitResult is a submitted batch, with the bank's TAN challenge when it
// asks one.
type SubmitResult struct {
	Batch     PayoutBatch         `json:"batch"`
	Challenge *bank.BankChallenge `json:"challenge,omitempty" required:"false" doc:"Only when the bank asks for a TAN: answer it with …/tan"`
}

// TANInput answers a bank's challenge. The TAN is forwarded, never kept.
type TANInput struct {
	TAN string `json:"tan" minLength:"1" maxLength:"64"`
}

// ReconcileReport is what reconciling found.
type ReconcileReport struct {
	Batch         PayoutBatch  `json:"batch"`
	Items         []PayoutItem `json:"items"`
	PaidMinor     int64        `json:"paid_minor"`
	RejectedMinor int64        `json:"rejected_minor"`
	PendingMinor  int64        `json:"pending_minor" doc:"Transfers the bank has not decided: reconcile again later"`
}

func key(seller, currency string) string { return seller + "\x00" + currency }

// available is each seller's balance, reserved and available amount, by
// seller and currency.
func available(ctx context.Context, q db.Queryer, sellerID string) (map[string][3]int64, error) {
	bal, err := ledgerSums(ctx, q, sellerID)
	if err != nil {
		return nil, err
	}
	res, err := reservedSums(ctx, q, sellerID)
	if err != nil {
		return nil, err
	}
	out := map[string][3]int64{}
	for _, b := range bal {
		v := out[key(b.sellerID, b.currency)]
		v[0] = b.amount
		out[key(b.sellerID, b.currency)] = v
	}
	for _, r := range res {
		v := out[key(r.sellerID, r.currency)]
		v[1] = r.amount
		out[key(r.sellerID, r.currency)] = v
	}
	for k, v := range out {
		v[2] = v[0] - v[1]
		out[k] = v
	}
	return out, nil
}

// Queue is what each seller may be paid now, largest first.
func (s *Service) Queue(ctx context.Context, limit, offset int) (*QueuePage, error) {
	limit, offset = page(limit, offset)
	av, err := available(ctx, s.DB.R, "")
	if err != nil {
		return nil, err
	}
	profs, err := profiles(ctx, s.DB.R)
	if err != nil {
		return nil, err
	}
	accounts, err := allAccounts(ctx, s.DB.R)
	if err != nil {
		return nil, err
	}
	all := []QueueEntry{}
	for k, v := range av {
		seller, currency, _ := strings.Cut(k, "\x00")
		p := profs[seller]
		if p == nil || v[2] <= 0 {
			continue
		}
		e := QueueEntry{SellerID: seller, DisplayName: p.DisplayName, SellerStatus: p.Status, Currency: currency, BalanceMinor: v[0], ReservedMinor: v[1],
			AvailableMinor: v[2]}
		if e.Accounts = accounts[seller]; e.Accounts == nil {
			e.Accounts = []PayoutAccount{}
		}
		switch {
		case len(e.Accounts) == 0:
			e.Hold = "the seller has no payout account"
		case currency != PayoutCurrency:
			e.Hold = "SEPA pays euro only"
		case p.Status == "rejected":
			e.Hold = "the seller's account was rejected"
		}
		all = append(all, e)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].AvailableMinor != all[j].AvailableMinor {
			return all[i].AvailableMinor > all[j].AvailableMinor
		}
		return all[i].SellerID < all[j].SellerID
	})
	out := &QueuePage{Items: []QueueEntry{}, Total: len(all)}
	if offset < len(all) {
		out.Items = all[offset:min(len(all), offset+limit)]
	}
	return out, nil
}

// NegativeBalances are the sellers whose ledgers sum below zero.
func (s *Service) NegativeBalances(ctx context.Context) ([]NegativeBalance, error) {
	bal, err := ledgerSums(ctx, s.DB.R, "")
	if err != nil {
		return nil, err
	}
	profs, err := profiles(ctx, s.DB.R)
	if err != nil {
		return nil, err
	}
	out := []NegativeBalance{}
	for _, b := range bal {
		if b.amount < 0 {
			name := ""
			if p := profs[b.sellerID]; p != nil {
				name = p.DisplayName
			}
			out = append(out, NegativeBalance{SellerID: b.sellerID, DisplayName: name, Currency: b.currency, BalanceMinor: b.amount})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BalanceMinor < out[j].BalanceMinor })
	return out, nil
}

func messageID(now time.Time) string {
	return "SW" + now.Format("20060102") + strings.ToUpper(ids.RandomHex(8))
}

// CreateBatch drafts a batch from seller, account and amount entries
// (instance admins): each account the seller's, each seller's entries
// together never above what the seller has available. The sellers are
// locked in a fixed order while their balances are read, so concurrent
// batches cannot both spend the same money.
func (s *Service) CreateBatch(ctx context.Context, u *actor.User, in BatchCreate) (*PayoutBatch, error) {
	if len(in.Entries) == 0 || len(in.Entries) > MaxBatchEntries {
		return nil, apperr.BadRequest("entries: 1 to %d", MaxBatchEntries)
	}
	version := in.PainVersion
	if version == "" {
		version = s.Debtor.Version
	}
	if version != Pain09 && version != Pain03 {
		return nil, apperr.BadRequest("pain_version must be 09 or 03")
	}
	want := map[string]int64{}
	for i, e := range in.Entries {
		if !ids.Valid(e.SellerID) || !ids.Valid(e.AccountID) {
			return nil, apperr.BadRequest("entries[%d]: seller_id and account_id are ids", i)
		}
		if e.AmountMinor < 1 {
			return nil, apperr.BadRequest("entries[%d]: amount_minor must be positive", i)
		}
		want[e.SellerID] += e.AmountMinor
	}
	var total int64
	for _, e := range in.Entries {
		total += e.AmountMinor
	}
	sellers := make([]string, 0, len(want))
	for id := range want {
		sellers = append(sellers, id)
	}
	slices.Sort(sellers)
	now := s.Clock.Now()
	b := &PayoutBatch{ID: ids.New(), MessageID: messageID(now), Status: BatchDraft, Currency: PayoutCurrency, PainVersion: version,
		TotalMinor: total, ItemCount: len(in.Entries), CreatedAt: now, UpdatedAt: now}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		for _, id := range sellers {
			if err := s.DB.Dialect.XactLock(ctx, tx, "payout-seller:"+id); err != nil {
				return err
			}
			p, err := profileByID(ctx, tx, id)
			if err != nil {
				return err
			}
			if p == nil {
				return apperr.BadRequest("seller %s: no such seller", id)
			}
			if p.Status == "rejected" {
				return apperr.BadRequest("seller %s: the account was rejected", p.DisplayName)
			}
			av, err := available(ctx, tx, id)
			if err != nil {
				return err
			}
			if have := av[key(id, PayoutCurrency)][2]; want[id] > have {
				return apperr.New(apperr.CodeConflict, "seller %s has %s EUR available, the batch pays %s", p.DisplayName, amount(max(have, 0)), amount(want[id]))
			}
		}
		if err := insertBatch(ctx, tx, b, u.ID); err != nil {
			return err
		}
		for i, e := range in.Entries {
			a, _, err := accountOf(ctx, tx, e.SellerID, e.AccountID)
			if err != nil {
				return err
			}
			if a == nil {
				return apperr.BadRequest("entries[%d]: the account is not the seller's", i)
			}
			it := &PayoutItem{ID: ids.New(), SellerID: e.SellerID, AccountID: e.AccountID, AmountMinor: e.AmountMinor,
				EndToEndID: "SWP" + strings.ToUpper(ids.RandomHex(10))}
			if err := insertItem(ctx, tx, b.ID, it); err != nil {
				return err
			}
		}
		return audit.Record(ctx, tx, now, u.ID, "marketplace.payout.create", "payout_batch", b.ID, nil, b)
	})
	if err != nil {
		return nil, err
	}
	return s.Batch(ctx, b.ID)
}

// Batches lists batches, newest first.
func (s *Service) Batches(ctx context.Context, status string, limit, offset int) (*BatchPage, error) {
	limit, offset = page(limit, offset)
	items, total, err := listBatches(ctx, s.DB.R, status, limit, offset)
	if err != nil {
		return nil, err
	}
	return &BatchPage{Items: items, Total: total}, nil
}

// Batch is a batch with its transfers.
func (s *Service) Batch(ctx context.Context, id string) (*PayoutBatch, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("payout batch")
	}
	b, err := batchOf(ctx, s.DB.R, id)
	if err != nil {
		return nil, err
	}
	if b.Items, err = itemsOf(ctx, s.DB.R, id); err != nil {
		return nil, err
	}
	return b, nil
}

// transition moves a batch in its own transaction: do changes b (read
// under a lock) and says the status it must have been in.
func (s *Service) transition(ctx context.Context, u *actor.User, id, action string, do func(tx *db.Tx, b *PayoutBatch) (from string, err error)) (*PayoutBatch, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("payout batch")
	}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := lockBatch(ctx, tx, id); err != nil {
			return err
		}
		b, err := batchOf(ctx, tx, id)
		if err != nil {
			return err
		}
		before := *b
		from, err := do(tx, b)
		if err != nil {
			return err
		}
		b.UpdatedAt = s.Clock.Now()
		ok, err := setBatch(ctx, tx, b, from)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.CodeConflict, "the batch is not %s any more", from)
		}
		return audit.Record(ctx, tx, b.UpdatedAt, u.ID, action, "payout_batch", b.ID, map[string]any{"status": before.Status},
			map[string]any{"status": b.Status, "sepa_sha256": b.SEPASHA256})
	})
	if err != nil {
		return nil, err
	}
	return s.Batch(ctx, id)
}

func wrongStatus(b *PayoutBatch, doing string) error {
	return apperr.New(apperr.CodeConflict, "the batch is %s: it cannot be %s", b.Status, doing)
}

// ApproveBatch approves a draft (instance admins): its pain.001 file is
// written, hashed and kept as it is from now on, and the sellers it pays
// whose accounts were pending review are reviewed by this approval.
func (s *Service) ApproveBatch(ctx context.Context, u *actor.User, id string) (*PayoutBatch, error) {
	return s.transition(ctx, u, id, "marketplace.payout.approve", func(tx *db.Tx, b *PayoutBatch) (string, error) {
		if b.Status != BatchDraft {
			return "", wrongStatus(b, "approved")
		}
		if s.Debtor.Name == "" || s.Debtor.IBAN == "" || s.Debtor.BIC == "" {
			return "", apperr.New(apperr.CodeConflict, "payouts are not configured: set SERVICE_PAYOUT_DEBTOR_NAME, SERVICE_PAYOUT_DEBTOR_IBAN and SERVICE_PAYOUT_DEBTOR_BIC")
		}
		items, err := itemsOf(ctx, tx, b.ID)
		if err != nil {
			return "", err
		}
		sealed, err := sealedIBANs(ctx, tx, b.ID)
		if err != nil {
			return "", err
		}
		now := s.Clock.Now()
		batch := SEPABatch{Version: b.PainVersion, MessageID: b.MessageID, Created: now, Execution: now.AddDate(0, 0, 1),
			Debtor: SEPAParty{Name: s.Debtor.Name, IBAN: NormalIBAN(s.Debtor.IBAN), BIC: NormalBIC(s.Debtor.BIC)}}
		for _, it := range items {
			iban, err := s.Sealer.Open(sealed[it.AccountID], "seller-iban:"+it.AccountID)
			if err != nil {
				return "", fmt.Errorf("commerce: an account's IBAN does not open: %w", err)
			}
			batch.Payments = append(batch.Payments, SEPAPayment{EndToEndID: it.EndToEndID, AmountMinor: it.AmountMinor,
				Creditor: SEPAParty{Name: it.HolderName, IBAN: iban, BIC: it.BIC}, Remittance: "Slipway marketplace payout " + b.MessageID})
		}
		doc, err := SEPAXML(batch)
		if err != nil {
			return "", apperr.New(apperr.CodeConflict, "the payout file cannot be written: %v", err)
		}
		sum := sha256.Sum256(doc)
		hexSum, xmlText := hex.EncodeToString(sum[:]), string(doc)
		b.Status, b.sepaXML, b.SEPASHA256, b.ApprovedAt, b.approvedBy = BatchApproved, &xmlText, &hexSum, &now, &u.ID
		for _, it := range items {
			if err := approveProfile(ctx, tx, it.SellerID, now); err != nil {
				return "", err
			}
		}
		return BatchDraft, nil
	})
}

// SubmitBatch sends an approved batch to the bank (instance admins); there
// is no un-submit. When the bank asks for a TAN the batch is submitting
// until the TAN is confirmed. A submission the bank refused leaves it
// approved; one cut off before the bank answered is sent again (the bank
// knows a batch by its message id).
func (s *Service) SubmitBatch(ctx context.Context, u *actor.User, id string) (*SubmitResult, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("payout batch")
	}
	// Claim: approved → submitting, once.
	var doc []byte
	claimed, err := s.transition(ctx, u, id, "marketplace.payout.submit", func(tx *db.Tx, b *PayoutBatch) (string, error) {
		switch {
		case b.Status == BatchApproved:
		case b.Status == BatchSubmitting && b.bankRef == nil: // cut off before the bank answered
		default:
			return "", wrongStatus(b, "submitted")
		}
		from := b.Status
		b.Status = BatchSubmitting
		var err error
		doc, _, err = batchXML(ctx, tx, b.ID)
		return from, err
	})
	if err != nil {
		return nil, err
	}
	ref, challenge, err := s.Bank.Submit(ctx, claimed.MessageID, doc)
	if err != nil {
		_, _ = s.transition(ctx, u, id, "marketplace.payout.submit_failed", func(_ *db.Tx, b *PayoutBatch) (string, error) {
			b.Status = BatchApproved
			return BatchSubmitting, nil
		})
		if errors.Is(err, bank.ErrRefused) {
			return nil, apperr.New(apperr.CodeUnprocessable, "%v", err)
		}
		return nil, apperr.New(apperr.CodeUnprocessable, "the bank could not be reached: %v", err)
	}
	b, err := s.transition(ctx, u, id, "marketplace.payout.submitted", func(_ *db.Tx, b *PayoutBatch) (string, error) {
		now := s.Clock.Now()
		b.bankRef, b.SubmittedAt = &ref, &now
		if challenge != nil {
			b.challengeID = &challenge.ID
		} else {
			b.Status = BatchSubmitted
		}
		return BatchSubmitting, nil
	})
	if err != nil {
		return nil, err
	}
	return &SubmitResult{Batch: *b, Challenge: challenge}, nil
}

// ConfirmTAN forwards the TAN of a batch the bank challenged; the TAN is
// not stored, logged or audited.
func (s *Service) ConfirmTAN(ctx context.Context, u *actor.User, id string, in TANInput) (*PayoutBatch, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("payout batch")
	}
	b, err := batchOf(ctx, s.DB.R, id)
	if err != nil {
		return nil, err
	}
	if b.Status != BatchSubmitting || b.bankRef == nil || b.challengeID == nil {
		return nil, apperr.New(apperr.CodeConflict, "the batch is %s: no TAN is asked for", b.Status)
	}
	if err := s.Bank.ConfirmTAN(ctx, *b.bankRef, *b.challengeID, strings.TrimSpace(in.TAN)); err != nil {
		if errors.Is(err, bank.ErrRefused) {
			return nil, apperr.BadRequest("%v", err)
		}
		return nil, apperr.New(apperr.CodeUnprocessable, "the bank could not be reached: %v", err)
	}
	return s.transition(ctx, u, id, "marketplace.payout.tan", func(_ *db.Tx, b *PayoutBatch) (string, error) {
		b.Status, b.challengeID = BatchSubmitted, nil
		return BatchSubmitting, nil
	})
}

// Reconcile reads the bank's status report of a submitted batch: each
// paid transfer becomes a payout entry of its seller's ledger (once), a
// rejected one frees its amount; when none is pending the batch is
// reconciled.
func (s *Service) Reconcile(ctx context.Context, u *actor.User, id string) (*ReconcileReport, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("payout batch")
	}
	b, err := batchOf(ctx, s.DB.R, id)
	if err != nil {
		return nil, err
	}
	if (b.Status != BatchSubmitted && b.Status != BatchReconciled) || b.bankRef == nil {
		return nil, apperr.New(apperr.CodeConflict, "the batch is %s: only a submitted batch is reconciled", b.Status)
	}
	results, err := s.Bank.Status(ctx, *b.bankRef)
	if err != nil {
		return nil, apperr.New(apperr.CodeUnprocessable, "the bank's status report: %v", err)
	}
	report := &ReconcileReport{}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := lockBatch(ctx, tx, id); err != nil {
			return err
		}
		items, err := itemsOf(ctx, tx, id)
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		pending := false
		for i, it := range items {
			r := results[it.EndToEndID]
			if it.Status == "pending" {
				switch r.Status {
				case bank.Paid:
					if ok, err := settleItem(ctx, tx, it.ID, "paid", nil); err != nil {
						return err
					} else if ok {
						if _, err := insertEntry(ctx, tx, it.SellerID, "payout:"+it.ID, &LedgerEntry{ID: ids.New(), Kind: EntryPayout,
							AmountMinor: -it.AmountMinor, Currency: PayoutCurrency, Status: EntryPaid, Memo: "payout " + b.MessageID + " (" + it.EndToEndID + ")",
							CreatedAt: now}); err != nil {
							return err
						}
					}
					items[i].Status = "paid"
				case bank.Rejected:
					reason := r.Reason
					if _, err := settleItem(ctx, tx, it.ID, "rejected", &reason); err != nil {
						return err
					}
					items[i].Status, items[i].Reason = "rejected", &reason
				}
			}
			switch items[i].Status {
			case "paid":
				report.PaidMinor += it.AmountMinor
			case "rejected":
				report.RejectedMinor += it.AmountMinor
			default:
				report.PendingMinor += it.AmountMinor
				pending = true
			}
		}
		report.Items = items
		if pending || b.Status == BatchReconciled {
			return nil
		}
		b.Status, b.ReconciledAt, b.UpdatedAt = BatchReconciled, &now, now
		if ok, err := setBatch(ctx, tx, b, BatchSubmitted); err != nil || !ok {
			if err == nil {
				err = apperr.New(apperr.CodeConflict, "the batch changed while it was reconciled")
			}
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "marketplace.payout.reconcile", "payout_batch", b.ID, nil,
			map[string]any{"paid_minor": report.PaidMinor, "rejected_minor": report.RejectedMinor})
	})
	if err != nil {
		return nil, err
	}
	fresh, err := s.Batch(ctx, id)
	if err != nil {
		return nil, err
	}
	report.Batch = *fresh
	return report, nil
}

// CancelBatch cancels a batch before it is complete (instance admins): a
// draft or an approved batch at once; a submitted one only if the bank
// withdraws it. Its amounts are available again.
func (s *Service) CancelBatch(ctx context.Context, u *actor.User, id string) (*PayoutBatch, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("payout batch")
	}
	b, err := batchOf(ctx, s.DB.R, id)
	if err != nil {
		return nil, err
	}
	switch b.Status {
	case BatchReconciled, BatchCancelled:
		return nil, wrongStatus(b, "cancelled")
	case BatchSubmitting, BatchSubmitted:
		if b.bankRef != nil {
			if err := s.Bank.Cancel(ctx, *b.bankRef); err != nil {
				if errors.Is(err, bank.ErrRefused) {
					return nil, apperr.New(apperr.CodeConflict, "%v", err)
				}
				return nil, apperr.New(apperr.CodeUnprocessable, "the bank could not be reached: %v", err)
			}
		}
	}
	from := b.Status
	return s.transition(ctx, u, id, "marketplace.payout.cancel", func(_ *db.Tx, b *PayoutBatch) (string, error) {
		now := s.Clock.Now()
		b.Status, b.CancelledAt = BatchCancelled, &now
		return from, nil
	})
}

// BatchFile is an approved batch's pain.001 file and its SHA-256.
func (s *Service) BatchFile(ctx context.Context, id string) ([]byte, string, error) {
	if !ids.Valid(id) {
		return nil, "", apperr.NotFound("payout batch")
	}
	doc, sum, err := batchXML(ctx, s.DB.R, id)
	if err != nil {
		return nil, "", err
	}
	if doc == nil {
		return nil, "", apperr.New(apperr.CodeConflict, "the batch is a draft: its file is written when it is approved")
	}
	return doc, sum, nil
}
