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
#[derive(Clone, Copy)]
struct Frame {
    /// The keyword before the value being read.
    pending: Keyword,
    /// Rule keywords seen so far ([`Keyword::seen_bit`]).
    seen: u8,
    type_object: bool,
    additional_false: bool,
    /// `properties` is neither an object nor null.
    properties_bad: bool,
    /// `required` is neither an array of strings nor null.
    required_bad: bool,
    /// Where this frame's names start in `names` (dropped at its close).
    mark: u32,
    /// `properties` names: `names[properties.0..][..properties.1]`.
    properties: (u32, u32),
    /// `required` names, likewise.
    required: (u32, u32),
}

/// The [`Sink`] that certifies.
struct Certifier<'s> {
    b: &'s [u8],
    /// The open schema objects, innermost last.
    frames: SmallVec<[Frame; 8]>,
    /// Byte spans of property names and required names of the open schema objects.
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

    /// The rules of a `type:"object"` schema: closed, and its property names are its required
    /// names in order.
    fn object_rules_hold(&self, f: &Frame) -> bool {
        f.additional_false
            && !f.properties_bad
            && !f.required_bad
            && self.names_equal(f.properties, f.required)
    }

    fn names_equal(&self, a: (u32, u32), b: (u32, u32)) -> bool {
        let span = |(from, to): (u32, u32)| &self.b[from as usize..to as usize];
        let (a, b) = (
            &self.names[a.0 as usize..][..a.1 as usize],
            &self.names[b.0 as usize..][..b.1 as usize],
        );
        a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| span(x) == span(y))
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
                    properties_bad: false,
                    required_bad: false,
                    mark: self.names.len() as u32,
                    properties: (0, 0),
                    required: (0, 0),
                });
                tag(self.frames.len() - 1, Role::Schema)
            }
            (Role::Properties, true) => {
                let start = self.names.len() as u32;
                self.frames[frame].properties = (start, 0);
                tag(frame, Role::Properties)
            }
            (Role::Properties, false) => {
                self.frames[frame].properties_bad = true;
                tag(frame, Role::Data)
            }
            (Role::Required, false) if role_of(parent) == Role::Schema => {
                let start = self.names.len() as u32;
                self.frames[frame].required = (start, 0);
                tag(frame, Role::Required)
            }
            (Role::Required, _) => {
                self.frames[frame].required_bad = true;
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
        if f.type_object && !self.object_rules_hold(&f) {
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
                self.names.push((a as u32, b as u32));
                self.frames[frame_of(parent)].properties.1 += 1;
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
                    Keyword::Properties => f.properties_bad = kind != Kind::Null,
                    Keyword::Required => f.required_bad = kind != Kind::Null,
                    _ => {}
                }
            }
            Role::Required => {
                if kind != Kind::String {
                    self.frames[frame].required_bad = true;
                } else if escaped {
                    return Err(Halt);
                } else {
                    self.names.push((a as u32, b as u32));
                    self.frames[frame].required.1 += 1;
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
