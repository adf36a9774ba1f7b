//! The OpenAI Responses wire family (in progress).
