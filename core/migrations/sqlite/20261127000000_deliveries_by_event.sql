-- An event's attempts to one endpoint (issue 32). `POST .../retry` reads the event's pending
-- attempt and its highest attempt number; through `webhook_deliveries_list` that walked every
-- attempt the endpoint ever had, inside a write (SQLite's one writer held for all of it), so a
-- platform sending its failed events again after an outage stalled every write. An event has
-- a handful of attempts per endpoint.
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id, endpoint_id);
