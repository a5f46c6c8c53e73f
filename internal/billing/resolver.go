package billing

import (
	"context"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Subject is who a limit is decided for: an organization, and when known
// the workspace and the user acting (overrides may be bound to either).
type Subject struct {
	OrganizationID string
	WorkspaceID    string
	UserID         string
}

// Step is one link of the chain that produced a decision.
type DecisionStep struct {
	Source string `json:"source" enum:"plan,default,override,usage" doc:"plan: the organization's plan; default: the Community default for a key the plan lacks; override: a grant; usage: what is used now"`
	ID     string `json:"id,omitempty" doc:"The plan's or the override's id"`
	Scope  string `json:"scope,omitempty" doc:"An override's scope"`
	Value  Value  `json:"value"`
}

// Decision is what the resolver decided for one feature.
type EntitlementDecision struct {
	Feature   string         `json:"feature"`
	Name      string         `json:"name" doc:"The feature's name (its key for one Slipway does not know)"`
	PlanID    string         `json:"plan_id"`
	Value     Value          `json:"value" doc:"The effective value after overrides"`
	Unlimited bool           `json:"unlimited"`
	Limit     *int64         `json:"limit" nullable:"true" doc:"A count's limit (null: unlimited, or a flag)"`
	PlanLimit Value          `json:"plan_limit" doc:"The plan's own value, before overrides"`
	Usage     *int64         `json:"usage" nullable:"true" doc:"What is used now (counts, when asked for)"`
	Allowed   bool           `json:"allowed"`
	Chain     []DecisionStep `json:"chain"`
}

// catalog is what every decision reads: the plans and, by feature, the
// overrides not revoked, oldest first (expiry is checked at the decision's
// time).
type catalog struct {
	plans     map[string]BillingPlan
	overrides map[string][]Override
}

// Resolve decides feature for the subject at a time, reading through q
// (nil: the pool) what is not in memory: the organization's
// plan (the community plan without a subscription that entitles), the
// Community default for a key the plan lacks, then the most specific
// override in force at that time (user in workspace, user, workspace,
// global; the newest of one scope). With usage, a limited count also reads
// its usage and says whether one more is allowed. Decisions come from
// memory: the plans, the overrides and each organization's plan are cached
// until a change invalidates them, on every replica.
func (s *Service) Resolve(ctx context.Context, q db.Queryer, subj Subject, feature string, at time.Time, withUsage bool) (*EntitlementDecision, error) {
	if q == nil {
		q = s.db.R
	}
	c, err := s.catalog(ctx, q)
	if err != nil {
		return nil, err
	}
	if subj.OrganizationID == "" && subj.WorkspaceID != "" {
		if subj.OrganizationID, err = s.orgOf(ctx, q, subj.WorkspaceID); err != nil {
			return nil, err
		}
	}
	planID, err := s.planOf(ctx, q, subj.OrganizationID)
	if err != nil {
		return nil, err
	}
	d := decide(c, planID, subj, feature, at)
	f := FeatureOf(feature)
	if !withUsage || f == nil || f.Kind != "count" || d.Unlimited || d.Limit == nil {
		return d, nil
	}
	scopeID := subj.OrganizationID
	if f.Scope == ScopeWorkspace {
		scopeID = subj.WorkspaceID
	}
	n, counted, err := usage(ctx, q, feature, scopeID)
	if err != nil || !counted {
		return d, err
	}
	d.Usage = &n
	d.Chain = append(d.Chain, DecisionStep{Source: "usage", Value: Count(n)})
	d.Allowed = n < *d.Limit
	return d, nil
}

// decide is the pure part of Resolve: plan, default, overrides.
func decide(c *catalog, planID string, subj Subject, feature string, at time.Time) *EntitlementDecision {
	if planID == "" {
		planID = CommunityPlan
	}
	d := &EntitlementDecision{Feature: feature, Name: feature, PlanID: planID, Chain: []DecisionStep{}}
	if f := FeatureOf(feature); f != nil {
		d.Name = f.Name
	}
	if p, ok := c.plans[planID]; ok {
		if v, ok := p.Entitlements[feature]; ok {
			d.Value = v
			d.Chain = append(d.Chain, DecisionStep{Source: "plan", ID: planID, Value: v})
		}
	}
	if d.Value.IsZero() {
		if f := FeatureOf(feature); f != nil {
			d.Value = f.Default
			d.Chain = append(d.Chain, DecisionStep{Source: "default", ID: CommunityPlan, Value: f.Default})
		}
	}
	d.PlanLimit = d.Value
	var best *Override
	list := c.overrides[feature]
	for i := range list {
		o := &list[i]
		if (o.ExpiresAt != nil && !at.Before(*o.ExpiresAt)) || o.CreatedAt.After(at) {
			continue
		}
		if (o.WorkspaceID != nil && *o.WorkspaceID != subj.WorkspaceID) || (o.UserID != nil && *o.UserID != subj.UserID) {
			continue
		}
		if best == nil || specificity(o.Scope) >= specificity(best.Scope) {
			best = o // overrides are oldest first: the newest of a scope wins
		}
	}
	if best != nil {
		d.Value = best.Value
		d.Chain = append(d.Chain, DecisionStep{Source: "override", ID: best.ID, Scope: best.Scope, Value: best.Value})
	}
	if f := FeatureOf(feature); f != nil && f.Kind == "amount" {
		d.Allowed = true // a price, not a limit
		return d
	}
	if n, unlimited, ok := d.Value.Limit(); ok {
		d.Unlimited, d.Allowed = unlimited, true
		if !unlimited {
			d.Limit = &n
			d.Allowed = n > 0
		}
	} else if b, ok := d.Value.Bool(); ok {
		d.Allowed = b
	}
	return d
}

// Check enforces a feature inside the transaction that adds to it: a flag
// must be on; a limited count is counted under its scope's row lock (so two
// additions cannot both take the last one), and adding more than is left is
// quota_exceeded with the decision as details. An unlimited count costs no
// query.
func (s *Service) Check(ctx context.Context, tx *db.Tx, subj Subject, feature string, adding int64) error {
	if subj.OrganizationID == "" && subj.WorkspaceID != "" {
		org, err := s.orgOf(ctx, tx, subj.WorkspaceID)
		if err != nil {
			return err
		}
		subj.OrganizationID = org
	}
	d, err := s.Resolve(ctx, tx, subj, feature, s.clock.Now(), false)
	if err != nil {
		return err
	}
	f := FeatureOf(feature)
	if f == nil {
		return nil
	}
	if f.Kind == "flag" {
		if !d.Allowed {
			return s.exceeded(d, "your plan does not include "+f.Name)
		}
		return nil
	}
	if d.Unlimited || d.Limit == nil {
		return nil
	}
	scopeID := subj.OrganizationID
	if f.Scope == ScopeWorkspace {
		scopeID = subj.WorkspaceID
	}
	if err := lockScope(ctx, tx, s.db.Dialect, f.Scope, scopeID); err != nil {
		return err
	}
	n, counted, err := usage(ctx, tx, feature, scopeID)
	if err != nil || !counted {
		return err
	}
	d.Usage = &n
	d.Chain = append(d.Chain, DecisionStep{Source: "usage", Value: Count(n)})
	if d.Allowed = n+adding <= *d.Limit; !d.Allowed {
		return s.exceeded(d, "the "+string(f.Scope)+" has "+itoa(n)+" of "+itoa(*d.Limit)+" "+lower(f.Name)+" its plan allows")
	}
	return nil
}

// exceeded is the quota_exceeded error of a decision: its details carry the
// feature, the limit, the usage, where to upgrade and the chain.
func (s *Service) exceeded(d *EntitlementDecision, why string) error {
	details := map[string]any{"feature": d.Feature, "plan_id": d.PlanID, "limit": d.Limit, "plan_limit": d.PlanLimit,
		"usage": d.Usage, "upgrade_url": s.cfg.PublicURL + UpgradePath, "chain": d.Chain}
	if d.Limit == nil {
		details["limit"] = d.Value
	}
	return &apperr.Error{Code: apperr.CodeQuotaExceeded, Message: "quota exceeded: " + why, Details: details}
}

// UpgradePath is the console page that shows an organization's plan and
// how to change it (the settings page's plan card).
const UpgradePath = "/settings"

// Entitlements are the decisions for every known feature in the active
// workspace, for the user asking: what the organization's plan gives, what
// overrides change, and what is used.
func (s *Service) Entitlements(ctx context.Context, ws *actor.Workspace, u *actor.User) ([]EntitlementDecision, error) {
	subj := Subject{OrganizationID: ws.OrganizationID, WorkspaceID: ws.ID, UserID: u.ID}
	now := s.clock.Now()
	out := make([]EntitlementDecision, 0, len(Features))
	for _, f := range Features {
		d, err := s.Resolve(ctx, nil, subj, f.Key, now, true)
		if err != nil {
			return nil, err
		}
		out = append(out, *d)
	}
	return out, nil
}
