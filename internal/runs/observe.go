package runs

import (
	"slipway/internal/platform/db"
	"slipway/internal/platform/telemetry"
)

// countStarted counts a run that started once its transaction commits (a
// rolled-back start started nothing); outside a transaction at once.
func countStarted(q db.Queryer, kind string) {
	afterCommit(q, func() { telemetry.RunStarted(kind) })
}

// countFinished counts a run that ended, likewise.
func countFinished(q db.Queryer, kind, status string) {
	afterCommit(q, func() { telemetry.RunFinished(kind, status) })
}

func afterCommit(q db.Queryer, fn func()) {
	if tx, ok := q.(*db.Tx); ok {
		tx.AfterCommit(fn)
		return
	}
	fn()
}
