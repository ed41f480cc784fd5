// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/**
 * @title IAnchorRegistry
 * @notice Write-once timestamps for digests and for Merkle roots of batches (one transaction anchors a
 * whole day of scores). An anchor is never changed or removed.
 *
 * Anchoring is open to holders of the anchorer role (the Vrai service) and of the verifier role. A digest
 * has one anchor per role, each written once: the first anchor by an account holding the anchorer role (and
 * not the verifier role), and the first by an account holding the verifier role, the verifier's attestation.
 * Neither blocks the other, in either order, so an anchorer that anchors a digest first cannot keep a verifier
 * from attesting it: a proof record is *verified* (METHOD A6) exactly when its `traceRoot` has an anchor of
 * {AnchorRole.VERIFIER}, whenever and in whatever order relative to other anchors it was made.
 *
 * Storage: one slot per anchor ({Anchor}). The anchor's `kind` is kept there as a 4-byte tag ({kindTagOf}), so a
 * contract can check what a root was anchored as ({rootAnchoredAt}) with one storage read; the whole `kind` and a
 * root's `leafCount` do not fit in that slot and are carried only by the {Anchored} and {RootAnchored} events.
 */
interface IAnchorRegistry {
    /// @notice The role its submitter held when a digest was anchored; a digest has at most one anchor of each.
    enum AnchorRole {
        /// Anchored by an account holding the anchorer role and not the verifier role.
        ANCHORER,
        /// Anchored by an account holding the verifier role (METHOD A6: "verified").
        VERIFIER
    }

    /// @notice What is stored for one role's anchor of a digest or root, packed in one storage slot.
    struct Anchor {
        /// Block timestamp of the anchoring transaction; 0 if the digest has no anchor of this role.
        uint48 anchoredAt;
        /// The account that anchored it; `address(0)` if the digest has no anchor of this role.
        address submitter;
        /// True when anchored by {anchorRoot} as the Merkle root of a batch, false when anchored by {anchor}.
        bool isRoot;
        /// {kindTagOf} the `kind` it was anchored with; zero if the digest has no anchor of this role.
        bytes4 kindTag;
    }

    /// @notice The digest already has an anchor of `role`; each role's anchor is write-once.
    error AnchorRegistryAlreadyAnchored(bytes32 digest, AnchorRole role);

    /// @notice The caller holds neither the anchorer role nor the verifier role.
    error AnchorRegistryUnauthorizedAnchorer(address account);

    /// @notice The zero digest cannot be anchored (it is indistinguishable from "nothing").
    error AnchorRegistryZeroDigest();

    /// @notice A batch root must cover at least one leaf.
    error AnchorRegistryEmptyBatch(bytes32 root);

    /**
     * @notice Emitted when `digest` is anchored by {anchor}.
     * @dev The submitter is stored (see {anchorOf}), not emitted: leaving it out of the log keeps {anchorRoot}
     * within its gas budget, and the role it held, which METHOD A6 needs, is here.
     * @param digest The anchored digest.
     * @param kind What the digest is (application-defined, e.g. `bytes32("vrai.score-inputs")`); stored only here.
     * @param role The role the submitter held: which of the digest's anchors this is.
     */
    event Anchored(bytes32 indexed digest, bytes32 kind, AnchorRole role);

    /**
     * @notice Emitted when the Merkle root of a batch is anchored by {anchorRoot}.
     * @dev The submitter is stored (see {anchorOf}), not emitted, as for {Anchored}.
     * @param root The anchored Merkle root.
     * @param kind What the leaves are; stored only here.
     * @param leafCount The number of leaves in the batch; stored only here.
     * @param role The role the submitter held: which of the root's anchors this is.
     */
    event RootAnchored(bytes32 indexed root, bytes32 kind, uint64 leafCount, AnchorRole role);

    /**
     * @notice Role allowed to anchor: `keccak256("ANCHORER_ROLE")`, held by the Vrai service.
     * @return The role id.
     */
    function ANCHORER_ROLE() external view returns (bytes32);

    /**
     * @notice Role allowed to anchor as a verifier (METHOD A6): `keccak256("VERIFIER_ROLE")`.
     * @return The role id.
     */
    function VERIFIER_ROLE() external view returns (bytes32);

