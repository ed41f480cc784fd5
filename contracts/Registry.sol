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

        // Block timestamps fit in 64 bits for the next 584 billion years.
        uint64 settledAt = uint64(block.timestamp);
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

    /**
     * @dev Reverts unless the caller controls agent `agentId`: its owner, its agent wallet, an operator of
     * the owner or the account approved for this token. Only standard ERC-721 reads and `getAgentWallet`
     * are used, so any ERC-8004 identity registry works. Commonest first: the owner costs one call, the
     * agent wallet two, an operator three, an account approved for this token only four.
     */
    function _checkAgentController(uint256 agentId) private view {
        address owner;
        try _identityRegistry.ownerOf(agentId) returns (address found) {
            owner = found;
        } catch {
            revert RegistryNonexistentAgent(agentId);
        }
        // ERC-721 reverts for a token that does not exist; some registries answer the zero address instead.
        if (owner == address(0)) revert RegistryNonexistentAgent(agentId);
        if (msg.sender == owner) return;
        if (msg.sender == _agentWalletOf(agentId)) return;
        if (_identityRegistry.isApprovedForAll(owner, msg.sender)) return;
        if (msg.sender == _identityRegistry.getApproved(agentId)) return;
        revert RegistryNotAgentController(msg.sender, agentId);
    }

    /// @dev The agent wallet of `agentId`, or the zero address where the registry has none (a plain ERC-721).
    function _agentWalletOf(uint256 agentId) private view returns (address) {
        try _identityRegistry.getAgentWallet(agentId) returns (address wallet) {
            return wallet;
        } catch {
            return address(0);
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
