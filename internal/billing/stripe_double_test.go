package billing_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/billing/stripetest"
)

// stripeDouble is a stateful stand-in for the few Stripe API endpoints
// billing uses: products (retrieve, create), prices (create, update),
// customers (create), Checkout and Billing Portal sessions (create). It
// speaks Stripe's form-encoded requests, JSON and error shapes, and
// honours Idempotency-Key as Stripe does (the same key answers the first
// call's object). stripe-mock checks the request shapes against Stripe's
// OpenAPI description; this double keeps the state between calls.
type stripeDouble struct {
	*httptest.Server
	mu        sync.Mutex
	products  map[string]bool
	prices    map[string]map[string]any
	customers map[string]map[string]any
	sessions  map[string]map[string]any // checkout sessions
	portals   map[string]map[string]any
	// subscriptions are what GET /v1/subscriptions/{id} answers (tests
	// set them: the double makes none).
	subscriptions map[string]map[string]any
	replays       map[string][]byte // by Idempotency-Key
	calls         []string          // "METHOD path form"
	failNext      bool
	// customerDelay holds each customer creation, so that two racing
	// checkouts both find no customer recorded.
	customerDelay time.Duration
}

func newStripeDouble(t *testing.T, key string) *stripeDouble {
	d := &stripeDouble{products: map[string]bool{}, prices: map[string]map[string]any{}, customers: map[string]map[string]any{},
		sessions: map[string]map[string]any{}, portals: map[string]map[string]any{}, subscriptions: map[string]map[string]any{},
		replays: map[string][]byte{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/customers" {
			d.mu.Lock()
			delay := d.customerDelay
			d.mu.Unlock()
			time.Sleep(delay)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}}`))
			return
		}
		r.ParseForm()
		d.calls = append(d.calls, r.Method+" "+r.URL.Path+" "+r.PostForm.Encode())
		if d.failNext {
			d.failNext = false
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error": {"type": "api_error", "message": "Something went wrong"}}`))
			return
		}
		idem := r.Header.Get("Idempotency-Key")
		if r.Method == "POST" && idem != "" && d.replays[idem] != nil {
			w.Header().Set("Idempotent-Replayed", "true")
			w.Write(d.replays[idem])
			return
		}
		status, obj := d.handle(r)
		body, _ := json.Marshal(obj)
		if r.Method == "POST" && idem != "" && status == http.StatusOK {
			d.replays[idem] = body
		}
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(d.Close)
	return d
}

func stripeError(typ, code, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}}
}

