package marketplace_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/marketplace"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestMarketplaceBundles, on both databases: workflows are published as a
// bundle with the scripts, node types and code files they use; what they
// read from the workspace (a resource) becomes a need. Another workspace
// previews the graph, installs it into a project (every need bound to one
// of its own resources of the right kind, never another workspace's), and
// gets the workflows wired to what the install made. A new version that
// reads another resource waits for a binding: auto-update holds it, a
// person's update binds it and replaces the same workflow. The official
// source lists the shipped templates as bundles, installable.
func TestMarketplaceBundles(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		pub, buyer, admin := f.Owner, f.Outsider, f.Admin
		member := f.Member(t, pub, "Mia Member")
		id := func(r *apitest.Response) string {
			t.Helper()
			fixture.Want(t, r, http.StatusCreated)
			return r.Map(t)["id"].(string)
		}
		resource := func(c *apitest.Client, name, kind string) string {
			t.Helper()
			return id(c.Do("POST", "/api/resources", obj{"name": name, "kind": kind, "config": obj{"base_url": "https://api.example.com"}}))
		}

		// The publisher's workflow: a saved script, a node type, a
		// resource, and a code node with files.
		script := id(pub.Do("POST", "/api/scripts", obj{"name": "Fetch", "slug": "fetch", "language": "sh", "source": "cat lib.sh\n"}))
		typeScript := id(pub.Do("POST", "/api/scripts", obj{"name": "Shout", "slug": "shout", "language": "sh", "source": "echo '{}'\n"}))
		fixture.Want(t, pub.Do("POST", "/api/workflow-node-types", obj{"slug": "shouter", "name": "Shouter", "script_id": typeScript,
			"config_schema": obj{"type": "object"}}), http.StatusCreated)
		api := resource(pub, "Weather API", "http")
		project := f.Project(t, pub, "Weather")
		nodes := []obj{
			{"key": "fetch", "kind": "code", "config": obj{"script_id": script, "resources": obj{"WEATHER": api}}},
			{"key": "shout", "kind": "code", "config": obj{"node_type": "shouter"}},
			{"key": "call", "kind": "connector", "config": obj{"resource_id": api, "path": "/today"}},
		}
		wf := id(pub.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Daily weather", "nodes": nodes,
			"edges": []obj{{"source": "fetch", "target": "shout"}, {"source": "shout", "target": "call"}}}))
		fixture.Want(t, pub.Do("PUT", "/api/workflows/"+wf+"/nodes/fetch/files", obj{"path": "lib.sh", "content": "echo sunny\n"}), http.StatusOK)

		publish := func(c *apitest.Client, version string, workflows ...string) *apitest.Response {
			return c.Do("POST", "/api/marketplace/bundles/publish", obj{"workflow_ids": workflows, "version": version, "changelog": "Version " + version,
				"summary": "Weather every morning", "capabilities": obj{"outbound_hosts": []string{"api.example.com"}}})
		}
		fixture.WantError(t, publish(member, "1.0.0", wf), http.StatusForbidden, "forbidden")
		fixture.WantError(t, publish(pub, "1.0.0"), http.StatusBadRequest, "bad_request")
		fixture.WantError(t, publish(buyer, "1.0.0", wf), http.StatusBadRequest, "bad_request", "no such workflow")
		fixture.WantError(t, publish(pub, "1.0.0", wf, wf), http.StatusBadRequest, "bad_request", "twice")
		r := publish(pub, "1.0.0", wf)
		fixture.Want(t, r, http.StatusCreated)
		var p marketplace.Published
		r.JSON(t, &p)
		keys := []string{}
		for _, o := range p.Version.Objects {
			keys = append(keys, o.Type+" "+o.Key)
		}
		want := []string{"script script:fetch", "script script:shout", "node_type node_type:shouter", "workflow workflow:daily-weather",
			"code_file code:daily-weather/fetch/lib.sh"}
		if p.Item.Kind != "bundle" || p.Item.Slug != "daily-weather" || p.Item.Name != "Daily weather" || !slices.Equal(keys, want) {
			t.Fatalf("published objects %v, want %v (%+v)", keys, want, p.Item)
		}
		if len(p.Version.Needs) != 1 || p.Version.Needs[0] != (marketplace.Need{Key: "weather-api", Type: "resource", Kind: "http", Name: "Weather API"}) {
			t.Fatalf("needs: %+v", p.Version.Needs)
		}
		if c := p.Version.Capabilities; !slices.Equal(c.NodeKinds, []string{"shouter"}) || !slices.Equal(c.ResourceKinds, []string{"http"}) {
			t.Fatalf("capabilities: %+v", c)
		}
		var files []marketplace.VersionFile
		pub.Do("GET", "/api/marketplace/items/"+p.Item.ID+"/files", nil).JSON(t, &files)
		for _, fl := range files {
			if strings.Contains(fl.Content, api) || strings.Contains(fl.Content, script) {
				t.Fatalf("the bundle names the publisher's ids: %s: %s", fl.Path, fl.Content)
			}
		}

		// The graph preview: the workflow with its placeholders.
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+p.Item.ID+"/review/approve", nil), http.StatusOK)
		r = buyer.Do("GET", "/api/marketplace/items/"+p.Item.ID+"/preview/graph", nil)
		fixture.Want(t, r, http.StatusOK)
		var g marketplace.BundleGraph
		r.JSON(t, &g)
		if len(g.Workflows) != 1 || len(g.Workflows[0].Nodes) != 3 || len(g.Workflows[0].Edges) != 2 || g.Workflows[0].Nodes[0].Config["script_id"] != "script:fetch" ||
			g.Workflows[0].Nodes[2].Config["resource_id"] != "need:weather-api" || len(g.Needs) != 1 {
			t.Fatalf("the graph: %s", r.Body)
		}
		fixture.WantError(t, buyer.Do("GET", "/api/marketplace/items/"+p.Item.ID+"/preview/script", nil), http.StatusBadRequest, "bad_request", "not a script")

		// Install: into a project, every need bound to the buyer's own
		// resource of its kind.
		base := "/api/marketplace/items/" + p.Item.ID + "/versions/1.0.0/"
		r = buyer.Do("POST", base+"install_preview", nil)
		if !strings.Contains(string(r.Body), `"key":"weather-api"`) || !strings.Contains(string(r.Body), `"name":"Daily weather"`) {
			t.Fatalf("the install preview: %s", r.Body)
		}
		theirs := resource(buyer, "Forecast", "http")
		wrongKind := id(buyer.Do("POST", "/api/resources", obj{"name": "Key", "kind": "api_key", "config": obj{"base_url": "https://x.example.com",
			"header_name": "X-Key"}, "secret": "k"}))
		target := f.Project(t, buyer, "Mornings")
		install := func(body obj) *apitest.Response { return buyer.Do("POST", base+"install", body) }
		fixture.WantError(t, install(obj{"bindings": obj{"weather-api": theirs}}), http.StatusBadRequest, "bad_request", "project_id")
		fixture.WantError(t, install(obj{"project_id": target}), http.StatusBadRequest, "bad_request", "bindings.weather-api")
		fixture.WantError(t, install(obj{"project_id": target, "bindings": obj{"weather-api": api}}), http.StatusBadRequest, "bad_request", "no such resource")
		fixture.WantError(t, install(obj{"project_id": target, "bindings": obj{"weather-api": wrongKind}}), http.StatusBadRequest, "bad_request", "api_key")
		fixture.WantError(t, install(obj{"project_id": target, "bindings": obj{"weather-api": theirs, "other": theirs}}), http.StatusBadRequest, "bad_request",
			"no such need")
		fixture.WantError(t, install(obj{"project_id": project, "bindings": obj{"weather-api": theirs}}), http.StatusBadRequest, "bad_request", "project")
		var left []any
		buyer.Do("GET", "/api/scripts", nil).JSON(t, &left)
		if n := len(left); n != 0 {
			t.Fatalf("a refused install left %d scripts", n)
		}
		r = install(obj{"project_id": target, "bindings": obj{"weather-api": theirs}})
		fixture.Want(t, r, http.StatusCreated)
		var inst marketplace.MarketInstall
		r.JSON(t, &inst)
		flow := inst.Objects["workflow:daily-weather"]
		if inst.ProjectID == nil || *inst.ProjectID != target || inst.Bindings["weather-api"] != theirs || flow == "" {
			t.Fatalf("the install: %+v", inst)
		}
		got := buyer.Do("GET", "/api/workflows/"+flow, nil).Map(t)
		gn := got["nodes"].([]any)
		if got["project_id"] != target || gn[0].(obj)["config"].(obj)["script_id"] != inst.Objects["script:fetch"] ||
			gn[0].(obj)["config"].(obj)["resources"].(obj)["WEATHER"] != theirs || gn[2].(obj)["config"].(obj)["resource_id"] != theirs {
			t.Fatalf("the installed workflow: %+v", got)
		}
		if fl := buyer.Do("GET", "/api/workflows/"+flow+"/nodes/fetch/files?path=lib.sh", nil).Map(t); fl["content"] != "echo sunny\n" {
			t.Fatalf("the installed code file: %+v", fl)
		}
		if nt := buyer.Do("GET", "/api/workflow-node-types/"+inst.Objects["node_type:shouter"], nil).Map(t); nt["script_id"] != inst.Objects["script:shout"] {
			t.Fatalf("the installed node type: %+v", nt)
		}

		// 1.1.0 reads a second resource: auto-update holds it for a binding.
		fixture.Want(t, buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/auto_update", obj{"enabled": true}), http.StatusOK)
		alerts := resource(pub, "Alerts", "http")
		nodes = append(nodes, obj{"key": "alert", "kind": "connector", "config": obj{"resource_id": alerts, "method": "POST"}})
		fixture.Want(t, pub.Do("PUT", "/api/workflows/"+wf, obj{"nodes": nodes,
			"edges": []obj{{"source": "fetch", "target": "shout"}, {"source": "shout", "target": "call"}, {"source": "call", "target": "alert"}}}), http.StatusOK)
		fixture.Want(t, pub.Do("PUT", "/api/workflows/"+wf+"/nodes/fetch/files", obj{"path": "lib.sh", "content": "echo rainy\n"}), http.StatusOK)
		fixture.Want(t, publish(pub, "1.1.0", wf), http.StatusCreated)
		installOf := func() marketplace.MarketInstall {
			var out marketplace.MarketInstall
			buyer.Do("GET", "/api/marketplace/installs", nil).JSON(t, &[]*marketplace.MarketInstall{&out})
			return out
		}
		eventually(t, "the held update", func() bool { return installOf().HeldVersion != nil })
		if h := installOf(); h.Version != "1.0.0" || !strings.Contains(*h.HeldReason, "alerts") {
			t.Fatalf("held: %+v", h)
		}
		r = buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/update_preview", nil)
		fixture.Want(t, r, http.StatusOK)
		var up marketplace.UpdatePreview
		r.JSON(t, &up)
		patches := map[string]string{}
		for _, d := range up.Files {
			patches[d.Path] = d.Patch
		}
		if !slices.Equal(up.Unbound, []string{"alerts"}) || up.Capabilities.Grew ||
			!strings.Contains(patches["workflows/daily-weather.yaml"], "+      resource_id: need:alerts") ||
			!strings.Contains(patches["code/daily-weather/fetch/lib.sh"], "-echo sunny\n+echo rainy\n") {
			t.Fatalf("the update preview: %s", r.Body)
		}
		update := func(body obj) *apitest.Response {
			return buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/update", body)
		}
		fixture.WantError(t, update(obj{}), http.StatusBadRequest, "bad_request", "bindings.alerts")
		fixture.Want(t, update(obj{"bindings": obj{"alerts": theirs}}), http.StatusOK)
		after := installOf()
		if after.Version != "1.1.0" || after.Objects["workflow:daily-weather"] != flow || after.Bindings["alerts"] != theirs || after.Bindings["weather-api"] != theirs {
			t.Fatalf("after the update: %+v", after)
		}
		if n := buyer.Do("GET", "/api/workflows/"+flow, nil).Map(t)["nodes"].([]any); len(n) != 4 {
			t.Fatalf("the updated workflow has %d nodes", len(n))
		}
		if fl := buyer.Do("GET", "/api/workflows/"+flow+"/nodes/fetch/files?path=lib.sh", nil).Map(t); fl["content"] != "echo rainy\n" {
			t.Fatalf("the updated code file: %+v", fl)
		}
		if len(f.App.AuditEntries(t, "marketplace.install", inst.ID)) != 1 || len(f.App.AuditEntries(t, "marketplace.update", inst.ID)) != 1 {
			t.Fatal("the bundle's install and update are not audited")
		}

		// The shipped templates are official bundles.
		off := items(t, buyer, "?kind=bundle&q=health")
		if len(off.Items) != 1 || off.Items[0].Slug != "http-health-check" || !off.Items[0].Verified {
			t.Fatalf("the official bundles: %+v", off)
		}
		r = buyer.Do("POST", "/api/marketplace/items/"+off.Items[0].ID+"/versions/1.0.0/install", obj{"project_id": target})
		fixture.Want(t, r, http.StatusCreated)
		var tpl marketplace.MarketInstall
		r.JSON(t, &tpl)
		if w := buyer.Do("GET", "/api/workflows/"+tpl.Objects["workflow:http-health-check"], nil).Map(t); w["name"] != "HTTP health check" {
			t.Fatalf("the template's workflow: %+v", w)
		}
	})
}

