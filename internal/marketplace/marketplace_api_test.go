package marketplace_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/marketplace"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

type obj = map[string]any

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func items(t *testing.T, c *apitest.Client, query string) marketplace.MarketItemPage {
	t.Helper()
	r := c.Do("GET", "/api/marketplace/items"+query, nil)
	fixture.Want(t, r, http.StatusOK)
	var p marketplace.MarketItemPage
	r.JSON(t, &p)
	return p
}

func has(p marketplace.MarketItemPage, slug string) bool {
	return slices.ContainsFunc(p.Items, func(it marketplace.MarketItem) bool { return it.Slug == slug })
}

// TestMarketplaceCatalog, on both databases: the official catalog is there
// at boot; a workspace publishes a script (semver, immutable versions,
// admins only); another workspace sees it only once the instance's review
// approves it, installs it (its script made, pinned to the digest,
// idempotent), arms auto-update: a compatible version applies by itself,
// one that adds an outbound host is held and its installer told; the
// update preview shows the code and capability diff; a takedown withdraws
// every version (installs blocked, what was installed kept) and restore
// brings them back unverified; a tampered file is refused by its digest;
// all audited; another workspace's install is an unknown one.
func TestMarketplaceCatalog(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		pub, buyer, admin := f.Owner, f.Outsider, f.Admin
		member := f.Member(t, pub, "Mia Member")

		// The official catalog, seeded at boot.
		eventually(t, "the official items", func() bool { return has(items(t, buyer, "?q=slugify"), "slugify") })
		off := items(t, buyer, "?q=SLUGIFY")
		if len(off.Items) != 1 || !off.Items[0].Verified || off.Items[0].Kind != "script" || off.Items[0].LatestVersion != "1.0.0" {
			t.Fatalf("the official item: %+v", off)
		}

		// A script of the publisher's, published.
		r := pub.Do("POST", "/api/scripts", obj{"name": "Greeter", "slug": "greeter", "language": "sh", "source": "echo '{\"hi\": 1}'\n"})
		fixture.Want(t, r, http.StatusCreated)
		script := r.Map(t)["id"].(string)
		publish := func(c *apitest.Client, version string, caps obj) *apitest.Response {
			return c.Do("POST", "/api/marketplace/scripts/publish", obj{"script_id": script, "summary": "Says hi", "tags": []string{"demo"},
				"version": version, "changelog": "Version " + version, "capabilities": caps})
		}
		fixture.WantError(t, publish(member, "1.0.0", nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, publish(pub, "1.0", nil), http.StatusBadRequest, "bad_request", "semver")
		fixture.WantError(t, publish(pub, "1.0.0", obj{"outbound_hosts": []string{"not a host!"}}), http.StatusBadRequest, "bad_request", "host")
		r = publish(pub, "1.0.0", nil)
		fixture.Want(t, r, http.StatusCreated)
		var p1 marketplace.Published
		r.JSON(t, &p1)
		item := p1.Item.ID
		if p1.Item.Slug != "greeter" || !p1.Item.Mine || p1.Item.Verified || !strings.HasPrefix(p1.Version.Digest, "sha256:") || len(p1.Version.Files) != 1 {
			t.Fatalf("published: %+v", p1)
		}
		fixture.WantError(t, publish(pub, "1.0.0", nil), http.StatusConflict, "conflict", "immutable")
		fixture.WantError(t, publish(pub, "0.9.0", nil), http.StatusConflict, "conflict", "not higher")
		if len(f.App.AuditEntries(t, "marketplace.publish", item)) != 1 {
			t.Fatal("the publish is not audited")
		}

		// Unreviewed: another workspace sees nothing of it.
		if has(items(t, buyer, ""), "greeter") {
			t.Fatal("an unreviewed item is visible to another workspace")
		}
		fixture.WantError(t, buyer.Do("GET", "/api/marketplace/items/"+item, nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, buyer.Do("GET", "/api/marketplace/items/"+ids.New(), nil), http.StatusNotFound, "not_found")

		// The review gate.
		fixture.WantError(t, pub.Do("GET", "/api/admin/marketplace/review", nil), http.StatusForbidden, "forbidden")
		r = admin.Do("GET", "/api/admin/marketplace/review", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"slug":"greeter"`) || strings.Contains(string(r.Body), `"slug":"slugify"`) {
			t.Fatalf("the review queue: %s", r.Body)
		}
		fixture.WantError(t, pub.Do("POST", "/api/admin/marketplace/items/"+item+"/review/approve", nil), http.StatusForbidden, "forbidden")
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+item+"/review/approve", nil), http.StatusOK)
		if strings.Contains(string(admin.Do("GET", "/api/admin/marketplace/review", nil).Body), "greeter") {
			t.Fatal("a decided item is still in the queue")
		}
		if a := f.App.AuditEntries(t, "marketplace.review.approve", item); len(a) != 1 || a[0].After["verified"] != true {
			t.Fatalf("the approval's audit: %+v", a)
		}
		r = buyer.Do("GET", "/api/marketplace/items/"+item+"/review", nil)
		if rv := r.Map(t); rv["verdict"] != "approved" {
			t.Fatalf("the public review: %s", r.Body)
		}
		if !has(items(t, buyer, "?q=greet&kind=script"), "greeter") {
			t.Fatal("a verified item is not visible")
		}

		// Install: a preview, then the script made; again changes nothing.
		r = buyer.Do("POST", "/api/marketplace/items/"+item+"/versions/1.0.0/install_preview", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"action":"create"`) {
			t.Fatalf("the install preview: %s", r.Body)
		}
		r = buyer.Do("POST", "/api/marketplace/items/"+item+"/versions/1.0.0/install", nil)
		fixture.Want(t, r, http.StatusCreated)
		var inst marketplace.MarketInstall
		r.JSON(t, &inst)
		if inst.Version != "1.0.0" || inst.Digest != p1.Version.Digest || inst.Range != "^1.0.0" || inst.Objects["script"] == "" {
			t.Fatalf("the install: %+v", inst)
		}
		r = buyer.Do("POST", "/api/marketplace/items/"+item+"/versions/1.0.0/install", nil)
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["id"] != inst.ID {
			t.Fatal("installing again made another install")
		}
		installed := inst.Objects["script"]
		sc := buyer.Do("GET", "/api/scripts/"+installed, nil).Map(t)
		if sc["slug"] != "greeter" || sc["source"] != "echo '{\"hi\": 1}'\n" {
			t.Fatalf("the installed script: %+v", sc)
		}

		// Auto-update: a compatible version applies by itself.
		fixture.Want(t, buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/auto_update", obj{"enabled": true}), http.StatusOK)
		fixture.Want(t, pub.Do("PATCH", "/api/scripts/"+script, obj{"source": "echo '{\"hi\": 2}'\n"}), http.StatusOK)
		fixture.Want(t, publish(pub, "1.1.0", nil), http.StatusCreated)
		installOf := func() marketplace.MarketInstall {
			var out marketplace.MarketInstall
			buyer.Do("GET", "/api/marketplace/installs", nil).JSON(t, &[]*marketplace.MarketInstall{&out})
			return out
		}
		eventually(t, "the auto-update to 1.1.0", func() bool { return installOf().Version == "1.1.0" })
		if sc := buyer.Do("GET", "/api/scripts/"+installed, nil).Map(t); sc["source"] != "echo '{\"hi\": 2}'\n" || sc["version"] != float64(2) {
			t.Fatalf("the auto-updated script: %+v", sc)
		}
		// One that adds an outbound host is held, and the installer told.
		fixture.Want(t, pub.Do("PATCH", "/api/scripts/"+script, obj{"source": "curl -s https://api.example.com/hi\n"}), http.StatusOK)
		fixture.Want(t, publish(pub, "1.2.0", obj{"outbound_hosts": []string{"API.example.com"}}), http.StatusCreated)
		eventually(t, "the held update", func() bool { return installOf().HeldVersion != nil })
		held := installOf()
		if held.Version != "1.1.0" || *held.HeldVersion != "1.2.0" || !strings.Contains(*held.HeldReason, "outbound_hosts: api.example.com") {
			t.Fatalf("held: %+v", held)
		}
		if r := buyer.Do("GET", "/notifications?source=approval", nil); !strings.Contains(string(r.Body), "Update Greeter to 1.2.0?") {
			t.Fatalf("the installer was not told: %s", r.Body)
		}
		// The preview: the code's diff and the capability diff.
		r = buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/update_preview", nil)
		fixture.Want(t, r, http.StatusOK)
		var up marketplace.UpdatePreview
		r.JSON(t, &up)
		if up.From != "1.1.0" || up.To != "1.2.0" || !up.Capabilities.Grew || !slices.Equal(up.Capabilities.Added, []string{"outbound_hosts: api.example.com"}) ||
			len(up.Files) != 1 || up.Files[0].Status != "changed" || !strings.Contains(up.Files[0].Patch, "+  \"source\": \"curl -s https://api.example.com/hi\\n\"") {
			t.Fatalf("the update preview: %s", r.Body)
		}
		// A person's update applies it.
		r = buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/update", nil)
		fixture.Want(t, r, http.StatusOK)
		if got := installOf(); got.Version != "1.2.0" || got.HeldVersion != nil {
			t.Fatalf("updated: %+v", got)
		}
		if len(f.App.AuditEntries(t, "marketplace.auto_update.apply", inst.ID)) != 1 || len(f.App.AuditEntries(t, "marketplace.update.held", inst.ID)) != 1 ||
			len(f.App.AuditEntries(t, "marketplace.update", inst.ID)) != 1 {
			t.Fatal("the updates are not audited")
		}

		// Ratings: only what the workspace installed; public to who sees
		// the item; one per person, kept in the item's average.
		fixture.WantError(t, pub.Do("PUT", "/api/marketplace/items/"+item+"/rating", obj{"stars": 5}), http.StatusForbidden, "forbidden", "installed")
		fixture.WantError(t, buyer.Do("PUT", "/api/marketplace/items/"+item+"/rating", obj{"stars": 6}), http.StatusBadRequest, "bad_request")
		fixture.Want(t, buyer.Do("PUT", "/api/marketplace/items/"+item+"/rating", obj{"stars": 3, "comment": "ok"}), http.StatusOK)
		fixture.Want(t, buyer.Do("PUT", "/api/marketplace/items/"+item+"/rating", obj{"stars": 4, "comment": "Works well."}), http.StatusOK)
		if mine := buyer.Do("GET", "/api/marketplace/items/"+item+"/rating/mine", nil).Map(t); mine["stars"] != float64(4) {
			t.Fatalf("my rating: %+v", mine)
		}
		var rp marketplace.RatingPage
		pub.Do("GET", "/api/marketplace/items/"+item+"/ratings?limit=10", nil).JSON(t, &rp)
		if rp.Total != 1 || rp.Items[0].Stars != 4 || rp.Items[0].Comment != "Works well." {
			t.Fatalf("the ratings: %+v", rp)
		}
		var rated marketplace.MarketItem
		buyer.Do("GET", "/api/marketplace/items/"+item, nil).JSON(t, &rated)
		if rated.RatingCount != 1 || rated.RatingAverage == nil || *rated.RatingAverage != 4 {
			t.Fatalf("the item's rating: %+v", rated)
		}
		if r := buyer.Do("GET", "/api/marketplace/items/"+ids.New()+"/ratings", nil); r.Status != http.StatusNotFound {
			t.Fatalf("an unknown item's ratings: %d", r.Status)
		}

		// Another workspace's install is an unknown one.
		apitest.CheckTenancy(t, buyer, pub, []apitest.TenancyCase{
			{Name: "update preview", Method: "POST", Path: "/api/marketplace/installs/{id}/update_preview",
				Create: func(*testing.T, *apitest.Client) string { return inst.ID }},
			{Name: "auto update", Method: "POST", Path: "/api/marketplace/installs/{id}/auto_update", Body: obj{"enabled": false},
				Create: func(*testing.T, *apitest.Client) string { return inst.ID }},
			{Name: "update", Method: "POST", Path: "/api/marketplace/installs/{id}/update", Body: obj{},
				Create: func(*testing.T, *apitest.Client) string { return inst.ID }},
		})

		// Takedown: every version withdrawn, installs blocked, what was
		// installed kept, the installers told; restore: unverified.
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+item+"/takedown", nil), http.StatusOK)
		fixture.WantError(t, admin.Do("POST", "/api/admin/marketplace/items/"+item+"/takedown", nil), http.StatusConflict, "conflict")
		fixture.WantError(t, pub.Do("POST", "/api/marketplace/items/"+item+"/versions/1.2.0/install_preview", nil), http.StatusConflict, "conflict", "withdrawn")
		fixture.WantError(t, publish(pub, "1.3.0", nil), http.StatusConflict, "conflict", "taken down")
		if has(items(t, buyer, ""), "greeter") {
			t.Fatal("a taken-down item is still listed to another workspace")
		}
		fixture.Want(t, buyer.Do("GET", "/api/scripts/"+installed, nil), http.StatusOK)
		if r := buyer.Do("GET", "/notifications?source=approval", nil); !strings.Contains(string(r.Body), "was taken down") {
			t.Fatalf("the installer was not told of the takedown: %s", r.Body)
		}
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+item+"/restore", nil), http.StatusOK)
		var vs []marketplace.ItemVersion
		pub.Do("GET", "/api/marketplace/items/"+item+"/versions", nil).JSON(t, &vs)
		if len(vs) != 3 || vs[0].Version != "1.2.0" || slices.ContainsFunc(vs, func(v marketplace.ItemVersion) bool { return v.Withdrawn }) {
			t.Fatalf("restored versions: %+v", vs)
		}
		if has(items(t, buyer, ""), "greeter") {
			t.Fatal("a restored item is verified again")
		}
		if len(f.App.AuditEntries(t, "marketplace.takedown", item)) != 1 || len(f.App.AuditEntries(t, "marketplace.restore", item)) != 1 {
			t.Fatal("takedown and restore are not audited")
		}

		// Sources: the official one read-only; the publisher's own grants
		// the buyer, who then sees the unverified item; it has items, so
		// it stays.
		var srcs []marketplace.MarketSource
		pub.Do("GET", "/api/marketplace/sources", nil).JSON(t, &srcs)
		if len(srcs) != 2 || srcs[0].Kind != "official" || srcs[1].Kind != "workspace" || srcs[1].Items != 1 {
			t.Fatalf("sources: %+v", srcs)
		}
		official, own := srcs[0].ID, srcs[1].ID
		fixture.WantError(t, pub.Do("PATCH", "/api/marketplace/sources/"+official, obj{"name": "Mine"}), http.StatusForbidden, "forbidden")
		fixture.WantError(t, pub.Do("DELETE", "/api/marketplace/sources/"+official, nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, pub.Do("DELETE", "/api/marketplace/sources/"+own, nil), http.StatusConflict, "conflict", "published items")
		fixture.WantError(t, buyer.Do("PATCH", "/api/marketplace/sources/"+own, obj{"name": "Stolen"}), http.StatusNotFound, "not_found")
		fixture.WantError(t, member.Do("PATCH", "/api/marketplace/sources/"+own, obj{"grants": []string{buyer.DefaultWorkspace()}}), http.StatusForbidden, "forbidden")
		fixture.Want(t, pub.Do("PATCH", "/api/marketplace/sources/"+own, obj{"grants": []string{buyer.DefaultWorkspace()}}), http.StatusOK)
		if !has(items(t, buyer, ""), "greeter") {
			t.Fatal("a granted item is not visible")
		}
		if has(items(t, admin, ""), "greeter") { // a grant names whom it grants, no one else
			t.Fatal("a workspace the source does not name sees its item")
		}
		fixture.Want(t, pub.Do("POST", "/api/marketplace/sources/"+official+"/sync", nil), http.StatusOK)

		// The tenancy table: an item (unreviewed) and a source of another
		// workspace answer exactly like unknown ones.
		r = pub.Do("POST", "/api/scripts", obj{"name": "Hidden", "slug": "hidden", "language": "sh", "source": "true\n"})
		fixture.Want(t, r, http.StatusCreated)
		r = pub.Do("POST", "/api/marketplace/scripts/publish", obj{"script_id": r.Map(t)["id"], "version": "1.0.0", "changelog": "First."})
		fixture.Want(t, r, http.StatusCreated)
		var hidden marketplace.Published
		r.JSON(t, &hidden)
		itemID := func(*testing.T, *apitest.Client) string { return hidden.Item.ID }
		sourceID := func(*testing.T, *apitest.Client) string { return own }
		apitest.CheckTenancy(t, pub, admin, []apitest.TenancyCase{
			{Name: "item", Method: "GET", Path: "/api/marketplace/items/{id}", Create: itemID},
			{Name: "versions", Method: "GET", Path: "/api/marketplace/items/{id}/versions", Create: itemID},
			{Name: "files", Method: "GET", Path: "/api/marketplace/items/{id}/files", Create: itemID},
			{Name: "review", Method: "GET", Path: "/api/marketplace/items/{id}/review", Create: itemID},
			{Name: "preview", Method: "GET", Path: "/api/marketplace/items/{id}/preview/script", Create: itemID},
			{Name: "ratings", Method: "GET", Path: "/api/marketplace/items/{id}/ratings", Create: itemID},
			{Name: "rate", Method: "PUT", Path: "/api/marketplace/items/{id}/rating", Body: obj{"stars": 1}, Create: itemID},
			{Name: "my rating", Method: "GET", Path: "/api/marketplace/items/{id}/rating/mine", Create: itemID},
			{Name: "unrate", Method: "DELETE", Path: "/api/marketplace/items/{id}/rating", Create: itemID},
			{Name: "graph", Method: "GET", Path: "/api/marketplace/items/{id}/preview/graph", Create: itemID},
			{Name: "install preview", Method: "POST", Path: "/api/marketplace/items/{id}/versions/1.0.0/install_preview", Create: itemID},
			{Name: "source patch", Method: "PATCH", Path: "/api/marketplace/sources/{id}", Body: obj{"name": "Published here"}, Create: sourceID},
			{Name: "source sync", Method: "POST", Path: "/api/marketplace/sources/{id}/sync", Create: sourceID},
		})

		// A file tampered with after publishing: refused by its digest.
		f.Exec(t, fmt.Sprintf("UPDATE marketplace_files SET content = $1 WHERE version_id = '%s'", vs[0].ID), []byte("tampered"))
		fixture.WantError(t, buyer.Do("POST", "/api/marketplace/items/"+item+"/versions/1.2.0/install_preview", nil), http.StatusConflict, "conflict",
			"does not match its digest")
	})
}

