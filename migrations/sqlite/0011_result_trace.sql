-- A result's own W3C trace context (`src/http/trace.rs`), handed to the sender that drains it.
ALTER TABLE tasks ADD COLUMN result_trace TEXT;
