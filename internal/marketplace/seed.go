package marketplace

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/templates"
)

// officialItem is an item the official source ships with this server.
type officialItem struct {
	Slug, Name, Summary, Version, Changelog string
	Tags                                    []string
	Script                                  ScriptContent
	Capabilities                            Capabilities
}

// official is the official source's catalog: scripts that code nodes and
// workflows commonly need, shipped with the server (a fresh instance has
// a catalog).
var official = []officialItem{
	{Slug: "json-pick", Name: "Pick JSON fields", Version: "1.0.0", Changelog: "First version.", Tags: []string{"json", "data"},
		Summary: "Reads the node's input and prints only the fields named in params.fields.",
		Script: ScriptContent{Slug: "json-pick", Name: "Pick JSON fields", Language: "python",
			Source: "import json, os\nenv = json.load(open(os.environ['SLIPWAY_INPUT']))\nfields = (env.get('params') or {}).get('fields', [])\n" +
				"data = env.get('input') or {}\nprint(json.dumps({k: data.get(k) for k in fields}))\n"}},
	{Slug: "slugify", Name: "Slugify a title", Version: "1.0.0", Changelog: "First version.", Tags: []string{"text"},
		Summary: "Turns input.title into a lower-case slug (letters, digits and dashes).",
		Script: ScriptContent{Slug: "slugify", Name: "Slugify a title", Language: "python",
			Source: "import json, os, re\nenv = json.load(open(os.environ['SLIPWAY_INPUT']))\ntitle = str((env.get('input') or {}).get('title', ''))\n" +
				"print(json.dumps({'slug': re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')}))\n"}},
	{Slug: "http-status", Name: "Check an HTTP status", Version: "1.0.0", Changelog: "First version.", Tags: []string{"http", "monitoring"},
		Summary: "Fetches input.url with curl and prints its HTTP status code.",
		Script: ScriptContent{Slug: "http-status", Name: "Check an HTTP status", Language: "sh",
			Source: "url=$(sed -n 's/.*\"url\": *\"\\([^\"]*\\)\".*/\\1/p' \"$SLIPWAY_INPUT\" | head -n 1)\n" +
				"code=$(curl -s -o /dev/null -w '%{http_code}' \"$url\")\nprintf '{\"status\": %s}\\n' \"${code:-0}\"\n"},
		Capabilities: Capabilities{OutboundHosts: []string{"*"}}},
}

// Seed makes the official source and its items as this server ships them
// (an item whose shipped version is newer gets it), idempotently; boot
// and the official source's sync call it.
func (s *Service) Seed(ctx context.Context) error {
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		now := s.Clock.Now()
		srcID, err := officialSource(ctx, tx)
		if err != nil {
			return err
		}
		if srcID == "" {
			srcID = ids.New()
			if err := insertSource(ctx, tx, &MarketSource{ID: srcID, Kind: SourceOfficial, Name: "Official", Grants: []string{}, Status: StatusEnabled,
				CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
		}
		for _, o := range official {
			file, _ := json.MarshalIndent(o.Script, "", "  ")
			path := "scripts/" + o.Script.Slug + ".json"
			caps := o.Capabilities
			caps.OutboundHosts = slices.DeleteFunc(slices.Clone(caps.OutboundHosts), func(h string) bool { return strings.TrimSpace(h) == "" })
			o.Capabilities = normalCaps(caps)
			if err := s.seedItem(ctx, tx, srcID, o, KindScript, []Object{{Type: ObjectScript, Key: "script", Path: path}}, map[string][]byte{path: file}); err != nil {
				return err
			}
		}
		docs, err := templates.Documents()
		if err != nil {
			return err
		}
		for _, d := range docs {
			path := "workflows/" + d.Slug + ".yaml"
			o := officialItem{Slug: d.Slug, Name: d.Name, Summary: clip(strings.Join(strings.Fields(d.Description), " "), MaxSummary), Version: "1.0.0",
				Changelog: "First version (the shipped workflow template).", Tags: []string{"template", d.Category}, Capabilities: normalCaps(Capabilities{})}
			if err := s.seedItem(ctx, tx, srcID, o, KindBundle, []Object{{Type: ObjectWorkflow, Key: "workflow:" + d.Slug, Path: path}},
				map[string][]byte{path: d.YAML}); err != nil {
				return err
			}
		}
		return markSynced(ctx, tx, srcID, now)
	})
}

func (s *Service) seedItem(ctx context.Context, tx *db.Tx, srcID string, o officialItem, kind string, objects []Object, files map[string][]byte) error {
	now := s.Clock.Now()
	it, err := sourceItemBySlug(ctx, tx, srcID, o.Slug)
	if err != nil {
		return err
	}
	sv, err := parseVersion(o.Version)
	if err != nil {
		return err
	}
	if it != nil {
		if cur, err := parseVersion(it.LatestVersion); err != nil || !sv.GreaterThan(cur) {
			return err
		}
	}
	m := VersionManifest{Kind: kind, Objects: objects, Capabilities: o.Capabilities}
	for p, b := range files {
		m.Files = append(m.Files, FileEntry{Path: p, SHA256: sha(b), Size: int64(len(b))})
	}
	slices.SortFunc(m.Files, func(a, b FileEntry) int { return strings.Compare(a.Path, b.Path) })
	if it == nil {
		it = &MarketItem{ID: ids.New(), SourceID: srcID, Kind: kind, Slug: o.Slug, Name: o.Name, Summary: o.Summary, Tags: o.Tags, Verified: true,
			Listed: true, LatestVersion: o.Version, CreatedAt: now, UpdatedAt: now}
		if err := insertItem(ctx, tx, it); err != nil {
			return err
		}
		if err := reviewItem(ctx, tx, it.ID, "approved", nil, nil, true, now); err != nil {
			return err
		}
	} else {
		it.Name, it.Summary, it.Tags, it.LatestVersion, it.UpdatedAt = o.Name, o.Summary, o.Tags, o.Version, now
		if err := touchItem(ctx, tx, it); err != nil {
			return err
		}
	}
	v := &ItemVersion{ID: ids.New(), ItemID: it.ID, Version: o.Version, Changelog: o.Changelog, Digest: m.Digest(), CreatedAt: now, manifest: m}
	if err := insertVersion(ctx, tx, v, nil); err != nil {
		return err
	}
	// Not audited: no one published it; this server ships it (its
	// version and digest are on the version's row).
	for p, b := range files {
		if err := insertFile(ctx, tx, v.ID, p, b); err != nil {
			return err
		}
	}
	return nil
}

// normalCaps is a shipped capability set, cleaned (the shipped ones are
// known good; "*" stands for any host).
func normalCaps(c Capabilities) Capabilities {
	for _, l := range []*[]string{&c.OutboundHosts, &c.ResourceKinds, &c.Secrets, &c.NodeKinds, &c.RunnerLabels} {
		if *l == nil {
			*l = []string{}
		}
		slices.Sort(*l)
	}
	return c
}
