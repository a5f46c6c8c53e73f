package billing

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestDecide tables the resolver's rule: plan → Community default →
// the most specific override in force (the newest of its scope) → usage,
// with expiry, scope matching, revocation (a revoked grant is not in the
// catalog) and values of each kind.
func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ws, other, ada, bob := "ws-1", "ws-2", "user-ada", "user-bob"
	str := func(s string) *string { return &s }
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	ov := func(id, feature, value string, wsID, userID *string, created time.Duration, expires *time.Time) Override {
		v, err := ParseValue(json.RawMessage(value))
		if err != nil {
			t.Fatal(err)
		}
		return Override{ID: id, Feature: feature, Value: v, WorkspaceID: wsID, UserID: userID, Scope: scopeOf(wsID, userID),
			CreatedAt: t0.Add(created), ExpiresAt: expires, Status: OverrideActive}
	}
	plans := map[string]BillingPlan{
		"community": {ID: "community", Entitlements: Entitlements{"workflows.max": Unlimited(), "sso_oidc_byo": Flag(false)}},
		"team":      {ID: "team", Entitlements: Entitlements{"workflows.max": Count(5), "sso_oidc_byo": Flag(true), "custom": Value{raw: json.RawMessage(`{"a":1}`)}}},
	}
	cases := []struct {
		name      string
		plan      string
		overrides []Override
		subj      Subject
		feature   string
		at        time.Time
		want      string // value, then the chain
		allowed   bool
	}{
		{"community by default", "", nil, Subject{WorkspaceID: ws}, "workflows.max", t0, `"unlimited" | plan:community:"unlimited"`, true},
		{"the plan's count", "team", nil, Subject{WorkspaceID: ws}, "workflows.max", t0, `5 | plan:team:5`, true},
		{"a key the plan lacks takes the Community default", "team", nil, Subject{}, "runners.max", t0, `"unlimited" | default:community:"unlimited"`, true},
		{"a flag", "team", nil, Subject{}, "sso_oidc_byo", t0, `true | plan:team:true`, true},
		{"a flag off", "", nil, Subject{}, "sso_oidc_byo", t0, `false | plan:community:false`, false},
		{"a missing plan is community", "gone", nil, Subject{}, "marketplace.sell", t0, `false | default:community:false`, false},
		{"an object is kept", "team", nil, Subject{}, "custom", t0, `{"a":1} | plan:team:{"a":1}`, false},
		{"an unknown key nobody names", "team", nil, Subject{}, "nothing", t0, ` | `, false},
		{"a zero limit allows nothing", "team", []Override{ov("o1", "workflows.max", "0", nil, nil, 0, nil)}, Subject{}, "workflows.max", t0,
			`0 | plan:team:5 override(global):o1:0`, false},
		{"a global grant", "team", []Override{ov("o1", "workflows.max", "9", nil, nil, 0, nil)}, Subject{WorkspaceID: ws}, "workflows.max", t0,
			`9 | plan:team:5 override(global):o1:9`, true},
		{"another feature's grant is not this one's", "team", []Override{ov("o1", "runners.max", "9", nil, nil, 0, nil)}, Subject{}, "workflows.max", t0,
			`5 | plan:team:5`, true},
		{"another workspace's grant", "team", []Override{ov("o1", "workflows.max", "9", str(other), nil, 0, nil)}, Subject{WorkspaceID: ws}, "workflows.max", t0,
			`5 | plan:team:5`, true},
		{"the workspace's grant over the global one", "team", []Override{
			ov("o1", "workflows.max", "7", str(ws), nil, 0, nil), ov("o2", "workflows.max", "9", nil, nil, time.Minute, nil)},
			Subject{WorkspaceID: ws}, "workflows.max", t0.Add(time.Hour), `7 | plan:team:5 override(workspace):o1:7`, true},
		{"the user's over the workspace's", "team", []Override{
			ov("o1", "workflows.max", "8", nil, str(ada), 0, nil), ov("o2", "workflows.max", "7", str(ws), nil, time.Minute, nil)},
			Subject{WorkspaceID: ws, UserID: ada}, "workflows.max", t0.Add(time.Hour), `8 | plan:team:5 override(user):o1:8`, true},
		{"another user's grant", "team", []Override{ov("o1", "workflows.max", "8", nil, str(bob), 0, nil)},
			Subject{WorkspaceID: ws, UserID: ada}, "workflows.max", t0, `5 | plan:team:5`, true},
		{"the user in the workspace over all", "team", []Override{
			ov("o1", "workflows.max", "6", str(ws), str(ada), 0, nil), ov("o2", "workflows.max", "8", nil, str(ada), time.Minute, nil)},
			Subject{WorkspaceID: ws, UserID: ada}, "workflows.max", t0.Add(time.Hour), `6 | plan:team:5 override(user_in_workspace):o1:6`, true},
		{"the user in another workspace", "team", []Override{ov("o1", "workflows.max", "6", str(other), str(ada), 0, nil)},
			Subject{WorkspaceID: ws, UserID: ada}, "workflows.max", t0, `5 | plan:team:5`, true},
		{"the newest of one scope", "team", []Override{
			ov("o1", "workflows.max", "6", nil, nil, 0, nil), ov("o2", "workflows.max", "11", nil, nil, time.Minute, nil)},
			Subject{}, "workflows.max", t0.Add(time.Hour), `11 | plan:team:5 override(global):o2:11`, true},
		{"not before it was granted", "team", []Override{ov("o1", "workflows.max", "9", nil, nil, time.Hour, nil)},
			Subject{}, "workflows.max", t0, `5 | plan:team:5`, true},
		{"in force until its expiry", "team", []Override{ov("o1", "workflows.max", "9", nil, nil, 0, at(time.Hour))},
			Subject{}, "workflows.max", t0.Add(time.Hour - time.Nanosecond), `9 | plan:team:5 override(global):o1:9`, true},
		{"expired at its expiry", "team", []Override{ov("o1", "workflows.max", "9", nil, nil, 0, at(time.Hour))},
			Subject{}, "workflows.max", t0.Add(time.Hour), `5 | plan:team:5`, true},
		{"an expired specific grant leaves the global one", "team", []Override{
			ov("o1", "workflows.max", "9", nil, nil, 0, nil), ov("o2", "workflows.max", "20", str(ws), nil, 0, at(time.Hour))},
			Subject{WorkspaceID: ws}, "workflows.max", t0.Add(2 * time.Hour), `9 | plan:team:5 override(global):o1:9`, true},
		{"unlimited by grant", "team", []Override{ov("o1", "workflows.max", `"unlimited"`, nil, nil, 0, nil)},
			Subject{}, "workflows.max", t0, `"unlimited" | plan:team:5 override(global):o1:"unlimited"`, true},
		{"a flag turned on by grant", "", []Override{ov("o1", "sso_oidc_byo", "true", str(ws), nil, 0, nil)},
			Subject{WorkspaceID: ws}, "sso_oidc_byo", t0, `true | plan:community:false override(workspace):o1:true`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &catalog{plans: plans, overrides: map[string][]Override{}}
			for _, o := range tc.overrides {
				c.overrides[o.Feature] = append(c.overrides[o.Feature], o)
			}
			d := decide(c, tc.plan, tc.subj, tc.feature, tc.at)
			var steps []string
			for _, s := range d.Chain {
				v, _ := s.Value.MarshalJSON()
				src := s.Source
				if s.Scope != "" {
					src += "(" + s.Scope + ")"
				}
				steps = append(steps, src+":"+s.ID+":"+string(v))
			}
			v := ""
			if !d.Value.IsZero() {
				v = string(d.Value.raw)
			}
			if got := v + " | " + strings.Join(steps, " "); got != tc.want || d.Allowed != tc.allowed {
				t.Fatalf("got %s (allowed %v), want %s (allowed %v)", got, d.Allowed, tc.want, tc.allowed)
			}
			if tc.plan != "" && tc.plan != "gone" && d.PlanID != tc.plan {
				t.Fatalf("plan %s", d.PlanID)
			}
		})
	}
}

// TestParseValue: the values an entitlement takes, and what each feature
// kind accepts.
func TestParseValue(t *testing.T) {
	for raw, want := range map[string]string{
		`0`: "0", `12`: "12", `"unlimited"`: `"unlimited"`, `true`: "true", `false`: "false", `{"x": [1]}`: `{"x":[1]}`,
		`-1`: "error", `1.5`: "error", `"lots"`: "error", `null`: "error", `[1]`: "error", `1e20`: "error", `not json`: "error",
	} {
		v, err := ParseValue(json.RawMessage(raw))
		got := "error"
		if err == nil {
			got = string(v.raw)
		}
		if got != want {
			t.Errorf("%s: %s, want %s", raw, got, want)
		}
	}
	count, flag := FeatureOf("workflows.max"), FeatureOf("sso_oidc_byo")
	for _, tc := range []struct {
		f  *EntitlementFeature
		v  Value
		ok bool
	}{{count, Count(3), true}, {count, Unlimited(), true}, {count, Flag(true), false}, {flag, Flag(false), true}, {flag, Count(1), false}} {
		if err := tc.f.fits(tc.v); (err == nil) != tc.ok {
			t.Errorf("%s takes %s: %v", tc.f.Key, tc.v.raw, err)
		}
	}
}
