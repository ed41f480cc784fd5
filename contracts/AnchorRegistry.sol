// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {IAnchorRegistry} from "./interfaces/IAnchorRegistry.sol";

/**
 * @title AnchorRegistry
 * @notice Write-once anchors of digests and batch Merkle roots, one per role for each digest, so that no
 * anchor by one role can keep the other from anchoring (METHOD A6).
 * @dev Roles are OpenZeppelin {AccessControl} roles. Besides AccessControl's own storage, the contract keeps
 * a one-slot-per-account mirror of the two anchoring roles (kept in sync by overriding {_grantRole} and
 * {_revokeRole}, which every grant, revoke and renounce goes through), so that an anchoring call reads one
 * cold slot, not two, to learn both whether the caller may anchor and which role to record.
 */
contract AnchorRegistry is AccessControl, IAnchorRegistry {
    /// @inheritdoc IAnchorRegistry
    bytes32 public constant ANCHORER_ROLE = keccak256("ANCHORER_ROLE");
    /// @inheritdoc IAnchorRegistry
    bytes32 public constant VERIFIER_ROLE = keccak256("VERIFIER_ROLE");

    uint8 private constant _ANCHORER_BIT = 1;
    uint8 private constant _VERIFIER_BIT = 2;

    /// @dev Indexed by `uint8(AnchorRole)`: the two anchors of a digest sit in consecutive slots.
    mapping(bytes32 digest => Anchor[2] byRole) private _anchors;
    mapping(address account => uint8 roleBits) private _anchoringRoles;

    /// @param admin The account granted `DEFAULT_ADMIN_ROLE`, which grants and revokes the other roles.
    constructor(address admin) {
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
    }

    /// @inheritdoc IAnchorRegistry
    function anchor(bytes32 digest, bytes32 kind) external {
        AnchorRole role = _callerRole();
        _record(digest, role, false, kind);
        emit Anchored(digest, kind, role);
    }

    /// @inheritdoc IAnchorRegistry
    function anchorRoot(bytes32 root, uint64 leafCount, bytes32 kind) external {
        AnchorRole role = _callerRole();
        if (leafCount == 0) revert AnchorRegistryEmptyBatch(root);
        _record(root, role, true, kind);
        emit RootAnchored(root, kind, leafCount, role);
    }

    /// @inheritdoc IAnchorRegistry
    function anchorOf(bytes32 digest, AnchorRole role) external view returns (Anchor memory) {
        return _anchors[digest][uint8(role)];
    }

    /// @inheritdoc IAnchorRegistry
    function rootAnchoredAt(bytes32 root, bytes32 kind) external view returns (uint48) {
        bytes4 tag = _kindTag(kind);
        Anchor[2] storage byRole = _anchors[root];
        Anchor memory anchored = byRole[uint8(AnchorRole.ANCHORER)];
        if (anchored.isRoot && anchored.kindTag == tag) return anchored.anchoredAt;
        anchored = byRole[uint8(AnchorRole.VERIFIER)];
        if (anchored.isRoot && anchored.kindTag == tag) return anchored.anchoredAt;
        return 0;
    }

    /// @inheritdoc IAnchorRegistry
    function kindTagOf(bytes32 kind) external pure returns (bytes4) {
        return _kindTag(kind);
    }

    /// @inheritdoc IAnchorRegistry
    function isAnchored(bytes32 digest) external view returns (bool) {
        Anchor[2] storage byRole = _anchors[digest];
        return
            byRole[uint8(AnchorRole.ANCHORER)].submitter != address(0) ||
            byRole[uint8(AnchorRole.VERIFIER)].submitter != address(0);
    }

    /// @inheritdoc IAnchorRegistry
    function isVerified(bytes32 digest) external view returns (bool) {
        return _anchors[digest][uint8(AnchorRole.VERIFIER)].submitter != address(0);
    }

    /// @inheritdoc IAnchorRegistry
    function verify(bytes32 root, bytes32 leaf, bytes32[] calldata proof) external view returns (bool) {
        Anchor[2] storage byRole = _anchors[root];
        return
            (byRole[uint8(AnchorRole.ANCHORER)].isRoot || byRole[uint8(AnchorRole.VERIFIER)].isRoot) &&
            MerkleProof.verifyCalldata(proof, root, leaf);
    }

    /// @dev Keeps the anchoring-role mirror in sync with AccessControl.
    function _grantRole(bytes32 role, address account) internal virtual override returns (bool granted) {
        granted = super._grantRole(role, account);
        if (granted) {
            uint8 bit = _anchoringBit(role);
            if (bit != 0) _anchoringRoles[account] |= bit;
        }
    }

    /// @dev Keeps the anchoring-role mirror in sync with AccessControl.
    function _revokeRole(bytes32 role, address account) internal virtual override returns (bool revoked) {
        revoked = super._revokeRole(role, account);
        if (revoked) {
            uint8 bit = _anchoringBit(role);
            if (bit != 0) _anchoringRoles[account] &= ~bit;
        }
    }

    /// @dev The role to record for the caller: VERIFIER if it holds the verifier role. Reverts if it holds neither.
    function _callerRole() private view returns (AnchorRole) {
        uint8 roleBits = _anchoringRoles[msg.sender];
        if (roleBits == 0) revert AnchorRegistryUnauthorizedAnchorer(msg.sender);
        return roleBits & _VERIFIER_BIT != 0 ? AnchorRole.VERIFIER : AnchorRole.ANCHORER;
    }

    /// @dev Stores the anchor of `digest` for `role`, once; the other role's anchor is neither read nor written.
    /// Field by field: the optimizer then writes the slot without first re-reading it, which a whole-struct
    /// assignment does (about 200 gas).
    function _record(bytes32 digest, AnchorRole role, bool isRoot, bytes32 kind) private {
        if (digest == bytes32(0)) revert AnchorRegistryZeroDigest();
        Anchor storage stored = _anchors[digest][uint8(role)];
        if (stored.submitter != address(0)) revert AnchorRegistryAlreadyAnchored(digest, role);
        // Block timestamps fit in 48 bits until the year 8,921,556.
        stored.anchoredAt = uint48(block.timestamp);
        stored.submitter = msg.sender;
        stored.isRoot = isRoot;
        stored.kindTag = _kindTag(kind);
    }

    /// @dev The tag of `kind` kept in an anchor's slot (see {kindTagOf}).
    function _kindTag(bytes32 kind) private pure returns (bytes4) {
        return bytes4(keccak256(abi.encode(kind)));
    }

    function _anchoringBit(bytes32 role) private pure returns (uint8) {
        if (role == ANCHORER_ROLE) return _ANCHORER_BIT;
        if (role == VERIFIER_ROLE) return _VERIFIER_BIT;
        return 0;
    }
}
