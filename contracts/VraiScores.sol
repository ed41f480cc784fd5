// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {IAnchorRegistry} from "./interfaces/IAnchorRegistry.sol";

/**
 * @title VraiScores
 * @notice Checks a daily Vrai Score on chain: its leaf, its Merkle proof, and that the proof's root is anchored in
 * the {IAnchorRegistry} as a day of daily scores of leaf version 2 (kind `bytes32("vrai-score-day-v2")`).
 *
 * After the daily recompute of day D (METHOD V9), the Vrai service makes every daily score of D a leaf of one
 * OpenZeppelin `StandardMerkleTree` and anchors its root with `anchorRoot(root, leafCount, SCORE_DAY_V2_KIND)`.
 * A leaf is `keccak256(bytes.concat(keccak256(abi.encode(...))))` of the fields of {Score}, in their order. The
 * API's `GET /v1/agents/{id}/score/proof` (and the SDK's `getScoreProof`) gives a score's fields, proof and root
 * as the arguments of {verify}.
 *
 * What a contract learns: the score's total and components (METHOD V5-V8), its state, the day it was computed at
 * (00:00 UTC), the ERC-8004 identity the agent had proven then, and when the root was anchored. What it still
 * decides: how recent, how high, and who may use it (see `examples/VraiGate.sol`).
 */
library VraiScores {
    /// @notice The anchor kind of a day of version-2 leaves: the ASCII bytes padded with zeros on the right.
    bytes32 internal constant SCORE_DAY_V2_KIND = "vrai-score-day-v2";

    /// @notice {Score.state} of a provisional score (METHOD V8).
    uint8 internal constant PROVISIONAL = 0;

    /// @notice {Score.state} of an established score (METHOD V8).
    uint8 internal constant ESTABLISHED = 1;

    /// @notice A component of {Score} that is not active in the score's method version: it counts for nothing.
    int16 internal constant NOT_ACTIVE = -1;

    /**
     * @notice The values a version-2 leaf binds, in `abi.encode` order: the StandardMerkleTree leaf types are
     * `["string", "uint32", "bytes32", "bytes32", "uint16", "int16", "int16", "int16", "uint8", "uint256",
     * "address", "uint256"]`.
     */
    struct Score {
        /// The Vrai agent id, e.g. `agt_3f9c0d1e2b4a5968`.
        string agent;
        /// The score's UTC day, in days since 1970-01-01: a daily score is computed at that day's 00:00:00 (V1).
        uint32 day;
        /// The method version, as ASCII padded with zeros on the right, e.g. `bytes32("0.2")`.
        bytes32 method;
        /// The SHA-256 of the score's canonical inputs document (V9), which anyone can fetch and recompute.
        bytes32 inputsSha256;
        /// Identity + Reliability + Integrity, active components only (V8).
        uint16 total;
        /// Identity (V6), or {NOT_ACTIVE}.
        int16 identity;
        /// Reliability (V5), or {NOT_ACTIVE}.
        int16 reliability;
        /// Integrity (V7), or {NOT_ACTIVE}.
        int16 integrity;
        /// {PROVISIONAL} or {ESTABLISHED} (V8).
        uint8 state;
        /// The chain of the ERC-8004 identity the agent held an active proof of at the score's time; 0 if none.
        uint256 erc8004ChainId;
        /// That identity's registry; `address(0)` if none.
        address erc8004Registry;
        /// That identity's token id (its ERC-8004 agent id); 0 if none.
        uint256 erc8004TokenId;
    }

    /// @notice `proof` does not lead from the leaf of the given values to `root`.
    error VraiScoresInvalidProof(bytes32 root, bytes32 leaf);

    /// @notice `root` has no anchor in the registry.
    error VraiScoresRootNotAnchored(bytes32 root);

    /// @notice `root` is anchored, but not as a root of kind {SCORE_DAY_V2_KIND}.
    error VraiScoresRootOfAnotherKind(bytes32 root);

    /**
     * @notice The StandardMerkleTree leaf of `score`: `keccak256(bytes.concat(keccak256(abi.encode(fields))))`.
     * @param score The leaf's values.
     * @return The leaf hash.
     */
    function leafHash(Score calldata score) internal pure returns (bytes32) {
        return keccak256(bytes.concat(_fieldsHash(score)));
    }

    /**
     * @notice Checks that `score` is a leaf under `root` and that `root` is anchored in `registry` as a day of
     * version-2 daily scores, and returns when the root was anchored. Once it returns, `score`'s values are proven:
     * the caller reads them where they are, in its calldata (`score.total`, `score.state`, ...), without a copy.
     * "Anchored within the last 48 hours" is then `block.timestamp - anchoredAt <= 48 hours`.
     * @dev Reads one storage slot of the registry when the Vrai service anchored the root; two when it was anchored
     * by the verifier role (an account holding both roles records that one).
     *
     * Requirements:
     * - `proof` leads from `leafHash(score)` to `root`;
     * - `root` was anchored by `anchorRoot` with kind {SCORE_DAY_V2_KIND}.
     *
     * @param registry The AnchorRegistry holding Vrai's anchors.
     * @param score The leaf's values (the API's `leafFields`).
     * @param proof The sibling hashes from the leaf up to the root.
     * @param root The day's root.
     * @return anchoredAt The block timestamp of the root's anchor.
     */
    function verify(
        IAnchorRegistry registry,
        Score calldata score,
        bytes32[] calldata proof,
        bytes32 root
    ) internal view returns (uint48 anchoredAt) {
        bytes32 leaf = leafHash(score);
        if (!MerkleProof.verifyCalldata(proof, root, leaf)) revert VraiScoresInvalidProof(root, leaf);
        anchoredAt = registry.rootAnchoredAt(root, SCORE_DAY_V2_KIND);
        if (anchoredAt == 0) {
            if (registry.isAnchored(root)) revert VraiScoresRootOfAnotherKind(root);
            revert VraiScoresRootNotAnchored(root);
        }
    }

    /// @dev `keccak256(abi.encode(...))` of the fields in their order: the tree's inner leaf hash, over the struct's own
    /// calldata. That is its ABI encoding: twelve head words, the first the agent's offset from the struct (0x180),
    /// then the agent's length and bytes, padded with zeros to a word. As the tree's leaves are encoded, it is exactly
    /// `abi.encode` of the fields; any other encoding of the same values (another offset, dirty padding or high bits)
    /// hashes to what no leaf is, and the proof fails. Encoding the fields again in memory costs more, and as twelve
    /// arguments is too deep a stack for the legacy code generator (a contract importing this should not need viaIR).
    function _fieldsHash(Score calldata score) private pure returns (bytes32 hash) {
        // Read through the decoder, which checks that the agent's offset and length stay within the calldata.
        string calldata agent = score.agent;
        assembly ("memory-safe") {
            let size := sub(add(agent.offset, and(add(agent.length, 31), not(31))), score)
            let ptr := mload(0x40)
            calldatacopy(ptr, score, size)
            hash := keccak256(ptr, size)
        }
    }
}
