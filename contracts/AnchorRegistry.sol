// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {IAnchorRegistry} from "./interfaces/IAnchorRegistry.sol";

/**
 * @title AnchorRegistry
 * @notice Write-once anchors of digests and batch Merkle roots, recording which role anchored each one.
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

    mapping(bytes32 digest => Anchor) private _anchors;
    mapping(address account => uint8 roleBits) private _anchoringRoles;

    /// @param admin The account granted `DEFAULT_ADMIN_ROLE`, which grants and revokes the other roles.
    constructor(address admin) {
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
    }

    /// @inheritdoc IAnchorRegistry
    function anchor(bytes32 digest, bytes32 kind) external {
        AnchorRole role = _callerRole();
        _record(digest, role, false);
        emit Anchored(digest, kind, role);
    }

    /// @inheritdoc IAnchorRegistry
    function anchorRoot(bytes32 root, uint64 leafCount, bytes32 kind) external {
        AnchorRole role = _callerRole();
        if (leafCount == 0) revert AnchorRegistryEmptyBatch(root);
        _record(root, role, true);
        emit RootAnchored(root, kind, leafCount, role);
    }

    /// @inheritdoc IAnchorRegistry
    function anchorOf(bytes32 digest) external view returns (Anchor memory) {
        return _anchors[digest];
    }

    /// @inheritdoc IAnchorRegistry
    function isAnchored(bytes32 digest) external view returns (bool) {
        return _anchors[digest].submitter != address(0);
    }

    /// @inheritdoc IAnchorRegistry
    function isVerified(bytes32 digest) external view returns (bool) {
        Anchor storage stored = _anchors[digest];
        return stored.submitter != address(0) && stored.role == AnchorRole.VERIFIER;
    }

    /// @inheritdoc IAnchorRegistry
    function verify(bytes32 root, bytes32 leaf, bytes32[] calldata proof) external view returns (bool) {
        return _anchors[root].isRoot && MerkleProof.verifyCalldata(proof, root, leaf);
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

    /// @dev The block timestamp; a test subclass may override it.
    function _now() internal view virtual returns (uint48) {
        // Block timestamps fit in 48 bits until the year 8,921,556.
        return uint48(block.timestamp);
    }

    /// @dev The role to record for the caller: VERIFIER if it holds the verifier role. Reverts if it holds neither.
    function _callerRole() private view returns (AnchorRole) {
        uint8 roleBits = _anchoringRoles[msg.sender];
        if (roleBits == 0) revert AnchorRegistryUnauthorizedAnchorer(msg.sender);
        return roleBits & _VERIFIER_BIT != 0 ? AnchorRole.VERIFIER : AnchorRole.ANCHORER;
    }

    /// @dev Stores the anchor of `digest`, once. Field by field: the optimizer then writes the slot without
    /// first re-reading it, which a whole-struct assignment does (about 200 gas).
    function _record(bytes32 digest, AnchorRole role, bool isRoot) private {
        if (digest == bytes32(0)) revert AnchorRegistryZeroDigest();
        if (_anchors[digest].submitter != address(0)) revert AnchorRegistryAlreadyAnchored(digest);
        Anchor storage stored = _anchors[digest];
        stored.anchoredAt = _now();
        stored.submitter = msg.sender;
        stored.role = role;
        stored.isRoot = isRoot;
    }

    function _anchoringBit(bytes32 role) private pure returns (uint8) {
        if (role == ANCHORER_ROLE) return _ANCHORER_BIT;
        if (role == VERIFIER_ROLE) return _VERIFIER_BIT;
        return 0;
    }
}
