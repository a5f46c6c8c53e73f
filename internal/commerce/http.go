package commerce

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
	"slipway/internal/runners"
)

type versionIDInput struct {
	VersionID string `path:"version_id" maxLength:"64"`
}

type purchaseIDInput struct {
	PurchaseID string `path:"purchase_id" maxLength:"64"`
}

type idInput struct {
	ID string `path:"id" maxLength:"64"`
}

type pageInput struct {
	Status string `query:"status" enum:"pending,active,cancelled,ended"`
	Limit  int    `query:"limit" minimum:"0" doc:"Default 50, at most 200"`
	Offset int    `query:"offset" minimum:"0" maximum:"100000"`
}

type ledgerInput struct {
	Status string `query:"status" enum:"pending,available,held,paid"`
	Limit  int    `query:"limit" minimum:"0" doc:"Default 50, at most 200"`
	Offset int    `query:"offset" minimum:"0" maximum:"100000"`
}

type cancelInput struct {
	ID   string `path:"id" maxLength:"64"`
	Body CancelInput
}

type batchesInput struct {
	Status string `query:"status" enum:"draft,approved,submitting,submitted,reconciled,cancelled"`
	Limit  int    `query:"limit" minimum:"0" doc:"Default 50, at most 200"`
	Offset int    `query:"offset" minimum:"0" maximum:"100000"`
}

type queueInput struct {
	Limit  int `query:"limit" minimum:"0" doc:"Default 50, at most 200"`
	Offset int `query:"offset" minimum:"0" maximum:"100000"`
}

type batchBoardInput struct {
	board.Query
	Status string `query:"status" enum:"draft,approved,submitting,submitted,reconciled,cancelled"`
}

type ledgerBoardInput struct {
	board.Query
	Status string `query:"status" enum:"pending,available,held,paid"`
}

type purchaseBoardInput struct {
	board.Query
	Status string `query:"status" enum:"active,cancelled,ended"`
}

func sel(o httpx.OrgSelector) runners.Selector { return runners.Selector(o) }

type runnerOfferInput struct {
	httpx.OrgSelector
	ID   string `path:"id" maxLength:"64" doc:"Runner id"`
	Body OfferInput
}

type runnerIDInput struct {
	httpx.OrgSelector
	ID string `path:"id" maxLength:"64" doc:"Runner id"`
}

type offerCreateInput struct {
	httpx.OrgSelector
	Body OfferCreate
}

type offerPatchInput struct {
	ID   string `path:"id" maxLength:"64"`
	Body OfferPatch
}

type tanInput struct {
	ID   string `path:"id" maxLength:"64"`
	Body TANInput
}

type fileOutput struct {
	ContentType string `header:"Content-Type"`
	ETag        string `header:"ETag"`
	Body        []byte
}

// CheckoutOutput is a checkout's answer: 201 with a new pending purchase,
// 200 with the one pending already.
type CheckoutOutput struct {
	Status int
	Body   *Checkout
}

