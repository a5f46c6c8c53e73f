package runs

import (
	"encoding/json"
	"testing"
	"time"
)

// A run's packed events are written as [type, micros, payload] and read in
// that form and in the keyed form runs packed before migration 00023 kept.
func TestPackedEventForms(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	evs := []packedEvent{
		pack("run", json.RawMessage(`{"status":"queued","workflow_id":"w"}`), base.Add(-147*time.Microsecond), base),
		pack("node", json.RawMessage(`{"node":"a","status":"succeeded"}`), base.Add(3*time.Millisecond), base),
		{Type: "run", Micros: 5},
	}
	b, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[["run",-147,{"status":"queued","workflow_id":"w"}],["node",3000,{"node":"a","status":"succeeded"}],["run",5,null]]`
	if string(b) != want {
		t.Fatalf("packed as %s, want %s", b, want)
	}
	old := `[{"t":"run","p":{"status":"queued","workflow_id":"w"},"us":-147},{"t":"node","p":{"node":"a","status":"succeeded"},"us":3000},` +
		`{"t":"run","p":null,"us":5}]`
	for _, form := range []string{want, old} {
		var got []packedEvent
		if err := json.Unmarshal([]byte(form), &got); err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		if len(got) != 3 || got[0].Type != "run" || got[0].Micros != -147 || string(got[0].Payload) != `{"status":"queued","workflow_id":"w"}` ||
			got[1].Type != "node" || !got[1].at(base).Equal(base.Add(3*time.Millisecond)) || string(got[2].Payload) != "null" {
			t.Fatalf("%s read as %+v", form, got)
		}
	}
	for _, bad := range []string{`[["run",1]]`, `[["run","x",{}]]`, `[[1,2,{}]]`} {
		var got []packedEvent
		if err := json.Unmarshal([]byte(bad), &got); err == nil {
			t.Fatalf("%s read without an error: %+v", bad, got)
		}
	}
}