// TestMarketplaceNodeTypes: a node type is published with its script (the
// node kind it adds among its capabilities); another workspace installs
// both, in one transaction, and a workflow there can use the node; an
// update changes the node type's schema and its script in place.
func TestMarketplaceNodeTypes(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		pub, buyer, admin := f.Owner, f.Outsider, f.Admin
		r := pub.Do("POST", "/api/scripts", obj{"name": "Shout", "slug": "shout", "language": "sh", "source": "echo '{\"loud\": true}'\n"})
		fixture.Want(t, r, http.StatusCreated)
		script := r.Map(t)["id"].(string)
		schema := obj{"type": "object", "properties": obj{"word": obj{"type": "string"}}}
		r = pub.Do("POST", "/api/workflow-node-types", obj{"slug": "shouter", "name": "Shouter", "script_id": script, "config_schema": schema})
		fixture.Want(t, r, http.StatusCreated)
		node := r.Map(t)["id"].(string)
		r = pub.Do("POST", "/api/marketplace/nodes/publish", obj{"node_type_id": node, "version": "1.0.0", "changelog": "First."})
		fixture.Want(t, r, http.StatusCreated)
		var p marketplace.Published
		r.JSON(t, &p)
		if p.Item.Kind != "node" || len(p.Version.Objects) != 2 || !slices.Equal(p.Version.Capabilities.NodeKinds, []string{"shouter"}) {
			t.Fatalf("published: %+v", p)
		}
		var prev marketplace.NodePreview
		pub.Do("GET", "/api/marketplace/items/"+p.Item.ID+"/preview/node", nil).JSON(t, &prev)
		if prev.NodeType.Slug != "shouter" || prev.NodeType.Script != "script" || prev.Script.Slug != "shout" {
			t.Fatalf("the node preview: %+v", prev)
		}
		var files []marketplace.VersionFile
		pub.Do("GET", "/api/marketplace/items/"+p.Item.ID+"/files?version=1.0.0", nil).JSON(t, &files)
		if len(files) != 2 || files[0].Path != "node_types/shouter.json" || !strings.Contains(files[1].Content, "loud") {
			t.Fatalf("the files: %+v", files)
		}
		fixture.WantError(t, pub.Do("GET", "/api/marketplace/items/"+p.Item.ID+"/preview/script", nil), http.StatusBadRequest, "bad_request", "not a script")
		// A rejection, audited with its reason, before the approval.
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+p.Item.ID+"/review/reject", obj{"reason": "needs a README"}), http.StatusOK)
		if a := f.App.AuditEntries(t, "marketplace.review.reject", p.Item.ID); len(a) != 1 || a[0].After["reason"] != "needs a README" || a[0].After["verified"] != false {
			t.Fatalf("the rejection's audit: %+v", a)
		}
		fixture.WantError(t, pub.Do("POST", "/api/marketplace/nodes/publish", obj{"node_type_id": ids.New(), "version": "1.0.1", "changelog": "x"}),
			http.StatusBadRequest, "bad_request", "node_type_id")
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+p.Item.ID+"/review/approve", nil), http.StatusOK)

		r = buyer.Do("POST", "/api/marketplace/items/"+p.Item.ID+"/versions/1.0.0/install", nil)
		fixture.Want(t, r, http.StatusCreated)
		var inst marketplace.MarketInstall
		r.JSON(t, &inst)
		nt := buyer.Do("GET", "/api/workflow-node-types/"+inst.Objects["node_type"], nil).Map(t)
		if nt["slug"] != "shouter" || nt["script_id"] != inst.Objects["script"] {
			t.Fatalf("the installed node type: %+v (install %+v)", nt, inst)
		}
		project := f.Project(t, buyer, "Uses it")
		fixture.Want(t, buyer.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Loud",
			"nodes": []obj{{"key": "s", "kind": "code", "config": obj{"node_type": "shouter", "params": obj{"word": "hey"}}}}}), http.StatusCreated)

		// An update: the schema gains a field, the script changes.
		fixture.Want(t, pub.Do("PATCH", "/api/scripts/"+script, obj{"source": "echo '{\"loud\": 2}'\n"}), http.StatusOK)
		f.Exec(t, "UPDATE workflow_node_types SET config_schema = $1 WHERE id = $2",
			`{"type":"object","properties":{"word":{"type":"string"},"times":{"type":"integer"}}}`, node)
		fixture.Want(t, pub.Do("POST", "/api/marketplace/nodes/publish", obj{"node_type_id": node, "version": "1.1.0", "changelog": "Times."}), http.StatusCreated)
		fixture.Want(t, buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/update", nil), http.StatusOK)
		nt = buyer.Do("GET", "/api/workflow-node-types/"+inst.Objects["node_type"], nil).Map(t)
		if !strings.Contains(fmt.Sprint(nt["config_schema"]), "times") {
			t.Fatalf("the updated node type: %+v", nt)
		}
		if sc := buyer.Do("GET", "/api/scripts/"+inst.Objects["script"], nil).Map(t); sc["source"] != "echo '{\"loud\": 2}'\n" {
			t.Fatalf("the updated script: %+v", sc)
		}
	})
}
