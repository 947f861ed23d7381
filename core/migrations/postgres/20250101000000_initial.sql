-- Initial schema (PostgreSQL). Keep in step with ../sqlite/20250101000000_initial.sql.
-- Conventions: ids are TEXT `<prefix>_<27 base62>`; timestamps are TIMESTAMPTZ written by the
-- application clock (microseconds); money is BIGINT minor units; booleans are BOOLEAN.
-- Every table carries platform_id, and references between tenant rows are composite
-- (platform_id, id) foreign keys, so a row can never point at another platform's row whatever
-- the application code does.

CREATE TABLE platforms (
    platform_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    reporting_time_zone TEXT,
    -- JSON array of {name, type, required, values?, max_length?}
    additional_requirements TEXT NOT NULL DEFAULT '[]',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    -- SHA-256 of the whole key, lower-case hex; the key itself is never stored.
    key_hash TEXT PRIMARY KEY CHECK (length(key_hash) = 64),
    platform_id TEXT NOT NULL REFERENCES platforms (platform_id),
    mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);
CREATE INDEX api_keys_platform ON api_keys (platform_id);

CREATE TABLE entities (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL REFERENCES platforms (platform_id),
    type TEXT NOT NULL CHECK (type IN ('PERSON', 'BUSINESS')),
    name TEXT NOT NULL,
    is_root BOOLEAN NOT NULL DEFAULT FALSE,
    requires_screening BOOLEAN NOT NULL DEFAULT FALSE,
    verification_status TEXT NOT NULL
        CHECK (verification_status IN ('UNVERIFIED', 'PENDING', 'MANUAL_REVIEW', 'VERIFIED', 'DENIED')),
    review_reasons TEXT NOT NULL DEFAULT '[]',
    -- PERSON
    first_name TEXT,
    middle_name TEXT,
    last_name TEXT,
    date_of_birth DATE,
    email TEXT,
    -- Only the last four digits: the full SSN is never returned, so it is not kept.
    ssn_last_4 TEXT CHECK (ssn_last_4 IS NULL OR length(ssn_last_4) = 4),
    -- BUSINESS
    business_name TEXT,
    ein TEXT,
    industry TEXT,
    legal_type TEXT,
    state_of_incorporation TEXT,
    website TEXT,
    year_of_incorporation TEXT,
    description TEXT,
    countries_of_operation TEXT NOT NULL DEFAULT '[]',
    -- Both: JSON object {line_1, line_2, city, state, postal_code, country_code}
    address TEXT,
    -- Additional requirements submitted so far: JSON object name -> value
    additional_requirements TEXT NOT NULL DEFAULT '{}',
    additional_requirements_updated_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ,
    UNIQUE (platform_id, id),
    CHECK (type = 'BUSINESS' OR (first_name IS NOT NULL AND last_name IS NOT NULL)),
    CHECK (type = 'PERSON' OR business_name IS NOT NULL)
);
CREATE INDEX entities_list ON entities (platform_id, created_at, id);
-- One root entity per platform.
CREATE UNIQUE INDEX entities_one_root ON entities (platform_id) WHERE is_root;

CREATE TABLE associated_persons (
    platform_id TEXT NOT NULL,
    business_entity_id TEXT NOT NULL,
    person_entity_id TEXT NOT NULL,
    -- JSON array of 'control_person' | 'beneficial_owner'
    roles TEXT NOT NULL,
    title_in_business TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (business_entity_id, person_entity_id),
    FOREIGN KEY (platform_id, business_entity_id) REFERENCES entities (platform_id, id),
    FOREIGN KEY (platform_id, person_entity_id) REFERENCES entities (platform_id, id),
    CHECK (business_entity_id <> person_entity_id)
);
CREATE INDEX associated_persons_list
    ON associated_persons (platform_id, business_entity_id, created_at, person_entity_id);

