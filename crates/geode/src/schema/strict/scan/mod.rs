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

use crate::schema::json_read::{Kind, MAX_TAPE_DEPTH, Sink, Stop, TapeError, read, same};
use arrayvec::ArrayVec;
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
        frames: ArrayVec::new(),
        names: SmallVec::new(),
    };
    match read(text, &mut sink) {
        Ok(()) => Ok(Certified::Compatible),
        Err(Stop::Halted(Handed)) => Ok(Certified::Unsettled),
        Err(Stop::Invalid(e)) => Err(e),
    }
}

/// The certifier's reason to stop: the schema is handed back to the walk.
#[derive(Debug)]
struct Handed;

/// What a container is to the rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The document (the root value's parent): its value is a schema.
    Document,
    /// Not read by the rules (descriptions, enums, defaults, `$defs`, ...).
    Data,
    /// A schema object.
    Schema,
    /// A schema's `properties`: names, each with a schema.
    Properties,
    /// A schema's `required`: names.
    Required,
    /// A schema array (`anyOf`, `oneOf`, `allOf`, `prefixItems`).
    Schemas,
}

/// A container's tag: its role, and the schema frame it belongs to.
#[derive(Clone, Copy)]
struct Place {
    role: Role,
    frame: u32,
}

/// The keywords the rules read, as the key before a schema object's next value. The four rule
/// keywords, which must not repeat, are one bit each in the low four ([`Keyword::seen_bit`]).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Keyword {
    Type = 1,
    AdditionalProperties = 2,
    Properties = 4,
    Required = 8,
    /// Any other key.
    Other = 16,
    /// `items`, `not` (an object value is a schema).
    Subschema = 32,
    /// `anyOf`, `oneOf`, `allOf`, `prefixItems` (an array value holds schemas).
    Subschemas = 64,
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
    #[inline(always)]
    fn seen_bit(self) -> u8 {
        self as u8 & 0x0F
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
    frames: ArrayVec<Frame, MAX_TAPE_DEPTH>,
    /// Byte spans of the first name list of each open schema object.
    names: SmallVec<[(u32, u32); 32]>,
}

fn tag(frame: usize, role: Role) -> Place {
    Place {
        role,
        frame: frame as u32,
    }
}

impl Certifier<'_> {
    /// The role of a value whose container is tagged `parent` (a schema's the keyword before it
    /// decides), and the schema frame it belongs to.
    #[inline(always)]
    fn role_in(&self, parent: Place) -> (Role, usize) {
        let frame = parent.frame as usize;
        let role = match parent.role {
            Role::Document => Role::Schema,
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
            !same(&text[x as usize..y as usize], &text[a..b])
        } {
            f.bad = true;
        }
    }
}

impl Sink for Certifier<'_> {
    type Tag = Place;
    type Halt = Handed;
    const DOCUMENT: Place = Place {
        role: Role::Document,
        frame: 0,
    };

    #[inline(always)]
    fn open(&mut self, parent: Place, object: bool) -> Result<Place, Handed> {
        let (role, frame) = self.role_in(parent);
        Ok(match (role, object) {
            (Role::Schema, true) => {
                // A frame per open container at most, so the depth limit leaves room.
                self.frames
                    .try_push(Frame {
                        pending: Keyword::Other,
                        seen: 0,
                        type_object: false,
                        additional_false: false,
                        bad: false,
                        mark: self.names.len() as u32,
                        properties: 0,
                        required: 0,
                    })
                    .map_err(|_| Handed)?;
                tag(self.frames.len() - 1, Role::Schema)
            }
            (Role::Properties, true) => tag(frame, Role::Properties),
            (Role::Required, false) if parent.role == Role::Schema => tag(frame, Role::Required),
            (Role::Properties | Role::Required, _) => {
                self.frames[frame].bad = true;
                tag(frame, Role::Data)
            }
            (Role::Schemas, false) => tag(frame, Role::Schemas),
            _ => tag(frame, Role::Data),
        })
    }

    #[inline(always)]
    fn close(&mut self, tag: Place, _object: bool, _count: u32) -> Result<(), Handed> {
        if tag.role != Role::Schema {
            return Ok(());
        }
        let Some(f) = self.frames.pop() else {
            return Ok(());
        };
        if f.type_object && !(f.additional_false && !f.bad && f.properties == f.required) {
            return Err(Handed);
        }
        self.names.truncate(f.mark as usize);
        Ok(())
    }

    #[inline(always)]
    fn key(&mut self, parent: Place, a: usize, b: usize, escaped: bool) -> Result<(), Handed> {
        match parent.role {
            Role::Schema => {
                if escaped {
                    return Err(Handed);
                }
                let keyword = Keyword::of(&self.b[a..b]).ok_or(Handed)?;
                let f = &mut self.frames[parent.frame as usize];
                let bit = keyword.seen_bit();
                if f.seen & bit != 0 {
                    return Err(Handed);
                }
                f.seen |= bit;
                f.pending = keyword;
            }
            Role::Properties => {
                if escaped {
                    return Err(Handed);
                }
                self.name(parent.frame as usize, a, b, true);
            }
            _ => {}
        }
        Ok(())
    }

    #[inline(always)]
    fn scalar(
        &mut self,
        parent: Place,
        kind: Kind,
        a: usize,
        b: usize,
        escaped: bool,
    ) -> Result<(), Handed> {
        let frame = parent.frame as usize;
        match parent.role {
            Role::Schema => {
                let f = &mut self.frames[frame];
                match f.pending {
                    Keyword::Type => {
                        if escaped {
                            return Err(Handed);
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
                    return Err(Handed);
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
mod tests;
