-- Events and webhook deliveries (issue 32): a transactional outbox. An event and the pending
-- first attempt of each subscribed endpoint are written in the transaction of the change they
-- describe, so a rolled-back change has neither and a committed one always has both.

-- `data` is the changed resource as the rules saw it, as JSON (the `EventData` of
-- domain/events.rs); the API maps it to the wire shape with the same code as the resource's GET.
CREATE TABLE events (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL REFERENCES platforms (platform_id),
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX events_list ON events (platform_id, created_at, id);
CREATE INDEX events_by_type ON events (platform_id, type, created_at, id);

-- `enabled_events` holds types and `prefix.*` selectors as `,a,b.*,` (empty: every event), the
-- form an event's fan-out matches with LIKE.
-- `previous_secret` keeps signing until `previous_secret_expires_at` after a rotation.
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL REFERENCES platforms (platform_id),
    url TEXT NOT NULL,
    description TEXT NOT NULL,
    enabled_events TEXT NOT NULL,
    is_disabled BOOLEAN NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_expires_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_list ON webhook_endpoints (platform_id, created_at, id);

-- One row per attempt. A `pending` row is the next attempt, due at `next_attempt_at`; a worker
-- claims it by setting `lease_until` (an expired lease, after a crash, makes it claimable again,
-- hence at-least-once). Making the attempt turns the row `succeeded` or `failed` and, when a
-- failed attempt has retries left, inserts the next `pending` row in the same transaction.
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id TEXT NOT NULL REFERENCES events (id),
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    response_status INTEGER,
    latency_ms INTEGER,
    error TEXT,
    created_at TEXT NOT NULL,
    next_attempt_at TEXT,
    lease_until TEXT
);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (endpoint_id, created_at, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
