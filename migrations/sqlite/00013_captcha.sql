-- +goose Up
-- Spent captcha challenges (issue 12): a solved challenge passes once; its
-- nonce is kept until the challenge expires.
CREATE TABLE captcha_spent (
    nonce      TEXT PRIMARY KEY,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX captcha_spent_expires ON captcha_spent (expires_at);

-- +goose Down
-- Slipway only migrates up.
