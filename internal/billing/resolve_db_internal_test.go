package billing

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestResolveOnBothDatabases tables Resolve over rows in a real database,
// SQLite and PostgreSQL: the organization's plan (none, a subscription, a
// canceled one) × overrides at each scope (global, workspace, user, user
// in workspace; another workspace's, another user's) × expiry (in force,
// expired, not yet granted) × revocation (a revoked row is kept and never
// counts) × usage (active members under, at and over the limit; suspended
// members do not count). Each case starts from its own organization and a
// service with cold caches, so what it reads is what the rows say.
func TestResolveOnBothDatabases(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		d := dbtest.New(t, e)
		ctx := context.Background()
		t0 := clock.Normalize(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
		exec := func(query string, args ...any) {
			t.Helper()
			if err := d.Tx(ctx, func(tx *db.Tx) error { _, err := tx.ExecContext(ctx, query, args...); return err }); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}
		// A small plan beside the catalogue's: two seats, no BYO-OIDC.
		exec(`INSERT INTO plans (id, name, amount_cents, currency, billing_interval, active, public, entitlements, sort_order, created_at, updated_at)
			VALUES ('tiny', 'Tiny', 900, 'EUR', 'month', TRUE, FALSE, '{"users.max": 2, "sso_oidc_byo": false}', 9, $1, $1)`, t0)

		type ov struct {
			scope   string // global, ws, other_ws, ada, bob, ada_in_ws
			value   string
			created time.Duration
			expires time.Duration // 0: never
			revoked bool
		}
		cases := []struct {
			name      string
			plan      string // "": none; "canceled:tiny": a canceled subscription
			active    int    // active members besides ada (the subject)
			suspended int
			overrides []ov
			subject   string // "org", "ws", "ada", "ada_in_ws"
			feature   string
			at        time.Duration
			want      string // value | chain (usage last) | allowed
		}{
			{"no plan: Community's unlimited seats", "", 3, 0, nil, "org", "users.max", 0, `"unlimited" | plan:community:"unlimited" | true`},
			{"the plan's seats, under", "tiny", 0, 0, nil, "org", "users.max", 0, `2 | plan:tiny:2 usage::1 | true`},
			{"the plan's seats, at the limit", "tiny", 1, 0, nil, "org", "users.max", 0, `2 | plan:tiny:2 usage::2 | false`},
			{"suspended members free their seats", "tiny", 0, 3, nil, "org", "users.max", 0, `2 | plan:tiny:2 usage::1 | true`},
			{"a canceled subscription is Community", "canceled:tiny", 5, 0, nil, "org", "users.max", 0, `"unlimited" | plan:community:"unlimited" | true`},
			{"a global grant", "tiny", 2, 0, []ov{{scope: "global", value: "5"}}, "org", "users.max", time.Hour,
				`5 | plan:tiny:2 override(global):#0:5 usage::3 | true`},
			{"a revoked grant never counts", "tiny", 2, 0, []ov{{scope: "global", value: "5", revoked: true}}, "org", "users.max", time.Hour,
				`2 | plan:tiny:2 usage::3 | false`},
			{"an expired grant stops at its expiry", "tiny", 2, 0, []ov{{scope: "global", value: "5", expires: time.Hour}}, "org", "users.max", time.Hour,
				`2 | plan:tiny:2 usage::3 | false`},
			{"in force just before its expiry", "tiny", 2, 0, []ov{{scope: "global", value: "5", expires: time.Hour}}, "org", "users.max", time.Hour - time.Second,
				`5 | plan:tiny:2 override(global):#0:5 usage::3 | true`},
			{"not before it is granted", "tiny", 2, 0, []ov{{scope: "global", value: "5", created: 2 * time.Hour}}, "org", "users.max", time.Hour,
				`2 | plan:tiny:2 usage::3 | false`},
			{"the workspace's grant over the global one", "tiny", 0, 0, []ov{{scope: "global", value: "5"}, {scope: "ws", value: "1", created: time.Minute}},
				"ws", "users.max", time.Hour, `1 | plan:tiny:2 override(workspace):#1:1 usage::1 | false`},
			{"another workspace's grant", "tiny", 0, 0, []ov{{scope: "other_ws", value: "9"}}, "ws", "users.max", time.Hour,
				`2 | plan:tiny:2 usage::1 | true`},
			{"the user's grant over the workspace's", "tiny", 3, 0, []ov{{scope: "ws", value: "3"}, {scope: "ada", value: "8"}}, "ada_in_ws", "users.max", time.Hour,
				`8 | plan:tiny:2 override(user):#1:8 usage::4 | true`},
			{"another user's grant", "tiny", 3, 0, []ov{{scope: "bob", value: "8"}}, "ada_in_ws", "users.max", time.Hour,
				`2 | plan:tiny:2 usage::4 | false`},
			{"the user in the workspace over all", "tiny", 0, 0, []ov{{scope: "ada", value: "8"}, {scope: "ada_in_ws", value: "1"}, {scope: "global", value: "9", created: time.Minute}},
				"ada_in_ws", "users.max", time.Hour, `1 | plan:tiny:2 override(user_in_workspace):#1:1 usage::1 | false`},
			{"a revoked specific grant leaves the global one", "tiny", 2, 0, []ov{{scope: "global", value: "4"}, {scope: "ada_in_ws", value: "1", revoked: true}},
				"ada_in_ws", "users.max", time.Hour, `4 | plan:tiny:2 override(global):#0:4 usage::3 | true`},
			{"unlimited by grant", "tiny", 5, 0, []ov{{scope: "ws", value: `"unlimited"`}}, "ws", "users.max", time.Hour,
				`"unlimited" | plan:tiny:2 override(workspace):#0:"unlimited" | true`},
			{"a flag off on the plan", "tiny", 0, 0, nil, "org", "sso_oidc_byo", 0, `false | plan:tiny:false | false`},
			{"a flag on by a workspace's grant", "tiny", 0, 0, []ov{{scope: "ws", value: "true"}}, "ws", "sso_oidc_byo", time.Hour,
				`true | plan:tiny:false override(workspace):#0:true | true`},
			{"a plan's missing key takes Community's", "tiny", 0, 0, nil, "org", "runners.max", 0, `"unlimited" | default:community:"unlimited" | true`},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				exec("DELETE FROM entitlement_overrides")
				id := func(kind string) string { return fmt.Sprintf("%s-%s-%d", kind, e, i) }
				org, ws, other, ada, bob := id("org"), id("ws"), id("ws2"), id("ada"), id("bob")
				exec("INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, $1, $2, $2)", org, t0)
				exec("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, $1, $3), ($4, $2, $4, $3)", ws, org, t0, other)
				member := func(user string, suspended bool) {
					exec("INSERT INTO users (id, email, display_name, approved, created_at, updated_at) VALUES ($1, $2, $1, TRUE, $3, $3)", user, user+"@example.test", t0)
					var at *time.Time
					if suspended {
						at = &t0
					}
					exec("INSERT INTO organization_members (organization_id, user_id, role, created_at, suspended_at) VALUES ($1, $2, 'member', $3, $4)", org, user, t0, at)
				}
				member(ada, false)
				exec("INSERT INTO users (id, email, display_name, approved, created_at, updated_at) VALUES ($1, $2, $1, TRUE, $3, $3)", bob, bob+"@example.test", t0)
				for n := range tc.active {
					member(fmt.Sprintf("%s-a%d", org, n), false)
				}
				for n := range tc.suspended {
					member(fmt.Sprintf("%s-s%d", org, n), true)
				}
				if tc.plan != "" {
					plan, status := tc.plan, "active"
					if p, ok := strings.CutPrefix(plan, "canceled:"); ok {
						plan, status = p, "canceled"
					}
					exec("INSERT INTO subscriptions (organization_id, plan_id, status, provider, created_at, updated_at) VALUES ($1, $2, $3, 'none', $4, $4)", org, plan, status, t0)
				}
				for n, o := range tc.overrides {
					var wsID, userID, expires, revoked any
					switch o.scope {
					case "ws":
						wsID = ws
					case "other_ws":
						wsID = other
					case "ada":
						userID = ada
					case "bob":
						userID = bob
					case "ada_in_ws":
						wsID, userID = ws, ada
					}
					if o.expires != 0 {
						expires = t0.Add(o.expires)
					}
					status := "active"
					if o.revoked {
						status, revoked = "revoked", t0.Add(time.Minute)
					}
					exec(`INSERT INTO entitlement_overrides (id, feature, value, reason, scope_workspace_id, scope_user_id, expires_at, status, created_at, revoked_at)
						VALUES ($1, $2, $3, 'table', $4, $5, $6, $7, $8, $9)`,
						fmt.Sprintf("#%d", n), tc.feature, o.value, wsID, userID, expires, status, t0.Add(o.created), revoked)
				}
				subj := Subject{OrganizationID: org}
				switch tc.subject {
				case "ws":
					subj = Subject{WorkspaceID: ws}
				case "ada":
					subj = Subject{OrganizationID: org, UserID: ada}
				case "ada_in_ws":
					subj = Subject{WorkspaceID: ws, UserID: ada}
				}
				s := NewService(Config{}, Deps{DB: d, Clock: clock.NewFake(t0), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
				dec, err := s.Resolve(ctx, nil, subj, tc.feature, t0.Add(tc.at), true)
				if err != nil {
					t.Fatal(err)
				}
				var steps []string
				for _, st := range dec.Chain {
					v, _ := st.Value.MarshalJSON()
					src := st.Source
					if st.Scope != "" {
						src += "(" + st.Scope + ")"
					}
					steps = append(steps, src+":"+st.ID+":"+string(v))
				}
				v, _ := dec.Value.MarshalJSON()
				if got := fmt.Sprintf("%s | %s | %v", v, strings.Join(steps, " "), dec.Allowed); got != tc.want {
					t.Fatalf("got  %s\nwant %s", got, tc.want)
				}
			})
		}
	})
}
