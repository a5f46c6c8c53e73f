package tasks

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/board"
	"slipway/internal/platform/httpx"
	"slipway/internal/runs"
)

type idInput struct {
	ID string `path:"id" doc:"Task id"`
}

type createInput struct{ Body TaskCreate }

type subtaskInput struct {
	ID   string `path:"id" doc:"Parent task id"`
	Body SubtaskCreate
}

type subtaskIDInput struct {
	ID        string `path:"id" doc:"Parent task id"`
	SubtaskID string `path:"subtask_id"`
}

type groupInput struct{ Body GroupCreate }

type groupIDInput struct {
	GroupID string `path:"group_id"`
}

// TaskList is a page of tasks.
type TaskList struct {
	Tasks []Task `json:"tasks"`
	Total int    `json:"total"`

	encoded []byte // the page as AppendJSON writes it, kept (listCache); Tasks is then nil
}

type namesInput struct {
	Limit int `query:"limit" minimum:"1" maximum:"500" default:"50"`
}

type configInput struct {
	ID   string `path:"id"`
	Body TaskConfig
}

type notesInput struct {
	ID   string `path:"id"`
	Body struct {
		Notes string `json:"notes" maxLength:"100000"`
	}
}

type titleInput struct {
	ID   string `path:"id"`
	Body struct {
		Title string `json:"title" maxLength:"200"`
	}
}

// Title is the answer of a rename.
type Title struct {
	Title string `json:"title" doc:"The title as stored"`
}

