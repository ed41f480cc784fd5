-- ERC-8004 registration files (issue #27): for each erc8004 proof, what its identity's agentURI said when it was last
-- read (src/service/registration-files.ts). Self-declared by the agent: shown apart from what Vrai verified, never
-- read by a score. One row per proof, replaced at each reading: when the proof is made, when the identity registry's
-- URIUpdated names its token, and at its weekly re-check.
CREATE TABLE IF NOT EXISTS erc8004_registration_files (
  proof_id  text PRIMARY KEY REFERENCES proofs (id),
  -- The agentURI read from tokenURI; null when it could not be read.
  uri       text,
  -- read: `file` holds the registration-v1 fields, unknown ones kept; refused: `reason` says why;
  -- unread: not read at all (no agentURI, or ipfs:// without a gateway), `reason` says why.
  status    text NOT NULL CHECK (status IN ('read', 'refused', 'unread')),
  file      jsonb,
  reason    text,
  read_at   bigint NOT NULL,
  CHECK ((status = 'read') = (file IS NOT NULL AND reason IS NULL))
);
