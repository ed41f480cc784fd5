-- Each day's Merkle tree stored once (issue #18, "Storage and a million agents"), replacing the proof
-- each daily score kept (score_proofs: its leaf and about 20 sibling hashes, ~730 bytes a score a day).
--
-- A day's tree of n leaves (src/chain/score-tree.ts: OpenZeppelin StandardMerkleTree, leaves sorted by
-- hash) is its node array in the package's heap layout: 2n-1 nodes of 32 bytes, node i's children at
-- 2i+1 and 2i+2, sorted leaf k at index 2n-2-k (so leaf hashes fall as the index rises from n-1 to
-- 2n-2). It is stored as chunks of C consecutive nodes: chunk c holds nodes c*C to c*C+C-1 (the last
-- one fewer), so about 64 bytes a leaf. C is 2,048 (64 KiB a chunk; src/store/anchors.ts
-- TREE_CHUNK_NODES says why) and is read back from the length of chunk 0, so a day keeps the size it
-- was built with. Nothing derivable is stored: a proof is derived on demand from the score's own
-- values (agent, day, method, sha256), its day's leaf count (score_anchors) and these chunks.
--
-- The fence: each chunk holding leaves keeps its smallest leaf hash (its last node), indexed, so a
-- proof finds its leaf's chunk without reading the tree (the lowest chunk whose min_leaf is at most
-- the leaf's hash), searches that chunk in the database (score_tree_leaf_index: the chunk's 64 KiB
-- never leave it), then reads only its siblings' 32 bytes: three queries.
-- Chunks are written once, in the transaction that inserts their day's score_anchors row, and never
-- changed; no foreign key, as for score_proofs before.
CREATE TABLE score_tree_chunks (
  day       text NOT NULL,
  chunk     integer NOT NULL CHECK (chunk >= 0),
  -- The chunk's nodes concatenated, 32 bytes each.
  nodes     bytea NOT NULL,
  -- The chunk's smallest leaf hash; NULL when it holds only parents.
  min_leaf  bytea,
  PRIMARY KEY (day, chunk)
);
-- Out of line and uncompressed: hashes do not compress, and a proof's substring() of a sibling then
-- reads one TOAST page, not the whole chunk.
ALTER TABLE score_tree_chunks ALTER COLUMN nodes SET STORAGE EXTERNAL;
CREATE INDEX score_tree_chunks_fence_idx ON score_tree_chunks (day, min_leaf DESC, chunk) WHERE min_leaf IS NOT NULL;

-- The heap index of `leaf` in chunk `chunk` (its `nodes`) of a tree of `leaf_count` leaves in chunks of
-- `chunk_nodes`, or NULL when the chunk does not hold it: a binary search over the chunk's leaves
-- (indices max(chunk*C, n-1) to min(chunk*C+C-1, 2n-2)), whose hashes fall as the index rises.
CREATE FUNCTION score_tree_leaf_index(nodes bytea, chunk integer, chunk_nodes integer, leaf_count integer, leaf bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  base integer := chunk * chunk_nodes;
  lo integer := greatest(chunk * chunk_nodes, leaf_count - 1);
  hi integer := least(chunk * chunk_nodes + chunk_nodes - 1, 2 * leaf_count - 2);
  mid integer;
  node bytea;
BEGIN
  WHILE lo <= hi LOOP
    mid := (lo + hi) / 2;
    node := substring(nodes FROM (mid - base) * 32 + 1 FOR 32);
    IF node = leaf THEN
      RETURN mid;
    ELSIF node > leaf THEN
      lo := mid + 1;
    ELSE
      hi := mid - 1;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

-- The days already stored as proofs become chunks, in SQL. Every node but the root is in the proof of
-- some leaf: the t-th element of the proof of the leaf at index j is the sibling of j's ancestor t
-- levels up, at ((j+1) >> t) XOR 1, minus 1 (1-based heap arithmetic); the root is score_anchors'.
-- A one-off of O(leaves × depth) rows per day, sorted by PostgreSQL.
INSERT INTO score_tree_chunks (day, chunk, nodes, min_leaf)
WITH ranked AS (
  SELECT p.day, p.leaf, p.proof, count(*) OVER (PARTITION BY p.day) AS n,
    2 * count(*) OVER (PARTITION BY p.day) - 1 - row_number() OVER (PARTITION BY p.day ORDER BY p.leaf) AS idx
  FROM score_proofs p
), nodes AS (
  SELECT day, n, idx, leaf AS node FROM ranked
  UNION ALL
  SELECT r.day, r.n, (((r.idx + 1) >> t) # 1) - 1, substring(r.proof FROM t * 32 + 1 FOR 32)
  FROM ranked r CROSS JOIN LATERAL generate_series(0, octet_length(r.proof) / 32 - 1) AS t
  UNION ALL
  SELECT a.day, a.leaf_count, 0, decode(substr(a.root, 3), 'hex') FROM score_anchors a WHERE EXISTS (SELECT 1 FROM score_proofs p WHERE p.day = a.day)
), distinct_nodes AS (
  SELECT DISTINCT ON (day, idx) day, n, idx, node FROM nodes ORDER BY day, idx
)
SELECT day, (idx / 2048)::integer, string_agg(node, ''::bytea ORDER BY idx),
  CASE WHEN max(idx) >= n - 1 THEN (array_agg(node ORDER BY idx DESC))[1] END
FROM distinct_nodes GROUP BY day, idx / 2048, n;

-- Every converted day has all its 2n-1 nodes, or the migration stops (and rolls back) here.
DO $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM score_anchors a LEFT JOIN (SELECT day, sum(octet_length(nodes)) AS bytes, count(*) AS chunks, max(chunk) AS last FROM score_tree_chunks GROUP BY day) c USING (day)
    WHERE c.bytes IS DISTINCT FROM 32 * (2 * a.leaf_count::bigint - 1) OR c.chunks <> c.last + 1
  ) THEN
    RAISE EXCEPTION 'migration 011: a day of score_proofs does not convert to a whole tree';
  END IF;
END
$$;

DROP TABLE score_proofs;