// Register mounts purchases (the active workspace's), the seller's side
// (the person's) and the fee settings (instance admins).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Marketplace"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	who := func(ctx context.Context) (*actor.User, *actor.Workspace, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, nil, err
		}
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return u, w, nil
	}

	checkout := ops.Op("post_api_marketplace_checkout_version_id", http.MethodPost, "/api/marketplace/checkout/{version_id}",
		"Buy a paid item (workspace admins): a pending purchase at its price; 200 with the one pending already")
	checkout.DefaultStatus = http.StatusCreated
	huma.Register(api, checkout, func(ctx context.Context, in *versionIDInput) (*CheckoutOutput, error) {
		u, ws, err := who(ctx)
		if err != nil {
			return nil, err
		}
		c, created, err := s.Checkout(ctx, ws, u, in.VersionID)
		if err != nil {
			return nil, err
		}
		if created {
			return &CheckoutOutput{Status: http.StatusCreated, Body: c}, nil
		}
		return &CheckoutOutput{Status: http.StatusOK, Body: c}, nil
	})
	huma.Register(api, ops.Op("post_api_marketplace_checkout_purchase_id_dev_complete", http.MethodPost,
		"/api/marketplace/checkout/{purchase_id}/dev/complete", "Complete a pending purchase without a payment provider (development; refused while one is configured)"),
		func(ctx context.Context, in *purchaseIDInput) (*httpx.Out[*Purchase], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.DevComplete(ctx, ws, u, in.PurchaseID))
		})
	huma.Register(api, ops.Op("get_api_marketplace_purchases", http.MethodGet, "/api/marketplace/purchases", "The workspace's purchases, newest first"),
		func(ctx context.Context, in *pageInput) (*httpx.Out[*PurchasePage], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Purchases(ctx, ws, in.Status, in.Limit, in.Offset))
		})
	huma.Register(api, ops.Op("get_api_marketplace_purchases_id", http.MethodGet, "/api/marketplace/purchases/{id}", "A purchase (its buyer only)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Purchase], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Purchase(ctx, ws, u, in.ID))
		})
	huma.Register(api, ops.Op("post_api_marketplace_purchases_id_cancel", http.MethodPost, "/api/marketplace/purchases/{id}/cancel",
		"Cancel a subscription (its buyer): at the end of the paid period, or now with a refund of the unused remainder"),
		func(ctx context.Context, in *cancelInput) (*httpx.Out[*Purchase], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Cancel(ctx, ws, u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("get_api_marketplace_purchases_id_invoices", http.MethodGet, "/api/marketplace/purchases/{id}/invoices",
		"A purchase's invoices and credit notes (its buyer only)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]Invoice], error) {
			u, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Invoices(ctx, ws, u, in.ID))
		})
	huma.Register(api, ops.Op("get_api_marketplace_items_id_subscription", http.MethodGet, "/api/marketplace/items/{id}/subscription",
		"The workspace's purchase of the item (its latest that is not pending), or null"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Purchase], error) {
			_, ws, err := who(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Subscription(ctx, ws, in.ID))
		})

	// The seller's side: the person's, whatever the workspace.
	seller := ops // the person's side: the middleware authenticates before the body is read
	huma.Register(api, seller.Op("get_api_marketplace_seller_profile", http.MethodGet, "/api/marketplace/seller/profile", "Your seller profile"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[*SellerProfile], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Profile(ctx, u))
		})
	huma.Register(api, httpx.Created(seller.Op("post_api_marketplace_seller_profile", http.MethodPost, "/api/marketplace/seller/profile",
		"Become a seller: your profile (one per person; reviewed before the first payout)")),
		func(ctx context.Context, in *struct{ Body SellerProfileInput }) (*httpx.Out[*SellerProfile], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.CreateProfile(ctx, u, in.Body))
		})
	huma.Register(api, httpx.Created(seller.Op("post_api_marketplace_seller_payout_account", http.MethodPost, "/api/marketplace/seller/payout-account",
		"Add a payout account (IBAN and BIC, validated; the IBAN is stored sealed and shown masked)")),
		func(ctx context.Context, in *struct{ Body PayoutAccountInput }) (*httpx.Out[*PayoutAccount], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.AddAccount(ctx, u, in.Body))
		})
	huma.Register(api, seller.Op("get_api_marketplace_seller_payout_accounts", http.MethodGet, "/api/marketplace/seller/payout-accounts",
		"Your payout accounts, IBANs masked"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]PayoutAccount], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Accounts(ctx, u))
		})
	huma.Register(api, seller.Op("get_api_marketplace_seller_purchases", http.MethodGet, "/api/marketplace/seller/purchases",
		"The purchases of your items, newest first"),
		func(ctx context.Context, in *pageInput) (*httpx.Out[*PurchasePage], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SellerPurchases(ctx, u, in.Status, in.Limit, in.Offset))
		})
	huma.Register(api, seller.Op("get_api_marketplace_seller_purchases_board", http.MethodGet, "/api/marketplace/seller/purchases/board",
		"The purchases of your items as a board: search by item, sort by created, amount or item, a status facet"),
		func(ctx context.Context, in *purchaseBoardInput) (*httpx.Out[*board.Board[Purchase]], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SellerPurchaseBoard(ctx, u, in.Query, in.Status))
		})
	huma.Register(api, seller.Op("get_api_marketplace_seller_ledger_board", http.MethodGet, "/api/marketplace/seller/ledger/board",
		"Your ledger as a board: search the memo or kind, sort by created, amount or kind, a status facet"),
		func(ctx context.Context, in *ledgerBoardInput) (*httpx.Out[*board.Board[LedgerEntry]], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.LedgerBoard(ctx, u, in.Query, in.Status))
		})
	huma.Register(api, seller.Op("get_api_marketplace_seller_ledger", http.MethodGet, "/api/marketplace/seller/ledger",
		"Your ledger, newest first, with your balances (its entries' sum per currency)"),
		func(ctx context.Context, in *ledgerInput) (*httpx.Out[*LedgerPage], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Ledger(ctx, u, in.Status, in.Limit, in.Offset))
		})

	admin := httpx.Operations{Tags: []string{"Admin"}, Security: httpx.SessionSecurity}
	registerPayouts(api, s, admin)
	registerOffers(api, s, ops)
	huma.Register(api, admin.Op("get_api_admin_marketplace_fee_settings", http.MethodGet, "/api/admin/marketplace/fee-settings",
		"The platform's fees (instance admins)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[*FeeSettings], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.Fees(ctx))
		})
	huma.Register(api, admin.Op("put_api_admin_marketplace_fee_settings", http.MethodPut, "/api/admin/marketplace/fee-settings",
		"Set the platform's fees, 0 to 100 percent each (instance admins); future sales settle with them"),
		func(ctx context.Context, in *struct{ Body FeeSettings }) (*httpx.Out[*FeeSettings], error) {
			u, err := actor.RequireAdmin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SetFees(ctx, u, in.Body))
		})
}

