-- Counterparty lookups by bank details: the exact `routing_number` / `account_number` filters
-- and `deduplicate=true`, which looks for a newer live row with the same pair.
CREATE INDEX counterparties_pair
    ON counterparties (platform_id, routing_number, account_number, created_at, id);
