/**
 * Moved (issue 13, one reader of deployment files): `readFollowedDeployment` and `FollowedDeployment` are in
 * src/chain/deployment.ts. This file only serves the importers not changed yet (indexer.ts, indexer.test.ts,
 * scripts/bench/indexer.ts): delete it with them.
 */
export { readFollowedDeployment as readDeployment, type FollowedDeployment } from "../chain/deployment";
