package tasks

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type idInput struct {
	ID string `path:"id" doc:"Task id"`
}

type taskOutput struct{ Body *Task }

type createInput struct{ Body TaskCreate }

// TaskList is a page of tasks.
type TaskList struct {
	Tasks []Task `json:"tasks"`
	Total int    `json:"total"`
}

type listOutput struct{ Body TaskList }

type namesInput struct {
	Limit int `query:"limit" minimum:"1" maximum:"500" default:"50"`
}

type namesOutput struct{ Body []TaskName }

type boardOutput struct{ Body *httpx.Board[Task] }

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

type titleOutput struct {
	Body struct {
		Title string `json:"title" doc:"The title as stored"`
	}
}

type runnerLineOutput struct{ Body *RunnerLine }

type eventsInput struct {
	ID            string `path:"id"`
	AfterSequence int32  `query:"after_sequence" minimum:"0" maximum:"2147483647" doc:"Return events after this sequence number"`
	Limit         int64  `query:"limit" minimum:"1" maximum:"1000" default:"500"`
}

type eventsOutput struct{ Body []TaskEvent }

type runsInput struct{ RunFilter }

// RunList is a page of runs.
type RunList struct {
	Runs  []Run `json:"runs"`
	Total int   `json:"total"`
}

type runsOutput struct{ Body RunList }

type runBoardOutput struct{ Body *httpx.Board[Run] }

type runIDInput struct {
	ID string `path:"id" doc:"Run id"`
}

type runTreeOutput struct{ Body *RunTree }

type runEventsInput struct {
	ID            string `path:"id"`
	AfterSequence int32  `query:"after_sequence" minimum:"0" maximum:"2147483647"`
	Limit         int64  `query:"limit" minimum:"1" maximum:"1000" default:"500"`
}

