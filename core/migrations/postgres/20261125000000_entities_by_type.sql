-- `GET /entities?type=` walked `entities_list` past every entity of the other type: a platform
-- of people asking for its few businesses read all of its entities for each page
-- (bench/README.md, "Fixed so far"). An entity's type never changes, so the entry is written
-- once, when the entity is made.
CREATE INDEX entities_by_type ON entities (platform_id, type, created_at, id);
