-- The owners' console (issue #29): sign-in sessions, Sign-In with Ethereum nonces, read-only owner tokens
-- and the addresses owners sign in with.

-- A signed-in browser. The cookie holds a 256-bit random secret; only its SHA-256 is kept (`secret_hash`),
-- like every other secret (src/service/secrets.ts). `id` is a public handle, to list and revoke it.
-- A session ends at `expires_at` (the absolute timeout), after `last_seen_at` plus the idle timeout, or
-- when revoked (sign out, sign out everywhere, its read-only token revoked).
CREATE TABLE console_sessions (
  id           text PRIMARY KEY,
  secret_hash  text NOT NULL UNIQUE,
  owner_id     text NOT NULL REFERENCES owners (id),
  -- 'full' may change what the owner has; 'read' (signed in with a read-only token) may only look.
  scope        text NOT NULL CHECK (scope IN ('full', 'read')),
  -- How it signed in: 'siwe:<address>', 'owner-token', or 'read-token:<token id>'.
  login        text NOT NULL,
  user_agent   text,
  created_at   bigint NOT NULL,
  last_seen_at bigint NOT NULL,
  expires_at   bigint NOT NULL,
  revoked_at   bigint
);
CREATE INDEX console_sessions_owner_idx ON console_sessions (owner_id, created_at);
CREATE INDEX console_sessions_expires_idx ON console_sessions (expires_at);

-- A nonce the service gave for one Sign-In with Ethereum message (EIP-4361): used once, before it expires.
CREATE TABLE console_siwe_nonces (
  nonce      text PRIMARY KEY,
  issued_at  bigint NOT NULL,
  expires_at bigint NOT NULL,
  used_at    bigint
);
CREATE INDEX console_siwe_nonces_expires_idx ON console_siwe_nonces (expires_at);

-- Read-only owner tokens: each may read everything its owner may, and change nothing. Kept as the
-- SHA-256 of the token; revoked, never deleted (the list shows when).
CREATE TABLE owner_read_tokens (
  id         text PRIMARY KEY,
  owner_id   text NOT NULL REFERENCES owners (id),
  name       text NOT NULL,
  token_hash text NOT NULL,
  created_at bigint NOT NULL,
  revoked_at bigint
);
CREATE INDEX owner_read_tokens_owner_idx ON owner_read_tokens (owner_id, created_at);

-- The address an owner first signed in with (Sign-In with Ethereum created the owner). An address an owner
-- has proven as its wallet (V6) signs in as that owner whatever this table says.
CREATE TABLE owner_logins (
  address    text PRIMARY KEY,
  owner_id   text NOT NULL REFERENCES owners (id),
  created_at bigint NOT NULL
);
CREATE INDEX owner_logins_owner_idx ON owner_logins (owner_id);
