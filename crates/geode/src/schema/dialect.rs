//! Per-provider schema projection and limit preflight (STUB: being completed on branch `schema`).

/// A provider's schema dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI strict structured outputs (Responses `text.format`).
    OpenAiStrict,
    /// Anthropic structured outputs (`output_config.format`).
    Anthropic,
    /// Z.ai GLM: JSON mode only.
    Glm,
    /// The claude CLI's `--json-schema`.
    ClaudeCli,
    /// The codex CLI's `--output-schema`.
    CodexCli,
    /// llguidance in-process.
    Local,
}

/// Whether Anthropic's native structured output can take the schema (STUB).
pub fn anthropic_native_fits(_schema: &super::ResponseSchema) -> Result<(), Vec<String>> {
    Err(vec!["not checked yet".to_owned()])
}

/// One provider limit a schema exceeds (STUB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitViolation {
    /// The limit's name.
    pub limit: String,
    /// What was found.
    pub found: usize,
    /// The maximum.
    pub max: usize,
    /// Where.
    pub pointer: String,
}

impl std::fmt::Display for LimitViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} > {} at {}",
            self.limit, self.found, self.max, self.pointer
        )
    }
}

/// Checks provider limits offline (STUB).
pub fn preflight(
    _schema: &super::ResponseSchema,
    _dialect: Dialect,
) -> Result<(), Vec<LimitViolation>> {
    Ok(())
}
