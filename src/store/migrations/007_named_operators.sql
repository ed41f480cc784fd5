-- V7: named operators. Each has its own token (only its SHA-256 is kept) until it is revoked; a
-- name is never given to another operator, so the audit log's actors stay unambiguous.
-- OPERATOR_TOKEN, the bootstrap administrator, is configuration and has no row here.
CREATE TABLE operators (
  name        text PRIMARY KEY,
  token_hash  text NOT NULL,
  created_at  bigint NOT NULL,
  revoked_at  bigint
);

-- Who added and revoked each penalty, and who declared and closed each outage window. Rows
-- written before operators had names were written by the one operator, "operator".
ALTER TABLE penalties ADD COLUMN added_by text NOT NULL DEFAULT 'operator';
ALTER TABLE penalties ALTER COLUMN added_by DROP DEFAULT;
ALTER TABLE penalties ADD COLUMN revoked_by text;
UPDATE penalties SET revoked_by = 'operator' WHERE revoked_at IS NOT NULL;

ALTER TABLE outages ADD COLUMN declared_by text NOT NULL DEFAULT 'operator';
ALTER TABLE outages ALTER COLUMN declared_by DROP DEFAULT;
ALTER TABLE outages ADD COLUMN closed_by text;
UPDATE outages SET closed_by = 'operator' WHERE closed_at IS NOT NULL;
