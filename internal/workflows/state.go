package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/ids"
	"slipway/internal/platform/redact"
	"slipway/internal/runs"
)

// runState is one run as a transition sees it, read under the run's lock:
// the graph it started with and every node run so far. A transition changes
// it in memory (apply, settle) and the caller writes what changed in the
// same transaction, so a run moves from one consistent state to the next.
type runState struct {
	run   *runRow
	graph *Graph
	nodes []*nodeRun
	index map[string]*nodeRun // frame + "\x00" + key
	now   time.Time

	events   []runs.NewEvent
	ended    bool       // the run reached a terminal status in this transition
	stopped  []*nodeRun // node runs cancelled in this transition (their tasks and timers go too)
	fresh    bool       // the run starts in this transition: it has no job yet
	unsaved  bool       // the run starts in this transition and has no row yet
	uncapped bool       // neither its workflow nor its project has a cap, as read in this transaction
	timers   []timer    // timeouts to schedule
	runDirty bool

	// vars are the env vars expressions see as env; red redacts their
	// secret values (and well-known token shapes) from what the run
	// records and sends in notifications and prompts.
	vars map[string]any
	red  *redact.Redactor
}

type timer struct {
	node *nodeRun
	at   time.Time
}

func newRunState(run *runRow, g *Graph, nodes []*nodeRun, now time.Time) *runState {
	st := &runState{run: run, graph: g, nodes: nodes, index: make(map[string]*nodeRun, len(nodes)), now: now}
	for _, n := range nodes {
		st.index[n.Frame+"\x00"+n.Key] = n
	}
	return st
}

func (st *runState) node(frame, key string) *nodeRun { return st.index[frame+"\x00"+key] }

// nodeByID returns the node run of an id, or nil.
func (st *runState) nodeByID(id string) *nodeRun {
	for _, nr := range st.nodes {
		if nr.ID == id {
			return nr
		}
	}
	return nil
}

func (st *runState) event(typ string, v any) {
	st.events = append(st.events, runs.Value(typ, v, st.now))
}

// add creates a node run in a frame.
func (st *runState) add(frame string, n *Node, status string) *nodeRun {
	nr := &nodeRun{ID: ids.New(), RunID: st.run.ID, Frame: frame, Key: n.Key, Kind: n.Kind, Status: status, Seq: len(st.nodes) + 1,
		CreatedAt: st.now, fresh: true}
	if status == NodeSkipped {
		nr.FinishedAt = &st.now
		st.event("node", nodeEvent(nr))
	}
	st.nodes = append(st.nodes, nr)
	st.index[frame+"\x00"+n.Key] = nr
	return nr
}

func nodeEvent(nr *nodeRun) map[string]any {
	ev := map[string]any{"node": nr.Key, "kind": nr.Kind, "status": nr.Status}
	if nr.Frame != "" {
		ev["frame"] = nr.Frame
	}
	if nr.Handle != "" {
		ev["handle"] = nr.Handle
	}
	if nr.Error != "" {
		ev["error"] = nr.Error
	}
	return ev
}

// set moves a node run to a status and records the event.
func (st *runState) set(nr *nodeRun, status string) {
	nr.Status = status
	nr.dirty = true
	if settled(status) {
		nr.FinishedAt = &st.now
	}
	st.event("node", nodeEvent(nr))
}

// settled reports a node status that never changes again.
func settled(status string) bool {
	switch status {
	case NodeSucceeded, NodeFailed, NodeSkipped, NodeCancelled:
		return true
	}
	return false
}

func active(status string) bool {
	return status == NodeReady || status == NodeRunning || status == NodeWaiting
}

// Frames: "" is the top level; iteration i of loop L living in frame F is
// F/L[i] (L[i] when F is the top level).
func childFrame(parent, loop string, i int) string {
	f := loop + "[" + strconv.Itoa(i) + "]"
	if parent != "" {
		f = parent + "/" + f
	}
	return f
}

// frameLoop is the loop key whose body a frame runs ("" at the top level).
func frameLoop(frame string) string {
	if frame == "" {
		return ""
	}
	last := frame[strings.LastIndexByte(frame, '/')+1:]
	return last[:strings.IndexByte(last, '[')]
}

// parentFrame is the frame a loop iteration's loop node lives in.
func parentFrame(frame string) string {
	if i := strings.LastIndexByte(frame, '/'); i >= 0 {
		return frame[:i]
	}
	return ""
}

// loopState is a loop node's progress, kept on its node run.
type loopState struct {
	Items       []json.RawMessage `json:"items"`
	Parallelism int               `json:"parallelism"`
	Started     int               `json:"started"`
}

