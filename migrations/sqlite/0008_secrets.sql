-- Values the mailbox generates once per database and never reveals (the namespace of the A2A
-- facade's task ids): the first instance to start writes one, every other instance reads it.
CREATE TABLE secrets (
    name  TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
