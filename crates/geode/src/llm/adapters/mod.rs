//! The HTTP adapters: endpoint, auth and wire family per provider.
