// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {IERC8004IdentityRegistry} from "./interfaces/IERC8004IdentityRegistry.sol";
import {IRegistry} from "./interfaces/IRegistry.sol";

/**
 * @title Registry
 * @notice Proof records of ERC-8004 agents and their Platform Network Score (METHOD part N).
 */
contract Registry is AccessControl, IRegistry {
    /// @inheritdoc IRegistry
    bytes32 public constant PLATFORM_ROLE = keccak256("PLATFORM_ROLE");
    /// @inheritdoc IRegistry
    bytes32 public constant SCORE_TYPE = "platform-network";

    // METHOD part N: scores in tenths, clamped to 0-1000 after each adjustment.
    int256 private constant _MAX_SCORE = 1000;

    IERC8004IdentityRegistry private immutable _identityRegistry;

    mapping(uint256 agentId => NetworkScore) private _scores;
    mapping(bytes32 orderId => Settlement) private _settlements;

    /**
     * @param admin The account granted `DEFAULT_ADMIN_ROLE`, which grants and revokes the platform role.
     * @param identityRegistry_ The ERC-8004 identity registry whose tokens identify agents.
     */
    constructor(address admin, IERC8004IdentityRegistry identityRegistry_) {
        if (address(identityRegistry_) == address(0)) {
            revert RegistryInvalidIdentityRegistry(address(identityRegistry_));
        }
        _identityRegistry = identityRegistry_;
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
    }

    /// @inheritdoc IRegistry
    function identityRegistry() external view returns (IERC8004IdentityRegistry) {
        return _identityRegistry;
    }

    /// @inheritdoc IRegistry
    function submitProof(
        uint256 agentId,
        bool success,
        RiskLevel riskLevel,
        uint32 policyViolations,
        bytes32 traceRoot
    ) external {
        _checkAgentController(agentId);
        emit ProofSubmitted(agentId, msg.sender, traceRoot, success, riskLevel, policyViolations);
    }

    /// @inheritdoc IRegistry
    function settle(
        bytes32 orderId,
        uint256 executorId,
        uint256 requesterId,
        bytes32 intentHash,
        Verdict verdict,
        bytes32 completionProofHash
    ) external onlyRole(PLATFORM_ROLE) {
        bool isValid = intentHash != bytes32(0)
            ? verdict != Verdict.NONE && completionProofHash != bytes32(0)
            : verdict == Verdict.NONE && completionProofHash == bytes32(0);
        if (!isValid) revert RegistryInvalidSettlement(intentHash, verdict, completionProofHash);
        if (_settlements[orderId].settledAt != 0) revert RegistryOrderAlreadySettled(orderId);

        uint64 settledAt = _now();
        _settlements[orderId] = Settlement({settledAt: settledAt, verdict: verdict});
        emit OrderSettled(orderId, executorId, requesterId, intentHash, verdict, completionProofHash);

        (int16 executorDelta, int16 requesterDelta) = _adjustments(verdict);
        _adjust(executorId, orderId, Party.EXECUTOR, executorDelta, true, settledAt);
        _adjust(requesterId, orderId, Party.REQUESTER, requesterDelta, requesterId != executorId, settledAt);
    }

    /// @inheritdoc IRegistry
    function networkScoreOf(
        uint256 agentId
    ) external view returns (uint16 score, uint64 settlements, uint64 lastSettledAt, bytes32 scoreType) {
        NetworkScore memory stored = _scores[agentId];
        return (stored.score, stored.settlements, stored.lastSettledAt, SCORE_TYPE);
    }

    /// @inheritdoc IRegistry
    function settlementOf(bytes32 orderId) external view returns (Settlement memory) {
        return _settlements[orderId];
    }

    /// @dev The block timestamp; a test subclass may override it.
    function _now() internal view virtual returns (uint64) {
        // Block timestamps fit in 64 bits for the next 584 billion years.
        return uint64(block.timestamp);
    }

    /**
     * @dev Reverts unless the caller controls agent `agentId`. Only standard ERC-721 reads and `getAgentWallet`
     * are used, so any ERC-8004 identity registry works. Commonest first: the owner costs one call, the agent
     * wallet two, an operator three, an account approved for this token only four.
     */
    function _checkAgentController(uint256 agentId) private view {
        (bool found, uint256 owner) = _read(IERC8004IdentityRegistry.ownerOf.selector, agentId, 0, false);
        if (!found) revert RegistryNonexistentAgent(agentId);
        uint256 caller = uint256(uint160(msg.sender));
        if (caller == owner) return;
        (, uint256 agentWallet) = _read(IERC8004IdentityRegistry.getAgentWallet.selector, agentId, 0, false);
        if (caller == agentWallet) return;
        (, uint256 approvedForAll) = _read(IERC8004IdentityRegistry.isApprovedForAll.selector, owner, caller, true);
        if (approvedForAll == 1) return;
        (, uint256 approved) = _read(IERC8004IdentityRegistry.getApproved.selector, agentId, 0, false);
        if (caller == approved) return;
        revert RegistryNotAgentController(msg.sender, agentId);
    }

    /**
     * @dev One view call to the identity registry, returning its first return word: the standard
     * ERC-721 calls and `getAgentWallet` without the ABI encoder's memory and copy overhead (the
     * controller check runs on every `submitProof`). `found` is false when the call reverted or
     * returned less than one word (e.g. `ownerOf` of a token that does not exist).
     */
    function _read(bytes4 selector, uint256 arg0, uint256 arg1, bool twoArgs) private view returns (bool found, uint256 word) {
        address registry = address(_identityRegistry);
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            mstore(ptr, selector)
            mstore(add(ptr, 0x04), arg0)
            mstore(add(ptr, 0x24), arg1)
            let ok := staticcall(gas(), registry, ptr, add(0x24, mul(twoArgs, 0x20)), 0x00, 0x20)
            found := and(ok, iszero(lt(returndatasize(), 0x20)))
            if found {
                word := mload(0x00)
            }
        }
    }

    /// @dev Applies `delta` to the score of `agentId`, clamped to 0-1000, and records the settlement time.
    function _adjust(
        uint256 agentId,
        bytes32 orderId,
        Party party,
        int16 delta,
        bool countsSettlement,
        uint64 settledAt
    ) private {
        NetworkScore storage stored = _scores[agentId];
        int256 adjusted = int256(uint256(stored.score)) + delta;
        if (adjusted < 0) adjusted = 0;
        else if (adjusted > _MAX_SCORE) adjusted = _MAX_SCORE;
        // Clamped to 0-1000 just above, so it fits in uint16.
        uint16 score = uint16(uint256(adjusted));
        uint64 settlements = stored.settlements;
        if (countsSettlement) {
            // One per settled order: 2^64 orders cannot happen.
            unchecked {
                ++settlements;
            }
        }
        _scores[agentId] = NetworkScore({score: score, settlements: settlements, lastSettledAt: settledAt});
        emit NetworkScoreAdjusted(agentId, orderId, SCORE_TYPE, party, delta, score);
    }

    /// @dev METHOD part N adjustments in tenths, executor then requester.
    function _adjustments(Verdict verdict) private pure returns (int16 executorDelta, int16 requesterDelta) {
        if (verdict == Verdict.FULFILLED) return (30, 15);
        if (verdict == Verdict.PARTIAL) return (5, 5);
        if (verdict == Verdict.VIOLATED) return (-50, -10);
        return (20, 10);
    }
}
