-- `GET /documents?file_name=`, `?tag=` and `?type=` filtered while walking `documents_list`,
-- testing each document of the platform in turn: a name, tag or type that few documents have
-- cost the platform's whole list on every page. A document's row also holds its content, so
-- each one tested is a page of the table read (bench/README.md, "Fixed so far").
--
-- Each index starts with its filter's value, then the list's order, so a page is one range
-- read whatever else the platform holds. Untagged documents (most of them) have no tag entry.
-- Documents are written once, on upload, where the content dwarfs three index entries.
CREATE INDEX documents_by_file_name ON documents (platform_id, file_name, created_at, id);
CREATE INDEX documents_by_tag ON documents (platform_id, tag, created_at, id)
    WHERE tag IS NOT NULL;
CREATE INDEX documents_by_type ON documents (platform_id, type, created_at, id);
