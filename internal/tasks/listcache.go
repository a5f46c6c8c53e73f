package tasks

import "sync"

// listCache keeps pages of the task list as they were encoded, each with
// the version of its workspace's tasks it was read at (task_versions,
// moved by every change to a task row in the same transaction, migration
// 00024). A page is served again only while the version read before it
// still stands, so it is never older than the last committed change; a
// request that finds the version moved reads and encodes the page again.
// The version is read before the page: a page read after a change that
// committed meanwhile is newer than its version says, and only costs one
// read more.
//
// Bounds: pages of at most maxListPageBytes (a longer one is not kept), at
// most maxListBytes in all (arbitrary pages go to make room).
type listCache struct {
	mu    sync.Mutex
	pages map[listKey]listPage
	bytes int
}

const (
	maxListPageBytes = 256 << 10
	maxListBytes     = 32 << 20
)

type listKey struct {
	workspace, status, project, q string
	limit, offset                 int
}

type listPage struct {
	version int64
	json    []byte // the TaskList as AppendJSON writes it
}

func newListCache() *listCache { return &listCache{pages: map[listKey]listPage{}} }

func keyOf(workspaceID string, f ListFilter) listKey {
	return listKey{workspace: workspaceID, status: f.Status, project: f.ProjectID, q: f.Q, limit: f.Limit, offset: f.Offset}
}

// get returns the page kept for k at version v.
func (c *listCache) get(k listKey, v int64) ([]byte, bool) {
	c.mu.Lock()
	p, ok := c.pages[k]
	c.mu.Unlock()
	if !ok || p.version != v {
		return nil, false
	}
	return p.json, true
}

// put keeps a page read at version v (unless a page of a later version is
// kept already, or the page is too long).
func (c *listCache) put(k listKey, v int64, page []byte) {
	if len(page) > maxListPageBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pages[k]; ok {
		if p.version > v {
			return
		}
		c.bytes -= len(p.json)
		delete(c.pages, k)
	}
	for old, p := range c.pages {
		if c.bytes+len(page) <= maxListBytes {
			break
		}
		c.bytes -= len(p.json)
		delete(c.pages, old)
	}
	c.pages[k] = listPage{version: v, json: page}
	c.bytes += len(page)
}
