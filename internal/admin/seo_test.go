package admin_test

import (
	"bytes"
	"image/png"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"testing"

	"slipway/internal/admin"
	"slipway/internal/apitest"
	"slipway/internal/console"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/web"
)

const seoPath = "/api/admin/seo"

func seo(t *testing.T, c *apitest.Client) (admin.SEOReport, map[string]admin.SEOCheck) {
	t.Helper()
	r := c.Do("GET", seoPath, nil)
	fixture.Want(t, r, http.StatusOK)
	var b admin.SEOReport
	r.JSON(t, &b)
	checks := map[string]admin.SEOCheck{}
	for _, c := range b.Checks {
		if _, dup := checks[c.ID]; dup || c.Name == "" || c.Detail == "" || !slices.Contains([]string{"pass", "warn", "fail"}, c.Status) {
			t.Fatalf("check %+v (twice, unnamed or of no status): %s", c, r.Body)
		}
		checks[c.ID] = c
	}
	return b, checks
}

// servedImage is the social image's size as the embedded console has it.
func servedImage(t *testing.T) (int, int) {
	t.Helper()
	b, err := fs.ReadFile(web.Dist(), "social.png")
	if err != nil {
		t.Fatalf("the console is built without its social image (web/public/social.png): %v", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Width, cfg.Height
}

// TestSEO: only an instance admin reads the report; it reads the served
// page and image (their real dimensions), the sitemap's public pages, the
// English locale; without PUBLIC_URL its canonical check warns and every
// other one passes; the public plan count follows the plans.
func TestSEO(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		pending := f.App.Pending("Pat Pending")
		fixture.WantError(t, f.Owner.Do("GET", seoPath, nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, pending.Do("GET", seoPath, nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, f.App.Anonymous().Do("GET", seoPath, nil), http.StatusUnauthorized, "unauthorized")

		r := f.Admin.Do("GET", seoPath, nil)
		keys := apitest.ObjectKeys(t, r.Body)
		slices.Sort(keys)
		if got := strings.Join(keys, ","); got != "canonical_base_url,card_type,checks,indexed_routes,locales,public_plan_count,score,social_image" {
			t.Fatalf("fields = %s", got)
		}
		if !strings.Contains(string(r.Body), `"canonical_base_url":null`) {
			t.Fatalf("without PUBLIC_URL the canonical base URL is null: %s", r.Body)
		}
		b, checks := seo(t, f.Admin)
		w, h := servedImage(t)
		if b.SocialImage == nil || b.SocialImage.URL != "/social.png" || b.SocialImage.Width != w || b.SocialImage.Height != h || w < 1200 || h < 630 {
			t.Fatalf("social image %+v, served %d×%d", b.SocialImage, w, h)
		}
		if b.CardType != "summary_large_image" || strings.Join(b.IndexedRoutes, " ") != "/login /plans" || strings.Join(b.Locales, " ") != "en" ||
			b.CanonicalBaseURL != nil || b.PublicPlanCount != 3 {
			t.Fatalf("report = %+v", b)
		}
		want := []string{"canonical_url", "title", "description", "open_graph", "social_image", "twitter_card", "robots", "sitemap", "public_plans"}
		if len(checks) != len(want) {
			t.Fatalf("checks = %+v", b.Checks)
		}
		for _, id := range want {
			c, ok := checks[id]
			if !ok {
				t.Fatalf("no check %s: %+v", id, b.Checks)
			}
			if status := map[bool]string{true: "warn", false: "pass"}[id == "canonical_url"]; c.Status != status {
				t.Fatalf("check %+v, want %s", c, status)
			}
		}
		if !strings.Contains(checks["social_image"].Detail, "1200×630") || !strings.Contains(checks["canonical_url"].Detail, "PUBLIC_URL") {
			t.Fatalf("details: %+v", b.Checks)
		}
		if b.Score != 89 { // 8 of 9
			t.Fatalf("score %d", b.Score)
		}

		// The plan count follows the plans: one hidden, all hidden.
		fixture.Want(t, f.Admin.Do("PUT", "/api/admin/plans/team", map[string]any{"public": false}), http.StatusOK)
		if b, _ := seo(t, f.Admin); b.PublicPlanCount != 2 {
			t.Fatalf("team hidden: %d public plans", b.PublicPlanCount)
		}
		for _, id := range []string{"community", "business"} {
			fixture.Want(t, f.Admin.Do("PUT", "/api/admin/plans/"+id, map[string]any{"active": false}), http.StatusOK)
		}
		b, checks = seo(t, f.Admin)
		if b.PublicPlanCount != 0 || checks["public_plans"].Status != "warn" || b.Score != 78 { // 7 of 9
			t.Fatalf("no public plan: %+v", b)
		}
	})
}

// TestSEOPublicURL: with PUBLIC_URL the canonical check passes, the score
// is full, and the image's address and the sitemap use it.
func TestSEOPublicURL(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "PUBLIC_URL", "https://slipway.example")
		b, checks := seo(t, f.Admin)
		if b.CanonicalBaseURL == nil || *b.CanonicalBaseURL != "https://slipway.example" || checks["canonical_url"].Status != "pass" || b.Score != 100 {
			t.Fatalf("report = %+v", b)
		}
		if b.SocialImage == nil || b.SocialImage.URL != "https://slipway.example/social.png" {
			t.Fatalf("social image = %+v", b.SocialImage)
		}
	})
}

