//! One file per HTTP adapter: endpoint, auth and the few hooks that differ.

pub mod anthropic;
pub mod anthropic_oauth;
pub mod anthropic_payg;
pub mod glm;
pub mod glm_coding_plan;
pub mod glm_payg;
