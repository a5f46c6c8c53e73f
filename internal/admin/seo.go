package admin

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"image/png"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/billing"
	"slipway/internal/console"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

// SEO limits the checks hold the served pages to.
const (
	// maxDescription is where search engines cut a description.
	maxDescription = 160
	// maxTitle is where search engines cut a title.
	maxTitle = 60
	// A social image is 1200×630 or larger, 1.91:1 (what the large card and
	// Open Graph previews show uncropped).
	socialWidth, socialHeight = 1200, 630
	socialRatio               = 1.91
	socialRatioSlack          = 0.03
)

// PublicPlans lists the plans the public plans page shows (billing).
type PublicPlans interface {
	PublicPlans(ctx context.Context) ([]billing.PublicPlan, error)
}

// SocialImage is the image the Open Graph and Twitter tags name, with the
// dimensions read from the served file.
type SocialImage struct {
	URL    string `json:"url" doc:"As the page's og:image names it, made absolute with the canonical base URL when there is one"`
	Width  int    `json:"width" doc:"Pixels, read from the served file (0 when it cannot be read)"`
	Height int    `json:"height" doc:"Pixels, read from the served file (0 when it cannot be read)"`
}

// SEOCheck is one check of the public pages' metadata.
type SEOCheck struct {
	ID     string `json:"id" doc:"Stable key: canonical_url, title, description, open_graph, social_image, twitter_card, robots, sitemap, public_plans"`
	Name   string `json:"name"`
	Status string `json:"status" enum:"pass,warn,fail"`
	Detail string `json:"detail" doc:"What was found, and what to change when it does not pass"`
}

// SEOReport is the owner console's seo tab: the health of the metadata
// the public pages (sign-in and plans) are served with.
type SEOReport struct {
	Score            int          `json:"score" minimum:"0" maximum:"100" doc:"The share of checks passing, in percent"`
	IndexedRoutes    []string     `json:"indexed_routes" doc:"The public pages the sitemap lists"`
	Locales          []string     `json:"locales" doc:"The languages the console is served in"`
	PublicPlanCount  int          `json:"public_plan_count" doc:"Active, public plans (the plans page shows them)"`
	CanonicalBaseURL *string      `json:"canonical_base_url" nullable:"true" doc:"PUBLIC_URL; null when unset"`
	SocialImage      *SocialImage `json:"social_image,omitempty" required:"false" doc:"Absent when the page names no og:image"`
	CardType         string       `json:"card_type" doc:"The page's twitter:card (empty when absent)"`
	Checks           []SEOCheck   `json:"checks"`
}

// SEO reports on the metadata of the pages this instance serves: the
// built console's index.html and social image (the embedded files, not
// copies), robots.txt and the sitemap as the console makes them, and the
// public plans. The files do not change while the server runs: everything
// but the plans is read once, in the constructor.
type SEO struct {
	plans  PublicPlans
	base   string
	report SEOReport // without the plans' count and check, nor the score
}

// NewSEO reads the built console (files: web/dist) with the canonical
// base URL publicURL (PUBLIC_URL, may be "").
func NewSEO(files fs.FS, publicURL string, plans PublicPlans) *SEO {
	base := strings.TrimRight(publicURL, "/")
	s := &SEO{plans: plans, base: base}
	r := SEOReport{IndexedRoutes: []string{}, Locales: []string{}, Checks: []SEOCheck{}}
	if base != "" {
		r.CanonicalBaseURL = &base
		r.Checks = append(r.Checks, SEOCheck{ID: "canonical_url", Name: "Canonical base URL", Status: "pass",
			Detail: "PUBLIC_URL is " + base + ": the sitemap and robots.txt use it"})
	} else {
		r.Checks = append(r.Checks, SEOCheck{ID: "canonical_url", Name: "Canonical base URL", Status: "warn",
			Detail: "PUBLIC_URL is unset: the sitemap gives the address each request came to; set it to the address people open"})
	}

	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		index = nil
	}
	page := readPage(index)
	if page.lang != "" {
		r.Locales = append(r.Locales, page.lang)
	}
	r.Checks = append(r.Checks, titleCheck(page.title, index != nil), descriptionCheck(page.meta["description"]), openGraphCheck(page.meta))
	var image SEOCheck
	r.SocialImage, image = s.socialImage(files, page.meta)
	r.Checks = append(r.Checks, image)
	r.CardType = page.meta["twitter:card"]
	r.Checks = append(r.Checks, cardCheck(r.CardType, r.SocialImage != nil))

	robots := console.Robots(base)
	var blocked []string
	for _, p := range console.Public {
		if !console.RobotsAllows(robots, p) {
			blocked = append(blocked, p)
		}
	}
	switch {
	case len(blocked) > 0:
		r.Checks = append(r.Checks, SEOCheck{ID: "robots", Name: "robots.txt", Status: "fail",
			Detail: "robots.txt keeps crawlers out of " + strings.Join(blocked, ", ")})
	case !bytes.Contains(robots, []byte("\nSitemap: ")):
		r.Checks = append(r.Checks, SEOCheck{ID: "robots", Name: "robots.txt", Status: "warn", Detail: "robots.txt does not say where the sitemap is"})
	default:
		r.Checks = append(r.Checks, SEOCheck{ID: "robots", Name: "robots.txt", Status: "pass",
			Detail: "Allows " + strings.Join(console.Public, " and ") + ", keeps out the API and the account's pages, names the sitemap"})
	}

	locs, err := console.SitemapLocs(console.Sitemap(base))
	listed := map[string]bool{}
	for _, l := range locs {
		u, perr := url.Parse(l)
		if perr != nil || !strings.HasPrefix(l, base) {
			continue
		}
		listed[u.Path] = true
		if slices.Contains(console.Public, u.Path) && !slices.Contains(r.IndexedRoutes, u.Path) {
			r.IndexedRoutes = append(r.IndexedRoutes, u.Path)
		}
	}
	var missing []string
	for _, p := range console.Public {
		if !listed[p] {
			missing = append(missing, p)
		}
	}
	switch {
	case err != nil:
		r.Checks = append(r.Checks, SEOCheck{ID: "sitemap", Name: "Sitemap", Status: "fail", Detail: "sitemap.xml does not parse: " + err.Error()})
	case len(missing) > 0:
		r.Checks = append(r.Checks, SEOCheck{ID: "sitemap", Name: "Sitemap", Status: "fail", Detail: "sitemap.xml does not list " + strings.Join(missing, ", ")})
	default:
		r.Checks = append(r.Checks, SEOCheck{ID: "sitemap", Name: "Sitemap", Status: "pass",
			Detail: fmt.Sprintf("sitemap.xml lists the %d public pages", len(r.IndexedRoutes))})
	}
	s.report = r
	return s
}