// registerPayouts mounts the payout routes (instance admins).
func registerPayouts(api huma.API, s *Service, admin httpx.Operations) {
	const base = "/api/admin/marketplace/payouts"
	huma.Register(api, admin.Op("get_api_admin_marketplace_payouts_queue", http.MethodGet, base+"/queue",
		"What each seller may be paid now, largest first (instance admins)"),
		func(ctx context.Context, in *queueInput) (*httpx.Out[*QueuePage], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.Queue(ctx, in.Limit, in.Offset))
		})
	huma.Register(api, admin.Op("get_api_admin_marketplace_payouts_negative_balances", http.MethodGet, base+"/negative-balances",
		"Sellers whose ledgers sum below zero (instance admins)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]NegativeBalance], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.NegativeBalances(ctx))
		})
	huma.Register(api, admin.Op("get_api_admin_marketplace_payouts_batches", http.MethodGet, base+"/batches",
		"Payout batches, newest first (instance admins)"),
		func(ctx context.Context, in *batchesInput) (*httpx.Out[*BatchPage], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.Batches(ctx, in.Status, in.Limit, in.Offset))
		})
	huma.Register(api, admin.Op("get_api_admin_marketplace_payouts_batches_board", http.MethodGet, base+"/batches/board",
		"Payout batches as a board: search the message id, sort by created, total or status, a status facet (instance admins)"),
		func(ctx context.Context, in *batchBoardInput) (*httpx.Out[*board.Board[PayoutBatch]], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.BatchBoard(ctx, in.Query, in.Status))
		})
	huma.Register(api, httpx.Created(admin.Op("post_api_admin_marketplace_payouts_batches", http.MethodPost, base+"/batches",
		"Draft a batch from seller, account and amount entries, never above what a seller has available (instance admins)")),
		func(ctx context.Context, in *struct{ Body BatchCreate }) (*httpx.Out[*PayoutBatch], error) {
			u, err := actor.RequireAdmin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.CreateBatch(ctx, u, in.Body))
		})
	huma.Register(api, admin.Op("get_api_admin_marketplace_payouts_batches_id", http.MethodGet, base+"/batches/{id}",
		"A batch with its transfers (instance admins)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*PayoutBatch], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.Batch(ctx, in.ID))
		})
	for _, op := range []struct {
		id, path, summary string
		do                func(ctx context.Context, u *actor.User, id string) (*PayoutBatch, error)
	}{
		{"post_api_admin_marketplace_payouts_batches_id_approve", "/approve", "Approve a draft: its SEPA file written once and hashed", s.ApproveBatch},
		{"post_api_admin_marketplace_payouts_batches_id_cancel", "/cancel", "Cancel a batch before it is complete (a submitted one if the bank withdraws it)",
			s.CancelBatch},
	} {
		do := op.do
		huma.Register(api, admin.Op(op.id, http.MethodPost, base+"/batches/{id}"+op.path, op.summary+" (instance admins)"),
			func(ctx context.Context, in *idInput) (*httpx.Out[*PayoutBatch], error) {
				u, err := actor.RequireAdmin(ctx)
				if err != nil {
					return nil, err
				}
				return httpx.Reply(do(ctx, u, in.ID))
			})
	}
	huma.Register(api, admin.Op("post_api_admin_marketplace_payouts_batches_id_submit", http.MethodPost, base+"/batches/{id}/submit",
		"Send an approved batch to the bank; with a challenge when the bank asks for a TAN; there is no un-submit (instance admins)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*SubmitResult], error) {
			u, err := actor.RequireAdmin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SubmitBatch(ctx, u, in.ID))
		})
	huma.Register(api, admin.Op("post_api_admin_marketplace_payouts_batches_id_tan", http.MethodPost, base+"/batches/{id}/tan",
		"Answer the bank's challenge with the TAN: forwarded, never stored (instance admins)"),
		func(ctx context.Context, in *tanInput) (*httpx.Out[*PayoutBatch], error) {
			u, err := actor.RequireAdmin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.ConfirmTAN(ctx, u, in.ID, in.Body))
		})
	huma.Register(api, admin.Op("post_api_admin_marketplace_payouts_batches_id_reconcile", http.MethodPost, base+"/batches/{id}/reconcile",
		"Read the bank's status report: paid transfers leave the sellers' ledgers, rejected ones are available again (instance admins)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*ReconcileReport], error) {
			u, err := actor.RequireAdmin(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Reconcile(ctx, u, in.ID))
		})
	huma.Register(api, admin.Op("get_api_admin_marketplace_payouts_batches_id_sepa_xml", http.MethodGet, base+"/batches/{id}/sepa_xml",
		"An approved batch's SEPA file (pain.001), as written at approval; its SHA-256 in the ETag (instance admins)"),
		func(ctx context.Context, in *idInput) (*fileOutput, error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			doc, sum, err := s.BatchFile(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			return &fileOutput{ContentType: "application/xml", ETag: `"` + sum + `"`, Body: doc}, nil
		})
}

