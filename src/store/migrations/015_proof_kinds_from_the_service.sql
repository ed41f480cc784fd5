-- The proof kinds are the service's table (src/service/proofs/kinds, issue #25): a kind is added there
-- and in the method version that counts it, and the database stores the proofs the service verified
-- without a list of its own to keep in step.
ALTER TABLE proofs DROP CONSTRAINT IF EXISTS proofs_kind_check;
