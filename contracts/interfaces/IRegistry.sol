// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC8004IdentityRegistry} from "./IERC8004IdentityRegistry.sol";

/**
 * @title IRegistry
 * @notice Proof records (AVIP-TRU, METHOD A1) and the Platform Network Score (METHOD part N) of agents
 * identified by ERC-8004 identity tokens.
 *
 * Proof records are events only: nothing is stored, the indexer reads them from the logs (transaction hash,
 * block number and log index come from the log itself). The SDK Derived Score (`sdk-derived`) is computed
 * off chain from those records; this contract has no way to store it.
 *
 * The only score it stores is the Platform Network Score, score type `platform-network` ({SCORE_TYPE}), in
 * tenths (0-1000 = 0.0-100.0), one storage slot per agent, changed only by {settle}.
 */
interface IRegistry {
    /// @notice Risk level of a task (METHOD A1 `riskLevel`).
    enum RiskLevel {
        LOW,
        MEDIUM,
        HIGH,
        CRITICAL
    }

    /// @notice Verdict of a Completion Proof (AVIP-TRU-VDT). NONE is the legacy settlement of an order without an Intent.
    enum Verdict {
        NONE,
        FULFILLED,
        PARTIAL,
        VIOLATED
    }

    /// @notice The side of an order an adjustment applies to.
    enum Party {
        EXECUTOR,
        REQUESTER
    }

    /// @notice An agent's Platform Network Score, packed in one storage slot.
    struct NetworkScore {
        /// Score in tenths, 0-1000.
        uint16 score;
        /// Number of settled orders the agent took part in (an order where it is both executor and requester counts once).
        uint64 settlements;
        /// Block timestamp of the agent's last settlement; 0 if none.
        uint64 lastSettledAt;
    }

    /// @notice A settled order, packed in one storage slot.
    struct Settlement {
        /// Block timestamp of the settlement; 0 if the order is not settled.
        uint64 settledAt;
        /// The verdict; NONE for a legacy order (no Intent).
        Verdict verdict;
    }

    /// @notice `caller` is not the agent's controller: not the owner of the identity token, not approved for it or
    /// for all of the owner's tokens, and not the agent wallet.
    error RegistryNotAgentController(address caller, uint256 agentId);

    /// @notice The identity registry has no agent `agentId` (its `ownerOf` reverted).
    error RegistryNonexistentAgent(uint256 agentId);

    /// @notice The order is already settled; each order settles once.
    error RegistryOrderAlreadySettled(bytes32 orderId);

    /// @notice The combination is neither an order with an Intent (non-zero `intentHash`, verdict FULFILLED,
    /// PARTIAL or VIOLATED, non-zero `completionProofHash`) nor a legacy order (zero `intentHash`, verdict NONE,
    /// zero `completionProofHash`).
    error RegistryInvalidSettlement(bytes32 intentHash, Verdict verdict, bytes32 completionProofHash);

    /// @notice The identity registry address is zero.
    error RegistryInvalidIdentityRegistry(address identityRegistry);

    /**
     * @notice Emitted for every proof record (METHOD A1).
     * @param agentId The executor's identity token id.
     * @param submitter The controller that submitted it.
     * @param traceRoot Root of the execution trace; verified (METHOD A6) when anchored in the AnchorRegistry by a verifier.
     * @param success Whether the task succeeded.
     * @param riskLevel The task's risk level.
     * @param policyViolations The number of policy violations.
     */
    event ProofSubmitted(
        uint256 indexed agentId,
        address indexed submitter,
        bytes32 indexed traceRoot,
        bool success,
        RiskLevel riskLevel,
        uint32 policyViolations
    );

    /**
     * @notice Emitted when an order is settled, before its {NetworkScoreAdjusted} events.
     * @param orderId The order.
     * @param executorId The executor's identity token id.
     * @param requesterId The requester's identity token id.
     * @param intentHash The Intent hash; zero for a legacy order.
     * @param verdict The verdict; NONE for a legacy order.
     * @param completionProofHash The Completion Proof hash; zero for a legacy order, which produces no Completion Proof.
     */
    event OrderSettled(
        bytes32 indexed orderId,
        uint256 indexed executorId,
        uint256 indexed requesterId,
        bytes32 intentHash,
        Verdict verdict,
        bytes32 completionProofHash
    );

