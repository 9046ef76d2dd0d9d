mod cli;
mod common;
mod isolate;
mod kill;
mod opencode_e2e;
