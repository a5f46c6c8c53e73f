package tasks

import (
	"strconv"

	"slipway/internal/platform/httpx"
)

// Tasks write their own JSON (httpx.JSONAppender): a page of tasks is the
// hottest list of the API, and encoding/json spent a quarter of its time
// on reflection and on checking each timestamp's MarshalJSON output again.
// The bytes are exactly encoding/json's (TestTaskJSONMatchesEncodingJSON
// compares them field by field, on values with every field set, so a field
// added to a type and not here fails it).

// AppendJSON implements httpx.JSONAppender.
func (l TaskList) AppendJSON(b []byte) ([]byte, error) {
	if l.encoded != nil {
		return append(b, l.encoded...), nil
	}
	b = append(b, `{"tasks":`...)
	if l.Tasks == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range l.Tasks {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = l.Tasks[i].AppendJSON(b); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(l.Total), 10)
	return append(b, '}'), nil
}

// AppendJSON implements httpx.JSONAppender.
func (t *Task) AppendJSON(b []byte) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, `{"id":`...)
	b = httpx.AppendJSONString(b, t.ID)
	b = append(b, `,"workspace_id":`...)
	b = httpx.AppendJSONString(b, t.WorkspaceID)
	b = append(b, `,"project_id":`...)
	b = httpx.AppendJSONString(b, t.ProjectID)
	b = append(b, `,"title":`...)
	b = httpx.AppendJSONString(b, t.Title)
	b = append(b, `,"prompt":`...)
	b = httpx.AppendJSONString(b, t.Prompt)
	b = append(b, `,"agent_profile":`...)
	b = httpx.AppendJSONString(b, t.AgentProfile)
	b = append(b, `,"config":`...)
	b = t.Config.appendJSON(b)
	b = append(b, `,"notes":`...)
	b = httpx.AppendJSONString(b, t.Notes)
	b = append(b, `,"status":`...)
	b = httpx.AppendJSONString(b, t.Status)
	b = append(b, `,"held":`...)
	b = httpx.AppendJSONBool(b, t.Held)
	b = append(b, `,"branch":`...)
	b = httpx.AppendJSONString(b, t.Branch)
	b = append(b, `,"error":`...)
	b = httpx.AppendJSONString(b, t.Error)
	b = append(b, `,"pr":`...)
	if b, err = t.PR.appendJSON(b); err != nil {
		return b, err
	}
	b = append(b, `,"created_by":`...)
	b = httpx.AppendJSONNullString(b, t.CreatedBy)
	b = append(b, `,"created_at":`...)
	if b, err = httpx.AppendJSONTime(b, t.CreatedAt); err != nil {
		return b, err
	}
	b = append(b, `,"updated_at":`...)
	if b, err = httpx.AppendJSONTime(b, t.UpdatedAt); err != nil {
		return b, err
	}
	b = append(b, `,"started_at":`...)
	if b, err = httpx.AppendJSONNullTime(b, t.StartedAt); err != nil {
		return b, err
	}
	b = append(b, `,"finished_at":`...)
	if b, err = httpx.AppendJSONNullTime(b, t.FinishedAt); err != nil {
		return b, err
	}
	b = append(b, `,"parent_task_id":`...)
	b = httpx.AppendJSONNullString(b, t.ParentTaskID)
	b = append(b, `,"group_id":`...)
	b = httpx.AppendJSONNullString(b, t.GroupID)
	b = append(b, `,"cost_usd":`...)
	if b, err = httpx.AppendJSONFloat(b, t.CostUSD); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendJSON writes the configuration; its fields are all omitempty.
func (c *TaskConfig) appendJSON(b []byte) []byte {
	sep := byte('{') // before the next field
	if c.Model != "" {
		b = append(append(b, sep), `"model":`...)
		b = httpx.AppendJSONString(b, c.Model)
		sep = ','
	}
	if c.Effort != "" {
		b = append(append(b, sep), `"effort":`...)
		b = httpx.AppendJSONString(b, c.Effort)
		sep = ','
	}
	if c.TimeoutMinutes != 0 {
		b = append(append(b, sep), `"timeout_minutes":`...)
		b = strconv.AppendInt(b, int64(c.TimeoutMinutes), 10)
		sep = ','
	}
	if c.Runner != nil {
		b = append(append(b, sep), `"runner":{`...)
		if labels := c.Runner.RequiredLabels; len(labels) > 0 {
			b = append(b, `"required_labels":[`...)
			for i, l := range labels {
				if i > 0 {
					b = append(b, ',')
				}
				b = httpx.AppendJSONString(b, l)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
		sep = ','
	}
	if c.TestDB {
		b = append(append(b, sep), `"test_db":true`...)
		sep = ','
	}
	if sep == '{' {
		b = append(b, '{')
	}
	return append(b, '}')
}

// appendJSON writes the pull request record, or null.
func (p *PullRequest) appendJSON(b []byte) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"provider":`...)
	b = httpx.AppendJSONString(b, p.Provider)
	b = append(b, `,"state":`...)
	b = httpx.AppendJSONString(b, p.State)
	b = append(b, `,"number":`...)
	if p.Number == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*p.Number), 10)
	}
	b = append(b, `,"error":`...)
	b = httpx.AppendJSONNullString(b, p.Error)
	b = append(b, `,"branch":`...)
	b = httpx.AppendJSONString(b, p.Branch)
	b = append(b, `,"base":`...)
	b = httpx.AppendJSONString(b, p.Base)
	b = append(b, `,"commit":`...)
	b = httpx.AppendJSONString(b, p.Commit)
	b = append(b, `,"files_changed":`...)
	b = strconv.AppendInt(b, int64(p.FilesChanged), 10)
	b = append(b, `,"insertions":`...)
	b = strconv.AppendInt(b, int64(p.Insertions), 10)
	b = append(b, `,"deletions":`...)
	b = strconv.AppendInt(b, int64(p.Deletions), 10)
	b = append(b, `,"url":`...)
	b = httpx.AppendJSONNullString(b, p.URL)
	b = append(b, `,"opened_at":`...)
	var err error
	if b, err = httpx.AppendJSONNullTime(b, p.OpenedAt); err != nil {
		return b, err
	}
	if p.ClosedAt != nil {
		b = append(b, `,"closed_at":`...)
		if b, err = httpx.AppendJSONTime(b, *p.ClosedAt); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
