package scoping

// Exception names statements that may touch workspace tables without
// naming a workspace: every statement of the function Func on the listed
// tables. Func is the walk's key: the package's directory under internal/,
// then Type.Method or the function's name (a closure counts as the
// function that holds it; a package-level table of statements as its
// variable's name). A text a caller hands to a helper may be named by the
// caller instead. A new entry needs a reason that says why no workspace
// applies: a sweep over every workspace, a lookup by a token's hash, a
// user's or an admin's read across workspaces, the queue. The test fails on
// an entry that no statement needs any more.
type Exception struct {
	Func   string
	Tables []string
	Reason string
}

const (
	queue    = "the queue: jobs are claimed, leased, renewed, finished and rescued by id, holder or pool for every workspace (a job carries its workspace for the work it starts)"
	sweep    = "a sweep over every workspace"
	personal = "a person's own notifications: every statement names the recipient, and the active workspace as workspace_id = $2 OR workspace_id IS NULL (those about the account itself, such as an invite)"
	catalog  = "the marketplace catalog is read across workspaces under one rule (`visible`: a workspace's own items, the official source's, the instance-verified ones, and those a workspace source grants it); writes to an item are the publisher's (checked before) or an instance admin's"
	fixedT   = "test fixture (excluded from the moves, see the report): sets up and inspects rows by id"
)