// registerOffers mounts runner offers: the organization's side (its
// runners' page) and the marketplace's.
func registerOffers(api huma.API, s *Service, ops httpx.Operations) {
	org := httpx.Operations{Tags: []string{"Runners"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{httpx.Approved(api)}}
	const runnersBase = "/api/organization/runners"
	huma.Register(api, org.Op("get_api_organization_runners_offers", http.MethodGet, runnersBase+"/offers",
		"The organization's runners offered on the marketplace (any member)"),
		func(ctx context.Context, in *httpx.OrgSelector) (*httpx.Out[[]RunnerOffer], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.OrgOffers(ctx, u, sel(*in)))
		})
	huma.Register(api, org.Op("post_api_organization_runners_id_offer", http.MethodPost, runnersBase+"/{id}/offer",
		"Offer the runner on the marketplace (owner or admin with a seller profile; a buyer's secrets never reach it)"),
		func(ctx context.Context, in *runnerOfferInput) (*httpx.Out[*RunnerOffer], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.OfferRunner(ctx, u, sel(in.OrgSelector), in.ID, in.Body))
		})
	huma.Register(api, org.Op("delete_api_organization_runners_id_offer", http.MethodDelete, runnersBase+"/{id}/offer",
		"Withdraw the runner's offer: inactive, neither bought nor dispatched to (no offer: nothing to do)"),
		func(ctx context.Context, in *runnerIDInput) (*httpx.DeletedOutput, error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			changed, err := s.WithdrawRunner(ctx, u, sel(in.OrgSelector), in.ID)
			if err != nil {
				return nil, err
			}
			out := httpx.Deleted()
			out.Body.Deleted = changed
			return out, nil
		})

	const base = "/api/marketplace/runner-offers"
	huma.Register(api, ops.Op("get_api_marketplace_runner_offers", http.MethodGet, base, "Runners offered on the marketplace (active offers)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]RunnerOffer], error) {
			if _, err := actor.RequireApproved(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.Offers(ctx))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_marketplace_runner_offers", http.MethodPost, base,
		"Offer a runner of an organization you own or administer (with your seller profile)")),
		func(ctx context.Context, in *offerCreateInput) (*httpx.Out[*RunnerOffer], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.CreateOffer(ctx, u, sel(in.OrgSelector), in.Body))
		})
	huma.Register(api, ops.Op("get_api_marketplace_runner_offers_id", http.MethodGet, base+"/{id}", "A runner offer (its seller only)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*RunnerOffer], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.Offer(ctx, u, in.ID))
		})
	huma.Register(api, ops.Op("patch_api_marketplace_runner_offers_id", http.MethodPatch, base+"/{id}",
		"Change an offer's name, description or price (its seller only)"),
		func(ctx context.Context, in *offerPatchInput) (*httpx.Out[*RunnerOffer], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.PatchOffer(ctx, u, in.ID, in.Body))
		})
	huma.Register(api, ops.Op("post_api_marketplace_runner_offers_id_activate", http.MethodPost, base+"/{id}/activate",
		"Activate a withdrawn offer (its seller only; another's is 403)"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*RunnerOffer], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.ActivateOffer(ctx, u, in.ID))
		})
	huma.Register(api, ops.Op("get_api_marketplace_seller_runner_offers", http.MethodGet, "/api/marketplace/seller/runner-offers",
		"Your runner offers (none without a seller profile)"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]RunnerOffer], error) {
			u, err := actor.RequireApproved(ctx)
			if err != nil {
				return nil, err
			}
			return httpx.Reply(s.SellerOffers(ctx, u))
		})
}
