-- +goose Up
-- What each run stored of its output (issue 22): the hub bounds it too, so a
-- runner that does not keep the limits (its organization's own machine)
-- cannot fill the database; output_capped: its output_truncated is written.
ALTER TABLE runs ADD COLUMN output_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN output_lines BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN output_capped BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
-- Slipway only migrates up.
