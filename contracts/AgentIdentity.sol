// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";
import {ERC721URIStorage} from "@openzeppelin/contracts/token/ERC721/extensions/ERC721URIStorage.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ERC721Utils} from "@openzeppelin/contracts/token/ERC721/utils/ERC721Utils.sol";
import {IIdentityRegistry} from "./interfaces/IIdentityRegistry.sol";

/**
 * @title AgentIdentity
 * @notice Vrai's own ERC-8004 Identity Registry, for local chains and tests. A plain (not upgradeable)
 * contract with the function and event signatures of the canonical registry; on public networks the
 * canonical deployment is used instead, so nothing else may depend on details of this implementation.
 *
 * It behaves as the reference `IdentityRegistryUpgradeable` (test/fixtures/erc8004/) wherever an ERC-8004 user
 * could tell: the same functions (less the proxy's upgrade and ownership administration), the same events in the
 * same order, `getAgentWallet` of an unknown agent answering the zero address. Its reverts are custom errors where
 * the reference reverts with strings.
 */
contract AgentIdentity is ERC721URIStorage, EIP712, IIdentityRegistry {
    /// @notice The metadata key `agentWallet` is reserved: set it with {setAgentWallet}.
    error AgentIdentityReservedMetadataKey(string metadataKey);

    /// @notice The agent wallet cannot be the zero address (use {unsetAgentWallet}).
    error AgentIdentityInvalidAgentWallet(address newWallet);

    /// @notice The signature deadline has passed.
    error AgentIdentityExpiredDeadline(uint256 deadline);

    /// @notice The signature deadline is more than 5 minutes ahead.
    error AgentIdentityDeadlineTooFar(uint256 deadline, uint256 maxDeadline);

    /// @notice The signature is not `newWallet`'s (neither ECDSA nor ERC-1271).
    error AgentIdentityInvalidWalletSignature(address newWallet);

    /// @dev Longest time between a wallet signature's acceptance and its deadline (as the canonical registry).
    uint256 private constant _MAX_DEADLINE_DELAY = 5 minutes;

    bytes32 private constant _AGENT_WALLET_SET_TYPEHASH =
        keccak256("AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)");
    string private constant _AGENT_WALLET_KEY = "agentWallet";
    bytes32 private constant _AGENT_WALLET_KEY_HASH = keccak256(bytes(_AGENT_WALLET_KEY));

    uint256 private _nextAgentId;
    mapping(uint256 agentId => mapping(string metadataKey => bytes metadataValue)) private _metadata;
    mapping(uint256 agentId => address wallet) private _agentWallets;

    constructor() ERC721("AgentIdentity", "AGENT") EIP712("ERC8004IdentityRegistry", "1") {}

    /// @inheritdoc IIdentityRegistry
    function register() external returns (uint256 agentId) {
        agentId = _register(false, "", new MetadataEntry[](0));
    }

    /// @inheritdoc IIdentityRegistry
    function register(string calldata agentURI) external returns (uint256 agentId) {
        agentId = _register(true, agentURI, new MetadataEntry[](0));
    }

    /// @inheritdoc IIdentityRegistry
    function register(string calldata agentURI, MetadataEntry[] calldata metadata) external returns (uint256 agentId) {
        agentId = _register(true, agentURI, metadata);
    }

    /// @inheritdoc IIdentityRegistry
    function setAgentURI(uint256 agentId, string calldata newURI) external {
        _requireAuthorized(agentId);
        _setTokenURI(agentId, newURI);
        emit URIUpdated(agentId, newURI, msg.sender);
    }

    /// @inheritdoc IIdentityRegistry
    function getMetadata(uint256 agentId, string calldata metadataKey) external view returns (bytes memory) {
        if (keccak256(bytes(metadataKey)) == _AGENT_WALLET_KEY_HASH) return _packedWallet(_agentWallets[agentId]);
        return _metadata[agentId][metadataKey];
    }

    /// @inheritdoc IIdentityRegistry
    function setMetadata(uint256 agentId, string calldata metadataKey, bytes calldata metadataValue) external {
        _requireAuthorized(agentId);
        _setMetadata(agentId, metadataKey, metadataValue);
    }

    /// @inheritdoc IIdentityRegistry
    function getAgentWallet(uint256 agentId) external view returns (address) {
        // As the reference registry: an agent that does not exist has no wallet (no revert).
        return _agentWallets[agentId];
    }

    /// @inheritdoc IIdentityRegistry
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool) {
        return _isAuthorized(_requireOwned(agentId), spender, agentId);
    }

    /**
     * @dev As ERC-721's, one storage read cheaper when an approval is set: approvals are cleared
     * whenever the token moves or burns, so a set approval proves the token exists.
     */
    function getApproved(uint256 tokenId) public view virtual override(ERC721, IERC721) returns (address) {
        address approved = _getApproved(tokenId);
        if (approved == address(0)) _requireOwned(tokenId);
        return approved;
    }

    /// @inheritdoc IIdentityRegistry
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature) external {
        address owner = _requireAuthorized(agentId);
        if (newWallet == address(0)) revert AgentIdentityInvalidAgentWallet(newWallet);
        uint256 currentTime = block.timestamp;
        if (deadline < currentTime) revert AgentIdentityExpiredDeadline(deadline);
        if (deadline > currentTime + _MAX_DEADLINE_DELAY) {
            revert AgentIdentityDeadlineTooFar(deadline, currentTime + _MAX_DEADLINE_DELAY);
        }

        bytes32 digest = _hashTypedDataV4(
            keccak256(abi.encode(_AGENT_WALLET_SET_TYPEHASH, agentId, newWallet, owner, deadline))
        );
        // ECDSA first, so EIP-7702 delegated EOAs sign as EOAs; then ERC-1271 for contract wallets.
        (address recovered, ECDSA.RecoverError recoverError, ) = ECDSA.tryRecoverCalldata(digest, signature);
        if (
            (recoverError != ECDSA.RecoverError.NoError || recovered != newWallet) &&
            !SignatureChecker.isValidERC1271SignatureNow(newWallet, digest, signature)
        ) {
            revert AgentIdentityInvalidWalletSignature(newWallet);
        }

        _setAgentWallet(agentId, newWallet);
    }

    /// @inheritdoc IIdentityRegistry
    function unsetAgentWallet(uint256 agentId) external {
        _requireAuthorized(agentId);
        _setAgentWallet(agentId, address(0));
    }

    /// @notice The implementation version (the canonical registry exposes one too).
    /// @return The version string.
    function getVersion() external pure returns (string memory) {
        return "vrai-1.0.0";
    }

    /**
     * @dev Clears the agent wallet on every transfer (not on mint), so control does not outlive ownership. As the
     * reference registry, the cleared wallet's {MetadataSet} comes before ERC-721 `Transfer`, even when no wallet was set.
     */
    function _update(address to, uint256 tokenId, address auth) internal virtual override returns (address) {
        if (_ownerOf(tokenId) != address(0)) _setAgentWallet(tokenId, address(0));
        return super._update(to, tokenId, auth);
    }

    /**
     * @dev Events in the reference registry's order: `Transfer`, `MetadataUpdate` (when a URI is given, even empty),
     * {Registered}, {MetadataSet} of the agent wallet, then one {MetadataSet} per entry.
     */
    function _register(bool withURI, string memory agentURI, MetadataEntry[] memory metadata) private returns (uint256 agentId) {
        // Sequential ids from 0; 2^256 registrations cannot happen.
        unchecked {
            agentId = _nextAgentId++;
        }
        _mint(msg.sender, agentId);
        if (withURI) _setTokenURI(agentId, agentURI);
        emit Registered(agentId, agentURI, msg.sender);
        _setAgentWallet(agentId, msg.sender);
        for (uint256 i = 0; i < metadata.length; ++i) {
            _setMetadata(agentId, metadata[i].metadataKey, metadata[i].metadataValue);
        }
        // Last, as `_safeMint`'s check: the receiver hook of a contract caller runs once the agent is fully registered.
        ERC721Utils.checkOnERC721Received(msg.sender, address(0), msg.sender, agentId, "");
    }

    function _setMetadata(uint256 agentId, string memory metadataKey, bytes memory metadataValue) private {
        if (keccak256(bytes(metadataKey)) == _AGENT_WALLET_KEY_HASH) revert AgentIdentityReservedMetadataKey(metadataKey);
        _metadata[agentId][metadataKey] = metadataValue;
        emit MetadataSet(agentId, metadataKey, metadataKey, metadataValue);
    }

    function _setAgentWallet(uint256 agentId, address wallet) private {
        _agentWallets[agentId] = wallet;
        emit MetadataSet(agentId, _AGENT_WALLET_KEY, _AGENT_WALLET_KEY, _packedWallet(wallet));
    }

    /// @dev Reverts unless the caller is the owner of `agentId`, approved for it, or an operator; returns the owner.
    function _requireAuthorized(uint256 agentId) private view returns (address owner) {
        owner = _requireOwned(agentId);
        if (!_isAuthorized(owner, msg.sender, agentId)) revert ERC721InsufficientApproval(msg.sender, agentId);
    }

    function _packedWallet(address wallet) private pure returns (bytes memory) {
        return wallet == address(0) ? bytes("") : abi.encodePacked(wallet);
    }
}