// TestMarketplaceApps, on both databases: an app is published as a source
// listing (its manifest and files, bytes as they are); another workspace
// installs it (the app made, not deployed), an update makes it the new
// version's source (a file gone, one changed), and a name taken there is
// a conflict that changes nothing.
func TestMarketplaceApps(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		pub, buyer, admin := f.Owner, f.Outsider, f.Admin
		const manifest = "name: Orders\nentry: index.html\nroutes:\n  - path: /orders/*\n    file: index.html\n"
		r := pub.Do("POST", "/api/apps", obj{"name": "Orders", "description": "Track orders", "manifest_yaml": manifest})
		fixture.Want(t, r, http.StatusCreated)
		app := r.Map(t)["id"].(string)
		put := func(c *apitest.Client, id, path string, body obj) {
			t.Helper()
			r := c.Do("PUT", "/api/apps/"+id+"/files/"+path, body)
			if r.Status != http.StatusOK && r.Status != http.StatusCreated {
				t.Fatalf("put %s: %d %s", path, r.Status, r.Body)
			}
		}
		put(pub, app, "index.html", obj{"content": "<h1>Orders</h1>\n"})
		put(pub, app, "logo.png", obj{"content": "iVBORw0KGgoAAP8=", "encoding": "base64"})
		put(pub, app, "old.js", obj{"content": "old()\n"})
		publish := func(version string) marketplace.Published {
			t.Helper()
			r := pub.Do("POST", "/api/marketplace/publish", obj{"app_id": app, "version": version, "changelog": "Version " + version})
			fixture.Want(t, r, http.StatusCreated)
			var p marketplace.Published
			r.JSON(t, &p)
			return p
		}
		fixture.WantError(t, pub.Do("POST", "/api/marketplace/publish", obj{"app_id": "01a21a95-7016-7775-b916-812b96407fb5", "version": "1.0.0",
			"changelog": "x"}), http.StatusBadRequest, "bad_request", "app_id")
		p := publish("1.0.0")
		if p.Item.Kind != "app" || p.Item.Slug != "orders" || len(p.Version.Files) != 4 {
			t.Fatalf("published: %+v", p)
		}
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+p.Item.ID+"/review/approve", nil), http.StatusOK)

		// A name taken in the buyer's workspace: a conflict, nothing made.
		r = buyer.Do("POST", "/api/apps", obj{"name": "Orders", "manifest_yaml": manifest})
		fixture.Want(t, r, http.StatusCreated)
		mine := r.Map(t)["id"].(string)
		base := "/api/marketplace/items/" + p.Item.ID + "/versions/1.0.0/install"
		fixture.WantError(t, buyer.Do("POST", base, nil), http.StatusConflict, "conflict", "already has an app named")
		fixture.Want(t, buyer.Do("DELETE", "/api/apps/"+mine, nil), http.StatusOK)
		r = buyer.Do("POST", base, nil)
		fixture.Want(t, r, http.StatusCreated)
		var inst marketplace.MarketInstall
		r.JSON(t, &inst)
		got := inst.Objects["app"]
		a := buyer.Do("GET", "/api/apps/"+got, nil).Map(t)
		if a["name"] != "Orders" || a["manifest_yaml"] != manifest || a["deployment"] != nil {
			t.Fatalf("the installed app: %+v", a)
		}
		if fl := buyer.Do("GET", "/api/apps/"+got+"/files/logo.png", nil).Map(t); fl["encoding"] != "base64" || fl["content"] != "iVBORw0KGgoAAP8=" {
			t.Fatalf("the installed binary file: %+v", fl)
		}

		// 1.1.0: a file changed, one gone.
		put(pub, app, "index.html", obj{"content": "<h1>Orders 2</h1>\n"})
		fixture.Want(t, pub.Do("DELETE", "/api/apps/"+app+"/files/old.js", nil), http.StatusOK)
		publish("1.1.0")
		fixture.Want(t, buyer.Do("POST", "/api/marketplace/installs/"+inst.ID+"/update", obj{}), http.StatusOK)
		if fl := buyer.Do("GET", "/api/apps/"+got+"/files/index.html", nil).Map(t); fl["content"] != "<h1>Orders 2</h1>\n" {
			t.Fatalf("the updated file: %+v", fl)
		}
		fixture.WantError(t, buyer.Do("GET", "/api/apps/"+got+"/files/old.js", nil), http.StatusNotFound, "not_found")
	})
}
