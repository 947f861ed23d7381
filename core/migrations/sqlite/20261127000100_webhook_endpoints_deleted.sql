-- Deleting an endpoint marks it (issue 32); its attempts, the endpoint's whole history, go
-- afterwards in small transactions (`Outbox::purge_deleted`), then the row itself. Deleting
-- them in the request's transaction held SQLite's one writer for as long as that took (2.4 s
-- for 500 000 attempts), and every other write of every platform waited. A marked endpoint is
-- gone for the API: not found, not listed, not counted, sent nothing.
ALTER TABLE webhook_endpoints ADD COLUMN deleted_at TEXT;
