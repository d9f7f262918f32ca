-- Webhook endpoints (issue 41): each game's receivers of its feed, the records each wants,
-- and how far each is delivered. A rotated secret keeps signing beside the new one until
-- `previous_until`; an endpoint that failed every attempt is parked with its reason.
CREATE TABLE webhooks (
    game TEXT NOT NULL,
    endpoint_id TEXT NOT NULL,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_until BIGINT,
    kinds TEXT NOT NULL,
    delivered_through BIGINT NOT NULL,
    parked_reason TEXT,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (game, endpoint_id)
);