CREATE TABLE bank_accounts (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL REFERENCES platforms (platform_id),
    type TEXT NOT NULL
        CHECK (type IN ('CHECKING', 'OVERDRAFT_RESERVE', 'PROGRAM_RESERVE', 'NETWORK_SETTLEMENT_ACCOUNT')),
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed', 'frozen')),
    description TEXT NOT NULL,
    display_name TEXT,
    currency_code TEXT NOT NULL CHECK (length(currency_code) = 3),
    available_amount BIGINT NOT NULL DEFAULT 0,
    pending_amount BIGINT NOT NULL DEFAULT 0,
    holding_amount BIGINT NOT NULL DEFAULT 0,
    locked_amount BIGINT NOT NULL DEFAULT 0,
    is_overdraftable BOOLEAN NOT NULL DEFAULT FALSE,
    overdraft_reserve_account_id TEXT,
    -- Not a foreign key: account numbers reference their account, and the default is set
    -- right after both rows exist in the same transaction.
    default_account_number_id TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    closed_at TIMESTAMPTZ,
    UNIQUE (platform_id, id),
    FOREIGN KEY (platform_id, overdraft_reserve_account_id) REFERENCES bank_accounts (platform_id, id),
    -- Available money never goes negative, except on an overdraftable account and on the
    -- settlement account, which stands for the outside world (money arriving makes it negative).
    CHECK (available_amount >= 0 OR is_overdraftable OR type = 'NETWORK_SETTLEMENT_ACCOUNT'),
    CHECK (pending_amount >= 0 AND holding_amount >= 0 AND locked_amount >= 0),
    CHECK (NOT is_overdraftable OR overdraft_reserve_account_id IS NOT NULL)
);
CREATE INDEX bank_accounts_list ON bank_accounts (platform_id, created_at, id);
-- Each root account type exists once per platform.
CREATE UNIQUE INDEX bank_accounts_one_root_per_type ON bank_accounts (platform_id, type)
    WHERE type <> 'CHECKING';

CREATE TABLE bank_account_owners (
    platform_id TEXT NOT NULL,
    bank_account_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    -- 0 for the primary owner, then in the order owners were added.
    position INTEGER NOT NULL CHECK (position >= 0),
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (bank_account_id, entity_id),
    UNIQUE (bank_account_id, position),
    FOREIGN KEY (platform_id, bank_account_id) REFERENCES bank_accounts (platform_id, id),
    FOREIGN KEY (platform_id, entity_id) REFERENCES entities (platform_id, id)
);
CREATE INDEX bank_account_owners_entity ON bank_account_owners (platform_id, entity_id);

CREATE TABLE account_numbers (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL,
    bank_account_id TEXT NOT NULL,
    -- Unique across all platforms: it routes money from outside.
    account_number TEXT NOT NULL UNIQUE CHECK (length(account_number) BETWEEN 12 AND 17),
    routing_number TEXT NOT NULL,
    bic TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    check_issuing_positive_pay_required BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (platform_id, id),
    FOREIGN KEY (platform_id, bank_account_id) REFERENCES bank_accounts (platform_id, id)
);
CREATE INDEX account_numbers_list ON account_numbers (platform_id, bank_account_id, created_at, id);

CREATE TABLE ach_positive_pay_rules (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL,
    bank_account_id TEXT NOT NULL,
    ach_company_id TEXT NOT NULL CHECK (length(ach_company_id) = 10),
    amount_condition TEXT NOT NULL
        CHECK (amount_condition IN ('equal', 'less_than_or_equal_to', 'any_amount')),
    amount BIGINT CHECK (amount IS NULL OR amount >= 0),
    description TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (platform_id, id),
    UNIQUE (bank_account_id, ach_company_id),
    FOREIGN KEY (platform_id, bank_account_id) REFERENCES bank_accounts (platform_id, id),
    CHECK ((amount_condition = 'any_amount') = (amount IS NULL))
);
CREATE INDEX ach_positive_pay_rules_list
    ON ach_positive_pay_rules (platform_id, bank_account_id, created_at, id);

CREATE TABLE counterparties (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL REFERENCES platforms (platform_id),
    routing_number TEXT NOT NULL,
    routing_number_type TEXT NOT NULL DEFAULT 'aba' CHECK (routing_number_type IN ('aba', 'bic')),
    account_number TEXT NOT NULL,
    account_type TEXT CHECK (account_type IS NULL OR account_type IN ('checking', 'savings')),
    name TEXT,
    description TEXT,
    email TEXT,
    phone TEXT,
    address TEXT,
    legal_id TEXT,
    legal_type TEXT
        CHECK (legal_type IS NULL OR legal_type IN ('business', 'non_profit', 'individual', 'sole_proprietor')),
    local_bank_code TEXT,
    local_account_number TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ,
    UNIQUE (platform_id, id)
);
CREATE INDEX counterparties_list ON counterparties (platform_id, created_at, id);

CREATE TABLE documents (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL REFERENCES platforms (platform_id),
    entity_id TEXT,
    type TEXT NOT NULL,
    tag TEXT,
    description TEXT,
    file_name TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size BIGINT NOT NULL CHECK (size >= 0),
    -- SHA-256 of content, lower-case hex.
    checksum TEXT NOT NULL CHECK (length(checksum) = 64),
    -- The file lives with its record: one transaction, one backup.
    content BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (platform_id, id),
    FOREIGN KEY (platform_id, entity_id) REFERENCES entities (platform_id, id),
    CHECK (size = octet_length(content))
);
CREATE INDEX documents_list ON documents (platform_id, created_at, id);
CREATE INDEX documents_entity ON documents (platform_id, entity_id, created_at, id);