// Report is the report, with the public plans counted now.
func (s *SEO) Report(ctx context.Context) (SEOReport, error) {
	plans, err := s.plans.PublicPlans(ctx)
	if err != nil {
		return SEOReport{}, err
	}
	r := s.report
	r.IndexedRoutes, r.Locales = slices.Clone(r.IndexedRoutes), slices.Clone(r.Locales)
	if r.SocialImage != nil {
		img := *r.SocialImage
		r.SocialImage = &img
	}
	r.PublicPlanCount = len(plans)
	c := SEOCheck{ID: "public_plans", Name: "Public plans", Status: "pass",
		Detail: fmt.Sprintf("The plans page shows %d active, public plans", len(plans))}
	if len(plans) == 0 {
		c.Status, c.Detail = "warn", "No plan is both active and public: the plans page is empty (the plans tab turns Public on)"
	}
	r.Checks = append(slices.Clone(r.Checks), c)
	passing := 0
	for _, c := range r.Checks {
		if c.Status == "pass" {
			passing++
		}
	}
	r.Score = int(math.Round(100 * float64(passing) / float64(len(r.Checks))))
	return r, nil
}

// socialImage finds the page's og:image among the served files and reads
// its dimensions from the PNG header.
func (s *SEO) socialImage(files fs.FS, meta map[string]string) (*SocialImage, SEOCheck) {
	c := SEOCheck{ID: "social_image", Name: "Social image"}
	ref := meta["og:image"]
	if ref == "" {
		c.Status, c.Detail = "fail", "The page names no og:image: shared links show no picture"
		return nil, c
	}
	u, err := url.Parse(ref)
	if err != nil {
		c.Status, c.Detail = "fail", "og:image is not an address: "+ref
		return &SocialImage{URL: ref}, c
	}
	img := &SocialImage{URL: ref}
	if !u.IsAbs() && s.base != "" {
		img.URL = s.base + "/" + strings.TrimPrefix(u.Path, "/")
	}
	if own, _ := url.Parse(s.base); u.IsAbs() && (own == nil || u.Host != own.Host) {
		c.Status, c.Detail = "warn", "og:image points at another site ("+u.Host+"): its dimensions cannot be checked here"
		return img, c
	}
	name := strings.TrimPrefix(u.Path, "/")
	b, err := fs.ReadFile(files, name)
	if err != nil || !slices.Contains(console.Files, "/"+name) {
		c.Status, c.Detail = "fail", "og:image names "+u.Path+", which this server does not serve"
		return img, c
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b)) // the IHDR chunk: width and height
	if err != nil {
		c.Status, c.Detail = "fail", u.Path+" is not a PNG image: "+err.Error()
		return img, c
	}
	img.Width, img.Height = cfg.Width, cfg.Height
	size := fmt.Sprintf("%s is %d×%d", u.Path, img.Width, img.Height)
	ratio := float64(img.Width) / float64(img.Height)
	switch {
	case img.Width < socialWidth || img.Height < socialHeight:
		c.Status, c.Detail = "warn", fmt.Sprintf("%s: smaller than %d×%d, previews blur or crop it", size, socialWidth, socialHeight)
	case math.Abs(ratio-socialRatio) > socialRatioSlack:
		c.Status, c.Detail = "warn", fmt.Sprintf("%s: %.2f:1, not %.2f:1, previews crop it", size, ratio, socialRatio)
	case meta["og:image:width"] != fmt.Sprint(img.Width) || meta["og:image:height"] != fmt.Sprint(img.Height):
		c.Status, c.Detail = "warn", fmt.Sprintf("%s but og:image:width and og:image:height say %q×%q", size, meta["og:image:width"], meta["og:image:height"])
	default:
		c.Status, c.Detail = "pass", size+", as its og:image:width and og:image:height say"
	}
	return img, c
}

