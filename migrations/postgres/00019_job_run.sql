-- +goose Up
-- The run the current claim of a job started (the worker's lease names
-- it). Leases were told apart by owner and attempt only; a runner's claim
-- that it never acknowledged goes back to the queue without costing an
-- attempt, so the same runner could claim the job again under the very
-- same owner and attempt, and the lease of the lost claim would have held
-- again. NULL: the claim started no run (the engine's own jobs).
ALTER TABLE jobs ADD COLUMN run_id TEXT;

-- +goose Down
-- Slipway only migrates up.