// Unscoped is the allowlist, by package then function.
var Unscoped = []Exception{
	{"apps.routesByPath", []string{"app_deployments", "app_releases"}, "serving a deployed app: a request names only its route path (routes are the instance's); the caller then checks the viewer's membership of the app's workspace"},
	{"apps.backendByApp", []string{"app_deployments", "app_releases"}, "a backend call names only the app: its deployment is read, then the App token's hash or the caller's membership of the app's workspace is checked (a stranger gets the unknown app's 404)"},
	{"apps.appWorkspace", []string{"apps"}, "a backend call names only the app: its workspace is read, then the caller's membership of it is checked (a stranger gets the unknown app's 404)"},
	{"apps.uploadByID", []string{"app_uploads"}, "a download names only the upload: its workspace is read, then the caller's membership of it is checked (a stranger gets the unknown upload's 404)"},
	{"apps.pruneUploads", []string{"app_uploads"}, sweep + ": uploads past their day"},
	{"apps.routeTaken", []string{"app_deployments"}, "a route path is the instance's: a deploy is refused when an app of any workspace holds it (the answer names no workspace)"},

	{"approvals.lookup", []string{"tool_approvals"}, "a decision names only the approval: the caller then checks the user's membership of the approval's workspace"},
	{"approvals.expiring", []string{"tool_approvals"}, sweep + ": pending approvals whose time is up"},

	{"conversations.delivered", []string{"agent_messages"}, "the inbox's reaction names the messages a worker took by id only; app.reactions (not this issue's to change) passes no workspace"},

	{"marketplace.sourcesOf", []string{"marketplace_sources", "marketplace_items"}, catalog + ": the official source (no workspace) with the workspace's own, and their item counts"},
	{"marketplace.sourceOf", []string{"marketplace_sources", "marketplace_items"}, catalog + ": a source the workspace sees (its own or the official one)"},
	{"marketplace.ownSource", []string{"marketplace_items"}, catalog + ": the item count of the workspace's own source"},
	{"marketplace.officialSource", []string{"marketplace_sources"}, "the official source belongs to no workspace"},
	{"marketplace.sourceItemBySlug", []string{"marketplace_items"}, "the official source's and a Git source's items belong to no workspace (a Git source's is read after its workspace's source)"},
	{"marketplace.sourceInstalls", []string{"marketplace_installs", "marketplace_items"}, "a Git source stays while any workspace installed its items (the source is the workspace's, named by workspace_id)"},
	{"marketplace.deleteGitItems", []string{"marketplace_items"}, "a Git source's items belong to no workspace: they go with the workspace's source (named by workspace_id)"},
	{"marketplace.markSynced", []string{"marketplace_sources"}, "the official source belongs to no workspace"},
	{"marketplace.listItems", []string{"marketplace_items", "marketplace_sources"}, catalog},
	{"marketplace.itemFor", []string{"marketplace_items", "marketplace_sources"}, catalog},
	{"marketplace.anyItem", []string{"marketplace_items"}, "an instance admin's review, takedown and restore act on any item"},
	{"marketplace.reviewQueue", []string{"marketplace_items"}, "an instance admin's review queue spans every workspace"},
	{"marketplace.touchItem", []string{"marketplace_items"}, catalog + ": the publisher's item, read by its workspace in the same transaction"},
	{"marketplace.reviewItem", []string{"marketplace_items"}, "an instance admin's review decision, or the official catalog's seed"},
	{"marketplace.listItem", []string{"marketplace_items"}, "an instance admin's takedown or restore"},
	{"marketplace.installsOf", []string{"marketplace_items"}, catalog + ": an install's item name (the install itself is the workspace's)"},
	{"marketplace.installOf", []string{"marketplace_items"}, catalog + ": an install's item name (the install itself is the workspace's)"},
	{"marketplace.installOfItem", []string{"marketplace_items"}, catalog + ": an install's item name (the install itself is the workspace's)"},
	{"marketplace.autoUpdating", []string{"marketplace_installs", "marketplace_items"}, sweep + ": an item's new version goes to every install with auto-update armed (each update then names its workspace)"},
	{"marketplace.deleteRating", []string{"marketplace_ratings"}, "a person's own rating of an item they see, by the person and the item"},
	{"marketplace.ratingOf", []string{"marketplace_ratings"}, "a person's own rating of an item they see, by the person and the item"},
	{"marketplace.ratingsOf", []string{"marketplace_ratings"}, catalog + ": an item's ratings are public to whoever sees the item"},
	{"marketplace.recount", []string{"marketplace_items", "marketplace_ratings"}, catalog + ": an item's rating count and sum, from every rater"},
	{"marketplace.priceItem", []string{"marketplace_items"}, catalog + ": the publisher's item, read by its workspace in the same transaction"},
	{"marketplace.versionByID", []string{"marketplace_versions"}, catalog + ": a checkout's version, whose item is then read under `visible`"},
	{"commerce.purchaseOf", []string{"marketplace_items"}, catalog + ": a purchase's item name (the purchase itself is the workspace's)"},
	{"commerce.pendingPurchase", []string{"marketplace_items"}, catalog + ": a purchase's item name (the purchase itself is the workspace's)"},
	{"commerce.latestPurchase", []string{"marketplace_items"}, catalog + ": a purchase's item name (the purchase itself is the workspace's)"},
	{"commerce.listPurchases", []string{"marketplace_items", "marketplace_purchases"}, catalog + ": a purchase's item name; a workspace's purchases, or the purchases of a seller's items (the seller is a person, across the workspaces that bought)"},
	{"commerce.ledgerOf", []string{"seller_ledger"}, "a seller's ledger is the person's, across the workspaces that bought (by seller_id)"},
	{"commerce.purchaseByID", []string{"marketplace_purchases", "marketplace_items"}, "the payment provider's signed event names a purchase by its id (the event carries no workspace; the purchase's own then scopes every write)"},
	{"commerce.ledgerSums", []string{"seller_ledger"}, "a seller's ledger is the person's, across the workspaces that bought; the payout queue (instance admins) reads every seller's"},
	{"commerce.balances", []string{"seller_ledger"}, "a seller's ledger is the person's, across the workspaces that bought (by seller_id)"},
	{"marketplace.installingWorkspaces", []string{"marketplace_installs"}, "a takedown tells every workspace that installed the item"},

	{"notifications.counts", []string{"notifications"}, personal},
	{"notifications.get", []string{"notifications"}, personal},
	{"notifications.list", []string{"notifications"}, personal},
	{"notifications.markAllRead", []string{"notifications"}, personal},
	{"notifications.markRead", []string{"notifications"}, personal},
	{"notifications.mailedSince", []string{"notifications"}, "a person's notifications mailed within the hour, across their workspaces: the bound on mail is the person's, wherever the notifications are from"},
	{"notifications.markMailed", []string{"notifications"}, "marks mailed the notification just made for its recipient (by the recipient and its id, inside the transaction that made it)"},
	{"notifications.remove", []string{"notifications"}, personal},
	{"notifications.unreadOf", []string{"notifications"}, personal},
	{"notifications.settle", []string{"notifications"}, "a decision taken (an approval, a gate, a proposal: each its workspace's own, named by its key) settles its notifications, whoever received them"},
	{"notifications.prune", []string{"notifications"}, sweep + ": read notifications past their retention, and each person's beyond the bound"},

	{"fixture.API.SetStatus", []string{"tasks"}, fixedT},
	{"fixture.API.Event", []string{"event_logs", "runs"}, fixedT},
	{"fixture.Stack.Job", []string{"jobs"}, fixedT},

	{"inbox.oldestUntaken", []string{"jobs", "agent_inbox"}, "the worker protocol: the running jobs a holder has, whatever their workspace, with lines waiting"},

	{"platform/jobs.Queue.Get", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Claim", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Matches", []string{"jobs"}, queue},
	{"platform/jobs.Queue.FleetWaiting", []string{"jobs"}, queue},
	{"platform/jobs.Queue.candidates", []string{"jobs"}, queue},
	{"platform/jobs.Queue.runningByKey", []string{"jobs"}, queue + "; caps count by concurrency key, which names the workspace or project itself"},
	{"platform/jobs.Queue.lock", []string{"jobs"}, queue},
	{"platform/jobs.Queue.BindRun", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Extend", []string{"jobs"}, queue},
	{"platform/jobs.Queue.finish", []string{"jobs"}, queue},
	{"platform/jobs.Queue.CompleteMany", []string{"jobs"}, queue},
	{"platform/jobs.Queue.stampFailed", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Held", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Cancelling", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Holder", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Rescue", []string{"jobs"}, queue + "; " + sweep},
	{"platform/jobs.Queue.Expire", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Repool", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Waiting", []string{"jobs"}, queue},
	{"platform/jobs.Queue.Prune", []string{"jobs"}, queue + "; " + sweep},
	{"platform/jobs.Queue.Depths", []string{"jobs"}, "metrics: unfinished jobs counted by kind and state over every workspace"},

	{"projects.Service.MaxConcurrentRuns", []string{"projects"}, "admission inside the claim: the queue's concurrency key names the project, not its workspace"},

	{"retention.Service.Pass", []string{"runs", "run_events", "tasks", "node_runs"}, sweep + ": retention of finished runs"},
	{"retention.Service.leaves", []string{"runs"}, sweep + ": retention of finished runs"},
	{"retention.Service.workflows", []string{"runs", "workflow_runs", "node_runs", "tasks", "jobs", "event_logs"}, sweep + ": retention of finished runs"},
	{"retention.leafBatch", []string{"runs"}, sweep + ": retention of finished runs"},
	{"retention.leafEvents", []string{"runs", "run_events"}, sweep + ": retention of finished runs"},
	{"retention.leafRuns", []string{"runs"}, sweep + ": retention of finished runs"},
	{"retention.lock", []string{"runs"}, sweep + ": retention of finished runs"},
	{"retention.workflowDeletes", []string{"runs", "workflow_runs", "event_logs"}, sweep + ": retention of finished runs"},

	{"tenancy.joinedWorkspaces", []string{"workspace_members"}, "a user's memberships across workspaces (the workspace list and the default workspace)"},

	{"projects.automationByToken", []string{"project_automations", "projects"}, "a forge's webhook delivery finds its automation by its token's hash (the token is the credential; the delivery's signature is then checked with the automation's secret)"},
	{"projects.pruneDeliveries", []string{"forge_deliveries"}, sweep + ": forge delivery ids past their memory"},
	{"tasks.claimPRActions", []string{"pr_actions"}, "the pull requests to open on forges: taken when due for every workspace (each carries its workspace for the task it opens)"},
	{"triggers.byTokenHash", []string{"workflow_triggers"}, "a webhook delivery finds its trigger by its token's hash"},
	{"triggers.due", []string{"workflow_triggers"}, sweep + ": schedules whose tick has come"},
	{"triggers.activeMailboxes", []string{"workflow_triggers", "email_mailboxes"}, sweep + ": the mailboxes with an enabled email trigger, to poll (each poller then names its workspace)"},
	{"triggers.pruneDeliveries", []string{"webhook_deliveries"}, sweep + ": delivery ids older than a day"},
	{"triggers.pruneMessages", []string{"email_messages"}, sweep + ": handled email messages older than 30 days"},

	{"undo.failStale", []string{"undo_actions"}, sweep + ": undos a stopped process left executing"},
	{"undo.dueActions", []string{"undo_actions"}, sweep + ": undos whose grace ended"},

	{"workflows.projectsWithQueuedRuns", []string{"workflow_runs"}, sweep + ": projects with queued workflow runs, for admission"},
	{"workflows.waitingGates", []string{"node_runs", "workflow_runs", "workflows", "workspace_members"}, "a user's human gates across the workspaces they belong to"},
	{"workflows.ownRunWorkspace", []string{"workflow_runs", "workspace_members"}, "a decision names only the run: found among the user's own runs in workspaces they belong to"},
}

// OpaqueQuery names a function that hands the database a text the walk
// cannot see (a field, a loop variable): the literals it comes from are
// judged where they are written; this says so.
type OpaqueQuery struct {
	Func   string
	Reason string
}

// Opaque lists those functions.
var Opaque = []OpaqueQuery{
	{"apps.appDatabases.run", "an app's backend function: the manifest's statement, run on the app's own database (its SQLite file, or its schema as its own role), never Slipway's"},
	{"platform/db.tracedStmt.ExecContext", "the driver wrapper that traces statements runs whatever database/sql hands it"},
	{"platform/db.tracedStmt.QueryContext", "the driver wrapper that traces statements runs whatever database/sql hands it"},
	{"platform/db.Tx.pipeline", "runs the statements queued by Tx.Later and Tx.Pipe, whose texts are judged where they are written"},
	{"platform/db.Tx.run", "runs the statements queued by Tx.Later and Tx.Pipe, whose texts are judged where they are written"},
}

// OutsideStores names the packages whose SQL may live outside store files
// (store.go, <concept>_store.go), with the reason.
var OutsideStores = map[string]string{
	"platform/db":        "the database layer itself",
	"platform/db/dbtest": "test databases: creates and drops them",
	"platform/jobs":      "the queue is its own store",
	"platform/pubsub":    "NOTIFY and LISTEN",
	"apitest":            "test helper: inspects rows",
	"fixture":            "test helper: sets up rows (excluded from this issue's moves)",
	"runners":            "excluded from this issue's moves while its package is restructured (TODO: runners/service.go, identity.go, metrics.go)",
}
