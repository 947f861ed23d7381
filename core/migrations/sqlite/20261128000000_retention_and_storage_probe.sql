-- Retention (issue 53): events and delivery attempts older than their retention are purged in
-- small transactions, oldest first, across platforms; these indexes let each chunk find its
-- rows without a scan.
CREATE INDEX events_by_time ON events (created_at);
CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (created_at) WHERE status <> 'pending';

-- A full disk (issue 53): once a write found the storage full, readiness writes this one row
-- to learn whether writes fit again, so a server taken out of rotation can come back without
-- a client's write.
CREATE TABLE storage_probe (
    id INTEGER PRIMARY KEY,
    checked_at TEXT NOT NULL
);