    /**
     * @notice Anchors `digest` with the current block timestamp and the caller, as the anchor of the role the
     * caller holds: {AnchorRole.VERIFIER} if it holds the verifier role (also when it holds both), else
     * {AnchorRole.ANCHORER}.
     * @dev Emits {Anchored}.
     *
     * Requirements:
     * - the caller holds the anchorer role or the verifier role;
     * - `digest` is not zero;
     * - `digest` has no anchor of the caller's role yet (by {anchor} or {anchorRoot}); an anchor of the other
     *   role does not matter.
     *
     * @param digest The digest to anchor.
     * @param kind What the digest is; emitted, and stored as its tag ({kindTagOf}).
     */
    function anchor(bytes32 digest, bytes32 kind) external;

    /**
     * @notice Anchors the Merkle root of a batch of `leafCount` leaves, built as an OpenZeppelin
     * `StandardMerkleTree` (see {verify}), as the anchor of the caller's role (as {anchor} does).
     * @dev Emits {RootAnchored}. Costs the same whatever `leafCount` is.
     *
     * Requirements:
     * - the caller holds the anchorer role or the verifier role;
     * - `root` is not zero and `leafCount` is not zero;
     * - `root` has no anchor of the caller's role yet (by {anchor} or {anchorRoot}); an anchor of the other
     *   role does not matter.
     *
     * @param root The Merkle root.
     * @param leafCount The number of leaves; emitted, not stored.
     * @param kind What the leaves are (for Vrai's days of daily scores `bytes32("vrai-score-day")`, and
     * `bytes32("vrai-score-day-v2")` for leaves of version 2, see `VraiScores`); emitted, and stored as its tag.
     */
    function anchorRoot(bytes32 root, uint64 leafCount, bytes32 kind) external;

    /**
     * @notice Reads the anchor of `digest` made by an account holding `role`.
     * @param digest A digest or root.
     * @param role Which of the digest's two anchors to read.
     * @return The stored anchor; all fields zero if `digest` has no anchor of `role`.
     */
    function anchorOf(bytes32 digest, AnchorRole role) external view returns (Anchor memory);

    /**
     * @notice When `root` was anchored by {anchorRoot} with `kind`, by either role: the anchorer's anchor if it is
     * one, else the verifier's. One storage read when the anchorer's anchor is the one: what a contract checking a
     * proof against an anchored day of scores pays (`VraiScores.verify`).
     * @param root A Merkle root.
     * @param kind The kind the root must have been anchored with (compared by {kindTagOf}).
     * @return anchoredAt The block timestamp of that anchor; 0 if `root` has no root anchor of `kind` (none at all,
     * one of another kind, or an anchor by {anchor} as a single digest).
     */
    function rootAnchoredAt(bytes32 root, bytes32 kind) external view returns (uint48 anchoredAt);

    /**
     * @notice The tag an anchor keeps of its kind: the first 4 bytes of `keccak256(abi.encode(kind))`.
     * @param kind An anchor's kind.
     * @return The tag stored in {Anchor.kindTag}.
     */
    function kindTagOf(bytes32 kind) external pure returns (bytes4);

    /**
     * @notice Tells whether `digest` is anchored, by {anchor} or {anchorRoot}, by either role.
     * @param digest A digest or root.
     * @return True if `digest` has an anchor of either role.
     */
    function isAnchored(bytes32 digest) external view returns (bool);

    /**
     * @notice Tells whether `digest` is anchored by an account holding the verifier role (METHOD A6), whoever
     * anchored it before or after.
     * @param digest A digest or root.
     * @return True if `digest` has an anchor of {AnchorRole.VERIFIER}.
     */
    function isVerified(bytes32 digest) external view returns (bool);

    /**
     * @notice Verifies that `leaf` belongs to the batch whose Merkle root `root` was anchored by {anchorRoot}.
     * @dev Compatible with `@openzeppelin/merkle-tree`'s `StandardMerkleTree`: `leaf` is the tree's leaf hash
     * `keccak256(bytes.concat(keccak256(abi.encode(values))))` (`tree.leafHash(values)`), and `proof` is
     * `tree.getProof(...)`. For Vrai score batches of kind `vrai-score-day` the values are `[agent, day
     * (YYYY-MM-DD), method, inputs sha256]` of types `["string", "string", "string", "bytes32"]`; those of kind
     * `vrai-score-day-v2` are `VraiScores.Score`'s fields, in its order. This does not check the root's kind: a
     * contract checking a score uses `VraiScores.verify`, which does.
     * @param root A Merkle root.
     * @param leaf The leaf hash.
     * @param proof The sibling hashes from the leaf up to the root.
     * @return True only if `root` is anchored as a root by {anchorRoot}, by either role, and `proof` proves
     * `leaf` under it.
     */
    function verify(bytes32 root, bytes32 leaf, bytes32[] calldata proof) external view returns (bool);
}
