//! The attacker's and the careless operator's suite: every surface (native API, the A2A facade
//! on both bindings, the dashboard's forms, the operator CLI) called with every kind of token and
//! with hostile input, on SQLite and on PostgreSQL; and random interleavings of the mailbox's
//! operations checked against a model of its state machine.

#[allow(dead_code)]
#[macro_use]
mod common;

mod adversarial {
    mod careless;
    mod cli;
    mod dashboard;
    mod depth;
    mod facade;
    mod fuzz;
    mod fuzz_check;
    mod fuzz_corpus;
    mod fuzz_forms;
    mod fuzz_gen;
    mod fuzz_surfaces;
    mod fuzz_values;
    mod fuzz_world;
    mod hostile;
    mod kit;
    mod mcp;
    mod model;
    mod native;
    mod nul;
    mod nul_cases;
    mod prop;
    mod prop_case;
    mod prop_checks;
    mod reserved;
    mod scoped;
    mod times;
    mod world;
}