// Register mounts the task operations; scoped resolves the active workspace
// (tenancy.WorkspaceScoped).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Tasks"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	user := func(ctx context.Context) *actor.User {
		u, _ := actor.UserFrom(ctx)
		return u
	}

	huma.Register(api, ops.Op("get_api_tasks", http.MethodGet, "/api/tasks", "Tasks of the active workspace, newest first"),
		func(ctx context.Context, in *ListFilter) (*httpx.Out[TaskList], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), *in))
		})
	huma.Register(api, httpx.Created(ops.Op("post_api_tasks", http.MethodPost, "/api/tasks", "Give a task to an agent")),
		func(ctx context.Context, in *createInput) (*httpx.Out[*Task], error) {
			return httpx.Reply(s.Create(ctx, ws(ctx), user(ctx), in.Body))
		})
	huma.Register(api, ops.Op("get_tasks_board", http.MethodGet, "/tasks/board", "A page of tasks with status and project facets"),
		func(ctx context.Context, in *BoardInput) (*httpx.Out[*board.Board[Task]], error) {
			return httpx.Reply(s.Board(ctx, ws(ctx), *in))
		})
	huma.Register(api, ops.Op("get_api_tasks_names", http.MethodGet, "/api/tasks/names", "Newest task titles, for pickers"),
		func(ctx context.Context, in *namesInput) (*httpx.Out[[]TaskName], error) {
			return httpx.Reply(s.Names(ctx, ws(ctx), in.Limit))
		})
	huma.Register(api, ops.Op("get_api_tasks_id", http.MethodGet, "/api/tasks/{id}", "A task"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Task], error) {
			return httpx.Reply(s.Get(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("delete_api_tasks_id", http.MethodDelete, "/api/tasks/{id}", "Delete a task that is not running"),
		func(ctx context.Context, in *idInput) (*httpx.DeletedOutput, error) {
			if err := s.Delete(ctx, ws(ctx), in.ID); err != nil {
				return nil, err
			}
			return httpx.Deleted(), nil
		})

	actions := []struct {
		id, path, summary string
		fn                func(ctx context.Context, id string) (*Task, error)
	}{
		{"post_api_tasks_id_cancel", "/api/tasks/{id}/cancel", "Cancel: a queued task never starts, a running agent is stopped",
			func(ctx context.Context, id string) (*Task, error) { return s.Cancel(ctx, ws(ctx), id, user(ctx)) }},
		{"post_api_tasks_id_launch", "/api/tasks/{id}/launch", "Release a held task into the queue",
			func(ctx context.Context, id string) (*Task, error) { return s.Launch(ctx, ws(ctx), id) }},
		{"post_api_tasks_id_restart", "/api/tasks/{id}/restart", "Queue a finished task again (continues on its branch)",
			func(ctx context.Context, id string) (*Task, error) { return s.Restart(ctx, ws(ctx), id) }},
		{"post_api_tasks_id_rerun", "/api/tasks/{id}/rerun", "Create and queue a new task with the same prompt and settings (201, the new task)",
			func(ctx context.Context, id string) (*Task, error) { return s.Rerun(ctx, ws(ctx), user(ctx), id) }},
		{"post_api_tasks_id_pr", "/api/tasks/{id}/pr", "Open the pull request of a finished task (when autodev did not)",
			func(ctx context.Context, id string) (*Task, error) { return s.OpenPR(ctx, ws(ctx), id) }},
		{"post_api_tasks_id_interrupt", "/api/tasks/{id}/interrupt", "Stop the agent's current step and keep the task (the llm agent then waits for a message)",
			func(ctx context.Context, id string) (*Task, error) { return s.Interrupt(ctx, ws(ctx), user(ctx), id) }},
	}
	for _, a := range actions {
		o := ops.Op(a.id, http.MethodPost, a.path, a.summary)
		o.Errors = []int{http.StatusNotFound, http.StatusConflict}
		if a.id == "post_api_tasks_id_rerun" {
			o = httpx.Created(o)
		}
		huma.Register(api, o, func(ctx context.Context, in *idInput) (*httpx.Out[*Task], error) {
			return httpx.Reply(a.fn(ctx, in.ID))
		})
	}

	// Subtasks, scoped through their parent.
	huma.Register(api, ops.Op("get_api_tasks_id_subtasks", http.MethodGet, "/api/tasks/{id}/subtasks", "The task's subtasks, oldest first"),
		func(ctx context.Context, in *idInput) (*httpx.Out[[]Subtask], error) {
			return httpx.Reply(s.Subtasks(ctx, ws(ctx), in.ID))
		})
	delegate := httpx.Created(ops.Op("post_api_tasks_id_subtasks", http.MethodPost, "/api/tasks/{id}/subtasks", "Delegate a subtask to a named agent profile"))
	delegate.Description = "The subtask is queued in the parent's project. When it ends, the parent's agent (if it still works) is told in a message."
	huma.Register(api, delegate, func(ctx context.Context, in *subtaskInput) (*httpx.Out[*SubtaskRef], error) {
		return httpx.Reply(s.Delegate(ctx, ws(ctx), user(ctx), in.ID, in.Body))
	})
	huma.Register(api, ops.Op("get_api_tasks_id_subtasks_subtask_id", http.MethodGet, "/api/tasks/{id}/subtasks/{subtask_id}", "A subtask's outcome (no prompt or agent configuration)"),
		func(ctx context.Context, in *subtaskIDInput) (*httpx.Out[*Subtask], error) {
			return httpx.Reply(s.Subtask(ctx, ws(ctx), in.ID, in.SubtaskID))
		})
	huma.Register(api, ops.Op("post_api_tasks_id_subtasks_subtask_id_cancel", http.MethodPost, "/api/tasks/{id}/subtasks/{subtask_id}/cancel", "Cancel a subtask"),
		func(ctx context.Context, in *subtaskIDInput) (*httpx.Out[*Subtask], error) {
			return httpx.Reply(s.CancelSubtask(ctx, ws(ctx), user(ctx), in.ID, in.SubtaskID))
		})

	// Groups and the team board.
	huma.Register(api, httpx.Created(ops.Op("post_api_tasks_group", http.MethodPost, "/api/tasks/group", "Create tasks as a group (held until launched, unless launch is set)")),
		func(ctx context.Context, in *groupInput) (*httpx.Out[*Group], error) {
			return httpx.Reply(s.CreateGroup(ctx, ws(ctx), user(ctx), in.Body))
		})
	huma.Register(api, ops.Op("get_api_tasks_group_group_id", http.MethodGet, "/api/tasks/group/{group_id}", "A group with its tasks and counts by status"),
		func(ctx context.Context, in *groupIDInput) (*httpx.Out[*Group], error) {
			return httpx.Reply(s.Group(ctx, ws(ctx), in.GroupID))
		})
	huma.Register(api, ops.Op("post_api_tasks_group_group_id_cancel", http.MethodPost, "/api/tasks/group/{group_id}/cancel", "Cancel every task of the group that has not ended"),
		func(ctx context.Context, in *groupIDInput) (*httpx.Out[*Group], error) {
			return httpx.Reply(s.CancelGroup(ctx, ws(ctx), user(ctx), in.GroupID))
		})
	huma.Register(api, ops.Op("post_api_tasks_group_group_id_launch", http.MethodPost, "/api/tasks/group/{group_id}/launch", "Release the group's held tasks into the queue"),
		func(ctx context.Context, in *groupIDInput) (*httpx.Out[*Group], error) {
			return httpx.Reply(s.LaunchGroup(ctx, ws(ctx), in.GroupID))
		})
	huma.Register(api, ops.Op("get_api_team_board", http.MethodGet, "/api/team-board", "A row per agent profile: task counts, last activity and cost"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[[]TeamRow], error) {
			return httpx.Reply(s.TeamBoard(ctx, ws(ctx)))
		})

	huma.Register(api, ops.Op("patch_api_tasks_id_config", http.MethodPatch, "/api/tasks/{id}/config", "Replace the configuration of a queued task"),
		func(ctx context.Context, in *configInput) (*httpx.Out[*Task], error) {
			return httpx.Reply(s.SetConfig(ctx, ws(ctx), in.ID, in.Body))
		})
	huma.Register(api, ops.Op("put_api_tasks_id_notes", http.MethodPut, "/api/tasks/{id}/notes", "Replace the task's notes"),
		func(ctx context.Context, in *notesInput) (*httpx.Out[*Task], error) {
			return httpx.Reply(s.SetNotes(ctx, ws(ctx), in.ID, in.Body.Notes))
		})
	huma.Register(api, ops.Op("put_api_tasks_id_title", http.MethodPut, "/api/tasks/{id}/title", "Rename the task; returns the stored title"),
		func(ctx context.Context, in *titleInput) (*httpx.Out[Title], error) {
			title, err := s.Rename(ctx, ws(ctx), in.ID, in.Body.Title)
			return httpx.Reply(Title{Title: title}, err)
		})
	huma.Register(api, ops.Op("get_api_tasks_id_runner_line", http.MethodGet, "/api/tasks/{id}/runner-line", "Where the task would run"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*RunnerLine], error) {
			return httpx.Reply(s.RunnerLine(ctx, ws(ctx), in.ID))
		})
	huma.Register(api, ops.Op("get_api_tasks_id_events", http.MethodGet, "/api/tasks/{id}/events", "The task's event log, in sequence order"),
		func(ctx context.Context, in *runs.EventsInput) (*httpx.Out[[]runs.TaskEvent], error) {
			return httpx.Reply(s.Events(ctx, ws(ctx), in.ID, in.AfterSequence, int(in.Limit)))
		})
}
