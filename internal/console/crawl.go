package console

import (
	"bytes"
	"encoding/xml"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/httpx"
)

// Public are the pages anyone may read and crawlers may index: the
// sign-in page and the plans page. Every other page is an account's.
var Public = []string{"/login", "/plans"}

// Files are the files at the root of the built console (web/public, copied
// by Vite) that the server serves as they are: the social image the
// Open Graph and Twitter tags of index.html name.
var Files = []string{"/social.png"}

// Crawl are the answers for crawlers, made from the public pages and the
// canonical base URL.
var Crawl = []string{"/robots.txt", "/sitemap.xml"}

// Robots is robots.txt: the public pages allowed, the API and the
// account's pages disallowed, and where the sitemap is. base is the
// canonical base URL (PUBLIC_URL, no trailing slash).
func Robots(base string) []byte {
	var b bytes.Buffer
	b.WriteString("# Slipway: only the sign-in and plans pages are public.\nUser-agent: *\n")
	for _, p := range Public {
		b.WriteString("Allow: " + p + "\n")
	}
	for _, p := range private() {
		b.WriteString("Disallow: " + p + "\n")
	}
	b.WriteString("\nSitemap: " + base + "/sitemap.xml\n")
	return b.Bytes()
}

// private are the path prefixes crawlers are kept out of: the API, the
// organization operations, and every page that is not public (the root
// only: its prefix would be every path).
func private() []string {
	out := []string{"/api/", "/organization"}
	for _, p := range append(slices.Clone(Pages), Shared...) {
		if slices.Contains(Public, p) {
			continue
		}
		if p == "/{$}" {
			out = append(out, "/$")
			continue
		}
		if i := strings.Index(p, "{"); i >= 0 {
			p = p[:i]
		}
		out = append(out, p)
	}
	// A prefix another one covers says nothing more.
	slices.Sort(out)
	kept := out[:0]
	for _, p := range out {
		if len(kept) > 0 && !strings.HasSuffix(kept[len(kept)-1], "$") && strings.HasPrefix(p, kept[len(kept)-1]) {
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

type sitemapURL struct {
	Loc string `xml:"loc"`
}

type sitemap struct {
	XMLName xml.Name     `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 urlset"`
	URLs    []sitemapURL `xml:"url"`
}

// Sitemap is sitemap.xml: the public pages at base.
func Sitemap(base string) []byte {
	m := sitemap{}
	for _, p := range Public {
		m.URLs = append(m.URLs, sitemapURL{Loc: base + p})
	}
	b, _ := xml.MarshalIndent(m, "", "  ") // strings only: it cannot fail
	return append(append([]byte(xml.Header), b...), '\n')
}

// SitemapLocs reads the addresses a sitemap lists.
func SitemapLocs(b []byte) ([]string, error) {
	var m sitemap
	if err := xml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := make([]string, len(m.URLs))
	for i, u := range m.URLs {
		out[i] = strings.TrimSpace(u.Loc)
	}
	return out, nil
}

// RobotsAllows reports whether robots.txt lets every crawler ("User-agent:
// *") fetch p: the longest matching rule decides, Allow on a tie; a rule
// may end in $ (the path's end) and hold * (any characters).
func RobotsAllows(robots []byte, p string) bool {
	inGroup, sawAgent := false, false
	best, allow := -1, true
	for _, line := range strings.Split(string(robots), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		switch key {
		case "user-agent":
			if !sawAgent {
				inGroup = false // a new group starts
			}
			sawAgent = true
			if val == "*" {
				inGroup = true
			}
			continue
		case "allow", "disallow":
			sawAgent = false
			if !inGroup || val == "" {
				continue
			}
			if ruleMatches(val, p) && (len(val) > best || (len(val) == best && key == "allow")) {
				best, allow = len(val), key == "allow"
			}
		default:
			sawAgent = false
		}
	}
	return allow
}

// ruleMatches matches a robots.txt path rule against p: a prefix, with *
// for any characters and a final $ for the path's end.
func ruleMatches(rule, p string) bool {
	anchored := strings.HasSuffix(rule, "$")
	expr := "^" + strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSuffix(rule, "$")), `\*`, ".*")
	if anchored {
		expr += "$"
	}
	re, err := regexp.Compile(expr)
	return err == nil && re.MatchString(p)
}

// base is the canonical base URL, else the origin the request came to: a
// crawler reads a sitemap from the host it fetched it from, and nothing
// in either answer is a secret; the answer is then not cached.
func (c *Console) base(w http.ResponseWriter, r *http.Request) string {
	if c.publicURL != "" {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		return c.publicURL
	}
	w.Header().Set("Cache-Control", "no-store")
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// RobotsTxt answers /robots.txt.
func (c *Console) RobotsTxt(w http.ResponseWriter, r *http.Request) {
	base := c.base(w, r)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(Robots(base))
}

// SitemapXML answers /sitemap.xml.
func (c *Console) SitemapXML(w http.ResponseWriter, r *http.Request) {
	base := c.base(w, r)
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(Sitemap(base))
}

// File answers one of Files from the built console. Its name carries no
// content hash, so it is cached for a day and checked after.
func (c *Console) File(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	b, err := fs.ReadFile(c.files, name)
	if err != nil || !slices.Contains(Files, "/"+name) {
		httpx.WriteError(w, r, apperr.NotFound("file"))
		return
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		w.Header().Set("Content-Type", t)
	}
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, name, c.built, bytes.NewReader(b))
}