// handle answers one call, under d.mu.
func (d *stripeDouble) handle(r *http.Request) (int, map[string]any) {
	f := r.PostForm
	missing := func(names ...string) string {
		for _, n := range names {
			if f.Get(n) == "" {
				return n
			}
		}
		return ""
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == "GET" && len(parts) == 3 && parts[1] == "products":
		if !d.products[parts[2]] {
			return http.StatusNotFound, stripeError("invalid_request_error", "resource_missing", "No such product")
		}
		return http.StatusOK, map[string]any{"id": parts[2], "object": "product"}
	case r.Method == "POST" && r.URL.Path == "/v1/products":
		if d.products[f.Get("id")] {
			return http.StatusBadRequest, stripeError("invalid_request_error", "resource_already_exists", "Product already exists")
		}
		d.products[f.Get("id")] = true
		return http.StatusOK, map[string]any{"id": f.Get("id"), "object": "product", "name": f.Get("name")}
	case r.Method == "POST" && r.URL.Path == "/v1/prices":
		if m := missing("product", "currency", "unit_amount"); m != "" {
			return http.StatusBadRequest, stripeError("invalid_request_error", "parameter_missing", "Missing required param: "+m)
		}
		id := fmt.Sprintf("price_%d", len(d.prices)+1)
		p := map[string]any{"id": id, "object": "price", "active": true, "product": f.Get("product"),
			"currency": f.Get("currency"), "unit_amount": json.Number(f.Get("unit_amount"))}
		d.prices[id] = p
		return http.StatusOK, p
	case r.Method == "POST" && len(parts) == 3 && parts[1] == "prices" && d.prices[parts[2]] != nil:
		d.prices[parts[2]]["active"] = f.Get("active") != "false"
		return http.StatusOK, d.prices[parts[2]]
	case r.Method == "GET" && len(parts) == 3 && parts[1] == "subscriptions":
		if d.subscriptions[parts[2]] == nil {
			return http.StatusNotFound, stripeError("invalid_request_error", "resource_missing", "No such subscription")
		}
		return http.StatusOK, d.subscriptions[parts[2]]
	case r.Method == "POST" && r.URL.Path == "/v1/customers":
		id := fmt.Sprintf("cus_%d", len(d.customers)+1)
		c := map[string]any{"id": id, "object": "customer", "name": f.Get("name"), "email": f.Get("email"),
			"metadata": map[string]any{"organization_id": f.Get("metadata[organization_id]")}}
		d.customers[id] = c
		return http.StatusOK, c
	case r.Method == "POST" && r.URL.Path == "/v1/checkout/sessions" && f.Get("line_items[0][price_data][currency]") != "":
		// A marketplace purchase: an inline price, no customer.
		if m := missing("mode", "line_items[0][price_data][unit_amount]", "line_items[0][price_data][product_data][name]", "success_url",
			"metadata[slipway_purchase]"); m != "" {
			return http.StatusBadRequest, stripeError("invalid_request_error", "parameter_missing", "Missing required param: "+m)
		}
		id := fmt.Sprintf("cs_test_%d", len(d.sessions)+1)
		s := map[string]any{"id": id, "object": "checkout.session", "mode": f.Get("mode"), "url": d.URL + "/pay/" + id,
			"metadata": map[string]any{"slipway_purchase": f.Get("metadata[slipway_purchase]")}}
		d.sessions[id] = s
		return http.StatusOK, s
	case (r.Method == "POST" || r.Method == "DELETE") && len(parts) == 3 && parts[1] == "subscriptions":
		sub := d.subscriptions[parts[2]]
		if sub == nil {
			return http.StatusNotFound, stripeError("invalid_request_error", "resource_missing", "No such subscription")
		}
		if r.Method == "DELETE" {
			sub["status"] = "canceled"
		} else {
			sub["cancel_at_period_end"] = f.Get("cancel_at_period_end") == "true"
		}
		return http.StatusOK, sub
	case r.Method == "POST" && r.URL.Path == "/v1/checkout/sessions":
		if m := missing("mode", "customer", "line_items[0][price]", "success_url"); m != "" {
			return http.StatusBadRequest, stripeError("invalid_request_error", "parameter_missing", "Missing required param: "+m)
		}
		if d.customers[f.Get("customer")] == nil {
			return http.StatusBadRequest, stripeError("invalid_request_error", "resource_missing", "No such customer")
		}
		if p := d.prices[f.Get("line_items[0][price]")]; p == nil || p["active"] != true {
			return http.StatusBadRequest, stripeError("invalid_request_error", "resource_missing", "No such price, or the price is archived")
		}
		id := fmt.Sprintf("cs_test_%d", len(d.sessions)+1)
		s := map[string]any{"id": id, "object": "checkout.session", "mode": f.Get("mode"), "customer": f.Get("customer"),
			"url": d.URL + "/pay/" + id, "success_url": f.Get("success_url"), "cancel_url": f.Get("cancel_url"),
			"price": f.Get("line_items[0][price]"), "organization_id": f.Get("subscription_data[metadata][organization_id]")}
		d.sessions[id] = s
		return http.StatusOK, s
	case r.Method == "POST" && r.URL.Path == "/v1/billing_portal/sessions":
		if d.customers[f.Get("customer")] == nil {
			return http.StatusBadRequest, stripeError("invalid_request_error", "resource_missing", "No such customer")
		}
		id := fmt.Sprintf("bps_%d", len(d.portals)+1)
		p := map[string]any{"id": id, "object": "billing_portal.session", "customer": f.Get("customer"), "return_url": f.Get("return_url"),
			"url": d.URL + "/portal/" + id}
		d.portals[id] = p
		return http.StatusOK, p
	}
	return http.StatusNotFound, stripeError("invalid_request_error", "", "Unrecognized request URL")
}

// reads counts the subscription reads since the calls were last taken.
func (d *stripeDouble) reads() int {
	n := 0
	for _, c := range d.seen() {
		if strings.HasPrefix(c, "GET /v1/subscriptions/") {
			n++
		}
	}
	return n
}

func (d *stripeDouble) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.calls
	d.calls = nil
	return out
}

// startStripeMock runs stripe-mock until the test ends (stripetest.Mock).
func startStripeMock(t *testing.T) string { return stripetest.Mock(t) }

// subscription is a Stripe subscription object as the API returns it.
func subscription(id, customer, status, price, org string) map[string]any {
	meta := map[string]any{}
	if org != "" {
		meta["organization_id"] = org
	}
	return map[string]any{"id": id, "object": "subscription", "customer": customer, "status": status, "metadata": meta,
		"items": map[string]any{"object": "list", "data": []any{map[string]any{"id": "si_1", "object": "subscription_item",
			"price": map[string]any{"id": price, "object": "price"}}}}}
}
