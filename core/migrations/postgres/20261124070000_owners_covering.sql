-- The owners of an account are read by (platform_id, bank_account_id) in position order: by the
-- correlated subquery of `GET /bank-accounts/{id}` and by the one statement that reads the owners
-- of a list page. With entity_id in the index those reads never visit the table: on SQLite that
-- is one random page read fewer per account (bench/README.md, "Fixed so far").
-- Keep in step with ../sqlite/20261124070000_owners_covering.sql.
DROP INDEX bank_account_owners_account;
CREATE INDEX bank_account_owners_account
    ON bank_account_owners (platform_id, bank_account_id, position, entity_id);
