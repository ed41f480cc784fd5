// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IRegistry} from "../interfaces/IRegistry.sol";

/**
 * @notice Test-only: submits several proof records for one agent in one transaction, so their logs share a
 * transaction hash (METHOD A2 dedups them). The batcher must control the agent: the token owner approves it
 * (`approve` or `setApprovalForAll`).
 */
contract ProofBatcher {
    /// @notice Calls `registry.submitProof` `count` times with the same record.
    function submitMany(
        IRegistry registry,
        uint256 agentId,
        bool success,
        IRegistry.RiskLevel riskLevel,
        uint32 policyViolations,
        bytes32 traceRoot,
        uint256 count
    ) external {
        for (uint256 i = 0; i < count; ++i) registry.submitProof(agentId, success, riskLevel, policyViolations, traceRoot);
    }
}