CREATE TABLE book_transfers (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL,
    amount BIGINT NOT NULL CHECK (amount > 0),
    currency_code TEXT NOT NULL CHECK (length(currency_code) = 3),
    sender_bank_account_id TEXT NOT NULL,
    sender_account_number_id TEXT,
    receiver_bank_account_id TEXT NOT NULL,
    receiver_account_number_id TEXT,
    description TEXT,
    allow_overdraft BOOLEAN NOT NULL DEFAULT FALSE,
    status TEXT NOT NULL CHECK (status IN ('HOLD', 'COMPLETED', 'CANCELED', 'REJECTED')),
    idempotency_key TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (platform_id, id),
    FOREIGN KEY (platform_id, sender_bank_account_id) REFERENCES bank_accounts (platform_id, id),
    FOREIGN KEY (platform_id, receiver_bank_account_id) REFERENCES bank_accounts (platform_id, id),
    FOREIGN KEY (platform_id, sender_account_number_id) REFERENCES account_numbers (platform_id, id),
    FOREIGN KEY (platform_id, receiver_account_number_id) REFERENCES account_numbers (platform_id, id)
);
CREATE INDEX book_transfers_list ON book_transfers (platform_id, created_at, id);

CREATE TABLE ach_transfers (
    id TEXT PRIMARY KEY,
    platform_id TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('CREDIT', 'DEBIT')),
    is_incoming BOOLEAN NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('PENDING', 'COMPLETED', 'RETURNED')),
    return_code TEXT,
    bank_account_id TEXT NOT NULL,
    account_number_id TEXT NOT NULL,
    amount BIGINT NOT NULL CHECK (amount > 0),
    currency_code TEXT NOT NULL CHECK (length(currency_code) = 3),
    company_id TEXT NOT NULL,
    company_name TEXT NOT NULL,
    description TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (platform_id, id),
    FOREIGN KEY (platform_id, bank_account_id) REFERENCES bank_accounts (platform_id, id),
    FOREIGN KEY (platform_id, account_number_id) REFERENCES account_numbers (platform_id, id),
    CHECK ((status = 'RETURNED') = (return_code IS NOT NULL))
);
CREATE INDEX ach_transfers_list ON ach_transfers (platform_id, created_at, id);

-- Double-entry ledger: every balance change is a posting; the postings of one journal entry
-- sum to zero. Balances on bank_accounts are the running totals, updated in the same
-- transaction that writes the postings.
CREATE TABLE ledger_postings (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    platform_id TEXT NOT NULL,
    journal_id TEXT NOT NULL,
    bank_account_id TEXT NOT NULL,
    balance TEXT NOT NULL CHECK (balance IN ('available', 'pending', 'holding', 'locked')),
    amount BIGINT NOT NULL CHECK (amount <> 0),
    currency_code TEXT NOT NULL CHECK (length(currency_code) = 3),
    -- What caused it: 'book_transfer', 'ach_transfer', ...
    source_type TEXT NOT NULL,
    source_id TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    FOREIGN KEY (platform_id, bank_account_id) REFERENCES bank_accounts (platform_id, id)
);
CREATE INDEX ledger_postings_account ON ledger_postings (platform_id, bank_account_id, created_at);
CREATE INDEX ledger_postings_journal ON ledger_postings (platform_id, journal_id);

-- Idempotency-Key records. A row is written 'in_flight' and completed with the response in the
-- same transaction as the request's effects, so a committed row is always 'completed'; the
-- state column keeps the rule explicit and allows a future two-phase variant.
CREATE TABLE idempotency_keys (
    platform_id TEXT NOT NULL REFERENCES platforms (platform_id),
    key TEXT NOT NULL,
    -- SHA-256 hex of method, path and body of the first request.
    request_hash TEXT NOT NULL CHECK (length(request_hash) = 64),
    state TEXT NOT NULL CHECK (state IN ('in_flight', 'completed')),
    response_status INTEGER,
    response_body BYTEA,
    created_at TIMESTAMPTZ NOT NULL,
    completed_at TIMESTAMPTZ,
    PRIMARY KEY (platform_id, key),
    CHECK (state = 'in_flight' OR (response_status IS NOT NULL AND response_body IS NOT NULL))
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
