package resources

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/outbound"
	"slipway/internal/platform/text"
	"slipway/internal/platform/ttlcache"
	"slipway/internal/platform/vault"
)

// Deps are what the service works with.
type Deps struct {
	DB    *db.DB
	Clock clock.Clock
	Vault vault.Backend
	Log   *slog.Logger
	// Outbound makes every call to a resource (SSRF-guarded).
	Outbound *outbound.Client
	// LLMKey is LLM_PROVIDER_API_KEY: llm_classify without a resource
	// calls LLMBase (LLM_PROVIDER_BASE_URL; default the OpenAI API) with it.
	LLMKey  string
	LLMBase string
	// Mailer and Members: notify_email without an smtp resource (nil:
	// such a node fails).
	Mailer  Mailer
	Members Members
}

// Service manages resources.
type Service struct {
	Deps
	pools pools // database resources' connection pools
	// conns keeps what nodes opened (the resource and its secret) for
	// connTTL, so a node does not read the row and the vault each time.
	conns *ttlcache.Cache[Connection]
}

// connTTL bounds how long a node may use a resource as it was: a change
// made on this server applies at once, one made on another replica within
// it.
const connTTL = 2 * time.Second

// NewService returns the resources service.
func NewService(d Deps) *Service {
	return &Service{Deps: d, conns: ttlcache.New[Connection](connTTL, 4096)}
}

// forget drops what nodes keep of a resource (it changed or went away).
func (s *Service) forget(id string) {
	s.conns.Drop(func(c *Connection) bool { return c.Resource.ID == id })
	s.dropPool(id)
}

// MaxPerWorkspace bounds a workspace's resources (the list answers them
// all).
const MaxPerWorkspace = 1000

// SecretKind is the first part of a resource secret's vault name.
const SecretKind = "resource"

// newSecretName is a fresh vault name for a resource's secret: every write
// goes to a new name, so a row never names a half-written secret.
func newSecretName(resourceID string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return SecretKind + "." + resourceID + "." + hex.EncodeToString(b)
}

// Claims tells the vault's orphan sweep whether a resource names the secret.
func (s *Service) Claims(ctx context.Context, ref vault.Ref) (bool, error) {
	return claims(ctx, s.DB.R, ref.Workspace, ref.Name)
}

// putSecret writes a secret under a fresh name before its row commits.
func (s *Service) putSecret(ctx context.Context, ws *actor.Workspace, resourceID, value string) (string, error) {
	name := newSecretName(resourceID)
	if err := s.Vault.Put(ctx, vault.Ref{Workspace: ws.ID, Name: name}, value); err != nil {
		if errors.Is(err, vault.ErrInvalid) {
			return "", apperr.BadRequest("secret must be at most %d bytes", vault.MaxValueBytes)
		}
		return "", err
	}
	return name, nil
}

// dropSecret deletes a secret no row names any more; a failure is left to
// the orphan sweep.
func (s *Service) dropSecret(ctx context.Context, ws *actor.Workspace, name string) {
	if name == "" {
		return
	}
	if err := s.Vault.Delete(context.WithoutCancel(ctx), vault.Ref{Workspace: ws.ID, Name: name}); err != nil {
		s.Log.Warn("resources: deleting a secret failed; the orphan sweep will remove it", "workspace", ws.ID, "name", name, "err", err)
	}
}

// checkDescription allows lines and tabs, no other control characters.
func checkDescription(d string) error {
	return text.CheckName("description", strings.NewReplacer("\r\n", " ", "\n", " ", "\t", " ").Replace(d))
}

func checkSecret(v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return apperr.BadRequest("secret must not contain NUL characters")
	}
	return nil
}

// List reads the workspace's resources, optionally of one kind.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, kind string) ([]Resource, error) {
	if kind != "" && KindOf(kind) == nil {
		return nil, apperr.BadRequest("kind must be one of %s", strings.Join(KindSlugs(), ", "))
	}
	return list(ctx, s.DB.R, ws.ID, kind)
}

// Board reads a page of the resources board.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, q board.Query, kind string) (*board.Board[Resource], error) {
	rows, total, facets, err := boardPage(ctx, s.DB, ws.ID, q, kind)
	if err != nil {
		return nil, err
	}
	return board.New(q, rows, total, map[string][]board.Facet{"kind": facets}), nil
}

