//! Every statement in `sql/`, checked as a whole: each prepares against the migrated
//! schema (`prepare`), and each that changes a task's state guards on exactly the source
//! states the transition table allows (`transitions`). One test binary (one link).

use crate::common;

mod claim_functions;
mod door;
pub(crate) mod files;
mod headers;
mod jit;
mod planned_once;
mod plans;
mod prepare;
mod tokens;
mod transitions;
