// Package billing holds plans, subscriptions, entitlement overrides and the
// one resolver that decides every limit (DESIGN §11): plan → overrides →
// usage. Enforcement, the quota_exceeded details, the seat summary and the
// owner console read the same decision.
package billing

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
)

// Scope is what a count feature counts within.
type Scope string

const (
	ScopeOrganization Scope = "organization"
	ScopeWorkspace    Scope = "workspace"
)

// Feature is one entitlement key: what it limits, and its value when a plan
// does not name it (the Community default).
type EntitlementFeature struct {
	Key         string `json:"key"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Kind is "count" (a whole number or "unlimited"), "flag" (a boolean)
	// or "amount" (a price in minor units of the plan's currency).
	Kind string `json:"kind" enum:"count,flag,amount"`
	// Scope: what a count is counted within (counts only).
	Scope   Scope `json:"scope,omitempty"`
	Default Value `json:"default"`
}

// Features are the entitlement keys Slipway knows. A plan or an override
// may hold other keys (a value an operator keeps for later); only these are
// enforced.
var Features = []EntitlementFeature{
	{Key: "users.max", Name: "Members", Description: "Active members of an organization (its included seats)", Kind: "count", Scope: ScopeOrganization, Default: Unlimited()},
	{Key: "workspaces.max", Name: "Workspaces", Description: "Workspaces of an organization", Kind: "count", Scope: ScopeOrganization, Default: Unlimited()},
	{Key: "runners.max", Name: "Runners", Description: "Remote runners registered to an organization", Kind: "count", Scope: ScopeOrganization, Default: Unlimited()},
	{Key: "workflows.max", Name: "Workflows", Description: "Workflows of a workspace", Kind: "count", Scope: ScopeWorkspace, Default: Unlimited()},
	{Key: "runs.concurrent", Name: "Concurrent runs", Description: "Workflow runs of a workspace queued or running at once", Kind: "count", Scope: ScopeWorkspace, Default: Unlimited()},
	{Key: "apps.max", Name: "Apps", Description: "Hosted apps of a workspace", Kind: "count", Scope: ScopeWorkspace, Default: Unlimited()},
	{Key: "sso_oidc_byo", Name: "Own identity provider", Description: "Sign-in through the organization's own OpenID provider", Kind: "flag", Default: Flag(false)},
	{Key: "marketplace.sell", Name: "Marketplace selling", Description: "Listing items and runner offers for sale", Kind: "flag", Default: Flag(false)},
	{Key: "seats.overage_price", Name: "Seat beyond the included", Description: "The monthly price of each active member beyond the plan's included seats, in minor units", Kind: "amount", Default: Count(0)},
}

// FeatureOf finds a known feature (nil: unknown).
func FeatureOf(key string) *EntitlementFeature {
	i := slices.IndexFunc(Features, func(f EntitlementFeature) bool { return f.Key == key })
	if i < 0 {
		return nil
	}
	return &Features[i]
}

// Value is an entitlement's value: a whole number, "unlimited", a boolean,
// or an object kept as it is.
type Value struct {
	raw json.RawMessage
}

// Unlimited is the value "unlimited".
func Unlimited() Value { return Value{raw: json.RawMessage(`"unlimited"`)} }

// Count is a whole-number value.
func Count(n int64) Value { return Value{raw: json.RawMessage(strconv.FormatInt(n, 10))} }

// Flag is a boolean value.
func Flag(b bool) Value { return Value{raw: json.RawMessage(strconv.FormatBool(b))} }

// ParseValue checks a value as JSON: a number (whole and non-negative),
// "unlimited", a boolean or an object.
func ParseValue(raw json.RawMessage) (Value, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return Value{}, fmt.Errorf("not JSON: %v", err)
	}
	switch x := v.(type) {
	case float64:
		if x < 0 || x != math.Trunc(x) || x > 1e15 {
			return Value{}, fmt.Errorf("a number must be a non-negative whole number, not %v", x)
		}
		return Count(int64(x)), nil
	case string:
		if x != "unlimited" {
			return Value{}, fmt.Errorf(`a string must be "unlimited", not %q`, x)
		}
		return Unlimited(), nil
	case bool:
		return Flag(x), nil
	case map[string]any:
		b, _ := json.Marshal(x)
		return Value{raw: b}, nil
	}
	return Value{}, fmt.Errorf("a value is a whole number, \"unlimited\", a boolean or an object")
}

// fits checks a value against what the feature takes.
func (f *EntitlementFeature) fits(v Value) error {
	switch f.Kind {
	case "count":
		if _, _, ok := v.Limit(); !ok {
			return fmt.Errorf("%s takes a non-negative whole number or \"unlimited\"", f.Key)
		}
	case "flag":
		if _, ok := v.Bool(); !ok {
			return fmt.Errorf("%s takes true or false", f.Key)
		}
	case "amount":
		if _, unlimited, ok := v.Limit(); !ok || unlimited {
			return fmt.Errorf("%s takes a non-negative whole number of minor units", f.Key)
		}
	}
	return nil
}

// Limit reads a count: its number, or unlimited; ok is false for a value
// that is no count.
func (v Value) Limit() (n int64, unlimited, ok bool) {
	if string(v.raw) == `"unlimited"` {
		return 0, true, true
	}
	n, err := strconv.ParseInt(string(v.raw), 10, 64)
	return n, false, err == nil && n >= 0
}

// Bool reads a flag.
func (v Value) Bool() (b, ok bool) {
	switch string(v.raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// IsZero: no value.
func (v Value) IsZero() bool { return len(v.raw) == 0 }

// MarshalJSON writes the value as it is.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.IsZero() {
		return []byte("null"), nil
	}
	return v.raw, nil
}

// UnmarshalJSON reads any JSON value; ParseValue checks it.
func (v *Value) UnmarshalJSON(b []byte) error {
	v.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Entitlements map feature keys to values.
type Entitlements map[string]Value

// Schema: any JSON value (huma.SchemaProvider).
func (Value) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Description: `A whole number, "unlimited", a boolean or an object`}
}