// Get reads one resource.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Resource, error) {
	if !ids.Valid(id) {
		return nil, apperr.New(apperr.CodeNotFound, "resource not found")
	}
	return get(ctx, s.DB.R, ws.ID, id, "")
}

func (s *Service) checkConfig(kind *Kind, config map[string]any, rls bool) (json.RawMessage, error) {
	if config == nil {
		config = map[string]any{}
	}
	if err := kind.checkConfig(config); err != nil {
		return nil, apperr.BadRequest("%s config: %v", kind.Slug, err)
	}
	if rls && kind.Slug != "postgresql" {
		return nil, apperr.BadRequest("rls_managed applies to postgresql resources only")
	}
	raw, err := json.Marshal(config)
	if err != nil {
		return nil, apperr.BadRequest("config is not JSON")
	}
	return raw, nil
}

// checkCreate checks a new resource but its secret: the row it would be
// (without id and times).
func (s *Service) checkCreate(in ResourceCreate) (*Resource, error) {
	name, err := text.Name("name", in.Name, 100)
	if err != nil {
		return nil, err
	}
	if err := checkDescription(in.Description); err != nil {
		return nil, err
	}
	kind := KindOf(in.Kind)
	if kind == nil {
		return nil, apperr.BadRequest("kind must be one of %s", strings.Join(KindSlugs(), ", "))
	}
	config, err := s.checkConfig(kind, in.Config, in.RLSManaged)
	if err != nil {
		return nil, err
	}
	return &Resource{Name: name, Kind: kind.Slug, Description: in.Description, Config: config, RLSManaged: in.RLSManaged}, nil
}

// Create adds a resource; its secret goes to the vault first.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, u *actor.User, in ResourceCreate) (*Resource, error) {
	r, err := s.checkCreate(in)
	if err != nil {
		return nil, err
	}
	name, now := r.Name, s.Clock.Now()
	r.ID, r.CreatedAt, r.UpdatedAt = ids.New(), now, now
	if in.Secret != nil && *in.Secret != "" {
		if err := checkSecret(*in.Secret); err != nil {
			return nil, err
		}
		if r.secretRef, err = s.putSecret(ctx, ws, r.ID, *in.Secret); err != nil {
			return nil, err
		}
		r.HasSecret, r.SecretUpdatedAt = true, &now
	}
	var by string
	if u != nil {
		by = u.ID
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		n, err := count(ctx, tx, ws.ID)
		if err != nil {
			return err
		}
		if n >= MaxPerWorkspace {
			return apperr.BadRequest("a workspace holds at most %d resources", MaxPerWorkspace)
		}
		return insert(ctx, tx, ws.ID, by, r)
	})
	if err != nil {
		s.dropSecret(ctx, ws, r.secretRef)
		return nil, s.conflictOnName(err, name)
	}
	return r, nil
}

// checkProposed checks a proposed resource (an agent's, applied when a
// person approves): a resource create without a secret — a proposal's
// payload is stored as it is, and a secret never is.
func (s *Service) checkProposed(in ResourceCreate) (*Resource, error) {
	if in.Secret != nil {
		return nil, apperr.BadRequest("a proposed resource has no secret: a person sets it once the resource exists")
	}
	return s.checkCreate(in)
}

// CheckProposed checks a proposed resource through q and says what it
// targets (its name) and what is there now: "" for nothing, else the id
// of the resource of that name (which the approval would collide with).
func (s *Service) CheckProposed(ctx context.Context, q db.Queryer, ws *actor.Workspace, in ResourceCreate) (target, state string, err error) {
	r, err := s.checkProposed(in)
	if err != nil {
		return "", "", err
	}
	id, err := idByName(ctx, q, ws.ID, r.Name)
	if err != nil {
		return "", "", err
	}
	return "resource:" + r.Name, id, nil
}

// CreateProposedTx makes an approved proposed resource in tx (without a
// secret).
func (s *Service) CreateProposedTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, u *actor.User, in ResourceCreate) (*Resource, error) {
	r, err := s.checkProposed(in)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	r.ID, r.CreatedAt, r.UpdatedAt = ids.New(), now, now
	n, err := count(ctx, tx, ws.ID)
	if err != nil {
		return nil, err
	}
	if n >= MaxPerWorkspace {
		return nil, apperr.BadRequest("a workspace holds at most %d resources", MaxPerWorkspace)
	}
	var by string
	if u != nil {
		by = u.ID
	}
	if err := insert(ctx, tx, ws.ID, by, r); err != nil {
		return nil, s.conflictOnName(err, r.Name)
	}
	return r, nil
}