func (st *runState) loopProgress(nr *nodeRun) (*loopState, error) {
	var ls loopState
	if err := json.Unmarshal(nr.State, &ls); err != nil {
		return nil, fmt.Errorf("loop %q: state: %w", nr.Key, err)
	}
	return &ls, nil
}

// frames lists the frames whose nodes may still move: the top level and the
// started iterations of waiting loops in them.
func (st *runState) frames() []string {
	out := []string{""}
	for i := 0; i < len(out); i++ {
		f := out[i]
		for _, n := range st.graph.FrameNodes(frameLoop(f)) {
			if n.Kind != "loop" {
				continue
			}
			nr := st.node(f, n.Key)
			if nr == nil || nr.Status != NodeWaiting {
				continue
			}
			ls, err := st.loopProgress(nr)
			if err != nil {
				continue
			}
			for it := range ls.Started {
				out = append(out, childFrame(f, n.Key, it))
			}
		}
	}
	return out
}

// frameSettled reports whether every node of a frame has settled.
func (st *runState) frameSettled(frame string) bool {
	for _, n := range st.graph.FrameNodes(frameLoop(frame)) {
		nr := st.node(frame, n.Key)
		if nr == nil || !settled(nr.Status) {
			return false
		}
	}
	return true
}

// frameOutput is what a settled frame gives: the output of its one
// succeeded sink (a node without outgoing edges), or an object of its
// succeeded sinks' outputs by key when there are several.
func (st *runState) frameOutput(frame string) json.RawMessage {
	sinks := map[string]json.RawMessage{}
	var last json.RawMessage
	for _, n := range st.graph.FrameNodes(frameLoop(frame)) {
		if len(st.graph.Outgoing(n.Key)) > 0 {
			continue
		}
		if nr := st.node(frame, n.Key); nr != nil && nr.Status == NodeSucceeded {
			out := nr.Output
			if out == nil {
				out = json.RawMessage("null")
			}
			sinks[n.Key], last = out, out
		}
	}
	switch len(sinks) {
	case 0:
		return json.RawMessage("null")
	case 1:
		return last
	}
	b, _ := json.Marshal(sinks) // raw messages of stored JSON: cannot fail
	return b
}

// handled reports whether a failed node's error branch is wired.
func (st *runState) handled(key string) bool {
	for _, e := range st.graph.Outgoing(key) {
		if e.SourceHandle == HandleError {
			return true
		}
	}
	return false
}

// settle moves the run as far as it goes without running anything: nodes
// whose inputs settled become ready or skipped, unhandled failures fail
// their loop or the run, loops start iterations and finish, and the run
// ends when its top level has settled.
func (st *runState) settle() {
	for changed := true; changed && st.run.Status == RunRunning; {
		changed = false
		for _, f := range st.frames() {
			if st.readyFrame(f) {
				changed = true
			}
		}
		for _, f := range st.frames() {
			if st.failures(f) {
				changed = true
				break // the frames changed
			}
		}
		if st.run.Status != RunRunning {
			return
		}
		for _, f := range st.frames() {
			if st.loops(f) {
				changed = true
			}
		}
	}
	if st.run.Status == RunRunning && st.frameSettled("") {
		st.finish(RunSucceeded, st.runOutput(), "")
	}
}

// readyFrame readies or skips the nodes of a frame whose inputs settled.
func (st *runState) readyFrame(f string) bool {
	changed := false
	for _, n := range st.graph.FrameNodes(frameLoop(f)) {
		if st.node(f, n.Key) != nil {
			continue
		}
		in := st.graph.Incoming(n.Key)
		resolved, live := true, len(in) == 0
		for _, e := range in {
			src := st.node(f, e.Source)
			if src == nil || !settled(src.Status) {
				resolved = false
				break
			}
			if (src.Status == NodeSucceeded || src.Status == NodeFailed) && src.Handle == e.SourceHandle {
				live = true
			}
		}
		if !resolved {
			continue
		}
		n := n
		if live {
			st.add(f, &n, NodeReady)
		} else {
			st.add(f, &n, NodeSkipped)
		}
		changed = true
	}
	return changed
}

