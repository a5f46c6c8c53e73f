-- +goose Up
-- Notifications by mail (issue 29): each person chooses whether what needs
-- them is also mailed — off (the default), decisions (approvals, gates,
-- proposals) or all. mailed marks the notifications that were, which bounds
-- how many a person is sent an hour.
CREATE TABLE notification_settings (
    user_id    TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    mail       TEXT NOT NULL CHECK (mail IN ('off', 'decisions', 'all')),
    updated_at TIMESTAMPTZ NOT NULL
);
ALTER TABLE notifications ADD COLUMN mailed BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
-- Slipway only migrates up.
