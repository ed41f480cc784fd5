// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/**
 * @title IERC8004IdentityRegistry
 * @notice The part of an ERC-8004 Identity Registry the {Registry} relies on: the standard ERC-721 ownership
 * and approval reads plus `getAgentWallet`. Every deployed version of the ERC-8004 registry implements these,
 * so nothing here depends on a particular implementation (the canonical one is a UUPS proxy; Vrai's local one
 * is {AgentIdentity}).
 */
interface IERC8004IdentityRegistry {
    /**
     * @notice The owner of agent `agentId` (ERC-721 `ownerOf`).
     * @dev Reverts if the agent does not exist.
     * @param agentId The agent's identity token id.
     * @return The owner.
     */
    function ownerOf(uint256 agentId) external view returns (address);

    /**
     * @notice The account approved for agent `agentId` (ERC-721 `getApproved`).
     * @param agentId The agent's identity token id.
     * @return The approved account, or `address(0)`.
     */
    function getApproved(uint256 agentId) external view returns (address);

    /**
     * @notice Whether `operator` may manage every token of `owner` (ERC-721 `isApprovedForAll`).
     * @param owner A token owner.
     * @param operator A possible operator.
     * @return True if approved.
     */
    function isApprovedForAll(address owner, address operator) external view returns (bool);

    /**
     * @notice The verified wallet of agent `agentId`, cleared whenever the token is transferred.
     * @param agentId The agent's identity token id.
     * @return The agent wallet, or `address(0)` if none is set.
     */
    function getAgentWallet(uint256 agentId) external view returns (address);
}