// failures fails the loop or the run of a frame where a node failed with no
// error branch wired.
func (st *runState) failures(f string) bool {
	for _, n := range st.graph.FrameNodes(frameLoop(f)) {
		nr := st.node(f, n.Key)
		if nr == nil || nr.Status != NodeFailed || st.handled(n.Key) {
			continue
		}
		msg := fmt.Sprintf("node %q failed: %s", n.Key, nr.Error)
		if f == "" {
			st.finish(RunFailed, nil, msg)
			return true
		}
		loop := st.node(parentFrame(f), frameLoop(f))
		if loop == nil || loop.Status != NodeWaiting {
			continue
		}
		st.stopFrames(parentFrame(f), loop.Key)
		st.fail(loop, fmt.Sprintf("iteration %s: %s", f[strings.LastIndexByte(f, '[')+1:len(f)-1], msg))
		return true
	}
	return false
}

// fail records a node's failure; its error branch (if wired) fires.
func (st *runState) fail(nr *nodeRun, msg string) {
	nr.Error = msg
	nr.Handle = HandleError
	out, _ := json.Marshal(map[string]string{"error": msg})
	nr.Output = out
	st.set(nr, NodeFailed)
}

// loops starts the iterations a loop has room for and finishes the loops
// whose iterations all settled.
func (st *runState) loops(f string) bool {
	changed := false
	for _, n := range st.graph.FrameNodes(frameLoop(f)) {
		nr := st.node(f, n.Key)
		if n.Kind != "loop" || nr == nil || nr.Status != NodeWaiting {
			continue
		}
		ls, err := st.loopProgress(nr)
		if err != nil {
			st.fail(nr, err.Error())
			changed = true
			continue
		}
		running, done := 0, 0
		for it := range ls.Started {
			if st.frameSettled(childFrame(f, n.Key, it)) {
				done++
			} else {
				running++
			}
		}
		if done == len(ls.Items) {
			outs := make([]json.RawMessage, len(ls.Items))
			for it := range outs {
				outs[it] = st.frameOutput(childFrame(f, n.Key, it))
			}
			b, _ := json.Marshal(outs)
			nr.Output, nr.Handle, nr.State = b, HandleOut, nil
			st.set(nr, NodeSucceeded)
			changed = true
			continue
		}
		if ls.Started < len(ls.Items) && running < ls.Parallelism {
			for ls.Started < len(ls.Items) && running < ls.Parallelism {
				ls.Started++
				running++
			}
			nr.State, _ = json.Marshal(ls)
			nr.dirty = true
			changed = true
		}
	}
	return changed
}

// stopFrames cancels what is still active in the iterations of a loop.
func (st *runState) stopFrames(frame, loop string) {
	prefix := childFrame(frame, loop, 0)
	prefix = prefix[:strings.LastIndexByte(prefix, '[')+1]
	for _, nr := range st.nodes {
		if strings.HasPrefix(nr.Frame, prefix) && active(nr.Status) {
			st.stop(nr)
		}
	}
}

func (st *runState) stop(nr *nodeRun) {
	st.set(nr, NodeCancelled)
	st.stopped = append(st.stopped, nr)
}

// finish ends the run; whatever is still active is cancelled.
func (st *runState) finish(status string, output json.RawMessage, errText string) {
	if st.run.Status == RunSucceeded || st.run.Status == RunFailed || st.run.Status == RunCancelled {
		return
	}
	for _, nr := range st.nodes {
		if active(nr.Status) {
			st.stop(nr)
		}
	}
	st.run.Status, st.run.Output, st.run.Error = status, output, errText
	st.run.FinishedAt = &st.now
	st.runDirty, st.ended = true, true
	ev := map[string]any{"status": status}
	if errText != "" {
		ev["error"] = errText
	}
	st.event("run", ev)
}

// runOutput is a succeeded run's output: the last succeeded end node's
// output when there is one, otherwise what the top level's sinks gave.
func (st *runState) runOutput() json.RawMessage {
	var out json.RawMessage
	var at time.Time
	found := false
	for _, nr := range st.nodes {
		if nr.Frame == "" && nr.Kind == "end" && nr.Status == NodeSucceeded && nr.FinishedAt != nil && (!found || !nr.FinishedAt.Before(at)) {
			out, at, found = nr.Output, *nr.FinishedAt, true
		}
	}
	if found {
		if out == nil {
			out = json.RawMessage("null")
		}
		return out
	}
	return st.frameOutput("")
}

// ready lists the node runs the engine should run now, oldest first.
func (st *runState) ready() []*nodeRun {
	var out []*nodeRun
	for _, nr := range st.nodes {
		if nr.Status == NodeReady || nr.Status == NodeRunning {
			out = append(out, nr)
		}
	}
	return out
}

// changed lists the node runs a transition created or changed.
func (st *runState) changed() []*nodeRun {
	return slices.DeleteFunc(slices.Clone(st.nodes), func(n *nodeRun) bool { return !n.fresh && !n.dirty })
}
