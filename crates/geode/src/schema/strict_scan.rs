//! The strict check's one-pass certifier (part of [`super`], in its own file for size): it reads a
//! schema's text once, through the same reader as the tape ([`crate::schema::json_read`]), and
//! answers "compatible" only when the walk ([`super::check_strict`]) would. Anything it cannot
//! settle in one pass it hands back, and [`super::check_strict_text`] then builds a tape and walks
//! it, which also gives the reasons when the schema is not compatible.
//!
//! It is sound by construction, not complete: it checks every place the walk checks and may check
//! more, and it stops on what would need the document or decoded text.
//!
//! | in a schema object | the walk | the certifier |
//! |---|---|---|
//! | `type:"object"`: `additionalProperties:false`, `properties` keys == `required` names | checked | checked; the names must match in order (else handed back) |
//! | `properties` of a schema that is not `type:"object"` | not visited | visited (stricter) |
//! | `items`, `additionalProperties`, `not` (objects); `anyOf`/`oneOf`/`allOf`/`prefixItems` elements | visited | visited |
//! | a repeated keyword (`type`, `properties`, `required`, `additionalProperties`) | the last counts | handed back |
//! | a key or property name with an escape; a `type` value with an escape | decoded | handed back |
//! | `$ref` | followed | handed back |
//! | a repeated property name | the last counts | each visited (stricter) |

use crate::schema::json_read::{Halt, NO_PARENT, Sink, Stop, read};
use crate::schema::tape::{Kind, TapeError};
use smallvec::SmallVec;

/// What the certifier found.
pub(super) enum Certified {
    /// The walk would find the schema compatible.
    Compatible,
    /// Not settled in one pass: build a tape and walk it.
    Unsettled,
}

/// Certifies `text` in one pass; an error is the reader's (the same a [`super::Tape`] gives).
pub(super) fn certify(text: &str) -> Result<Certified, TapeError> {
    let mut sink = Certifier {
        b: text.as_bytes(),
        frames: SmallVec::new(),
        names: SmallVec::new(),
    };
    match read(text, &mut sink) {
        Ok(()) => Ok(Certified::Compatible),
        Err(Stop::Halted) => Ok(Certified::Unsettled),
        Err(Stop::Invalid(e)) => Err(e),
    }
}

/// What a container is to the rules; the low bits of a container's tag (the rest is the index of
/// the schema frame it belongs to).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Role {
    /// Not read by the rules (descriptions, enums, defaults, `$defs`, ...).
    Data = 0,
    /// A schema object.
    Schema = 1,
    /// A schema's `properties`: names, each with a schema.
    Properties = 2,
    /// A schema's `required`: names.
    Required = 3,
    /// A schema array (`anyOf`, `oneOf`, `allOf`, `prefixItems`).
    Schemas = 4,
}

const ROLE_BITS: u32 = 3;
const ROLE_MASK: u32 = (1 << ROLE_BITS) - 1;

/// The keywords the rules read, as the key before a schema object's next value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keyword {
    /// Any other key.
    Other,
    Type,
    AdditionalProperties,
    Properties,
    Required,
    /// `items`, `not` (an object value is a schema).
    Subschema,
    /// `anyOf`, `oneOf`, `allOf`, `prefixItems` (an array value holds schemas).
    Subschemas,
}

impl Keyword {
    /// The keyword of a raw (unescaped) key; `None` for `$ref`, which the certifier does not follow.
    #[inline(always)]
    fn of(raw: &[u8]) -> Option<Self> {
        Some(match raw {
            b"type" => Self::Type,
            b"additionalProperties" => Self::AdditionalProperties,
            b"properties" => Self::Properties,
            b"required" => Self::Required,
            b"items" | b"not" => Self::Subschema,
            b"anyOf" | b"oneOf" | b"allOf" | b"prefixItems" => Self::Subschemas,
            b"$ref" => return None,
            _ => Self::Other,
        })
    }

    /// The bit that marks a rule keyword as seen in its object (0: may repeat).
    fn seen_bit(self) -> u8 {
        match self {
            Self::Type => 1,
            Self::AdditionalProperties => 2,
            Self::Properties => 4,
            Self::Required => 8,
            _ => 0,
        }
    }
}

/// One open schema object.
///
/// Its property names and its required names are compared as they are read: whichever list comes
/// first is kept in `names` (from `mark`), and each name of the second is compared with the name
/// at its index in the first.
#[derive(Clone, Copy)]
struct Frame {
    /// The keyword before the value being read.
    pending: Keyword,
    /// Rule keywords seen so far ([`Keyword::seen_bit`]).
    seen: u8,
    type_object: bool,
    additional_false: bool,
    /// `properties` is not an object or null, `required` not an array of strings or null, or
    /// the two lists differ.
    bad: bool,
    /// Where this frame's kept names start in `names` (dropped at its close).
    mark: u32,
    /// Property names read.
    properties: u32,
    /// Required names read.
    required: u32,
}

/// The [`Sink`] that certifies.
struct Certifier<'s> {
    b: &'s [u8],
    /// The open schema objects, innermost last.
    frames: SmallVec<[Frame; 8]>,
    /// Byte spans of the first name list of each open schema object.
    names: SmallVec<[(u32, u32); 32]>,
}

fn tag(frame: usize, role: Role) -> u32 {
    ((frame as u32) << ROLE_BITS) | role as u32
}

