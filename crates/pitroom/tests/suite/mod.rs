mod cli;
mod common;
mod crew;
mod guard;
mod isolate;
mod kill;
mod opencode_e2e;