// Register mounts the task and run operations; scoped resolves the active
// workspace (tenancy.WorkspaceScoped).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	mw := huma.Middlewares{scoped}
	op := func(id, method, path, summary string, tags ...string) huma.Operation {
		if len(tags) == 0 {
			tags = []string{"Tasks"}
		}
		return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Tags: tags, Security: httpx.SessionSecurity, Middlewares: mw}
	}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx)
		return w
	}
	user := func(ctx context.Context) *actor.User {
		u, _ := actor.UserFrom(ctx)
		return u
	}
	one := func(t *Task, err error) (*taskOutput, error) {
		if err != nil {
			return nil, err
		}
		return &taskOutput{Body: t}, nil
	}

	huma.Register(api, op("get_api_tasks", http.MethodGet, "/api/tasks", "Tasks of the active workspace, newest first"),
		func(ctx context.Context, in *ListFilter) (*listOutput, error) {
			ts, total, err := s.List(ctx, ws(ctx), *in)
			if err != nil {
				return nil, err
			}
			return &listOutput{Body: TaskList{Tasks: ts, Total: total}}, nil
		})
	create := op("post_api_tasks", http.MethodPost, "/api/tasks", "Give a task to an agent")
	create.DefaultStatus = http.StatusCreated
	huma.Register(api, create, func(ctx context.Context, in *createInput) (*taskOutput, error) {
		return one(s.Create(ctx, ws(ctx), user(ctx), in.Body))
	})
	huma.Register(api, op("get_tasks_board", http.MethodGet, "/tasks/board", "A page of tasks with status and project facets"),
		func(ctx context.Context, in *BoardInput) (*boardOutput, error) {
			b, err := s.Board(ctx, ws(ctx), *in)
			if err != nil {
				return nil, err
			}
			return &boardOutput{Body: b}, nil
		})
	huma.Register(api, op("get_api_tasks_names", http.MethodGet, "/api/tasks/names", "Newest task titles, for pickers"),
		func(ctx context.Context, in *namesInput) (*namesOutput, error) {
			ns, err := s.Names(ctx, ws(ctx), in.Limit)
			if err != nil {
				return nil, err
			}
			return &namesOutput{Body: ns}, nil
		})
	huma.Register(api, op("get_api_tasks_id", http.MethodGet, "/api/tasks/{id}", "A task"),
		func(ctx context.Context, in *idInput) (*taskOutput, error) { return one(s.Get(ctx, ws(ctx), in.ID)) })
	huma.Register(api, op("delete_api_tasks_id", http.MethodDelete, "/api/tasks/{id}", "Delete a task that is not running"),
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
	}
	for _, a := range actions {
		o := op(a.id, http.MethodPost, a.path, a.summary)
		o.Errors = []int{http.StatusNotFound, http.StatusConflict}
		if a.id == "post_api_tasks_id_rerun" {
			o.DefaultStatus = http.StatusCreated
		}
		huma.Register(api, o, func(ctx context.Context, in *idInput) (*taskOutput, error) { return one(a.fn(ctx, in.ID)) })
	}

	huma.Register(api, op("patch_api_tasks_id_config", http.MethodPatch, "/api/tasks/{id}/config", "Replace the configuration of a queued task"),
		func(ctx context.Context, in *configInput) (*taskOutput, error) {
			return one(s.SetConfig(ctx, ws(ctx), in.ID, in.Body))
		})
	huma.Register(api, op("put_api_tasks_id_notes", http.MethodPut, "/api/tasks/{id}/notes", "Replace the task's notes"),
		func(ctx context.Context, in *notesInput) (*taskOutput, error) {
			return one(s.SetNotes(ctx, ws(ctx), in.ID, in.Body.Notes))
		})
	huma.Register(api, op("put_api_tasks_id_title", http.MethodPut, "/api/tasks/{id}/title", "Rename the task; returns the stored title"),
		func(ctx context.Context, in *titleInput) (*titleOutput, error) {
			title, err := s.Rename(ctx, ws(ctx), in.ID, in.Body.Title)
			if err != nil {
				return nil, err
			}
			out := &titleOutput{}
			out.Body.Title = title
			return out, nil
		})
	huma.Register(api, op("get_api_tasks_id_runner_line", http.MethodGet, "/api/tasks/{id}/runner-line", "Where the task would run"),
		func(ctx context.Context, in *idInput) (*runnerLineOutput, error) {
			l, err := s.RunnerLine(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			return &runnerLineOutput{Body: l}, nil
		})
	huma.Register(api, op("get_api_tasks_id_events", http.MethodGet, "/api/tasks/{id}/events", "The task's event log, in sequence order"),
		func(ctx context.Context, in *eventsInput) (*eventsOutput, error) {
			evs, err := s.Events(ctx, ws(ctx), in.ID, in.AfterSequence, int(in.Limit))
			if err != nil {
				return nil, err
			}
			return &eventsOutput{Body: evs}, nil
		})

	rtags := "Runs"
	huma.Register(api, op("get_api_runs", http.MethodGet, "/api/runs", "Runs, newest first (top-level unless include_children)", rtags),
		func(ctx context.Context, in *runsInput) (*runsOutput, error) {
			rs, total, err := s.Runs(ctx, ws(ctx), in.RunFilter)
			if err != nil {
				return nil, err
			}
			return &runsOutput{Body: RunList{Runs: rs, Total: total}}, nil
		})
	huma.Register(api, op("get_api_runs_board", http.MethodGet, "/api/runs/board", "A page of runs with status and kind facets", rtags),
		func(ctx context.Context, in *RunBoardInput) (*runBoardOutput, error) {
			b, err := s.RunBoard(ctx, ws(ctx), *in)
			if err != nil {
				return nil, err
			}
			return &runBoardOutput{Body: b}, nil
		})
	huma.Register(api, op("get_api_runs_id", http.MethodGet, "/api/runs/{id}", "A run with its descendant tree", rtags),
		func(ctx context.Context, in *runIDInput) (*runTreeOutput, error) {
			t, err := s.RunTree(ctx, ws(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			return &runTreeOutput{Body: t}, nil
		})
	huma.Register(api, op("get_api_runs_id_events", http.MethodGet, "/api/runs/{id}/events", "A run's events in sequence order", rtags),
		func(ctx context.Context, in *runEventsInput) (*eventsOutput, error) {
			evs, err := s.RunEvents(ctx, ws(ctx), in.ID, in.AfterSequence, int(in.Limit))
			if err != nil {
				return nil, err
			}
			return &eventsOutput{Body: evs}, nil
		})
}