func titleCheck(title string, served bool) SEOCheck {
	c := SEOCheck{ID: "title", Name: "Title"}
	n := len([]rune(title))
	switch {
	case !served:
		c.Status, c.Detail = "fail", "The console is not built in this binary: no page to check"
	case n == 0:
		c.Status, c.Detail = "fail", "The page has no <title>"
	case n > maxTitle:
		c.Status, c.Detail = "warn", fmt.Sprintf("%q: %d characters, search results cut it after %d", title, n, maxTitle)
	default:
		c.Status, c.Detail = "pass", fmt.Sprintf("%q", title)
	}
	return c
}

func descriptionCheck(d string) SEOCheck {
	c := SEOCheck{ID: "description", Name: "Description"}
	n := len([]rune(d))
	switch {
	case n == 0:
		c.Status, c.Detail = "fail", `The page has no <meta name="description">: search results show a piece of the page instead`
	case n > maxDescription:
		c.Status, c.Detail = "warn", fmt.Sprintf("%d characters: search results cut it after %d", n, maxDescription)
	default:
		c.Status, c.Detail = "pass", fmt.Sprintf("%d characters (at most %d)", n, maxDescription)
	}
	return c
}

func openGraphCheck(meta map[string]string) SEOCheck {
	c := SEOCheck{ID: "open_graph", Name: "Open Graph tags"}
	want := []string{"og:title", "og:description", "og:type", "og:image"}
	var missing []string
	for _, k := range want {
		if meta[k] == "" {
			missing = append(missing, k)
		}
	}
	switch {
	case len(missing) == len(want):
		c.Status, c.Detail = "fail", "The page has no Open Graph tags: shared links show a bare address"
	case len(missing) > 0:
		c.Status, c.Detail = "warn", "Missing: "+strings.Join(missing, ", ")
	default:
		c.Status, c.Detail = "pass", strings.Join(want, ", ")+" set (og:type "+meta["og:type"]+")"
	}
	return c
}

func cardCheck(card string, image bool) SEOCheck {
	c := SEOCheck{ID: "twitter_card", Name: "Twitter card"}
	switch card {
	case "":
		c.Status, c.Detail = "fail", `The page has no <meta name="twitter:card">`
	case "summary_large_image":
		if !image {
			c.Status, c.Detail = "warn", "summary_large_image without an image to show"
		} else {
			c.Status, c.Detail = "pass", "summary_large_image: the social image shown large"
		}
	case "summary", "app", "player":
		c.Status, c.Detail = "pass", card
	default:
		c.Status, c.Detail = "fail", fmt.Sprintf("%q is no card type (summary, summary_large_image, app, player)", card)
	}
	return c
}

// page is what the checks read of index.html.
type page struct {
	lang  string
	title string
	meta  map[string]string // name or property → content (the first one)
}

var (
	htmlTag  = regexp.MustCompile(`(?is)<html\b[^>]*>`)
	titleTag = regexp.MustCompile(`(?is)<title\b[^>]*>(.*?)</title>`)
	metaTag  = regexp.MustCompile(`(?is)<meta\b[^>]*>`)
	attr     = regexp.MustCompile(`(?s)([a-zA-Z_:][-a-zA-Z0-9_:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))`)
)

// readPage reads the language, the title and the meta tags of an HTML
// document (index.html is Vite's, not arbitrary HTML: tags and quoted
// attributes are enough).
func readPage(doc []byte) page {
	p := page{meta: map[string]string{}}
	if m := htmlTag.Find(doc); m != nil {
		p.lang = attrs(m)["lang"]
	}
	if m := titleTag.FindSubmatch(doc); m != nil {
		p.title = strings.TrimSpace(html.UnescapeString(string(m[1])))
	}
	for _, m := range metaTag.FindAll(doc, -1) {
		a := attrs(m)
		key := a["name"]
		if key == "" {
			key = a["property"]
		}
		key = strings.ToLower(key)
		if _, seen := p.meta[key]; key != "" && !seen {
			p.meta[key] = strings.TrimSpace(a["content"])
		}
	}
	return p
}

func attrs(tag []byte) map[string]string {
	out := map[string]string{}
	for _, m := range attr.FindAllSubmatch(tag, -1) {
		out[strings.ToLower(string(m[1]))] = html.UnescapeString(string(m[2]) + string(m[3]) + string(m[4]))
	}
	return out
}

func registerSEO(api huma.API, ops httpx.Operations, s *SEO) {
	huma.Register(api, ops.Op("get_api_admin_seo", http.MethodGet, "/api/admin/seo",
		"The health of the public pages' metadata: title, description, social image and card, robots.txt, sitemap, public plans"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[SEOReport], error) {
			if _, err := actor.RequireAdmin(ctx); err != nil {
				return nil, err
			}
			return httpx.Reply(s.Report(ctx))
		})
}