    /**
     * @notice Emitted for each adjustment of a network score: executor first, then requester.
     * @param agentId The agent whose score changed.
     * @param orderId The order that caused it.
     * @param scoreType Always {SCORE_TYPE} (`platform-network`).
     * @param party The side of the order the agent was on.
     * @param delta The adjustment in tenths, before clamping.
     * @param score The new score in tenths, after clamping to 0-1000.
     */
    event NetworkScoreAdjusted(
        uint256 indexed agentId,
        bytes32 indexed orderId,
        bytes32 scoreType,
        Party party,
        int16 delta,
        uint16 score
    );

    /**
     * @notice Role allowed to settle orders: `keccak256("PLATFORM_ROLE")`.
     * @return The role id.
     */
    function PLATFORM_ROLE() external view returns (bytes32);

    /**
     * @notice The score type of the stored score: `bytes32("platform-network")`.
     * @return The score type, a left-aligned ASCII string.
     */
    function SCORE_TYPE() external view returns (bytes32);

    /**
     * @notice The ERC-8004 identity registry whose tokens identify agents.
     * @return The identity registry.
     */
    function identityRegistry() external view returns (IERC8004IdentityRegistry);

    /**
     * @notice Records a proof record for agent `agentId` by emitting {ProofSubmitted}. Stores nothing.
     * @dev Control follows the identity token: when it moves, the new owner (and its operators) control the agent,
     * and the agent wallet, cleared by the transfer, no longer does.
     *
     * Requirements:
     * - agent `agentId` exists in the identity registry;
     * - the caller is the token owner, the account approved for the token, an operator approved for all of the
     *   owner's tokens, or the agent wallet (`getAgentWallet`).
     *
     * @param agentId The agent's identity token id.
     * @param success Whether the task succeeded.
     * @param riskLevel The task's risk level.
     * @param policyViolations The number of policy violations.
     * @param traceRoot Root of the execution trace.
     */
    function submitProof(
        uint256 agentId,
        bool success,
        RiskLevel riskLevel,
        uint32 policyViolations,
        bytes32 traceRoot
    ) external;

    /**
     * @notice Settles an order once and applies the METHOD part N adjustments, in tenths, executor first then
     * requester, clamping to 0-1000 after each: FULFILLED +30 / +15, PARTIAL +5 / +5, VIOLATED -50 / -10,
     * legacy (no Intent) +20 / +10. When the executor is also the requester both adjustments apply in turn to
     * the same score, and the order counts as one settlement.
     * @dev Emits {OrderSettled} then one {NetworkScoreAdjusted} per adjustment. Agent ids are not checked
     * against the identity registry: the platform role is trusted with them.
     *
     * Requirements:
     * - the caller holds the platform role;
     * - `orderId` is not settled yet;
     * - either `intentHash` is non-zero, `verdict` is FULFILLED, PARTIAL or VIOLATED and `completionProofHash`
     *   is non-zero, or (legacy) `intentHash` is zero, `verdict` is NONE and `completionProofHash` is zero.
     *
     * @param orderId The order.
     * @param executorId The executor's identity token id.
     * @param requesterId The requester's identity token id.
     * @param intentHash The Intent hash, or zero for a legacy order.
     * @param verdict The Completion Proof verdict, or NONE for a legacy order.
     * @param completionProofHash The Completion Proof hash, or zero for a legacy order.
     */
    function settle(
        bytes32 orderId,
        uint256 executorId,
        uint256 requesterId,
        bytes32 intentHash,
        Verdict verdict,
        bytes32 completionProofHash
    ) external;

    /**
     * @notice The Platform Network Score of agent `agentId`.
     * @param agentId The agent's identity token id.
     * @return score The score in tenths (0-1000); 0 for an agent never settled.
     * @return settlements The number of settled orders the agent took part in.
     * @return lastSettledAt The block timestamp of its last settlement, 0 if none.
     * @return scoreType Always {SCORE_TYPE} (`platform-network`).
     */
    function networkScoreOf(
        uint256 agentId
    ) external view returns (uint16 score, uint64 settlements, uint64 lastSettledAt, bytes32 scoreType);

    /**
     * @notice The settlement of order `orderId`.
     * @param orderId The order.
     * @return The settlement; `settledAt` is 0 if the order is not settled.
     */
    function settlementOf(bytes32 orderId) external view returns (Settlement memory);
}