func (s *Service) conflictOnName(err error, name string) error {
	if err != nil && s.DB.Dialect.IsUniqueViolation(err) {
		return apperr.New(apperr.CodeConflict, "a resource named %q exists in this workspace", name)
	}
	return err
}

// Update changes a resource. A new secret is written to the vault before
// the row names it; the one it replaces (or clears) is deleted after.
func (s *Service) Update(ctx context.Context, ws *actor.Workspace, id string, in ResourceUpdate) (*Resource, error) {
	if !ids.Valid(id) {
		return nil, apperr.New(apperr.CodeNotFound, "resource not found")
	}
	var name string
	if in.Name != nil {
		n, err := text.Name("name", *in.Name, 100)
		if err != nil {
			return nil, err
		}
		name = n
	}
	if in.Description != nil {
		if err := checkDescription(*in.Description); err != nil {
			return nil, err
		}
	}
	// Read once outside the transaction to write the new secret first.
	cur, err := get(ctx, s.DB.R, ws.ID, id, "")
	if err != nil {
		return nil, err
	}
	// Turning row-level security off drops the workspace's role, through
	// the connection as it was.
	var was *Connection
	if cur.Kind == "postgresql" && cur.RLSManaged && in.RLSManaged != nil && !*in.RLSManaged {
		if was, err = s.Open(ctx, ws, id); err != nil {
			return nil, err
		}
	}
	newRef := ""
	if in.Secret != nil && *in.Secret != "" {
		if err := checkSecret(*in.Secret); err != nil {
			return nil, err
		}
		if newRef, err = s.putSecret(ctx, ws, cur.ID, *in.Secret); err != nil {
			return nil, err
		}
	}
	var out *Resource
	oldRef := ""
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		r, err := get(ctx, tx, ws.ID, id, s.DB.Dialect.ForUpdate())
		if err != nil {
			return err
		}
		kind := KindOf(r.Kind)
		if in.Name != nil {
			r.Name = name
		}
		if in.Description != nil {
			r.Description = *in.Description
		}
		rls := r.RLSManaged
		if in.RLSManaged != nil {
			rls = *in.RLSManaged
		}
		if in.Config != nil || in.RLSManaged != nil {
			config := in.Config
			if config == nil {
				_ = json.Unmarshal(r.Config, &config)
			}
			raw, err := s.checkConfig(kind, config, rls)
			if err != nil {
				return err
			}
			if r.HasSecret && in.Secret == nil && movesSecret(kind, r.Config, raw) {
				return apperr.BadRequest("changing where the secret is sent (%s) requires sending the secret again", strings.Join(kind.Address, ", "))
			}
			r.Config, r.RLSManaged = raw, rls
		}
		now := s.Clock.Now()
		if in.Secret != nil {
			oldRef = r.secretRef
			r.secretRef, r.HasSecret = newRef, newRef != ""
			r.SecretUpdatedAt = nil
			if newRef != "" {
				r.SecretUpdatedAt = &now
			}
		}
		r.UpdatedAt = now
		if err := update(ctx, tx, ws.ID, r); err != nil {
			return s.conflictOnName(err, r.Name)
		}
		out = r
		return nil
	})
	if err != nil {
		s.dropSecret(ctx, ws, newRef)
		return nil, err
	}
	s.dropSecret(ctx, ws, oldRef)
	s.forget(out.ID)
	if was != nil {
		s.unprovision(ctx, ws, was)
	}
	return out, nil
}

// movesSecret reports whether a config change touches a field that says
// where the secret goes.
func movesSecret(kind *Kind, before, after json.RawMessage) bool {
	var a, b map[string]any
	_ = json.Unmarshal(before, &a)
	_ = json.Unmarshal(after, &b)
	for _, f := range kind.Address {
		if !reflect.DeepEqual(a[f], b[f]) {
			return true
		}
	}
	return false
}

