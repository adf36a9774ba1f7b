//! Ending within the budget: in the last tokens of a call's budget, sampling is narrowed (inside
//! the constraint's mask, never beside it) to the tokens that close what is open.
//!
//! The narrowing of the schema ([`crate::tighten`]) bounds what it can (strings, lists, maps,
//! recursion), but a JSON number has no length limit llguidance can impose, and the longest
//! answer is an estimate. So when at most [`reserve`] tokens are left, the allowed tokens are
//! split into tiers and only the first non-empty tier is sampled from:
//! 1. the end of the answer (an end-of-generation token the mask allows: the answer is complete);
//! 2. tokens that start with a closing `"`, `}` or `]` (spaces aside): a string, an object or a
//!    list ends;
//! 3. tokens that start with `,`: the value being written (a runaway number) ends.
//!
//! When no allowed token is in any tier, the mask is used as it is. The mask always applies,
//! so the answer still derives from the constraint (fail closed); this only chooses, among the
//! tokens the constraint allows, the ones that finish sooner.

use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::vocab::LlamaVocab;
use toktrie::SimpleVob;

/// The last tokens of a budget of `budget` in which sampling prefers closing: a quarter of the
/// budget, at most 128 (room for the required keys still to write).
pub(crate) fn reserve(budget: usize) -> usize {
    (budget / 4).min(128)
}

/// A token's tier (0: none).
const END: u8 = 1;
const CLOSE: u8 = 2;
const COMMA: u8 = 3;

/// The tier of every token of a vocabulary, computed once per call that reaches its reserve.
pub(crate) struct Tiers(Vec<u8>);

impl Tiers {
    pub(crate) fn of(vocab: &LlamaVocab) -> Self {
        let n = vocab.n_tokens().max(0);
        Self(
            (0..n)
                .map(|id| {
                    let token = LlamaToken(id);
                    if vocab.is_eog(token) {
                        return END;
                    }
                    tier_of_piece(&vocab.token_to_piece(token, false, None))
                })
                .collect(),
        )
    }

    /// The allowed token ids to sample from: those of the first tier the mask allows any of,
    /// or every allowed one.
    pub(crate) fn narrow(&self, mask: &SimpleVob) -> Vec<usize> {
        let mut allowed = Vec::with_capacity(mask.num_set());
        mask.iter_set_entries(|id| allowed.push(id));
        narrow_ids(&allowed, |id| self.0.get(id).copied().unwrap_or(0))
    }
}

/// The tier of a token's text.
fn tier_of_piece(piece: &[u8]) -> u8 {
    match piece.iter().find(|b| **b != b' ') {
        Some(b'"' | b'}' | b']') => CLOSE,
        Some(b',') => COMMA,
        _ => 0,
    }
}

/// Of `allowed`, those in the first tier present (by `tier`), else all.
fn narrow_ids(allowed: &[usize], tier: impl Fn(usize) -> u8) -> Vec<usize> {
    for wanted in [END, CLOSE, COMMA] {
        let chosen: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|id| tier(*id) == wanted)
            .collect();
        if !chosen.is_empty() {
            return chosen;
        }
    }
    allowed.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_a_quarter_of_the_budget_at_most_128() {
        assert_eq!(reserve(512), 128);
        assert_eq!(reserve(1024), 128);
        assert_eq!(reserve(96), 24);
        assert_eq!(reserve(3), 0);
    }

    #[test]
    fn closing_pieces_are_told_apart() {
        assert_eq!(tier_of_piece(b"\""), CLOSE);
        assert_eq!(tier_of_piece(b" \"}"), CLOSE);
        assert_eq!(tier_of_piece(b"]}"), CLOSE);
        assert_eq!(tier_of_piece(b", "), COMMA);
        assert_eq!(tier_of_piece(b"12"), 0);
        assert_eq!(tier_of_piece(b"{"), 0);
        assert_eq!(tier_of_piece(b""), 0);
    }

    #[test]
    fn the_first_tier_allowed_wins_and_nothing_outside_the_mask_is_added() {
        let tiers = [0, END, CLOSE, COMMA, 0, CLOSE];
        let tier = |id: usize| tiers[id];
        assert_eq!(narrow_ids(&[0, 1, 2, 3], tier), vec![1]);
        assert_eq!(narrow_ids(&[0, 2, 3, 5], tier), vec![2, 5]);
        assert_eq!(narrow_ids(&[0, 3, 4], tier), vec![3]);
        // No closing token allowed: the mask as it is.
        assert_eq!(narrow_ids(&[0, 4], tier), vec![0, 4]);
    }
}
