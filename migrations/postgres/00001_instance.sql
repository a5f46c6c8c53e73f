-- +goose Up
-- Facts about this instance that outlive a process: when it was first
-- booted and which version booted it last (to log upgrades).
CREATE TABLE instance_meta (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE instance_meta;
