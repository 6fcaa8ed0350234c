-- Audit rows are identified by a UUID like every other id (API.md §10): `event_id`, a
-- time-ordered UUIDv7 that the column's default writes for every insert, whatever statement
-- makes it (the group-commit function's included). The bigint `id` stays the rows' order (the
-- feed is newest first by it, and the indexes use it).
CREATE OR REPLACE FUNCTION a2a_uuid_v7() RETURNS text LANGUAGE sql VOLATILE AS $$
    -- A random (v4) UUID whose first 48 bits become the Unix time in milliseconds and whose
    -- version nibble becomes 7 (bits 52 and 53 set: 0100 -> 0111).
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid::text
$$;
ALTER TABLE audit ADD COLUMN event_id TEXT COLLATE "C";
UPDATE audit SET event_id = '00000000-0000-7000-8000-' || lpad(to_hex(id), 12, '0');
ALTER TABLE audit ALTER COLUMN event_id SET DEFAULT a2a_uuid_v7(), ALTER COLUMN event_id SET NOT NULL;