fn role_of(tag: u32) -> Role {
    match tag & ROLE_MASK {
        1 => Role::Schema,
        2 => Role::Properties,
        3 => Role::Required,
        4 => Role::Schemas,
        _ => Role::Data,
    }
}

fn frame_of(tag: u32) -> usize {
    (tag >> ROLE_BITS) as usize
}

impl Certifier<'_> {
    /// The role of a value whose container is tagged `parent` (a schema's the keyword before it
    /// decides), and the schema frame it belongs to.
    #[inline(always)]
    fn role_in(&self, parent: u32) -> (Role, usize) {
        if parent == NO_PARENT {
            return (Role::Schema, 0);
        }
        let frame = frame_of(parent);
        let role = match role_of(parent) {
            Role::Schema => match self.frames[frame].pending {
                Keyword::Properties => Role::Properties,
                Keyword::Required => Role::Required,
                Keyword::Subschema | Keyword::AdditionalProperties => Role::Schema,
                Keyword::Subschemas => Role::Schemas,
                Keyword::Type | Keyword::Other => Role::Data,
            },
            Role::Properties | Role::Schemas => Role::Schema,
            // An element of `required` that is a container: not a name.
            Role::Required => Role::Required,
            Role::Data => Role::Data,
        };
        (role, frame)
    }

    /// Reads one name of frame `at`'s property names (`property`) or required names. The first
    /// list read is kept; a name of the second is compared with the name at its index in the
    /// first (the other list is empty, or was read in full: lists are sibling values).
    #[inline(always)]
    fn name(&mut self, at: usize, a: usize, b: usize, property: bool) {
        let Self {
            b: text,
            frames,
            names,
        } = self;
        let f = &mut frames[at];
        let (count, other) = if property {
            (&mut f.properties, f.required)
        } else {
            (&mut f.required, f.properties)
        };
        let index = *count;
        *count += 1;
        if other == 0 {
            names.push((a as u32, b as u32));
        } else if index >= other || {
            let (x, y) = names[(f.mark + index) as usize];
            text[x as usize..y as usize] != text[a..b]
        } {
            f.bad = true;
        }
    }
}

impl Sink for Certifier<'_> {
    #[inline(always)]
    fn open(&mut self, parent: u32, object: bool) -> Result<u32, Halt> {
        let (role, frame) = self.role_in(parent);
        Ok(match (role, object) {
            (Role::Schema, true) => {
                self.frames.push(Frame {
                    pending: Keyword::Other,
                    seen: 0,
                    type_object: false,
                    additional_false: false,
                    bad: false,
                    mark: self.names.len() as u32,
                    properties: 0,
                    required: 0,
                });
                tag(self.frames.len() - 1, Role::Schema)
            }
            (Role::Properties, true) => tag(frame, Role::Properties),
            (Role::Required, false) if role_of(parent) == Role::Schema => {
                tag(frame, Role::Required)
            }
            (Role::Properties | Role::Required, _) => {
                self.frames[frame].bad = true;
                tag(frame, Role::Data)
            }
            (Role::Schemas, false) => tag(frame, Role::Schemas),
            _ => tag(frame, Role::Data),
        })
    }

    #[inline(always)]
    fn close(&mut self, tag: u32, _object: bool, _count: u32) -> Result<(), Halt> {
        if role_of(tag) != Role::Schema {
            return Ok(());
        }
        let Some(f) = self.frames.pop() else {
            return Ok(());
        };
        if f.type_object && !(f.additional_false && !f.bad && f.properties == f.required) {
            return Err(Halt);
        }
        self.names.truncate(f.mark as usize);
        Ok(())
    }

    #[inline(always)]
    fn key(&mut self, parent: u32, a: usize, b: usize, escaped: bool) -> Result<(), Halt> {
        match role_of(parent) {
            Role::Schema => {
                if escaped {
                    return Err(Halt);
                }
                let keyword = Keyword::of(&self.b[a..b]).ok_or(Halt)?;
                let f = &mut self.frames[frame_of(parent)];
                let bit = keyword.seen_bit();
                if f.seen & bit != 0 {
                    return Err(Halt);
                }
                f.seen |= bit;
                f.pending = keyword;
            }
            Role::Properties => {
                if escaped {
                    return Err(Halt);
                }
                self.name(frame_of(parent), a, b, true);
            }
            _ => {}
        }
        Ok(())
    }

    #[inline(always)]
    fn scalar(
        &mut self,
        parent: u32,
        kind: Kind,
        a: usize,
        b: usize,
        escaped: bool,
    ) -> Result<(), Halt> {
        if parent == NO_PARENT {
            return Ok(());
        }
        let frame = frame_of(parent);
        match role_of(parent) {
            Role::Schema => {
                let f = &mut self.frames[frame];
                match f.pending {
                    Keyword::Type => {
                        if escaped {
                            return Err(Halt);
                        }
                        f.type_object = kind == Kind::String && &self.b[a..b] == b"object";
                    }
                    Keyword::AdditionalProperties => f.additional_false = kind == Kind::False,
                    Keyword::Properties | Keyword::Required => f.bad |= kind != Kind::Null,
                    _ => {}
                }
            }
            Role::Required => {
                if kind != Kind::String {
                    self.frames[frame].bad = true;
                } else if escaped {
                    return Err(Halt);
                } else {
                    self.name(frame, a, b, false);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "strict_scan_tests.rs"]
mod tests;
