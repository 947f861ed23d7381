-- `GET /entities?verification_status=` for a status other than VERIFIED (a review queue:
-- MANUAL_REVIEW, DENIED, PENDING): nearly every entity is verified when it is made, so these
-- match few, and the list walked the platform's entities past the others. On SQLite, among
-- 1 000 000 entities, one page of `MANUAL_REVIEW` (1 in 1 000) took 24-34 ms and of `DENIED`
-- (none) 0.23-0.31 s (bench/README.md, "Fixed so far"). VERIFIED, the common status, keeps the
-- list index.
--
-- Partial, so a verified entity adds no entry; an entry comes and goes with a review. The
-- list states the condition as written (`verification_status <> 'VERIFIED'`,
-- `store::entities::list_keyset`): SQLite picks a partial index before values are bound.
CREATE INDEX entities_not_verified
    ON entities (platform_id, verification_status, created_at, id)
    WHERE verification_status <> 'VERIFIED';
