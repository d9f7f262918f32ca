-- Segments (issue 41): the dimensions a board ranks its members within, comma-separated
-- (`country`); empty for none. Fixed with the rest of the definition.
ALTER TABLE boards ADD COLUMN segments TEXT NOT NULL DEFAULT '';