// SetConcurrency sets max_concurrent_uses (nil: unlimited).
func (s *Service) SetConcurrency(ctx context.Context, ws *actor.Workspace, id string, max *int64) (*Resource, error) {
	if !ids.Valid(id) {
		return nil, apperr.New(apperr.CodeNotFound, "resource not found")
	}
	if max != nil && *max < 1 {
		return nil, apperr.BadRequest("max_concurrent_uses must be at least 1, or null for unlimited")
	}
	var out *Resource
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		r, err := get(ctx, tx, ws.ID, id, s.DB.Dialect.ForUpdate())
		if err != nil {
			return err
		}
		r.MaxConcurrentUses, r.UpdatedAt = max, s.Clock.Now()
		out = r
		return update(ctx, tx, ws.ID, r)
	})
	if err == nil {
		s.forget(id)
	}
	return out, err
}

// Delete removes a resource, then its secret (best effort). It reports
// false when there was no such resource (an unknown, malformed or other
// workspace's id alike).
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, nil
	}
	// A database with row-level security loses the workspace's role first
	// (best effort: an unreachable one keeps it, and says so in the log).
	if r, err := get(ctx, s.DB.R, ws.ID, id, ""); err == nil && r.Kind == "postgresql" && r.RLSManaged {
		if c, err := s.Open(ctx, ws, id); err == nil {
			s.unprovision(ctx, ws, c)
		}
	}
	var found bool
	var ref string
	err := s.DB.Tx(ctx, func(tx *db.Tx) (err error) {
		found, ref, err = remove(ctx, tx, ws.ID, id, s.DB.Dialect.ForUpdate())
		return err
	})
	if err != nil || !found {
		return false, err
	}
	s.dropSecret(ctx, ws, ref)
	s.forget(id)
	return true, nil
}

// Usage lists, for every resource of the workspace, the workflows that
// name it.
func (s *Service) Usage(ctx context.Context, ws *actor.Workspace) ([]ResourceUsage, error) {
	rs, err := list(ctx, s.DB.R, ws.ID, "")
	if err != nil {
		return nil, err
	}
	idList := make([]string, len(rs))
	for i, r := range rs {
		idList[i] = r.ID
	}
	uses, err := workflowUses(ctx, s.DB.R, ws.ID, idList)
	if err != nil {
		return nil, err
	}
	profiles, err := profileUses(ctx, s.DB.R, ws.ID)
	if err != nil {
		return nil, err
	}
	out := make([]ResourceUsage, 0, len(rs))
	for _, r := range rs {
		out = append(out, usageOf(&r, uses[r.ID], profiles[r.ID]))
	}
	return out, nil
}

// UsageOf lists the workflows and profiles that name one resource.
func (s *Service) UsageOf(ctx context.Context, ws *actor.Workspace, id string) (*ResourceUsage, error) {
	r, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	uses, err := workflowUses(ctx, s.DB.R, ws.ID, []string{r.ID})
	if err != nil {
		return nil, err
	}
	profiles, err := profileUses(ctx, s.DB.R, ws.ID)
	if err != nil {
		return nil, err
	}
	u := usageOf(r, uses[r.ID], profiles[r.ID])
	return &u, nil
}

func usageOf(r *Resource, uses []ResourceWorkflowUse, profiles []ResourceProfileUse) ResourceUsage {
	if uses == nil {
		uses = []ResourceWorkflowUse{}
	}
	if profiles == nil {
		profiles = []ResourceProfileUse{}
	}
	return ResourceUsage{ResourceID: r.ID, Name: r.Name, Kind: r.Kind, Workflows: uses, Profiles: profiles, MaxConcurrentUses: r.MaxConcurrentUses}
}

// Connection is a resource with its secret, for the code that connects.
type Connection struct {
	Resource *Resource
	Secret   string
	// searchPath: an rls_managed database's workspace schema, shared one.
	searchPath string
}

// Open reads a resource with its secret from the vault.
func (s *Service) Open(ctx context.Context, ws *actor.Workspace, id string) (*Connection, error) {
	r, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	c := &Connection{Resource: r}
	if r.HasSecret {
		v, err := s.Vault.Get(ctx, vault.Ref{Workspace: ws.ID, Name: r.secretRef})
		if errors.Is(err, vault.ErrNotFound) {
			return nil, apperr.New(apperr.CodeVault, "the secret of resource %q is missing from the vault", r.Name)
		}
		if err != nil {
			return nil, err
		}
		c.Secret = v
	}
	return c, nil
}

// IDByName finds a resource of the workspace by its name ("" for none):
// an app's manifest names the resources its functions use.
func (s *Service) IDByName(ctx context.Context, workspaceID, name string) (string, error) {
	return idByName(ctx, s.DB.R, workspaceID, name)
}
