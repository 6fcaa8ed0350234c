use crate::store::sql_files::{lay_out_mark, sql_file_tests, Section, SqlEntry, SqlFile};

fn file() -> SqlFile {
    let mut own = Section::new(
        "PostgreSQL's own (src/store/postgres/statements.rs)",
        super::POSTGRES,
    );
    own.push(SqlEntry::shown_as(
        "install_step_many",
        "The group-commit function a2a_step_many, as it is installed at start-up (under \
         INSTALL_LOCK): src/store/postgres/step_many.sql with the kinds' numbers and its \
         marks' statements written in (LANE_SEND_LEASED, LANE_SEND, LANE_CLAIM, LANE_STORED \
         and LANE_DRAIN of src/store/postgres/statements.rs, by steps::step_many_source). \
         Installed, each of those statements is one line.",
        super::super::steps::step_many_source(),
        super::super::steps::step_many_laid_out(lay_out_mark),
    ));
    SqlFile::new(
        "src/store/postgres/statements.sql",
        "PostgreSQL",
        "the LISTEN of src/store/postgres/peers.rs (sqlx's PgListener), query plans (EXPLAIN \
         before a statement, with SET LOCAL enable_seqscan and enable_sort off, \
         src/store/postgres/backend.rs), the connections' lock_timeout \
         (src/store/postgres/mod.rs) and the schema (migrations/postgres/).",
        &super::STATEMENTS,
        own,
    )
}

sql_file_tests!(file);
