mod cli;
mod common;
mod kill;
mod opencode_e2e;
