//! The fault matrix's table and the judgement of one cell, shared by geode's matrix and
//! geode-local's `local` column.

pub mod run;
pub mod table;
