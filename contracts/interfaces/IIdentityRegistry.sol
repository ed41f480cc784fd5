// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/**
 * @title IIdentityRegistry
 * @notice The ERC-8004 Identity Registry functions and events beyond ERC-721, with the signatures of the
 * reference implementation's compiled ABI (`IdentityRegistryUpgradeable`, test/fixtures/erc8004/). Agents are
 * ERC-721 tokens whose id is the `agentId`.
 */
interface IIdentityRegistry {
    /// @notice One on-chain metadata entry given at registration.
    struct MetadataEntry {
        string metadataKey;
        bytes metadataValue;
    }

    /**
     * @notice Emitted when agent `agentId` is registered (minted to `owner`).
     * @param agentId The new agent's token id.
     * @param agentURI Its registration file URI (empty if none yet).
     * @param owner The account it was minted to.
     */
    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);

    /**
     * @notice Emitted when a metadata entry is set, including the reserved `agentWallet` key (value: the
     * 20-byte packed wallet, empty when cleared).
     * @param agentId The agent.
     * @param indexedMetadataKey The key (indexed, hence hashed in the topic).
     * @param metadataKey The key.
     * @param metadataValue The value.
     */
    event MetadataSet(uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue);

    /**
     * @notice Emitted when the agent URI changes.
     * @param agentId The agent.
     * @param newURI The new URI.
     * @param updatedBy The account that changed it.
     */
    event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);

    /**
     * @notice Registers a new agent without URI, minted to the caller; its agent wallet starts as the caller.
     * @dev Emits, in this order, ERC-721 `Transfer`, {Registered} and {MetadataSet} for `agentWallet`.
     * @return agentId The next sequential id (the first is 0).
     */
    function register() external returns (uint256 agentId);

    /**
     * @notice Registers a new agent with `agentURI`, minted to the caller; its agent wallet starts as the caller.
     * @dev Emits, in this order, ERC-721 `Transfer`, ERC-4906 `MetadataUpdate`, {Registered} and {MetadataSet}
     * for `agentWallet`.
     * @param agentURI The registration file URI.
     * @return agentId The next sequential id (the first is 0).
     */
    function register(string calldata agentURI) external returns (uint256 agentId);

    /**
     * @notice Registers a new agent with `agentURI` and metadata entries, minted to the caller.
     * @dev Emits as {register}(agentURI), then one {MetadataSet} per entry.
     *
     * Requirements:
     * - no entry uses the reserved key `agentWallet`.
     *
     * @param agentURI The registration file URI.
     * @param metadata The metadata entries.
     * @return agentId The next sequential id (the first is 0).
     */
    function register(string calldata agentURI, MetadataEntry[] calldata metadata) external returns (uint256 agentId);

    /**
     * @notice Changes the agent URI.
     * @dev Emits {URIUpdated}.
     *
     * Requirements:
     * - the agent exists; the caller is its owner, approved for it, or an operator of the owner.
     *
     * @param agentId The agent.
     * @param newURI The new URI.
     */
    function setAgentURI(uint256 agentId, string calldata newURI) external;

    /**
     * @notice Reads a metadata entry; `agentWallet` reads the agent wallet (20 packed bytes, empty if unset).
     * @param agentId The agent.
     * @param metadataKey The key.
     * @return The value, empty if unset.
     */
    function getMetadata(uint256 agentId, string calldata metadataKey) external view returns (bytes memory);

    /**
     * @notice Sets a metadata entry.
     * @dev Emits {MetadataSet}.
     *
     * Requirements:
     * - the agent exists; the caller is its owner, approved for it, or an operator of the owner;
     * - `metadataKey` is not the reserved `agentWallet` (see {setAgentWallet}).
     *
     * @param agentId The agent.
     * @param metadataKey The key.
     * @param metadataValue The value.
     */
    function setMetadata(uint256 agentId, string calldata metadataKey, bytes calldata metadataValue) external;

    /**
     * @notice The agent wallet: set to the owner at registration, cleared on every transfer.
     * @param agentId The agent.
     * @return The agent wallet, or `address(0)` if none is set or the agent does not exist.
     */
    function getAgentWallet(uint256 agentId) external view returns (address);

    /**
     * @notice Whether `spender` controls agent `agentId`: its owner, approved for it, or an operator of the owner.
     *
     * Requirements:
     * - the agent exists.
     *
     * @param spender The account.
     * @param agentId The agent.
     * @return True if `spender` may manage the agent.
     */
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool);

    /**
     * @notice Sets the agent wallet to `newWallet`, which proves control by signing the EIP-712 message
     * `AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)` (domain
     * `ERC8004IdentityRegistry`, version `1`), as an EOA or an ERC-1271 contract wallet.
     * @dev Emits {MetadataSet} for `agentWallet`.
     *
     * Requirements:
     * - the agent exists; the caller is its owner, approved for it, or an operator of the owner;
     * - `newWallet` is not zero;
     * - `deadline` is not in the past and at most 5 minutes ahead;
     * - `signature` is valid for `newWallet` over the current owner.
     *
     * @param agentId The agent.
     * @param newWallet The new agent wallet.
     * @param deadline Last timestamp at which the signature is accepted.
     * @param signature The new wallet's signature.
     */
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature) external;

    /**
     * @notice Clears the agent wallet.
     * @dev Emits {MetadataSet} for `agentWallet` with an empty value.
     *
     * Requirements:
     * - the agent exists; the caller is its owner, approved for it, or an operator of the owner.
     *
     * @param agentId The agent.
     */
    function unsetAgentWallet(uint256 agentId) external;
}
