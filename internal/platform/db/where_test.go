package db

import (
	"reflect"
	"testing"
)

func TestWhereBranchesIndependently(t *testing.T) {
	base := NewWhere("workspace_id = ?", "w").And("(a LIKE ? OR b LIKE ?)", "%x%", "%x%")
	one := base.And("status = ?", "queued")
	two := base.And("project_id = ?", "p")
	if one.SQL != "workspace_id = $1 AND (a LIKE $2 OR b LIKE $3) AND status = $4" || two.SQL != "workspace_id = $1 AND (a LIKE $2 OR b LIKE $3) AND project_id = $4" {
		t.Fatalf("SQL: %q / %q", one.SQL, two.SQL)
	}
	if !reflect.DeepEqual(one.Args, []any{"w", "%x%", "%x%", "queued"}) || !reflect.DeepEqual(two.Args, []any{"w", "%x%", "%x%", "p"}) {
		t.Fatalf("args overwrite each other: %v / %v", one.Args, two.Args)
	}
	if len(base.Args) != 3 || base.Next(1) != "$4" || one.Next(2) != "$6" {
		t.Fatalf("base changed or Next wrong: %v %s %s", base.Args, base.Next(1), one.Next(2))
	}
}