// TestCrawlFiles: robots.txt and the sitemap answer anyone (an account
// waiting for approval too) with the public pages at the canonical URL,
// else at the address the request came to; the social image and the plans
// page are served.
func TestCrawlFiles(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		for _, base := range []string{"", "https://slipway.example"} {
			var f *fixture.API
			if base == "" {
				f = fixture.NewAPI(t, e)
			} else {
				f = fixture.NewAPI(t, e, "PUBLIC_URL", base)
			}
			origin := base
			if origin == "" {
				origin = f.App.URL
			}
			for name, c := range map[string]*apitest.Client{"anonymous": f.App.Anonymous(), "pending": f.App.Pending("Pat Pending"), "admin": f.Admin} {
				r := c.Do("GET", "/robots.txt", nil)
				body := string(r.Body)
				if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
					t.Fatalf("%s: robots.txt: %d %s %s", name, r.Status, r.Header.Get("Content-Type"), body)
				}
				for _, line := range []string{"User-agent: *", "Allow: /login", "Allow: /plans", "Disallow: /api/", "Disallow: /admin", "Disallow: /settings",
					"Disallow: /tasks/", "Sitemap: " + origin + "/sitemap.xml"} {
					if !slices.Contains(strings.Split(body, "\n"), line) {
						t.Fatalf("%s: robots.txt has no %q:\n%s", name, line, body)
					}
				}
				for _, p := range []string{"/login", "/plans", "/social.png", "/assets/index.js"} {
					if !console.RobotsAllows(r.Body, p) {
						t.Fatalf("robots.txt keeps crawlers out of %s:\n%s", p, body)
					}
				}
				for _, p := range []string{"/", "/api/plans", "/admin/", "/settings", "/tasks/board", "/workflows/x", "/organization/seat-summary", "/invite"} {
					if console.RobotsAllows(r.Body, p) {
						t.Fatalf("robots.txt lets crawlers into %s:\n%s", p, body)
					}
				}

				r = c.Do("GET", "/sitemap.xml", nil)
				if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/xml") {
					t.Fatalf("%s: sitemap.xml: %d %s", name, r.Status, r.Body)
				}
				locs, err := console.SitemapLocs(r.Body)
				if err != nil || strings.Join(locs, " ") != origin+"/login "+origin+"/plans" {
					t.Fatalf("%s: sitemap lists %v (%v):\n%s", name, locs, err, r.Body)
				}

				r = c.Do("GET", "/social.png", nil)
				if r.Status != 200 || r.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(r.Body, []byte("\x89PNG\r\n\x1a\n")) {
					t.Fatalf("%s: social.png: %d %s", name, r.Status, r.Header.Get("Content-Type"))
				}
				r = c.Do("GET", "/plans", nil, "Accept", "text/html")
				if r.Status != 200 || !strings.Contains(string(r.Body), `<meta name="twitter:card" content="summary_large_image"`) {
					t.Fatalf("%s: /plans: %d %.200s", name, r.Status, r.Body)
				}
			}
		}
	})
}
